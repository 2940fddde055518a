"""Issue 32's reproducers (security and resilience, round two), each failing on main 7c8cd85: no
secret in any answer or log line, a breaker that recovers under traffic, bounded metric labels,
fail-closed token files, strong production tokens, and bounded work per request."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.api.settings import Settings
from stack_advisor.schema.errors import AdvisorError, InvalidInput, StoreUnavailable
from stack_advisor.server import create_app
from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import auth, document, make_settings

PLANTED = "Pl4nted-" + secrets.token_hex(8)


def _client(store: Any, tokens: dict[str, str], **overrides: Any) -> TestClient:
    app = create_app(make_settings(tokens, **overrides), store=store)
    app.dependency_overrides[get_store] = lambda: store
    return TestClient(app, raise_server_exceptions=False)


# ---- 1. no secret leaves the process ---------------------------------------------------------


def test_a_password_in_the_store_uri_is_refused_without_echoing_it() -> None:
    from stack_advisor.store.neo4j_store import Neo4jStore
    from stack_advisor.store.registry import open_store

    uri = f"neo4j://neo4j:{PLANTED}@127.0.0.1:1"
    for attempt in (
        lambda: Neo4jStore(uri),
        lambda: open_store(uri),
        lambda: create_app(Settings(store=uri, read_auth="token")),
    ):
        with pytest.raises(InvalidInput) as caught:
            attempt()
        assert PLANTED not in str(caught.value)
        assert "NEO4J_PASSWORD" in caught.value.message and "127.0.0.1:1" in caught.value.message


def test_an_unreachable_api_uri_is_redacted() -> None:
    from stack_advisor.store.rest_store import RestStore

    store = RestStore(f"http://user:{PLANTED}@127.0.0.1:1", timeout=2)
    with pytest.raises(AdvisorError) as caught:
        store.stats()
    assert PLANTED not in str(caught.value) and PLANTED not in repr(store)


@pytest.mark.parametrize("where", ["uri", "env"])
def test_no_planted_password_in_any_answer_or_log_line(
    where: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tokens: dict[str, str],
) -> None:
    """Neo4j unreachable on 127.0.0.1:1 with its password in the URI (refused, or on main
    served) or in NEO4J_PASSWORD: /readyz, every store route's 503 and every log line are free
    of it."""
    caplog.set_level(logging.DEBUG)
    if where == "env":
        monkeypatch.setenv("NEO4J_PASSWORD", PLANTED)
        uri = "neo4j://127.0.0.1:1"
    else:
        uri = f"neo4j://neo4j:{PLANTED}@127.0.0.1:1"
    settings = make_settings(tokens, store=uri, read_auth="token", store_retry_interval_s=0)
    seen: list[str] = []
    try:
        app = create_app(settings)
    except InvalidInput as exc:
        assert where == "uri"
        seen.append(str(exc))
    else:
        with TestClient(app, raise_server_exceptions=False) as client:
            for _ in range(2):
                for path in ("/readyz", "/v1/observations", "/v1/stats", "/", "/metrics"):
                    r = client.get(path, headers=auth(tokens["read"]))
                    seen.append(f"{r.status_code} {r.headers} {r.text}")
                r = client.post(
                    "/v1/predictions",
                    headers=auth(tokens["read"]),
                    json={"queries": [{"benchmark": "resnet50"}]},
                )
                seen.append(r.text)
            assert client.get("/readyz").status_code == 503
    seen += [record.getMessage() for record in caplog.records]
    seen += [str(record.exc_info) for record in caplog.records if record.exc_info]
    assert any("127.0.0.1:1" in text for text in seen)  # the failure was exercised
    assert not [text for text in seen if PLANTED in text]


@pytest.mark.parametrize("where", ["uri", "env"])
def test_the_startup_banner_and_log_of_advisor_serve_hold_no_password(where: str) -> None:
    env = {
        **os.environ,
        "ADVISOR_READ_AUTH": "open",
        "ADVISOR_ENVIRONMENT": "development",
        "PYTHONPATH": str(Path.cwd()),
    }
    env.pop("ADVISOR_TOKENS", None)
    env.pop("NEO4J_PASSWORD", None)
    if where == "env":
        env["NEO4J_PASSWORD"] = PLANTED
        uri = "neo4j://127.0.0.1:1"
    else:
        uri = f"neo4j://neo4j:{PLANTED}@127.0.0.1:1"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stack_advisor.cli.main",
            "serve",
            "--store",
            uri,
            "--port",
            "0",
            "--log-level",
            "debug",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 90
        url = None
        assert proc.stdout is not None
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline().decode(errors="replace")
            if not line:
                break
            lines.append(line)
            if "stack-advisor API on " in line:
                url = line.split("stack-advisor API on ", 1)[1].split()[0]
        if where == "env":
            assert url, "".join(lines)
        if url:
            lines.append(httpx.get(url + "/readyz", timeout=10).text)
            lines.append(httpx.get(url + "/v1/observations", timeout=10).text)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        lines.append(out.decode(errors="replace"))
    text = "".join(lines)
    assert "neo4j://127.0.0.1:1" in text and PLANTED not in text, text[-2000:]


# ---- 2. the breaker recovers under steady traffic --------------------------------------------


def test_503s_end_within_the_hold_under_steady_traffic(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    """Reads every 0.1 s while the embedded store's connection is held (a long write) for 2 s,
    and after: the first 200 comes within hold + 1 s of the release; the 503s never nest."""
    hold_s = 1.0
    store = EmbeddedStore(tmp_path / "kb", lock_wait_s=0.2)
    store.ensure_schema()
    release, held = threading.Event(), threading.Event()
    released_at: list[float] = []

    def long_write() -> None:
        with store._locked():
            held.set()
            release.wait(30)
            released_at.append(time.monotonic())

    results: list[tuple[float, int, str]] = []
    # the app opens the store through its resources (no get_store override): the breaker's path
    app = create_app(make_settings(tokens, store_failure_hold_s=hold_s), store=store)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            assert client.get("/v1/observations").status_code == 200
            writer = threading.Thread(target=long_write, daemon=True)
            writer.start()
            held.wait(5)
            start = time.monotonic()
            while time.monotonic() - start < 2.0 + hold_s + 3.0:
                if not release.is_set() and time.monotonic() - start > 2.0:
                    release.set()
                    writer.join(5)
                r = client.get("/v1/observations")
                results.append((time.monotonic(), r.status_code, r.text))
                time.sleep(0.1)
    finally:
        release.set()
        store.close()
    failed = [t for t, status, _ in results if status == 503]
    assert failed, "the held store never failed a read"
    after = [t for t, status, _ in results if status == 200 and t > released_at[0]]
    assert after and after[0] - released_at[0] <= hold_s + 1.0, results[-5:]
    assert all(status == 200 for t, status, _ in results if t > after[0])
    bodies = [len(text) for _, status, text in results if status == 503]
    assert max(bodies) < 400 and max(bodies) - min(bodies) < 100  # no nesting
    assert not [text for _, _, text in results if text.count("retry later") > 1]


def test_a_probe_the_store_does_not_answer_costs_a_quick_503_not_a_hang(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    """The half-open probe finds the store taking connections but not answering (Neo4j holds a
    query for many seconds while its database recovers after a crash; here the embedded store's
    connection is held and a call waits up to 20 s for it): the request that started the probe
    gets 503 within the probe's wait, and the breaker closes as soon as the store answers,
    without waiting for another request to probe again."""
    hold_s = 0.5
    store = EmbeddedStore(tmp_path / "kb", lock_wait_s=20)
    store.ensure_schema()
    app = create_app(make_settings(tokens, store_failure_hold_s=hold_s), store=store)
    release, held = threading.Event(), threading.Event()

    def long_write() -> None:
        with store._locked():
            held.set()
            release.wait(30)

    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            assert client.get("/v1/observations").status_code == 200
            resources = app.state.resources
            resources.store_failed(StoreUnavailable("the store went away"))  # the breaker opens
            writer = threading.Thread(target=long_write, daemon=True)
            writer.start()
            held.wait(5)
            time.sleep(hold_s + 0.1)  # the hold is over: the next read starts the probe
            start = time.monotonic()
            first = client.get("/v1/observations")
            waited = time.monotonic() - start
            assert first.status_code == 503 and waited < resources.probe_wait_s + 1.0, waited
            assert "did not answer a probe" in first.json()["message"]
            assert client.get("/v1/observations").status_code == 503  # the probe is in flight
            release.set()
            writer.join(5)
            deadline = time.monotonic() + 5
            while resources.breaker_state != "closed":
                assert time.monotonic() < deadline, "the probe never closed the breaker"
                time.sleep(0.01)
            assert client.get("/v1/observations").status_code == 200
    finally:
        release.set()
        store.close()


# ---- 5. metric labels from a fixed set ----------------------------------------------------------


def test_made_up_methods_and_paths_do_not_grow_metrics(store: Any, tokens: dict[str, str]) -> None:
    with _client(store, tokens) as client:
        before = len(client.get("/metrics").text)
        for i in range(300):
            client.request(f"X{i}MADEUP", f"/v1/observations/x{i}")
            client.get(f"/no/such/path/{i}")
        after = client.get("/metrics").text
    assert "X1MADEUP" not in after and "/no/such" not in after
    assert len(after) - before < 8_000, len(after) - before


# ---- 6. tokens: fail closed, strong in production ----------------------------------------------


def test_a_broken_or_deleted_tokens_file_revokes_its_tokens(
    tmp_path: Path, store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = secrets.token_urlsafe(32)
    path = tmp_path / "tokens"
    path.write_text(f"{token} read,write collector\n")
    app = create_app(Settings(environment="production", tokens_file=path), store=store)
    app.dependency_overrides[get_store] = lambda: store
    with TestClient(app, raise_server_exceptions=False) as client:
        ok = client.get("/v1/observations", headers=auth(token))
        assert ok.status_code == 200
        for broken in ("typo", "delete"):
            if broken == "typo":
                path.write_text(f"{token} read,wirte collector\n")
            else:
                path.unlink()
            assert client.get("/v1/observations", headers=auth(token)).status_code == 401
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.json()["status"] == "tokens_unusable"
            assert "revoked" in ready.json()["message"]
            path.write_text(f"{token} read,write collector\n")  # fixed: back in service
            assert client.get("/v1/observations", headers=auth(token)).status_code == 200
            assert client.get("/readyz").status_code == 200
    assert any(r.levelno == logging.ERROR and "revoked" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "weak",
    [
        "abcdabcdabcdabcd",
        "1234567890123456",
        "passwordpassword",
        "abcdefghijklmnopqrstuvwxyz",
        "Aa1!Aa1!Aa1!Aa1!Aa1!Aa1!",
    ],
)
def test_production_refuses_tokens_under_128_bits(weak: str) -> None:
    with pytest.raises(InvalidInput, match=r"entropy|placeholder|distinct"):
        Settings(environment="production", tokens=f"{weak}:read").check()
    Settings(environment="development", tokens=f"{weak}:read").check()  # dev stays easy


def test_production_refuses_no_tokens_unless_reads_are_open_on_purpose() -> None:
    with pytest.raises(InvalidInput, match="ADVISOR_READ_AUTH=open"):
        Settings(environment="production").check()
    assert Settings(environment="production", read_auth="open").check() == []
    for _ in range(20):
        Settings(environment="production", tokens=f"{secrets.token_urlsafe(32)}:read").check()
        Settings(environment="production", tokens=f"{secrets.token_hex(16)}:read").check()


# ---- 4. bounded work per request ---------------------------------------------------------------


def test_every_kind_of_item_counts_against_the_caps(tmp_path: Path, tokens: dict[str, str]) -> None:
    store = EmbeddedStore(tmp_path / "kb")
    store.ensure_schema()
    w = auth(tokens["write"])
    try:
        with _client(
            store, tokens, max_batch_items=5, max_predict_queries=3, max_recommend_nodes=2
        ) as client:
            empty = {**document("run-empty"), "measurements": []}
            r = client.post("/v1/observations", json=[empty] * 6, headers=w)
            assert r.status_code == 413 and "ADVISOR_MAX_BATCH_ITEMS" in r.json()["message"]
            nodes = [{"name": f"n{i}"} for i in range(6)]
            r = client.put("/v1/inventory/big", json={"nodes": nodes}, headers=w)
            assert r.status_code == 413 and "ADVISOR_MAX_BATCH_ITEMS" in r.json()["message"]
            runs = [{"run_id": f"r{i}"} for i in range(6)]
            r = client.post("/v1/batches", json={"runs": runs}, headers=w)
            assert r.status_code == 413, r.text
            query = {
                "benchmark": "resnet50",
                "accelerator": "NVIDIA L4",
                "metric": "samples_per_second",
            }
            r = client.post("/v1/predictions", json={"queries": [query] * 4})
            assert r.status_code == 413 and "ADVISOR_MAX_PREDICT_QUERIES" in r.json()["message"]
            assert client.post("/v1/predictions", json={"queries": [query] * 3}).status_code == 200
            r = client.post(
                "/v1/recommendations",
                json={
                    "workload": {"benchmark": "resnet50"},
                    "nodes": [{"metadata": {"name": f"n{i}"}} for i in range(3)],
                },
            )
            assert r.status_code == 413 and "ADVISOR_MAX_RECOMMEND_NODES" in r.json()["message"]
            assert (
                client.put("/v1/inventory/small", json={"nodes": nodes[:5]}, headers=w).status_code
                == 200
            )
    finally:
        store.close()


def test_a_prediction_past_its_budget_is_a_503_naming_it(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    store = EmbeddedStore(tmp_path / "kb")
    store.ensure_schema()
    query = {"benchmark": "resnet50", "accelerator": "NVIDIA L4", "metric": "samples_per_second"}
    try:
        with _client(store, tokens, answer_budget_s=1e-6) as client:
            r = client.post("/v1/predictions", json={"queries": [query] * 250})
            assert r.status_code == 503 and "ADVISOR_ANSWER_BUDGET_S" in r.json()["message"]
            assert client.get("/v1/observations").status_code == 200  # not held by the breaker
    finally:
        store.close()


def test_an_oversized_prediction_body_is_refused_before_it_is_parsed(
    store: Any, tokens: dict[str, str]
) -> None:
    """A body whose Content-Length cannot hold at most ADVISOR_MAX_PREDICT_QUERIES queries (2 KiB
    each) is a 413 naming the setting before a byte of it is parsed; a body of normal queries up
    to the cap is answered."""
    from stack_advisor.api.routes.advice import PREDICT_QUERY_BYTES

    query = {"benchmark": "resnet50", "accelerator": "NVIDIA L4", "metric": "samples_per_second"}
    with _client(store, tokens, max_predict_queries=3, read_auth="open") as client:
        oversized = b'{"queries": [' + b" " * (3 * PREDICT_QUERY_BYTES) + b"]}"
        r = client.post(
            "/v1/predictions", content=oversized, headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 413, r.text
        assert r.json()["details"]["setting"] == "ADVISOR_MAX_PREDICT_QUERIES"
        assert "split them" in r.json()["message"]
        assert client.post("/v1/predictions", json={"queries": [query] * 3}).status_code == 200


class SlowTopologyStore(EmbeddedStore):
    """The embedded store with each host-topology read taking 5 ms (a remote Neo4j's round
    trip), counted: a 2,000-node cluster recommendation reads one per node."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.topology_reads = 0
        self.first_read = threading.Event()

    def host_topology(self, host: str) -> Any:
        self.topology_reads += 1
        self.first_read.set()
        time.sleep(0.005)
        return super().host_topology(host)


def _gpu_nodes(n: int) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {
                "name": f"gpu-{i}",
                "labels": {
                    "nvidia.com/gpu.product": "NVIDIA-L4",
                    "nvidia.com/gpu.count": "1",
                    "nvidia.com/gpu.memory": "23034",
                    "eks.amazonaws.com/nodegroup": "l4",
                },
            }
        }
        for i in range(n)
    ]


def test_a_recommendation_past_its_budget_is_a_503_naming_it(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    """Recommend has the prediction's budget: a 2,000-node cluster recommendation (10 s of
    topology reads here) stops at the budget with 503 naming ADVISOR_ANSWER_BUDGET_S, not after
    the last node; the breaker does not open for it."""
    store = SlowTopologyStore(tmp_path / "kb")
    store.ensure_schema()
    body = {"workload": {"benchmark": "resnet50"}, "nodes": _gpu_nodes(2000)}
    try:
        with _client(store, tokens, answer_budget_s=0.3, read_auth="open") as client:
            start = time.monotonic()
            r = client.post("/v1/recommendations", json=body)
            took = time.monotonic() - start
            assert r.status_code == 503 and r.json()["error"] == "over_budget", r.text
            assert "ADVISOR_ANSWER_BUDGET_S" in r.json()["message"] and "Retry-After" in r.headers
            assert r.json()["details"]["setting"] == "ADVISOR_ANSWER_BUDGET_S"
            assert store.topology_reads < 1000, store.topology_reads  # stopped, not finished
            assert took < 5.0, took
            assert client.get("/v1/observations").status_code == 200  # not held by the breaker
    finally:
        store.close()


def test_a_recommendation_stops_when_its_client_goes(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    """The client of a 2,000-node cluster recommendation disconnects once the work has begun:
    the work stops at its next checkpoint (the client is looked at every 0.25 s), far short of
    the 2,000 topology reads it would otherwise make."""
    store = SlowTopologyStore(tmp_path / "kb")
    store.ensure_schema()
    app = create_app(make_settings(tokens, answer_budget_s=60, read_auth="open"), store=store)
    app.dependency_overrides[get_store] = lambda: store
    body = json.dumps({"workload": {"benchmark": "resnet50"}, "nodes": _gpu_nodes(2000)}).encode()
    statuses: list[int] = []

    async def call() -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            while not store.first_read.is_set():  # as uvicorn's: waits until the client goes
                await asyncio.sleep(0.01)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "path": "/v1/recommendations",
            "raw_path": b"/v1/recommendations",
            "query_string": b"",
            "root_path": "",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1234),
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)

    try:
        start = time.monotonic()
        asyncio.run(call())
        took = time.monotonic() - start
    finally:
        store.close()
    assert statuses == [499], statuses
    assert store.topology_reads < 1000 and took < 8.0, (store.topology_reads, took)


def test_work_stops_when_the_client_has_gone() -> None:
    from stack_advisor.api.limits import ClientGone, in_chunks

    calls: list[int] = []

    class Gone:
        async def is_disconnected(self) -> bool:
            return True

    def work(chunk: list[int]) -> list[int]:
        calls.append(len(chunk))
        return chunk

    with pytest.raises(ClientGone):
        asyncio.run(in_chunks(Gone(), list(range(1000)), work, chunk=100, budget_s=60))  # type: ignore[arg-type]
    assert calls == [100]


def test_anonymous_requests_in_flight_are_limited() -> None:
    """The middleware itself, over an app whose requests wait until released."""
    from stack_advisor.api.limits import AnonymousLimit

    release = asyncio.Event

    async def scenario() -> list[int]:
        gate = release()

        async def slow_app(scope: Any, receive: Any, send: Any) -> None:
            await gate.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

        limit = AnonymousLimit(
            slow_app,
            limit=2,
            retry_after_s=3,
            cookie="advisor_token",
            verify=lambda token: token == "x",  # "x" is a token the table knows
        )
        statuses: list[int] = []

        async def call(headers: list[tuple[bytes, bytes]]) -> None:
            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(message["status"])

            scope = {"type": "http", "path": "/v1/predictions", "headers": headers}
            await limit(scope, None, send)

        tasks = [asyncio.create_task(call([])) for _ in range(3)]
        tasks.append(asyncio.create_task(call([(b"authorization", b"Bearer x")])))
        await asyncio.sleep(0.05)
        assert statuses == [503]  # the third anonymous one, at once
        gate.set()
        await asyncio.gather(*tasks)
        return statuses

    assert sorted(asyncio.run(scenario())) == [200, 200, 200, 503]
