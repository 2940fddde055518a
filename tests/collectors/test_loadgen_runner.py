"""The LoadGen runner, for real: mlperf_loadgen drives a PyTorch CNN on this machine."""

from __future__ import annotations

import importlib.util

import pytest

from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.loadgen_params import params_for
from stack_advisor.schema.errors import InvalidInput

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mlperf_loadgen") is None or importlib.util.find_spec("torch") is None,
    reason="needs mlcommons-loadgen and torch",
)


def test_quick_profile_runs_all_three_scenarios() -> None:
    seen: list[str] = []
    result = get_runner("loadgen").run(
        RunContext(profile="quick", device="cpu"), lambda m, f: seen.append(m)
    )
    assert result.failures == []
    by_scenario = {m.benchmark.parameters["scenario"]: m for m in result.measurements}
    assert set(by_scenario) == {"SingleStream", "Server", "Offline"}
    ss, server, offline = by_scenario["SingleStream"], by_scenario["Server"], by_scenario["Offline"]
    assert (
        ss.metric == "p90_latency_ms"
        and ss.unit == "ms"
        and ss.value > 0
        and not ss.higher_is_better
    )
    assert server.metric == "completed_samples_per_second" and server.value > 0
    assert server.benchmark.parameters["target_latency_ms"] == 100.0
    assert offline.metric == "samples_per_second" and offline.value > 0
    for m in result.measurements:
        assert m.note and m.note.startswith("LoadGen result ")
        assert ("VALID" in m.note) and (m.valid == m.note.startswith("LoadGen result VALID"))
        assert (
            m.benchmark.parameters["model"] == "small_cnn"
            and m.benchmark.parameters["device"] == "cpu"
        )
    assert result.stack_extra["framework"] == "torch" and "LoadGen done" in seen


def test_scenario_option_and_validation() -> None:
    assert params_for(RunContext(options={"scenarios": "Offline"})).scenarios == ["Offline"]
    with pytest.raises(InvalidInput, match="scenarios"):
        params_for(RunContext(options={"scenarios": ["MultiStreamy"]}))
    with pytest.raises(InvalidInput, match="unknown option"):
        params_for(RunContext(options={"qps": 3}))


def test_calibration_sizes_the_run_to_fill_min_duration() -> None:
    """A SUT faster than the expected latency says ends before min_duration: LoadGen calls that
    INVALID. Calibrated from a short timing of the SUT, the same run is long enough."""
    base = {
        "scenarios": "SingleStream",
        "model": "small_cnn",
        "image_size": 64,
        "sample_count": 32,
        "max_batch": 16,
        "min_duration_ms": 1500,
        "min_query_count": 16,
        "threads": 1,
    }
    runner = get_runner("loadgen")
    stale = runner.run(
        RunContext(
            profile="full",
            device="cpu",
            options={**base, "calibrate": False, "single_stream_expected_latency_ms": 500.0},
        )
    )
    (m,) = stale.measurements
    assert not m.valid and "min duration" in m.note
    calibrated = runner.run(RunContext(profile="full", device="cpu", options=base))
    (m,) = calibrated.measurements
    assert "calibrated: one-sample latency" in m.note
    assert "min duration" not in m.note, m.note
    assert m.benchmark == stale.measurements[0].benchmark  # calibration is a setting, not identity


def test_calibration_keeps_what_the_user_gave() -> None:
    from stack_advisor.collectors.runners.loadgen_params import Calibration

    params = params_for(RunContext(profile="full", options={"offline_expected_qps": 7.0}))
    tuned = Calibration(single_latency_ms=2.0, batch_qps=400.0).apply(
        params, {"offline_expected_qps"}
    )
    assert tuned.offline_expected_qps == 7.0
    assert tuned.single_stream_expected_latency_ms == 1.6


def test_the_timed_run_holds_no_cyclic_collection_and_serves_queued_queries_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside LoadGen's timed run the collector is off (a collection walks every live object of a
    process that ran other benchmarks first, stalling the SUT), and on afterwards; the SUT serves
    the Server queries that queued while it was busy as one batch."""
    import gc

    from stack_advisor.collectors.runners import loadgen

    seen: dict[str, object] = {}
    real_run, real_sut = loadgen._run_scenario, loadgen.TorchSut
    batches: list[int] = []

    class CountingSut(real_sut):  # type: ignore[misc,valid-type]
        """The real SUT, its model calls counted by batch size."""

        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            model = self.model
            self.model = lambda x: (batches.append(int(x.shape[0])), model(x))[1]

    def observed(*args: object) -> object:
        seen["gc_during"] = gc.isenabled()
        return real_run(*args)

    monkeypatch.setattr(loadgen, "_run_scenario", observed)
    monkeypatch.setattr(loadgen, "TorchSut", CountingSut)
    ctx = RunContext(
        profile="quick",
        device="cpu",
        options={"scenarios": "Server", "server_target_qps": 2000, "calibrate": False},
    )
    result = get_runner("loadgen").run(ctx, lambda m, f: None)
    assert result.measurements and seen["gc_during"] is False and gc.isenabled()
    assert (
        batches and max(batches) > 1
    )  # 2,000 q/s on one CPU thread: queries queue, and go together


def test_the_sut_warms_up_every_batch_size_before_timing_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each batch size the SUT can serve runs once before LoadGen times anything (a new shape's
    first pass builds kernels' plans: a stall for the queries queued behind it); the note says
    so. On the CPU it is off unless asked."""
    from stack_advisor.collectors.runners import loadgen

    calls: list[tuple[int, bool]] = []
    real_sut = loadgen.TorchSut

    class CountingSut(real_sut):  # type: ignore[misc,valid-type]
        def _warm_up(self) -> int:
            model = self.model
            self.model = lambda x: (calls.append((int(x.shape[0]), True)), model(x))[1]
            try:
                return super()._warm_up()
            finally:
                self.model = model

    monkeypatch.setattr(loadgen, "TorchSut", CountingSut)
    options = {"scenarios": "Server", "calibrate": False, "max_batch": 5}
    warmed = get_runner("loadgen").run(
        RunContext(profile="quick", device="cpu", options={**options, "warmup": True})
    )
    assert [size for size, _ in calls] == [1, 2, 3, 4, 5]
    (m,) = warmed.measurements
    assert "warmed up at batch sizes 1-5 before timing" in (m.note or "")
    calls.clear()
    cold = get_runner("loadgen").run(RunContext(profile="quick", device="cpu", options=options))
    assert calls == [] and "warmed up" not in (cold.measurements[0].note or "")


def test_a_cuda_graph_sut_is_its_own_identity_and_unsupported_without_cuda() -> None:
    from stack_advisor.schema.errors import Unsupported

    params = params_for(RunContext(profile="quick", options={"sut": "cuda-graph"}))
    assert params.identity("Server", "cuda")["sut"] == "cuda-graph"
    assert "sut" not in params_for(RunContext(profile="quick")).identity(
        "Server", "cuda"
    )  # eager as before
    with pytest.raises(InvalidInput, match="sut"):
        params_for(RunContext(options={"sut": "tensorrt"}))
    with pytest.raises(Unsupported, match="cuda-graph"):
        get_runner("loadgen").run(
            RunContext(profile="quick", device="cpu", options={"sut": "cuda-graph"})
        )


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or not __import__("torch").cuda.is_available(),
    reason="needs a CUDA device",
)
def test_the_cuda_graph_sut_serves_every_scenario_on_a_gpu() -> None:
    """On a GPU the captured graphs serve all three scenarios (each batch size its own graph),
    and the note says how the SUT ran."""
    result = get_runner("loadgen").run(
        RunContext(profile="quick", device="cuda", options={"sut": "cuda-graph"})
    )
    assert result.failures == []
    assert {m.benchmark.parameters["scenario"] for m in result.measurements} == {
        "SingleStream",
        "Server",
        "Offline",
    }
    for m in result.measurements:
        assert m.benchmark.parameters["sut"] == "cuda-graph" and m.value > 0
        assert "replays CUDA graphs captured at batch sizes 1-16" in (m.note or "")
