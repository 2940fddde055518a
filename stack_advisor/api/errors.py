"""One place that turns every failure into JSON ``{"error", "message", "details"}``.

``AdvisorError`` subclasses carry their own status; the REST store turns the same JSON back into
the same exception (``stack_advisor.schema.errors.error_from_dict``). Clients never see a stack
trace.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from stack_advisor.schema.errors import AdvisorError, StoreUnavailable
from stack_advisor.schema.errors import (
    Forbidden as Forbidden,  # re-exported: one hierarchy, with the
)
from stack_advisor.schema.errors import PayloadTooLarge as PayloadTooLarge  # re-exported
from stack_advisor.schema.errors import Unauthorized as Unauthorized  # REST store turning them back
from stack_advisor.store.uris import scrub

log = logging.getLogger("stack_advisor.api")


_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


_BRANCH_MISMATCH = {"list_type", "model_type", "dict_type", "model_attributes_type"}


def _is_tag(part: Any) -> bool:
    """pydantic names union branches in ``loc`` (``list[ResultDocument]``,
    ``function-after[...]``)."""
    return isinstance(part, str) and "[" in part


def _prune_union_branches(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For a union body, drop the branches whose only complaint is the wrong shape, so a client
    that sent one document sees what is wrong with the document, not that it is not a list."""
    mismatched = [
        e
        for e in errors
        if len(e.get("loc", ())) == 2 and _is_tag(e["loc"][1]) and e.get("type") in _BRANCH_MISMATCH
    ]
    if mismatched and len(mismatched) < len(errors):
        wrong = {e["loc"][1] for e in mismatched}
        return [e for e in errors if not (len(e.get("loc", ())) > 1 and e["loc"][1] in wrong)]
    return errors


def validation_details(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Field-level entries: the dotted field, what is wrong, and what was sent."""
    out = []
    for err in _prune_union_branches(errors):
        if err.get("type") == "json_invalid":  # loc is ("body", the character it failed at)
            at = err.get("loc", ("body", "?"))[-1]
            why = (err.get("ctx") or {}).get("error", "not JSON")
            out.append(
                {
                    "field": "body",
                    "message": f"not valid JSON: {why} (at character {at})",
                    "type": "json_invalid",
                    "got": None,
                }
            )
            continue
        loc = [str(p) for p in err.get("loc", ()) if not _is_tag(p)]
        out.append(
            {
                "field": ".".join(loc),
                "message": str(err.get("msg", "invalid")).removeprefix("Value error, "),
                "type": str(err.get("type", "")),
                "got": None if err.get("type") == "missing" else _short(err.get("input")),
            }
        )
    return out


def error_response(exc: AdvisorError, settings_retry_after: int | None = None) -> JSONResponse:
    headers: dict[str, str] = {}
    if exc.status_code in (429, 503):
        headers["Retry-After"] = str(settings_retry_after or 5)
    if getattr(exc, "quiet", False):  # refused before the body was read: do not read it
        headers["Connection"] = "close"
    auth = getattr(exc, "www_authenticate", None)
    if auth:
        headers["WWW-Authenticate"] = auth
    body = exc.to_dict()
    body["message"] = scrub(str(body["message"]))  # no URI credentials in any answer
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _retry_after(request: Request) -> int:
    settings = getattr(request.app.state, "settings", None)
    return getattr(settings, "retry_after_s", 5)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AdvisorError)
    async def _advisor_error(request: Request, exc: AdvisorError) -> JSONResponse:
        resources = getattr(request.app.state, "resources", None)
        if isinstance(exc, StoreUnavailable) and resources is not None:
            resources.store_failed(exc)  # the breaker's own 503s are ignored there
        elif exc.status_code >= 500 and not getattr(exc, "quiet", False):
            log.warning(
                "%s %s -> %s: %s", request.method, request.url.path, exc.code, scrub(exc.message)
            )
        return error_response(exc, _retry_after(request))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = validation_details(list(exc.errors()))
        message = "; ".join(
            f"{d['field']}: {d['message']}" + (f" (got {d['got']})" if d["got"] is not None else "")
            for d in details[:10]
        )
        if len(details) > 10:
            message += f"; and {len(details) - 10} more"
        body = {"error": "invalid_input", "message": message, "details": details}
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        refused = getattr(exc, "advisor_error", None)  # auth checked before the body was read
        if isinstance(refused, AdvisorError):
            return error_response(refused)
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}; see /docs"
        return JSONResponse(
            {"error": code, "message": message}, status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(ConnectionError)
    async def _connection(request: Request, exc: ConnectionError) -> JSONResponse:
        # A backend that leaked a raw connection error: still an unreachable store, not a 500.
        log.warning(
            "store connection error on %s %s: %s", request.method, request.url.path, scrub(str(exc))
        )
        return error_response(
            StoreUnavailable("the store cannot be reached; retry later"), _retry_after(request)
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        incident = uuid.uuid4().hex[:12]
        log.exception("unhandled error %s on %s %s", incident, request.method, request.url.path)
        body = {
            "error": "internal_error",
            "message": f"internal error (incident {incident}); the server log has the details",
        }
        return JSONResponse(body, status_code=500)
