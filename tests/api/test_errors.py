"""Errors: 413 before parsing, 500 without a stack trace, 503 with Retry-After while the store is
unreachable, and recovery without a restart when it comes back."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from stack_advisor.store.rest_store import RestStore
from tests.support.api import auth, document, make_settings
from tests.support.servers import ServedAPI, free_port


def test_oversized_bodies_get_413_before_parsing(store: Store, tokens: dict[str, str]) -> None:
    app = create_app(make_settings(tokens, max_body_bytes=4096), store=store)
    with TestClient(app) as c:
        big = [document(f"run-{i}", n=5) for i in range(10)]
        r = c.post("/v1/observations", json=big, headers=auth(tokens["write"]))
        assert r.status_code == 413 and r.json()["error"] == "payload_too_large"
        assert "4096" in r.json()["message"]

        def chunks():  # no Content-Length: counted while streaming
            yield b"[" + b" " * 5000

        r = c.post(
            "/v1/observations",
            content=chunks(),
            headers={**auth(tokens["write"]), "content-type": "application/json"},
        )
        assert r.status_code == 413
        assert c.get("/v1/observations").json()["items"] == []  # nothing written


def test_unexpected_errors_hide_the_trace(app: FastAPI) -> None:
    def boom() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    app.add_api_route("/boom", boom)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
    assert r.status_code == 500
    body = r.json()
    assert body["error"] == "internal_error" and "incident" in body["message"]
    assert "Traceback" not in r.text and "secret internals" not in r.text


@pytest.mark.slow
def test_503_while_the_store_is_down_then_recovers_without_restart(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    port = free_port()
    upstream = ServedAPI(
        f"embedded:{tmp_path / 'kb'}", tokens, port=port, log=tmp_path / "upstream.log"
    )
    settings = make_settings(
        tokens, store=f"http://127.0.0.1:{port}", store_retry_interval_s=0, retry_after_s=7
    )
    app = create_app(
        settings, store_opener=lambda uri: RestStore(str(uri), tokens["admin"], timeout=2)
    )
    with TestClient(app) as c:
        # the store is unreachable at start-up: the app starts anyway, alive but not ready
        assert c.get("/healthz").status_code == 200
        for path in ("/readyz", "/v1/observations"):
            r = c.get(path)
            assert r.status_code == 503 and r.headers["Retry-After"] == "7", r.text
        assert c.get("/v1/stats").json()["error"] == "store_unavailable"

        with upstream:  # the store comes up: no restart needed
            assert c.get("/readyz").status_code == 200
            r = c.post(
                "/v1/observations", json=document("run-up", n=2), headers=auth(tokens["write"])
            )
            assert r.status_code == 200 and r.json()["observations_new"] == 2

        # the store goes away while the app holds it: 503, then back again
        r = c.get("/v1/observations")
        assert r.status_code == 503 and r.headers["Retry-After"] == "7"
        assert "Traceback" not in r.text
        with upstream:
            # store routes keep answering 503 for store_failure_hold_s (1 s) after a failure, and
            # a quiet machine restarts the upstream sooner than that: readiness, which probes the
            # store whatever the hold, sees it back and lifts the hold (as in the block above)
            assert c.get("/readyz").status_code == 200
            page = c.get("/v1/observations").json()
            assert len(page["items"]) == 2
