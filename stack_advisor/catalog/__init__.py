"""The catalogue of names: accelerators, CPUs, benchmarks, scenarios, metrics, frameworks.

Package data (YAML beside this module), validated once at load, every entry with its public
source. It sits below the importers so that every layer resolves names the same way: importers
at import, the CLI and the API at their edge, the advisor on stored names.
"""

from stack_advisor.catalog.entries import (
    PRECISIONS,
    AcceleratorEntry,
    BenchmarkEntry,
    CpuEntry,
    FrameworkEntry,
    Generation,
    MetricEntry,
    ScenarioEntry,
)
from stack_advisor.catalog.resolve import (
    NOT_AN_ACCELERATOR,
    AcceleratorMatch,
    AcceleratorPart,
    Catalog,
    FrameworkMatch,
    NameMatch,
    cudnn_version,
    load_catalog,
    metric_unit,
    named_scenario,
    normalize,
    resolve_accelerator,
    resolve_benchmark,
    resolve_cpu,
    resolve_framework,
    resolve_framework_name,
    resolve_metric,
    resolve_scenario,
)
from stack_advisor.catalog.software import SoftwareClass, software_class, stack_class

__all__ = [
    "NOT_AN_ACCELERATOR",
    "PRECISIONS",
    "AcceleratorEntry",
    "AcceleratorMatch",
    "AcceleratorPart",
    "BenchmarkEntry",
    "Catalog",
    "CpuEntry",
    "FrameworkEntry",
    "FrameworkMatch",
    "Generation",
    "MetricEntry",
    "NameMatch",
    "ScenarioEntry",
    "SoftwareClass",
    "cudnn_version",
    "load_catalog",
    "metric_unit",
    "named_scenario",
    "normalize",
    "resolve_accelerator",
    "resolve_benchmark",
    "resolve_cpu",
    "resolve_framework",
    "resolve_framework_name",
    "resolve_metric",
    "resolve_scenario",
    "software_class",
    "stack_class",
]
