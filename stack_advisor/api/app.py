"""The HTTP API's FastAPI application: ``create_api()`` builds it. The API knows nothing of the
web explorer: ``stack_advisor.server`` builds the served app, the API with the pages mounted
through ``create_api``'s ``pages`` hook."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI

from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.advisor.results import this_node
from stack_advisor.api.answer_pool import Admission, AnswerPool
from stack_advisor.api.auth import AuthBeforeBody, TokenTable
from stack_advisor.api.docs import install_docs
from stack_advisor.api.errors import install_error_handlers
from stack_advisor.api.limits import install_limits
from stack_advisor.api.middleware import (
    BodySizeLimit,
    ControlCharacters,
    Metrics,
    MetricsMiddleware,
)
from stack_advisor.api.resources import Resources, store_opener_for
from stack_advisor.api.routes import (
    advice,
    batches,
    catalog,
    catalogue,
    failures,
    health,
    inventory,
    observations,
    schema,
)
from stack_advisor.api.settings import Settings, get_settings
from stack_advisor.store.base import Store

log = logging.getLogger("stack_advisor.api")

API_VERSION = "1"

DESCRIPTION = """\
Which GPU software stack and node placement run an ML workload best, from observations that our
collectors measured or that published sources (MLPerf) report, with provenance.

**Auth**: `Authorization: Bearer <token>`. Scopes: `read`, `write` (implies read), `admin`
(implies both). Writes need `write`; reads are open or need `read`, as the server is configured.
401 means no or an unknown token, 403 a token without the needed scope.

**Errors** are JSON `{"error": code, "message": ..., "details": ...}`; 422 lists each bad field.
"""


def _warm_in_background(resources: Resources, answers: AnswerPool | None) -> None:
    """Load the advisor's table and fit its model while the server starts taking requests
    (requests that need it before it is ready wait for it instead of starting a second load),
    then start the answer workers on that snapshot."""

    def warm() -> None:
        try:
            resources.advisor().warm()
            if answers is not None:
                answers.warm(resources.advisor())
        except Exception as exc:
            log.warning("advisor warm-up skipped: %s", exc)

    threading.Thread(target=warm, name="advisor-warm-up", daemon=True).start()


Pages = Callable[[FastAPI], None]
"""Mounts a face beside the API (the web explorer) once the API's routers are in."""


def create_api(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    store_opener: Callable[[str | None], Store] | None = None,
    pages: Pages | None = None,
    session_cookie: str | None = None,
) -> FastAPI:
    """Build the API.

    Args:
        settings: overrides ``get_settings()`` (tests, ``advisor serve``).
        store: use this already-open store instead of opening ``settings.store`` (tests); the
            app does not close it.
        store_opener: how to open a store from a URI (default ``stack_advisor.store.registry`` with
            ``settings.store_settings()``).
        pages: mounts other routes over the same store, advisor and tokens (the web explorer).
        session_cookie: the cookie that carries a token for ``pages`` (the anonymous limit
            looks at it).
    Raises:
        InvalidInput: malformed or (outside development) placeholder tokens.
    """
    settings = settings or get_settings()
    tokens = TokenTable(settings)  # refuses placeholder secrets before anything starts
    resources = _resources(settings, store, store_opener)
    app = FastAPI(
        title="stack-advisor",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=_lifespan(
            resources, owned=store is None, answers=lambda: getattr(app.state, "answers", None)
        ),
        separate_input_output_schemas=True,
        docs_url=None,  # served by install_docs, from local assets
        redoc_url=None,
    )
    _set_state(app, settings, tokens, resources)
    app.dependency_overrides[get_settings] = lambda: settings

    install_error_handlers(app)
    install_docs(app)
    _include_routers(app)
    if pages is not None:
        pages(app)

    # The last added is the outermost: metrics see every response, 401s and 413s included;
    # authorization and the size limit both refuse before anything reads the body.
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(ControlCharacters)
    install_limits(
        app, settings, cookie=session_cookie, verify=lambda t: tokens.lookup(t) is not None
    )
    app.add_middleware(AuthBeforeBody, tokens=tokens, settings=settings)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    _document_server_caps(app, settings)
    return app


def _set_state(app: FastAPI, settings: Settings, tokens: TokenTable, resources: Resources) -> None:
    """What the routes read from ``app.state``: settings, tokens, the store's resources, metrics,
    the answer workers (none when ``answer_workers`` is 0) and their admission queue."""
    app.state.settings = settings
    app.state.tokens = tokens
    app.state.resources = resources
    app.state.metrics = Metrics()
    app.state.answers = (
        AnswerPool(workers=settings.answer_workers, nice=settings.answer_worker_nice)
        if settings.answer_workers
        else None
    )
    app.state.admission = Admission(
        max(1, settings.answer_workers), settings.answer_queue, settings.answer_client_share
    )


def _resources(
    settings: Settings, store: Store | None, store_opener: Callable[[str | None], Store] | None
) -> Resources:
    """The app's store and advisor: over ``store`` when one is given (the app does not own it),
    else over ``settings.store`` opened with ``store_opener``. The advisor's cache folders and
    the name of the node that answers come from the environment here, at the API's edge
    (``CacheFolders.from_environ``, ``this_node``)."""
    caches = CacheFolders.from_environ(os.environ)
    node = this_node(os.environ)
    if store is not None:
        resources = Resources(
            None,
            opener=lambda _uri: store,
            generation_ttl_s=settings.generation_ttl_s,
            caches=caches,
            node=node,
        )
    else:
        resources = Resources(
            settings.store,
            retry_interval_s=settings.store_retry_interval_s,
            generation_ttl_s=settings.generation_ttl_s,
            caches=caches,
            node=node,
            opener=store_opener or store_opener_for(settings.store_settings()),
        )
    resources.failure_hold_s = settings.store_failure_hold_s
    return resources


def _lifespan(
    resources: Resources, *, owned: bool, answers: Callable[[], AnswerPool | None]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open the one store (and driver) of this process at start (retried later if it fails),
    warm the advisor and the answer workers, and at shutdown stop the workers and close the
    store when the app owns it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resources.open()
        if owned:
            _warm_in_background(resources, answers())
        try:
            yield
        finally:
            pool = answers()
            if pool is not None:
                pool.close()
            if owned:
                resources.close()

    return lifespan


def _include_routers(app: FastAPI) -> None:
    for module in (observations, batches, failures, schema, inventory, catalogue):
        app.include_router(module.router)
    for router in (*catalog.routers, *advice.routers):
        app.include_router(router)
    app.include_router(health.router)


def _document_server_caps(app: FastAPI, settings: Settings) -> None:
    """OpenAPI states this server's own page cap (``ADVISOR_MAX_PAGE``) as every ``limit``'s
    maximum, so clients and fuzzers see the bound the server enforces."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            for item in schema.get("paths", {}).values():
                for operation in item.values():
                    for param in (
                        operation.get("parameters", ()) if isinstance(operation, dict) else ()
                    ):
                        if param.get("name") == "limit" and param.get("in") == "query":
                            param.setdefault("schema", {})["maximum"] = settings.max_page
            _document_links(schema)
            _document_request_models(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


# OpenAPI links from a write to the reads that show what it wrote (and from a page to one of its
# items): clients see how the routes fit together, and a stateful fuzzer follows them.
LINKS: dict[str, dict[str, tuple[str, dict[str, str]]]] = {
    "syncInventory": {"TheInventory": ("listInventory", {"cluster": "$response.body#/cluster"})},
    "ingestResultDocuments": {
        "TheRunsObservations": ("listObservations", {"run_id": "$request.body#/run/run_id"})
    },
    "ingestBatch": {
        "TheBatchsObservations": ("listObservations", {"run_id": "$request.body#/runs/0/run_id"})
    },
    "listObservations": {
        "TheFirstObservation": ("getObservation", {"key": "$response.body#/items/0/key"})
    },
}


def _document_request_models(schema: dict[str, Any]) -> None:
    """Bodies a route parses itself (off the event loop), documented as if declared."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in advice.REQUEST_MODELS:
        own = model.model_json_schema(
            ref_template="#/components/schemas/{model}", mode="validation"
        )
        for name, definition in own.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components[model.__name__] = own


def _document_links(schema: dict[str, Any]) -> None:
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            links = (
                LINKS.get(operation.get("operationId", "")) if isinstance(operation, dict) else None
            )
            ok = operation.get("responses", {}).get("200") if links else None
            if ok is not None and links is not None:
                ok["links"] = {
                    name: {"operationId": target, "parameters": params}
                    for name, (target, params) in links.items()
                }


def api_from_environment() -> FastAPI:
    """Factory for ``uvicorn --factory stack_advisor.api.app:api_from_environment`` (the API
    without the web explorer; ``stack_advisor.server:app_from_environment`` serves both)."""
    return create_api()
