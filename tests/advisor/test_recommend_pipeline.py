"""``recommend`` stage by stage on the starter knowledge base: each stage of the pipeline
(slice → candidates → constraints → estimates → score → explanation) is a function of a
``Knowledge`` snapshot and its inputs, and is checked here on its own."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from stack_advisor.advisor.estimate.query import Estimate
from stack_advisor.advisor.estimate.references_class import spans_nodes
from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import scoring
from stack_advisor.advisor.verbs.candidates import Candidate, candidates, constraint, select_slice
from stack_advisor.advisor.verbs.explain import explain
from stack_advisor.advisor.verbs.predict import predict
from stack_advisor.advisor.verbs.recommend import recommend
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import NotFound
from stack_advisor.schema.models import SoftwareStack


@pytest.fixture(scope="module")
def knowledge(kb_advisor: Any) -> Knowledge:
    return kb_advisor.knowledge()


def _offline(**extra: Any) -> Workload:
    return Workload(benchmark="resnet50", scenario="Offline", **extra)


def test_the_slice_names_metric_direction_and_division(knowledge: Knowledge) -> None:
    sl = select_slice(knowledge, _offline())
    assert (sl.metric, sl.hib, sl.division, sl.scenario) == (
        "samples_per_second",
        True,
        "closed",
        "Offline",
    )
    assert len(sl.rows) and set(knowledge.table.metric.values(sl.rows)) == {"samples_per_second"}
    with pytest.raises(NotFound, match="similar: resnet50"):
        select_slice(knowledge, Workload(benchmark="resnet51"))


def test_candidates_are_observed_groups_then_unobserved_pairs(knowledge: Knowledge) -> None:
    found = candidates(knowledge, select_slice(knowledge, _offline()))
    observed = [c for c in found if c.observed]
    assert observed and all(len(c.group) == len(c.rows) for c in observed)
    first_unobserved = next(i for i, c in enumerate(found) if not c.observed)
    assert all(not c.observed for c in found[first_unobserved:])  # observed first

    # one candidate per (accelerator, placement, stack), a stack's systems spanning nodes one per
    # size beside its one-node systems
    def size(c: Candidate) -> int:
        spans = spans_nodes(knowledge.index, c.group) if len(c.group) else np.zeros(0, dtype=bool)
        counts = {int(n) for n in knowledge.table.count[c.group[spans]]}
        assert len(counts) <= 1 and (not counts or spans.all()), c
        return counts.pop() if counts else 0

    assert len({(c.accelerator, c.placement, c.stack_id, size(c)) for c in found}) == len(found)


def test_constraints_name_why(knowledge: Knowledge) -> None:
    sl = select_slice(
        knowledge, _offline(hardware={"accelerators": ["H100"], "include_cpu": False})
    )
    reasons = {constraint(knowledge, sl, c) for c in candidates(knowledge, sl)}
    assert None in reasons and "accelerator not allowed" in reasons


def test_estimate_then_score_then_order(knowledge: Knowledge) -> None:
    sl = select_slice(knowledge, _offline())
    estimated = [scoring.estimate(knowledge, sl, c) for c in candidates(knowledge, sl)]
    kept = [c for c in estimated if not isinstance(c, str)]
    assert kept and all(c.est is not None and c.count >= 1 for c in kept)
    scored = [scoring.score(knowledge, sl, c) for c in kept]
    ranked = scoring.order(scored)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)
    best = ranked[0]
    assert best.low <= best.value <= best.high
    rec = explain(knowledge, sl, 1, best)
    assert (
        rec.rank == 1 and rec.value == best.value and rec.candidate.accelerator == best.accelerator
    )


def _scored(
    accelerator: str, value: float, score: float, basis: Basis = Basis.TRANSFERRED
) -> Candidate:
    est = Estimate(basis, value, value * 0.5, value * 2)
    return Candidate(
        accelerator,
        "bare-metal",
        "stk",
        SoftwareStack(),
        [],
        False,
        [accelerator],
        count=4,
        est=est,
        value=value,
        score=score,
    )


def test_equal_scores_go_to_the_better_basis_then_the_better_central_figure_not_the_name() -> None:
    # two TTFT estimates whose pessimistic ends both sit at the 2,000 ms limit tie on the score:
    # the lower central TTFT ranks first, whatever the names; an observed figure before both
    tied = [
        _scored("AAA-slow", 1500.0, -2000.0),
        _scored("ZZZ-fast", 600.0, -2000.0),
        _scored("MMM-measured", 2000.0, -2000.0, Basis.OBSERVED),
    ]
    assert [c.accelerator for c in scoring.order(tied, lower_better=True)] == [
        "MMM-measured",
        "ZZZ-fast",
        "AAA-slow",
    ]
    # higher is better (throughput): the higher central figure first
    up = [_scored("AAA-slow", 100.0, 50.0), _scored("ZZZ-fast", 300.0, 50.0)]
    assert [c.accelerator for c in scoring.order(up)] == ["ZZZ-fast", "AAA-slow"]


def test_the_pipeline_is_recommend(knowledge: Knowledge, kb_advisor: Any) -> None:
    direct = recommend(knowledge, _offline(), top=3)
    through_engine = kb_advisor.recommend(_offline(), top=3)
    assert direct.model_dump(exclude={"elapsed_ms"}) == through_engine.model_dump(
        exclude={"elapsed_ms"}
    )


def test_knowledge_is_immutable_and_builds_from_any_table(knowledge: Knowledge) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        knowledge.table = knowledge.table  # type: ignore[misc]
    fresh = Knowledge.from_table(knowledge.table)  # as evaluation builds one per training split
    query = {
        "accelerator": "NVIDIA A100-SXM4-80GB",
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    (a,), (b,) = predict(fresh, [query]), predict(knowledge, [query])
    assert a.basis is b.basis is Basis.OBSERVED and a.value == b.value
