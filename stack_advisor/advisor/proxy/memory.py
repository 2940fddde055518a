"""Memory feasibility: do a model's weights and KV cache fit, at which tensor-parallel degree.

Per GPU at degree ``tp``: weights / tp + KV cache of the concurrent sequences at their full
context / tp, against the part's memory times the share a serving runtime gives its cache and
weights (vLLM's default ``gpu_memory_utilization`` 0.9). The smallest power-of-two degree that
fits is proposed; replicas per node follow from the node's GPU count.
"""

from __future__ import annotations

from dataclasses import dataclass

from stack_advisor.advisor.proxy.model import PRECISION_BYTES, ModelSpec
from stack_advisor.catalog import load_catalog
from stack_advisor.catalog.entries import AcceleratorEntry
from stack_advisor.schema.errors import InvalidInput

# vLLM's default gpu_memory_utilization: https://docs.vllm.ai/en/latest/serving/engine_args.html
# (--gpu-memory-utilization)
USABLE_SHARE = 0.9
# narrowest first: the weights' format a part runs when the user names none
_NARROWEST = ("fp4", "fp8", "int8", "fp16", "bf16", "fp32")
TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
UNBOUNDED = 2**31  # a batch memory does not bound: the model's KV cache size is unknown


@dataclass(frozen=True)
class MemoryVerdict:
    """Whether ``count`` GPUs hold one replica; figures in GB (1e9 bytes)."""

    model: str
    accelerator: str
    count: int
    precision: str
    weights_gb: float
    kv_cache_gb: float
    capacity_gb: float  # usable memory of the ``count`` GPUs
    fits: bool
    min_count: int | None  # smallest tensor-parallel degree that fits; None: none up to 64
    replicas: int  # replicas ``count`` GPUs hold at ``min_count`` each

    @property
    def text(self) -> str:
        need = self.weights_gb + self.kv_cache_gb
        verdict = "fits" if self.fits else "does not fit"
        smallest = f"; smallest that fits: {self.min_count}" if self.min_count else ""
        return (
            f"{self.model} on {self.count} x {self.accelerator} ({self.precision}): {verdict} "
            f"({need:.1f} GB of weights and KV cache, {self.capacity_gb:.1f} GB usable{smallest})"
        )


def part(accelerator: str) -> AcceleratorEntry:
    """The catalogue entry of a canonical accelerator id.

    Raises:
        InvalidInput: not a catalogued accelerator, or one without a published memory size.
    """
    entry = load_catalog().accelerators.get(accelerator)
    if entry is None or not entry.memory_gb:
        raise InvalidInput(
            f"accelerator: {accelerator!r} has no published memory size in the catalogue"
        )
    return entry


def default_precision(entry: AcceleratorEntry, model: ModelSpec) -> str:
    """The model's own precision when it states one the part runs, else the narrowest format
    the part publishes a tensor peak for (what MLPerf's LLM submissions run)."""
    peaks = entry.peak_tflops.as_dict() if entry.peak_tflops else {}
    if model.precision and (model.precision in peaks or model.precision == "fp32"):
        return model.precision
    return next((p for p in _NARROWEST if p in peaks), "fp16")


def kv_cache_bytes(model: ModelSpec, context: int, concurrency: int, precision: str) -> float:
    """KV cache of ``concurrency`` sequences of ``context`` tokens (the cache in the weights'
    format, at least FP8 as runtimes keep it)."""
    per_elem = max(PRECISION_BYTES[precision], PRECISION_BYTES["fp8"])
    return model.kv_elems_per_token * context * concurrency * per_elem


def feasibility(
    model: ModelSpec,
    accelerator: str,
    *,
    count: int,
    context: int,
    concurrency: int = 1,
    precision: str | None = None,
) -> MemoryVerdict:
    """Whether the model at ``context`` tokens x ``concurrency`` sequences fits ``count`` GPUs.

    Raises:
        InvalidInput: an unknown part, a count or context below 1, or an unknown precision.
    """
    for name, value in (("count", count), ("context", context), ("concurrency", concurrency)):
        if value < 1:
            raise InvalidInput(f"{name} = {value} must be at least 1")
    entry = part(accelerator)
    prec = precision or default_precision(entry, model)
    if prec not in PRECISION_BYTES:
        raise InvalidInput(f"precision = {prec!r} (expected one of {', '.join(PRECISION_BYTES)})")
    weights = model.weight_bytes(prec)
    kv = kv_cache_bytes(model, context, concurrency, prec)
    usable = float(entry.memory_gb or 0) * 1e9 * USABLE_SHARE
    smallest = next((tp for tp in TP_DEGREES if weights + kv <= tp * usable), None)
    return MemoryVerdict(
        model=model.name,
        accelerator=accelerator,
        count=count,
        precision=prec,
        weights_gb=weights / 1e9,
        kv_cache_gb=kv / 1e9,
        capacity_gb=count * usable / 1e9,
        fits=smallest is not None and smallest <= count,
        min_count=smallest,
        replicas=count // smallest if smallest else 0,
    )


def usable_bytes(entry: AcceleratorEntry) -> float:
    """One GPU's memory a runtime gives weights and cache."""
    return float(entry.memory_gb or 0) * 1e9 * USABLE_SHARE


def max_batch(model: ModelSpec, accelerator: str, tp: int, context: int, precision: str) -> int:
    """Sequences of ``context`` tokens one replica of ``tp`` GPUs holds beside its weights
    (0: the weights alone do not fit; ``UNBOUNDED`` for a model without a known KV size)."""
    usable = float(part(accelerator).memory_gb or 0) * 1e9 * USABLE_SHARE * tp
    free = usable - model.weight_bytes(precision)
    per_seq = kv_cache_bytes(model, context, 1, precision)
    if free <= 0:
        return 0
    return max(1, int(free // per_seq)) if per_seq > 0 else UNBOUNDED
