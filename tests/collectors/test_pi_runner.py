"""The PI runner: real NumPy/PyTorch runs become Measurements with their spread; unsupported
cases become Failures; bad options are named before anything runs."""

from __future__ import annotations

import pytest

from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.pi import (
    PiRunner,
    failure_of,
    measurement_of,
    resolve_device,
    select_backends,
)
from stack_advisor.microbench import run_case
from stack_advisor.microbench.backends import get_backend
from stack_advisor.microbench.timing import TimingPolicy
from stack_advisor.schema.errors import InvalidInput, Unsupported
from tests.support.extras import needs_torch

FAST = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05, min_sample_s=0)


def test_the_runner_is_registered() -> None:
    runner = get_runner("pi")
    assert isinstance(runner, PiRunner) and runner.name == "pi"


@needs_torch
def test_quick_run_gives_measurements_and_failures() -> None:
    seen: list[tuple[str, float]] = []
    ctx = RunContext(
        profile="quick",
        device="cpu",
        run_id="r1",
        options={"pis": "gemm,mem_copy", "backends": "numpy,torch"},
    )
    result = get_runner("pi").run(ctx, lambda message, fraction: seen.append((message, fraction)))

    # quick/cpu has 3 GEMMs (fp32 square, fp32 llm-decode, bf16) and one copy, on 2 backends;
    # NumPy has no bf16: 7 figures, 1 "unsupported" (kept as a failure record, not a failure of the
    # stack).
    assert len(result.measurements) == 7 and len(result.failures) == 1
    for m in result.measurements:
        p = m.benchmark.parameters
        assert m.benchmark.family == "pi" and m.benchmark.name in ("gemm", "mem_copy")
        assert p["device"] == "cpu" and p["backend"] in ("numpy", "torch") and p["pi_version"] == 1
        assert m.unit == ("TFLOP/s" if m.benchmark.name == "gemm" else "GB/s")
        assert (
            m.metric == ("tflops" if m.benchmark.name == "gemm" else "gbps") and m.higher_is_better
        )
        assert m.samples is not None and m.samples >= 5
        assert m.p10 is not None and m.p90 is not None and m.p10 <= m.value <= m.p90
        assert m.cv is not None and m.cv >= 0 and m.stddev is not None
        assert p["backend"] in (m.note or "")
    [failure] = result.failures
    assert failure.stage == "unsupported" and failure.error_class == "Unsupported"
    assert failure.benchmark is not None and failure.benchmark.parameters["dtype"] == "bf16"
    assert failure.benchmark.parameters["backend"] == "numpy" and "bf16" in failure.message
    assert result.stack_extra["framework"] == "torch" and result.stack_extra["framework_version"]
    assert seen[-1] == ("done", 1.0) and all(0.0 <= f <= 1.0 for _, f in seen)
    assert [f for _, f in seen] == sorted(f for _, f in seen)


@needs_torch
def test_canonical_parameters_separate_dtypes_backends_and_versions() -> None:
    ctx = RunContext(profile="quick", device="cpu", options={"pis": "gemm", "backends": "torch"})
    result = get_runner("pi").run(ctx)
    keys = {m.benchmark.benchmark_id for m in result.measurements}
    assert len(keys) == len(result.measurements) == 3  # fp32 square, fp32 decode, bf16


def test_mapping_of_one_case() -> None:
    ok = run_case("mem_copy", {"elements": 1 << 12}, get_backend("numpy"), "cpu", FAST)
    m = measurement_of(ok)
    assert ok.summary is not None
    assert (m.value, m.p10, m.p90, m.cv, m.samples) == (
        ok.summary.median,
        ok.summary.p10,
        ok.summary.p90,
        ok.summary.cv,
        ok.summary.n,
    )
    assert m.benchmark.parameters == {
        "elements": 4096,
        "dtype": "fp32",
        "flush_l2": False,
        "backend": "numpy",
        "device": "cpu",
        "pi_version": 1,
    }
    bad = run_case(
        "conv2d",
        {"batch": 1, "in_channels": 1, "height": 4, "width": 4, "out_channels": 1, "kernel": 3},
        get_backend("numpy"),
        "cpu",
        FAST,
    )
    f = failure_of(bad)
    assert (
        f.error_class == "Unsupported"
        and "convolution" in f.message
        and f.message.startswith("numpy ")
    )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"backends": "fortran"}, "backends"),
        ({"pis": "gemm,nope"}, "pis"),
        ({"pis": ""}, "pis"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_options_are_named(options: dict[str, str], match: str) -> None:
    ctx = RunContext(profile="quick", device="cpu", options=options)
    with pytest.raises(InvalidInput, match=match):
        get_runner("pi").run(ctx)


def test_device_resolution() -> None:
    backends = select_backends(RunContext(options={"backends": "numpy"}))
    assert resolve_device("auto", backends) == "cpu" and resolve_device("cpu", backends) == "cpu"
    with pytest.raises(Unsupported, match="cuda"):
        resolve_device("cuda", backends)  # NumPy never sees a GPU
    with pytest.raises(InvalidInput, match="tpu"):
        resolve_device("tpu", backends)
