"""Framework-neutral CNN benchmark: the tf_cnn_benchmarks statistics, and real quick runs."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.cnn import params_for, reported_spread, step_statistics
from stack_advisor.schema.errors import InvalidInput, Unsupported

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TF = importlib.util.find_spec("tensorflow") is not None


def test_statistics_follow_tf_cnn_benchmarks() -> None:
    # speeds 4, 4, 2 images/s; mean step time 2/3 s -> 3.0 images/s (not the mean speed 3.33)
    stats = step_statistics(2, [0.5, 0.5, 1.0])
    assert stats.images_per_sec == pytest.approx(3.0)
    assert stats.stddev == pytest.approx(np.std([4.0, 4.0, 2.0]))
    assert stats.stderr == pytest.approx(np.std([4.0, 4.0, 2.0]) / math.sqrt(3))
    assert stats.jitter == 0.0  # median |speed - 4| is 0
    stats = step_statistics(10, [1.0, 0.5, 0.25, 0.2, 0.1])  # speeds 10, 20, 40, 50, 100
    assert stats.jitter == pytest.approx(1.4826 * 20)  # |dev from 40| = 30,20,0,10,60 -> median 20
    assert stats.steps == 5 and stats.p10 < stats.p90


@pytest.mark.parametrize("times", [[], [0.1, 0.0], [float("nan")]])
def test_statistics_reject_bad_times(times: list[float]) -> None:
    with pytest.raises(ValueError):
        step_statistics(1, times)


def test_options_are_validated() -> None:
    with pytest.raises(InvalidInput, match="model='vgg99'"):
        params_for(RunContext(options={"model": "vgg99"}))
    with pytest.raises(InvalidInput, match="batch_size=-1"):
        params_for(RunContext(options={"batch_size": -1}))
    with pytest.raises(InvalidInput, match="unknown option"):
        params_for(RunContext(options={"batchsize": 4}))
    quick = params_for(RunContext(profile="quick"))
    assert (quick.model, quick.image_size) == ("small_cnn", 64)


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.parametrize("mode", ["training", "forward-only"])
def test_torch_quick_run(mode: str) -> None:
    seen: list[float] = []
    result = get_runner("cnn").run(
        RunContext(
            profile="quick",
            device="cpu",
            options={"framework": "torch", "mode": mode, "num_batches": 5},
        ),
        lambda msg, f: seen.append(f),
    )
    assert result.failures == []
    (m,) = result.measurements
    assert m.metric == "images_per_sec" and m.value > 0 and m.samples == 5
    # the per-step p10..p90 bracket the run's throughput, or (a slow step on a loaded machine
    # pulled the mean below them) both are left out and the note says why: never one without the
    # other, never a range that does not hold the headline
    if m.p10 is None or m.p90 is None:
        assert m.p10 is None and m.p90 is None
        assert "left out" in (m.note or "")
    else:
        assert m.p10 <= m.value <= m.p90
    p = m.benchmark.parameters
    assert p == {
        "model": "small_cnn",
        "mode": mode,
        "batch_size": 8,
        "image_size": 64,
        "num_classes": 1000,
        "precision": "fp32",
        "data": "synthetic",
        "device": "cpu",
    }
    assert "jitter" in (m.note or "")
    assert result.stack_extra["framework"] == "torch"
    assert seen[-1] == 1.0


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_torch_resnet50_shapes_run_one_step() -> None:
    result = get_runner("cnn").run(
        RunContext(
            profile="quick",
            device="cpu",
            options={
                "model": "resnet50",
                "mode": "forward-only",
                "batch_size": 1,
                "image_size": 64,
                "num_batches": 2,
                "num_warmup_batches": 0,
            },
        )
    )
    assert result.measurements[0].benchmark.name == "resnet50" and result.measurements[0].value > 0


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_fp16_on_cpu_is_unsupported() -> None:
    with pytest.raises(Unsupported, match="fp16"):
        get_runner("cnn").run(
            RunContext(profile="quick", device="cpu", options={"precision": "fp16"})
        )


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_cuda_without_gpu_is_unsupported() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(Unsupported, match="cuda"):
        get_runner("cnn").run(RunContext(profile="quick", device="cuda"))


@pytest.mark.skipif(not HAS_TF, reason="TensorFlow not installed")
def test_keras_quick_run_same_benchmark_as_torch() -> None:
    result = get_runner("cnn").run(
        RunContext(
            profile="quick", device="cpu", options={"framework": "tensorflow", "num_batches": 4}
        )
    )
    (m,) = result.measurements
    assert m.value > 0 and result.stack_extra["framework"] == "tensorflow"
    torch_params = params_for(RunContext(profile="quick", options={"framework": "torch"})).identity(
        "cpu"
    )
    assert m.benchmark.parameters == torch_params  # same workload, different stack


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_torch_cuda_quick_run() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    result = get_runner("cnn").run(RunContext(profile="quick", device="cuda"))
    (m,) = result.measurements
    assert m.benchmark.parameters["device"] == "cuda" and m.value > 0


def test_percentiles_that_do_not_bracket_the_throughput_are_left_out() -> None:
    """One slow step in ten puts batch / mean step time below the per-step p10 (as in the H200
    run of 2026-11-26): the reported spread must not claim a range the headline lies outside."""
    steady = step_statistics(10, [0.1] * 5 + [0.11] * 5)
    assert reported_spread(steady)[:2] == (steady.p10, steady.p90)
    stalled = step_statistics(10, [0.1] * 9 + [1.0])  # speeds 100 x9 and 10; throughput 52.6
    p10, p90, note = reported_spread(stalled)
    assert stalled.images_per_sec < stalled.p10 and (p10, p90) == (None, None)
    assert "left out" in note and f"{stalled.p10:.1f}" in note
