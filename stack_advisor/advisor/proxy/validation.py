"""Leave one model out: each MLPerf LLM's results estimated by proxy from the others only.

A model is held out with every benchmark of it (llama2-70b-99 and -99.9 go together: the same
model's results would otherwise answer for it). The prior efficiency and the shrinkage strength
(``estimate.proxy_value``) are learned without the held-out model (the strength by an inner
leave-one-out over the rest), so its errors are what a user's unseen model would get; the 80%
interval of a held-out model is the p10..p90 of the other models' errors.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.efficiency import Efficiency
from stack_advisor.advisor.proxy.estimate import (
    Reference,
    Workload,
    WorkOf,
    benchmark_work,
    points,
    prior_efficiency,
    proxy_value,
    references,
)
from stack_advisor.advisor.proxy.indicators import pi_factors
from stack_advisor.advisor.proxy.model import catalogue_configs, from_catalogue
from stack_advisor.advisor.proxy.samples import (
    training_model_of,
    training_runs,
    training_work,
    vision_model_of,
    vision_models,
    vision_work,
)

# how strongly a part's efficiencies are held to the prior (one unit: like one reference a tenth
# of a decade off); chosen per fit by held-out error
STRENGTHS = (0.1, 0.3, 1.0, 3.0)
# (accelerator, precision) -> (compute, memory) factors on the prior (the part's indicators)
PiFactors = Callable[[str, str], tuple[float, float]]


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
    """What the proxy learns from a set of references: the prior efficiency, the shrinkage
    strength and the p10/p90 of its held-out log errors (ln actual/predicted) over ``held_out``
    predictions; with none (one model in the knowledge base, nothing to hold it out against)
    the interval is a factor of two either way, unmeasured, and the answer says so."""

    prior: Efficiency
    strength: float
    q10: float
    q90: float
    models: int
    held_out: int = 0


def model_of(benchmark: str) -> str:
    """The model a benchmark runs (its architectures.yaml entry's source)."""
    return catalogue_configs()[benchmark][1]


def _active_params(benchmark: str) -> float:
    return from_catalogue(benchmark).active_params


@dataclass(frozen=True)
class Kind:
    """What is estimated by proxy: how a benchmark's work is counted (``work_of``), which
    benchmarks share a model (held out together), and the size the baseline scales by."""

    name: str
    work_of: WorkOf
    model_of: Callable[[str], str]
    size: Callable[[str], float]


LLM = Kind("LLM serving", benchmark_work, model_of, _active_params)
VISION = Kind("vision", vision_work, vision_model_of, lambda b: vision_models()[b].flops)
TRAINING = Kind("training", training_work, training_model_of, lambda b: training_runs()[b].flops)


def _predict_all(
    refs: list[Reference],
    strength: float,
    held: str,
    pi: PiFactors | None = None,
    kind: Kind = LLM,
) -> list[HeldOut]:
    """Predictions for every reference of the model ``held`` from the other models' refs on
    the same part and framework (any framework of the part when it has none)."""
    pool: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    by_part: dict[str, list[Reference]] = defaultdict(list)
    rest = [r for r in refs if kind.model_of(r.benchmark) != held]
    if not points(rest, kind.work_of):  # the held-out model is the only one with countable work
        return []
    for r in rest:
        pool[(r.accelerator, r.framework)].append(r)
        by_part[r.accelerator].append(r)
    prior = prior_efficiency(rest, kind.work_of)
    out = []
    for r in refs:
        if kind.model_of(r.benchmark) != held:
            continue
        target = kind.work_of(r.benchmark, r.accelerator)
        candidates = pool.get((r.accelerator, r.framework)) or by_part.get(r.accelerator, [])
        if target is None or not candidates:
            continue
        part_prior = prior
        if pi and isinstance(target, Workload):  # indicators are read at an LLM's precision
            part_prior = prior.scaled(*pi(r.accelerator, target.precision))
        got = proxy_value(target, candidates, part_prior, strength, kind.work_of)
        if got is not None:
            out.append(HeldOut(r.benchmark, r.accelerator, r.framework, r.value, got.value))
    return out


def choose_strength(refs: list[Reference], pi: PiFactors | None = None, kind: Kind = LLM) -> float:
    """The strength with the least median |log error| over leave-one-model-out of ``refs``."""
    models = sorted({kind.model_of(r.benchmark) for r in refs})

    def score(strength: float) -> float:
        errors = [
            abs(h.log_error) for m in models for h in _predict_all(refs, strength, m, pi, kind)
        ]
        return float(np.median(errors)) if errors else math.inf

    return min(STRENGTHS, key=score)


def fit(refs: list[Reference], kind: Kind = LLM) -> Fit:
    """The prior and strength over all of ``refs`` and the spread of held-out errors (each
    model's errors with what was learned without it)."""
    errors = [h.log_error for h in leave_one_model_out(refs, intervals=False, kind=kind)]
    q10, q90 = (
        (float(np.quantile(errors, 0.1)), float(np.quantile(errors, 0.9)))
        if errors
        else (-math.log(2.0), math.log(2.0))
    )
    models = len({kind.model_of(r.benchmark) for r in refs})
    return Fit(
        prior_efficiency(refs, kind.work_of),
        choose_strength(refs, kind=kind),
        q10,
        q90,
        models,
        len(errors),
    )


def leave_one_model_out(
    refs: list[Reference],
    *,
    intervals: bool = True,
    pi: PiFactors | None = None,
    kind: Kind = LLM,
) -> list[HeldOut]:
    """Every model held out in turn; with ``intervals``, each held-out prediction carries the
    80% interval from the other models' held-out errors. ``pi`` moves each part's prior by its
    performance indicators (``indicators.pi_factors``)."""
    models = sorted({kind.model_of(r.benchmark) for r in refs})
    per_model: dict[str, list[HeldOut]] = {}
    for m in models:
        rest = [r for r in refs if kind.model_of(r.benchmark) != m]
        per_model[m] = _predict_all(refs, choose_strength(rest, pi, kind), m, pi, kind)
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


def summary(held: list[HeldOut], kind: Kind = LLM) -> dict[str, float]:
    """MAPE, median APE, 80% coverage and counts of held-out predictions."""
    if not held:
        return {"n": 0}
    apes = np.array([h.ape for h in held])
    return {
        "n": len(held),
        "models": len({kind.model_of(h.benchmark) for h in held}),
        "mape": float(apes.mean()),
        "median_ape": float(np.median(apes)),
        "coverage": float(np.mean([h.covered for h in held])),
    }


def table_pi(table: ObservationTable) -> PiFactors:
    """The table's performance indicators as factors on each part's prior."""

    def factors(accelerator: str, precision: str) -> tuple[float, float]:
        return pi_factors(table, accelerator, precision)[0]

    return factors


def validate(
    table: ObservationTable, scenario: str, *, with_pi: bool = False
) -> tuple[list[HeldOut], dict[str, float]]:
    pi = table_pi(table) if with_pi else None
    held = leave_one_model_out(references(table, scenario), pi=pi)
    return held, summary(held)


def baseline(refs: list[Reference], kind: Kind = LLM) -> list[HeldOut]:
    """The simplest proxy on the same rows, to judge the model against: each held-out result
    is the nearest model's (active parameters, same part and framework pool) scaled by the
    ratio of active parameters; its interval from the other models' errors likewise."""
    per_model: dict[str, list[HeldOut]] = defaultdict(list)
    for r in refs:
        held = kind.model_of(r.benchmark)
        target = kind.work_of(r.benchmark, r.accelerator)
        rest = [
            c for c in refs if kind.model_of(c.benchmark) != held and c.accelerator == r.accelerator
        ]
        pool = [c for c in rest if c.framework == r.framework] or rest
        sized = [
            (c, kind.size(c.benchmark)) for c in pool if kind.work_of(c.benchmark, c.accelerator)
        ]
        if target is None or not sized:
            continue
        active = kind.size(r.benchmark)
        c, size = min(sized, key=lambda cs: abs(math.log(active / cs[1])))
        value = c.value * size / active
        per_model[held].append(HeldOut(r.benchmark, r.accelerator, r.framework, r.value, value))
    out = []
    for m, held_out in per_model.items():
        others = [h.log_error for k, hs in per_model.items() if k != m for h in hs]
        q10, q90 = float(np.quantile(others, 0.1)), float(np.quantile(others, 0.9))
        out += [
            HeldOut(*_key(h), h.predicted * math.exp(q10), h.predicted * math.exp(q90))
            for h in held_out
        ]
    return out


def _key(h: HeldOut) -> tuple[str, str, str, float, float]:
    return h.benchmark, h.accelerator, h.framework, h.actual, h.predicted
