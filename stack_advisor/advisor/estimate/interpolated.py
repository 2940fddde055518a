"""The interpolated basis of ``stack_advisor.advisor.estimate.index`` (the same canonical
accelerator ran the slice with another stack, count or placement) and the refusal that names what
an unrecorded slice lacks.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.node_scaling import class_factor
from stack_advisor.advisor.estimate.order_stats import median
from stack_advisor.advisor.estimate.query import Estimate, Query, redefined_reason
from stack_advisor.advisor.estimate.references_class import of_class, spans_nodes
from stack_advisor.advisor.estimate.scenario import unrecorded_scenario
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import load_catalog

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any


def interpolated_estimate(index: EvidenceIndex, q: Query, rows: np.ndarray, hib: bool) -> Estimate:
    """The same accelerator's latest round at another stack, count or placement: the median
    per-accelerator value times the count, moved by a paired placement overhead where one is
    known."""
    t = index.table
    same_place = rows[t.placement.codes[rows] == t.placement.code(q.placement)]
    factors: list[tuple[str, str, float]] = []
    notes: list[str] = []
    use = same_place if len(same_place) else rows
    own = False  # read from this very stack's results
    anywhere = Query(**{**q.__dict__, "count": -1})
    if q.components and len(same_place):
        # this very stack at other counts beats the accelerator's other stacks
        same_stack = index.matching(same_place, anywhere, any_count=True)
        if len(same_stack):
            use, own = same_stack, True
    if q.components and not own and q.placement == "unknown":
        # a placement that says nothing (a cluster pool whose nodes do not say): the stack's own
        # results wherever they ran, before other stacks' (a probe's 8-H100 pool had answered a
        # recorded stack from every stack's results, forecast a round ahead, beside its own)
        same_stack = index.matching(rows, anywhere, any_count=True, any_placement=True)
        if len(same_stack):
            use, own, same_place = same_stack, True, same_stack
    use, crossed = _of_query_class(index, q, use)
    # as of a held round: its results and older ones where the part has any (never a later
    # round's carried back over its own)
    held = use[index.round_no[use] <= index.round_drift.target(q, q.as_of)]
    use = held if len(held) else use
    latest = index.latest(use)
    value = median(index.unit[latest])
    if not len(same_place) and q.placement != "bare-metal":
        overhead = index.overheads.get((q.accelerator, q.placement))
        if overhead is not None:
            ratio = float(overhead.ratio)
            value = value * ratio if hib else value / ratio
            factors.append(("placement", q.placement, ratio))
        else:
            notes.append(unpaired_placement(q.placement, q.accelerator))
    counts = sorted(set(t.count[latest].tolist()))
    which = "this stack's" if own else "its"
    factors.append(
        (
            "reference",
            f"{q.accelerator}: median of {len(latest)} of {which} result(s) of the latest "
            f"round, counts {counts}" + (" (per accelerator x count)" if hib else ""),
            1.0,
        )
    )
    lo_q, _, hi_q = index.quantiles(q.slice, Basis.INTERPOLATED)
    if crossed is not None and hib:
        value, (lo_q, hi_q) = _cross_class(index, q, value, (lo_q, hi_q), crossed, factors, notes)
    return Estimate(
        Basis.INTERPOLATED,
        value,
        value * math.exp(lo_q),
        value * math.exp(hi_q),
        rows=use,
        factors=factors,
        notes=notes,
    )


def observed_then(index: EvidenceIndex, q: Query, rows: np.ndarray, exact: np.ndarray) -> bool:
    """Whether the exact configuration's results (``exact``, among the part's ``rows``) answer
    ``q``: not where it asks, naming no stack, for a held round by which the part had run the
    slice otherwise but not so (a held round is answered from its own results: interpolated from
    them, not this configuration's later result carried back). A named stack is answered as it
    measured, in its round (``drift.as_measured`` says when that is after the round asked)."""
    if q.components:
        return True
    target = index.round_drift.target(q, q.as_of)
    then = index.round_no[rows] <= target
    return not then.any() or bool((index.round_no[exact] <= target).any())


def _of_query_class(
    index: EvidenceIndex, q: Query, rows: np.ndarray
) -> tuple[np.ndarray, bool | None]:
    """(``rows`` of the query's system class (one node, or several) where the part has any, else
    all of them; None, else whether the query spans nodes: its rows are of the other class)."""
    multi = of_class(index, q.slice, index.slices[q.slice], q.count)[1]
    spans = spans_nodes(index, rows)
    same = rows[spans == multi]
    return (same, None) if len(same) else (rows, multi)


def _cross_class(
    index: EvidenceIndex,
    q: Query,
    value: float,
    band: tuple[float, float],
    to_multi: bool,
    factors: list[tuple[str, str, float]],
    notes: list[str],
) -> tuple[float, tuple[float, float]]:
    """A per-accelerator ``value`` of the other system class moved to the query's by the learned
    factor (``node_scaling``), its spread added to the log ``band``; as is, said so, without one."""
    found = class_factor(index, q.family)
    if found is None:
        kind = "single-node" if to_multi else "multi-node"
        notes.append(
            f"{q.accelerator}'s results of {q.benchmark} {q.scenario} are all of {kind} systems "
            "and too few parts ran both to learn what spanning nodes changes: per accelerator "
            "as published"
        )
        return value, band
    ratio = found.ratio(to_multi)
    down, up = found.spread()
    factors.append(("system class", found.describe(to_multi), ratio))
    return value * ratio, (-math.hypot(band[0], down), math.hypot(band[1], up))


def unpaired_placement(placement: str, accelerator: str) -> str:
    """What an answer on a placement with no paired result for the part says (inference
    interpolations here, MLPerf Training's in ``training``)."""
    return f"no paired results for {placement} on {accelerator}: placement overhead assumed none"


def missing_slice(index: EvidenceIndex, q: Query) -> str:
    """Why a slice has no results: the benchmark, scenario, division or metric never recorded."""
    names = index.benchmarks(q.family)
    if q.benchmark not in names:
        redefined = redefined_reason(q.family, q.benchmark, index.slices)
        if redefined:
            return redefined
        return f"unknown benchmark: {q.benchmark!r} is not in the knowledge base for {q.family}"
    if (
        q.scenario not in index.scenarios(q.family, q.benchmark)
        and q.scenario in load_catalog().scenarios
    ):
        return unrecorded_scenario(q.scenario, q.benchmark, index.scenarios(q.family, q.benchmark))
    if q.scenario not in index.scenarios(q.family, q.benchmark):
        return (
            f"unknown scenario: {q.scenario!r} never recorded for {q.benchmark}; recorded: "
            f"{', '.join(index.scenarios(q.family, q.benchmark))}"
        )
    if q.division not in index.divisions(q.family, q.benchmark):
        return f"unknown division: {q.division!r} never recorded for {q.benchmark}"
    recorded = index.metrics(q.family, q.benchmark, q.scenario)
    close = difflib.get_close_matches(q.metric, recorded, n=1, cutoff=0.6)
    return (
        f"unknown metric: {q.metric!r} never recorded for {q.benchmark} {q.scenario}"
        + (f"; did you mean {close[0]!r}?" if close else "")
        + f"; recorded: {', '.join(recorded)}"
    )
