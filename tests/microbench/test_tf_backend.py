"""The TensorFlow backend on the CPU: real small runs; what TF cannot do is unsupported; the
convolution backward kernels compute the same gradients as autodiff."""

from __future__ import annotations

import numpy as np
import pytest

from stack_advisor.microbench import run_case
from stack_advisor.microbench.backends import get_backend
from stack_advisor.microbench.timing import TimingPolicy

# the tensorflow extra, which the full test command installs; a `.[dev]` install skips this module
tf = pytest.importorskip(
    "tensorflow", reason="needs the tensorflow extra: pip install -e '.[tensorflow]'"
)

FAST = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05, min_sample_s=0)
CONV = {
    "batch": 2,
    "in_channels": 4,
    "height": 9,
    "width": 9,
    "out_channels": 8,
    "kernel": 3,
    "stride": 2,
    "padding": 1,
}
OK = [
    ("gemm", {"m": 32, "n": 48, "k": 16}),
    ("gemm", {"m": 32, "n": 32, "k": 32, "dtype": "bf16"}),
    ("conv2d", CONV),
    ("conv2d", {**CONV, "direction": "backward"}),
    ("mem_copy", {"elements": 4096}),
    ("mem_triad", {"elements": 4096}),
    ("elementwise", {"elements": 4096}),
    ("reduction", {"elements": 4096, "flush_l2": True}),
    (
        "sdpa",
        {"batch": 1, "heads": 2, "seq_len": 16, "head_dim": 8, "causal": True, "dtype": "fp32"},
    ),
]
UNSUPPORTED = [
    ("gemm", {"m": 16, "n": 16, "k": 16, "dtype": "fp8"}, "fp8"),
    ("gemm", {"m": 16, "n": 16, "k": 16, "dtype": "tf32"}, "tf32"),
    ("transfer", {"size_bytes": 1024}, "CUDA"),
]


@pytest.fixture(scope="module")
def backend():  # type: ignore[no-untyped-def]
    return get_backend("tensorflow")


@pytest.mark.parametrize(("pi", "params"), OK)
def test_cases_measure(backend, pi: str, params: dict) -> None:  # type: ignore[no-untyped-def,type-arg]
    result = run_case(pi, params, backend, "cpu", FAST)
    assert result.status == "ok", result.message
    assert (
        result.summary is not None and result.summary.median > 0 and result.backend == "tensorflow"
    )
    assert result.identity["backend"] == "tensorflow" and "(eager)" in result.label


@pytest.mark.parametrize(("pi", "params", "why"), UNSUPPORTED)
def test_unsupported_is_said(backend, pi: str, params: dict, why: str) -> None:  # type: ignore[no-untyped-def,type-arg]
    result = run_case(pi, params, backend, "cpu", FAST)
    assert result.status == "unsupported" and why in result.message and not result.rates


def test_backward_kernels_match_autodiff(backend) -> None:  # type: ignore[no-untyped-def]
    from stack_advisor.microbench.pis import get_pi

    params = get_pi("conv2d").parse({**CONV, "direction": "backward"})
    call, _, _ = backend._build(
        "conv2d", params, "cpu"
    )  # the kernel's own call, returning its gradients
    dx, dw = call()
    tf.random.set_seed(0)
    x = tf.random.normal((2, 9, 9, 4))
    w = tf.random.normal((3, 3, 4, 8))
    g = tf.random.normal((2, 5, 5, 8))
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = tf.nn.conv2d(x, w, [1, 2, 2, 1], [[0, 0], [1, 1], [1, 1], [0, 0]])
    ex, ew = tape.gradient(y, [x, w], output_gradients=g)
    np.testing.assert_allclose(dx.numpy(), ex.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw.numpy(), ew.numpy(), rtol=1e-4, atol=1e-4)
