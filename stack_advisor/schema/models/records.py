"""What is recorded: measurements, observations, failures, runs, result documents, and the
batches a store ingests."""

from __future__ import annotations

import math
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import Field, field_validator, model_validator

from stack_advisor.schema.checks import checked_figure
from stack_advisor.schema.models.base import (
    INT64_MAX,
    RESULT_DOCUMENT_VERSION,
    DomainModel,
    Flag,
    Integer,
    Name,
    Number,
    OptName,
    OptNumber,
    OptStamp,
    SourceKind,
    Stamp,
    checked_time,
    digest,
    observation_key_of,
    utcnow,
)
from stack_advisor.schema.models.parts import (
    Accelerator,
    Benchmark,
    Host,
    Placement,
    Provenance,
    SoftwareStack,
)


class Measurement(DomainModel):
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
        return checked_time(value)  # type: ignore[return-value]

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


class FailureIn(DomainModel):
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
        return checked_time(value)  # type: ignore[return-value]

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


class Run(DomainModel):
    run_id: Name
    started_at: Stamp = Field(default_factory=utcnow)
    finished_at: OptStamp = None
    collector: Name = "stack-advisor"
    collector_version: Name = "0"
    profile: OptName = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _time(cls, value: datetime | None) -> datetime | None:
        return checked_time(value)

    @model_validator(mode="after")
    def _finished_after_start(self) -> Run:
        if self.finished_at is not None and self.finished_at < self.started_at:
            raise ValueError(
                f"finished_at ({self.finished_at.isoformat()}) is before started_at "
                f"({self.started_at.isoformat()})"
            )
        return self


class ResultDocument(DomainModel):
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


class _Context(DomainModel):
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
        return "fail-" + digest(
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


class IngestBatch(DomainModel):
    """One batch = one transaction."""

    observations: list[Observation] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    runs: list[Run] = Field(default_factory=list)


class IngestResult(DomainModel):
    observations_received: int
    observations_new: int
    failures_received: int
    failures_new: int
