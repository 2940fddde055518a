"""Concurrent writers of overlapping batches (the API serves ingests from a thread pool)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from graph_schema.models import IngestBatch
from tests.graph_schema.test_store_contract import _obs


def test_overlapping_batches_written_at_once_store_each_observation_once(store):
    batches = [IngestBatch(observations=[_obs(i) for i in range(start, start + 40)])
               for start in (0, 10, 20, 0)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(store.ingest, batches))
    assert sum(r.observations_new for r in results) == 60
    stats = store.stats()
    assert stats.counts["Observation"] == 60
    assert stats.counts["Stack"] == 1
    assert len(store.query_observations(limit=1000)) == 60
