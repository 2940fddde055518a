"""Every PI's work formula, and parameter validation that names the field."""

from __future__ import annotations

import pydantic
import pytest

from stack_advisor.microbench.pis import (
    PIS,
    AttentionParams,
    Conv2dParams,
    GemmParams,
    MemoryParams,
    TransferParams,
    get_pi,
)


def test_gemm_flops_is_2mnk() -> None:
    assert get_pi("gemm").work(GemmParams(m=2, n=3, k=5)) == 60.0


def test_conv2d_flops_forward_and_backward() -> None:
    # ResNet-50 conv1 at batch 1: 112x112 output, 2*64*112*112*3*7*7 FLOPs
    p = Conv2dParams(
        batch=1,
        in_channels=3,
        height=224,
        width=224,
        out_channels=64,
        kernel=7,
        stride=2,
        padding=3,
    )
    assert (p.out_height, p.out_width) == (112, 112)
    assert get_pi("conv2d").work(p) == 2 * 64 * 112 * 112 * 3 * 49
    back = p.model_copy(update={"direction": "backward"})
    assert get_pi("conv2d").work(back) == 2 * get_pi("conv2d").work(p)


def test_conv2d_rejects_a_kernel_larger_than_the_input() -> None:
    with pytest.raises(pydantic.ValidationError, match="does not fit"):
        Conv2dParams(batch=1, in_channels=1, height=2, width=2, out_channels=1, kernel=5)


@pytest.mark.parametrize(
    ("pi", "dtype", "expected"),
    [
        ("mem_copy", "fp32", 2 * 10 * 4),
        ("mem_triad", "fp32", 3 * 10 * 4),
        ("elementwise", "fp16", 3 * 10 * 2),
        ("reduction", "fp64", 10 * 8),
        ("mem_copy", "bf16", 2 * 10 * 2),
    ],
)
def test_memory_byte_formulas(pi: str, dtype: str, expected: float) -> None:
    assert get_pi(pi).work(MemoryParams(elements=10, dtype=dtype)) == expected  # type: ignore[arg-type]


def test_transfer_bytes_and_attention_flops() -> None:
    assert get_pi("transfer").work(TransferParams(size_bytes=1 << 20)) == 1 << 20
    p = AttentionParams(batch=2, heads=3, seq_len=4, head_dim=5)
    assert get_pi("sdpa").work(p) == 4 * 2 * 3 * 16 * 5
    assert get_pi("sdpa").work(p.model_copy(update={"causal": True})) == 2 * 2 * 3 * 16 * 5


def test_rate_in_the_unit_and_bad_times() -> None:
    gemm = get_pi("gemm")
    p = GemmParams(m=1000, n=1000, k=1000)
    assert gemm.rate(p, 1e-3) == pytest.approx(2.0)  # 2e9 FLOP in 1 ms = 2 TFLOP/s
    assert get_pi("mem_copy").rate(MemoryParams(elements=1 << 20), 1e-3) == pytest.approx(
        8 * (1 << 20) / 1e6
    )
    with pytest.raises(ValueError, match="positive"):
        gemm.rate(p, 0.0)


def test_parameters_are_typed_and_named_in_errors() -> None:
    with pytest.raises(pydantic.ValidationError, match="dtype"):
        get_pi("gemm").parse({"m": 1, "n": 1, "k": 1, "dtype": "fp7"})
    with pytest.raises(pydantic.ValidationError, match="m"):
        get_pi("gemm").parse({"m": 0, "n": 1, "k": 1})
    with pytest.raises(KeyError, match="valid"):
        get_pi("nope")


def test_every_pi_has_a_unit_and_version() -> None:
    assert set(PIS) >= {
        "gemm",
        "conv2d",
        "mem_copy",
        "mem_triad",
        "transfer",
        "elementwise",
        "reduction",
        "sdpa",
    }
    for pi in PIS.values():
        assert pi.version >= 1 and pi.unit.metric in ("tflops", "gbps")
