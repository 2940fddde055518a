"""`compare sweep`'s ratio and interval come from the cells' own measurements: the ratio is that of
the medians each row shows, the interval a bootstrap over the runs and their own spread (issue 31:
a row printed 0.345 where its values gave 1.08, with interval 0.000..3,281,351,584; GEMM 256³ was
flagged 0.016x with interval 0.016..0.016 from two runs that agreed while their samples spread by
100%)."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.verbs.sweep import compare_sweep
from stack_advisor.schema.models import StoredObservation


def observation(
    cell: str, run: int, value: float, *, cv: float, samples: int = 20, higher: bool = True
) -> StoredObservation:
    doc: dict[str, Any] = {
        "key": f"obs-{cell}-{run}",
        "run_id": f"sweep-{cell}-r{run}",
        "benchmark": {
            "family": "pi",
            "name": "gemm",
            "parameters": {"m": 256, "n": 256, "k": 256, "dtype": "fp32"},
        },
        "metric": "tflops" if higher else "latency_ms",
        "unit": "TFLOP/s" if higher else "ms",
        "higher_is_better": higher,
        "value": value,
        "samples": samples,
        "cv": cv,
        "timestamp": f"2026-11-26T10:{10 + run + (10 if cell == 'new' else 0):02d}:00Z",
        "stack": {
            "framework": "numpy",
            "framework_version": "2.1.3" if cell == "new" else "1.26.4",
        },
        "accelerator": {"model": "CPU AMD EPYC", "vendor": "amd", "count": 1},
        "placement": {"kind": "bare-metal"},
        "host": {"name": "vm"},
        "provenance": {
            "kind": "measured",
            "source": "stack-advisor-collector",
            "details": {"sweep": "s", "sweep_cell": cell},
        },
    }
    return StoredObservation.model_validate(doc)


def ratios(base: list[float], new: list[float], *, cv: float, higher: bool = True) -> Any:
    rows = [observation("base", i, v, cv=cv, higher=higher) for i, v in enumerate(base)]
    rows += [observation("new", i, v, cv=cv, higher=higher) for i, v in enumerate(new)]
    (row,) = compare_sweep(rows)
    return row


def test_ratio_is_that_of_the_values_the_row_shows() -> None:
    row = ratios([1.00, 1.10, 9.0], [1.08, 1.20, 0.05], cv=0.05)  # one wild run on each side
    assert (row.value, row.baseline_value) == (1.08, 1.10)
    assert abs(row.ratio - 1.08 / 1.10) < 1e-12
    assert row.low <= row.ratio <= row.high
    assert (
        row.high / row.low < 1000
    )  # bounded by the data, not by a t quantile with one degree of freedom
    slower = ratios(
        [10.0, 11.0, 12.0], [20.0, 22.0, 24.0], cv=0.01, higher=False
    )  # latency doubled
    assert abs(slower.ratio - 0.5) < 1e-12 and slower.verdict == "slower"


def test_two_agreeing_runs_with_wide_samples_are_not_a_sharp_change() -> None:
    row = ratios([0.010, 0.010], [0.0016, 0.0016], cv=1.2)  # the 0.016x with 0.016..0.016
    assert row.interval_from == "repeats"
    assert row.high / row.low > 5, (row.low, row.high)  # the samples' spread is in the interval
    assert row.low <= row.ratio <= row.high


def test_a_clean_change_is_flagged_and_a_clean_tie_is_not() -> None:
    faster = ratios([100.0, 101.0, 99.5], [110.0, 111.0, 109.0], cv=0.002)
    assert faster.flagged and faster.verdict == "faster" and 1.05 < faster.low < faster.high < 1.15
    tie = ratios([100.0, 101.0, 99.5], [100.5, 99.8, 100.9], cv=0.002)
    assert not tie.flagged and tie.low < 1.0 < tie.high


def test_one_run_each_says_so_and_is_repeatable() -> None:
    row = ratios([50.0], [40.0], cv=0.2)
    assert row.interval_from == "samples within one run"
    assert row.low < 0.8 < row.high
    assert ratios([50.0], [40.0], cv=0.2) == row  # the same observations give the same interval
