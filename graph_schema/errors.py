"""One error hierarchy. Each subclass knows its HTTP status; the API turns them into JSON and the
REST store turns that JSON back into the same exception."""

from __future__ import annotations

from typing import Any


class AdvisorError(Exception):
    status_code = 500
    code = "internal_error"

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


class Conflict(AdvisorError):
    status_code = 409
    code = "conflict"


class Unsupported(AdvisorError):
    """A feature this backend or device does not have."""

    status_code = 501
    code = "unsupported"


class StoreUnavailable(AdvisorError):
    status_code = 503
    code = "store_unavailable"


class SchemaMismatch(AdvisorError):
    """The database was written by a newer schema than this code knows."""

    status_code = 503
    code = "schema_mismatch"


ERRORS_BY_CODE: dict[str, type[AdvisorError]] = {
    cls.code: cls
    for cls in (AdvisorError, InvalidInput, NotFound, Conflict, Unsupported, StoreUnavailable, SchemaMismatch)
}


def error_from_dict(status: int, body: dict[str, Any]) -> AdvisorError:
    cls = ERRORS_BY_CODE.get(str(body.get("error")), AdvisorError)
    return cls(str(body.get("message", f"HTTP {status}")), details=body.get("details"))
