"""The catalogue's entry types, validated when the YAML files are loaded.

Every entry names its public source (an ``https://`` URL, or ``project:<path>`` for the
project's own benchmarks and metrics).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
_SOURCE = r"^(https://\S+|project:\S+)$"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(pattern=_SOURCE)


def _check_patterns(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(pattern, re.IGNORECASE)  # as the resolver compiles it: re's cache reuses it
        except re.error as exc:
            raise ValueError(f"bad pattern {pattern!r}: {exc}") from None
    return patterns


class Generation(_Entry):
    """An architecture generation; ``min_driver`` is the oldest NVIDIA driver that runs it."""

    id: str = Field(min_length=1)
    vendor: str
    min_driver: str | None = Field(default=None, pattern=r"^\d+(\.\d+)*$")


class PeakFigures(BaseModel):
    """Dense peak throughput per precision, TFLOP/s (TOPS for int8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fp32: float | None = Field(default=None, gt=0)
    tf32: float | None = Field(default=None, gt=0)
    fp16: float | None = Field(default=None, gt=0)
    bf16: float | None = Field(default=None, gt=0)
    fp8: float | None = Field(default=None, gt=0)
    int8: float | None = Field(default=None, gt=0)


class AcceleratorEntry(_Entry):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    vendor: str
    family: str
    generation: str
    form_factor: Literal["sxm", "pcie", "superchip", "oam", "module", "m.2", "integrated", "asic", "tpu-chip"]
    memory_gb: float | None = Field(default=None, gt=0)
    memory_bw_gbs: float | None = Field(default=None, gt=0)
    peak_tflops: PeakFigures = Field(default_factory=PeakFigures)
    tdp_w: float | None = Field(default=None, gt=0)
    mig_slices: int | None = Field(default=None, ge=1)
    vgpu_prefixes: list[str] = Field(default_factory=list)
    nvml_names: list[str] = Field(default_factory=list)
    gfd_products: list[str] = Field(default_factory=list)
    pci_ids: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    note: str | None = None

    _patterns = field_validator("patterns")(classmethod(lambda cls, v: _check_patterns(v)))

    @property
    def gfd_product(self) -> str | None:
        """The ``nvidia.com/gpu.product`` label GPU feature discovery writes for this board."""
        return self.gfd_products[0] if self.gfd_products else None

    def names(self) -> list[str]:
        return [self.id, self.name, *self.nvml_names, *self.gfd_products, *self.aliases]


class CpuEntry(_Entry):
    """A CPU family: patterns with named groups fill the ``id`` template."""

    id: str = Field(min_length=1)
    vendor: str
    family: str
    patterns: list[str] = Field(min_length=1)
    note: str | None = None

    _patterns = field_validator("patterns")(classmethod(lambda cls, v: _check_patterns(v)))


class BenchmarkEntry(_Entry):
    id: str = Field(min_length=1)
    family: str
    task: str
    model: str | None = None
    params_b: float | None = Field(default=None, gt=0)
    memory_gb: float | None = Field(default=None, gt=0)
    bound: Literal["compute", "memory"] | None = None
    aliases: list[str] = Field(default_factory=list)
    variant_patterns: list[str] = Field(default_factory=list)

    _patterns = field_validator("variant_patterns")(classmethod(lambda cls, v: _check_patterns(v)))


class ScenarioEntry(_Entry):
    id: str = Field(min_length=1)
    loadgen_mode: Literal["Offline", "Server", "SingleStream", "MultiStream"]
    metric: str
    aliases: list[str] = Field(default_factory=list)


class MetricEntry(_Entry):
    id: str = Field(min_length=1)
    unit: str
    higher_is_better: bool
    aliases: list[str] = Field(default_factory=list)


class FrameworkEntry(_Entry):
    id: str = Field(min_length=1)
    kind: Literal["framework", "component"]
    aliases: list[str] = Field(default_factory=list)
    note: str | None = None


class RoundEntry(_Entry):
    """A benchmark round and the day its results were published (``rounds.yaml``)."""

    family: str = Field(min_length=1)
    id: str = Field(min_length=1)
    published: date


class ArchitectureEntry(_Entry):
    """A CPU architecture as Kubernetes labels it, and the name patterns that stand for it."""

    id: str = Field(min_length=1)
    patterns: list[str] = Field(min_length=1)

    _patterns = field_validator("patterns")(classmethod(lambda cls, v: _check_patterns(v)))
