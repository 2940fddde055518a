"""Fault tests on loopback (issue 18): kill -9 of the API and of Neo4j mid-ingest, and Neo4j
stopped under a running API. Real processes: the API under uvicorn, Neo4j from
tests/support/neo4j_server.py. Counts are checked after restart: a batch is all or nothing, and
re-sending everything (as a collector flushing its spool does) restores the exact total."""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.api import document
from tests.support.api_process import Api

PER_DOCUMENT = 40
PROBE_TIMEOUT_S = 3.0  # the Deployment's probes (deploy/base/api/deployment.yaml)

pytestmark = pytest.mark.slow


@pytest.fixture
def api_tokens() -> dict[str, str]:
    return {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}


def _post(api: Api, token: str, doc: dict[str, Any], timeout: float = 60) -> int:
    try:
        return httpx.post(
            api.url + "/v1/observations",
            json=doc,
            timeout=timeout,
            headers={"Authorization": f"Bearer {token}"},
        ).status_code
    except httpx.TransportError:
        return -1


def _get(api: Api, token: str, params: dict[str, Any], patience: float = 180) -> Any:
    """GET /v1/observations, retried while the store answers 503 (a server just back from a
    crash recovers and warms up first; on a busy machine that takes a while)."""
    deadline = time.monotonic() + patience
    while True:
        r = httpx.get(
            api.url + "/v1/observations",
            params=params,
            timeout=60,
            headers={"Authorization": f"Bearer {token}"},
        )
        if r.status_code != 503 or time.monotonic() > deadline:
            assert r.status_code == 200, r.text
            return r.json()
        time.sleep(float(r.headers.get("Retry-After", "1")))


def _count(api: Api, token: str) -> int:
    total, after = 0, None
    while True:
        params: dict[str, Any] = {"limit": 1000} | ({"after": after} if after else {})
        body = _get(api, token, params)
        total += len(body["items"])
        after = body["next_after"]
        if after is None:
            return total


def _docs(n: int) -> list[dict[str, Any]]:
    return [document(f"run-fault-{i}", n=PER_DOCUMENT, value=10.0 + i) for i in range(n)]


def _ingest_until_killed(
    api: Api, token: str, docs: list[dict[str, Any]], kill: Any, kill_after: int
) -> list[int]:
    """Post documents one after another; ``kill()`` once ``kill_after`` were acknowledged,
    while the next one is in flight. Returns each document's status (-1: no answer)."""
    statuses: list[int] = []
    killer: threading.Thread | None = None
    for i, doc in enumerate(docs):
        if i == kill_after:
            killer = threading.Thread(target=lambda: (time.sleep(0.05), kill()))
            killer.start()
        statuses.append(_post(api, token, doc, timeout=120))
    if killer is not None:
        killer.join()
    return statuses


def _check_atomic(count: int, statuses: list[int]) -> None:
    acknowledged = sum(1 for s in statuses if s == 200)
    unanswered = sum(1 for s in statuses if s != 200)
    # whole documents only: every acknowledged one, plus possibly some of those that got no
    # answer (committed before the answer was lost), never a part of one
    assert count % PER_DOCUMENT == 0, count
    assert acknowledged * PER_DOCUMENT <= count <= (acknowledged + unanswered) * PER_DOCUMENT


def test_kill_9_of_the_api_mid_ingest_loses_and_splits_nothing(
    tmp_path: Path, api_tokens: dict[str, str]
) -> None:
    store = f"embedded:{tmp_path / 'kb'}"
    api = Api(store, api_tokens, tmp_path / "api.log").start()
    docs = _docs(12)
    try:
        statuses = _ingest_until_killed(api, api_tokens["write"], docs, api.kill, kill_after=4)
        assert statuses[:4] == [200] * 4 and -1 in statuses
        api.start()  # same store: the embedded engine recovers from its WAL
        _check_atomic(_count(api, api_tokens["read"]), statuses)
        assert all(_post(api, api_tokens["write"], d) == 200 for d in docs)  # the spool's flush
        assert _count(api, api_tokens["read"]) == len(docs) * PER_DOCUMENT
    finally:
        api.stop()


@pytest.mark.neo4j
def test_kill_9_of_neo4j_mid_ingest_loses_and_splits_nothing(
    tmp_path: Path, local_neo4j: Any, api_tokens: dict[str, str]
) -> None:
    api = Api(local_neo4j.uri, api_tokens, tmp_path / "api.log").start()
    docs = _docs(8)
    try:
        statuses = _ingest_until_killed(
            api, api_tokens["write"], docs, local_neo4j.kill, kill_after=3
        )
        assert statuses[:3] == [200] * 3
        assert all(s in (200, 503) for s in statuses), statuses  # never a 500, never silence
        local_neo4j.start()  # same data directory and port; the API is not restarted
        _wait_ready(api, 90)
        _check_atomic(_count(api, api_tokens["read"]), statuses)
        assert all(_post(api, api_tokens["write"], d) == 200 for d in docs)
        assert _count(api, api_tokens["read"]) == len(docs) * PER_DOCUMENT
    finally:
        api.stop()


def _wait_ready(api: Api, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if httpx.get(api.url + "/readyz", timeout=PROBE_TIMEOUT_S).status_code == 200:
            return
        time.sleep(0.5)
    raise AssertionError(f"the API did not become ready again within {timeout}s")


def _timed(client: httpx.Client, url: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = client.get(url, timeout=30)
    return time.perf_counter() - start, response


@pytest.mark.neo4j
def test_neo4j_stopped_under_a_running_api(
    tmp_path: Path, local_neo4j: Any, api_tokens: dict[str, str], record_property: Any
) -> None:
    """Probes answer within the probe timeout with the true reason, store routes answer 503 with
    Retry-After, and the API recovers by itself when Neo4j is back."""
    api = Api(local_neo4j.uri, api_tokens, tmp_path / "api.log", ADVISOR_READ_AUTH="open").start()
    try:
        assert _post(api, api_tokens["write"], document("run-outage", n=3)) == 200
        pid = api.proc.pid  # type: ignore[union-attr]
        local_neo4j.kill()
        # a crowd of reads waiting on the dead store, as during a real outage; the clients are
        # built before the clock starts (building 45 TLS-capable clients at once would hold
        # this process's GIL and time the test, not the server)
        shared, probes = httpx.Client(timeout=60), httpx.Client(timeout=30)
        crowd = [
            threading.Thread(target=lambda: shared.get(api.url + "/v1/observations"))
            for _ in range(45)
        ]
        for t in crowd:
            t.start()
        time.sleep(2.0)
        health = [_timed(probes, api.url + "/healthz") for _ in range(10)]
        ready = [_timed(probes, api.url + "/readyz") for _ in range(3)]
        record_property("healthz_s_all", ",".join(f"{s_:.3f}" for s_, _ in health))
        record_property("healthz_s_during_outage", max(s for s, _ in health))
        record_property("readyz_s_during_outage", max(s for s, _ in ready))
        assert all(r.status_code == 200 for _, r in health)
        assert max(s for s, _ in health) < PROBE_TIMEOUT_S
        for seconds, r in ready:
            assert r.status_code == 503 and r.json()["status"] == "store_unavailable", r.text
            assert "Retry-After" in r.headers
            assert seconds < PROBE_TIMEOUT_S
        store_route = httpx.get(api.url + "/v1/observations", timeout=60)
        assert store_route.status_code == 503 and "Retry-After" in store_route.headers
        assert store_route.json()["error"] == "store_unavailable"
        for t in crowd:
            t.join(60)
        local_neo4j.start()
        _wait_ready(api, 90)
        assert api.proc.pid == pid and api.proc.poll() is None  # type: ignore[union-attr]
        assert len(_get(api, api_tokens["read"], {})["items"]) == 3
    finally:
        api.stop()


@pytest.mark.neo4j
def test_reads_recover_within_the_hold_after_neo4j_restarts(
    tmp_path: Path, local_neo4j: Any, api_tokens: dict[str, str]
) -> None:
    """Issue 32: reads every 0.1 s across a kill -9 of Neo4j and its restart; the breaker's own
    503s never keep it open, so the API's first 200 comes within hold + 1 s of the moment the
    database answers the same read on a fresh connection (on main 7c8cd85 every read stayed 503
    for 40 s after Neo4j was back).

    The reference is the same read, not any query: a restarted Neo4j plans each distinct query
    again on a cold JVM, and the first plan of the observations page took 4.5 s on a quiet
    machine and 17-28 s at load 20 on 2 cores (the server's own ``t_first``), while a trivial
    query already answered. That time is the database's; the API must add no more than the hold.
    While the database is down, every read gets its answer (a 503) quickly, never a hang."""
    hold_s = 1.0
    api = Api(
        local_neo4j.uri,
        api_tokens,
        tmp_path / "api.log",
        ADVISOR_READ_AUTH="open",
        ADVISOR_STORE_FAILURE_HOLD_S=str(hold_s),
    ).start()
    results: list[tuple[float, float, int]] = []  # (sent, answered, status)
    stop = threading.Event()

    def reader() -> None:
        # a read waiting on the restarted server's first plan of its query is not cut short
        with httpx.Client(timeout=180) as client:
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    status = client.get(api.url + "/v1/observations").status_code
                except httpx.HTTPError:
                    status = 0
                results.append((sent, time.monotonic(), status))
                time.sleep(0.1)

    thread = threading.Thread(target=reader, daemon=True)
    try:
        assert _post(api, api_tokens["write"], document("run-breaker", n=2)) == 200
        thread.start()
        local_neo4j.kill()
        time.sleep(3.0)
        online: list[float] = []  # when a trivial query first answers on a fresh connection
        watcher = threading.Thread(
            target=lambda: online.append(
                _first_answer(local_neo4j.uri, lambda store: store.ping(), 240)
            ),
            daemon=True,
        )
        watcher.start()
        local_neo4j.start()  # returns once a trivial query answers
        back = _first_answer(
            local_neo4j.uri, lambda store: store.query_observations(limit=100), 180
        )
        watcher.join(60)
        deadline = back + 30
        while time.monotonic() < deadline and not [
            a for _, a, s in results if s == 200 and a > back
        ]:
            time.sleep(0.1)
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(180)
        api.stop()
    assert online, "the watcher saw no answer"
    failed = [a for _, a, s in results if s == 503]
    assert failed, "the outage was not seen"
    # once the breaker has opened (the first read after the kill waits out the driver's retries
    # first), reads sent while the database was down or starting (Bolt accepts connections and
    # holds a query until the database is online) were each answered at once: 503, never a hang
    down = [(a - t, s) for t, a, s in results if failed[0] < t < online[0] - hold_s - 1.0]
    slow = [(seconds, s) for seconds, s in down if s != 503 or seconds >= PROBE_TIMEOUT_S]
    assert down and not slow, (slow, len(down))
    first = [a for _, a, s in results if s == 200 and a > online[0]]  # may come before `back`
    assert first and first[0] - back <= hold_s + 1.0, (first[:1], back, results[-20:])


def _first_answer(uri: str, read: Any, timeout: float) -> float:
    """When ``read`` (given a store) first answers on a fresh connection: Bolt accepts
    connections before the database is online, and each query is planned again after a
    restart."""
    from stack_advisor.schema.errors import AdvisorError
    from stack_advisor.store.neo4j_store import Neo4jStore

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            store = Neo4jStore(uri)
            try:
                read(store)
                return time.monotonic()
            finally:
                store.close()
        except AdvisorError:
            time.sleep(0.1)
    raise AssertionError(f"Neo4j did not answer within {timeout} s of its restart")
