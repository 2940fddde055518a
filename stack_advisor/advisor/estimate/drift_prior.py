"""The round drift's prior: how far parts moved from one held round to the next, pooled by
what the figures are, benchmark group, age and vendor (``DriftPrior``), and the ``Drift`` a carry
or a forecast applies. See ``stack_advisor.advisor.estimate.drift``."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Protocol

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.query import Query, SliceKey
from stack_advisor.advisor.estimate.stack_effect import rounds_between
from stack_advisor.advisor.knowledge.table import ObservationTable, round_number
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.entries import BenchmarkEntry

LEVEL_Q = (0.1, 0.9)
MIN_PRIOR_PAIRS = 8  # a prior cell with fewer pairs gives way to the coarser one
MATURE = 99  # a benchmark's held rounds before a step where it began before the oldest held
RECENCY = 0.5  # an older round's steps weigh this much of the next newer round's


class DriftIndex(Protocol):
    """What the drift reads of ``stack_advisor.advisor.estimate.index.EvidenceIndex``."""

    table: ObservationTable
    slices: dict[SliceKey, dict[str, np.ndarray]]
    unit: np.ndarray
    round_no: np.ndarray
    raw_names: dict[str, str]

    def higher_is_better(self, key: SliceKey) -> bool: ...

    def matching(
        self, rows: np.ndarray, q: Query, *, any_count: bool = False, any_placement: bool = False
    ) -> np.ndarray: ...


class PriorSource(Protocol):
    """What the prior reads of ``stack_advisor.advisor.estimate.drift.RoundDrift``."""

    @property
    def index(self) -> DriftIndex: ...

    def rounds(self, key: SliceKey) -> list[float]: ...

    def pairs(self, key: SliceKey, old: float, new: float) -> list[tuple[str, float]]: ...

    def age(self, key: SliceKey, at: float) -> str: ...

    def age_count(self, key: SliceKey, at: float) -> int: ...


# (kind, group, age bucket, vendor, new round number, per-round log improvement)
Step = tuple[str, str, str, str, float, float]


@dataclass(frozen=True)
class PriorState:
    """What a learned prior is (its steps in the order collected, its band's pads per group):
    a function of the table, persisted beside the calibration
    (``stack_advisor.advisor.estimate.calibration_file.PriorFile``) so that a fresh process does
    not pair every slice's rounds again."""

    steps: tuple[Step, ...]
    pad: dict[str, float]  # log units added to each side of a group's band (``_calibrate``)


class PriorShelf(Protocol):
    """Where a prior is kept between processes: ``load`` gives the state persisted for this
    table (None: none yet, off, unreadable), ``save`` keeps one."""

    def load(self) -> PriorState | None: ...

    def save(self, state: PriorState) -> None: ...


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


def catalogue_benchmark(family: str, benchmark: str) -> BenchmarkEntry | None:
    """The catalogue's entry of ``benchmark`` as ``family`` names it (an open-division variant:
    its base's), None where the catalogue does not know it."""
    match = resolve_benchmark(benchmark, family)
    if not match.resolved:
        return None
    return load_catalog().benchmark(match.family or family, match.base or match.id)


@lru_cache(maxsize=64)
def benchmark_group(family: str, benchmark: str) -> str:
    """The prior's benchmark group: training, llm, vision, recommendation, speech, graph, other."""
    if family == "mlperf-training":
        return "training"
    entry = catalogue_benchmark(family, benchmark)
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


@lru_cache(maxsize=256)
def introduced_round(family: str, benchmark: str) -> float | None:
    """The round number whose results first hold ``benchmark`` (the catalogue's ``introduced``;
    None where it does not say)."""
    entry = catalogue_benchmark(family, benchmark)
    if entry is None or entry.introduced is None:
        return None
    return round_number(entry.introduced.round)


# how many of a slice's own pairs weigh as much as a prior they are combined with (the prior's
# band beside few pairs in ``drift.RoundDrift.between``; the framework's upgrade factor beside a
# slice's round drift in ``stack_adjust``)
PRIOR_WEIGHT_PAIRS = 4

# a latency measured under a throughput scenario's load (an LLM's time to first token and time per
# output token in Server and Interactive): where the submitter's load put it below the scenario's
# limit, not how fast a part answers a query
SERVING_LATENCY = ("ttft_", "tpot_")
SERVED_SCENARIOS = ("Server", "Interactive")  # a SingleStream TTFT answers one query at a time


def metric_kind(key: SliceKey, higher_is_better: bool) -> str:
    """What a slice's (family, benchmark, scenario, metric, ...) figures are, for the prior:
    throughputs, times to train, latencies, or serving latencies (``SERVING_LATENCY``).

    A latency at a scenario's limit moves apart from the throughput it was measured with, and a
    serving latency apart from a single-stream one: newer software answers one query sooner, but
    runs a served load nearer the limit (on the shared rounds, v4.1 -> v5.1, LLM p99 TTFT rose a
    median 1.26x on the same parts while the single-stream latencies of the rounds before fell:
    their drift had moved the TTFT answers the wrong way)."""
    if higher_is_better:
        return "throughput"
    if key[0] == "mlperf-training":
        return "time to train"
    served = key[3].startswith(SERVING_LATENCY) and key[2] in SERVED_SCENARIOS
    return "serving latency" if served else "latency"


def orientation(higher_is_better: bool) -> float:
    """+1 where a larger figure is better: the prior holds improvements, a lower-is-better
    figure moves by their inverse."""
    return 1.0 if higher_is_better else -1.0


class DriftPrior:
    """Per-round log improvement of parts between consecutive held rounds of every slice, pooled
    by (metric kind, group, age, vendor) with coarser fallbacks within the kind, and the band's
    calibrated pad."""

    def __init__(self, drift: PriorSource, state: PriorState | None = None) -> None:
        """Learned from ``drift``'s slices, or restored from ``state`` (learned earlier from the
        same table: the same steps in the same order, the same pads)."""
        self.drift = drift
        self._cache: dict[tuple[str, str, str, str, float], Cell] = {}
        self._pads: dict[float, dict[str, float]] = {}  # ``pad_for`` before a held round
        self._last: float | None = None  # the newest step's round
        self.steps: list[Step] = []
        if state is not None:
            self.steps = list(state.steps)
            self.pad = dict(state.pad)
            return
        self._collect()
        self.pad = self._calibrate()

    @classmethod
    def kept(cls, drift: PriorSource, shelf: PriorShelf | None) -> DriftPrior:
        """The prior of ``drift``'s table: restored from ``shelf`` when it holds one, else
        learned and put there."""
        state = shelf.load() if shelf is not None else None
        prior = cls(drift, state)
        if shelf is not None and state is None:
            shelf.save(prior.state())
        return prior

    def state(self) -> PriorState:
        """What ``DriftPrior(drift, state)`` restores this prior from."""
        return PriorState(tuple(self.steps), dict(self.pad))

    def _collect(self) -> None:
        idx = self.drift.index
        for key in idx.slices:
            if key[4] not in ("closed", ""):
                continue  # an open division's model changes with its rounds: no drift to learn
            held = self.drift.rounds(key)
            group = benchmark_group(key[0], key[1])
            hib = idx.higher_is_better(key)
            kind, sign = metric_kind(key, hib), orientation(hib)
            for old, new in pairwise(held):
                n = rounds_between(key[0], old, new)
                age = self.drift.age(key, old)
                for acc, log_ratio in self.drift.pairs(key, old, new):
                    vendor = accelerator_class(idx.raw_names.get(acc, acc))
                    self.steps.append((kind, group, age, vendor, new, sign * log_ratio / n))

    def cell(self, kind: str, group: str, age: str, vendor: str, until: float = math.inf) -> Cell:
        """(median, p10, p90, pairs, cell name) of the per-round improvement of ``kind`` figures
        in steps ending before ``until``, narrowest cell with enough pairs first."""
        memo = (kind, group, age, vendor, until)
        if memo in self._cache:
            return self._cache[memo]
        if group == "*":  # every group at one age, for the width of a group's band
            tries: tuple[tuple[tuple[str | None, ...], str], ...] = (
                ((None, age, None), f"age {age}"),
            )
        else:
            # a group with few steps at this age takes every group's at it before its own
            # steps of every age: how benchmarks move at an age is the prior's first lesson
            tries = (
                ((group, age, vendor), f"{group}, age {age}, {vendor}"),
                ((group, age, None), f"{group}, age {age}"),
                ((None, age, None), f"every group, age {age}"),
                ((group, None, None), group),
                ((None, None, None), "every benchmark"),
            )
        out: Cell = (0.0, 0.0, 0.0, 0, "no history")
        for (g, a, v), name in tries:
            chosen = [
                (s[4], s[5])
                for s in self.steps
                if s[0] == kind
                and s[4] < until
                and (g is None or s[1] == g)
                and (a is None or s[2] == a)
                and (v is None or s[3] == v)
            ]
            if len(chosen) >= MIN_PRIOR_PAIRS:
                mid, lo, hi = recent_quantiles(chosen)
                out = (mid, lo, hi, len(chosen), f"{name}; {kind}")
                break
        if out[3] and group != "*":
            # a benchmark's own group holds few benchmarks of its age: its band is at least as
            # wide as every group's at that age (how far benchmarks of that age have moved)
            wide = self.cell(kind, "*", age, "*", until)
            if wide[3]:
                mid = out[0]
                out = (
                    mid,
                    min(out[1], mid - (wide[0] - wide[1])),
                    max(out[2], mid + (wide[2] - wide[0])),
                    *out[3:],
                )
        self._cache[memo] = out
        return out

    def forecast(
        self,
        q: Query,
        old: float,
        new: float,
        until: float = math.inf,
        *,
        padded: bool | None = None,
    ) -> Drift:
        """The prior's drift of ``q``'s slice from round ``old`` to ``new``: each published
        round between them one step of the benchmark's age then (a young benchmark's first
        steps move most), centres added, band half-widths in quadrature; learned from the steps
        ending before ``until``, its band widened by the calibrated pad where ``padded`` (by
        default only where every step is read: the replays that calibrate the pad read none)."""
        n = rounds_between(q.family, old, new) if new > old else 1
        group = benchmark_group(q.family, q.benchmark)
        held = self.drift.age_count(q.slice, old)
        vendor = accelerator_class(q.raw_accelerator or q.accelerator)
        hib = self.drift.index.higher_is_better(q.slice)
        kind = metric_kind(q.slice, hib)
        if padded is None:
            padded = until == math.inf
        pad = self.pad_for(group, until) if padded else 0.0
        centre = down2 = up2 = 0.0
        names: list[str] = []
        pairs = 0
        for step in range(max(n, 1)):
            age = age_bucket(held + step)
            mid, lo, hi, count, name = self.cell(kind, group, age, vendor, until)
            centre += mid
            down2 += (mid - lo + pad) ** 2
            up2 += (hi - mid + pad) ** 2
            pairs = max(pairs, count)
            names += [name] if name not in names else []
        down, up = math.sqrt(down2), math.sqrt(up2)
        # the value moves by the improvement (its inverse for a lower-is-better figure), and
        # backwards for a round before ``old``: the band's ends swap with each flip
        if orientation(hib) * (1.0 if new >= old else -1.0) < 0:
            centre, down, up = -centre, up, down
        return Drift(
            centre,
            centre - down,
            centre + up,
            pairs,
            round_label(old),
            round_label(new),
            cell=" then ".join(names),
        )

    def _calibrate(self, until: float = math.inf) -> dict[str, float]:
        """How far to widen the prior's band, per benchmark group (key "" for all), in log units
        on each side: the least that covers 80% of the group's pairs of every held step when each
        step is predicted from the steps before it (one pad for all steps; a group with few
        replays takes the pooled one; never a narrowing).

        Added, not multiplied: a step that moved far beyond a narrow band (young LLM benchmarks
        moved 2-4x in a round where the rounds before had moved 1.05x) would have scaled every
        cell's band by the ratio, a wide cell's into hundreds of times (0.13-395x measured on a
        synthetic next round); added, each cell's band grows by how far steps have landed
        outside bands before."""
        excess: dict[str, list[float]] = defaultdict(list)
        for kind, group, age, vendor, new, value in self.steps:
            if new >= until:
                continue
            mid, lo, hi, pairs, _ = self.cell(kind, group, age, vendor, until=new)
            if not pairs:
                continue
            width = (mid - lo) if value < mid else (hi - mid)
            beyond = max(0.0, abs(value - mid) - width)
            excess[group].append(beyond)
            excess[""].append(beyond)
        pads = {
            group: float(np.quantile(np.asarray(values), 0.8))
            for group, values in excess.items()
            if len(values) >= MIN_PRIOR_PAIRS
        }
        pads.setdefault("", 0.0)
        return pads

    def pad_for(self, group: str, until: float = math.inf) -> float:
        """The pad of ``group``'s band calibrated on the steps ending before ``until`` (every
        step: the one persisted; before a held round: those of the rounds up to it alone)."""
        if self._last is None:
            self._last = max((s[4] for s in self.steps), default=-math.inf)
        if until > self._last:
            pads = self.pad
        else:
            if until not in self._pads:
                self._pads[until] = self._calibrate(until)
            pads = self._pads[until]
        return pads.get(group, pads.get("", 0.0))


Cell = tuple[float, float, float, int, str]


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
    """A benchmark's age at a step: its first round, its second, or older."""
    return "0" if held_before <= 0 else ("1" if held_before == 1 else "2+")
