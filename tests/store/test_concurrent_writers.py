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


@pytest.mark.neo4j
def test_two_writers_that_lock_in_opposite_orders_both_commit(neo4j_store):
    """A deadlock forced on the server: each writer holds one node and asks for the other's.
    Neo4j stops one; its transaction is run again and both increments land (the driver's own
    retry or the store's: which one depends on where the driver reports the deadlock)."""
    neo4j_store._write(
        lambda run: run(
            "CREATE (:DeadlockProbe {k: 'a', v: 0}), (:DeadlockProbe {k: 'b', v: 0})", {}
        )
    )
    barrier = threading.Barrier(2)
    bump = "MATCH (n:DeadlockProbe {k: $k}) SET n.v = n.v + 1 RETURN n.v AS v"

    def writer(first: str, second: str) -> None:
        waited = False

        def work(run):
            nonlocal waited
            run(bump, {"k": first})
            if not waited:  # only the first attempt waits: a retry runs alone
                waited = True
                barrier.wait(timeout=30)
            run(bump, {"k": second})

        neo4j_store._write(work)

    before = neo4j_store.transient_retries
    with ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(writer, "a", "b"), pool.submit(writer, "b", "a")]:
            done.result()
    rows = neo4j_store._read("MATCH (n:DeadlockProbe) RETURN n.k AS k, n.v AS v ORDER BY k", {})
    assert rows == [{"k": "a", "v": 2}, {"k": "b", "v": 2}]
    assert neo4j_store.transient_retries > before  # the server did detect the deadlock


def _deadlock_error() -> type:
    from neo4j.exceptions import TransientError

    class Deadlock(TransientError):
        """The server's deadlock as the driver hydrates it (its code is read-only)."""

        @property
        def code(self) -> str:
            return "Neo.TransientError.Transaction.DeadlockDetected"

    return Deadlock


@pytest.mark.neo4j
def test_a_deadlock_reported_as_a_failed_result_is_run_again(neo4j_store):
    """Where the driver, closing a transaction that met a deadlock, touches the failed result
    again, it raises ResultFailedError from the deadlock: never retried by the driver, and CI's
    eight writers had failed on it as "Neo4j is unavailable". The first attempt here fails that
    way (the one error injected; the store, its retry and Neo4j are real); the write lands."""
    from neo4j.exceptions import ResultFailedError

    attempts = []
    _Deadlock = _deadlock_error()

    def work(run):
        attempts.append(1)
        run("MERGE (n:RetryProbe {k: 'a'}) ON CREATE SET n.v = 0 SET n.v = n.v + 1", {})
        if len(attempts) == 1:
            raise ResultFailedError(None, "The result has failed.") from _Deadlock("deadlock")

    before = neo4j_store.transient_retries
    neo4j_store._write(work)
    assert len(attempts) == 2 and neo4j_store.transient_retries > before
    rows = neo4j_store._read("MATCH (n:RetryProbe) RETURN n.v AS v", {})
    assert rows == [{"v": 1}]  # the failed attempt rolled back; the retry's write is the one


def test_the_servers_error_is_read_through_a_failed_result():
    from neo4j.exceptions import ResultFailedError, ServiceUnavailable, TransientError

    from stack_advisor.store.neo4j_store import server_error

    deadlock = TransientError("deadlock detected")
    try:
        raise ResultFailedError(None, "The result has failed.") from deadlock
    except ResultFailedError as failed:
        assert server_error(failed) is deadlock
    plain = ResultFailedError(None, "The result has failed.")
    assert server_error(plain) is plain  # no server error under it: itself
    down = ServiceUnavailable("gone")
    assert server_error(down) is down
