"""A scenario the knowledge base holds no results of for a benchmark, estimated from the scenario
LoadGen runs it as, or refused saying why (issue 28).

The Interactive scenario of the LLM benchmarks (first published in v5.0) is a Server run with
tighter TTFT/TPOT limits (``stack_advisor/catalog/scenarios.yaml``: ``loadgen_mode: Server``). Its
result for a configuration is the Server estimate times a factor learned from systems that ran
both on the same benchmark: same submitter, accelerator, count, round, system, placement and
stack. It is used for an accelerator with no results in the scenario but its own in the base
scenario (its own measurement is nearer evidence than other accelerators' by specs), and for a
benchmark with no results in the scenario at all. The factor is the median Interactive/Server
ratio of those pairs; the interval widens the Server estimate's by the pairs' split-conformal 80%
bounds. Throughput only. A benchmark with fewer than ``MIN_PAIRS`` such pairs (its scenario new in
a round the knowledge base lacks: deepseek-r1's Interactive, first published in v6.0) takes the
ratio other benchmarks of its group show, one per model, where at least ``MIN_BENCHMARKS`` hold
``MIN_PAIRS`` pairs: the median of their medians, the bounds those of each of them predicted
from the others (models differ more than systems of one model), and the answer names them.
With neither the query is refused with the reason: never a Server figure passed off as an
Interactive one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from stack_advisor.advisor.estimate.drift_prior import benchmark_group
from stack_advisor.advisor.estimate.protocols import EvidenceIndex
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.knowledge.table import round_number
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import load_catalog

MIN_PAIRS = 3
MIN_BENCHMARKS = 2  # other benchmarks whose ratios a benchmark with no pairs of its own takes


def base_scenario(scenario: str) -> str | None:
    """The recorded scenario a catalogue scenario is run as (Interactive → Server), None when it
    is its own LoadGen mode or the catalogue does not know it."""
    entry = load_catalog().scenarios.get(scenario)
    if entry is None or entry.loadgen_mode == entry.id:
        return None
    return entry.loadgen_mode


def first_published(scenario: str, benchmark: str) -> str | None:
    """The first round whose rules set ``scenario``'s limits for ``benchmark`` (None: none)."""
    entry = load_catalog().scenarios.get(scenario)
    if entry is None:
        return None
    since = [lim.since for lim in entry.latency_limits if lim.benchmark == benchmark]
    return min(since, key=lambda s: tuple(int(p) for p in s[1:].split("."))) if since else None


def derived_base(index: EvidenceIndex, family: str, benchmark: str, scenario: str) -> str | None:
    """The scenario ``scenario`` is run as (Interactive: Server) where the rules set it for
    ``benchmark`` and the knowledge base holds the benchmark in that one but never in
    ``scenario`` (``recommend`` then ranks the base's parts, ``compare`` points there); None
    otherwise (the slice is simply missing)."""
    base = base_scenario(scenario)
    if base is None or first_published(scenario, benchmark) is None:
        return None
    held = index.scenarios(family, benchmark)
    return base if base in held and scenario not in held else None


def unrecorded_scenario(scenario: str, benchmark: str, recorded: list[str]) -> str:
    """Why a scenario the catalogue knows has no results to answer from for ``benchmark``."""
    first = first_published(scenario, benchmark)
    when = f" (first published in {first})" if first else ""
    base = base_scenario(scenario)
    how = (
        f"; estimating it from {base} needs at least {MIN_PAIRS} systems that ran both on "
        f"{benchmark}"
        if base
        else ""
    )
    return (
        f"no {scenario} results: none recorded for {benchmark} in the knowledge base{when}{how}; "
        f"recorded: {', '.join(recorded) or 'none'}"
    )


_PAIRS: WeakKeyDictionary[EvidenceIndex, dict[tuple[str, ...], np.ndarray]] = WeakKeyDictionary()


def pair_log_ratios(index: EvidenceIndex, q: Query, base: str) -> np.ndarray:
    """log(q.scenario / base) per-accelerator results of the systems that ran both (once per
    index and slice)."""
    cache = _PAIRS.setdefault(index, {})
    key = (*q.slice, base)
    if key not in cache:
        cache[key] = _pair_log_ratios(index, q, base)
    return cache[key]


def _pair_log_ratios(index: EvidenceIndex, q: Query, base: str) -> np.ndarray:
    t = index.table
    want, have = t.scenario.code(q.scenario), t.scenario.code(base)
    if want < 0 or have < 0:
        return np.empty(0)
    sel = (
        (t.family.codes == t.family.code(q.family))
        & (t.bench_name.codes == t.bench_name.code(q.benchmark))
        & (t.metric.codes == t.metric.code(q.metric))
        & (t.division.codes == t.division.code(q.division))
        & np.isin(t.scenario.codes, [want, have])
        & (t.value > 0)
    )
    cells: dict[tuple[Any, ...], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in np.flatnonzero(sel).tolist():
        key = (
            t.submitter.codes[r],
            index.accel[r],
            t.count[r],
            t.round.codes[r],
            t.system.codes[r],
            t.placement.codes[r],
            t.stack.codes[r],
        )
        cells[key][int(t.scenario.codes[r])].append(float(index.unit[r]))
    return np.array(
        [
            math.log(float(np.median(c[want])) / float(np.median(c[have])))
            for c in cells.values()
            if c.get(want) and c.get(have)
        ]
    )


def _throughput(index: EvidenceIndex, metric: str) -> bool:
    """Whether ``metric`` is a throughput (higher is better) in this knowledge base: latency
    percentiles do not scale by one Interactive/Server ratio (leave-one-system-out on v5.1's
    pairs: 28-95% MAPE for TTFT, 41-56% for llama3.1-8b's TPOT, against 4-13% for tokens/s)."""
    t = index.table
    rows = t.metric.codes == t.metric.code(metric)
    return bool(rows.any() and t.higher_is_better[rows].all())


def conformal_bounds(logs: np.ndarray, level: float = 0.8) -> tuple[float, float]:
    """Split-conformal bounds of the next ratio from ``logs``: the k-th smallest and k-th largest,
    k = floor((n + 1) * (1 - level) / 2) and at least 1 (few pairs: their min and max), so the
    interval covers at least ``level`` of exchangeable ratios, not the sample p10..p90 (which
    covered 62-76% of v5.1's pairs left out one at a time)."""
    ordered = np.sort(logs)
    k = max(1, math.floor((len(ordered) + 1) * (1 - level) / 2))
    return float(ordered[k - 1]), float(ordered[-k])


def derived_estimate(
    index: EvidenceIndex, q: Query, *, own_only: bool = False
) -> Estimate | str | None:
    """``q`` from its base scenario's estimate times the learned factor, or the reason it cannot
    be (a str); None when the scenario has no base scenario (the caller's own path applies).
    ``own_only``: only from this accelerator's own base-scenario results (observed or
    interpolated), else None: the scenario has results, other accelerators transfer as usual."""
    base = base_scenario(q.scenario)
    if base is None:
        return None
    learned = derivable(index, q, base, own_only=own_only)
    if learned is None or isinstance(learned, str):
        return learned
    server = index.estimate(replace(q, scenario=base))
    if own_only and server.basis not in (Basis.OBSERVED, Basis.INTERPOLATED):
        return None
    if (
        server.basis is Basis.UNSUPPORTED
        or server.value is None
        or server.low is None
        or server.high is None
    ):
        # the part's own refusal first (what ``recommend`` counts it under), then the derivation
        return (
            f"{server.reason} (the {base} estimate {q.scenario} would be derived from: no "
            f"{q.scenario} results for {q.benchmark})"
        )
    ratio, source = learned_ratio(q.benchmark, *learned)
    return _scaled(
        q.scenario, base, server, (ratio, source), (server.value, server.low, server.high)
    )


def derivable(
    index: EvidenceIndex, q: Query, base: str, *, own_only: bool = False
) -> tuple[np.ndarray, dict[str, np.ndarray]] | str | None:
    """What ``q``'s scenario/``base`` ratio is learned from (the benchmark's own pairs, and where
    it has too few, the other benchmarks' of its group), or why no part's figure can be derived
    (a str: the same for every accelerator of the slice, so ``recommend`` can say it once); None
    with ``own_only`` where only the other benchmarks would answer."""
    why = unrecorded_scenario(q.scenario, q.benchmark, index.scenarios(q.family, q.benchmark))
    if not _throughput(index, q.metric):
        return (
            None
            if own_only
            else f"{why}; {q.metric} is a latency: only throughput is estimated from {base}"
        )
    logs = pair_log_ratios(index, q, base)
    if len(logs) >= MIN_PAIRS:
        return logs, {}
    if own_only:
        return None
    if first_published(q.scenario, q.benchmark) is None:  # the rules set it no limits
        return f"{why} ({len(logs)} such system(s) here); the rules set it no {q.scenario}"
    asked = index.round_drift.target(replace(q, scenario=base), q.as_of)
    since = first_published(q.scenario, q.benchmark) or ""
    if asked + 1e-9 < round_number(since):
        return (
            f"{why} ({len(logs)} such system(s) here); the answer is for v{asked:.1f}, "
            f"before the rules set {q.scenario} for {q.benchmark} ({since})"
        )
    others = other_benchmarks(index, q, base)
    if len(others) < MIN_BENCHMARKS:
        return (
            f"{why} ({len(logs)} such system(s) here); fewer than {MIN_BENCHMARKS} other "
            f"{q.scenario} benchmarks hold {MIN_PAIRS}"
        )
    return logs, others


def learned_ratio(
    benchmark: str, logs: np.ndarray, others: dict[str, np.ndarray]
) -> tuple[tuple[float, float, float], str]:
    """The log ratio (middle, 80% low, 80% high) and what it was learned from: the benchmark's
    own pairs, or where it has too few, the other benchmarks' (``others``): the median of their
    medians, its bounds the split-conformal ones of each benchmark's pairs predicted from the
    other benchmarks' medians (how far a model no pair was seen on lands from the rest: on
    v5.1's three LLM benchmarks with Interactive, each held out in turn, they held 28 of its 40
    pairs where the pooled pairs' own bounds held 19)."""
    if not others:
        lo, hi = conformal_bounds(logs)
        source = (
            f"{len(logs)} systems that ran both on {benchmark} (80% bounds "
            f"{math.exp(lo):.3f}..{math.exp(hi):.3f})"
        )
        return (float(np.median(logs)), lo, hi), source
    medians = {name: float(np.median(v)) for name, v in others.items()}
    held_out = [
        v - float(np.median([m for other, m in medians.items() if other != name]))
        for name, v in others.items()
    ]
    lo, hi = conformal_bounds(np.concatenate(held_out))
    mid = float(np.median(list(medians.values())))
    source = (
        f"{sum(len(v) for v in others.values())} systems that ran both on {', '.join(others)} "
        f"(the median of their medians; none ran both on {benchmark}; bounds "
        f"{math.exp(mid + lo):.3f}..{math.exp(mid + hi):.3f}: each of them predicted from the "
        "others, not an 80% level, with so few models)"
    )
    return (mid, mid + lo, mid + hi), source


def other_benchmarks(index: EvidenceIndex, q: Query, base: str) -> dict[str, np.ndarray]:
    """log(q.scenario / base) pairs of the other benchmarks of ``q``'s group (LLM) that hold at
    least ``MIN_PAIRS``, one benchmark per model (llama2-70b-99 and -99.9 run the same one)."""
    group = benchmark_group(q.family, q.benchmark)
    models: set[str] = set()
    out: dict[str, np.ndarray] = {}
    for name in index.benchmarks(q.family):
        if name == q.benchmark or benchmark_group(q.family, name) != group:
            continue
        entry = load_catalog().benchmark(q.family, name)
        model = entry.model if entry is not None and entry.model else name
        if model in models or q.scenario not in index.scenarios(q.family, name):
            continue
        logs = pair_log_ratios(index, replace(q, benchmark=name), base)
        if len(logs) >= MIN_PAIRS:
            models.add(model)
            out[name] = logs
    return out


DERIVED_NOTE = "estimated from "  # how the note of a figure derived from another scenario opens


def is_derived_note(text: str) -> bool:
    """Whether ``text`` is the note of a figure derived from another scenario (``_scaled``)."""
    return text.startswith(DERIVED_NOTE) and " ratio of " in text


def _scaled(
    scenario: str,
    base: str,
    server: Estimate,
    learned: tuple[tuple[float, float, float], str],
    figures: tuple[float, float, float],
) -> Estimate:
    """``server`` scaled by the ``learned`` log ratio (middle, low, high) with what it was
    learned from; ``figures``: its value, low and high (all known: the caller refuses an
    estimate without them)."""
    value, low, high = figures
    (mid, lo, hi), source = learned
    how = f"{scenario}/{base}: {source}"
    note = (
        f"{DERIVED_NOTE}{base} ({server.basis.value}) by the {scenario}/{base} ratio of "
        f"{source.split(' (', 1)[0]}"
    )
    factors = [*server.factors, ("scenario", how, math.exp(mid))]
    notes = [*server.notes, note]
    return replace(
        server,
        basis=Basis.TRANSFERRED,
        derived_from=server.basis,
        # the answer is for the round asked: the stack's own base-scenario result may be of a
        # round that did not have this scenario (deepseek-r1 Interactive from v5.1's Server)
        measured_round=None,
        value=value * math.exp(mid),
        low=low * math.exp(lo),
        high=high * math.exp(hi),
        factors=factors,
        notes=notes,
    )
