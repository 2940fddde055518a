"""The performance indicators (PIs): typed, versioned parameters, a FLOP or byte formula, a unit.

Each PI's ``work(params)`` is the amount of work one run does (FLOPs for compute PIs, bytes moved
for memory PIs); a backend times the run and the rate is ``work / seconds`` in the PI's unit.
Bump a PI's ``version`` whenever its kernel or formula changes, so figures are never mixed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DType = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"]

ITEMSIZE: dict[str, int] = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
"""Bytes per element as stored (tf32 is fp32 storage with TF32 tensor-core math)."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GemmParams(_Params):
    """C[m,n] = A[m,k] @ B[k,n]."""

    m: int = Field(ge=1)
    n: int = Field(ge=1)
    k: int = Field(ge=1)
    dtype: DType = "fp32"
    shape: str = Field(default="square", description="what the shape stands for, e.g. llm-mlp-up")


class Conv2dParams(_Params):
    """NCHW convolution; ``direction`` backward = gradient w.r.t. input and weights."""

    batch: int = Field(ge=1)
    in_channels: int = Field(ge=1)
    height: int = Field(ge=1)
    width: int = Field(ge=1)
    out_channels: int = Field(ge=1)
    kernel: int = Field(ge=1)
    stride: int = Field(default=1, ge=1)
    padding: int = Field(default=0, ge=0)
    dtype: DType = "fp32"
    direction: Literal["forward", "backward"] = "forward"
    layer: str = Field(default="", description="e.g. resnet50.res3.conv2")

    @model_validator(mode="after")
    def _fits(self) -> Conv2dParams:
        if self.out_height < 1 or self.out_width < 1:
            raise ValueError(
                f"kernel {self.kernel} with padding {self.padding} does not fit a "
                f"{self.height}x{self.width} input"
            )
        return self

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.padding - self.kernel) // self.stride + 1


class MemoryParams(_Params):
    """Arrays of ``elements`` elements in device memory."""

    elements: int = Field(ge=1)
    dtype: DType = "fp32"
    flush_l2: bool = False


class TransferParams(_Params):
    """``bytes`` copied between host and device memory."""

    size_bytes: int = Field(ge=1)
    direction: Literal["h2d", "d2h"] = "h2d"
    host_memory: Literal["pinned", "pageable"] = "pinned"


class AttentionParams(_Params):
    """softmax(Q K^T / sqrt(d)) V for Q, K, V of shape [batch, heads, seq_len, head_dim]."""

    batch: int = Field(ge=1)
    heads: int = Field(ge=1)
    seq_len: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    causal: bool = False
    dtype: DType = "fp16"


def gemm_flops(p: GemmParams) -> float:
    return 2.0 * p.m * p.n * p.k


def conv2d_flops(p: Conv2dParams) -> float:
    """2·N·K·P·Q·C·R·S for the forward pass; backward (data + weight gradients) is twice that."""
    forward = (
        2.0
        * p.batch
        * p.out_channels
        * p.out_height
        * p.out_width
        * p.in_channels
        * p.kernel
        * p.kernel
    )
    return forward if p.direction == "forward" else 2.0 * forward


def copy_bytes(p: MemoryParams) -> float:
    """b = a: one read and one write per element."""
    return 2.0 * p.elements * ITEMSIZE[p.dtype]


def triad_bytes(p: MemoryParams) -> float:
    """a = b + s·c (STREAM triad): two reads and one write per element."""
    return 3.0 * p.elements * ITEMSIZE[p.dtype]


def elementwise_bytes(p: MemoryParams) -> float:
    """c = a · b: two reads and one write per element."""
    return 3.0 * p.elements * ITEMSIZE[p.dtype]


def reduction_bytes(p: MemoryParams) -> float:
    """sum(a): one read per element."""
    return 1.0 * p.elements * ITEMSIZE[p.dtype]


def transfer_bytes(p: TransferParams) -> float:
    return float(p.size_bytes)


def attention_flops(p: AttentionParams) -> float:
    """Q·K^T and P·V: 4·b·h·s²·d; causal masking halves the useful work."""
    full = 4.0 * p.batch * p.heads * p.seq_len * p.seq_len * p.head_dim
    return full / 2 if p.causal else full


@dataclass(frozen=True)
class Unit:
    metric: str
    unit: str
    scale: float  # work per second / scale = value in unit


TFLOPS = Unit("tflops", "TFLOP/s", 1e12)
GBPS = Unit("gbps", "GB/s", 1e9)


@dataclass(frozen=True)
class PerformanceIndicator:
    name: str
    version: int
    params: type[_Params]
    work: Callable[[Any], float]
    unit: Unit
    description: str
    memory_bound: bool = False

    def parse(self, values: dict[str, Any] | _Params) -> _Params:
        """Typed parameters from a dict (pydantic's ValidationError names the bad field)."""
        if isinstance(values, self.params):
            return values
        return self.params.model_validate(
            values if isinstance(values, dict) else values.model_dump()
        )

    def rate(self, params: _Params, seconds: float) -> float:
        """The figure in this PI's unit for one run lasting ``seconds``."""
        if seconds <= 0:
            raise ValueError(f"{self.name}: run time must be positive, got {seconds!r}")
        return self.work(params) / seconds / self.unit.scale


PIS: dict[str, PerformanceIndicator] = {
    pi.name: pi
    for pi in (
        PerformanceIndicator("gemm", 1, GemmParams, gemm_flops, TFLOPS, "dense matrix product"),
        PerformanceIndicator(
            "conv2d", 1, Conv2dParams, conv2d_flops, TFLOPS, "2-D convolution (ResNet-50 layers)"
        ),
        PerformanceIndicator(
            "mem_copy", 1, MemoryParams, copy_bytes, GBPS, "device memory copy b = a", True
        ),
        PerformanceIndicator(
            "mem_triad", 1, MemoryParams, triad_bytes, GBPS, "STREAM triad a = b + s*c", True
        ),
        PerformanceIndicator(
            "elementwise", 1, MemoryParams, elementwise_bytes, GBPS, "elementwise c = a * b", True
        ),
        PerformanceIndicator(
            "reduction", 1, MemoryParams, reduction_bytes, GBPS, "sum of all elements", True
        ),
        PerformanceIndicator(
            "transfer", 1, TransferParams, transfer_bytes, GBPS, "host<->device copy", True
        ),
        PerformanceIndicator(
            "sdpa",
            1,
            AttentionParams,
            attention_flops,
            TFLOPS,
            "scaled-dot-product attention forward",
        ),
    )
}


def get_pi(name: str) -> PerformanceIndicator:
    try:
        return PIS[name]
    except KeyError:
        raise KeyError(f"unknown PI {name!r}; valid: {', '.join(PIS)}") from None
