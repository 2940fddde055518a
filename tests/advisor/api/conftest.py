"""API fixtures: an app over the parametrized ``store`` fixture (embedded and Neo4j), tokens
for each scope, and a TestClient. The app is given the store directly and ``get_store`` is
overridden too, so no default store is ever opened."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from advisor.api import examples
from advisor.api.app import create_app
from advisor.api.deps import get_store
from advisor.api.settings import Settings
from graph_schema.store import Store


@pytest.fixture(scope="session")
def tokens() -> dict[str, str]:
    return {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}


def make_settings(tokens: dict[str, str], **overrides: Any) -> Settings:
    spec = ";".join(f"{secret}:{scope}" for scope, secret in tokens.items())
    return Settings(environment="production", tokens=spec, **overrides)


@pytest.fixture
def settings(tokens: dict[str, str]) -> Settings:
    return make_settings(tokens)


@pytest.fixture
def app(store: Store, settings: Settings) -> FastAPI:
    app = create_app(settings, store=store)
    app.dependency_overrides[get_store] = lambda: store
    return app


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def document(run_id: str = "run-test-1", *, value: float = 100.0, metric: str = "throughput",
             accelerator: str = "NVIDIA A100-SXM4-80GB", placement: str = "bare-metal",
             framework_version: str = "2.3.1", n: int = 1) -> dict[str, Any]:
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
