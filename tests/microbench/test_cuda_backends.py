"""The CUDA paths (PyTorch, CuPy, JAX): real small runs timed with device synchronisation.
Skipped where no CUDA device is visible (CI); run on a GPU machine."""

from __future__ import annotations

import pytest

from stack_advisor.microbench import run_case
from stack_advisor.microbench.backends import get_backend, installed
from stack_advisor.microbench.timing import TimingPolicy

# the torch extra, which the full test command installs; a `.[dev]` install skips this module
torch = pytest.importorskip("torch", reason="needs the torch extra: pip install -e '.[torch]'")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

FAST = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05)
GEMM = {"m": 1024, "n": 1024, "k": 1024}


@pytest.mark.parametrize("dtype", ["fp32", "tf32", "fp16", "bf16"])
def test_torch_gemm_dtypes(dtype: str) -> None:
    result = run_case("gemm", {**GEMM, "dtype": dtype}, get_backend("torch"), "cuda", FAST)
    assert result.status == "ok", result.message
    assert (
        "CUDA events" in result.label and result.summary is not None and result.summary.median > 0
    )


def test_torch_fp8_follows_the_compute_capability() -> None:
    result = run_case("gemm", {**GEMM, "dtype": "fp8"}, get_backend("torch"), "cuda", FAST)
    if torch.cuda.get_device_capability() >= (8, 9):
        assert result.status == "ok", result.message
    else:
        assert result.status == "unsupported" and "8.9" in result.message


def test_tf32_is_faster_than_full_fp32_on_tensor_cores() -> None:
    if torch.cuda.get_device_capability() < (8, 0):
        pytest.skip("no TF32 before Ampere")
    big = {"m": 4096, "n": 4096, "k": 4096}
    before = torch.backends.cuda.matmul.allow_tf32
    fp32 = run_case("gemm", {**big, "dtype": "fp32"}, get_backend("torch"), "cuda", FAST)
    tf32 = run_case("gemm", {**big, "dtype": "tf32"}, get_backend("torch"), "cuda", FAST)
    assert fp32.summary and tf32.summary
    assert tf32.summary.median > 2 * fp32.summary.median  # the two modes are never confused
    assert (
        torch.backends.cuda.matmul.allow_tf32 is before
    )  # the setting is restored after each case


@pytest.mark.parametrize("pi", ["mem_copy", "mem_triad", "elementwise", "reduction"])
@pytest.mark.parametrize("flush", [False, True])
def test_torch_memory_pis(pi: str, flush: bool) -> None:
    result = run_case(
        pi, {"elements": 1 << 22, "flush_l2": flush}, get_backend("torch"), "cuda", FAST
    )
    assert result.status == "ok", result.message
    assert result.timing is not None and result.timing.flushed is flush
    if flush:
        assert result.timing.number == 1


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
@pytest.mark.parametrize("host", ["pinned", "pageable"])
def test_torch_transfers(direction: str, host: str) -> None:
    params = {"size_bytes": 16 << 20, "direction": direction, "host_memory": host}
    result = run_case("transfer", params, get_backend("torch"), "cuda", FAST)
    assert result.status == "ok", result.message
    assert (
        result.summary is not None and 0.1 < result.summary.median < 2000
    )  # GB/s: PCIe/NVLink-C2C range


def test_torch_conv_and_attention() -> None:
    conv = {
        "batch": 8,
        "in_channels": 64,
        "height": 56,
        "width": 56,
        "out_channels": 64,
        "kernel": 3,
        "padding": 1,
        "dtype": "fp16",
    }
    for direction in ("forward", "backward"):
        result = run_case(
            "conv2d", {**conv, "direction": direction}, get_backend("torch"), "cuda", FAST
        )
        assert result.status == "ok", result.message
    sdpa = {"batch": 2, "heads": 8, "seq_len": 512, "head_dim": 64, "causal": True, "dtype": "bf16"}
    assert run_case("sdpa", sdpa, get_backend("torch"), "cuda", FAST).status == "ok"


@pytest.mark.parametrize("backend", ["cupy", "jax"])
def test_other_cuda_backends_measure_or_say_unsupported(backend: str) -> None:
    if not installed(backend):
        pytest.skip(f"{backend} not installed")
    b = get_backend(backend)
    assert "cuda" in b.devices()
    assert run_case("gemm", {**GEMM, "dtype": "fp16"}, b, "cuda", FAST).status == "ok"
    assert run_case("mem_copy", {"elements": 1 << 22}, b, "cuda", FAST).status == "ok"
    assert run_case("gemm", {**GEMM, "dtype": "fp8"}, b, "cuda", FAST).status == "unsupported"
