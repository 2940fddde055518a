"""Facts about accelerators and models an estimate reads, through the catalogue
(``stack_advisor.catalog`` via ``stack_advisor.advisor.knowledge.specs``): the canonical accelerator
a name stands for, its class, peak figures and memory, the memory a benchmark's model needs, and the
first driver its generation runs on."""

from __future__ import annotations

from functools import lru_cache

from stack_advisor.advisor.estimate.hardware import figures
from stack_advisor.advisor.knowledge.specs import ResolvedAccelerator, resolve_accelerator
from stack_advisor.advisor.knowledge.table import physical_key


def canonical_accelerator(name: str) -> str:
    """The canonical accelerator a published or typed name stands for."""
    return physical_key(name)


def accelerator_spec(name: str) -> ResolvedAccelerator:
    return resolve_accelerator(name)


@lru_cache(maxsize=4096)
def accelerator_class(name: str) -> str:
    """cpu, the spec's vendor, or 'other' (no public spec)."""
    spec = accelerator_spec(name)
    if spec.is_cpu:
        return "cpu"
    return spec.spec.vendor.lower() if spec.spec else "other"


@lru_cache(maxsize=4096)
def peak_figures(name: str) -> tuple[float, float] | None:
    """(peak compute, memory bandwidth) from the public specs as a transfer reads them under the
    default 8-bit policy (``hardware.figures``: int8 or fp8 as published, else read off a matrix
    peak at fewer bits, else fp16/bf16) and GB/s, MIG share applied; None when either is unknown
    or the only compute figure is the vector units' fp32. (It read INT8 else FP16 alone: GB300
    and B300, which publish fp8 but no int8, were read at half their 8-bit rate beside B200's
    int8, and parts publishing only fp8 or fp4 had none.)"""
    found = figures(name)
    if not found.compute or not found.bandwidth_gbs or found.precision == "fp32":
        return None
    return float(found.compute), float(found.bandwidth_gbs)


def memory_gb(name: str) -> float | None:
    return accelerator_spec(name).figure("memory_gb")


def weight_bits(accelerator: str) -> tuple[int, str]:
    """(bits per weight, precision) of the narrowest format the part computes in, by its
    catalogue peaks: 4 (fp4) where one is published, else 8, the narrowest MLPerf's closed
    division allowed before fp4 (quantised weights keep the accuracy target)."""
    spec = accelerator_spec(accelerator).spec
    if spec is not None and spec.peak_tflops.fp4:
        return 4, "fp4"
    return 8, "8 bits"


def model_weights_gb(benchmark: str, bits: int = 8) -> tuple[float, str] | None:
    """(GB of the model's weights at ``bits`` bits, the catalogue's source) for a benchmark whose
    catalogue entry names its parameter count (``params_b``); None otherwise. An open-division
    variant (another model) has no count of its own."""
    from stack_advisor.catalog import load_catalog, resolve_benchmark

    match = resolve_benchmark(benchmark)
    if not match.resolved or match.base is not None or match.family is None:
        return None
    entry = load_catalog().benchmark(match.family, match.id)
    if entry is None or entry.params_b is None:
        return None
    return float(entry.params_b) * bits / 8, entry.source


def replica_memory_gb(accelerator: str, count: int) -> tuple[float, str] | None:
    """(GB one copy of a model can use, what that is) on ``count`` x ``accelerator``: a MIG slice
    holds one copy in its own instance's memory (instances do not pool memory; a 1g.10gb instance
    has 10 GB whatever the board), a vGPU profile its profile memory times ``count``, whole boards
    their memory times ``count`` (sharded). None when the memory is not known."""
    from stack_advisor.advisor.knowledge.specs import mig_profile
    from stack_advisor.catalog.stack_facts import mig_profile_memory

    resolved = accelerator_spec(accelerator)
    profile = mig_profile(accelerator)
    if profile is not None and resolved.spec is not None:
        found = mig_profile_memory(resolved.spec.id, profile[1])
        if found is not None:
            return found[
                0
            ], f"one {profile[1]} instance ({found[0]:g} GB; MIG instances do not pool memory)"
    have = memory_gb(accelerator)
    if have is None:
        return None
    return have * count, f"{canonical_accelerator(accelerator)} x{count} has {have * count:g} GB"


# Bytes per parameter that training a model's every weight with mixed-precision Adam keeps:
# 16-bit weights and gradients (2 + 2) and fp32 master weights, momentum and variance (4 + 4 + 4)
# (ZeRO, Rajbhandari et al., SC20, section 3.1: https://arxiv.org/abs/1910.02054); sharding spreads
# them over the accelerators, it does not shrink them. Published Training systems hold 65 or more
# bytes per parameter of their pre-training benchmarks (gpt3 on 64 B200), so no run is refused.
TRAINING_STATE_BYTES = 16
TRAINING_STATE_SOURCE = "https://arxiv.org/abs/1910.02054"


def training_state_gb(benchmark: str, family: str | None = None) -> float | None:
    """GB that training every weight of an MLPerf Training benchmark's model keeps
    (``TRAINING_STATE_BYTES`` per parameter); None where it is no Training benchmark, its
    parameters are not catalogued, or it trains adapters alone (LoRA: its frozen weights are
    what must fit, ``model_weights_gb``)."""
    from stack_advisor.catalog import load_catalog, resolve_benchmark

    if family != "mlperf-training":
        return None
    match = resolve_benchmark(benchmark, family)
    if not match.resolved or match.family != family or match.base is not None:
        return None
    entry = load_catalog().benchmark(family, match.id)
    if entry is None or entry.params_b is None or "lora" in (entry.task or "").lower():
        return None
    return float(entry.params_b) * TRAINING_STATE_BYTES


def memory_misfit(
    benchmark: str, accelerator: str, count: int, family: str | None = None
) -> str | None:
    """Why ``count`` x ``accelerator`` cannot hold the benchmark's model (to train it, for an
    MLPerf Training benchmark), or None."""
    have = replica_memory_gb(accelerator, count)
    state = training_state_gb(benchmark, family)
    if state is not None and have is not None and have[0] < state:
        return (
            f"model does not fit in memory to train: {benchmark} keeps >= {state:,.0f} GB "
            f"({TRAINING_STATE_BYTES} bytes per parameter: 16-bit weights and gradients, fp32 "
            f"master weights and Adam's two moments; {TRAINING_STATE_SOURCE}); {have[1]}"
        )
    bits, precision = weight_bits(accelerator)
    need = model_weights_gb(benchmark, bits)
    if need is None or have is None:
        return None
    if have[0] < need[0]:
        return (
            f"model does not fit in memory: {benchmark} needs >= {need[0]:g} GB of weights at "
            f"{precision}; {have[1]}"
        )
    return None


def generation_min_driver(accelerator: str) -> tuple[str, str] | None:
    """(generation, first supporting driver) of an accelerator whose catalogue generation names
    one (``stack_advisor/catalog/generations.yaml``); None when it does not."""
    resolved = accelerator_spec(accelerator)
    driver = resolved.min_driver
    if driver and resolved.spec is not None:
        return str(getattr(resolved.spec, "generation", "") or "its generation").title(), str(
            driver
        )
    return None
