"""``recommend``: rank candidates for a workload, one row per (canonical accelerator, placement,
stack), as a pipeline over ``Candidate``s (SkyPilot's optimizer: launchable resources → estimate →
optimisation):

1. the slice and its candidates (``stack_advisor.advisor.verbs.candidates``): the rows measured on
   the workload's benchmark slice, grouped so that one GPU and stack is one row whatever system
   sizes published it, plus one row for each (accelerator, placement) the knowledge base knows in
   the family but never saw on this slice (with that accelerator's most recent stack);
2. constraints: the user's, the compatibility rules', known failures' (``candidates.constraint``);
3. estimates (``stack_advisor.advisor.verbs.scoring.estimate``), each saying its basis; refused rows
   (the model does not fit, no evidence of that class) are listed under ``excluded`` with the
   reason;
4. the score (``scoring.score``): the figure for observed rows, the pessimistic end of the
   interval for the others; ``scoring.order`` sorts; unless ``workload.all``, the default view
   keeps one row per (accelerator, count, placement, stack family) (``default_view.fold``);
5. the explanation of each ranked row (``stack_advisor.advisor.verbs.explain``).
"""

from __future__ import annotations

import time

import numpy as np

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.advisor.estimate.as_of import published_on
from stack_advisor.advisor.estimate.drift import before_first, round_label
from stack_advisor.advisor.estimate.training_scaling import budget_refusal
from stack_advisor.advisor.proxy.ranking import by_proxy
from stack_advisor.advisor.results import (
    MAX_TOP,
    ExcludedCandidate,
    Recommendation,
    RecommendationSet,
    basis_note,
)
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import default_view, scoring
from stack_advisor.advisor.verbs.bounds import count_beyond_published
from stack_advisor.advisor.verbs.candidates import (
    Candidate,
    Slice,
    candidates,
    constraint,
    select_slice,
)
from stack_advisor.advisor.verbs.explain import explain
from stack_advisor.advisor.verbs.feasibility import infeasible
from stack_advisor.advisor.workload import MLPERF_TRAINING, Objective, Workload
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import PlacementKind

MAX_EXCLUDED_LISTED = 100


def recommend(
    knowledge: Knowledge, workload: Workload, top: int = 5, *, here: str | None = None
) -> RecommendationSet:
    """The ``top`` candidates for the workload, best first, with what was excluded and why.
    ``here`` is the node that answers (``stack_advisor.advisor.results.this_node``): an observed row
    measured on it says so (``basis_note``); None: no row is "measured on this node".

    Raises:
        InvalidInput: ``top`` below 1, or an objective or metric the benchmark has no data for.
        NotFound: the benchmark is not in the knowledge base.
    """
    if top < 1:
        raise InvalidInput(f"top must be >= 1, got {top}")
    unheld = workload.hardware.unheld(str(n) for n in knowledge.table.accelerator.vocab)
    if unheld:  # before the proxy too: a name nothing knows selects nothing, silently
        raise InvalidInput(unheld)
    answer = by_proxy(knowledge, workload, top) or rank(knowledge, workload, top)
    for r in answer.recommendations:
        r.basis_note = basis_note(r.basis, r.evidence.measured_on, here)
    return answer


# The user's own filters: counted, listed only after every other reason (they are what was asked).
_FILTERS = (
    "accelerator not allowed",
    "placement not allowed",
    "CPU-only excluded",
    "not observed (--observed-only)",
)
# What the candidate cannot do (``stack_advisor.advisor.verbs.feasibility``): listed before refusals
# for want of evidence.
_INFEASIBLE = (
    "model does not fit in memory",
    "stack cannot run the model",
    "stack cannot be installed",
    "stack cannot run on the accelerator",
    "driver does not apply",
)


class _Exclusions:
    """What was ruled out: counts per short reason, and the first ``MAX_EXCLUDED_LISTED`` rows,
    ordered so that what the user asked about comes first: candidates of the accelerators the
    user named, then the other reasons by how often they occur, the user's own filters last."""

    def __init__(self, workload: Workload) -> None:
        self.hardware = workload.hardware
        self.counts: dict[str, int] = {}
        self._all: list[tuple[Candidate, str]] = []

    def add(self, c: Candidate, reason: str) -> None:
        short = reason.split(":")[0]
        self.counts[short] = self.counts.get(short, 0) + 1
        self._all.append((c, reason))

    def why_empty(self) -> str:
        """Why nothing was ranked: the reasons of what the user asked about first."""
        listed = self.listed()
        if not listed:
            return "no candidate: the knowledge base has none for this benchmark slice"
        asked = [e for e in listed if e.reason.split(":")[0] not in _FILTERS]
        head = "; ".join(dict.fromkeys(f"{e.accelerator}: {e.reason}" for e in asked[:3]))
        filtered = sum(n for k, n in self.counts.items() if k in _FILTERS)
        tail = f"; {filtered} more left out by the request's own filters" if filtered else ""
        return (
            f"no candidate passed: {head or 'every candidate was filtered out'}{tail} (see "
            "'excluded')"
        )

    def listed(self) -> list[ExcludedCandidate]:
        asked = self.hardware.accelerators

        def key(item: tuple[Candidate, str]) -> tuple[int, int, int]:
            c, reason = item
            short = reason.split(":")[0]
            named = bool(asked) and any(
                self.hardware.allows(n) for n in (c.accelerator, *c.published)
            )
            kind = (
                2
                if short in _FILTERS
                else 0
                if short in _INFEASIBLE or short.startswith("driver")
                else 1
            )
            return (0 if named else 1, kind, -self.counts[short])

        ordered = sorted(self._all, key=key)  # stable: candidates keep their order within a key
        return [
            ExcludedCandidate(
                accelerator=c.accelerator,
                placement=PlacementKind(c.placement),
                stack_label=c.stack.label(),
                reason=reason,
            )
            for c, reason in ordered[:MAX_EXCLUDED_LISTED]
        ]


def _before_the_slice(knowledge: Knowledge, sl: Slice) -> str | None:
    """Why nothing is ranked for the round the workload asks (``drift.before_first``: before the
    slice's first held round, or a date before every dated round; every candidate would be
    refused alike), or None; our own measurements are of no round."""
    drift, key, as_of = knowledge.index.round_drift, sl.key, sl.workload.as_of
    target, held = drift.slice_target(key, as_of), drift.rounds(key)
    if held and (target <= 0 or target < held[0]):
        return before_first(key, as_of, target, held)
    return None


def _past_round(knowledge: Knowledge, target: float, family: str) -> float | None:
    """``target`` where it is a held round before the family's newest (candidates may have come
    later), else None: at the newest round or beyond it, nothing is later."""
    newest = max(knowledge.index.round_drift.family_rounds(family), default=0.0)
    return target if 0 < target < newest else None


def _measured_after(knowledge: Knowledge, c: Candidate, target: float, family: str) -> str | None:
    """Why a candidate is not ranked as of the held round ``target`` (``_past_round``): every
    result it was made from came after it (the stack, or the part, was not published by then),
    or a part of the catalogue launched in a year after the round's; else None."""
    if not len(c.rows):
        entry = load_catalog().accelerators.get(c.accelerator)
        day = published_on(family, target)
        if entry and entry.launch_year and day and entry.launch_year > day.year:
            return f"launched in {entry.launch_year}, after the round asked ({round_label(target)})"
        return None
    first = float(knowledge.index.round_no[np.asarray(c.rows)].min())
    if not first > target:
        return None
    return f"first measured in {round_label(first)}, after the round asked ({round_label(target)})"


def rank(knowledge: Knowledge, workload: Workload, top: int) -> RecommendationSet:
    """The pipeline: slice → candidates → constraints → estimates → score → explanation."""
    start = time.perf_counter()
    _check_counts(knowledge, workload)
    sl = select_slice(knowledge, workload)
    early = _before_the_slice(knowledge, sl)
    if early:
        raise NotFound(early)
    budget = (
        workload.hardware.max_count
        if workload.family == MLPERF_TRAINING and workload.hardware.count is None
        else None
    )
    refusal = (
        budget_refusal(
            budget, knowledge.table.count[sl.rows].astype(int).tolist(), workload.benchmark or ""
        )
        if budget is not None
        else None
    )
    if refusal:
        raise InvalidInput(refusal)
    found = candidates(knowledge, sl)
    excluded = _Exclusions(workload)
    scored: list[Candidate] = []
    past = _past_round(
        knowledge, knowledge.index.round_drift.slice_target(sl.key, workload.as_of), workload.family
    )
    for c in found:
        checkpoint("the recommendation")
        reason = (
            (_measured_after(knowledge, c, past, workload.family) if past else None)
            or constraint(knowledge, sl, c)
            or infeasible(
                knowledge,
                sl,
                c,
                scoring.snippet_count(workload, [int(n) for n in knowledge.table.count[c.rows]]),
            )
        )
        estimated = scoring.estimate(knowledge, sl, c) if reason is None else reason
        if isinstance(estimated, str):
            excluded.add(c, estimated)
            continue
        scored.append(scoring.score(knowledge, sl, estimated))
    ordered = scoring.order(scored, scoring.lower_better(sl), derived=sl.derived)
    shown = [(c, 0) for c in ordered] if workload.all_rows else default_view.fold(ordered)
    ranked = [c for c, _ in shown[:top]]
    recs = [explain(knowledge, sl, rank_no, c) for rank_no, c in enumerate(ranked, start=1)]
    for rec, (_, more) in zip(recs, shown):
        rec.more_results = more
    _mark_twins(ranked, recs)
    return RecommendationSet(
        workload=workload.model_dump(mode="json", exclude_none=True),
        metric=sl.metric,
        objective=workload.objective.value,
        generation=knowledge.table.generation,
        candidates_considered=len(found),
        excluded=excluded.counts,
        excluded_candidates=excluded.listed(),
        recommendations=recs,
        notes=_notes(knowledge, sl, bool(recs), excluded)
        + _folded_note(shown)
        + _cut_note(workload, len(shown), top),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


def _check_counts(knowledge: Knowledge, workload: Workload) -> None:
    """Raises: InvalidInput for a count beyond every published system."""
    hw = workload.hardware
    for field, count in (("count", hw.count), ("min_count", hw.min_count)):
        beyond = count_beyond_published(knowledge.table, count, field)
        if beyond:
            raise InvalidInput(beyond)


def _cut_note(workload: Workload, ranked: int, top: int) -> list[str]:
    """Where every row was asked for (``all``) and more were ranked than ``top`` shows."""
    if not workload.all_rows or ranked <= top:
        return []
    more = (
        f"top (--top) up to {MAX_TOP} shows more"
        if top < MAX_TOP
        else "narrow the workload (accelerators, counts, placements) to see them"
    )
    return [f"{ranked - top} more ranked rows than the {top} shown: {more}"]


def _folded_note(shown: list[tuple[Candidate, int]]) -> list[str]:
    folded = sum(more for _, more in shown)
    if not folded:
        return []
    return [
        f"one row per (accelerator, count, placement, stack family), its best evidence: "
        f"{folded} more results folded in (each row's more_results; all=true / --all lists "
        "every row)"
    ]


def _mark_twins(ranked: list[Candidate], recs: list[Recommendation]) -> None:
    """Rows that read alike (accelerator, count, placement and stack label) but are different
    stacks say how they differ (e.g. one served through Triton), so they do not look like
    duplicates."""
    seen: dict[tuple[str, int, str, str], list[int]] = {}
    for i, c in enumerate(ranked):
        seen.setdefault((c.accelerator, c.count, c.placement, c.stack.label()), []).append(i)
    for members in seen.values():
        for i in members:
            for j in members:
                if i == j:
                    continue
                mine, theirs = ranked[i].stack.components(), ranked[j].stack.components()
                diff = [
                    f"{k} {mine.get(k, 'none')} here, {theirs.get(k, 'none')} there"
                    for k in sorted(set(mine) | set(theirs))
                    if mine.get(k) != theirs.get(k)
                ]
                what = "; ".join(diff) or "the image or other fields the label leaves out"
                recs[i].warnings.append(
                    f"same accelerator, count and stack label as #{recs[j].rank}; "
                    f"the stacks differ in: {what}"
                )


def _notes(knowledge: Knowledge, sl: Slice, any_ranked: bool, excluded: _Exclusions) -> list[str]:
    workload = sl.workload
    notes = list(sl.notes)
    if workload.objective is Objective.COST and sl.hib:
        notes.append(
            f"cost from the price table ({knowledge.prices.note or 'packaged'}; "
            f"{knowledge.prices.currency} per accelerator-hour)"
        )
    if not any_ranked:
        notes.append(excluded.why_empty())
    if workload.family == MLPERF_TRAINING:
        notes.append(
            "MLPerf Training scores are olympic means of the published runs (fastest and slowest "
            "dropped); MLCommons' RCP normalisation is not in the result files and is not applied"
        )
    unheld = _limits_unheld(knowledge, sl)
    notes.extend(unheld)
    if len(unheld) < len(workload.latency_limits()):
        notes.append(
            "latency limits are checked against each configuration's observed p99 (TTFT/TPOT) on "
            "this benchmark; one without such observations against its estimated p99: excluded "
            "when even the estimate's low end is above the limit, kept with a warning when its "
            "interval straddles it"
        )
    return notes


def _limits_unheld(knowledge: Knowledge, sl: Slice) -> list[str]:
    """A note for each latency limit the workload states that no result of its benchmark
    records (a TTFT limit on resnet50): it cannot be applied, and says so. The rows are those
    the limits are checked on (``serving.latency_exclusions``: the benchmark's, every scenario)."""
    t = knowledge.table
    held = {t.metric.vocab[c] for c in set(t.metric.codes[sl.bench_rows].tolist())}
    bench = " ".join(filter(None, (sl.workload.benchmark, sl.workload.scenario)))
    return [
        f"--{name.replace('_', '-')} not applied: no {bench or 'such'} result records a p99 "
        f"{what} (LLM Server and Interactive results do)"
        for name, (_, metric, what) in sl.workload.latency_limits().items()
        if metric not in held
    ]
