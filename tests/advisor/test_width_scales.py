"""One calibration for every round-ahead step (issue 41): the evaluation reads each step's
coverage with every interval's width scaled by a common factor, and the accuracy report says
which scales hold each step in 0.75-0.85 and whether any holds them all."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from stack_advisor.advisor.verbs.evaluate_scoring import MIN_SCALED_ROWS, width_scales

ROOT = Path(__file__).resolve().parents[2]


def _report_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "accuracy_report", ROOT / "scripts/accuracy_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _step(label: str, errors: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rows answered 100 with the interval 100/e^0.2 .. 100*e^0.2, truths at the log errors."""
    n = len(errors)
    pred = np.full(n, 100.0)
    return (
        np.array([label] * n, dtype=object),
        pred * np.exp(errors),
        pred,
        pred * np.exp(-0.2),
        pred * np.exp(0.2),
    )


def _join(*steps: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate(cols) for cols in zip(*steps))


def test_a_calm_step_and_a_wild_one_share_no_scale() -> None:
    # calm: log errors within +-0.09, inside the interval's +-0.2 even at half its width;
    # wild: spread to +-0.39, half of them beyond +-0.2
    calm = _step("a -> b, interpolated", np.linspace(-0.09, 0.09, 40))
    wild = _step("b -> c, interpolated", np.linspace(-0.39, 0.39, 40))
    few = _step("c -> d, transferred", np.zeros(MIN_SCALED_ROWS - 1))
    scales = width_scales(*_join(calm, wild, few))
    assert set(scales) == {"a -> b, interpolated", "b -> c, interpolated"}  # too few: left out
    calm_scales = {s: v for s, v in scales["a -> b, interpolated"].items() if s != "beside"}
    assert set(calm_scales.values()) == {1.0}  # too wide at every scale
    assert scales["a -> b, interpolated"]["beside"] == 0.0  # every interval holds its answer
    assert 0.45 <= scales["b -> c, interpolated"]["1.00"] <= 0.55
    assert scales["b -> c, interpolated"]["2.00"] == 1.0
    report = _report_script()
    wild_band = report.goal_scales(scales["b -> c, interpolated"])
    assert wild_band and min(float(s) for s in wild_band) > 1.0  # held only once widened
    [line] = report.one_calibration(scales)
    assert "a -> b, interpolated none" in line
    assert f"b -> c, interpolated {report.scale_range(wild_band)}" in line
    assert line.endswith("no common scale holds all of them")


def test_steps_that_agree_name_the_scales_that_hold_them_all() -> None:
    errors = np.linspace(-0.25, 0.25, 40)  # 0.2 of 0.25 holds 80%
    scales = width_scales(
        *_join(_step("a -> b, observed", errors), _step("b -> c, observed", errors))
    )
    [line] = _report_script().one_calibration(scales)
    assert "hold all of them" in line and "no common scale" not in line
    assert "1.00" in line.split("scales ")[-1] or "0.95" in line.split("scales ")[-1]
