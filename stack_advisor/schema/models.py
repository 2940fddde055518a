"""The domain model, defined once.

Collectors build these, stores persist and return them, the advisor reasons over them and the
API serialises them. Every identity (``stack_id``, ``benchmark_id``, ``observation_key`` ...) is
derived from content, so the same measurement sent twice has the same key and is stored once.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from stack_advisor.schema.checks import (
    checked_figure,
    checked_name,
    checked_optional_name,
    not_before_2000,
    strict_bool,
    strict_number,
    timestamp_in,
)
from stack_advisor.schema.topology import HostTopology

RESULT_DOCUMENT_VERSION = 1
INT64_MAX = 2**63 - 1  # both engines store integers as INT64
UNKNOWN = "unknown"

# Names (≤ 256 printable characters, no bidi overrides or zero-width characters), strict numbers
# and booleans, and timestamps whose numbers are Unix seconds: see stack_advisor.schema.checks.
Name = Annotated[str, Field(min_length=1), AfterValidator(checked_name)]
OptName = Annotated[str | None, AfterValidator(checked_optional_name)]
Number = Annotated[float, BeforeValidator(strict_number)]
OptNumber = Annotated[float | None, BeforeValidator(strict_number)]
Integer = Annotated[int, BeforeValidator(strict_number)]
OptInteger = Annotated[int | None, BeforeValidator(strict_number)]
Flag = Annotated[bool, BeforeValidator(strict_bool)]
Stamp = Annotated[datetime, BeforeValidator(timestamp_in)]
OptStamp = Annotated[datetime | None, BeforeValidator(timestamp_in)]


def _digest(*parts: Any, length: int = 20) -> str:
    """A stable short hash of JSON-serialisable parts."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def observation_key_of(*parts: Any) -> str:
    """The observation key from its identity parts (ids and plain strings): a hash of their
    separator-joined text. Cheap, because ingest computes one per observation."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return "obs-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def utcnow() -> datetime:
    return datetime.now(UTC)


FUTURE_TOLERANCE = timedelta(days=1)  # clocks of collectors drift; a year-9999 stamp is a bug


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False


def _checked_time(value: datetime | None) -> datetime | None:
    """A timestamp with a time zone, from 2000 on, not in the future (a day of clock skew
    allowed)."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"needs a time zone, got {value.isoformat()!r}; send UTC as e.g. '2026-01-31T12:00:00Z'"
        )
    if value - utcnow() > FUTURE_TOLERANCE:
        raise ValueError(f"is in the future ({value.isoformat()}); check the collector's clock")
    return not_before_2000(value)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True, defer_build=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # NUL bytes break identities, logs and some drivers; no name or text needs one
        if _has_nul(value):
            raise ValueError("must not contain NUL (\\x00) characters")
        return value


class PlacementKind(str, Enum):
    """How the accelerator reaches the workload."""

    BARE_METAL = "bare-metal"
    PASSTHROUGH = "passthrough"
    VGPU = "vgpu"
    UNKNOWN = "unknown"


class SourceKind(str, Enum):
    """Where a figure comes from: our collectors, or a published source."""

    MEASURED = "measured"
    PUBLISHED = "published"


class Provenance(_Model):
    """Where an observation comes from. ``source`` is a short name such as ``mlperf-inference``
    or ``stack-advisor-collector``; ``details`` carries the source-specific coordinates (round,
    division, submitter, system id, file for MLPerf; collector version and host for our runs)."""

    kind: SourceKind
    source: Name
    url: str | None = None
    details: dict[str, str] = Field(default_factory=dict)


class Submission(_Model):
    """A published submission: one system's results in one round of a suite (``source``), as a
    submitter published them. Derived from an observation's provenance at ingest
    (``from_provenance``), so importers only keep writing the coordinates they always wrote."""

    source: str = Field(min_length=1)
    round: str = Field(min_length=1)
    division: str = ""
    submitter: str = Field(min_length=1)
    system: str = Field(min_length=1)

    DETAILS: ClassVar[tuple[str, str, str, str]] = ("round", "division", "submitter", "system_id")
    """The provenance details that name a submission (``division`` may be absent)."""

    @property
    def submission_id(self) -> str:
        return f"{self.source}:{self.round}/{self.division}/{self.submitter}/{self.system}"

    @classmethod
    def from_provenance(cls, provenance: Provenance) -> Submission | None:
        """The submission ``provenance`` names, or None (a round, a submitter and a system id
        are all needed: our own measurements name none)."""
        return cls.from_details(provenance.source, provenance.details)

    @classmethod
    def from_details(cls, source: str, details: dict[str, str]) -> Submission | None:
        round_, division, submitter, system = (details.get(k) or "" for k in cls.DETAILS)
        if not (round_ and submitter and system):
            return None
        return cls(
            source=source, round=round_, division=division, submitter=submitter, system=system
        )


class SoftwareStack(_Model):
    """Driver, CUDA and libraries plus the framework: what a workload ran on.

    Versions are kept as reported; ``None`` means not known (never guessed)."""

    driver: OptName = None
    cuda: OptName = None
    cudnn: OptName = None
    nccl: OptName = None
    tensorrt: OptName = None
    framework: OptName = None
    framework_version: OptName = None
    python: OptName = None
    extra: dict[str, str] = Field(default_factory=dict)
    image: str | None = None
    raw: str | None = Field(default=None, description="free text the stack was parsed from")

    COMPONENT_FIELDS: ClassVar[tuple[str, ...]] = (
        "driver",
        "cuda",
        "cudnn",
        "nccl",
        "tensorrt",
        "python",
    )

    def components(self) -> dict[str, str]:
        """Named component versions, framework included, extras last; unknown ones left out."""
        out: dict[str, str] = {}
        for name in self.COMPONENT_FIELDS:
            value = getattr(self, name)
            if value:
                out[name] = value
        if self.framework:
            out[self.framework] = self.framework_version or UNKNOWN
        for name, value in sorted(self.extra.items()):
            out.setdefault(name, value)
        return out

    @property
    def stack_id(self) -> str:
        # The framework that ran the workload is part of the identity even when the other
        # installed frameworks (extras) are the same: a torch run and a JAX run on one node are
        # two stacks.
        return "stk-" + _digest(self.components(), self.framework, self.image)

    def label(self) -> str:
        parts = []
        if self.framework:
            parts.append(f"{self.framework} {self._framework_version_label()}")
        for name in ("cuda", "cudnn", "tensorrt", "driver"):
            value = getattr(self, name)
            if value and name != self.framework:  # "tensorrt 8.6.0" once, not twice
                parts.append(f"{name} {value}")
        return ", ".join(parts) or "unknown stack"

    def _framework_version_label(self) -> str:
        """The framework's version as written, but an NGC container tag ("23.09": YY.MM, never a
        PyTorch, TensorFlow or TensorRT version) said to be one, with what the release ships
        when the catalogue knows it ("2.1 (NGC 23.09)")."""
        from stack_advisor.catalog.stack_facts import ngc_release_of, ngc_releases

        version = self.framework_version
        framework = (self.framework or "").lower()
        release = ngc_release_of(version) if version and framework in NGC_FRAMEWORKS else None
        if release is None:
            return version or "?"
        known = ngc_releases().get(release)
        shipped = getattr(known, framework, None) if known else None
        return f"{shipped} (NGC {version})" if shipped else f"(NGC {version})"


# Frameworks NVIDIA ships as monthly NGC containers, whose tags (YY.MM) submitters write as
# versions.
NGC_FRAMEWORKS = frozenset(
    {"pytorch", "tensorflow", "tensorrt", "mxnet", "jax", "triton", "paddlepaddle"}
)


class Accelerator(_Model):
    """A kind of accelerator (or the CPU when there is none). ``model`` is the key."""

    model: Name
    vendor: OptName = None
    count: Integer = Field(default=1, ge=0, le=INT64_MAX)
    memory_mib: OptInteger = Field(default=None, ge=0, le=INT64_MAX)
    compute_capability: OptName = None

    @field_validator("model")
    @classmethod
    def _strip(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("accelerator model must not be blank")
        return value


class Host(_Model):
    name: Name
    cpu_model: OptName = None
    cores: OptInteger = Field(default=None, ge=0, le=INT64_MAX)
    cpu_flags: list[str] = Field(default_factory=list)
    numa_nodes: OptInteger = Field(default=None, ge=0, le=INT64_MAX)
    memory_mib: OptInteger = Field(default=None, ge=0, le=INT64_MAX)
    os: OptName = None
    kernel: OptName = None
    labels: dict[str, str] = Field(default_factory=dict)
    topology: HostTopology | None = Field(
        default=None, description="NUMA nodes and device attachments"
    )


class Placement(_Model):
    kind: PlacementKind = PlacementKind.UNKNOWN
    hypervisor: OptName = None
    vgpu_profile: OptName = None
    evidence: list[str] = Field(default_factory=list)
    consistent: Flag = True

    @property
    def placement_id(self) -> str:
        return "|".join([self.kind.value, self.hypervisor or "", self.vgpu_profile or ""])


class Benchmark(_Model):
    """A benchmark with canonical parameters. Same family, name and parameters → same key."""

    family: Name = Field(description="pi | tf_cnn | cnn | mlperf | allreduce | ...")
    name: Name
    parameters: dict[str, Any] = Field(default_factory=dict)

    @property
    def benchmark_id(self) -> str:
        return f"{self.family}/{self.name}/" + _digest(self.parameters, length=12)

    def parameters_json(self) -> str:
        return json.dumps(self.parameters, sort_keys=True, separators=(",", ":"), default=str)


class Measurement(_Model):
    """One measured or published figure for one benchmark: the value plus its spread."""

    benchmark: Benchmark
    metric: Name
    value: Number
    unit: Name
    higher_is_better: Flag = True
    samples: Integer = Field(default=1, ge=1, le=INT64_MAX)
    p10: OptNumber = None
    p90: OptNumber = None
    stddev: OptNumber = Field(default=None, ge=0)
    cv: OptNumber = Field(default=None, ge=0, description="coefficient of variation")
    valid: Flag = True
    note: str | None = None
    timestamp: Stamp = Field(default_factory=utcnow)

    @field_validator("value", "p10", "p90", "stddev", "cv")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"must be a finite number, got {value!r}")
        if value is not None and value < 0:
            # rates, times, sizes and bandwidths: a negative figure is a collector bug
            raise ValueError(f"must not be negative, got {value!r}")
        return value

    @field_validator("timestamp")
    @classmethod
    def _time(cls, value: datetime) -> datetime:
        return _checked_time(value)  # type: ignore[return-value]

    @model_validator(mode="after")
    def _ordered_spread(self) -> Measurement:
        if self.p10 is not None and self.p90 is not None and self.p10 > self.p90:
            raise ValueError(
                f"p10 ({self.p10}) is greater than p90 ({self.p90}); percentiles are ordered "
                "whatever the metric's direction"
            )
        for name in ("value", "p10", "p90"):
            figure = getattr(self, name)
            if figure is not None:
                try:
                    checked_figure(figure, self.unit)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        slack = 1e-9 * abs(self.value)  # the rounding of a figure printed and parsed again
        if self.p10 is not None and self.value < self.p10 - slack:
            raise ValueError(
                f"value ({self.value}) is below its own p10 ({self.p10}); the value "
                "is the median or mean of the samples the percentiles describe"
            )
        if self.p90 is not None and self.value > self.p90 + slack:
            raise ValueError(
                f"value ({self.value}) is above its own p90 ({self.p90}); the value "
                "is the median or mean of the samples the percentiles describe"
            )
        return self


class FailureClass(str, Enum):
    """Whose fault a failure is. Only a stack failure is known-bad (rules a stack out)."""

    STACK = "stack failure"  # the stack is broken: it crashed, would not install or import
    HARNESS = "harness limitation"  # the benchmark cannot run on this backend ("unsupported")
    ENVIRONMENT = "environment"  # a missing pip extra, script or device on the node that ran it
    # a run that ended without a score in a way the benchmark's rules expect of some runs: an
    # MLPerf Training seed that did not reach the target quality (olympic scoring drops it)
    OUTCOME = "run outcome"


HARNESS_STAGE = "unsupported"
ENVIRONMENT_STAGE = "environment"
# exception class names a harness limitation is raised as (microbench's NotSupported, our
# Unsupported); documents written before the stages were classed carry them at stage "run"
HARNESS_ERROR_CLASSES = frozenset({"Unsupported", "NotSupported"})
# error classes of run outcomes begin with it: the Training importer's "training-<status>"
# ("training-aborted": the seed did not converge; "training-no-run_stop": the log ends early)
OUTCOME_ERROR_PREFIX = "training-"


def failure_class(stage: str | None, error_class: str | None = None) -> FailureClass:
    """The class of a failure from its stage (and, for documents from before the classes, its
    exception class)."""
    if stage == ENVIRONMENT_STAGE or error_class == "MissingEnvironment":
        return FailureClass.ENVIRONMENT
    if stage == HARNESS_STAGE or error_class in HARNESS_ERROR_CLASSES:
        return FailureClass.HARNESS
    if error_class is not None and error_class.startswith(OUTCOME_ERROR_PREFIX):
        return FailureClass.OUTCOME
    return FailureClass.STACK


class FailureIn(_Model):
    """A benchmark that could not run or crashed. Never an observation. Its ``stage`` carries its
    class (``failure_class``): ``unsupported`` a harness limitation, ``environment`` something the
    node lacks, any other stage a failure of the stack."""

    benchmark: Benchmark | None = None
    stage: Name = Field(
        description="fingerprint | setup | install | import | run | parse | unsupported "
        "(harness limitation) | environment (missing extra, script or device)"
    )
    error_class: Name
    message: str = ""
    log_tail: str | None = None
    timestamp: Stamp = Field(default_factory=utcnow)

    @field_validator("timestamp")
    @classmethod
    def _time(cls, value: datetime) -> datetime:
        return _checked_time(value)  # type: ignore[return-value]

    @model_validator(mode="before")
    @classmethod
    def _classed(cls, data: Any) -> Any:
        """Documents written before the classes put harness limitations at stage "run": class them
        here, where every failure enters (collectors, importers, the API)."""
        if isinstance(data, dict) and data.get("stage") not in (HARNESS_STAGE, ENVIRONMENT_STAGE):
            kind = failure_class(data.get("stage"), data.get("error_class"))
            if kind in (FailureClass.HARNESS, FailureClass.ENVIRONMENT):
                stage = HARNESS_STAGE if kind is FailureClass.HARNESS else ENVIRONMENT_STAGE
                data = {**data, "stage": stage}
        return data

    @property
    def failure_class(self) -> FailureClass:
        return failure_class(self.stage, self.error_class)


class Run(_Model):
    run_id: Name
    started_at: Stamp = Field(default_factory=utcnow)
    finished_at: OptStamp = None
    collector: Name = "stack-advisor"
    collector_version: Name = "0"
    profile: OptName = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _time(cls, value: datetime | None) -> datetime | None:
        return _checked_time(value)

    @model_validator(mode="after")
    def _finished_after_start(self) -> Run:
        if self.finished_at is not None and self.finished_at < self.started_at:
            raise ValueError(
                f"finished_at ({self.finished_at.isoformat()}) is before started_at "
                f"({self.started_at.isoformat()})"
            )
        return self


class ResultDocument(_Model):
    """What a collector saves or posts: one run on one node with one stack."""

    document_version: Integer = Field(default=RESULT_DOCUMENT_VERSION, ge=1)
    run: Run
    provenance: Provenance
    stack: SoftwareStack
    accelerator: Accelerator
    placement: Placement
    host: Host | None = None
    fingerprint: dict[str, Any] = Field(
        default_factory=dict, description="raw fingerprint fields with their sources"
    )
    measurements: list[Measurement] = Field(default_factory=list)
    failures: list[FailureIn] = Field(default_factory=list)

    @model_validator(mode="after")
    def _supported_version(self) -> ResultDocument:
        if self.document_version > RESULT_DOCUMENT_VERSION:
            raise ValueError(
                f"document_version {self.document_version} is newer than this code "
                f"understands ({RESULT_DOCUMENT_VERSION}); upgrade stack-advisor"
            )
        if self.measurements:
            _check_count(self.accelerator)
        return self

    def to_batch(self) -> IngestBatch:
        context: dict[str, Any] = {
            "stack": self.stack,
            "accelerator": self.accelerator,
            "placement": self.placement,
            "host": self.host,
            "run_id": self.run.run_id,
            "provenance": self.provenance,
        }
        observations = [Observation(**context, **m.model_dump()) for m in self.measurements]
        failures = [Failure(**context, **f.model_dump()) for f in self.failures]
        return IngestBatch(observations=observations, failures=failures, runs=[self.run])


class _Context(_Model):
    """Where something was observed: stack, accelerator, placement, host, run, source."""

    stack: SoftwareStack
    accelerator: Accelerator
    placement: Placement
    host: Host | None = None
    run_id: str | None = None
    provenance: Provenance


def _check_count(accelerator: Accelerator) -> None:
    if accelerator.count < 1:
        raise ValueError(
            "accelerator.count: a measurement ran on at least one accelerator (the CPU counts "
            f"as one), got {accelerator.count}"
        )


class Observation(_Context, Measurement):
    """A fully-contextualised measurement: the unit a store ingests and returns."""

    source_key: str | None = Field(
        default=None,
        description="extra identity within a source (e.g. MLPerf system id); part of the key",
    )

    @model_validator(mode="after")
    def _counted(self) -> Observation:
        _check_count(self.accelerator)
        return self

    @property
    def observation_key(self) -> str:
        return self.key_with(self.benchmark.benchmark_id, self.stack.stack_id)

    def key_with(self, benchmark_id: str, stack_id: str) -> str:
        """The key, given the (already computed) benchmark and stack ids.

        A published result (provenance ``published`` with a ``source_key``: round, division,
        submitter and system) is
        known by where it was published, not by how much of its stack and placement the file it
        came from describes: MLPerf's results tree and its summary table name the same result,
        one with the system's whole software stack, the other with its framework only."""
        published = self.source_key is not None and self.provenance.kind is SourceKind.PUBLISHED
        return observation_key_of(
            benchmark_id,
            self.metric,
            None if published else stack_id,
            self.accelerator.model,
            self.accelerator.count,
            None if published else self.placement.placement_id,
            self.host.name if self.host else None,
            self.run_id,
            self.provenance.source,
            self.source_key,
        )


class Failure(_Context, FailureIn):
    @property
    def failure_key(self) -> str:
        return "fail-" + _digest(
            self.benchmark.benchmark_id if self.benchmark else None,
            self.stage,
            self.error_class,
            self.message,
            self.stack.stack_id,
            self.accelerator.model,
            self.placement.placement_id,
            self.host.name if self.host else None,
            self.run_id,
            length=32,
        )


class IngestBatch(_Model):
    """One batch = one transaction."""

    observations: list[Observation] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)


class IngestResult(_Model):
    observations_received: int
    observations_new: int
    failures_received: int
    failures_new: int


class ObservationFilter(_Model):
    """Filters for querying observations; ``None`` means any. Strings match exactly."""

    stack_id: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    cuda: str | None = None
    driver: str | None = None
    accelerator: str | None = None
    placement: PlacementKind | None = None
    benchmark_id: str | None = None
    benchmark_family: str | None = None
    benchmark_name: str | None = None
    metric: str | None = None
    source: str | None = None
    host: str | None = None
    run_id: str | None = None
    since_generation: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="only observations written by a batch after this data generation "
        "(``StoreStats.generation``); observations written before schema v6 carry none",
    )
    until_generation: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="with since_generation: only up to this generation, inclusive (a cache "
        "labelled with it gets exactly that generation's data)",
    )

    @model_validator(mode="after")
    def _generation_range(self) -> ObservationFilter:
        if self.until_generation is not None and self.since_generation is None:
            raise ValueError("until_generation needs since_generation")
        until, since = self.until_generation, self.since_generation
        if until is not None and since is not None and until < since:
            raise ValueError(f"until_generation ({until}) is below since_generation ({since})")
        return self


class StoredObservation(Observation):
    """An observation as a store returns it, with its key and the data generation of the batch
    that wrote it (None: written before schema v6)."""

    key: str
    generation: int | None = None


class EntityKind(str, Enum):
    STACKS = "stacks"
    ACCELERATORS = "accelerators"
    PLACEMENTS = "placements"
    BENCHMARKS = "benchmarks"
    HOSTS = "hosts"
    RUNS = "runs"
    FAILURES = "failures"
    SUBMISSIONS = "submissions"


class StoreStats(_Model):
    schema_version: int | None
    counts: dict[str, int]
    observations_by_source: dict[str, int]
    generation: int = Field(
        default=0, description="changes whenever the data changes; caches key on it"
    )
