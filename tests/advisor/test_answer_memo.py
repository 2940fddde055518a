"""Warm answers come from memory, but never from a past generation of the knowledge base: new
data (here: a later MLPerf round) changes the answer at once."""

from __future__ import annotations

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import Observation
from stack_advisor.store.base import Store
from stack_advisor.store.starter import load_snapshot


def _resnet50(round_: str) -> list[Observation]:
    return [
        o
        for o in load_snapshot().observations
        if o.benchmark.name == "resnet50" and o.provenance.details.get("round") == round_
    ]


def test_memoised_answers_follow_the_store_generation(embedded_store: Store) -> None:
    embedded_store.ingest_observations(_resnet50("v1.1"))
    advisor = Advisor(embedded_store)
    workload = Workload(benchmark="resnet50", scenario="Offline", include_predicted=False)
    first = advisor.recommend(workload, top=3)
    again = advisor.recommend(workload, top=3)
    assert again.recommendations == first.recommendations and again.generation == first.generation
    assert {r for rec in first.recommendations for r in rec.evidence.rounds} == {"v1.1"}

    embedded_store.ingest_observations(_resnet50("v3.0"))
    after = advisor.recommend(workload, top=3)
    assert after.generation != first.generation
    rounds = {r for rec in after.recommendations for r in rec.evidence.rounds}
    assert "v3.0" in rounds, "the answer after new data must see the new data"
    assert (
        after.recommendations[0].value > first.recommendations[0].value
    )  # H100 results arrive in v3.0

    computed = Advisor(embedded_store, memo_answers=False).recommend(workload, top=3)
    assert [r.candidate for r in computed.recommendations] == [
        r.candidate for r in after.recommendations
    ]
