"""One module per resource, each an ``APIRouter``."""

from __future__ import annotations

from typing import Any

from stack_advisor.api.schemas import ErrorBody

_ERRORS = {
    400: "the body cannot be decoded (not UTF-8 JSON)",
    401: "no token, or an unknown token (see WWW-Authenticate)",
    403: "the token lacks the scope this endpoint needs",
    404: "nothing with that key",
    409: "conflicts with what is stored",
    413: "the request body is over the configured limit",
    422: "invalid input; `details` lists each field with what was wrong",
    429: "this client has its share of heavy answers running or waiting already; see Retry-After",
    503: "the store is unreachable or its schema does not match, or the server is busy; see "
    "Retry-After",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI response entries for the error codes an operation can return."""
    return {code: {"model": ErrorBody, "description": _ERRORS[code]} for code in codes}


READ_ERRORS = error_responses(401, 403, 422, 503)
WRITE_ERRORS = error_responses(400, 401, 403, 413, 422, 503)
