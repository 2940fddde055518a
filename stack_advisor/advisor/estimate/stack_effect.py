"""What the software stack does to a result, learned from the knowledge base's own pairs.

Two kinds of pair, each a log speed ratio (positive: the second side is faster, whatever the
metric's direction), on the same benchmark slice (family, benchmark, scenario, metric, division)
and the same canonical accelerator:

- **upgrade**: the same framework at two consecutive versions (major.minor, in release order) at
  the same accelerator count: the median per-accelerator figure of each version's latest round.
  Only versions last run in different rounds pair (two versions in one round are two
  submitters, not an upgrade), or versions we measured ourselves (``advisor sweep``: no round).
  A pair's ratio is counted per published round it spans (``StackPair.per_round``): consecutive
  versions in our data lie 1 to 3 rounds apart, and a carry-forward predicts the next round.
  Pooled per (family, vendor, framework) and direction, else per (family, vendor, direction) over
  every framework; the direction (``direction_of``) is throughput or latency (a Server latency
  held under its limit does not move as throughput does) and LLM or not (LLM runtimes moved far
  faster between rounds). Per benchmark was tried and dropped: a benchmark's one earlier step
  (retinanet +22% from v3.0 to v4.1) did not repeat in the next round.
- **class crossing**: results of the same round run with a reference implementation and with an
  optimised runtime (the catalogue's ``software_class``). Pooled per (family, vendor, direction,
  from class, to class), never across vendors (``crossing_scopes``). Only families whose results
  mix both classes are classed (``CLASSED_FAMILIES``): every MLPerf Training submission is its
  submitter's tuned code whatever framework it names, so the class of a training framework says
  nothing about the run.

A factor (``StackFactor``) is the median of its changes (pairs of one accelerator's change
between the same two rounds are one change however many benchmarks it ran: the median of each
change's pairs, then the median over changes) with two intervals: the cluster-bootstrap
interval of that median (changes resampled whole; what ``compare`` reports as the effect) and the
pairs' own p10..p90 (what an estimate that applies the factor is widened by: one more result is as
uncertain as one more pair; applied to class crossings only: an interpolation's interval is already
conformal on its accelerator's moves from round to round). Fewer than ``MIN_PAIRS`` pairs give no
factor, and then nothing is applied: the estimate says so
(``stack_advisor.advisor.estimate.stack_adjust``) or, across classes, is refused with the reason.
``bench/stack_effect.py`` checks the factors on pairs held out.
"""

from __future__ import annotations

import math
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import pairwise

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.protocols import EvidenceIndex
from stack_advisor.advisor.estimate.stack_level import REFERENCE, RowStack, leveled
from stack_advisor.catalog import (
    load_catalog,
    resolve_benchmark,
    resolve_framework_name,
    stack_class,
)
from stack_advisor.catalog.rounds import release_of, rounds_after

MIN_PAIRS = 3
MIN_CLUSTERS = 3  # independent stack changes (``StackPair.cluster``) a cluster bootstrap needs
LEVEL = 0.8
BOOTSTRAP = 1000
CLASSED_FAMILIES = ("mlperf-inference",)
ANY = "*"


@dataclass(frozen=True)
class StackPair:
    """Two results that differ in their stack only (see the module docstring)."""

    family: str
    vendor: str
    benchmark: str
    scenario: str
    metric: str
    # "throughput" (higher is better) or "latency" (lower is better), then "/llm" or "/other"
    direction: str
    accelerator: str
    framework: str  # canonical framework id; for a class crossing, the frameworks of both sides
    old: str  # a version (upgrade) or a software class (crossing)
    new: str
    round_old: float
    round_new: float
    log_ratio: float  # log(speed of new / speed of old)
    rounds: int = 1  # published rounds from the older side's to the newer's (1: next, or our own)

    @property
    def per_round(self) -> float:
        """The log speed ratio per published round it spans: the pairs of an upgrade factor span 1
        to 3 rounds (v3.0 -> v4.1 is three), and what a carry-forward predicts is the next one."""
        return self.log_ratio / self.rounds

    @property
    def cluster(self) -> tuple[str, str, str, float, float]:
        """What moves together: one accelerator's stack change between the same two rounds (the
        same submissions, seen in every benchmark, scenario and count they ran)."""
        return (self.accelerator, self.old, self.new, self.round_old, self.round_new)


@dataclass(frozen=True)
class StackFactor:
    """A speed ratio learned from pairs: ``ratio`` (new over old: > 1 faster), the bootstrap
    interval of that median (``low``..``high``) and the pairs' own spread
    (``spread_low``..``spread_high``)."""

    scope: str
    ratio: float
    low: float
    high: float
    spread_low: float
    spread_high: float
    pairs: int
    changes: int | None = None  # independent stack changes the pairs come from (None: not told)

    @property
    def significant(self) -> bool:
        """The interval of the median excludes no change: a factor worth applying."""
        return self.low > 1 or self.high < 1

    def percent(self) -> str:
        """ "+12% (+5%..+20%, 80% bootstrap interval)"."""

        def pc(x: float) -> str:
            return f"{(x - 1) * 100:+.0f}%"

        return f"{pc(self.ratio)} ({pc(self.low)}..{pc(self.high)}, {LEVEL:.0%} bootstrap interval)"

    def describe(self) -> str:
        of = (
            f"median of {self.changes} stack change(s), {self.pairs} pairs"
            if self.changes is not None
            else f"median of {self.pairs} pairs"
        )
        return (
            f"{self.ratio:.3f}x speed, {of} ({self.scope}); interval of the median "
            f"{self.low:.3f}..{self.high:.3f}, pairs p10..p90 "
            f"{self.spread_low:.3f}..{self.spread_high:.3f}"
        )


def fit_factor(
    scope: str, log_ratios: np.ndarray, seed: int = 0, clusters: list[object] | None = None
) -> StackFactor | None:
    """The factor of ``log_ratios`` (None under ``MIN_PAIRS``): their median, the percentile
    bootstrap interval of that median at ``LEVEL``, and their own p10..p90.

    ``clusters`` (one label per ratio): ratios that move together. One submission's upgrade
    shows in every benchmark, scenario and count it ran, so its pairs are one draw, not many:
    the factor is then the median of the clusters' medians (each change counted once: H100's
    TensorRT 9.3 -> 10.8 step on llama2-70b gave 8 pairs at 1.49x and H200's two steps 6 at
    1.05-1.12x, a pair median of 1.22x per round where the changes' median is 1.05x, and the
    v4.1 -> v5.1 LLM results moved 1.06x per round), bootstrapped by resampling whole clusters.
    Under ``MIN_CLUSTERS`` clusters the interval is the pairs' own p10..p90: a change seen once
    is not known better than one pair."""
    if len(log_ratios) < MIN_PAIRS:
        return None
    tails = ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2)
    rng = np.random.default_rng(seed)
    centre, changes = median(log_ratios), None
    if clusters is None:
        draws = np.median(rng.choice(log_ratios, size=(BOOTSTRAP, len(log_ratios))), axis=1)
    else:
        members: dict[object, list[float]] = defaultdict(list)
        for label, value in zip(clusters, log_ratios.tolist(), strict=True):
            members[label].append(value)
        per_change = np.asarray([median(np.asarray(v)) for v in members.values()])
        centre, changes = median(per_change), len(per_change)
        if len(per_change) >= MIN_CLUSTERS:
            draws = np.median(rng.choice(per_change, size=(BOOTSTRAP, len(per_change))), axis=1)
        else:  # too few independent changes to resample: the median is as uncertain as one pair
            draws = log_ratios
    lo, hi = quantiles(draws, tails)
    s_lo, s_hi = quantiles(log_ratios, tails)
    return StackFactor(
        scope,
        math.exp(centre),
        math.exp(float(lo)),
        math.exp(float(hi)),
        math.exp(float(s_lo)),
        math.exp(float(s_hi)),
        len(log_ratios),
        changes,
    )


@lru_cache(maxsize=4096)
def version_key(version: str | None) -> str | None:
    """A version's major.minor ('10.2.0.19' → '10.2'); None when the text is no version."""
    release = release_of(version)
    return ".".join(str(p) for p in release[:2]) if release else None


def framework_id(name: str | None) -> str | None:
    if not name:
        return None
    match = resolve_framework_name(name)
    return match.id if match.resolved else None


class StackEffects:
    """The pairs and factors of one evidence index (``until``: only results of rounds up to that
    round number, for held-out checks)."""

    def __init__(self, index: EvidenceIndex, until: float | None = None) -> None:
        self.index = index
        self.until = until
        table = index.table
        self.stack_of: list[RowStack] = []
        by_word: list[bool] = []  # the class comes from the framework's name alone
        for sid in table.stack.vocab:
            stack = table.stacks[sid]
            fw = framework_id(stack.framework)
            implementation = stack.extra.get("implementation")
            cls = stack_class(fw, implementation)
            self.stack_of.append(
                RowStack(
                    fw, version_key(stack.framework_version), cls.software_class if cls else None
                )
            )
            by_word.append(
                not implementation and cls is not None and cls.software_class == REFERENCE
            )
        self._by_word = np.asarray(by_word, dtype=bool)

    # the pairs and factors are found on first use: most answers need only the rows' stacks
    @cached_property
    def _all_pairs(self) -> tuple[list[StackPair], list[StackPair]]:
        return self._pairs()

    @property
    def upgrade_pairs(self) -> list[StackPair]:
        return self._all_pairs[0]

    @property
    def class_pairs(self) -> list[StackPair]:
        return self._all_pairs[1]

    @cached_property
    def upgrades(self) -> dict[tuple[str, ...], StackFactor]:
        return self._fit(self.upgrade_pairs, upgrade_scopes)

    @cached_property
    def crossings(self) -> dict[tuple[str, ...], StackFactor]:
        return self._fit(self.class_pairs, crossing_scopes)

    def row_stack(self, row: int) -> RowStack:
        leveled = self._leveled.get(row)
        return (
            leveled
            if leveled is not None
            else self.stack_of[int(self.index.table.stack.codes[row])]
        )

    def leveled_rows(self, framework: str) -> list[int]:
        """The rows of ``framework`` whose class their level decided (``_leveled``)."""
        return [r for r, st in self._leveled.items() if st.framework == framework]

    @cached_property
    def newest_held(self) -> dict[str, str]:
        """Each framework's newest version any result of the knowledge base ran (major.minor)."""
        out: dict[str, str] = {}
        for st in self.stack_of:
            fw, version = st.framework, st.version
            if fw and version and (release_of(version) or ()) > (release_of(out.get(fw)) or ()):
                out[fw] = version
        return out

    @cached_property
    def _leveled(self) -> dict[int, RowStack]:
        """The class of each result that only its framework's name classed, from its level
        (``stack_level.leveled``)."""
        return leveled(self.index, self.stack_of, self._by_word, CLASSED_FAMILIES)

    # ---- the pairs -------------------------------------------------------------------------
    def _pairs(self) -> tuple[list[StackPair], list[StackPair]]:
        index, t = self.index, self.index.table
        upgrades: list[StackPair] = []
        crossings: list[StackPair] = []
        for key, by_acc in index.slices.items():
            hib = index.higher_is_better(key)
            for acc, rows in by_acc.items():
                if self.until is not None:
                    rows = rows[index.round_no[rows] <= self.until]
                if not len(rows):
                    continue
                vendor = accelerator_class(index.raw_names.get(acc, acc))
                # one benchmark identity per pair: a slice of our collectors' results holds several
                # parameter sets (a PI GEMM at fp16 and fp32), a published slice one
                by_version: dict[tuple[str, int, int], dict[str, list[int]]] = defaultdict(
                    lambda: defaultdict(list)
                )
                by_class: dict[tuple[float, int], dict[str, list[int]]] = defaultdict(
                    lambda: defaultdict(list)
                )
                for r in rows.tolist():
                    st, ident = self.row_stack(r), int(t.benchmark.codes[r])
                    if st.framework and st.version:
                        by_version[(st.framework, int(t.count[r]), ident)][st.version].append(r)
                    if st.software_class and key[0] in CLASSED_FAMILIES:
                        by_class[(float(index.round_no[r]), ident)][st.software_class].append(r)
                base = (
                    key[0],
                    vendor,
                    key[1],
                    key[2],
                    key[3],
                    direction_of(key[0], key[1], hib),
                    acc,
                )
                for (fw, _, _), versions in by_version.items():
                    ordered = sorted(versions, key=lambda v: release_of(v) or ())
                    for old, new in pairwise(ordered):
                        pair = self.pair(base, fw, old, new, versions[old], versions[new], hib)
                        if upgrade_pair(pair):
                            upgrades.append(pair)
                for classes in by_class.values():
                    if "reference" in classes and "optimised" in classes:
                        fws = {self.row_stack(r).framework for c in classes.values() for r in c}
                        crossings.append(
                            self.pair(
                                base,
                                "/".join(sorted(f for f in fws if f)),
                                "optimised",
                                "reference",
                                classes["optimised"],
                                classes["reference"],
                                hib,
                            )
                        )
        return upgrades, crossings

    def pair(
        self,
        base: tuple[str, ...],
        fw: str,
        old: str,
        new: str,
        old_rows: list[int],
        new_rows: list[int],
        hib: bool,
    ) -> StackPair:
        """The pair of two sets of rows of one slice and accelerator (``base``: family, vendor,
        benchmark, scenario, metric, direction, accelerator)."""
        index = self.index
        a, b = np.asarray(old_rows), np.asarray(new_rows)
        va, vb = median(index.unit[index.latest(a)]), median(index.unit[index.latest(b)])
        ratio = math.log(vb / va) if hib else math.log(va / vb)
        family, vendor, bench, scenario, metric, direction, acc = base
        r_old, r_new = float(index.round_no[a].max()), float(index.round_no[b].max())
        return StackPair(
            family,
            vendor,
            bench,
            scenario,
            metric,
            direction,
            acc,
            fw,
            old,
            new,
            r_old,
            r_new,
            ratio,
            rounds_between(family, r_old, r_new),
        )

    @staticmethod
    def _fit(
        pairs: list[StackPair],
        scopes_of: Callable[[StackPair], list[tuple[str, ...]]],
    ) -> dict[tuple[str, ...], StackFactor]:
        pooled: dict[tuple[str, ...], list[StackPair]] = defaultdict(list)
        for p in pairs:
            for scope in scopes_of(p):
                pooled[scope].append(p)
        out = {}
        for scope, members in pooled.items():
            factor = fit_factor(
                " ".join(scope),
                np.asarray([p.per_round for p in members]),
                clusters=[p.cluster for p in members],
            )
            if factor is not None and any(p.rounds > 1 for p in members):
                factor = replace(
                    factor,
                    scope=f"{factor.scope}; per round, pairs spanning "
                    f"{min(p.rounds for p in members)}-{max(p.rounds for p in members)} rounds",
                )
            if factor is not None:
                out[scope] = factor
        return out

    # ---- the factors -----------------------------------------------------------------------
    def upgrade(
        self, family: str, vendor: str, framework: str, benchmark: str, metric: str, hib: bool
    ) -> StackFactor | None:
        """One version step of ``framework`` on ``vendor``'s accelerators: the narrowest scope of
        ``upgrade_scopes`` with ``MIN_PAIRS`` pairs."""
        probe = StackPair(
            family,
            vendor,
            benchmark,
            "",
            metric,
            direction_of(family, benchmark, hib),
            "",
            framework,
            "",
            "",
            0.0,
            0.0,
            0.0,
        )
        for scope in upgrade_scopes(probe):
            if scope in self.upgrades:
                return self.upgrades[scope]
        return None

    def crossing(
        self, family: str, vendor: str, from_class: str, to_class: str, direction: str
    ) -> StackFactor | None:
        """From ``from_class`` results to ``to_class`` ones on ``vendor``'s accelerators; the
        inverse of the learned direction where only that was paired."""
        for v in (vendor,):
            found = self.crossings.get((family, v, direction, from_class, to_class))
            if found is not None:
                return found
            back = self.crossings.get((family, v, direction, to_class, from_class))
            if back is not None:
                return replace(
                    back,
                    ratio=1 / back.ratio,
                    low=1 / back.high,
                    high=1 / back.low,
                    spread_low=1 / back.spread_high,
                    spread_high=1 / back.spread_low,
                    scope=f"{back.scope} (inverted)",
                )
        return None


@lru_cache(maxsize=256)
def rounds_between(family: str, old: float, new: float) -> int:
    """Published rounds of ``family`` after round number ``old`` up to ``new``
    (``catalog.rounds.rounds_after``); 1 for our own measurements (no round), for consecutive
    rounds and where the catalogue and the cadence know none between."""
    if old <= 0 or new <= old:
        return 1
    return max(1, rounds_after(family, old, new))


def upgrade_pair(pair: StackPair) -> bool:
    """Two versions last run in different published rounds (within one round they are two
    submitters' systems, not an upgrade), or both in our own measurements, which carry no round
    (a sweep: the same host with only the stack changed)."""
    return pair.round_new > pair.round_old or pair.round_new == pair.round_old == 0.0


@lru_cache(maxsize=1024)
def direction_of(family: str, benchmark: str, hib: bool) -> str:
    """How a pair pools: throughput or latency, and LLM (the catalogue counts its throughput in
    tokens) or not. Runtimes for LLMs moved far faster between rounds than for vision models
    (H100 llama2-70b: 1.5x from v4.1 to v5.1 where CNNs moved ~1%), so one never stands for the
    other: with no LLM pairs an LLM result is not carried forward."""
    match = resolve_benchmark(benchmark)
    entry = (
        load_catalog().benchmark(match.family or family, match.base or match.id)
        if match.resolved
        else None
    )
    return ("throughput" if hib else "latency") + (
        "/llm" if entry is not None and entry.tokens else "/other"
    )


def upgrade_scopes(p: StackPair) -> list[tuple[str, ...]]:
    """Where an upgrade pair pools, narrowest first: its framework on its benchmark and metric,
    its framework on every metric of its direction, every framework of its vendor."""
    return [(p.family, p.vendor, p.framework, p.direction), (p.family, p.vendor, ANY, p.direction)]


def crossing_scopes(p: StackPair) -> list[tuple[str, ...]]:
    """Where a class-crossing pair pools: its vendor and metric direction only. Not across
    vendors: on CPUs the "reference" frameworks run the vendors' own tuned code (Intel's PyTorch
    extension), so their pairs say nothing of a GPU's reference code (measured: pooled over
    vendors up to v4.1, 0.97x where the RTX 4090's v5.1 reference results were 0.074x)."""
    return [(p.family, p.vendor, p.direction, p.old, p.new)]


_EFFECTS: weakref.WeakKeyDictionary[EvidenceIndex, StackEffects] = weakref.WeakKeyDictionary()


def effects_of(index: EvidenceIndex) -> StackEffects:
    """The stack effects of ``index``, computed once per index (table)."""
    found = _EFFECTS.get(index)
    if found is None:
        found = _EFFECTS[index] = StackEffects(index)
    return found
