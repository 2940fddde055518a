"""The software class of a framework: whether results run on it come from a reference
implementation or an optimised runtime (``frameworks.yaml``'s ``software_class``, with its
source), looked up through the one framework resolver."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from stack_advisor.catalog.resolve import load_catalog, resolve_framework, resolve_framework_name


@dataclass(frozen=True)
class SoftwareClass:
    """A framework's class and where the catalogue has it from."""

    framework: str  # the canonical framework id
    software_class: str  # "reference" or "optimised" (``entries.SOFTWARE_CLASSES``)
    source: str

    def describe(self) -> str:
        return f"{self.framework} ({self.software_class}; {self.source})"


@lru_cache(maxsize=1024)
def software_class(framework: str | None) -> SoftwareClass | None:
    """The class of the framework ``framework`` names (an id, alias or published spelling);
    None when the name is unresolved or the catalogue gives the framework no class (a framework
    used both ways, or a component)."""
    if not framework or not framework.strip():
        return None
    match = resolve_framework_name(framework.strip())
    if not match.resolved:
        return None
    entry = load_catalog().frameworks.get(match.id)
    if entry is None or entry.software_class is None or entry.class_source is None:
        return None
    return SoftwareClass(entry.id, entry.software_class, entry.class_source)


REFERENCE_IMPLEMENTATION = (
    "reference"  # the ``implementation`` component's value for MLCommons' reference code
)


VENDOR_IMPLEMENTATION = "vendor"  # the accelerator vendor's own closed-division submission


def stack_class(framework: str | None, implementation: str | None) -> SoftwareClass | None:
    """The class of a result: the reference class where MLCommons' reference implementation ran
    it (the ``implementation`` component), whatever its framework; the optimised class where the
    accelerator's vendor submitted it in the closed division (``implementation: vendor``, from
    ``stack_text.implementation_evidence``: AMD's PyTorch + ROCm LLM stack is not reference
    code); else the framework's class."""
    if implementation and implementation.strip().lower() == VENDOR_IMPLEMENTATION:
        fw = framework.strip() if framework and framework.strip() else "unknown"
        return SoftwareClass(
            f"{resolve_framework_name(fw).id} (the accelerator vendor's own closed-division stack)",
            "optimised",
            "https://github.com/mlcommons/inference_policies (closed division: the submitter's "
            "own optimised implementation)",
        )
    if implementation and implementation.strip().lower() == REFERENCE_IMPLEMENTATION:
        entry = load_catalog().frameworks.get("implementation")
        fw = (
            resolve_framework_name(framework.strip()).id
            if framework and framework.strip()
            else "unknown"
        )
        return SoftwareClass(
            f"{fw} (MLCommons reference implementation)",
            "reference",
            entry.source if entry is not None else "https://github.com/mlcommons/inference",
        )
    return software_class(framework)


@lru_cache(maxsize=1024)
def stack_family_of(framework: str) -> str:
    """The stack family a framework's results belong to when a ranking folds its rows: the
    framework a library runs on (``frameworks.yaml``'s ``runs_on``: NeMo's results are PyTorch
    stacks, as NVIDIA's own submissions name the same container either way), else the
    framework's canonical id, whatever version the text carries ("NeMo 24.05" is PyTorch's);
    an unresolved name stays as written without its version, lower-cased; "unspecified" for no
    name at all."""
    text = framework.strip()
    if not text:
        return "unspecified"
    match = resolve_framework(text).name
    if not match.resolved:
        return (match.raw.strip() or text).lower()
    entry = load_catalog().frameworks.get(match.id)
    if entry is not None and entry.runs_on is not None:
        return entry.runs_on
    return match.id
