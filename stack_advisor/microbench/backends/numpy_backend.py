"""NumPy on the CPU: GEMM, memory, elementwise, reduction and attention. No convolution, no
device, no reduced-precision types beyond fp16 (reported unsupported)."""

from __future__ import annotations

from typing import Any

import numpy as np

from stack_advisor.microbench.timing import Kernel, NotSupported

DTYPES = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}
FLUSH_BYTES = 256 << 20  # larger than any CPU last-level cache we meet


def _dtype(name: str) -> Any:
    if name not in DTYPES:
        raise NotSupported(f"numpy has no {name} arithmetic (supported: {', '.join(DTYPES)})")
    return DTYPES[name]


def _cache_flusher() -> Any:
    scratch = np.empty(FLUSH_BYTES // 8, dtype=np.float64)

    def flush() -> None:
        scratch.fill(1.0)

    return flush


class NumpyBackend:
    name = "numpy"

    def version(self) -> str:
        return np.__version__

    def devices(self) -> list[str]:
        return ["cpu"]

    def prepare(self, pi: str, params: Any, device: str) -> Kernel:
        if device != "cpu":
            raise NotSupported(f"numpy runs on the CPU only, not {device!r}")
        rng = np.random.default_rng(0)
        if pi == "gemm":
            dt = _dtype(params.dtype)
            a = rng.standard_normal((params.m, params.k), dtype=np.float32).astype(dt)
            b = rng.standard_normal((params.k, params.n), dtype=np.float32).astype(dt)
            c = np.empty((params.m, params.n), dtype=dt)
            return Kernel(run=lambda: np.matmul(a, b, out=c), label="numpy.matmul")
        if pi in ("mem_copy", "mem_triad", "elementwise", "reduction"):
            dt = _dtype(params.dtype)
            x = rng.standard_normal(params.elements, dtype=np.float32).astype(dt)
            y = rng.standard_normal(params.elements, dtype=np.float32).astype(dt)
            out = np.empty_like(x)
            scalar = dt(3.0)
            flush = _cache_flusher() if params.flush_l2 else None
            if pi == "mem_copy":
                return Kernel(run=lambda: np.copyto(out, x), flush=flush, label="numpy.copyto")
            if pi == "mem_triad":

                def triad() -> None:
                    np.multiply(y, scalar, out=out)
                    np.add(out, x, out=out)

                # Two passes over ``out``: NumPy has no fused triad; the formula counts one.
                return Kernel(run=triad, flush=flush, label="numpy multiply+add (two passes)")
            if pi == "elementwise":
                return Kernel(
                    run=lambda: np.multiply(x, y, out=out), flush=flush, label="numpy.multiply"
                )
            return Kernel(run=lambda: x.sum(), flush=flush, label="numpy.sum")
        if pi == "sdpa":
            dt = _dtype(params.dtype)
            shape = (params.batch, params.heads, params.seq_len, params.head_dim)
            q, k, v = (rng.standard_normal(shape, dtype=np.float32).astype(dt) for _ in range(3))
            scale = dt(1.0 / np.sqrt(params.head_dim))
            mask = (
                np.triu(np.ones((params.seq_len, params.seq_len), dtype=bool), 1)
                if params.causal
                else None
            )

            def attention() -> Any:
                scores = np.matmul(q, k.swapaxes(-1, -2)) * scale
                if mask is not None:
                    scores[..., mask] = -np.inf
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                return np.matmul(scores, v)

            return Kernel(run=attention, label="numpy matmul-softmax-matmul")
        if pi == "conv2d":
            raise NotSupported("numpy has no convolution primitive")
        if pi == "transfer":
            raise NotSupported("numpy has no device memory: host<->device transfer does not apply")
        raise NotSupported(f"numpy backend does not implement PI {pi!r}")


BACKEND = NumpyBackend()
