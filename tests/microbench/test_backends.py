"""Real NumPy and PyTorch (CPU) runs of small cases; unsupported cases are reported, not faked."""

from __future__ import annotations

import pytest

from stack_advisor.microbench import cases, run_case
from stack_advisor.microbench.backends import get_backend
from stack_advisor.microbench.timing import TimingPolicy
from tests.support.extras import needs_torch

FAST = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05, min_sample_s=0)
SMALL = {
    "gemm": dict(m=32, n=32, k=32),
    "conv2d": dict(batch=1, in_channels=4, height=8, width=8, out_channels=4, kernel=3, padding=1),
    "mem_copy": dict(elements=4096),
    "mem_triad": dict(elements=4096),
    "elementwise": dict(elements=4096),
    "reduction": dict(elements=4096, flush_l2=True),
    "sdpa": dict(batch=1, heads=2, seq_len=16, head_dim=8, causal=True, dtype="fp32"),
}


@pytest.mark.parametrize("backend", ["numpy", pytest.param("torch", marks=needs_torch)])
@pytest.mark.parametrize("pi", sorted(SMALL))
def test_small_cases_measure_or_say_unsupported(backend: str, pi: str) -> None:
    result = run_case(pi, SMALL[pi], get_backend(backend), "cpu", FAST)
    if backend == "numpy" and pi == "conv2d":
        assert (
            result.status == "unsupported" and "convolution" in result.message and not result.rates
        )
        return
    assert result.status == "ok", result.message
    assert result.summary is not None and result.summary.median > 0 and 3 <= result.summary.n <= 5
    assert result.identity["backend"] == backend and result.identity["pi_version"] == 1


@needs_torch
def test_unsupported_dtypes_and_devices() -> None:
    assert (
        run_case(
            "gemm", dict(m=8, n=8, k=8, dtype="bf16"), get_backend("numpy"), "cpu", FAST
        ).status
        == "unsupported"
    )
    assert (
        run_case(
            "gemm", dict(m=8, n=8, k=8, dtype="tf32"), get_backend("torch"), "cpu", FAST
        ).status
        == "unsupported"
    )
    assert (
        run_case(
            "gemm", dict(m=16, n=16, k=16, dtype="fp8"), get_backend("torch"), "cpu", FAST
        ).status
        == "unsupported"
    )
    assert (
        run_case("transfer", dict(size_bytes=1024), get_backend("torch"), "cpu", FAST).status
        == "unsupported"
    )


def test_profiles_cover_the_required_pis() -> None:
    full = {c.pi for c in cases("full", "cuda")}
    assert full == {
        "gemm",
        "conv2d",
        "mem_copy",
        "mem_triad",
        "elementwise",
        "reduction",
        "transfer",
        "sdpa",
    }
    dtypes = {c.params["dtype"] for c in cases("full", "cuda") if c.pi == "gemm"}
    assert dtypes == {"fp32", "tf32", "fp16", "bf16", "fp8"}
    with pytest.raises(ValueError, match="profile"):
        cases("huge", "cpu")
