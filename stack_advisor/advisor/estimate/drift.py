"""Round drift: what time an estimate is for.

An answer is for the newest round published by today's date (``as_of`` "today", the default: the
catalogue's round dates, ``ADVISOR_TODAY`` to replay another day), or for the knowledge base's
"now" (the newest round holding the benchmark slice), the round after it ("next"), a date or a
named round. Evidence from an older round is carried to that round through the drift the parts
present in both rounds show (same slice, comparable system class: accelerators per node, single or
multi-node): the median of those pairs' log ratios, their spread in the interval, the pairs and
rounds shown in the answer (``carry``). Where no part is in both rounds, and for a round beyond the
newest held (a forecast: today's round where the knowledge base lacks it, "next", a later round),
the drift comes from a prior learned on every held round-to-round step of every closed-division
slice: the per-round log improvement of the pairs, kept apart by what the figures are (throughput,
latency, serving latency, time to train: a p99 latency at a scenario's limit moves apart from its
throughput, and an LLM's TTFT/TPOT under a served load apart from a single-stream latency),
pooled by benchmark group (LLM, vision, recommendation, speech, graph, training), the benchmark's
age (published rounds since the round the catalogue says introduced it, else held rounds since
its first; a forecast several rounds ahead takes each step at the age it will have) and the part's
vendor, falling back to coarser cells where a cell has few pairs (every group's steps at the
benchmark's age before its own group's of every age), its band at least as wide as every group's
at that age (``DriftPrior``). The prior's 80% band is
calibrated per group on its own round-ahead replays: every step of the history predicted from the
steps before it, one pad (log units added to each side) for all steps (``DriftPrior.pad``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from itertools import pairwise

import numpy as np

from stack_advisor.advisor.estimate.as_of import (
    AS_OF_WORDS,
    as_of_error,
    next_round,
    published_on,
    round_at,
    target_round,
    today,
)
from stack_advisor.advisor.estimate.drift_prior import (
    LEVEL_Q,
    MATURE,
    PRIOR_WEIGHT_PAIRS,
    Drift,
    DriftIndex,
    DriftPrior,
    PriorShelf,
    age_bucket,
    benchmark_group,
    introduced_round,
    metric_kind,
    orientation,
    round_label,
)
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.query import Estimate, Query, SliceKey, model_name
from stack_advisor.advisor.estimate.references_class import published_nodes
from stack_advisor.advisor.estimate.stack_effect import rounds_between
from stack_advisor.advisor.estimate.transfer import HELD, figure_text
from stack_advisor.advisor.knowledge.table import ObservationTable, round_number
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog.rounds import load_rounds, rounds_after

__all__ = [
    "AS_OF_WORDS",
    "Drift",
    "DriftIndex",
    "DriftPrior",
    "RoundDrift",
    "answer_round",
    "as_of_error",
    "benchmark_group",
    "carry",
    "metric_kind",
    "next_round",
    "orientation",
    "round_at",
    "round_label",
    "slice_round",
    "system_class",
]


def system_class(table: ObservationTable, row: int) -> tuple[int, bool]:
    """(accelerators per node, multi-node) of a row: as published, else its count on one node."""
    system = table.system.vocab[int(table.system.codes[row])] or ("", "", "")
    per_node, n_nodes = system[1], published_nodes(system) or 1
    per = int(per_node) if str(per_node).isdigit() and int(per_node) > 0 else 0
    if not per:
        per = max(int(table.count[row]) // max(n_nodes, 1), 1)
    return per, n_nodes > 1


class RoundDrift:
    """The drift of one index's table: per-slice pairs, the prior, carrying and forecasting."""

    def __init__(self, index: DriftIndex, shelf: PriorShelf | None = None) -> None:
        """``shelf``: where the prior of this table is kept between processes (None: learned
        in each)."""
        self.index = index
        self.shelf = shelf
        self._cells: dict[SliceKey, dict[tuple[str, int, bool], dict[float, float]]] = {}
        self._rounds: dict[SliceKey, list[float]] = {}
        self._newest: dict[SliceKey, float] = {}  # a slice without results: its benchmark's
        self._first: dict[tuple[str, ...], float] | None = None
        self._held: dict[tuple[str, ...], list[float]] = {}
        self._owners: dict[SliceKey, tuple[np.ndarray, np.ndarray]] = {}
        self._systems: dict[tuple[int, int], tuple[int, bool]] = {}
        self._prior: DriftPrior | None = None
        self._pairs: dict[tuple[SliceKey, float, float], list[tuple[str, float]]] = {}
        self._families: dict[str, set[float]] = {}

    def family_rounds(self, family: str) -> set[float]:
        """The rounds the knowledge base holds any result of ``family`` from."""
        if family not in self._families:
            t = self.index.table
            mine = t.family.codes == t.family.code(family) if family in t.family.vocab else []
            self._families[family] = set(self.index.round_no[mine].tolist())
        return self._families[family]

    @property
    def prior(self) -> DriftPrior:
        if self._prior is None:
            self._prior = DriftPrior.kept(self, self.shelf)
        return self._prior

    def cells(self, key: SliceKey) -> dict[tuple[str, int, bool], dict[float, float]]:
        """(accelerator, per-node count, multi-node) → round → median value of the slice."""
        if key not in self._cells:
            idx = self.index
            groups: dict[tuple[str, int, bool, float], list[float]] = defaultdict(list)
            for acc, rows in idx.slices.get(key, {}).items():
                for r in rows.tolist():
                    rnd = float(idx.round_no[r])
                    if rnd > 0:
                        groups[(acc, *self._class(key, r), rnd)].append(float(idx.unit[r]))
            out: dict[tuple[str, int, bool], dict[float, float]] = defaultdict(dict)
            for (acc, per, multi, rnd), values in groups.items():
                out[(acc, per, multi)][rnd] = median(np.asarray(values))
            self._cells[key] = dict(out)
        return self._cells[key]

    def _class(self, key: SliceKey, row: int) -> tuple[int, bool]:
        """A row's system class; a time (lower is better) compares at the same count only."""
        t = self.index.table
        memo = (int(t.system.codes[row]), int(t.count[row]))
        if memo not in self._systems:
            self._systems[memo] = system_class(t, row)
        per, multi = self._systems[memo]
        if not self.index.higher_is_better(key):
            return int(t.count[row]), multi
        return per, multi

    def age(self, key: SliceKey, at: float) -> str:
        """The benchmark's age at round ``at`` (``age_count``, bucketed by ``age_bucket``)."""
        return age_bucket(self.age_count(key, at))

    def age_count(self, key: SliceKey, at: float) -> int:
        """The benchmark's published rounds since the one that introduced it (the catalogue's
        ``introduced``) up to round ``at``; where the catalogue does not say, its held rounds
        before ``at`` (``MATURE`` where it is in the family's oldest held round: it began
        earlier). A redefined benchmark counts from its former workload's first round: the same
        model on another dataset, its software as old."""
        introduced = introduced_round(key[0], model_name(key[1]))
        if introduced is not None and at > 0:  # a row with no round: as below
            return rounds_after(key[0], introduced, at)
        if self._first is None:
            first: dict[tuple[str, ...], float] = {}
            for k in self.index.slices:
                for r in self.rounds(k)[:1]:
                    model = (k[0], model_name(k[1]))
                    first[model] = min(first.get(model, r), r)
                    first[k[:1]] = min(first.get(k[:1], r), r)
            self._first = first
        begun = self._first.get((key[0], model_name(key[1])), at)
        if begun <= self._first.get(key[:1], 0.0):
            return MATURE
        if not self._held:
            held: dict[tuple[str, ...], set[float]] = defaultdict(set)
            for k in self.index.slices:
                held[(k[0], model_name(k[1]))].update(self.rounds(k))
            self._held = {k: sorted(v) for k, v in held.items()}
        return sum(1 for r in self._held.get((key[0], model_name(key[1])), []) if r < at)

    def rounds(self, key: SliceKey) -> list[float]:
        """The published rounds the slice holds (those of its ``cells``, read off its rows
        without grouping them: ``age_count`` asks it of every slice)."""
        if key not in self._rounds:
            every = list(self.index.slices.get(key, {}).values())
            held = self.index.round_no[np.concatenate(every)] if every else np.empty(0)
            self._rounds[key] = [float(r) for r in np.unique(held[held > 0])]
        return self._rounds[key]

    def reference_rounds(self, key: SliceKey, rows: np.ndarray) -> dict[float, int]:
        """Round → how many of the slice's accelerators have ``rows`` as their newest among
        them (each accelerator's evidence counted at its newest round)."""
        if key not in self._owners:
            by_acc = self.index.slices.get(key, {})
            every = [r for r in by_acc.values()]
            self._owners[key] = (
                np.concatenate(every) if every else np.empty(0, dtype=np.int64),
                np.repeat(np.arange(len(every)), [len(r) for r in every]),
            )
        members, owner = self._owners[key]
        hit = np.isin(members, rows)
        if not hit.any():
            return {}
        newest: dict[int, float] = {}
        for acc, rnd in zip(owner[hit].tolist(), self.index.round_no[members[hit]].tolist()):
            newest[acc] = max(newest.get(acc, -math.inf), float(rnd))
        out: dict[float, int] = defaultdict(int)
        for rnd in newest.values():
            out[rnd] += 1
        return dict(out)

    def pairs(self, key: SliceKey, old: float, new: float) -> list[tuple[str, float]]:
        """(accelerator, log value ratio new/old) of each system class in both rounds (kept:
        every candidate of a slice asks the same; callers do not change the list)."""
        memo = (key, old, new)
        if memo not in self._pairs:
            self._pairs[memo] = [
                (cell[0], math.log(by[new] / by[old]))
                for cell, by in self.cells(key).items()
                if old in by and new in by and by[old] > 0
            ]
        return self._pairs[memo]

    def between(self, q: Query, old: float, new: float) -> Drift | None:
        """The drift of the query's slice from round ``old`` to ``new`` (``new`` may be beyond
        the rounds held: then the prior's forecast from the slice's newest round on)."""
        if new == old:
            return None
        key = q.slice
        held = self.rounds(key)
        now = held[-1] if held else old
        # the prior of the steps known by round ``new`` (those ending there included): a carry
        # to a held round never learns from rounds after it (a later round imported had moved
        # every earlier answer by its own step)
        known = math.nextafter(max(old, new), math.inf)
        if new > now:  # beyond the knowledge base: carry to now, then the prior ahead
            to_now = self.between(q, old, now)
            ahead = self.prior.forecast(q, now, new, until=known, padded=True)
            return ahead if to_now is None else combine(to_now, ahead)
        own = [v for _, v in self.pairs(key, old, new)]
        steps = [r for r in held if min(old, new) < r < max(old, new)]
        if not own and steps:  # through the rounds between, each step its own pairs or prior
            path = [old, *(steps if new > old else steps[::-1]), new]
            out: Drift | None = None
            for a, b in pairwise(path):
                d = self.between(q, a, b)
                out = d if out is None else (combine(out, d) if d is not None else out)
            return out
        if own:
            lo, hi = quantiles(np.asarray(own), LEVEL_Q) if len(own) >= 2 else (own[0], own[0])
            mid = median(np.asarray(own))
            prior = self.prior.forecast(q, old, new, until=known, padded=True)
            # few pairs: their own spread understates; the prior's band stands beside it
            w = len(own) / (len(own) + PRIOR_WEIGHT_PAIRS)
            return Drift(
                mid,
                min(lo, mid + (1 - w) * (prior.log_lo - prior.log_mid)),
                max(hi, mid + (1 - w) * (prior.log_hi - prior.log_mid)),
                len(own),
                round_label(old),
                round_label(new),
            )
        prior = self.prior.forecast(q, old, new, until=known, padded=True)
        # no step known by then (a kind first paired after it): nothing to carry by, said by the
        # answer's round, never a 1.000x "learned prior" of no history with a band of none
        return prior if prior.pairs else None

    def shift(self, key: SliceKey, acc: str, old: float, new: float) -> float:
        """The log drift a carry from ``old`` to ``new`` would apply to ``acc`` on the slice,
        learned without it: the other parts' pairs, else the prior of the steps before ``new``
        (0 for our own measurements). The residual replays take it out, so an interval measures
        what is left once the drift is carried."""
        if old <= 0 or new <= old:
            return 0.0
        others = [v for a, v in self.pairs(key, old, new) if a != acc]
        if others:
            return median(np.asarray(others))
        vendor = accelerator_class(self.index.raw_names.get(acc, acc))
        group = benchmark_group(key[0], key[1])
        kind = metric_kind(key, self.index.higher_is_better(key))
        mid, _, _, pairs, _ = self.prior.cell(kind, group, self.age(key, old), vendor, until=new)
        if not pairs:
            return 0.0
        return (
            orientation(self.index.higher_is_better(key)) * mid * rounds_between(key[0], old, new)
        )

    def target(self, q: Query, as_of: str) -> float:
        """The round number an answer is for: the newest round published by today (the
        catalogue's round dates; "today", the default) or by a given ISO date, the slice's newest
        held round ("now"), one published round beyond it ("next"), or a named round.

        Raises:
            InvalidInput: ``as_of`` is neither a word, a date nor a round name.
        """
        return self.slice_target(q.slice, as_of)

    def slice_target(self, key: SliceKey, as_of: str) -> float:
        """``target`` for the slice ``key`` (its family first)."""
        return target_round(key[0], as_of, self.newest(key), self.rounds(key))

    def newest(self, key: SliceKey) -> float:
        """The slice's newest held round; for a slice the knowledge base holds no result of (a
        scenario derived from another one's, Interactive from Server), the newest round of the
        benchmark's other slices, else 0."""
        held = self.rounds(key)
        if held:
            return held[-1]
        if key not in self._newest:
            same = [k for k in self.index.slices if k[:2] == key[:2] and k != key]
            self._newest[key] = max(
                (self.rounds(k)[-1] for k in same if self.rounds(k)), default=0.0
            )
        return self._newest[key]


def combine(a: Drift, b: Drift) -> Drift:
    """Two drifts one after the other: centres added, band half-widths in quadrature."""
    mid = a.log_mid + b.log_mid
    lo = mid - math.hypot(a.log_mid - a.log_lo, b.log_mid - b.log_lo)
    hi = mid + math.hypot(a.log_hi - a.log_mid, b.log_hi - b.log_mid)
    parts = (*(a.parts or (a.describe(),)), *(b.parts or (b.describe(),)))
    return Drift(mid, lo, hi, a.pairs + b.pairs, a.old, b.new, b.cell or a.cell, parts)


def carry(drift: RoundDrift, q: Query, est: Estimate, as_of: str = "today") -> Estimate:
    """``est`` moved from the round(s) of its evidence to the round ``as_of`` names, the factor
    shown; unchanged where its evidence is of that round or of our own measurements."""
    if est.basis is Basis.UNSUPPORTED or est.value is None or not len(est.rows):
        return est
    if any(kind == "stack" and "carried forward" in text for kind, text, _ in est.factors):
        return est  # the stack carry-forward already moved it one round (stack_adjust)
    index = drift.index
    target = drift.target(q, as_of)
    rounds = index.round_no[est.rows]
    if not (rounds > 0).any():
        return est  # our own measurements: of no round
    held = drift.rounds(q.slice)
    if target <= 0 or (held and target < held[0]):
        return Estimate(Basis.UNSUPPORTED, reason=before_first(q.slice, as_of, target, held))
    by_ref = drift.reference_rounds(q.slice, est.rows)
    if not by_ref:  # evidence of another slice (a scenario derived): carried where it was made,
        return est  # never a stack's own result as measured (its round may not have the slice)
    if own_stack(index, q, est):
        return as_measured(est, float(rounds.max()), target)
    if est.basis is Basis.TRANSFERRED:
        # a transfer's efficiency is learned on references of their own rounds (its replays):
        # it stands for the slice's newest round; only a forecast beyond it moves it
        by_ref = {drift.rounds(q.slice)[-1]: 1}
    moves = [(d, n) for old, n in by_ref.items() if (d := drift.between(q, old, target))]
    if not moves:
        return est
    mid, lo_w, hi_w, still = weighted_move(moves, sum(by_ref.values()))
    factor = math.exp(mid)
    assert est.low is not None and est.high is not None
    value = est.value * factor
    # observed, interpolated and every Training interval are replays of the same part from round
    # to round (less the median drift): they hold how far one part strays from the others'
    # drift already, so the drift's band stands beside them, not on top; an inference transfer's
    # (replayed within one round) and the drift's add
    within = est.basis is Basis.TRANSFERRED and q.family != "mlperf-training"
    add = math.hypot if within else max
    low = value * math.exp(-add(math.log(est.value / est.low), lo_w))
    high = value * math.exp(add(math.log(est.high / est.value), hi_w))
    text = "; ".join(d.describe() for d, _ in moves)
    if still > 1e-9:
        text += f"; {still:.0%} of the references are of {round_label(target)} already"
    ahead = target > (drift.rounds(q.slice) or [0.0])[-1]
    kind = "forecast" if ahead else "round drift"
    notes = list(est.notes)
    low, high, notes = held_bound(
        drift.index.higher_is_better(q.slice), est, factor, (low, high), notes
    )
    if ahead:
        notes.append(forecast_note(q, target, target in drift.family_rounds(q.family)))
    earliest = float(rounds[rounds > 0].min())
    if target < earliest and est.basis is not Basis.TRANSFERRED:  # (recommend leaves such out)
        notes.append(
            f"carried back to {round_label(target)} from results of {round_label(earliest)} "
            "on: this configuration had no result by the round asked"
        )
    return replace(
        est,
        value=value,
        low=low,
        high=high,
        factors=[*est.factors, (kind, text, factor)],
        notes=notes,
    )


MOVED_BY = ("forecast", "round drift")  # the factors ``carry`` moves a figure between rounds by


def moved(est: Estimate) -> bool:
    """Whether ``carry`` moved ``est`` off the figures it was made from (a round drift or a
    forecast): an observed figure so moved is no longer what was measured."""
    return any(kind in MOVED_BY for kind, _, _ in est.factors)


def before_first(key: SliceKey, as_of: str, target: float, held: list[float]) -> str:
    """Why no figure is given for a round before the slice ``key``'s first held one (or a date
    before every round the catalogue dates): results are carried between rounds, never back
    before the benchmark's first."""
    if target <= 0:
        undated = [r for r in held if published_on(key[0], r) is None]
        dated = sorted(round_number(r.id) for r in load_rounds() if r.family == key[0])
        if undated and dated and undated[0] < dated[0]:
            # rounds held that the catalogue gives no day: published before its first dated
            # one, but whether by the day asked is not known
            first = dated[0]
            return (
                f"as_of {as_of!r}: the catalogue dates no round of {key[0]} before "
                f"{round_label(first)} ({published_on(key[0], first)}); the knowledge base holds "
                + ", ".join(round_label(r) for r in undated if r < first)
                + ", undated: name the round (as_of: "
                + round_label(max(r for r in undated if r < first))
                + ")"
            )
        return f"as_of {as_of!r}: no round of {key[0]} was published by then"
    what = " ".join(filter(None, key[1:3]))  # a Training slice has no scenario
    return (
        f"as_of {as_of!r} names {round_label(target)}, before {what}'s first round in the "
        f"knowledge base ({round_label(held[0])}): no figure for a round before it"
    )


def own_stack(index: DriftIndex, q: Query, est: Estimate) -> bool:
    """Whether ``est`` is made of results of the very stack ``q`` names (by components, or by
    id where they cannot tell it apart: ``Query.stacks``): observed (its rows are those
    ``matching`` kept for the query, so nothing to check again), or interpolated from its own
    results at other counts."""
    named = q.components or q.stacks
    if not named or est.basis not in (Basis.OBSERVED, Basis.INTERPOLATED):
        return False
    if est.basis is Basis.OBSERVED:
        return True
    rows = index.matching(est.rows, q, any_count=True, any_placement=True)
    return len(rows) == len(est.rows)


AS_MEASURED = "as measured with this stack in "  # the head of ``as_measured``'s note


def is_as_measured(note: str) -> bool:
    """Whether ``note`` is ``as_measured``'s (a stack's own result not moved between rounds)."""
    return note.startswith(AS_MEASURED)


def as_measured(est: Estimate, measured: float, target: float) -> Estimate:
    """A query naming the stack a result ran (its observed basis): that stack's own result, as
    measured in its round. The rounds' drift is newer software, which this stack is not, so it
    is not applied (carried, an H200's TensorRT 10.2 result of v4.1 ranked above its own
    TensorRT 10.11 result of v5.1); the note says so where the round asked is another."""
    if measured == target:
        return replace(est, measured_round=measured)
    when = (
        f"{AS_MEASURED}{round_label(measured)}"
        if measured < target
        else f"{AS_MEASURED}{round_label(measured)}, after the round asked ({round_label(target)})"
    )
    note = (
        f"{when}: a stack's own result is not moved by the rounds' drift, which newer software "
        "makes; name no stack, or a newer one, for what the part does in "
        f"{round_label(target)}"
    )
    return replace(est, notes=[*est.notes, note], measured_round=measured)


def held_bound(
    hib: bool, est: Estimate, factor: float, ends: tuple[float, float], notes: list[str]
) -> tuple[float, float, list[str]]:
    """An interval a transfer held to the part's peaks (``transferred``): the bound is the
    references' best efficiency at the part's peaks in their round (with the headroom replayed
    transfers showed beyond it, ``transfer_replay.peak_headroom``), and the round's software moves
    that efficiency as it moves every figure, so the bound is carried with the interval's end
    (centre and band); the note names both figures. Holding the carried end to the drift's centre
    alone took the v4.1 -> v5.1 transfers' 80% coverage from 0.82 to 0.57 (docs/accuracy.md)."""
    held = [n for n in notes if n.startswith(HELD)]
    if not held or est.low is None or est.high is None:
        return ends[0], ends[1], notes
    before, after = (est.high, ends[1]) if hib else (est.low, ends[0])
    each = " per accelerator" if hib else ""  # a throughput's bound: per accelerator
    text = (
        f"{HELD}{figure_text(after)}{each} at best), its bound in the references' round, "
        f"{figure_text(before)}, "
        f"carried by the round's software drift (centre {factor:.3g}x and its 80% band)"
    )
    return ends[0], ends[1], [text if n in held else n for n in notes]


def forecast_note(q: Query, target: float, held: bool = False) -> str:
    """Why an answer is a forecast: the round it is for lies beyond what the knowledge base holds
    for the benchmark (published by then, per the catalogue's dates, or asked for by name);
    ``held``: the knowledge base holds that round's results of other benchmarks of the family
    (this one did not run in it, as far as it knows)."""
    day = published_on(q.family, target)
    when = ""
    if held:
        what = " ".join(filter(None, (q.benchmark, q.scenario)))
        when = f" (the knowledge base holds it, without {what} results)"
    elif day and day <= today():
        when = f" (published {day.isoformat()}, not imported)"
    return (
        f"a forecast for {round_label(target)}{when}, beyond the newest round the knowledge base "
        "holds for this benchmark: the interval spans at least the learned round-ahead spread; "
        "as_of 'now' answers for the newest round held"
    )


def weighted_move(moves: list[tuple[Drift, int]], total: int) -> tuple[float, float, float, float]:
    """(log centre, low and high band half-widths, share not moved) of evidence of several
    rounds, each round's drift weighted by its share of the ``total`` references."""
    weights = [n / total for _, n in moves]
    mid = sum(w * d.log_mid for (d, _), w in zip(moves, weights))
    lo_w = math.sqrt(sum(w * (d.log_mid - d.log_lo) ** 2 for (d, _), w in zip(moves, weights)))
    hi_w = math.sqrt(sum(w * (d.log_hi - d.log_mid) ** 2 for (d, _), w in zip(moves, weights)))
    return mid, lo_w, hi_w, 1 - sum(weights)


def answer_round(
    drift: RoundDrift, q: Query, as_of: str = "today", est: Estimate | None = None
) -> str | None:
    """The round an answer for ``q`` is of (its label: 'v5.1'), for the answer to say so: the
    round a stack's own result was measured in (``as_measured``), else the one ``as_of``
    names; None where the slice holds no published round."""
    return slice_round(drift, q.slice, as_of, est)


def slice_round(
    drift: RoundDrift, key: SliceKey, as_of: str, est: Estimate | None = None
) -> str | None:
    """``answer_round`` for the slice ``key`` (a ranking's rows, which keep no query)."""
    if est is not None and est.measured_round:
        return round_label(est.measured_round)
    target = drift.slice_target(key, as_of)
    return round_label(target) if target > 0 else None
