"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from advisor.api.auth import Caller
from advisor.api.deps import require_metrics
from advisor.api.routes import error_responses
from advisor.api.schemas import Health, Readiness
from graph_schema.errors import AdvisorError
from graph_schema.schema import SCHEMA_VERSION

router = APIRouter(tags=["health"])
log = logging.getLogger("advisor.api")


@router.get("/healthz", operation_id="getHealth", response_model=Health,
            summary="The process is alive (does not touch the store)")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="getReadiness",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "store unreachable or schema mismatch"}},
    summary="The store answers and its schema version is the one this code expects",
)
def readyz(request: Request) -> Response:
    resources = request.app.state.resources
    metrics = request.app.state.metrics
    retry = str(request.app.state.settings.retry_after_s)
    label = _redact(resources.store_uri)
    try:
        version = resources.store().schema_version()
    except AdvisorError as exc:
        metrics.store_up.set(0)
        body = Readiness(status="unavailable", store=label,
                         expected_schema_version=SCHEMA_VERSION, message=exc.message)
        return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": retry})
    if version != SCHEMA_VERSION:
        metrics.store_up.set(1)
        body = Readiness(
            status="schema_mismatch", store=label, schema_version=version,
            expected_schema_version=SCHEMA_VERSION,
            message=f"store schema version {version}, this code expects {SCHEMA_VERSION}; "
            "apply it with POST /v1/schema (admin token)",
        )
        return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": retry})
    metrics.store_up.set(1)
    return JSONResponse(Readiness(status="ready", store=label, schema_version=version,
                                  expected_schema_version=SCHEMA_VERSION).model_dump())


@router.get(
    "/metrics",
    operation_id="getMetrics",
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
               **error_responses(401, 403)},
    response_class=Response,
    summary="Prometheus metrics",
)
def metrics(request: Request, _: Annotated[Caller, Depends(require_metrics)]) -> Response:
    return Response(generate_latest(request.app.state.metrics.registry),
                    media_type=CONTENT_TYPE_LATEST)


def _redact(uri: str | None) -> str:
    """A store URI without credentials (user:password@ is dropped)."""
    if not uri:
        return "default"
    scheme, sep, rest = uri.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}"
