"""What the software stack does to a result, learned from the knowledge base's own pairs.

Two kinds of pair, each a log speed ratio (positive: the second side is faster, whatever the
metric's direction), on the same benchmark slice (family, benchmark, scenario, metric, division)
and the same canonical accelerator:

- **upgrade**: the same framework at two consecutive versions (major.minor, in release order) at
  the same accelerator count: the median per-accelerator figure of each version's latest round.
  Only versions last run in different rounds pair (two versions in one round are two
  submitters, not an upgrade), or versions we measured ourselves (``advisor sweep``: no round). Pooled per (family, vendor, framework, benchmark, metric), else
  per (family, vendor, framework) and metric direction (throughput or latency: a Server latency
  held under its limit does not move as throughput does), else per (family, vendor, direction).
- **class crossing**: results of the same round run with a reference implementation and with an
  optimised runtime (the catalogue's ``software_class``). Pooled per (family, vendor, direction,
  from class, to class), never across vendors (``crossing_scopes``). Only families whose results
  mix both classes are classed (``CLASSED_FAMILIES``): every MLPerf Training submission is its
  submitter's tuned code whatever framework it names, so the class of a training framework says
  nothing about the run.

A factor (``StackFactor``) is the median of its pairs with two intervals: the bootstrap interval
of that median (what ``compare`` reports as the effect) and the pairs' own p10..p90 (what an
estimate that applies the factor is widened by: one more result is as uncertain as one more
pair). Fewer than ``MIN_PAIRS`` pairs give no factor, and then nothing is applied: the
estimate says so (``adjust``) or, across classes, is refused with the reason.
"""

from __future__ import annotations

import math
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Protocol

import numpy as np

from advisor.estimate.facts import accelerator_class
from advisor.estimate.order_stats import median, quantiles
from advisor.estimate.query import Estimate, Query, SliceKey
from advisor.knowledge.table import ObservationTable
from advisor.results import Basis
from collectors.importers.stack_text import parse_framework
from graph_schema.catalog import (
    SoftwareClass,
    load_catalog,
    resolve_benchmark,
    resolve_framework_name,
    software_class,
)
from graph_schema.catalog.rounds import release_of


class EvidenceIndex(Protocol):
    """What the stack effects read of ``advisor.estimate.index.EvidenceIndex`` (a protocol, so
    that the index can call ``adjust`` without the two modules importing each other)."""

    table: ObservationTable
    slices: dict[SliceKey, dict[str, np.ndarray]]
    unit: np.ndarray
    round_no: np.ndarray
    raw_names: dict[str, str]

    def higher_is_better(self, key: SliceKey) -> bool: ...

    def latest(self, rows: np.ndarray) -> np.ndarray: ...

MIN_PAIRS = 3
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
    direction: str  # "throughput" (higher is better) or "latency" (lower is better), then "/llm" or "/other"
    accelerator: str
    framework: str  # canonical framework id; for a class crossing, the frameworks of both sides
    old: str  # a version (upgrade) or a software class (crossing)
    new: str
    round_old: float
    round_new: float
    log_ratio: float  # log(speed of new / speed of old)


@dataclass(frozen=True)
class StackFactor:
    """A speed ratio learned from pairs: ``ratio`` (new over old: > 1 faster), the bootstrap
    interval of that median (``low``..``high``) and the pairs' own spread (``spread_low``..``spread_high``)."""

    scope: str
    ratio: float
    low: float
    high: float
    spread_low: float
    spread_high: float
    pairs: int

    @property
    def significant(self) -> bool:
        """The interval of the median excludes no change: a factor worth applying."""
        return self.low > 1 or self.high < 1

    def percent(self) -> str:
        """"+12% (+5%..+20%, 80% bootstrap interval)"."""
        def pc(x: float) -> str:
            return f"{(x - 1) * 100:+.0f}%"
        return f"{pc(self.ratio)} ({pc(self.low)}..{pc(self.high)}, {LEVEL:.0%} bootstrap interval)"

    def describe(self) -> str:
        return (f"{self.ratio:.3f}x speed, median of {self.pairs} pairs ({self.scope}); interval of the median "
                f"{self.low:.3f}..{self.high:.3f}, pairs p10..p90 {self.spread_low:.3f}..{self.spread_high:.3f}")


def fit_factor(scope: str, log_ratios: np.ndarray, seed: int = 0) -> StackFactor | None:
    """The factor of ``log_ratios`` (None under ``MIN_PAIRS``): their median, the percentile
    bootstrap interval of the median at ``LEVEL``, and their own p10..p90."""
    if len(log_ratios) < MIN_PAIRS:
        return None
    tails = ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2)
    rng = np.random.default_rng(seed)
    draws = np.median(rng.choice(log_ratios, size=(BOOTSTRAP, len(log_ratios))), axis=1)
    lo, hi = quantiles(draws, tails)
    s_lo, s_hi = quantiles(log_ratios, tails)
    return StackFactor(scope, math.exp(median(log_ratios)), math.exp(float(lo)), math.exp(float(hi)),
                       math.exp(float(s_lo)), math.exp(float(s_hi)), len(log_ratios))


@dataclass(frozen=True)
class RowStack:
    """What an estimate needs of a row's stack: canonical framework, major.minor version, class."""

    framework: str | None
    version: str | None
    software_class: str | None


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
        for sid in table.stack.vocab:
            stack = table.stacks[sid]
            fw = framework_id(stack.framework)
            cls = software_class(fw)
            self.stack_of.append(RowStack(fw, version_key(stack.framework_version),
                                          cls.software_class if cls else None))

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
        return self.stack_of[int(self.index.table.stack.codes[row])]

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
                by_version: dict[tuple[str, int], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
                by_class: dict[float, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
                for r in rows.tolist():
                    st = self.row_stack(r)
                    if st.framework and st.version:
                        by_version[(st.framework, int(t.count[r]))][st.version].append(r)
                    if st.software_class and key[0] in CLASSED_FAMILIES:
                        by_class[float(index.round_no[r])][st.software_class].append(r)
                base = (key[0], vendor, key[1], key[2], key[3], direction_of(key[0], key[1], hib), acc)
                for (fw, _), versions in by_version.items():
                    ordered = sorted(versions, key=lambda v: release_of(v) or ())
                    for old, new in pairwise(ordered):
                        pair = self.pair(base, fw, old, new, versions[old], versions[new], hib)
                        if upgrade_pair(pair):
                            upgrades.append(pair)
                for classes in by_class.values():
                    if "reference" in classes and "optimised" in classes:
                        fws = {self.row_stack(r).framework for c in classes.values() for r in c}
                        crossings.append(self.pair(base, "/".join(sorted(f for f in fws if f)), "optimised",
                                                    "reference", classes["optimised"], classes["reference"], hib))
        return upgrades, crossings

    def pair(self, base: tuple[str, ...], fw: str, old: str, new: str, old_rows: list[int],
              new_rows: list[int], hib: bool) -> StackPair:
        """The pair of two sets of rows of one slice and accelerator (``base``: family, vendor,
        benchmark, scenario, metric, direction, accelerator)."""
        index = self.index
        a, b = np.asarray(old_rows), np.asarray(new_rows)
        va, vb = median(index.unit[index.latest(a)]), median(index.unit[index.latest(b)])
        ratio = math.log(vb / va) if hib else math.log(va / vb)
        family, vendor, bench, scenario, metric, direction, acc = base
        return StackPair(family, vendor, bench, scenario, metric, direction, acc, fw, old, new,
                         float(index.round_no[a].max()), float(index.round_no[b].max()), ratio)

    @staticmethod
    def _fit(pairs: list[StackPair], scopes_of: Callable[[StackPair], list[tuple[str, ...]]],
             ) -> dict[tuple[str, ...], StackFactor]:
        pooled: dict[tuple[str, ...], list[float]] = defaultdict(list)
        for p in pairs:
            for scope in scopes_of(p):
                pooled[scope].append(p.log_ratio)
        out = {}
        for scope, values in pooled.items():
            factor = fit_factor(" ".join(scope), np.asarray(values))
            if factor is not None:
                out[scope] = factor
        return out

    # ---- the factors -----------------------------------------------------------------------
    def upgrade(self, family: str, vendor: str, framework: str, benchmark: str, metric: str,
                hib: bool) -> StackFactor | None:
        """One version step of ``framework`` on ``vendor``'s accelerators: the narrowest scope of
        ``upgrade_scopes`` with ``MIN_PAIRS`` pairs."""
        probe = StackPair(family, vendor, benchmark, "", metric, direction_of(family, benchmark, hib), "", framework,
                          "", "", 0.0, 0.0, 0.0)
        for scope in upgrade_scopes(probe):
            if scope in self.upgrades:
                return self.upgrades[scope]
        return None

    def crossing(self, family: str, vendor: str, from_class: str, to_class: str,
                 direction: str) -> StackFactor | None:
        """From ``from_class`` results to ``to_class`` ones on ``vendor``'s accelerators; the
        inverse of the learned direction where only that was paired."""
        for v in (vendor,):
            found = self.crossings.get((family, v, direction, from_class, to_class))
            if found is not None:
                return found
            back = self.crossings.get((family, v, direction, to_class, from_class))
            if back is not None:
                return replace(back, ratio=1 / back.ratio, low=1 / back.high, high=1 / back.low,
                               spread_low=1 / back.spread_high, spread_high=1 / back.spread_low,
                               scope=f"{back.scope} (inverted)")
        return None


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
    entry = load_catalog().benchmark(match.family or family, match.base or match.id) if match.resolved else None
    return ("throughput" if hib else "latency") + ("/llm" if entry is not None and entry.tokens else "/other")


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


def apply_factor(est: Estimate, factor: StackFactor, hib: bool, kind: str, text: str, *,
                 widen: bool = True) -> Estimate:
    """``est`` moved by the factor's speed ratio, the factor shown; ``widen``: its interval
    widened by the factor's pair spread (log half-widths added in quadrature), else moved as is."""
    assert est.value is not None and est.low is not None and est.high is not None
    r = factor.ratio if hib else 1 / factor.ratio
    value = est.value * r
    lo_w, hi_w = math.log(est.value / est.low), math.log(est.high / est.value)
    s_lo, s_hi = math.log(factor.ratio / factor.spread_low), math.log(factor.spread_high / factor.ratio)
    if not hib:
        s_lo, s_hi = s_hi, s_lo
    if not widen:
        s_lo = s_hi = 0.0
    low = value * math.exp(-math.hypot(lo_w, s_lo))
    high = value * math.exp(math.hypot(hi_w, s_hi))
    return replace(est, value=value, low=low, high=high,
                   factors=[*est.factors, (kind, f"{text}: {factor.describe()}", r)])


# ---- the hook where estimates pick their sources ------------------------------------------------

def query_stack(q: Query) -> tuple[str, str | None, SoftwareClass | None] | None:
    """(canonical framework, major.minor version, class) of the framework a query names; None
    when it names none the catalogue knows."""
    if not q.framework:
        return None
    name, version = parse_framework(q.framework)
    fw = framework_id(name or q.framework)
    if fw is None:
        return None
    return fw, version_key(version or q.components.get(fw)), software_class(fw)


def adjust(index: EvidenceIndex, q: Query, est: Estimate) -> Estimate:
    """An estimate for a query that names its framework, made honest about the stack: borrowed
    across software classes only through a learned factor (else refused; results of another
    class are never "observed"), and an interpolation carried forward from an older version of
    the same framework through the upgrade factor (else a note says it was not)."""
    if est.basis is Basis.UNSUPPORTED or est.value is None or not len(est.rows):
        return est
    wanted = query_stack(q)
    if wanted is None:
        return est
    effects = effects_of(index)
    if est.basis is Basis.OBSERVED:
        # a framework named without a version matches every stack of the configuration: results
        # of another software class are not an observation of this one
        return _observed_class(effects, q, est, wanted[2])
    est = _cross_class(effects, q, est, wanted[2])
    if est.basis is Basis.INTERPOLATED:
        est = _carry_forward(effects, q, est, wanted[0], wanted[1])
    return est


def _observed_class(effects: StackEffects, q: Query, est: Estimate, wanted: SoftwareClass | None) -> Estimate:
    if wanted is None or q.family not in CLASSED_FAMILIES:
        return est
    classes = {effects.row_stack(r).software_class for r in est.rows.tolist()} - {None}
    if not classes or wanted.software_class in classes:
        return est
    return _cross_class(effects, q, replace(est, basis=Basis.INTERPOLATED), wanted)


def _cross_class(effects: StackEffects, q: Query, est: Estimate, wanted: SoftwareClass | None) -> Estimate:
    index = effects.index
    if wanted is None or q.family not in CLASSED_FAMILIES:
        return est
    rows = est.rows
    classes = np.asarray([effects.row_stack(r).software_class or "" for r in rows.tolist()], dtype=object)
    known = set(classes.tolist()) - {""}
    if not known or known == {wanted.software_class}:
        return est
    hib = index.higher_is_better(q.slice)
    if wanted.software_class in known:
        if est.basis is not Basis.INTERPOLATED:
            return est
        same = rows[classes == wanted.software_class]
        value = median(index.unit[index.latest(same)])
        scale = value / est.value  # type: ignore[operator]
        return replace(est, value=value, low=est.low * scale, high=est.high * scale, rows=same,  # type: ignore[operator]
                       factors=[*est.factors, ("software class", f"only its {wanted.software_class} results "
                                               f"(like {wanted.framework}): {len(same)} of {len(rows)}", 1.0)])
    other = sorted(known)[0]
    names = sorted({effects.row_stack(r).framework or "?" for r in rows.tolist()})
    vendor = accelerator_class(q.raw_accelerator or q.accelerator)
    factor = effects.crossing(q.family, vendor, other, wanted.software_class, direction_of(q.family, q.benchmark, hib))
    what = (f"{wanted.framework} is a {wanted.software_class} implementation ({wanted.source}); the results this "
            f"estimate borrows ran on {other} runtimes ({', '.join(names)})")
    if factor is None:
        return Estimate(Basis.UNSUPPORTED, reason=f"software class: {what}, and fewer than {MIN_PAIRS} pairs of both "
                        f"classes on the same accelerator, benchmark and round ({q.family}, {vendor} accelerators) "
                        "to learn the factor between them from")
    moved = apply_factor(est, factor, hib, "software class", f"{other} -> {wanted.software_class}")
    return replace(moved, notes=[*moved.notes, f"software class: {what}; moved by a factor learned from pairs"])


def _carry_forward(effects: StackEffects, q: Query, est: Estimate, fw: str, version: str | None) -> Estimate:
    index = effects.index
    wanted = release_of(version)
    if wanted is None:
        return est
    latest = index.latest(est.rows)
    have = {effects.row_stack(r).version for r in latest.tolist() if effects.row_stack(r).framework == fw}
    have.discard(None)
    if not have:
        return est
    newest = max(have, key=lambda v: release_of(v) or ())
    if (release_of(newest) or ()) >= wanted:
        return est
    vendor = accelerator_class(q.raw_accelerator or q.accelerator)
    hib = index.higher_is_better(q.slice)
    factor = effects.upgrade(q.family, vendor, fw, q.benchmark, q.metric, hib)
    if factor is None:
        return replace(est, notes=[*est.notes, f"stack: no pairs to carry {fw} {newest} forward to {version} on "
                                   f"{vendor} ({q.family}); its {newest} results are used as they are"])
    if not factor.significant:
        return replace(est, notes=[*est.notes, f"stack: upgrading {fw} {newest} to {version} on {vendor}: "
                                   f"{factor.percent()} from {factor.pairs} pairs ({factor.scope}), not told apart "
                                   f"from no change; its {newest} results are used as they are"])
    # from the newest version's own results (the interpolation's median may mix in older ones)
    def is_newest(r: int) -> bool:
        return effects.row_stack(r).framework == fw and effects.row_stack(r).version == newest

    if not all(is_newest(r) for r in latest.tolist()):
        own = est.rows[[is_newest(r) for r in est.rows.tolist()]]
        value = median(index.unit[index.latest(own)])
        scale = value / est.value  # type: ignore[operator]
        est = replace(est, value=value, low=est.low * scale, high=est.high * scale, rows=own,  # type: ignore[operator]
                      factors=[*est.factors, ("stack version", f"only its {fw} {newest} results: {len(own)} of "
                                              f"{len(est.rows)}", 1.0)])
    # not widened: an interpolated interval is conformal on the same accelerator's moves from
    # round to round, which hold its stack upgrades already
    return apply_factor(est, factor, hib, "stack", f"{fw} {newest} carried forward to {version} (one version step)",
                        widen=False)
