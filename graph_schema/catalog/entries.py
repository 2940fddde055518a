"""The catalogue's entry types, validated when the YAML files are loaded.

Every entry names its public source (an ``https://`` URL, or ``project:<path>`` for the
project's own benchmarks and metrics).
"""

from __future__ import annotations

import re
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
    """A benchmark and the facts of its model, each as published (``source``: the benchmark's
    rules; ``reference``: its reference implementation; ``model_source``: the model's own card
    or paper). A fact not published stays empty.

    ``id`` is the one name every layer uses (importers store it, queries ask for it); it is
    unique within its ``family``. ``tokens``: LoadGen counts this benchmark's throughput in
    tokens (its published throughput is tokens/s whatever a results table labels it).
    ``latency_percentile``: the tail percentile its latency result reports where the scenario's
    usual one does not apply (PointPainting: 99.9)."""

    id: str = Field(min_length=1)
    family: str
    task: str
    model: str | None = None
    params_b: float | None = Field(default=None, gt=0, description="total parameters, billions")
    active_params_b: float | None = Field(default=None, gt=0, description="per token (MoE)")
    precision: Literal["fp32", "fp16", "bf16", "fp8"] | None = Field(
        default=None, description="the reference model's precision its accuracy target is set against")
    max_seq_len: int | None = Field(default=None, gt=0, description="input tokens, as the rules publish")
    max_output_tokens: int | None = Field(default=None, gt=0, description="the reference's generation limit")
    dataset: str | None = None
    memory_gb: float | None = Field(default=None, gt=0)
    bound: Literal["compute", "memory"] | None = None
    tokens: bool = False
    latency_percentile: float | None = Field(default=None, gt=0, lt=100)
    aliases: list[str] = Field(default_factory=list)
    variant_patterns: list[str] = Field(default_factory=list)
    reference: str | None = Field(default=None, pattern=_SOURCE)
    model_source: str | None = Field(default=None, pattern=_SOURCE)

    _patterns = field_validator("variant_patterns")(classmethod(lambda cls, v: _check_patterns(v)))


class LatencyLimit(BaseModel):
    """A scenario's published latency constraint for one benchmark: time to first token and
    time per output token (LLMs) or the per-query latency bound, in ms, from round ``since`` on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: str = Field(min_length=1)
    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    latency_ms: float | None = Field(default=None, gt=0)
    since: str = Field(pattern=r"^v\d+\.\d+$", description="the first round with this limit")
    source: str = Field(pattern=_SOURCE)


class ScenarioEntry(_Entry):
    id: str = Field(min_length=1)
    loadgen_mode: Literal["Offline", "Server", "SingleStream", "MultiStream"]
    metric: str
    aliases: list[str] = Field(default_factory=list)
    latency_limits: list[LatencyLimit] = Field(default_factory=list)

    def limits_for(self, benchmark: str, round_name: str | None = None) -> LatencyLimit | None:
        """The limit for ``benchmark`` (a catalogue id) in force in ``round_name`` (the newest
        when None); None when the scenario publishes none for it."""
        def order(limit: LatencyLimit) -> tuple[int, ...]:
            return tuple(int(p) for p in limit.since[1:].split("."))
        found = [lim for lim in self.latency_limits if lim.benchmark == benchmark]
        if round_name is not None:
            wanted = tuple(int(p) for p in round_name.lstrip("v").split("."))
            found = [lim for lim in found if order(lim) <= wanted]
        return max(found, key=order) if found else None


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
