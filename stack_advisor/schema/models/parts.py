"""What a figure was measured on and where it comes from: provenance, submission, software
stack, accelerator, host, placement and benchmark."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import Field, field_validator

from stack_advisor.schema.models.base import (
    INT64_MAX,
    UNKNOWN,
    DomainModel,
    Flag,
    Integer,
    Name,
    OptInteger,
    OptName,
    PlacementKind,
    SourceKind,
    digest,
)
from stack_advisor.schema.topology import HostTopology


class Provenance(DomainModel):
    """Where an observation comes from. ``source`` is a short name such as ``mlperf-inference``
    or ``stack-advisor-collector``; ``details`` carries the source-specific coordinates (round,
    division, submitter, system id, file for MLPerf; collector version and host for our runs)."""

    kind: SourceKind
    source: Name
    url: str | None = None
    details: dict[str, str] = Field(default_factory=dict)


class Submission(DomainModel):
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


class SoftwareStack(DomainModel):
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
        return "stk-" + digest(self.components(), self.framework, self.image)

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


class Accelerator(DomainModel):
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


class Host(DomainModel):
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


class Placement(DomainModel):
    kind: PlacementKind = PlacementKind.UNKNOWN
    hypervisor: OptName = None
    vgpu_profile: OptName = None
    evidence: list[str] = Field(default_factory=list)
    consistent: Flag = True

    @property
    def placement_id(self) -> str:
        return "|".join([self.kind.value, self.hypervisor or "", self.vgpu_profile or ""])


class Benchmark(DomainModel):
    """A benchmark with canonical parameters. Same family, name and parameters → same key."""

    family: Name = Field(description="pi | tf_cnn | cnn | mlperf | allreduce | ...")
    name: Name
    parameters: dict[str, Any] = Field(default_factory=dict)

    @property
    def benchmark_id(self) -> str:
        return f"{self.family}/{self.name}/" + digest(self.parameters, length=12)

    def parameters_json(self) -> str:
        return json.dumps(self.parameters, sort_keys=True, separators=(",", ":"), default=str)
