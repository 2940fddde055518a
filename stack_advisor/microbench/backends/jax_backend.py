"""JAX (XLA) on CPU or GPU. Functions are jitted and compiled during warm-up; each timed run is
synchronised with ``block_until_ready`` around a wall clock (JAX exposes no CUDA events)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

# Do not let XLA grab 75% of the GPU when other backends share the process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax
import jax.numpy as jnp
import numpy as np

from stack_advisor.microbench.timing import Kernel, NotSupported

DTYPES = {"fp32": jnp.float32, "tf32": jnp.float32, "fp16": jnp.float16, "bf16": jnp.bfloat16}
MATMUL_PRECISION = {"fp32": "float32", "tf32": "tensorfloat32"}


def _platform(device: str) -> str:
    return "gpu" if device == "cuda" else "cpu"


def _dtype(name: str, device: str) -> Any:
    if name == "tf32" and device != "cuda":
        raise NotSupported("tf32 is a CUDA tensor-core mode; not available on the CPU")
    if name not in DTYPES:
        raise NotSupported(f"jax backend has no {name} path for this PI")
    return DTYPES[name]


class JaxBackend:
    name = "jax"

    def version(self) -> str:
        return str(jax.__version__)

    def devices(self) -> list[str]:
        out = ["cpu"]
        try:
            if jax.devices("gpu"):
                out.append("cuda")
        except RuntimeError:
            pass
        return out

    def prepare(self, pi: str, p: Any, device: str) -> Kernel:
        if device not in self.devices():
            raise NotSupported(f"jax sees no {device!r} device here")
        dev = jax.devices(_platform(device))[0]
        randn = _normal_on(dev)

        def session() -> AbstractContextManager[Any]:
            precision: AbstractContextManager[Any] = jax.default_matmul_precision(
                MATMUL_PRECISION.get(getattr(p, "dtype", ""), "default")
            )
            return precision

        flush: Callable[[], object] | None = None
        call: Callable[[], Any]
        if pi == "gemm":
            dt = _dtype(p.dtype, device)
            a, b = randn((p.m, p.k), dt), randn((p.k, p.n), dt)
            f = jax.jit(jnp.matmul)
            call, label = (lambda: f(a, b)), "jnp.matmul (jit)"
        elif pi == "conv2d":
            call, label = _conv2d(p, device, randn)
        elif pi in ("mem_copy", "mem_triad", "elementwise", "reduction"):
            call, label, flush = _memory(pi, p, device, dev, randn)
        elif pi == "transfer":
            call, label = _transfer(p, device, dev)
        elif pi == "sdpa":
            call, label = _sdpa(p, device, randn)
        else:
            raise NotSupported(f"jax backend does not implement PI {pi!r}")
        last: list[Any] = []

        def run() -> None:
            last[:] = [call()]

        def sync() -> None:
            if last:
                jax.block_until_ready(last[0])

        return Kernel(run=run, sync=sync, flush=flush, session=session, label=label)


Normal = Callable[[tuple[int, ...], Any], Any]


def _normal_on(dev: Any) -> Normal:
    """Standard normal arrays of a shape and dtype on ``dev`` (one key: the same draws each
    call, as every kernel's inputs were made)."""
    key = jax.random.PRNGKey(0)

    def randn(shape: tuple[int, ...], dt: Any) -> Any:
        return jax.device_put(jax.random.normal(key, shape, dtype=jnp.float32).astype(dt), dev)

    return randn


def _conv2d(p: Any, device: str, randn: Normal) -> tuple[Callable[[], Any], str]:
    """A conv2d forward pass (NCHW), or its input and weight gradients through ``jax.vjp``."""
    dt = _dtype(p.dtype, device)
    x = randn((p.batch, p.in_channels, p.height, p.width), dt)
    w = randn((p.out_channels, p.in_channels, p.kernel, p.kernel), dt)

    def conv(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(
            x,
            w,
            (p.stride, p.stride),
            [(p.padding, p.padding)] * 2,
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )

    if p.direction == "forward":
        f = jax.jit(conv)
        return (lambda: f(x, w)), "lax.conv_general_dilated (jit)"
    y, vjp = jax.vjp(conv, x, w)
    g = jnp.ones_like(y)
    back = jax.jit(vjp)
    return (lambda: back(g)), "jax.vjp of conv (input + weight gradients, jit)"


def _memory(
    pi: str, p: Any, device: str, dev: Any, randn: Normal
) -> tuple[Callable[[], Any], str, Callable[[], object] | None]:
    """A memory-bound kernel (copy, triad, elementwise product or sum), jitted, and the L2
    flush when asked for."""
    dt = _dtype(p.dtype, device)
    x, y = randn((p.elements,), dt), randn((p.elements,), dt)
    flush: Callable[[], object] | None = None
    if p.flush_l2:
        scratch = jnp.zeros(128 << 20, dtype=jnp.uint8, device=dev)
        fill = jax.jit(lambda s: s + 1)

        def fill_scratch() -> object:
            return fill(scratch).block_until_ready()

        flush = fill_scratch
    fns = {
        "mem_copy": (lambda x, y: jnp.copy(x), "jnp.copy"),
        "mem_triad": (lambda x, y: x + 3.0 * y, "x + s*y (jit, fused)"),
        "elementwise": (lambda x, y: x * y, "x * y (jit)"),
        "reduction": (lambda x, y: jnp.sum(x), "jnp.sum (jit)"),
    }
    fn, label = fns[pi]
    f = jax.jit(fn)

    def call_jit() -> Any:
        return f(x, y)

    return call_jit, label, flush


def _transfer(p: Any, device: str, dev: Any) -> tuple[Callable[[], Any], str]:
    """A pageable host-to-device copy (all that JAX controls)."""
    if device != "cuda":
        raise NotSupported("host<->device transfer needs a CUDA device")
    if p.direction != "h2d" or p.host_memory != "pageable":
        raise NotSupported(
            "jax controls neither pinned host memory nor uncached device->host copies; "
            "only pageable h2d (jax.device_put) is measured"
        )
    host = np.ones(p.size_bytes, dtype=np.uint8)
    return (lambda: jax.device_put(host, dev)), "jax.device_put pageable"


def _sdpa(p: Any, device: str, randn: Normal) -> tuple[Callable[[], Any], str]:
    """``jax.nn.dot_product_attention`` (jitted), where this JAX has it."""
    if not hasattr(jax.nn, "dot_product_attention"):
        raise NotSupported(f"jax {jax.__version__} has no jax.nn.dot_product_attention")
    dt = _dtype(p.dtype, device)
    shape = (p.batch, p.seq_len, p.heads, p.head_dim)  # JAX's [B, T, N, H] layout
    q, k, v = randn(shape, dt), randn(shape, dt)[::-1], randn(shape, dt)
    f = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=p.causal))
    return (lambda: f(q, k, v)), "jax.nn.dot_product_attention (jit)"


BACKEND = JaxBackend()
