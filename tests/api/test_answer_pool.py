"""Heavy answers under a flood (issue 32): predictions are answered by a worker process, anonymous
ones admitted a bounded number at a time (503 with Retry-After beyond the queue, 429 beyond one
client's share), while /healthz and token holders are still answered; a worker stops when its
client goes away or the budget is spent; a dead worker is replaced."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.advisor.engine import Advisor
from stack_advisor.api import answer_worker
from stack_advisor.api.answer_pool import Admission, AnswerPool, Busy, OverShare
from stack_advisor.api.deps import get_store
from stack_advisor.schema.errors import OverBudget
from stack_advisor.server import create_app
from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import auth, document, make_settings

QUERY = {"benchmark": "resnet50", "accelerator": "NVIDIA A100-SXM4-80GB", "metric": "throughput"}


# ---- admission, on its own event loop -----------------------------------------------------------


def test_admission_queues_then_refuses_with_busy_and_one_client_over_its_share() -> None:
    async def scenario() -> None:
        admission = Admission(slots=1, queue=1, share=2)
        await admission.enter("a")  # runs
        waiting = asyncio.create_task(admission.enter("b"))  # waits in the queue
        await asyncio.sleep(0)
        assert (admission.running, admission.waiting) == (1, 1)
        with pytest.raises(Busy) as busy:
            await admission.enter("c")
        assert busy.value.status_code == 503 and "ADVISOR_ANSWER_QUEUE" in busy.value.message
        admission.leave("a")  # the slot passes to the one waiting
        await waiting
        assert (admission.running, admission.waiting) == (1, 0)
        queued = asyncio.create_task(admission.enter("b"))  # b's second: queued, at its share
        await asyncio.sleep(0)
        with pytest.raises(OverShare) as over:
            await admission.enter("b")
        assert over.value.status_code == 429 and "ADVISOR_ANSWER_CLIENT_SHARE" in over.value.message
        queued.cancel()  # a client that gives up frees its place in the queue
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert admission.waiting == 0 and admission.held["b"] == 1
        admission.leave("b")
        assert admission.running == 0 and not admission.held

    asyncio.run(scenario())


# ---- the API with a real worker process --------------------------------------------------------


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(tmp_path / "kb")
    store.ensure_schema()
    for i in range(3):
        store.ingest_document(
            document(f"run-{i}", value=100.0 + 10 * i, framework_version=f"2.{i}.0")
        )
    try:
        yield store
    finally:
        store.close()


def _client(store: Any, tokens: dict[str, str], **overrides: Any) -> TestClient:
    chosen = {"answer_workers": 1, "answer_queue": 1, "answer_client_share": 1, **overrides}
    settings = make_settings(tokens, read_auth="open", **chosen)
    app = create_app(settings, store=store)
    app.dependency_overrides[get_store] = lambda: store
    return TestClient(app, raise_server_exceptions=False)


def test_healthz_and_token_holders_are_answered_while_every_answer_slot_is_taken(
    seeded: EmbeddedStore, tokens: dict[str, str]
) -> None:
    expected = [p.model_dump(mode="json") for p in Advisor(seeded).predict([QUERY] * 3)]
    with _client(seeded, tokens) as client:
        admission: Admission = client.app.state.admission  # type: ignore[attr-defined]
        body = {"queries": [QUERY] * 3}
        first = client.post("/v1/predictions", json=body)  # anonymous, through the worker
        assert first.status_code == 200, first.text
        assert first.json() == expected  # the worker answers as the advisor does
        # two other clients take the one slot and the one queue place
        client.portal.call(admission.enter, "elsewhere-1")  # type: ignore[union-attr]
        waiter = client.portal.start_task_soon(admission.enter, "elsewhere-2")  # type: ignore[union-attr]
        _until(lambda: admission.waiting == 1)
        assert client.get("/healthz").status_code == 200
        busy = client.post("/v1/predictions", json=body)
        assert busy.status_code == 503 and busy.json()["error"] == "busy"
        assert busy.headers["retry-after"] and busy.headers["connection"] == "close"
        assert "ADVISOR_ANSWER_WORKERS" in busy.json()["message"]
        held = client.post("/v1/predictions", json=body, headers=auth(tokens["read"]))
        assert held.status_code == 200 and held.json() == expected  # a token holder is not queued
        client.portal.call(admission.leave, "elsewhere-1")  # type: ignore[union-attr]
        waiter.result(timeout=30)
        client.portal.call(admission.leave, "elsewhere-2")  # type: ignore[union-attr]
        assert client.post("/v1/predictions", json=body).status_code == 200
        # this client (testclient) over its share of one: 429
        client.portal.call(admission.enter, "testclient")  # type: ignore[union-attr]
        over = client.post("/v1/predictions", json=body)
        assert over.status_code == 429 and over.headers["retry-after"]
        assert over.json()["details"]["setting"] == "ADVISOR_ANSWER_CLIENT_SHARE"
        client.portal.call(admission.leave, "testclient")  # type: ignore[union-attr]


def test_a_malformed_body_is_a_422_naming_the_field_from_the_worker(
    seeded: EmbeddedStore, tokens: dict[str, str]
) -> None:
    with _client(seeded, tokens, max_predict_queries=2) as client:
        r = client.post(
            "/v1/predictions", json={"queries": [{**QUERY, "accelerator_count": "many"}]}
        )
        assert r.status_code == 200  # a bad field refuses its query alone (issue 43)
        (refused,) = r.json()
        assert refused["basis"] == "unsupported"
        assert "queries.0.accelerator_count" in refused["reason"]
        r = client.post("/v1/predictions", json={"queries": {"accelerator": "H100"}})
        assert r.status_code == 422
        assert r.json()["details"][0]["field"] == "body.queries"
        r = client.post("/v1/predictions", json={"queries": [QUERY] * 3})
        assert (
            r.status_code == 413 and r.json()["details"]["setting"] == "ADVISOR_MAX_PREDICT_QUERIES"
        )
        r = client.post(
            "/v1/predictions", content=b"^b\x83", headers={"Content-Type": "application/json"}
        )
        assert (
            r.status_code == 422 and r.json()["details"][0]["field"] == "body"
        )  # found by the fuzzer


def test_a_dead_worker_is_a_503_and_the_pool_starts_again(
    seeded: EmbeddedStore, tokens: dict[str, str]
) -> None:
    with _client(seeded, tokens) as client:
        body = {"queries": [QUERY]}
        assert client.post("/v1/predictions", json=body).status_code == 200
        pool: AnswerPool = client.app.state.answers  # type: ignore[attr-defined]
        pids = pool.worker_pids()
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        r = client.post("/v1/predictions", json=body)
        assert r.status_code == 503 and "worker stopped" in r.json()["message"]
        assert client.post("/v1/predictions", json=body).status_code == 200


# ---- the worker's own checks, in this process ----------------------------------------------------


def test_the_worker_stops_when_its_client_has_gone_or_its_budget_is_spent(
    seeded: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = AnswerPool(workers=1, nice=0)
    try:
        path = pool.publish(Advisor(seeded).knowledge())
        assert Path(path).stat().st_mode & 0o077 == 0  # the server's own file
        raw = json.dumps({"queries": [QUERY] * 250}).encode()
        flags = bytearray(4)
        monkeypatch.setattr(answer_worker, "_flags", flags)  # as ``start`` sets it in a worker
        kind, answer = answer_worker.predict_request(path, raw, 2, 600, 1000, 100)
        assert kind == "ok" and len(json.loads(answer)) == 250
        flags[2] = 1  # the server saw the client go
        assert answer_worker.predict_request(path, raw, 2, 600, 1000, 100) == ("gone",)
        kind, error, _message, details = answer_worker.predict_request(
            path, raw, 1, 1e-9, 1000, 100
        )
        assert (
            kind == "error"
            and error is OverBudget
            and details["setting"] == "ADVISOR_ANSWER_BUDGET_S"
        )
        # a body that is not UTF-8 JSON: pydantic's errors come back as a 422's details
        kind, errors = answer_worker.predict_request(path, b"^b\x83", 1, 600, 1000, 100)
        assert kind == "invalid" and errors[0]["type"] == "json_invalid"
    finally:
        pool.close()


def _until(condition: Any, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def test_without_workers_predictions_are_answered_in_the_servers_threads(
    seeded: EmbeddedStore, tokens: dict[str, str]
) -> None:
    """``ADVISOR_ANSWER_WORKERS=0``: no process pool, the same answer."""
    expected = [p.model_dump(mode="json") for p in Advisor(seeded).predict([QUERY] * 2)]
    with _client(seeded, tokens, answer_workers=0) as client:
        assert client.app.state.answers is None  # type: ignore[attr-defined]
        r = client.post("/v1/predictions", json={"queries": [QUERY] * 2})
        assert r.status_code == 200 and r.json() == expected
