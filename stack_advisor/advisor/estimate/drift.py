"""Round drift: what time an estimate is for.

The knowledge base's "now" for a benchmark slice is the newest round holding it. Evidence from an
older round is carried to now through the drift the parts present in both rounds show (same
slice, comparable system class: accelerators per node, single or multi-node): the median of
those pairs' log ratios, their spread in the interval, the pairs and rounds shown in the
answer (``carry``). Where no part is in both rounds, and for a round beyond the newest (``as_of``
"next" or a round name: a forecast that many published rounds ahead), the drift comes from a
prior learned on every held round-to-round step of every slice: the per-round log drift of the
pairs, pooled by benchmark group (LLM, vision, recommendation, speech, graph, training), the
benchmark's age (held rounds since its first) and the part's vendor, falling back to coarser
cells where a cell has few pairs (``DriftPrior``). The prior's 80% band is calibrated on its own
round-ahead replays: every step of the history predicted from the steps before it, one scale for
all steps (``DriftPrior.scale``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise
from typing import Protocol

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.query import Estimate, Query, SliceKey
from stack_advisor.advisor.estimate.stack_effect import rounds_between
from stack_advisor.advisor.knowledge.table import ObservationTable, round_number
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.rounds import load_rounds
from stack_advisor.schema.errors import InvalidInput

LEVEL_Q = (0.1, 0.9)
MIN_PRIOR_PAIRS = 8  # a prior cell with fewer pairs gives way to the coarser one
RECENCY = 0.5  # an older round's steps weigh this much of the next newer round's
AS_OF_WORDS = ("now", "next")


class DriftIndex(Protocol):
    """What the drift reads of ``stack_advisor.advisor.estimate.index.EvidenceIndex``."""

    table: ObservationTable
    slices: dict[SliceKey, dict[str, np.ndarray]]
    unit: np.ndarray
    round_no: np.ndarray
    raw_names: dict[str, str]

    def higher_is_better(self, key: SliceKey) -> bool: ...


@dataclass(frozen=True)
class Drift:
    """A value multiplier from round ``old`` to ``new`` with its 80% band (log p10/p90 of the
    value ratio), from ``pairs`` parts in both rounds or from the learned prior (``cell``)."""

    log_mid: float
    log_lo: float
    log_hi: float
    pairs: int
    old: str
    new: str
    cell: str = ""  # the prior cell; "" when from this slice's own pairs
    parts: tuple[str, ...] = ()  # the steps a chained drift is made of, described

    def describe(self) -> str:
        if self.parts:
            whole = f"{self.old} -> {self.new}: {math.exp(self.log_mid):.3f}x"
            band = f"80% {math.exp(self.log_lo):.2f}-{math.exp(self.log_hi):.2f}x"
            return f"{whole} ({band}) = " + " then ".join(self.parts)
        ratio = math.exp(self.log_mid)
        band = f"80% {math.exp(self.log_lo):.2f}-{math.exp(self.log_hi):.2f}x"
        if self.cell:
            return (
                f"{self.old} -> {self.new}: {ratio:.3f}x ({band}), learned prior ({self.cell}; "
                f"{self.pairs} pairs of earlier rounds)"
            )
        return (
            f"{self.old} -> {self.new}: {ratio:.3f}x ({band}) from {self.pairs} parts "
            "in both rounds on this benchmark"
        )


def round_label(number: float) -> str:
    return f"v{number:.1f}" if number > 0 else "measured"


@lru_cache(maxsize=64)
def benchmark_group(family: str, benchmark: str) -> str:
    """The prior's benchmark group: training, llm, vision, recommendation, speech, graph, other."""
    if family == "mlperf-training":
        return "training"
    match = resolve_benchmark(benchmark)
    entry = (
        load_catalog().benchmark(match.family or family, match.base or match.id)
        if match.resolved
        else None
    )
    if entry is None:
        return "other"
    task = (entry.task or "").lower()
    if entry.tokens and "speech" not in task:
        return "llm"
    for word, group in (
        ("speech", "speech"),
        ("recommend", "recommendation"),
        ("graph", "graph"),
        ("image", "vision"),
        ("detection", "vision"),
        ("segmentation", "vision"),
        ("video", "vision"),
    ):
        if word in task:
            return group
    return "other"


def system_class(table: ObservationTable, row: int) -> tuple[int, bool]:
    """(accelerators per node, multi-node) of a row: as published, else its count on one node."""
    nodes, per_node, _ = (table.system.vocab[int(table.system.codes[row])] or ("", "", ""))[:3]
    n_nodes = int(nodes) if str(nodes).isdigit() else 1
    per = int(per_node) if str(per_node).isdigit() and int(per_node) > 0 else 0
    if not per:
        per = max(int(table.count[row]) // max(n_nodes, 1), 1)
    return per, n_nodes > 1


class RoundDrift:
    """The drift of one index's table: per-slice pairs, the prior, carrying and forecasting."""

    def __init__(self, index: DriftIndex) -> None:
        self.index = index
        self._cells: dict[SliceKey, dict[tuple[str, int, bool], dict[float, float]]] = {}
        self._rounds: dict[SliceKey, list[float]] = {}
        self._first: dict[tuple[str, ...], float] | None = None
        self._prior: DriftPrior | None = None

    @property
    def prior(self) -> DriftPrior:
        if self._prior is None:
            self._prior = DriftPrior(self)
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
        per, multi = system_class(t, row)
        if not self.index.higher_is_better(key):
            return int(t.count[row]), multi
        return per, multi

    def age(self, key: SliceKey, at: float) -> str:
        """The benchmark's age at round ``at``: its held rounds before it (``age_bucket``). A
        benchmark already in the family's oldest held round began earlier: counted as mature."""
        if self._first is None:
            first: dict[tuple[str, ...], float] = {}
            for k in self.index.slices:
                for r in self.rounds(k)[:1]:
                    first[k[:2]] = min(first.get(k[:2], r), r)
                    first[k[:1]] = min(first.get(k[:1], r), r)
            self._first = first
        begun = self._first.get(key[:2], at)
        if begun <= self._first.get(key[:1], 0.0):
            return "2+"
        seen = {r for k in self.index.slices if k[:2] == key[:2] for r in self.rounds(k)}
        return age_bucket(sum(1 for r in seen if r < at))

    def rounds(self, key: SliceKey) -> list[float]:
        if key not in self._rounds:
            self._rounds[key] = sorted({r for c in self.cells(key).values() for r in c})
        return self._rounds[key]

    def pairs(self, key: SliceKey, old: float, new: float) -> list[tuple[str, float]]:
        """(accelerator, log value ratio new/old) of each system class in both rounds."""
        return [
            (cell[0], math.log(by[new] / by[old]))
            for cell, by in self.cells(key).items()
            if old in by and new in by and by[old] > 0
        ]

    def between(self, q: Query, old: float, new: float) -> Drift | None:
        """The drift of the query's slice from round ``old`` to ``new`` (``new`` may be beyond
        the rounds held: then the prior's forecast from the slice's newest round on)."""
        if new == old:
            return None
        key = q.slice
        held = self.rounds(key)
        now = held[-1] if held else old
        if new > now:  # beyond the knowledge base: carry to now, then the prior ahead
            to_now = self.between(q, old, now)
            ahead = self.prior.forecast(q, now, new)
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
            prior = self.prior.forecast(q, old, new)
            # few pairs: their own spread understates; the prior's band stands beside it
            w = len(own) / (len(own) + 4)
            return Drift(
                mid,
                min(lo, mid + (1 - w) * (prior.log_lo - prior.log_mid)),
                max(hi, mid + (1 - w) * (prior.log_hi - prior.log_mid)),
                len(own),
                round_label(old),
                round_label(new),
            )
        return self.prior.forecast(q, old, new)

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
        mid, _, _, pairs, _ = self.prior.cell(group, self.age(key, old), vendor, until=new)
        return mid * rounds_between(key[0], old, new) if pairs else 0.0

    def target(self, q: Query, as_of: str) -> float:
        """The round number an answer is for: the slice's newest held round ("now"), one
        published round beyond it ("next"), or a named round.

        Raises:
            InvalidInput: ``as_of`` is neither a word nor a round name.
        """
        held = self.rounds(q.slice)
        now = held[-1] if held else 0.0
        text = (as_of or "now").strip().lower()
        if text == "now":
            return now
        if text == "next":
            return next_round(q.family, now)
        number = round_number(text)
        if math.isnan(number):
            raise InvalidInput(
                f"as_of: {as_of!r} is not 'now', 'next' or a round name such as 'v6.0'"
            )
        return number


def as_of_error(as_of: str) -> str | None:
    """Why ``as_of`` names no round (None when it does): for a query's refusal."""
    text = (as_of or "now").strip().lower()
    if text in AS_OF_WORDS or not math.isnan(round_number(text)):
        return None
    return f"as_of: {as_of!r} is not 'now', 'next' or a round name such as 'v6.0'"


def next_round(family: str, after: float) -> float:
    """The published round after ``after`` (the catalogue's rounds), else the next minor one."""
    listed = sorted(
        n for n in (round_number(r.id) for r in load_rounds() if r.family == family) if n > after
    )
    return listed[0] if listed else round(after + 0.1, 1)


def combine(a: Drift, b: Drift) -> Drift:
    """Two drifts one after the other: centres added, band half-widths in quadrature."""
    mid = a.log_mid + b.log_mid
    lo = mid - math.hypot(a.log_mid - a.log_lo, b.log_mid - b.log_lo)
    hi = mid + math.hypot(a.log_hi - a.log_mid, b.log_hi - b.log_mid)
    parts = (*(a.parts or (a.describe(),)), *(b.parts or (b.describe(),)))
    return Drift(mid, lo, hi, a.pairs + b.pairs, a.old, b.new, b.cell or a.cell, parts)


def carry(drift: RoundDrift, q: Query, est: Estimate, as_of: str = "now") -> Estimate:
    """``est`` moved from the round(s) of its evidence to the round ``as_of`` names, the factor
    shown; unchanged where its evidence is of that round or of our own measurements."""
    if est.basis is Basis.UNSUPPORTED or est.value is None or not len(est.rows):
        return est
    if any(kind == "stack" and "carried forward" in text for kind, text, _ in est.factors):
        return est  # the stack carry-forward already moved it one round (stack_adjust)
    index = drift.index
    target = drift.target(q, as_of)
    rounds = index.round_no[est.rows]
    if not (rounds > 0).any() or target <= 0:
        return est
    by_ref: dict[float, int] = defaultdict(int)
    for rows in index.slices.get(q.slice, {}).values():
        mine = np.intersect1d(rows, est.rows, assume_unique=False)
        if len(mine):
            by_ref[float(index.round_no[mine].max())] += 1
    if not by_ref:  # evidence of another slice (a scenario derived): carried where it was made
        return est
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
    if ahead:
        notes.append(
            f"a forecast for {round_label(target)}, beyond the newest round the knowledge base "
            "holds for this benchmark: the interval is widened by the learned round-ahead spread"
        )
    return replace(
        est,
        value=value,
        low=low,
        high=high,
        factors=[*est.factors, (kind, text, factor)],
        notes=notes,
    )


def weighted_move(moves: list[tuple[Drift, int]], total: int) -> tuple[float, float, float, float]:
    """(log centre, low and high band half-widths, share not moved) of evidence of several
    rounds, each round's drift weighted by its share of the ``total`` references."""
    weights = [n / total for _, n in moves]
    mid = sum(w * d.log_mid for (d, _), w in zip(moves, weights))
    lo_w = math.sqrt(sum(w * (d.log_mid - d.log_lo) ** 2 for (d, _), w in zip(moves, weights)))
    hi_w = math.sqrt(sum(w * (d.log_hi - d.log_mid) ** 2 for (d, _), w in zip(moves, weights)))
    return mid, lo_w, hi_w, 1 - sum(weights)


def answer_round(drift: RoundDrift, q: Query, as_of: str = "now") -> str | None:
    """The round an answer for ``q`` is of (its label: 'v5.1'), for the answer to say so; None
    where the slice holds no published round."""
    target = drift.target(q, as_of)
    return round_label(target) if target > 0 else None


class DriftPrior:
    """Per-round log drift of parts between consecutive held rounds of every slice, pooled by
    (group, age, vendor) with coarser fallbacks, and the band's calibrated scale."""

    def __init__(self, drift: RoundDrift) -> None:
        self.drift = drift
        # (group, age bucket, vendor, new round number, per-round log drift)
        self.steps: list[tuple[str, str, str, float, float]] = []
        self._collect()
        self._cache: dict[tuple[str, str, str, float], tuple[float, float, float, int, str]] = {}
        self.scale = self._calibrate()

    def _collect(self) -> None:
        idx = self.drift.index
        for key in idx.slices:
            held = self.drift.rounds(key)
            group = benchmark_group(key[0], key[1])
            for old, new in pairwise(held):
                n = rounds_between(key[0], old, new)
                age = self.drift.age(key, old)
                for acc, log_ratio in self.drift.pairs(key, old, new):
                    vendor = accelerator_class(idx.raw_names.get(acc, acc))
                    self.steps.append((group, age, vendor, new, log_ratio / n))

    def cell(
        self, group: str, age: str, vendor: str, until: float = math.inf
    ) -> tuple[float, float, float, int, str]:
        """(median, p10, p90, pairs, cell name) of the per-round drift of steps ending before
        ``until``, narrowest cell with enough pairs first."""
        memo = (group, age, vendor, until)
        if memo in self._cache:
            return self._cache[memo]
        tries = (
            ((group, age, vendor), f"{group}, age {age}, {vendor}"),
            ((group, age, None), f"{group}, age {age}"),
            ((group, None, None), group),
            ((None, None, None), "every benchmark"),
        )
        out = (0.0, 0.0, 0.0, 0, "no history")
        for (g, a, v), name in tries:
            chosen = [
                (s[3], s[4])
                for s in self.steps
                if s[3] < until
                and (g is None or s[0] == g)
                and (a is None or s[1] == a)
                and (v is None or s[2] == v)
            ]
            if len(chosen) >= MIN_PRIOR_PAIRS:
                mid, lo, hi = recent_quantiles(chosen)
                out = (mid, lo, hi, len(chosen), name)
                break
        self._cache[memo] = out
        return out

    def forecast(self, q: Query, old: float, new: float, until: float = math.inf) -> Drift:
        """The prior's drift of ``q``'s slice from round ``old`` to ``new``."""
        n = rounds_between(q.family, old, new) if new > old else 1
        group = benchmark_group(q.family, q.benchmark)
        age = self.drift.age(q.slice, old)
        vendor = accelerator_class(q.raw_accelerator or q.accelerator)
        mid, lo, hi, pairs, name = self.cell(group, age, vendor, until)
        sign = 1.0 if new >= old else -1.0
        s = self.scale if until == math.inf else 1.0
        return Drift(
            sign * mid * n,
            sign * mid * n - s * (mid - lo) * math.sqrt(n),
            sign * mid * n + s * (hi - mid) * math.sqrt(n),
            pairs,
            round_label(old),
            round_label(new),
            cell=name,
        )

    def _calibrate(self) -> float:
        """The scale of the prior's band that covers 80% of the pairs of every held step when
        each step is predicted from the steps before it (one scale for all steps)."""
        z: list[float] = []
        for group, age, vendor, new, value in self.steps:
            mid, lo, hi, pairs, _ = self.cell(group, age, vendor, until=new)
            if not pairs:
                continue
            width = (mid - lo) if value < mid else (hi - mid)
            z.append(abs(value - mid) / max(width, 1e-3))
        if len(z) < MIN_PRIOR_PAIRS:
            return 1.0
        return max(1.0, float(np.quantile(np.asarray(z), 0.8)))


def recent_quantiles(steps: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Weighted median, p10 and p90 of (round, value) pairs, each older round's pairs weighing
    ``RECENCY`` times the next newer round's: how fields drift changes with their era (the early
    rounds' software gains are not today's), so the prior follows the latest steps it holds."""
    order = sorted({r for r, _ in steps}, reverse=True)
    rank = {r: i for i, r in enumerate(order)}
    values = np.asarray([v for _, v in steps])
    weights = np.asarray([RECENCY ** rank[r] for r, _ in steps])
    idx = np.argsort(values)
    cum = np.cumsum(weights[idx]) / weights.sum()

    def at(p: float) -> float:
        return float(values[idx][min(int(np.searchsorted(cum, p)), len(idx) - 1)])

    return at(0.5), at(LEVEL_Q[0]), at(LEVEL_Q[1])


def age_bucket(held_before: int) -> str:
    """A benchmark's age at a step: its first held round, its second, or older."""
    return "0" if held_before <= 0 else ("1" if held_before == 1 else "2+")
