"""The API in tests: settings with tokens, an app over a store, auth headers, result documents."""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from stack_advisor.api import examples
from stack_advisor.api.deps import get_store
from stack_advisor.api.settings import Settings
from stack_advisor.server import create_app
from stack_advisor.store.base import Store


def make_settings(tokens: dict[str, str], **overrides: Any) -> Settings:
    spec = ";".join(f"{secret}:{scope}" for scope, secret in tokens.items())
    return Settings(environment="production", tokens=spec, **overrides)


def make_app(store: Store, tokens: dict[str, str], read_auth: str = "token") -> FastAPI:
    spec = ";".join(f"{secret}:{scope}" for scope, secret in tokens.items())
    app = create_app(
        Settings(environment="production", tokens=spec, read_auth=read_auth), store=store
    )  # type: ignore[arg-type]
    app.dependency_overrides[get_store] = lambda: store
    return app


def post_predictions(client: TestClient, queries: list[Any]) -> list[dict[str, Any]]:
    """``POST /v1/predictions`` of ``queries``: one answer per query (a 200 asserted)."""
    r = client.post("/v1/predictions", json={"queries": queries})
    assert r.status_code == 200, r.text
    body: list[dict[str, Any]] = r.json()
    assert len(body) == len(queries)
    return body


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def document(
    run_id: str = "run-test-1",
    *,
    value: float = 100.0,
    metric: str = "throughput",
    accelerator: str = "NVIDIA A100-SXM4-80GB",
    placement: str = "bare-metal",
    framework_version: str = "2.3.1",
    n: int = 1,
) -> dict[str, Any]:
    """A result document shaped like a collector's, with ``n`` measurements."""
    doc = copy.deepcopy(examples.RESULT_DOCUMENT)
    doc["run"]["run_id"] = run_id
    doc["accelerator"]["model"] = accelerator
    doc["placement"]["kind"] = placement
    doc["stack"]["framework_version"] = framework_version
    base = doc["measurements"][0]
    doc["measurements"] = []
    for i in range(n):
        m = copy.deepcopy(base)
        m["metric"] = metric
        m["value"] = value + i
        m["p10"] = m["p90"] = None
        m["benchmark"]["parameters"] = {"batch_size": 64 * (i + 1)}
        doc["measurements"].append(m)
    return doc
