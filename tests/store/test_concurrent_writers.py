"""Concurrent writers of overlapping batches (the API serves ingests from a thread pool)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from stack_advisor.catalog.canonical import canonical_observation
from stack_advisor.schema.models import IngestBatch
from tests.support.samples import WRITERS, make_obs, overlapping_batches


def test_overlapping_batches_written_at_once_store_each_observation_once(store):
    batches = [
        IngestBatch(observations=[make_obs(i) for i in range(start, start + 40)])
        for start in (0, 10, 20, 0)
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(store.ingest, batches))
    assert sum(r.observations_new for r in results) == 60
    stats = store.stats()
    assert stats.counts["Observation"] == 60
    assert stats.counts["Stack"] == 1
    assert len(store.query_observations(limit=1000)) == 60


@pytest.mark.neo4j
def test_eight_writers_on_neo4j_lose_and_duplicate_nothing(neo4j_store, record_property):
    batches = overlapping_batches()
    # the store keeps observations in catalogue names, so their keys are the canonical ones
    expected = {
        canonical_observation(o).observation_key
        for mine in batches
        for b in mine
        for o in b.observations
    }
    barrier = threading.Barrier(WRITERS)

    def writer(mine: list[IngestBatch]) -> int:
        barrier.wait()
        return sum(neo4j_store.ingest(b).observations_new for b in mine)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        new = sum(pool.map(writer, batches))
    record_property("transient_retries", neo4j_store.transient_retries)
    keys = [o.key for o in neo4j_store.iter_observations()]
    assert len(keys) == len(set(keys)), "duplicated observations"
    assert set(keys) == expected, "lost observations"
    assert new == len(expected)  # each one reported new exactly once
    stats = neo4j_store.stats()
    assert stats.counts["Observation"] == len(expected)
    assert stats.counts["Stack"] == 3 and stats.counts["Host"] == 5
