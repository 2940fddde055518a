"""Transfers within a generation: a part the catalogue gives no compute figure, and that has no
results of the asked benchmark's kind to read a level on (``level_transfer``), answered from the
parts of its own vendor and generation that ran the slice, scaled by memory bandwidth, the one
figure both publish.

A new edition of a known design (RTX PRO 4500 Blackwell, Server or Workstation, beside the RTX PRO
6000 Blackwell Server Edition that ran the LLM and vision benchmarks) was refused as "compute
unpublished" wherever it had published nothing of the asked kind. Within one generation, the
parts' memory systems are sized to their compute (the same tensor cores, fed by a bus of the width
the die has), so the reference's per-accelerator figure times (target's bandwidth / reference's)
raised to an exponent stands for the unknown compute ratio. The exponent is picked from
``EXPONENTS`` on the replays below (their lowest median APE; 1, plain proportion, first on ties):
measured once on the shared rounds' closed replays (767, before the catch-all generations were
left out), exponent 1 gave 14.2% median APE, 0.75 gave 16.4% and 1.25 18.3%. The answer is the
geometric mean over the ``MAX_REFS`` parts of the generation nearest in bandwidth.

Its interval is split-conformal on the same estimator replayed within each held round (every
part of a generation with a bandwidth figure on every slice, from the round's other parts of its
generation there), widened to parts' first results on a benchmark predicted from their
generation's results of the rounds before where at least ``level_transfer.MIN_FIRST`` are, and
never narrower than a scaled transfer's first results on the cell; refused where fewer than the
index's minimum replays exist. Carried to the asked round like any estimate (its rows are the
references'). Not for heterogeneous systems, CPUs, or parts the catalogue gives no generation of
one design.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.hardware import figures
from stack_advisor.advisor.estimate.level_transfer import (
    MAX_REFS,
    answered,
    factors_of,
    first_results_of,
    memoised,
    tables,
    too_few,
    widened,
)
from stack_advisor.advisor.estimate.order_stats import median
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.catalog.accelerator_names import is_mixed_system

EXPONENTS = (1.0, 0.5, 0.75, 1.25, 1.5)  # of the bandwidth ratio; the first wins ties
# the catalogue's generations that group several designs (``generations.yaml``: "other" holds
# every vendor's unclassified parts, "tpu" every TPU, "aws-neuron" NeuronCore-v2 and -v3)
NOT_ONE_DESIGN = ("other", "tpu", "aws-neuron")

EvidenceIndex = Any  # ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (it calls this)
Design = tuple[str, str, float]  # (vendor, generation, memory bandwidth GB/s)
# (truth, [(reference's figure, log(target's bandwidth / reference's))], baseline)
Replay = tuple[float, list[tuple[float, float]], float]


@lru_cache(maxsize=4096)
def design(name: str) -> Design | None:
    """(vendor, generation, bandwidth) of a part, or None where the catalogue gives it no
    generation of one design (``NOT_ONE_DESIGN``) or no bandwidth (or it is a CPU or a
    heterogeneous system)."""
    vendor = accelerator_class(name)
    if vendor == "cpu" or is_mixed_system(name):
        return None
    spec = resolve_accelerator(name).spec
    bandwidth = figures(name).bandwidth_gbs
    if spec is None or not spec.generation or spec.generation in NOT_ONE_DESIGN or not bandwidth:
        return None
    return vendor, spec.generation, float(bandwidth)


def _nearest(
    index: EvidenceIndex, mine: Design, figures_of: dict[str, float], skip: str
) -> list[tuple[str, float, float]]:
    """[(part, its figure, log(target's bandwidth / its))] of the ``MAX_REFS`` parts of
    ``mine``'s vendor and generation nearest it in bandwidth, ``skip`` left out."""
    near = []
    for acc, value in figures_of.items():
        theirs = design(index.raw_names.get(acc, acc)) if acc != skip else None
        if theirs is not None and theirs[:2] == mine[:2] and value > 0:
            ratio = math.log(mine[2] / theirs[2])
            near.append((abs(ratio), acc, value, ratio))
    near.sort()
    return [(acc, value, ratio) for _, acc, value, ratio in near[:MAX_REFS]]


def _at(refs: list[tuple[float, float]], exponent: float) -> float:
    """The geometric mean of the references' figures scaled by their bandwidth ratios."""
    return math.exp(float(np.mean([math.log(v) + exponent * r for v, r in refs])))


def replays(index: EvidenceIndex, family: str, division: str) -> list[Replay]:
    """``_replays``, computed once per index, family and division."""
    got: list[Replay] = memoised(
        index, "generation replays", family, division, lambda: _replays(index, family, division)
    )
    return got


def _replays(index: EvidenceIndex, family: str, division: str) -> list[Replay]:
    """Every part's figure on every slice of a held round, with the round's other parts of its
    generation there (and the median of all the round's other parts: the baseline)."""
    _, by_slice = tables(index, family, division)
    out = []
    for accs in by_slice.values():
        for rnd in sorted({r for per_round in accs.values() for r in per_round}):
            here = {acc: per_round[rnd] for acc, per_round in accs.items() if rnd in per_round}
            for acc, truth in here.items():
                mine = design(index.raw_names.get(acc, acc))
                near = _nearest(index, mine, here, acc) if mine is not None else []
                if near and truth > 0:
                    others = [v for a, v in here.items() if a != acc]
                    out.append((truth, [(v, r) for _, v, r in near], median(np.asarray(others))))
    return out


def exponent_and_quantiles(
    index: EvidenceIndex, family: str, division: str
) -> tuple[float, tuple[float, float, float], str] | None:
    """(the exponent, the log residuals' p10/median/p90 at it, what they were read on), or None
    where fewer than the index's minimum replays exist; computed once per index, family and
    division. The within-round replays' quantiles, widened to parts' first results on a
    benchmark predicted from the rounds before (``first_residuals``, their median the centre's
    correction) where at least ``level_transfer.MIN_FIRST`` are (``level_transfer.widened``): what
    this transfer answers is a part on a benchmark before it ran it, a new round's software and a
    first submission's tuning included (on the shared rounds the 150 such first results were 35%
    off at the median where the within-round replays were 14%)."""

    def make() -> tuple[float, tuple[float, float, float], str] | None:
        rows = replays(index, family, division)
        if len(rows) < index.min_residuals:
            return None
        best: tuple[float, float, np.ndarray] | None = None
        for exponent in EXPONENTS:
            logs = np.asarray([math.log(t / _at(refs, exponent)) for t, refs, _ in rows])
            score = median(np.abs(np.expm1(-logs)))
            if best is None or score < best[0]:
                best = (score, exponent, logs)
        assert best is not None
        lo, mid, hi, what = widened(best[2], first_residuals(index, family, division, best[1]))
        return best[1], (lo, mid, hi), what

    got: tuple[float, tuple[float, float, float], str] | None = memoised(
        index, "generation quantiles", family, division, make
    )
    return got


def first_residuals(
    index: EvidenceIndex, family: str, division: str, exponent: float
) -> np.ndarray:
    """log(truth / estimate) of every part's first result on every slice, predicted from the
    rounds before it: the latest figures there of the parts of its generation, scaled by
    bandwidth at ``exponent``."""
    _, by_slice = tables(index, family, division)
    out = []
    for _, acc, _, truth, refs in first_results_of(by_slice):
        own = design(index.raw_names.get(acc, acc))
        near = _nearest(index, own, refs, acc) if own is not None else []
        if near and truth > 0:
            out.append(math.log(truth / _at([(v, r) for _, v, r in near], exponent)))
    return np.asarray(out)


def replay_summary(index: EvidenceIndex, family: str, division: str) -> dict[str, float]:
    """The replays' count, the exponent, MAPE and median APE (%) at it, and the same of the
    simplest baseline on the same rows (the median of the round's other parts on the slice)."""
    rows = replays(index, family, division)
    fitted = exponent_and_quantiles(index, family, division)
    if not rows or fitted is None:
        return {"replays": float(len(rows))}
    exponent = fitted[0]
    mine = np.asarray([abs(_at(refs, exponent) / t - 1) * 100 for t, refs, _ in rows])
    base = np.asarray([abs(b / t - 1) * 100 for t, _, b in rows])
    first = np.abs(np.exp(-first_residuals(index, family, division, exponent)) - 1) * 100
    return {
        "first_replays": float(len(first)),
        "first_median_ape": median(first) if len(first) else math.nan,
        "replays": float(len(rows)),
        "exponent": exponent,
        "mape": float(mine.mean()),
        "median_ape": median(mine),
        "baseline_mape": float(base.mean()),
        "baseline_median_ape": median(base),
    }


def generation_transfer(
    index: EvidenceIndex, q: Query, by_acc: dict[str, np.ndarray]
) -> Estimate | None:
    """The transfer within ``q``'s accelerator's generation (module docstring), a refusal where
    its replays are too few to calibrate, or None where no part of its generation ran the slice
    (the caller's refusal stands)."""
    key = q.slice
    mine = design(q.accelerator)
    if mine is None or not index.higher_is_better(key):
        return None
    _, by_slice = tables(index, key[0], key[4])
    latest = {acc: pr[max(pr)] for acc, pr in by_slice.get(key, {}).items() if pr}
    near = _nearest(index, mine, latest, q.accelerator)
    if not near:
        return None
    fitted = exponent_and_quantiles(index, key[0], key[4])
    if fitted is None:
        return too_few(index, q, "transfers within a generation")
    exponent, (lo_q, mid_q, hi_q), what = fitted
    return answered(
        index,
        q,
        by_acc,
        (_at([(v, r) for _, v, r in near], exponent), [acc for acc, _, _ in near]),
        (lo_q, mid_q, hi_q, what),
        lambda said, mid: _explained(q, mine, near, exponent, said, mid),
    )


def _explained(
    q: Query,
    mine: Design,
    near: list[tuple[str, float, float]],
    exponent: float,
    what: str,
    mid_q: float,
) -> tuple[list[tuple[str, str, float]], str]:
    """The answer's factors (its references and their bandwidth ratios, the interval, the
    learned correction) and its note."""
    shown = "; ".join(f"{acc} x{math.exp(exponent * r):.3g}" for acc, _, r in near)
    out = factors_of(
        f"{', '.join(a for a, _, _ in near)} ({mine[0]} {mine[1]}, as {q.accelerator}), scaled "
        f"by memory bandwidth ({mine[2]:g} GB/s over theirs)^{exponent:g}, the exponent picked "
        f"on replays: {shown}",
        f"80% split-conformal on the same transfer replayed on {what}",
        ("median correction of replayed generation transfers", mid_q),
    )
    note = (
        f"the catalogue has no peak compute figure for {q.accelerator} and it has no results of "
        f"this kind to read its level on: transferred from parts of its generation ({mine[1]}) "
        "by memory bandwidth"
    )
    return out, note
