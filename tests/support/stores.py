"""Store creators, one per backend (Feast's universal tests): every contract test runs on each.

``RestCreator`` is Feast's remote store beside the real ones: our own API served on loopback
(uvicorn in a thread) over an embedded store, and the REST store talking to it.
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import pytest

from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.settings import StoreSettings


class StoreCreator(Protocol):
    name: str

    def create(self) -> Store: ...

    def graph(self) -> Store:
        """The graph store underneath (itself, or the one the API serves): for tests that set
        up a state through the backend's own statements."""
        ...

    def teardown(self) -> None: ...


class EmbeddedCreator:
    name = "embedded"

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "kb"
        self._store: Store | None = None

    def create(self) -> Store:
        self._store = open_store(f"embedded:{self.path}")
        return self._store

    def graph(self) -> Store:
        assert self._store is not None
        return self._store

    def teardown(self) -> None:
        if self._store is not None:
            self._store.close()


class Neo4jCreator:
    name = "neo4j"

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._store: Store | None = None

    def create(self) -> Store:
        store = self._store = open_store(self.uri, migrate=False)
        store.clear()
        store.ensure_schema()
        return store

    def graph(self) -> Store:
        assert self._store is not None
        return self._store

    def teardown(self) -> None:
        if self._store is not None:
            self._store.close()


class LoopbackServer:
    """An ASGI app under uvicorn in a daemon thread on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="loopback-api", daemon=True)
        self.url = ""

    def start(self, timeout: float = 60.0) -> LoopbackServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API did not start on loopback")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


class RestCreator:
    """The REST store, over the API served on loopback over an embedded store; its token has
    every scope (the contract is about data, auth has its own tests)."""

    name = "rest"

    def __init__(self, tmp_path: Path) -> None:
        self._backing = EmbeddedCreator(tmp_path)
        self._server: LoopbackServer | None = None
        self._store: Store | None = None

    def create(self) -> Store:
        from stack_advisor.api.settings import Settings
        from stack_advisor.server import create_app

        graph = self._backing.create()
        admin = secrets.token_urlsafe(24)
        app = create_app(Settings(environment="production", tokens=f"{admin}:admin"), store=graph)
        self._server = LoopbackServer(app).start()
        self._store = open_store(self._server.url, settings=StoreSettings(token=admin))
        return self._store

    def graph(self) -> Store:
        return self._backing.graph()

    def teardown(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._server is not None:
            self._server.stop()
        self._backing.teardown()


GRAPH_BACKENDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]
"""The graph backends: tests that reach into Cypher (migrations, injection) run on these."""
ALL_BACKENDS = [*GRAPH_BACKENDS, "rest"]
"""Every backend: the store contract runs on these."""


def make_creator(request: pytest.FixtureRequest, tmp_path: Path) -> StoreCreator:
    """The creator the parametrized ``request`` names (``neo4j`` starts or finds the server)."""
    if request.param == "embedded":
        return EmbeddedCreator(tmp_path)
    if request.param == "rest":
        return RestCreator(tmp_path)
    return Neo4jCreator(request.getfixturevalue("neo4j_uri"))
