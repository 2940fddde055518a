"""The timing logic, driven by a deterministic kernel (no wall-clock assertions)."""

from __future__ import annotations

import itertools

import pytest

from stack_advisor.microbench.timing import (
    Kernel,
    TimingPolicy,
    calibrate,
    measure,
    median_rel_error,
    percentile,
    summarise,
)


def test_percentile_matches_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 10) == pytest.approx(1.4)
    assert percentile(values, 90) == pytest.approx(4.6)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summarise() -> None:
    s = summarise([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert s.mean == 5.0 and s.stddev == 2.0 and s.cv == pytest.approx(0.4) and s.n == 8
    assert s.median == 4.5
    with pytest.raises(ValueError):
        summarise([1.0, float("nan")])


def test_median_rel_error_shrinks_with_samples_and_ignores_one_outlier() -> None:
    assert median_rel_error([1.0]) == float("inf")
    assert median_rel_error([1.0] * 9 + [100.0]) == 0.0
    assert median_rel_error([1.0, 1.1] * 50) < median_rel_error([1.0, 1.1] * 5)


class FakeKernel(Kernel):
    """Each run 'takes' the next duration; timed() returns their sum (as a device timer would)."""

    def __init__(self, durations: list[float]) -> None:
        self.durations = itertools.cycle(durations)
        self.runs = 0
        self.flushes = 0
        super().__init__(run=self._run, flush=self._flush, timer=self._timer)

    def _run(self) -> None:
        self.runs += 1

    def _flush(self) -> None:
        self.flushes += 1

    def _timer(self, number: int) -> float:
        self.runs += number
        return sum(next(self.durations) for _ in range(number))


def test_stable_samples_stop_at_min_repeats() -> None:
    kernel = FakeKernel([0.01])
    timing = measure(kernel, TimingPolicy(warmup=2, min_repeats=5, min_sample_s=0))
    assert timing.stop_reason == "stable" and len(timing.seconds) == 5 and timing.number == 1
    assert kernel.runs == 2 + 5


def test_noisy_samples_run_until_the_budget_on_a_fake_clock() -> None:
    kernel = FakeKernel([0.01, 0.02, 0.04])
    ticks = itertools.count(step=0.1)
    timing = measure(
        kernel, TimingPolicy(min_repeats=5, budget_s=1.0, min_sample_s=0), clock=lambda: next(ticks)
    )
    assert timing.stop_reason == "budget" and 5 <= len(timing.seconds) < 20


def test_max_repeats_caps_the_samples() -> None:
    timing = measure(
        FakeKernel([0.01, 0.02, 0.03, 0.05]),
        TimingPolicy(
            min_repeats=3, max_repeats=7, budget_s=1e9, min_sample_s=0, target_rel_error=1e-9
        ),
    )
    assert len(timing.seconds) == 7 and timing.stop_reason == "max_repeats"


def test_short_runs_are_batched_and_reported_per_run() -> None:
    kernel = FakeKernel([1e-5])
    assert calibrate(kernel, 1e-3) == 100
    timing = measure(kernel, TimingPolicy(min_sample_s=1e-3))
    assert timing.number == 100 and timing.seconds[0] == pytest.approx(1e-5)


def test_flush_before_every_sample_and_one_run_per_sample() -> None:
    kernel = FakeKernel([1e-5])
    timing = measure(kernel, TimingPolicy(min_repeats=4, min_sample_s=1e-3, flush_l2=True))
    assert timing.flushed and timing.number == 1 and kernel.flushes == len(timing.seconds)


def test_wall_clock_path_synchronises_around_the_runs() -> None:
    events: list[str] = []
    kernel = Kernel(run=lambda: events.append("run"), sync=lambda: events.append("sync"))
    ticks = iter([0.0, 0.5])
    assert kernel.timed(2, clock=lambda: next(ticks)) == 0.5
    assert events == ["sync", "run", "run", "sync"]


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="min_repeats"):
        TimingPolicy(min_repeats=2)
    with pytest.raises(ValueError, match="max_repeats"):
        TimingPolicy(min_repeats=5, max_repeats=4)
