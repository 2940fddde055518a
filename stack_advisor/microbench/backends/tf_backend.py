"""TensorFlow (eager) on the CPU and, with a CUDA build, the GPU.

TF has no CUDA events in its Python API: each sample is a wall clock around the runs, and the
device is synchronised by reading one element of the last result back to the host (on the CPU,
eager ops have finished when they return). fp32 means TF32 off and tf32 means TF32 on. TF has
no fused attention primitive and no fp8 matmul; NHWC is used for convolution (the only layout
TF's CPU kernels take). What TF cannot do is reported unsupported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from stack_advisor.microbench.frameworks import load_tensorflow
from stack_advisor.microbench.timing import Kernel, NotSupported

tf = load_tensorflow()

DTYPES = {
    "fp64": tf.float64,
    "fp32": tf.float32,
    "tf32": tf.float32,
    "fp16": tf.float16,
    "bf16": tf.bfloat16,
}
FLUSH_BYTES = 256 << 20


def _dtype(name: str, device: str) -> Any:
    if name == "tf32" and device != "cuda":
        raise NotSupported("tf32 is a CUDA tensor-core mode; not available on the CPU")
    if name not in DTYPES:
        raise NotSupported(f"tensorflow backend has no {name} path for this PI")
    return DTYPES[name]


def _tf_device(device: str) -> str:
    return "/GPU:0" if device == "cuda" else "/CPU:0"


@contextmanager
def _precision(tf32: bool) -> Iterator[None]:
    saved = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(tf32)
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(saved)


class TensorflowBackend:
    name = "tensorflow"

    def version(self) -> str:
        return str(tf.__version__)

    def devices(self) -> list[str]:
        return ["cpu", "cuda"] if tf.config.list_physical_devices("GPU") else ["cpu"]

    def prepare(self, pi: str, p: Any, device: str) -> Kernel:
        if device not in self.devices():
            raise NotSupported(
                f"tensorflow sees no {device!r} device here (CUDA build: "
                f"{tf.test.is_built_with_cuda()})"
            )
        with tf.device(_tf_device(device)):
            call, flush, label = self._build(pi, p, device)
        last: list[Any] = []

        def run() -> None:
            with tf.device(_tf_device(device)):
                last[:] = [call()]

        def sync() -> None:
            if device == "cuda" and last:
                out = last[0][0] if isinstance(last[0], (list, tuple)) else last[0]
                tf.reshape(out, [-1])[:1].numpy()  # waits for everything queued before it

        tf32 = getattr(p, "dtype", None) == "tf32"
        return Kernel(
            run=run,
            sync=sync,
            flush=flush,
            session=lambda: _precision(tf32),
            label=label + " (eager)",
        )

    def _build(
        self, pi: str, p: Any, device: str
    ) -> tuple[Callable[[], Any], Callable[[], object] | None, str]:
        tf.random.set_seed(0)
        if pi == "gemm":
            if p.dtype == "fp8":
                raise NotSupported("tensorflow has no fp8 matmul")
            dt = _dtype(p.dtype, device)
            a, b = _randn((p.m, p.k), dt), _randn((p.k, p.n), dt)
            return (lambda: tf.linalg.matmul(a, b)), None, "tf.linalg.matmul"
        if pi == "conv2d":
            return _conv2d(p, device)
        if pi in ("mem_copy", "mem_triad", "elementwise", "reduction"):
            return _memory(pi, p, device)
        if pi == "transfer":
            return _transfer(p, device)
        if pi == "sdpa":
            return _sdpa(p, device)
        raise NotSupported(f"tensorflow backend does not implement PI {pi!r}")


def _randn(shape: tuple[int, ...], dt: Any) -> Any:
    return tf.cast(tf.random.normal(shape, dtype=tf.float32), dt)


def _conv2d(p: Any, device: str) -> tuple[Callable[[], Any], Callable[[], object] | None, str]:
    """A conv2d forward pass (NHWC), or its input and weight gradients."""
    dt = _dtype(p.dtype, device)
    x = _randn((p.batch, p.height, p.width, p.in_channels), dt)
    w = _randn((p.kernel, p.kernel, p.in_channels, p.out_channels), dt)
    strides = [1, p.stride, p.stride, 1]
    pads = [[0, 0], [p.padding, p.padding], [p.padding, p.padding], [0, 0]]
    if p.direction == "forward":
        return (
            (lambda: tf.nn.conv2d(x, w, strides, pads, data_format="NHWC")),
            None,
            "tf.nn.conv2d NHWC",
        )
    g = _randn((p.batch, p.out_height, p.out_width, p.out_channels), dt)
    flat = [v for pair in pads for v in pair]
    in_sizes, w_sizes = tf.constant(x.shape.as_list()), tf.constant(w.shape.as_list())

    def backward() -> Any:
        dx = tf.raw_ops.Conv2DBackpropInput(
            input_sizes=in_sizes,
            filter=w,
            out_backprop=g,
            strides=strides,
            padding="EXPLICIT",
            explicit_paddings=flat,
        )
        dw = tf.raw_ops.Conv2DBackpropFilter(
            input=x,
            filter_sizes=w_sizes,
            out_backprop=g,
            strides=strides,
            padding="EXPLICIT",
            explicit_paddings=flat,
        )
        return dx, dw

    return backward, None, "tf Conv2DBackpropInput + Conv2DBackpropFilter NHWC"


def _memory(
    pi: str, p: Any, device: str
) -> tuple[Callable[[], Any], Callable[[], object] | None, str]:
    """A memory-bound kernel: copy, triad, elementwise product or sum."""
    dt = _dtype(p.dtype, device)
    x, y = _randn((p.elements,), dt), _randn((p.elements,), dt)
    s = tf.constant(3.0, dtype=dt)
    flush: Callable[[], object] | None = None
    if p.flush_l2:
        if device == "cuda":

            def fill_device() -> object:
                return tf.fill([FLUSH_BYTES // 4], 1.0)

            flush = fill_device
        else:
            scratch = np.empty(FLUSH_BYTES // 8, dtype=np.float64)

            def fill_host() -> None:
                scratch.fill(1.0)

            flush = fill_host
    if pi == "mem_copy":
        return (lambda: tf.raw_ops.DeepCopy(x=x)), flush, "tf.raw_ops.DeepCopy"
    if pi == "mem_triad":
        # Two passes (multiply, then add): eager TF does not fuse; the formula counts one.
        return (lambda: tf.add(x, tf.multiply(y, s))), flush, "tf multiply+add (two passes)"
    if pi == "elementwise":
        return (lambda: tf.multiply(x, y)), flush, "tf.multiply"
    return (lambda: tf.reduce_sum(x)), flush, "tf.reduce_sum"


def _transfer(p: Any, device: str) -> tuple[Callable[[], Any], Callable[[], object] | None, str]:
    """A pageable host<->device copy (TensorFlow controls no pinned memory)."""
    if device != "cuda":
        raise NotSupported("host<->device transfer needs a CUDA device")
    if p.host_memory == "pinned":
        raise NotSupported(
            "tensorflow gives no control over pinned host memory; only pageable is measured"
        )
    host = np.ones(p.size_bytes, dtype=np.uint8)
    if p.direction == "h2d":
        return (lambda: tf.identity(tf.constant(host))), None, "tf.constant pageable h2d"
    dev = tf.constant(host)
    return (lambda: dev.numpy()), None, "Tensor.numpy pageable d2h"


def _sdpa(p: Any, device: str) -> tuple[Callable[[], Any], Callable[[], object] | None, str]:
    """Attention as TensorFlow runs it unfused: matmul, softmax, matmul."""
    dt = _dtype(p.dtype, device)
    shape = (p.batch, p.heads, p.seq_len, p.head_dim)
    q, k, v = _randn(shape, dt), _randn(shape, dt), _randn(shape, dt)
    scale = tf.constant(1.0 / float(np.sqrt(p.head_dim)), dtype=dt)
    mask = None
    if p.causal:
        upper = np.triu(np.ones((p.seq_len, p.seq_len), dtype=np.float32), 1) * -1e4
        mask = tf.cast(tf.constant(upper), dt)

    def attention() -> Any:
        scores = tf.linalg.matmul(q, k, transpose_b=True) * scale
        if mask is not None:
            scores = scores + mask
        return tf.linalg.matmul(tf.nn.softmax(scores, axis=-1), v)

    return attention, None, "tf matmul-softmax-matmul (unfused)"


BACKEND = TensorflowBackend()
