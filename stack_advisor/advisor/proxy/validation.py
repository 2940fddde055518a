"""Leave one model out: each MLPerf LLM's results estimated by proxy from the others only.

A model is held out with every benchmark of it (llama2-70b-99 and -99.9 go together: the same
model's results would otherwise answer for it). The knobs (``estimate.Knobs``) are chosen without
the held-out model (inner leave-one-out over the rest), so its errors are what a user's unseen model
would get; the 80% interval of a held-out model is the p10..p90 of the other models' errors.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.estimate import (
    KNOB_GRID,
    Knobs,
    Reference,
    benchmark_work,
    proxy_value,
    references,
)
from stack_advisor.advisor.proxy.model import catalogue_configs


@dataclass(frozen=True)
class HeldOut:
    benchmark: str
    accelerator: str
    framework: str
    actual: float
    predicted: float
    low: float = 0.0
    high: float = 0.0

    @property
    def log_error(self) -> float:
        """ln(actual / predicted)."""
        return math.log(self.actual / self.predicted)

    @property
    def ape(self) -> float:
        return abs(self.predicted - self.actual) / self.actual

    @property
    def covered(self) -> bool:
        return self.low <= self.actual <= self.high


@dataclass(frozen=True)
class Fit:
    """What the proxy learns from a set of references: the memory term's weight and the
    p10/p90 of its held-out log errors (ln actual/predicted)."""

    knobs: Knobs
    q10: float
    q90: float
    models: int


def model_of(benchmark: str) -> str:
    """The model a benchmark runs (its architectures.yaml entry's source)."""
    return catalogue_configs()[benchmark][1]


def _predict_all(refs: list[Reference], knobs: Knobs, held: str) -> list[HeldOut]:
    """Predictions for every reference of the model ``held`` from the other models' refs on
    the same part and framework (any framework of the part when it has none)."""
    pool: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    by_part: dict[str, list[Reference]] = defaultdict(list)
    for r in refs:
        if model_of(r.benchmark) != held:
            pool[(r.accelerator, r.framework)].append(r)
            by_part[r.accelerator].append(r)
    out = []
    for r in refs:
        if model_of(r.benchmark) != held:
            continue
        target = benchmark_work(r.benchmark, r.accelerator)
        candidates = pool.get((r.accelerator, r.framework)) or by_part.get(r.accelerator, [])
        got = proxy_value(target, candidates, knobs) if target and candidates else None
        if got is not None:
            out.append(HeldOut(r.benchmark, r.accelerator, r.framework, r.value, got[0]))
    return out


def choose_knobs(refs: list[Reference]) -> Knobs:
    """The grid's knobs with the least median |log error| over leave-one-model-out of ``refs``."""
    models = sorted({model_of(r.benchmark) for r in refs})

    def score(knobs: Knobs) -> float:
        errors = [abs(h.log_error) for m in models for h in _predict_all(refs, knobs, m)]
        return float(np.median(errors)) if errors else math.inf

    return min(KNOB_GRID, key=score)


def fit(refs: list[Reference]) -> Fit:
    """The weight over all of ``refs`` and the spread of held-out errors (each model's errors
    with the weight chosen without it)."""
    errors = [h.log_error for h in leave_one_model_out(refs, intervals=False)]
    q10, q90 = (
        (float(np.quantile(errors, 0.1)), float(np.quantile(errors, 0.9)))
        if errors
        else (
            -math.log(2.0),
            math.log(2.0),
        )
    )
    models = len({model_of(r.benchmark) for r in refs})
    return Fit(knobs=choose_knobs(refs), q10=q10, q90=q90, models=models)


def leave_one_model_out(refs: list[Reference], *, intervals: bool = True) -> list[HeldOut]:
    """Every model held out in turn; with ``intervals``, each held-out prediction carries the
    80% interval from the other models' held-out errors."""
    models = sorted({model_of(r.benchmark) for r in refs})
    per_model: dict[str, list[HeldOut]] = {}
    for m in models:
        rest = [r for r in refs if model_of(r.benchmark) != m]
        per_model[m] = _predict_all(refs, choose_knobs(rest), m)
    if not intervals:
        return [h for hs in per_model.values() for h in hs]
    out = []
    for m, held in per_model.items():
        others = [h.log_error for k, hs in per_model.items() if k != m for h in hs]
        if not others:
            continue
        q10, q90 = float(np.quantile(others, 0.1)), float(np.quantile(others, 0.9))
        for h in held:
            low, high = h.predicted * math.exp(q10), h.predicted * math.exp(q90)
            out.append(
                HeldOut(h.benchmark, h.accelerator, h.framework, h.actual, h.predicted, low, high)
            )
    return out


def summary(held: list[HeldOut]) -> dict[str, float]:
    """MAPE, median APE, 80% coverage and counts of held-out predictions."""
    if not held:
        return {"n": 0}
    apes = np.array([h.ape for h in held])
    return {
        "n": len(held),
        "models": len({model_of(h.benchmark) for h in held}),
        "mape": float(apes.mean()),
        "median_ape": float(np.median(apes)),
        "coverage": float(np.mean([h.covered for h in held])),
    }


def validate(table: ObservationTable, scenario: str) -> tuple[list[HeldOut], dict[str, float]]:
    held = leave_one_model_out(references(table, scenario))
    return held, summary(held)
