"""Transfers by measured level: a part the catalogue gives no compute figure answered from the
parts that ran the slice, scaled by how the part compares with each of them on the other
benchmarks of the same kind both ran in the same round.

A roofline transfer (``stack_advisor.advisor.estimate.transferred``) needs the target's peak
compute; parts whose vendor publishes none for their edition (the RTX PRO Blackwell Server
editions, a Max-Q board) were refused wherever the slice is not memory-bound. Where such a part
has published results of its own, they say where it stands: its per-accelerator figure over a
reference part's on every other slice of the asked benchmark's group (same family and division,
a throughput: another benchmark of its kind, or the same one's other scenario or accuracy
target) both ran in a common round, the median of those log ratios over at least
``MIN_SHARED`` slices, is its level against that reference. The answer is the reference's
per-accelerator figure on the asked slice times that level, the geometric mean over the
``MAX_REFS`` references sharing the most slices.

Its interval (``level_quantiles``) is split-conformal on the same estimator replayed within each
held round (every part's figure on every slice of that round from the round's other parts and
its own other slices there), widened to parts' first results on a benchmark predicted from the
rounds before where at least ``MIN_FIRST`` are, and never narrower than a scaled transfer's first
results on the cell; refused where fewer than the index's minimum replays exist. Carried to the
asked round like any estimate (``drift.carry``: its rows are the references').
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.drift_prior import benchmark_group
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.query import Estimate, Query, SliceKey
from stack_advisor.advisor.estimate.transfer_replay import first_results
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog.accelerator_names import is_mixed_system

MIN_SHARED = 2  # other slices a part and a reference both ran in one round, to tell a level
MIN_FIRST = 20  # parts' first results replayed, to widen the interval by (``level_quantiles``)
MAX_REFS = 3  # references whose scaled figures are averaged (most shared slices first)
LEVEL_Q = (0.1, 0.5, 0.9)

EvidenceIndex = Any  # ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (it calls this)

# (slice, accelerator) → round → median per-accelerator figure
Profile = dict[tuple[SliceKey, str], dict[float, float]]
Nested = dict[Any, dict[Any, dict[float, float]]]  # by part then slice, or slice then part


def _slices(index: EvidenceIndex, family: str, division: str) -> list[SliceKey]:
    """The family's throughput slices of ``division``: what a level is read on."""
    return [
        key
        for key in index.slices
        if key[0] == family and key[4] == division and index.higher_is_better(key)
    ]


def memoised(index: EvidenceIndex, what: str, family: str, division: str, make: Any) -> Any:
    """``make()``, computed once per index, family and division (``EvidenceIndex.level_memo``)."""
    memo = index.level_memo
    if (what, family, division) not in memo:
        memo[(what, family, division)] = make()
    return memo[(what, family, division)]


def _profile(index: EvidenceIndex, family: str, division: str) -> Profile:
    """Every (slice, accelerator)'s per-round median per-accelerator figure."""
    out: Profile = {}
    for key in _slices(index, family, division):
        for acc, rows in index.slices[key].items():
            raw = index.raw_names.get(acc, acc)
            if accelerator_class(raw) != "cpu" and not is_mixed_system(raw):
                out[(key, acc)] = index.round_medians(rows)
    return out


def _level(
    target: dict[SliceKey, dict[float, float]],
    ref: dict[SliceKey, dict[float, float]],
    skip: SliceKey,
    at: float | None = None,
    before: float = math.inf,
) -> tuple[float, int] | None:
    """(median log ratio target / ref, slices) over the slices both ran in a common round (the
    latest such before ``before``; only round ``at`` where given), ``skip`` left out; None below
    ``MIN_SHARED``."""
    logs = []
    for key, mine in target.items():
        theirs = ref.get(key)
        if key == skip or theirs is None:
            continue
        common = [r for r in mine if r in theirs and r < before and (at is None or r == at)]
        if common:
            r = max(common)
            if mine[r] > 0 and theirs[r] > 0:
                logs.append(math.log(mine[r] / theirs[r]))
    if len(logs) < MIN_SHARED:
        return None
    return median(np.asarray(logs)), len(logs)


def _predict(
    parts: Nested,
    target: str,
    key: SliceKey,
    refs: dict[str, float],
    at: float | None = None,
    before: float = math.inf,
) -> tuple[float, list[tuple[str, float, int]]] | None:
    """(per-accelerator figure, [(reference, level, shared slices)]) of ``target`` on ``key``
    from ``refs`` (reference → its figure there), or None where no reference tells a level.
    Only slices of the asked benchmark's group count (``drift_prior.benchmark_group``: LLM,
    vision, recommendation, ...): a recommendation ASIC's level on DLRM says nothing of whether
    it runs an LLM at all (replayed, levels read across groups were 10.7% off at the median
    where those of the group were 8.9%)."""
    group = benchmark_group(key[0], key[1])
    mine = {k: v for k, v in parts.get(target, {}).items() if benchmark_group(k[0], k[1]) == group}
    scored = []
    for acc, value in refs.items():
        if acc == target or value <= 0:
            continue
        got = _level(mine, parts.get(acc, {}), key, at, before)
        if got is not None:
            scored.append((-got[1], abs(got[0]), acc, got[0], value))
    if not scored:
        return None
    scored.sort()
    used = scored[:MAX_REFS]
    logs = [math.log(value) + level for _, _, _, level, value in used]
    return math.exp(float(np.mean(logs))), [(acc, math.exp(lv), -n) for n, _, acc, lv, _ in used]


def tables(index: EvidenceIndex, family: str, division: str) -> tuple[Nested, Nested]:
    """The family's figures by part (part → slice → round → figure) and by slice (slice → part
    → round → figure), computed once per index."""

    def make() -> tuple[Nested, Nested]:
        by_part: Nested = defaultdict(dict)
        by_slice: Nested = defaultdict(dict)
        for (key, acc), per_round in _profile(index, family, division).items():
            by_part[acc][key] = per_round
            by_slice[key][acc] = per_round
        return by_part, by_slice

    got: tuple[Nested, Nested] = memoised(index, "tables", family, division, make)
    return got


def replays(index: EvidenceIndex, family: str, division: str) -> list[tuple[float, float, float]]:
    """``_replays``, computed once per index, family and division."""
    got: list[tuple[float, float, float]] = memoised(
        index, "replays", family, division, lambda: _replays(index, family, division)
    )
    return got


def _replays(index: EvidenceIndex, family: str, division: str) -> list[tuple[float, float, float]]:
    """(truth, level transfer, median of the round's other parts) of every replay: each part's
    figure on each slice of a held round, from the round's other parts on it, its level read on
    its other slices of that round."""
    parts, by_slice = tables(index, family, division)
    out = []
    for key, accs in by_slice.items():
        for rnd in sorted({r for per_round in accs.values() for r in per_round}):
            here = {acc: per_round[rnd] for acc, per_round in accs.items() if rnd in per_round}
            for acc, truth in here.items():
                got = _predict(parts, acc, key, here, at=rnd)
                if got is not None and truth > 0:
                    others = [v for a, v in here.items() if a != acc]
                    out.append((truth, got[0], median(np.asarray(others))))
    return out


def first_residuals(index: EvidenceIndex, family: str, division: str) -> np.ndarray:
    """``_first_residuals``, computed once per index, family and division."""
    got: np.ndarray = memoised(
        index, "first", family, division, lambda: _first_residuals(index, family, division)
    )
    return got


def _first_residuals(index: EvidenceIndex, family: str, division: str) -> np.ndarray:
    """log(truth / estimate) of every part's first result on every slice, predicted from the
    rounds before it: the other parts' latest figures on the slice before that round, scaled by
    the part's level read on the slices both ran before it. What a level transfer answers (a
    part asked on a benchmark before it ran it), a new round's drift and software included."""
    parts, by_slice = tables(index, family, division)
    out = []
    for key, acc, first, truth, refs in first_results_of(by_slice):
        got = _predict(parts, acc, key, refs, before=first)
        if got is not None and truth > 0:
            out.append(math.log(truth / got[0]))
    return np.asarray(out)


def first_results_of(
    by_slice: Nested,
) -> Iterator[tuple[SliceKey, str, float, float, dict[str, float]]]:
    """(slice, part, its first round there, its figure then, the other parts' latest figures
    on the slice before that round) of every part's first result on every slice."""
    for key, accs in by_slice.items():
        for acc, mine in accs.items():
            first = min(mine)
            refs = {}
            for other, theirs in accs.items():
                earlier = [r for r in theirs if r < first]
                if other != acc and earlier:
                    refs[other] = theirs[max(earlier)]
            yield key, acc, first, mine[first], refs


def level_quantiles(
    index: EvidenceIndex, family: str, division: str
) -> tuple[float, float, float, str] | None:
    """``_quantiles``, computed once per index, family and division."""
    got: tuple[float, float, float, str] | None = memoised(
        index, "quantiles", family, division, lambda: _quantiles(index, family, division)
    )
    return got


def _quantiles(
    index: EvidenceIndex, family: str, division: str
) -> tuple[float, float, float, str] | None:
    """(p10, median, p90, what they were read on) of the level transfer's log residuals: the
    within-round replays (``_replays``), widened to parts' first results on a benchmark
    predicted from the rounds before (``first_residuals``, their median the centre's
    correction) where at least ``MIN_FIRST`` are (a part's first results on a benchmark are
    what a level transfer answers; read across kinds of benchmark, before levels were held to
    the asked one's kind, the 36 such answers of the round-ahead backtests, calibrated on the
    within-round replays alone, held 0.39). None where fewer than the index's minimum replays
    exist."""
    within = np.asarray([math.log(t / p) for t, p, _ in replays(index, family, division)])
    if len(within) < index.min_residuals:
        return None
    return widened(within, first_residuals(index, family, division))


def widened(within: np.ndarray, first: np.ndarray) -> tuple[float, float, float, str]:
    """(p10, median, p90, what they were read on) of a transfer's within-round replays' log
    residuals, widened to its first results' (their median the centre) where at least
    ``MIN_FIRST`` are."""
    lo, mid, hi = quantiles(within, LEVEL_Q)
    what = f"{len(within)} replays within held rounds"
    if len(first) >= MIN_FIRST:
        f_lo, mid, f_hi = quantiles(first, LEVEL_Q)
        lo, hi = min(lo, f_lo), max(hi, f_hi)
        what += f", widened to {len(first)} parts' first results on a benchmark"
    return lo, mid, hi, what


def replay_summary(index: EvidenceIndex, family: str, division: str) -> dict[str, float]:
    """The replays' count, MAPE and median APE (%), and the same of the simplest baseline on
    the same rows (the median of the round's other parts on the slice): what the accuracy
    report prints. In-sample for the interval, whose coverage is not reported here."""
    rows = replays(index, family, division)

    def errors(i: int) -> np.ndarray:
        return np.asarray([abs(r[i] / r[0] - 1) * 100 for r in rows])

    if not rows:
        return {"replays": 0.0, "first_replays": 0.0}
    level, baseline = errors(1), errors(2)
    first = np.abs(np.exp(-first_residuals(index, family, division)) - 1) * 100
    return {
        "first_replays": float(len(first)),
        "first_median_ape": median(first) if len(first) else math.nan,
        "replays": float(len(rows)),
        "mape": float(level.mean()),
        "median_ape": median(level),
        "baseline_mape": float(baseline.mean()),
        "baseline_median_ape": median(baseline),
    }


def factors_of(
    reference: str, interval: str, correction: tuple[str, float]
) -> list[tuple[str, str, float]]:
    """A calibrated transfer's factors: its references, its interval's source and, where the
    replays' median moves it by more than 1%, that correction (text, log)."""
    out = [("reference", reference, 1.0), ("interval", interval, 1.0)]
    if abs(correction[1]) > 0.01:
        out.append(("efficiency", correction[0], math.exp(correction[1])))
    return out


def _explained(
    q: Query, used: list[tuple[str, float, int]], replays: str, mid_q: float
) -> tuple[list[tuple[str, str, float]], str]:
    """The answer's factors (its references and levels, the interval, the learned correction)
    and its note."""
    shown = "; ".join(f"{acc} x{level:.3g} on {n} shared slices" for acc, level, n in used)
    factors = factors_of(
        f"{', '.join(a for a, _, _ in used)}, scaled by {q.accelerator}'s measured level "
        f"against each (median ratio of per-accelerator figures on the other benchmarks "
        f"and scenarios both ran in a round: {shown})",
        f"80% split-conformal on the level transfer replayed on {replays}",
        ("median correction of replayed level transfers", mid_q),
    )
    note = (
        f"the catalogue has no peak compute figure for {q.accelerator}: transferred by its "
        "measured level against the parts that ran this benchmark, read on the other "
        f"{benchmark_group(q.family, q.benchmark)} benchmarks and scenarios it ran"
    )
    return factors, note


def level_transfer(
    index: EvidenceIndex, q: Query, by_acc: dict[str, np.ndarray]
) -> Estimate | None:
    """The level transfer to ``q``'s accelerator (module docstring), a refusal where its replays
    are too few to calibrate, or None where the part has no level against any reference (the
    caller's refusal stands)."""
    key = q.slice
    if not index.higher_is_better(key) or is_mixed_system(q.raw_accelerator or q.accelerator):
        return None  # a heterogeneous system is the sum of its parts (``verbs.mixed_system``)
    parts, by_slice = tables(index, key[0], key[4])
    refs = {
        acc: per_round[max(per_round)]
        for acc, per_round in by_slice.get(key, {}).items()
        if per_round
    }
    got = _predict(parts, q.accelerator, key, refs)
    if got is None:
        return None
    calibrated = level_quantiles(index, key[0], key[4])
    if calibrated is None:
        return too_few(index, q, "level transfers")
    lo_q, mid_q, hi_q, what = calibrated
    raw, used = got
    return answered(
        index,
        q,
        by_acc,
        (raw, [a for a, _, _ in used]),
        (lo_q, mid_q, hi_q, what),
        lambda said, mid: _explained(q, used, said, mid),
    )


def too_few(index: EvidenceIndex, q: Query, kind: str) -> Estimate:
    """The refusal of a transfer whose ``kind`` was replayed too rarely to calibrate."""
    return Estimate(
        Basis.UNSUPPORTED,
        reason=f"too few {kind} replayed to calibrate an interval (fewer than "
        f"{index.min_residuals}) for {q.accelerator} on {q.benchmark} {q.scenario}",
    )


def answered(
    index: EvidenceIndex,
    q: Query,
    by_acc: dict[str, np.ndarray],
    scaled: tuple[float, list[str]],
    calibrated: tuple[float, float, float, str],
    explain: Callable[[str, float], tuple[list[tuple[str, str, float]], str]],
) -> Estimate:
    """A transfer of the references' scaled figure (``scaled``: it and the references) with its
    replays' log quantiles and what they were read on (``calibrated``), never narrower than a
    scaled transfer's first results on the cell (the same task: a part on a benchmark it had not
    run, a new round's software included); its rows the references' latest, its factors and
    note from ``explain(what the interval was read on, the centre's correction)``."""
    raw, references = scaled
    lo_q, mid_q, hi_q, what = calibrated
    spread = first_results(index.residuals_for(q.family), q.slice, True, index.min_residuals)
    if spread is not None:
        lo_q, hi_q = min(lo_q, mid_q + spread[0]), max(hi_q, mid_q + spread[1])
        what += ", never narrower than scaled transfers' first results on the benchmark's cell"
    latest_rows = []
    for acc in references:
        rows = by_acc[acc]
        rounds = index.round_no[rows]
        latest_rows.append(rows[rounds == rounds.max()])
    factors, note = explain(what, mid_q)
    return Estimate(
        Basis.TRANSFERRED,
        raw * math.exp(mid_q),
        raw * math.exp(lo_q),
        raw * math.exp(hi_q),
        rows=np.concatenate(latest_rows),
        references=references,
        factors=factors,
        notes=[note],
    )
