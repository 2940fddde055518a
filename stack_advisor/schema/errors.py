"""One error hierarchy. Each subclass knows its HTTP status; the API turns them into JSON and the
REST store turns that JSON back into the same exception."""

from __future__ import annotations

from typing import Any


class AdvisorError(Exception):
    status_code = 500
    code = "internal_error"
    # the status a remote API answered with, when the REST store raised this
    http_status: int | None = None

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class InvalidInput(AdvisorError):
    """Input that does not fit: names the field and value, says what to do."""

    status_code = 422
    code = "invalid_input"


class NotFound(AdvisorError):
    status_code = 404
    code = "not_found"


class Unauthorized(AdvisorError):
    """No token, or a token the API does not know."""

    status_code = 401
    code = "unauthorized"
    www_authenticate: str | None = None  # the challenge the API sends with it


class Forbidden(AdvisorError):
    """A known token without the scope the operation needs."""

    status_code = 403
    code = "forbidden"
    www_authenticate: str | None = None


class Conflict(AdvisorError):
    status_code = 409
    code = "conflict"


class Unsupported(AdvisorError):
    """A feature this backend or device does not have."""

    status_code = 501
    code = "unsupported"


class MissingEnvironment(Unsupported):
    """What a benchmark needs is absent from this environment (a pip extra, a device, a script):
    neither the stack's fault nor the harness's; recorded as an ``environment`` failure."""


class StoreUnavailable(AdvisorError):
    status_code = 503
    code = "store_unavailable"


class OverBudget(AdvisorError):
    """An answer that ran past its time budget: 503 with Retry-After. Not a store failure (a
    circuit breaker on the store must not open for it)."""

    status_code = 503
    code = "over_budget"


class PayloadTooLarge(AdvisorError):
    """One request asks for more items than a configured cap allows."""

    status_code = 413
    code = "payload_too_large"


class SchemaMismatch(AdvisorError):
    """The database was written by a newer schema than this code knows."""

    status_code = 503
    code = "schema_mismatch"


ERRORS_BY_CODE: dict[str, type[AdvisorError]] = {
    cls.code: cls
    for cls in (
        AdvisorError,
        InvalidInput,
        NotFound,
        Unauthorized,
        Forbidden,
        Conflict,
        Unsupported,
        StoreUnavailable,
        OverBudget,
        SchemaMismatch,
    )
}


ERRORS_BY_STATUS: dict[int, type[AdvisorError]] = {401: Unauthorized, 403: Forbidden}


def error_from_dict(status: int, body: dict[str, Any]) -> AdvisorError:
    """The exception an API error body names (``error``: its code); an unknown code is the class
    of its HTTP status where one is known (401, 403), else ``AdvisorError``."""
    cls = ERRORS_BY_CODE.get(str(body.get("error")), ERRORS_BY_STATUS.get(status, AdvisorError))
    return cls(str(body.get("message", f"HTTP {status}")), details=body.get("details"))
