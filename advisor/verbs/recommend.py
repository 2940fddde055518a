"""``recommend``: rank candidates for a workload, one row per (canonical accelerator, placement,
stack), as a pipeline over ``Candidate``s (SkyPilot's optimizer: launchable resources → estimate →
optimisation):

1. the slice and its candidates (``advisor.verbs.candidates``): the rows measured on the
   workload's benchmark slice, grouped so that one GPU and stack is one row whatever system sizes
   published it, plus one row for each (accelerator, placement) the knowledge base knows in the
   family but never saw on this slice (with that accelerator's most recent stack);
2. constraints: the user's, the compatibility rules', known failures' (``candidates.constraint``);
3. estimates (``advisor.verbs.scoring.estimate``), each saying its basis; refused rows (the model
   does not fit, no evidence of that class) are listed under ``excluded`` with the reason;
4. the score (``scoring.score``): the figure for observed rows, the pessimistic end of the
   interval for the others; ``scoring.order`` sorts;
5. the explanation of each ranked row (``advisor.verbs.explain``).
"""

from __future__ import annotations

import time

from advisor.budget import checkpoint
from advisor.results import ExcludedCandidate, RecommendationSet, basis_note, this_node
from advisor.snapshot import Knowledge
from advisor.verbs import scoring
from advisor.verbs.candidates import Candidate, Slice, candidates, constraint, select_slice
from advisor.verbs.explain import explain
from advisor.workload import MLPERF_TRAINING, Objective, Workload
from graph_schema.errors import InvalidInput
from graph_schema.models import PlacementKind

MAX_EXCLUDED_LISTED = 100


def recommend(knowledge: Knowledge, workload: Workload, top: int = 5) -> RecommendationSet:
    """The ``top`` candidates for the workload, best first, with what was excluded and why.

    Raises:
        InvalidInput: ``top`` below 1, or an objective or metric the benchmark has no data for.
        NotFound: the benchmark is not in the knowledge base.
    """
    if top < 1:
        raise InvalidInput(f"top must be >= 1, got {top}")
    answer = rank(knowledge, workload, top)
    here = this_node()
    for r in answer.recommendations:
        r.basis_note = basis_note(r.basis, r.evidence.measured_on, here)
    return answer


class _Exclusions:
    """What was ruled out: counts per short reason, and the first ``MAX_EXCLUDED_LISTED`` rows."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.listed: list[ExcludedCandidate] = []

    def add(self, c: Candidate, reason: str) -> None:
        short = reason.split(":")[0]
        self.counts[short] = self.counts.get(short, 0) + 1
        if len(self.listed) < MAX_EXCLUDED_LISTED:
            self.listed.append(ExcludedCandidate(accelerator=c.accelerator, placement=PlacementKind(c.placement),
                                                 stack_label=c.stack.label(), reason=reason))


def rank(knowledge: Knowledge, workload: Workload, top: int) -> RecommendationSet:
    """The pipeline: slice → candidates → constraints → estimates → score → explanation."""
    start = time.perf_counter()
    sl = select_slice(knowledge, workload)
    found = candidates(knowledge, sl)
    excluded = _Exclusions()
    scored: list[Candidate] = []
    for c in found:
        checkpoint("the recommendation")
        reason = constraint(knowledge, sl, c)
        estimated = scoring.estimate(knowledge, sl, c) if reason is None else reason
        if isinstance(estimated, str):
            excluded.add(c, estimated)
            continue
        scored.append(scoring.score(knowledge, sl, estimated))
    ranked = scoring.order(scored)[:top]
    recs = [explain(knowledge, sl, rank_no, c) for rank_no, c in enumerate(ranked, start=1)]
    return RecommendationSet(
        workload=workload.model_dump(mode="json", exclude_none=True), metric=sl.metric,
        objective=workload.objective.value, generation=knowledge.table.generation,
        candidates_considered=len(found), excluded=excluded.counts, excluded_candidates=excluded.listed,
        recommendations=recs, notes=_notes(knowledge, sl, bool(recs)),
        elapsed_ms=(time.perf_counter() - start) * 1000)


def _notes(knowledge: Knowledge, sl: Slice, any_ranked: bool) -> list[str]:
    workload = sl.workload
    notes = list(sl.notes)
    if workload.objective is Objective.COST and sl.hib:
        notes.append(f"cost from the price table ({knowledge.prices.note or 'packaged'}; "
                     f"{knowledge.prices.currency} per accelerator-hour)")
    if not any_ranked:
        notes.append("no candidate passed the constraints; see 'excluded'")
    if workload.family == MLPERF_TRAINING:
        notes.append("MLPerf Training scores are olympic means of the published runs (fastest and slowest "
                     "dropped); MLCommons' RCP normalisation is not in the result files and is not applied")
    if workload.latency_limits():
        notes.append("latency limits are checked against each configuration's observed p99 (TTFT/TPOT) on "
                     "this benchmark; configurations without such observations are kept with a warning")
    return notes
