"""CuPy on CUDA: GEMM (fp64/fp32/fp16), memory, elementwise, reduction and transfers, timed with
CUDA events. CuPy has no convolution or attention primitive and no bf16/fp8 GEMM: unsupported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cupy
import numpy as np

from stack_advisor.microbench.timing import Kernel, NotSupported

DTYPES = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}


def _dtype(name: str) -> Any:
    if name not in DTYPES:
        raise NotSupported(f"cupy has no {name} path for this PI (supported: {', '.join(DTYPES)})")
    return DTYPES[name]


def _event_timer(run: Callable[[], object]) -> Callable[[int], float]:
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def timer(number: int) -> float:
        start.record()
        for _ in range(number):
            run()
        end.record()
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end)) / 1e3

    return timer


def _sync() -> None:
    cupy.cuda.Device().synchronize()


class CupyBackend:
    name = "cupy"

    def version(self) -> str:
        return str(cupy.__version__)

    def devices(self) -> list[str]:
        try:
            return ["cuda"] if cupy.cuda.runtime.getDeviceCount() > 0 else []
        except Exception:  # no driver / no GPU
            return []

    def prepare(self, pi: str, p: Any, device: str) -> Kernel:
        if device != "cuda" or "cuda" not in self.devices():
            raise NotSupported(f"cupy runs on CUDA only; no usable {device!r} device")
        rng = cupy.random.default_rng(0)
        flush: Callable[[], object] | None = None
        if pi == "gemm":
            dt = _dtype(p.dtype)
            a = rng.standard_normal((p.m, p.k), dtype=cupy.float32).astype(dt)
            b = rng.standard_normal((p.k, p.n), dtype=cupy.float32).astype(dt)
            c = cupy.empty((p.m, p.n), dtype=dt)

            def matmul() -> object:
                return cupy.matmul(a, b, out=c)

            run: Callable[[], object] = matmul
            label = "cupy.matmul"
        elif pi in ("mem_copy", "mem_triad", "elementwise", "reduction"):
            run, label, flush = _memory(pi, p, rng)
        elif pi == "transfer":
            run, label = _transfer(p)
        elif pi == "conv2d":
            raise NotSupported("cupy has no convolution primitive")
        elif pi == "sdpa":
            raise NotSupported("cupy has no scaled-dot-product attention primitive")
        else:
            raise NotSupported(f"cupy backend does not implement PI {pi!r}")
        return Kernel(
            run=run,
            sync=_sync,
            flush=flush,
            timer=_event_timer(run),
            label=label + " (CUDA events)",
        )


def _memory(
    pi: str, p: Any, rng: Any
) -> tuple[Callable[[], object], str, Callable[[], object] | None]:
    """A memory-bound kernel (copy, triad, elementwise product or sum), and the L2 flush when
    asked for."""
    dt = _dtype(p.dtype)
    x = rng.standard_normal(p.elements, dtype=cupy.float32).astype(dt)
    y = rng.standard_normal(p.elements, dtype=cupy.float32).astype(dt)
    out = cupy.empty_like(x)
    flush: Callable[[], object] | None = None
    if p.flush_l2:
        l2 = int(cupy.cuda.runtime.getDeviceProperties(0).get("l2CacheSize", 64 << 20))
        scratch = cupy.empty(2 * l2, dtype=cupy.uint8)

        def fill_scratch() -> object:
            return scratch.fill(1)

        flush = fill_scratch
    if pi == "mem_copy":
        return (lambda: cupy.copyto(out, x)), "cupy.copyto", flush
    if pi == "mem_triad":
        triad = cupy.ElementwiseKernel("T x, T y, T s", "T z", "z = x + s * y", "stream_triad")
        s = dt(3.0)
        return (lambda: triad(x, y, s, out)), "cupy ElementwiseKernel triad", flush
    if pi == "elementwise":
        return (lambda: cupy.multiply(x, y, out=out)), "cupy.multiply", flush
    return (lambda: x.sum()), "cupy.ndarray.sum", flush


def _transfer(p: Any) -> tuple[Callable[[], object], str]:
    """A host<->device copy from pinned or pageable host memory."""
    n = p.size_bytes
    if p.host_memory == "pinned":
        import cupyx

        host = cupyx.empty_pinned((n,), dtype=np.uint8)
    else:
        host = np.empty(n, dtype=np.uint8)
    host.fill(1)
    dev = cupy.empty(n, dtype=cupy.uint8)
    if p.direction == "h2d":
        return (lambda: dev.set(host)), f"ndarray.set {p.host_memory}"
    return (lambda: dev.get(out=host)), f"ndarray.get {p.host_memory}"


BACKEND = CupyBackend()
