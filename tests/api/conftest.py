"""API fixtures: an app over the parametrized ``store`` fixture (embedded and Neo4j), tokens
for each scope, and a TestClient. The app is given the store directly and ``get_store`` is
overridden too, so no default store is ever opened."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.api.settings import Settings
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from tests.support.api import make_settings


@pytest.fixture(scope="session")
def tokens() -> dict[str, str]:
    return {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}


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
