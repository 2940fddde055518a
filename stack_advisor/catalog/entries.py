"""The catalogue's entry types, validated when the YAML files are loaded.

Every entry names its public source (an ``https://`` URL, or ``project:<path>`` for the
project's own benchmarks and metrics).
"""

from __future__ import annotations

import re
from datetime import date
from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp6", "fp4", "int8")
# Tensor precisions from wide to narrow: a narrower format is never slower on the same part, so a
# datasheet's sparse figure copied as dense (or dense and sparse mixed) shows up as a step down.
_NARROWING = ("tf32", "bf16", "fp8", "fp4")
FORM_FACTORS = (
    "sxm",
    "pcie",
    "superchip",
    "oam",
    "module",
    "m.2",
    "integrated",
    "asic",
    "tpu-chip",
)
# Parts where "one accelerator" needs saying: MLPerf's count may be a GPU of a superchip, a module
# of two dies, a card of two GPUs or a TPU chip of two cores.
_COUNTED_AS_REQUIRED = ("superchip", "tpu-chip")
_SOURCE = r"^(https://\S+|project:\S+)$"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

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
    note: str | None = None

    @model_validator(mode="after")
    def _driver_is_nvidia(self) -> Generation:
        if self.min_driver is not None and self.vendor != "nvidia":
            raise ValueError(f"min_driver is an NVIDIA driver version; vendor is {self.vendor!r}")
        return self


class PeakFigures(BaseModel):
    """Dense peak throughput per precision, TFLOP/s (TOPS for int8)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    fp64: float | None = Field(default=None, gt=0)
    fp32: float | None = Field(default=None, gt=0)
    tf32: float | None = Field(default=None, gt=0)
    fp16: float | None = Field(default=None, gt=0)
    bf16: float | None = Field(default=None, gt=0)
    fp8: float | None = Field(default=None, gt=0)
    fp6: float | None = Field(default=None, gt=0)
    fp4: float | None = Field(default=None, gt=0)
    int8: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _narrower_not_slower(self) -> PeakFigures:
        known = [(p, getattr(self, p)) for p in _NARROWING if getattr(self, p) is not None]
        for (wide, a), (narrow, b) in pairwise(known):
            if b < a:
                raise ValueError(
                    f"{narrow} ({b}) is below {wide} ({a}): a sparse figure mixed with dense ones?"
                )
        if self.fp6 is not None and self.fp8 is not None and self.fp6 < self.fp8:
            raise ValueError(f"fp6 ({self.fp6}) is below fp8 ({self.fp8})")
        return self

    def as_dict(self) -> dict[str, float]:
        """The published figures only, in PRECISIONS order."""
        return {p: v for p in PRECISIONS if (v := getattr(self, p)) is not None}


class AcceleratorEntry(_Entry):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    vendor: str
    family: str
    generation: str
    form_factor: Literal[
        "sxm", "pcie", "superchip", "oam", "module", "m.2", "integrated", "asic", "tpu-chip"
    ]
    edition: str | None = None
    launch_year: int | None = Field(default=None, ge=2010, le=2030)
    counted_as: str | None = Field(default=None, min_length=8)
    memory_gb: float | None = Field(default=None, gt=0)
    memory_bw_gbs: float | None = Field(default=None, gt=0)
    peak_tflops: PeakFigures = Field(default_factory=PeakFigures)
    tdp_w: float | None = Field(default=None, gt=0)
    interconnect: str | None = None
    interconnect_gbs: float | None = Field(default=None, gt=0)
    mig_slices: int | None = Field(default=None, ge=1)
    vgpu_prefixes: list[str] = Field(default_factory=list)
    nvml_names: list[str] = Field(default_factory=list)
    gfd_products: list[str] = Field(default_factory=list)
    pci_ids: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)
    # the parts closest in design (same architecture, a generation apart or another edition),
    # nearest first: what a transfer to this part should draw on before parts that are only
    # close in peak figures (B300 from B200 / GB300, MI355X from MI350X / MI325X)
    siblings: list[str] = Field(default_factory=list)
    # precisions whose peak may not be read off a published one at fewer bits by the bit ratio
    # (``stack_advisor.advisor.estimate.hardware.matrix_rate``) because this part's figures do
    # not follow it: the note says why (a Jetson module's int8 counts its DLAs; a GeForce card's
    # 16-bit rate depends on an accumulate mode its maker does not state)
    not_derived: list[Literal["int8", "fp8", "fp6", "fp16", "bf16"]] = Field(default_factory=list)
    note: str | None = None

    _patterns = field_validator("patterns")(classmethod(lambda cls, v: _check_patterns(v)))

    @model_validator(mode="after")
    def _consistent(self) -> AcceleratorEntry:
        if self.form_factor in _COUNTED_AS_REQUIRED and not self.counted_as:
            raise ValueError(
                f"counted_as: a {self.form_factor} entry must say what one accelerator is"
            )
        if self.interconnect_gbs is not None and not self.interconnect:
            raise ValueError(
                "interconnect: interconnect_gbs needs the link's name (NVLink 4, xGMI, ICI, ...)"
            )
        if self.vendor != "nvidia" and (self.gfd_products or self.mig_slices or self.vgpu_prefixes):
            raise ValueError(
                "gfd_products, mig_slices and vgpu_prefixes are NVIDIA's; vendor is "
                + repr(self.vendor)
            )
        for product in self.gfd_products:
            if " " in product:
                raise ValueError(
                    f"gfd_products: {product!r}: GFD writes labels with '-' for spaces"
                )
        return self

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


class PublishedFigure(BaseModel):
    """A figure with where it was published and, where the page says it in passing, where on it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    value: float = Field(gt=0)
    source: str = Field(pattern=_SOURCE)
    note: str | None = None


class Redefinition(BaseModel):
    """The round from which a benchmark's name stands for another workload (a new dataset or
    model under the same name), with where that shows: results of earlier rounds measure the old
    workload and are no evidence for the current one."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    round: str = Field(pattern=r"^v\d+(\.\d+)*$")
    source: str = Field(pattern=_SOURCE)
    note: str = Field(min_length=1)


class Introduced(BaseModel):
    """The round whose results first hold a benchmark (``source``: that round's results, the
    round before's holding none): the benchmark's age is counted in published rounds from it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    round: str = Field(pattern=r"^v\d+(\.\d+)*$")
    source: str = Field(pattern=_SOURCE)


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
        default=None,
        description="the reference model's precision its accuracy target is set against",
    )
    max_seq_len: int | None = Field(
        default=None, gt=0, description="input tokens, as the rules publish"
    )
    max_output_tokens: int | None = Field(
        default=None, gt=0, description="the reference's generation limit"
    )
    dataset: str | None = None
    mean_input_tokens: PublishedFigure | None = None  # the dataset's, per request, as published
    mean_output_tokens: PublishedFigure | None = None
    memory_gb: float | None = Field(default=None, gt=0)
    bound: Literal["compute", "memory"] | None = None
    tokens: bool = False
    latency_percentile: float | None = Field(default=None, gt=0, lt=100)
    aliases: list[str] = Field(default_factory=list)
    variant_patterns: list[str] = Field(default_factory=list)
    reference: str | None = Field(default=None, pattern=_SOURCE)
    model_source: str | None = Field(default=None, pattern=_SOURCE)
    redefined: Redefinition | None = None
    introduced: Introduced | None = None

    _patterns = field_validator("variant_patterns")(classmethod(lambda cls, v: _check_patterns(v)))


class LatencyLimit(BaseModel):
    """A scenario's published latency constraint for one benchmark: time to first token and
    time per output token (LLMs) or the per-query latency bound, in ms, from round ``since`` on."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

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


SOFTWARE_CLASSES = ("reference", "optimised")


class FrameworkEntry(_Entry):
    """A framework or stack component. ``software_class`` says whether results run on it are a
    reference implementation's (MLCommons reference code, onnxruntime, eager PyTorch) or an
    optimised runtime's (TensorRT, vLLM, OpenVINO, ...), with the source that says so: the two
    are not interchangeable evidence (``stack_advisor.advisor.estimate.stack_effect``)."""

    id: str = Field(min_length=1)
    kind: Literal["framework", "component"]
    aliases: list[str] = Field(default_factory=list)
    note: str | None = None
    software_class: Literal["reference", "optimised"] | None = None
    class_source: str | None = Field(default=None, pattern=_SOURCE)
    # a serving engine for generative models only (vLLM, TensorRT-LLM, SGLang): in a stack text
    # that lists several runtimes it is never the one that ran a vision or recommendation model
    llm_engine: bool = False
    # a library that trains or serves through another framework of this catalogue (NeMo through
    # PyTorch, MaxText through JAX): a ranking's default view counts its results as that
    # framework's stack family (``stack_advisor.catalog.software.stack_family_of``)
    runs_on: str | None = None
    # an LLM serving layer over other engines of this catalogue (NVIDIA Dynamo over TensorRT-LLM,
    # vLLM or SGLang): an image named after it may run any of them
    serves_through: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _class_has_source(self) -> FrameworkEntry:
        if self.software_class is not None and self.kind != "framework":
            raise ValueError(f"{self.id}: a software class is for frameworks, not {self.kind}s")
        if self.software_class is not None and not self.class_source:
            raise ValueError(
                f"{self.id}: software_class {self.software_class!r} needs a class_source"
            )
        return self


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


CPU_PRECISIONS = ("fp64", "fp32", "fp16", "bf16", "int8")


class CpuCoreEntry(_Entry):
    """A CPU core microarchitecture and the peak operations per cycle per core its vendor
    documents for each precision (``ops_per_cycle``: FLOP, or int8 operations, a multiply-add
    counted as two), from its widest matrix or vector unit (``units``). A precision whose rate is
    not documented is left out, never guessed. A model's peak is derived from these
    (``stack_advisor.catalog.cpu_models``)."""

    id: str = Field(min_length=1)
    vendor: str
    units: list[str] = Field(min_length=1)
    ops_per_cycle: dict[Literal["fp64", "fp32", "fp16", "bf16", "int8"], int] = Field(
        default_factory=dict
    )
    note: str | None = None

    @field_validator("ops_per_cycle")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        for precision, ops in value.items():
            if ops <= 0:
                raise ValueError(f"{precision}: {ops} operations per cycle is not positive")
        return value


class CpuModelEntry(_Entry):
    """One CPU model's published figures, per socket (MLPerf counts a CPU-only system's sockets).

    ``id`` is the name the ``cpus`` families resolve the model to. ``memory_bw_gbs`` is set only
    where the vendor publishes a per-socket bandwidth (its ``memory_bw_source``); otherwise the
    bandwidth is derived from ``memory_channels`` x ``memory_mts`` x 8 bytes. A figure not
    published stays empty."""

    id: str = Field(min_length=1)
    core: str = Field(min_length=1, description="a CpuCoreEntry id")
    generation: str = Field(min_length=1)
    launch_year: int = Field(ge=2010, le=2030)
    cores: int = Field(gt=0)
    base_ghz: float | None = Field(default=None, gt=0)
    all_core_boost_ghz: float | None = Field(default=None, gt=0)
    max_boost_ghz: float | None = Field(default=None, gt=0)
    memory_channels: int | None = Field(default=None, gt=0)
    memory_type: str | None = None
    memory_mts: int | None = Field(default=None, gt=0)
    memory_bw_gbs: float | None = Field(default=None, gt=0)
    memory_bw_source: str | None = Field(default=None, pattern=_SOURCE)
    tdp_w: float | None = Field(default=None, gt=0)
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CpuModelEntry:
        if self.memory_bw_gbs is not None and not self.memory_bw_source:
            raise ValueError("memory_bw_source: a published memory_bw_gbs needs its source")
        clocks = [
            c for c in (self.base_ghz, self.all_core_boost_ghz, self.max_boost_ghz) if c is not None
        ]
        if clocks != sorted(clocks):
            raise ValueError(f"clocks: base <= all-core boost <= max boost, got {clocks}")
        return self
