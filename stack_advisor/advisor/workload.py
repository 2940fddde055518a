"""The workload a user asks about: what to run, under which constraints, optimising what.

A ``Workload`` comes from CLI flags, a YAML or JSON file, or the API body; every way goes through
the same pydantic validation, so a bad value is reported with its field and value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.schema.checks import bounded_request, not_a_bool
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.base import validation_message

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

MLPERF_INFERENCE = "mlperf-inference"
MLPERF_TRAINING = "mlperf-training"
# Training is ranked by time to train (lower is better), or by accelerator-hours for cost.
TRAINING_METRICS = {"time": "time_to_train_min", "cost": "accelerator_hours"}
# Serving latency limits → the observed figure they are checked against (LLM runs' p99, the
# percentile MLPerf's own Server/Interactive bounds use).
LATENCY_LIMITS = {
    "max_ttft_ms": ("ttft_p99_ms", "time to first token"),
    "max_tpot_ms": ("tpot_p99_ms", "time per output token"),
}

# A task names what the user wants done; it stands for a benchmark in the knowledge base.
TASKS: dict[str, tuple[str, str]] = {
    "image-classification": (MLPERF_INFERENCE, "resnet50"),
    "object-detection": (MLPERF_INFERENCE, "retinanet"),
    "object-detection-small": (MLPERF_INFERENCE, "ssd-resnet34"),
    "question-answering": (MLPERF_INFERENCE, "bert-99"),
    "language": (MLPERF_INFERENCE, "bert-99"),
    "speech-recognition": (MLPERF_INFERENCE, "rnnt"),
    "recommendation": (MLPERF_INFERENCE, "dlrm-99"),
    "medical-imaging": (MLPERF_INFERENCE, "3d-unet-99"),
}


class Objective(str, Enum):
    """What to optimise: throughput (higher is better), latency (lower is better), or cost
    (throughput per accelerator-hour price, from the price table)."""

    THROUGHPUT = "throughput"
    LATENCY = "latency"
    COST = "cost"


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FrameworkConstraint(_Spec):
    """A framework by name with an optional PEP 440 version specifier, e.g. ``tensorrt>=8.4``."""

    name: str = Field(min_length=1)
    version: str | None = Field(default=None, description="PEP 440 specifier, e.g. '>=8.4,<9'")

    @field_validator("name")
    @classmethod
    def _canonical(cls, value: str) -> str:
        from stack_advisor.advisor.names import canonical_framework

        return canonical_framework(value)

    @field_validator("version")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # a constraint's only

        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            raise ValueError(
                f"not a PEP 440 version specifier: {value!r} (write e.g. '>=8.4' or '==2.1.*')"
            ) from None
        return value.strip()

    @property
    def specifier(self) -> SpecifierSet:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(self.version or "")

    @classmethod
    def parse(cls, text: str) -> FrameworkConstraint:
        """``tensorrt``, ``tensorrt>=8.4``, ``pytorch==2.1.*`` → a constraint."""
        text = text.strip()
        for i, ch in enumerate(text):
            if ch in "<>=!~":
                return cls(name=text[:i], version=text[i:])
        return cls(name=text)


class HardwareConstraint(_Spec):
    """Which accelerators, how many, and which placements are allowed; ``None`` means any."""

    accelerators: list[str] | None = Field(
        default=None,
        description="accelerators by any name the catalogue knows (NVIDIA A100-SXM-80GB, "
        "A100-SXM4-80GB), "
        "or a family (H100), generation (hopper), vendor (amd) or 'cpu'; a part the catalogue "
        "lacks by the name its results were imported under",
    )
    count: int | None = Field(default=None, ge=1, description="exact accelerator count")
    min_count: int | None = Field(default=None, ge=1)
    max_count: int | None = Field(default=None, ge=1)
    placements: list[PlacementKind] | None = None

    @field_validator("count", "min_count", "max_count", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        return not_a_bool(value)

    include_cpu: bool = Field(default=True, description="allow CPU-only systems")
    driver: str | None = Field(
        default=None,
        description="driver version installed on the target nodes; stacks whose CUDA needs a newer "
        "one are excluded",
    )

    @field_validator("driver")
    @classmethod
    def _driver_version(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from packaging.version import InvalidVersion, Version

        try:
            Version(value)
        except InvalidVersion:
            raise ValueError(f"not a driver version: {value!r} (write e.g. '535.104.05')") from None
        return value

    @field_validator("accelerators")
    @classmethod
    def _stripped(cls, value: list[str] | None) -> list[str] | None:
        # a name the catalogue lacks may still be one the knowledge base holds as published (a
        # new round's part): ``recommend`` refuses it where no result names it (``unheld``)
        return None if value is None else [t.strip() for t in value]

    def allows(self, accelerator: str) -> bool:
        """Whether a stored accelerator name passes the ``accelerators`` filter: a catalogue
        selector's parts, or for a name the catalogue lacks, that name as stored."""
        if not self.accelerators:
            return True
        from stack_advisor.advisor.names import selects

        return any(selects(t, accelerator) for t in self.accelerators)

    def unheld(self, held: Iterable[str]) -> str | None:
        """Why a filter name selects nothing: neither the catalogue nor any name in ``held``
        (the knowledge base's accelerator names) knows it, with the catalogue's closest names;
        None when every name selects something."""
        from stack_advisor.advisor.names import accelerator_selector, held_name

        names = list(held)
        for text in self.accelerators or []:
            try:
                accelerator_selector(text)
            except ValueError as exc:
                if not any(held_name(text, n) for n in names):
                    return f"hardware.accelerators: {exc}"
        return None

    @model_validator(mode="after")
    def _range(self) -> HardwareConstraint:
        if self.min_count and self.max_count and self.min_count > self.max_count:
            raise ValueError(f"min_count {self.min_count} is above max_count {self.max_count}")
        return self


# a workload's fields that are names (each at most schema.checks.MAX_NAME characters)
WORKLOAD_NAMES = (
    "family",
    "benchmark",
    "task",
    "scenario",
    "metric",
    "precision",
    "as_of",
    "objective",
    "target",
    "accelerators",
    "name",
    "version",
    "driver",
)


class Workload(_Spec):
    """What to run and what to optimise.

    The benchmark is named by ``family``/``benchmark`` or by a ``task`` (see ``TASKS``).
    ``scenario``, ``model``, ``batch_size``, ``precision`` and ``parameters`` select benchmark
    parameters; a parameter the knowledge base never records is ignored with a warning.
    """

    family: str = Field(default=MLPERF_INFERENCE, min_length=1)
    benchmark: str | None = Field(default=None, description="benchmark name, e.g. resnet50")
    task: str | None = Field(default=None, description="a task name standing for a benchmark")
    scenario: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    model: str | dict[str, Any] | None = Field(
        default=None,
        description="a benchmark parameter by name, or a model to estimate by proxy: a catalogued "
        "LLM's name alone ({name: gpt-oss-120b}), a Hugging Face config.json's fields, or the "
        "short "
        "form (name, architecture, parameters, active_parameters, precision); see docs/proxy.md",
    )
    batch_size: int | None = Field(default=None, ge=1)
    precision: str | None = None
    metric: str | None = Field(
        default=None, description="metric to rank on; default from objective"
    )
    frameworks: list[FrameworkConstraint] = Field(default_factory=list)
    hardware: HardwareConstraint = Field(default_factory=HardwareConstraint)
    objective: Objective = Objective.THROUGHPUT
    min_evidence: int = Field(
        default=1, ge=1, description="observations needed to count as observed"
    )
    include_predicted: bool = Field(
        default=True, description="rank unobserved candidates by prediction"
    )
    min_confidence: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="drop rows whose 80% interval's low/high ratio is below this (0: keep all)",
    )
    per_accelerator: bool | None = Field(
        default=None,
        description="rank throughput per accelerator; default: yes unless an exact count is set",
    )
    all_rows: bool = Field(
        default=False,
        alias="all",
        description="every ranked row; default: one row per (accelerator, count, placement, "
        "stack family), its best evidence, with how many more results it folds in",
    )
    image: str | None = Field(
        default=None,
        description="container image for the Kubernetes snippets of stacks the knowledge base "
        "records no "
        "image for (none known and none given: no snippet)",
    )
    target: SnippetTarget = Field(
        default=SnippetTarget.POD,
        description="what each Kubernetes snippet is: pod, deployment, dra (ResourceClaimTemplate "
        "+ consumer), kueue, lws, trainjob, jobset, kubevirt (docs/placement.md)",
    )
    max_ttft_ms: float | None = Field(
        default=None,
        gt=0,
        description="serving limit: candidates whose observed p99 time to first token is above it "
        "are excluded",
    )
    max_tpot_ms: float | None = Field(
        default=None,
        gt=0,
        description="serving limit: candidates whose observed p99 time per output token is "
        "above it are excluded",
    )

    as_of: str = Field(
        default="today",
        max_length=32,
        description="the round the figures are for: 'today' (the newest round published by "
        "today's date: a forecast where the knowledge base lacks it), 'now' (the newest round "
        "holding the benchmark), 'next', a date such as 2026-05-01 or a round name such as 'v6.0'",
    )

    isl: int | None = Field(default=None, ge=1, le=10_000_000, description="proxy: input tokens")
    osl: int | None = Field(default=None, ge=1, le=10_000_000, description="proxy: output tokens")
    concurrency: int | None = Field(
        default=None, ge=1, le=1_000_000, description="proxy: concurrent requests per replica"
    )

    @field_validator("as_of")
    @classmethod
    def _as_of(cls, value: str) -> str:
        from stack_advisor.advisor.estimate.as_of import as_of_error

        problem = as_of_error(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("model")
    @classmethod
    def _model_description(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        from stack_advisor.advisor.proxy.model import model_from_mapping
        from stack_advisor.schema.errors import InvalidInput as Invalid

        try:
            model_from_mapping(value)
        except Invalid as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value or any(c.isspace() for c in value):
            raise ValueError(
                f"not a container image reference: {value!r} (e.g. "
                "nvcr.io/nvidia/pytorch:24.05-py3)"
            )
        return value

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value not in TASKS:
            raise ValueError(f"unknown task {value!r}; known: {', '.join(sorted(TASKS))}")
        return value

    @field_validator("scenario")
    @classmethod
    def _known_scenario(cls, value: str | None) -> str | None:
        from stack_advisor.advisor.names import canonical_scenario

        return canonical_scenario(value)

    @field_validator("metric")
    @classmethod
    def _catalogue_metric(cls, value: str | None) -> str | None:
        from stack_advisor.advisor.names import canonical_metric

        return canonical_metric(value)

    @model_validator(mode="before")
    @classmethod
    def _scenario_in_benchmark_name(cls, data: Any) -> Any:
        """A benchmark named with its scenario ("llama2-70b-interactive-99") asks that scenario.
        Every field first within bounds (``schema.checks.bounded_request``)."""
        if isinstance(data, dict):
            bounded_request(data, WORKLOAD_NAMES)
        if not isinstance(data, dict) or not isinstance(data.get("benchmark"), str):
            return data
        from stack_advisor.advisor.names import scenario_in_name

        scenario = scenario_in_name(data["benchmark"], data.get("family"), data.get("scenario"))
        return data if scenario is None else {**data, "scenario": scenario}

    @field_validator("benchmark")
    @classmethod
    def _catalogue_benchmark(cls, value: str | None, info: ValidationInfo) -> str | None:
        from stack_advisor.advisor.names import canonical_benchmark

        return canonical_benchmark(value, info.data.get("family"))

    @model_validator(mode="after")
    def _resolve(self) -> Workload:
        if self.benchmark is None and self.task is not None:
            self.family, self.benchmark = TASKS[self.task]
        if self.benchmark is None and isinstance(self.model, dict):
            self.benchmark = str(self.model["name"])  # answered by proxy
        if self.benchmark is None and self.model is not None and self.family == MLPERF_INFERENCE:
            self.benchmark = str(self.model)
        if self.benchmark is None:
            raise ValueError("name a benchmark (benchmark=...), a task (task=...) or a model")
        if self.family == MLPERF_TRAINING and self.scenario is not None:
            raise ValueError(
                f"scenario: MLPerf Training has no scenarios ({self.scenario!r} is an "
                "MLPerf Inference "
                "scenario); leave the scenario out and give the accelerator budget as max_count "
                "(--gpus N)"
            )
        if self.family == MLPERF_TRAINING and self.metric is None:
            self.metric = TRAINING_METRICS["cost" if self.objective is Objective.COST else "time"]
        return self

    def latency_limits(self) -> dict[str, tuple[float, str, str]]:
        """Stated serving limits: field → (limit in ms, metric checked, what it is)."""
        out = {}
        for name, (metric, what) in LATENCY_LIMITS.items():
            limit = getattr(self, name)
            if limit is not None:
                out[name] = (float(limit), metric, what)
        return out

    # ---- derived -----------------------------------------------------------------------------
    def parameter_filters(self) -> dict[str, Any]:
        """Benchmark parameters the workload pins (scenario, model, batch size, precision...)."""
        out: dict[str, Any] = dict(self.parameters)
        if self.scenario is not None:
            out["scenario"] = self.scenario
        if isinstance(self.model, str) and not (
            self.family == MLPERF_INFERENCE and self.model == self.benchmark
        ):
            out["model"] = self.model
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.precision is not None:
            out["precision"] = self.precision
        return out

    @property
    def rank_per_accelerator(self) -> bool:
        if self.per_accelerator is not None:
            return self.per_accelerator
        return self.hardware.count is None and self.objective is not Objective.LATENCY

    # ---- loading -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = "workload") -> Workload:
        """Validate a dict; errors name the field and value.

        Raises:
            InvalidInput: a field is missing or malformed.
        """
        if not isinstance(data, dict):
            raise InvalidInput(f"{where}: expected a mapping, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {validation_message(exc)}") from None

    @classmethod
    def from_text(cls, text: str, *, where: str = "workload") -> Workload:
        """Parse YAML or JSON text (JSON is YAML)."""
        import yaml  # a workload file's only: flags need no parser

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidInput(f"{where}: not valid YAML or JSON: {exc}") from None
        return cls.from_dict(data, where=where)

    @classmethod
    def from_file(cls, path: str | Path) -> Workload:
        """Load a ``.yaml``/``.yml``/``.json`` workload file.

        Raises:
            InvalidInput: missing, unreadable or invalid file.
        """
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read workload file {str(file)!r}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"workload file {str(file)!r} is not text (byte 0x{exc.object[exc.start]:02x} at "
                f"offset {exc.start} is not UTF-8); give a YAML or JSON workload, e.g. "
                "'benchmark: resnet50'"
            ) from None
        if not text.strip():
            raise InvalidInput(
                f"workload file {str(file)!r} is empty; give a YAML or JSON workload, e.g. "
                "'benchmark: resnet50'"
            )
        if file.suffix == ".json":
            try:
                return cls.from_dict(json.loads(text), where=str(file))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{file}: not valid JSON: {exc}") from None
        return cls.from_text(text, where=str(file))
