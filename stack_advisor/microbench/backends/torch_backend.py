"""PyTorch on the CPU and on CUDA. On CUDA, runs are timed with CUDA events; fp32 means full
fp32 (TF32 off for matmul and cuDNN) and tf32 means TF32 on, so the two are never confused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from stack_advisor.microbench.timing import Kernel, NotSupported

DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}
CPU_FLUSH_BYTES = 256 << 20


def _dtype(name: str, device: str) -> torch.dtype:
    if name == "tf32" and device != "cuda":
        raise NotSupported("tf32 is a CUDA tensor-core mode; not available on the CPU")
    if name not in DTYPES:
        raise NotSupported(f"torch has no {name} arithmetic for this PI")
    return DTYPES[name]


@contextmanager
def _precision(tf32: bool) -> Iterator[None]:
    """TF32 on or off for matmul and cuDNN for the duration of a measurement."""
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.backends.cudnn.benchmark,
    )
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        (
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cudnn.allow_tf32,
            torch.backends.cudnn.benchmark,
        ) = saved


def _event_timer(run: Callable[[], object]) -> Callable[[int], float]:
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)

    def timer(number: int) -> float:
        start.record()
        for _ in range(number):
            run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return timer


def _flusher(device: str) -> Callable[[], object]:
    if device == "cuda":
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20))
        scratch = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        return lambda: scratch.fill_(1)
    cpu_scratch = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8)
    return lambda: cpu_scratch.fill_(1)


def _randn(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(shape, dtype=torch.float32, device=device).to(dtype)


class TorchBackend:
    name = "torch"

    def version(self) -> str:
        return str(torch.__version__).split("+")[0]

    def devices(self) -> list[str]:
        return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]

    def prepare(self, pi: str, params: Any, device: str) -> Kernel:
        if device not in self.devices():
            raise NotSupported(f"torch sees no {device!r} device here")
        torch.manual_seed(0)
        run, flush, label = self._build(pi, params, device)
        tf32 = getattr(params, "dtype", None) == "tf32"
        if device == "cuda":
            return Kernel(
                run=run,
                sync=torch.cuda.synchronize,
                flush=flush,
                timer=_event_timer(run),
                session=lambda: _precision(tf32),
                label=label + " (CUDA events)",
            )
        return Kernel(run=run, flush=flush, label=label)

    def _build(
        self, pi: str, p: Any, device: str
    ) -> tuple[Callable[[], object], Callable[[], object] | None, str]:
        if pi == "gemm":
            if p.dtype == "fp8":
                return self._fp8_gemm(p, device)
            dt = _dtype(p.dtype, device)
            a, b = _randn((p.m, p.k), dt, device), _randn((p.k, p.n), dt, device)
            c = torch.empty((p.m, p.n), dtype=dt, device=device)
            return (lambda: torch.matmul(a, b, out=c)), None, "torch.matmul"
        if pi == "conv2d":
            return _conv2d(p, device)
        if pi in ("mem_copy", "mem_triad", "elementwise", "reduction"):
            return _memory(pi, p, device)
        if pi == "transfer":
            return _transfer(p, device)
        if pi == "sdpa":
            dt = _dtype(p.dtype, device)
            shape = (p.batch, p.heads, p.seq_len, p.head_dim)
            q, k, v = (_randn(shape, dt, device) for _ in range(3))
            return (
                (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=p.causal)),
                None,
                "F.scaled_dot_product_attention",
            )
        raise NotSupported(f"torch backend does not implement PI {pi!r}")

    def _fp8_gemm(self, p: Any, device: str) -> tuple[Callable[[], object], None, str]:
        if device != "cuda":
            raise NotSupported("fp8 GEMM needs CUDA (compute capability >= 8.9)")
        if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "_scaled_mm"):
            raise NotSupported(
                f"fp8 GEMM needs compute capability >= 8.9 and torch._scaled_mm; "
                f"got {torch.cuda.get_device_capability()} with torch {torch.__version__}"
            )
        if p.m % 16 or p.n % 16 or p.k % 16:
            raise NotSupported(f"fp8 GEMM needs m, n, k divisible by 16, got {p.m}x{p.n}x{p.k}")
        fp8 = torch.float8_e4m3fn
        a = torch.randn((p.m, p.k), device="cuda").to(fp8)
        b = torch.randn((p.n, p.k), device="cuda").to(fp8).t()  # column-major, as cuBLASLt wants
        one = torch.tensor(1.0, device="cuda")
        return (
            (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
            None,
            "torch._scaled_mm e4m3 -> bf16",
        )


def _conv2d(p: Any, device: str) -> tuple[Callable[[], object], Callable[[], object] | None, str]:
    """A conv2d forward pass, or its input and weight gradients."""
    dt = _dtype(p.dtype, device)
    x = _randn((p.batch, p.in_channels, p.height, p.width), dt, device)
    w = _randn((p.out_channels, p.in_channels, p.kernel, p.kernel), dt, device) * 0.05
    if p.direction == "forward":
        return (
            (lambda: F.conv2d(x, w, stride=p.stride, padding=p.padding)),
            None,
            "torch conv2d forward",
        )
    x.requires_grad_(True)
    w.requires_grad_(True)
    y = F.conv2d(x, w, stride=p.stride, padding=p.padding)
    grad = torch.randn_like(y)
    return (
        (lambda: torch.autograd.grad(y, (x, w), grad, retain_graph=True)),
        None,
        "torch conv2d backward (input + weight gradients)",
    )


def _memory(
    pi: str, p: Any, device: str
) -> tuple[Callable[[], object], Callable[[], object] | None, str]:
    """A memory-bound kernel: copy, triad, elementwise product or sum."""
    dt = _dtype(p.dtype, device)
    x, y = _randn((p.elements,), dt, device), _randn((p.elements,), dt, device)
    out = torch.empty_like(x)
    flush = _flusher(device) if p.flush_l2 else None
    if pi == "mem_copy":
        return (lambda: out.copy_(x)), flush, "Tensor.copy_"
    if pi == "mem_triad":
        return (lambda: torch.add(x, y, alpha=3.0, out=out)), flush, "torch.add(alpha=s)"
    if pi == "elementwise":
        return (lambda: torch.mul(x, y, out=out)), flush, "torch.mul"
    return (lambda: x.sum()), flush, "Tensor.sum"


def _transfer(p: Any, device: str) -> tuple[Callable[[], object], Callable[[], object] | None, str]:
    """A host<->device copy from pinned or pageable host memory."""
    if device != "cuda":
        raise NotSupported("host<->device transfer needs a CUDA device")
    host = torch.empty(p.size_bytes, dtype=torch.uint8, pin_memory=p.host_memory == "pinned")
    host.fill_(1)
    dev = torch.empty(p.size_bytes, dtype=torch.uint8, device="cuda")
    blocking = p.host_memory == "pageable"
    if p.direction == "h2d":
        return (
            (lambda: dev.copy_(host, non_blocking=not blocking)),
            None,
            f"copy_ h2d {p.host_memory}",
        )
    return (
        (lambda: host.copy_(dev, non_blocking=not blocking)),
        None,
        f"copy_ d2h {p.host_memory}",
    )


BACKEND = TorchBackend()
