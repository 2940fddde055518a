"""Which PI cases a profile runs on a device, and how long each may take.

``quick`` keeps the whole suite (NumPy + PyTorch) within about 30 s on a 2-core machine; ``full``
uses the sizes that characterise a data-centre GPU (ResNet-50 layers at batch 64, Llama-7B
GEMM shapes, arrays far larger than the L2 cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stack_advisor.microbench.timing import TimingPolicy

PROFILES = ("quick", "full")
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Case:
    pi: str
    params: dict[str, Any]


# (layer, in_channels, size, out_channels, kernel, stride, padding) for a 224x224 input.
RESNET50_LAYERS: tuple[tuple[str, int, int, int, int, int, int], ...] = (
    ("resnet50.conv1", 3, 224, 64, 7, 2, 3),
    ("resnet50.res2.conv2", 64, 56, 64, 3, 1, 1),
    ("resnet50.res3.conv2", 128, 28, 128, 3, 1, 1),
    ("resnet50.res4.conv2", 256, 14, 256, 3, 1, 1),
    ("resnet50.res5.conv2", 512, 7, 512, 3, 1, 1),
    ("resnet50.res4.conv1", 1024, 14, 256, 1, 1, 0),
)

# Llama-2-7B projections for a batch of 4096 tokens (hidden 4096, MLP 11008), and decode (16
# tokens).
LLM_GEMMS: tuple[tuple[str, int, int, int], ...] = (
    ("llm-qkv", 4096, 12288, 4096),
    ("llm-mlp-up", 4096, 11008, 4096),
    ("llm-mlp-down", 4096, 4096, 11008),
    ("llm-decode", 16, 4096, 4096),
)


def _conv(
    layer: tuple[str, int, int, int, int, int, int], batch: int, dtype: str, direction: str
) -> Case:
    name, c, size, k, r, s, pad = layer
    return Case(
        "conv2d",
        dict(
            batch=batch,
            in_channels=c,
            height=size,
            width=size,
            out_channels=k,
            kernel=r,
            stride=s,
            padding=pad,
            dtype=dtype,
            direction=direction,
            layer=name,
        ),
    )


def _memory(elements: int, dtype: str = "fp32", flush: bool = False) -> list[Case]:
    params = dict(elements=elements, dtype=dtype, flush_l2=flush)
    return [Case(pi, dict(params)) for pi in ("mem_copy", "mem_triad", "elementwise", "reduction")]


def cases(profile: str, device: str) -> list[Case]:
    """The cases of ``profile`` on ``device`` ("cpu" or "cuda"). Raises ValueError otherwise."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return _cpu_quick() if profile == "quick" else _cpu_full()
    return _cuda_quick() if profile == "quick" else _cuda_full()


def _cpu_quick() -> list[Case]:
    """A CPU in seconds: small GEMMs, one conv layer, memory, SDPA."""
    out: list[Case] = []
    out += [
        Case("gemm", dict(m=256, n=256, k=256, dtype="fp32")),
        Case("gemm", dict(m=64, n=1024, k=1024, dtype="fp32", shape="llm-decode")),
        Case("gemm", dict(m=256, n=256, k=256, dtype="bf16")),
    ]
    out += [_conv(RESNET50_LAYERS[3], 1, "fp32", d) for d in ("forward", "backward")]
    out += _memory(1 << 22)
    out += [
        Case("sdpa", dict(batch=1, heads=4, seq_len=256, head_dim=64, causal=c, dtype="fp32"))
        for c in (False, True)
    ]
    return out


def _cpu_full() -> list[Case]:
    """A CPU's full profile: larger GEMMs, every ResNet-50 layer, memory, SDPA."""
    out: list[Case] = []
    out += [
        Case("gemm", dict(m=n, n=n, k=n, dtype=dt)) for n in (1024, 2048) for dt in ("fp32", "bf16")
    ]
    out += [Case("gemm", dict(m=64, n=4096, k=4096, dtype="fp32", shape="llm-decode"))]
    out += [
        _conv(layer, 4, "fp32", d) for layer in RESNET50_LAYERS for d in ("forward", "backward")
    ]
    out += _memory(1 << 25)
    out += [
        Case("sdpa", dict(batch=1, heads=8, seq_len=1024, head_dim=64, causal=c, dtype="fp32"))
        for c in (False, True)
    ]
    return out


def _cuda_quick() -> list[Case]:
    """A GPU in seconds: one GEMM size per dtype, one conv layer, memory, transfers, SDPA."""
    out: list[Case] = []
    out += [
        Case("gemm", dict(m=2048, n=2048, k=2048, dtype=dt))
        for dt in ("fp32", "tf32", "fp16", "bf16", "fp8")
    ]
    out += [_conv(RESNET50_LAYERS[3], 32, "fp16", d) for d in ("forward", "backward")]
    out += _memory(1 << 26)
    out += [
        Case("transfer", dict(size_bytes=64 << 20, direction=d, host_memory="pinned"))
        for d in ("h2d", "d2h")
    ]
    out += [
        Case(
            "sdpa",
            dict(batch=4, heads=16, seq_len=1024, head_dim=64, causal=False, dtype="fp16"),
        )
    ]
    return out


def _cuda_full() -> list[Case]:
    """A GPU's full profile: GEMMs (square and LLM shapes), every ResNet-50 layer, memory in and
    out of L2, transfers, SDPA."""
    out: list[Case] = []
    out += [
        Case("gemm", dict(m=8192, n=8192, k=8192, dtype=dt))
        for dt in ("fp32", "tf32", "fp16", "bf16", "fp8")
    ]
    out += [Case("gemm", dict(m=4096, n=4096, k=4096, dtype=dt)) for dt in ("fp32", "tf32", "bf16")]
    out += [
        Case("gemm", dict(m=m, n=n, k=k, dtype=dt, shape=label))
        for label, m, n, k in LLM_GEMMS
        for dt in ("fp16", "bf16", "fp8")
    ]
    out += [
        _conv(layer, 64, dt, d)
        for layer in RESNET50_LAYERS
        for dt in ("fp32", "tf32", "fp16")
        for d in ("forward", "backward")
    ]
    out += _memory(1 << 28)
    out += _memory(1 << 22, flush=False) + _memory(1 << 22, flush=True)
    out += [
        Case("transfer", dict(size_bytes=256 << 20, direction=d, host_memory=h))
        for d in ("h2d", "d2h")
        for h in ("pinned", "pageable")
    ]
    out += [
        Case("sdpa", dict(batch=4, heads=32, seq_len=2048, head_dim=128, causal=c, dtype=dt))
        for dt in ("fp16", "bf16")
        for c in (False, True)
    ]
    out += [
        Case(
            "sdpa",
            dict(batch=1, heads=32, seq_len=8192, head_dim=128, causal=True, dtype="bf16"),
        )
    ]
    return out


def policy(profile: str, device: str, flush_l2: bool = False) -> TimingPolicy:
    if profile == "quick":
        return TimingPolicy(
            warmup=1, min_repeats=5, max_repeats=50, budget_s=0.25, flush_l2=flush_l2
        )
    if device == "cuda":
        return TimingPolicy(
            warmup=3, min_repeats=10, max_repeats=200, budget_s=0.6, flush_l2=flush_l2
        )
    return TimingPolicy(warmup=2, min_repeats=7, max_repeats=100, budget_s=1.0, flush_l2=flush_l2)
