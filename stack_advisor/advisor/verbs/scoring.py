"""The middle stages of ``recommend``: each candidate's estimate
(``stack_advisor.advisor.estimate``) at the count the workload asks for, the refusals the workload's
evidence bars make, and the score the ranking sorts by (the figure for observed rows, the
pessimistic end of the interval for the others; per accelerator-hour price for the cost
objective)."""

from __future__ import annotations

import dataclasses

from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.estimate.training import budget_count
from stack_advisor.advisor.results import BASIS_ORDER, Basis
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import ordering, serving
from stack_advisor.advisor.verbs.candidates import Candidate, Slice, mode, query_components
from stack_advisor.advisor.verbs.placement import held_to_bare_metal
from stack_advisor.advisor.workload import MLPERF_TRAINING, Objective, Workload
from stack_advisor.catalog.accelerator_names import is_mixed_system
from stack_advisor.schema.models import PlacementKind


def snippet_count(workload: Workload, observed_counts: list[int]) -> int:
    """The user's count; for MLPerf Training under a budget (``max_count``), the most whole nodes
    that fit it; else one node's worth as observed (the most common count), within the
    user's bounds."""
    hw = workload.hardware
    if hw.count is not None:
        return hw.count
    if (
        workload.family == MLPERF_TRAINING and hw.max_count is not None
    ):  # a budget: use what fits of it
        return budget_count(hw.max_count, observed_counts)
    count = mode(observed_counts) if observed_counts else 1
    if hw.min_count is not None:
        count = max(count, hw.min_count)
    if hw.max_count is not None:
        count = min(count, hw.max_count)
    return int(count)


# ---- stage 3: estimates ---------------------------------------------------------------------


def candidate_query(sl: Slice, c: Candidate, count: int) -> Query:
    """The query that estimates a candidate at ``count``."""
    workload = sl.workload
    return Query(
        workload.family,
        workload.benchmark or "",
        sl.scenario,
        sl.metric,
        sl.division,
        c.accelerator,
        count,
        c.placement,
        # its implementation too where the record says it (vLLM run as MLCommons' reference
        # code: its own results are of that class, never "borrowed across classes")
        components=query_components(c.stack)
        | ({"implementation": str(impl)} if (impl := c.stack.extra.get("implementation")) else {}),
        # the candidate's framework as predict reads a query's: the same stack rules apply
        # (a probe's GH200 row labelled TensorRT 10.10 had been its 10.2 results moved by the
        # round drift, 7% above predict's answer for that very stack)
        framework=" ".join(filter(None, (c.stack.framework, c.stack.framework_version))),
        raw_accelerator=c.published[0],
        as_of=workload.as_of,
        # a stack naming no version would match every stack: its own results are its figure
        stacks=(c.stack_id,) if c.observed and not query_components(c.stack) else (),
    )


BUDGET_SIZES = 3  # the candidate's largest published sizes under a budget tried beside it


def budget_counts(workload: Workload, observed_counts: list[int]) -> list[int]:
    """The counts a candidate is estimated at: ``snippet_count``'s; under an MLPerf Training
    budget also its ``BUDGET_SIZES`` largest published sizes within it (more accelerators are not
    always faster where the evidence at the budget's count is one slow system's)."""
    first = snippet_count(workload, observed_counts)
    hw = workload.hardware
    if workload.family != MLPERF_TRAINING or hw.count is not None or hw.max_count is None:
        return [first]
    floor = max(hw.min_count or 1, 1)
    within = sorted({n for n in observed_counts if floor <= n <= hw.max_count and n != first})
    return [first, *within[-BUDGET_SIZES:][::-1]]


def estimate(knowledge: Knowledge, sl: Slice, c: Candidate) -> Candidate | str:
    """The candidate with its count and estimate, or why it is refused (no estimate, too little
    evidence, too low a confidence); under a Training budget, at the count of those
    ``budget_counts`` gives that scores best (a probe's B200 retinanet under 32 had been ranked
    at 32, 27.7 min from one university's system, where its 16 ran in 12.6)."""
    counts = budget_counts(sl.workload, [int(n) for n in knowledge.table.count[c.rows]])
    tried = [_estimate_at(knowledge, sl, c, n) for n in counts]
    fit = [t for t in tried if isinstance(t, Candidate)]
    if len(tried) == 1 or not fit:
        return tried[0]
    return max(fit, key=lambda t: score(knowledge, sl, t).score)


def _estimate_at(knowledge: Knowledge, sl: Slice, c: Candidate, count: int) -> Candidate | str:
    workload, table = sl.workload, knowledge.table
    if is_mixed_system(c.accelerator):
        own = sorted({int(n) for n in table.count[c.rows]})
        if count not in own:
            # its parts and their counts are what was published: no machine of it at another size
            sizes = ", ".join(str(n) for n in own)
            return (
                f"a system of several accelerator models is ranked at its own size only ({sizes})"
            )
    q = candidate_query(sl, c, count)
    est = held_to_bare_metal(knowledge.index, q, knowledge.index.estimate(q), sl.hib)
    if est.basis is Basis.UNSUPPORTED:
        return est.reason or "unsupported"
    if not workload.include_predicted and est.basis is not Basis.OBSERVED:
        # measured, but not at this count or placement: an estimate, which --observed-only drops
        return f"not observed as asked (--observed-only): {est.basis.value} from its results"
    if est.basis is Basis.OBSERVED and len(est.rows) < workload.min_evidence:
        return f"fewer than min_evidence={workload.min_evidence} observations"
    if est.confidence < workload.min_confidence:
        return f"confidence {est.confidence:.2f} below --min-confidence {workload.min_confidence:g}"
    checks: list[str] = []
    if workload.latency_limits():  # limits apply to unobserved latencies through their estimates
        code = int(table.candidate.codes[c.group[0]]) if len(c.group) else -1
        excluded, checks = serving.estimated_limits(knowledge.index, workload, q, code)
        if excluded:
            return excluded
    return dataclasses.replace(c, count=count, est=est, latency_checks=tuple(checks))


# ---- stage 4: score -------------------------------------------------------------------------


def score(knowledge: Knowledge, sl: Slice, c: Candidate) -> Candidate:
    """The candidate's figure at its count and the score it ranks by (higher ranks first)."""
    est = c.est
    assert (
        est is not None and est.value is not None and est.low is not None and est.high is not None
    )
    scale = 1 if (sl.per_acc or not sl.hib) else c.count
    value, low, high = est.value * scale, est.low * scale, est.high * scale
    if est.basis is Basis.OBSERVED:  # a measured figure lies inside its own interval
        low, high = min(low, value), max(high, value)
    observed = est.basis is Basis.OBSERVED
    hib = not lower_better(sl)
    key = ordering.score(value, low, high, observed=observed, hib=hib)
    if hib and sl.workload.objective is Objective.COST:  # per accelerator-hour's price
        price, _ = knowledge.prices.price(c.published[0], PlacementKind(c.placement))
        end = est.value if observed else est.low
        key = end * 3600.0 / price
    return dataclasses.replace(c, value=value, low=low, high=high, score=key)


def order(
    scored: list[Candidate], lower_better: bool = False, derived: bool = False
) -> list[Candidate]:
    """Best first. An extrapolation beyond every accelerator measured on the benchmark does not
    outrank the measurements on specs alone: its score is capped at the best observed one's.
    Equal scores (two pessimistic ends both at a published latency limit) go to the better
    basis, then the better central figure (lower where ``lower_better``), and only then by
    name; capped extrapolations keep to name order among themselves (their central figures are
    the specs alone the cap keeps from ranking). In the ranking of a ``derived`` scenario (no
    part measured in it) the measurements are the parts whose figure was derived from their own."""
    measured = _derived_from_measured if derived else (lambda c: _basis(c) is Basis.OBSERVED)
    best = max((c.score for c in scored if measured(c)), default=None)
    capped = [
        dataclasses.replace(c, score=best, capped=True)
        if best is not None and c.est is not None and c.est.extrapolated and c.score > best
        else c
        for c in scored
    ]
    sign = 1.0 if lower_better else -1.0
    return sorted(
        capped,
        key=lambda c: (
            -c.score,
            BASIS_ORDER[_basis(c)],
            0.0 if c.capped else sign * c.value,
            c.accelerator,
            c.stack_id,
        ),
    )


def lower_better(sl: Slice) -> bool:
    """Whether the slice's ranked figure is better lower (a time to train, a latency): the
    metric's own direction (the objective chose the metric, ``candidates.choose_metric``)."""
    return not sl.hib


def _derived_from_measured(c: Candidate) -> bool:
    assert c.est is not None
    return c.est.derived_from is Basis.OBSERVED


def _basis(c: Candidate) -> Basis:
    assert c.est is not None
    return c.est.basis
