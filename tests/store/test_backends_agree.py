"""Both backends give identical answers for the same data."""

from __future__ import annotations

import pytest

from stack_advisor.schema.models import IngestBatch, ObservationFilter, PlacementKind
from tests.support.samples import PUBLISHED, TF, make_obs

pytestmark = pytest.mark.neo4j


def _answers(store):
    store.ingest(
        IngestBatch(
            observations=[
                *[make_obs(i) for i in range(30)],
                *[make_obs(i, stack=TF, placement=PlacementKind.VGPU) for i in range(30, 40)],
                *[make_obs(i, source=PUBLISHED, host=None, run_id=None) for i in range(40, 45)],
            ]
        )
    )
    stats = store.stats()
    return {
        "all": [o.model_dump(mode="json") for o in store.query_observations(limit=1000)],
        "vgpu": [
            o.key for o in store.query_observations(ObservationFilter(placement=PlacementKind.VGPU))
        ],
        "counts": stats.counts,
        "by_source": stats.observations_by_source,
        "entities": {
            k: store.list_entities(k)
            for k in ("stacks", "accelerators", "placements", "benchmarks", "hosts", "runs")
        },
    }


def test_embedded_and_neo4j_agree(embedded_store, neo4j_store):
    a, b = _answers(embedded_store), _answers(neo4j_store)
    assert a["counts"] == b["counts"]
    assert a["by_source"] == b["by_source"]
    assert a["vgpu"] == b["vgpu"]
    assert a["entities"] == b["entities"]
    assert a["all"] == b["all"]


def test_server_is_neo4j_5_26(neo4j_store):
    rows = neo4j_store._read("CALL dbms.components() YIELD versions RETURN versions[0] AS v", {})
    assert rows[0]["v"].startswith("5.26.")
