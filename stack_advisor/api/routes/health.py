"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from stack_advisor.api.auth import Caller
from stack_advisor.api.deps import require_metrics
from stack_advisor.api.routes import error_responses
from stack_advisor.api.schemas import Health, Readiness
from stack_advisor.schema.errors import AdvisorError, StoreUnavailable
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.store.uris import redact_uri, scrub

router = APIRouter(tags=["health"])
log = logging.getLogger("stack_advisor.api")


@router.get(
    "/healthz",
    operation_id="getHealth",
    response_model=Health,
    summary="The process is alive (answers from memory, never touches the store)",
)
async def healthz() -> Health:
    # async: served on the event loop, so a thread pool full of requests waiting on the store
    # cannot delay it (liveness must not restart a pod whose store is having an outage)
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="getReadiness",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "store unreachable or schema mismatch"}},
    summary="The store answers and its schema version is the one this code expects",
    description="Answers within `ADVISOR_READY_TIMEOUT_S` (2 s) whatever the store does: a store "
    "that does not answer in time is `store_unavailable`.",
)
async def readyz(request: Request) -> Response:
    state = request.app.state
    metrics = state.metrics
    retry = {"Retry-After": str(state.settings.retry_after_s)}
    label = redact_uri(state.resources.store_uri)
    budget = state.settings.ready_timeout_s
    state.tokens.entries()  # re-reads a changed tokens file
    if state.tokens.problem:
        body = Readiness(
            status="tokens_unusable",
            store=label,
            expected_schema_version=SCHEMA_VERSION,
            message=state.tokens.problem,
        )
        return JSONResponse(body.model_dump(), status_code=503, headers=retry)
    try:
        version = await asyncio.wait_for(asyncio.shield(_check(state)), timeout=budget)
    except (AdvisorError, TimeoutError) as exc:
        metrics.store_up.set(0)
        message = scrub(
            exc.message
            if isinstance(exc, AdvisorError)
            else f"the store did not answer within {budget:g} s"
        )
        code = exc.code if isinstance(exc, AdvisorError) else "store_unavailable"
        body = Readiness(
            status=code, store=label, expected_schema_version=SCHEMA_VERSION, message=message
        )
        return JSONResponse(body.model_dump(), status_code=503, headers=retry)
    if version != SCHEMA_VERSION:
        metrics.store_up.set(1)
        body = Readiness(
            status="schema_mismatch",
            store=label,
            schema_version=version,
            expected_schema_version=SCHEMA_VERSION,
            message=f"store schema version {version}, this code expects {SCHEMA_VERSION}; "
            "apply it with POST /v1/schema (admin token)",
        )
        return JSONResponse(body.model_dump(), status_code=503, headers=retry)
    metrics.store_up.set(1)
    return JSONResponse(
        Readiness(
            status="ready",
            store=label,
            schema_version=version,
            expected_schema_version=SCHEMA_VERSION,
        ).model_dump()
    )


def _check(state: Any) -> asyncio.Future[int | None]:
    """The store's schema version, read in a worker thread; one check at a time (probes that
    arrive while one is running share it, so a hung store never costs more than one thread)."""
    running = getattr(state, "readiness_check", None)
    if running is None or running.done():

        def check() -> int | None:
            try:
                version: int | None = state.resources.store(probe=True).schema_version()
            except AdvisorError as exc:
                if isinstance(exc, StoreUnavailable):
                    state.resources.store_failed(exc)
                raise
            state.resources.store_answered()
            return version

        running = asyncio.ensure_future(asyncio.to_thread(check))
        state.readiness_check = running
    return running


@router.get(
    "/metrics",
    operation_id="getMetrics",
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
        **error_responses(401, 403),
    },
    response_class=Response,
    summary="Prometheus metrics",
)
def metrics(request: Request, _: Annotated[Caller, Depends(require_metrics)]) -> Response:
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
