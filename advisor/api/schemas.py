"""Input and output schemas of the API, kept apart (``...In`` is what clients send,
``...Public``/``...Page``/``...Report`` what they get back)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graph_schema.models import (
    EntityKind,
    Failure,
    IngestResult,
    ObservationFilter,
    ResultDocument,
    StoredObservation,
)
from graph_schema.store import MAX_OFFSET, MAX_PAGE


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObservationPublic(StoredObservation):
    """An observation as the API returns it: the measurement with its full context and key."""


class ObservationPage(_Out):
    items: list[ObservationPublic]
    limit: int
    offset: int
    next_offset: int | None = Field(
        description="offset of the next page; null when this was the last one or when it "
        f"would pass {MAX_OFFSET} (use next_after)"
    )
    next_after: str | None = Field(
        default=None,
        description="cursor of the next page (pass it as `after`); null when this was the last",
    )


class ObservationQuery(ObservationFilter):
    """Query parameters of GET /v1/observations: the filters plus pagination."""

    limit: int = Field(default=100, ge=1, le=MAX_PAGE,
                       description="page size (the server's own cap is in this schema's maximum)")
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET,
                        description=f"rows to skip, at most {MAX_OFFSET}; deeper pages use `after`")
    after: str | None = Field(
        default=None, min_length=1, max_length=200,
        description="keyset cursor: start after this key (`next_after` of the previous page)",
    )


class IngestReport(_Out):
    """What an ingest did. Sending the same documents again reports them as not new."""

    documents: int = Field(ge=0)
    observations_received: int
    observations_new: int
    failures_received: int
    failures_new: int

    @classmethod
    def of(cls, result: IngestResult, documents: int) -> IngestReport:
        return cls(documents=documents, **result.model_dump())


class EntityPage(_Out):
    kind: EntityKind
    items: list[dict[str, Any]]
    total: int
    limit: int
    offset: int


class SchemaInfo(_Out):
    schema_version: int | None
    code_schema_version: int


class Health(_Out):
    status: str


class Readiness(_Out):
    status: str = Field(description="ready | store_unavailable | schema_mismatch | "
                        "tokens_unusable")
    store: str
    schema_version: int | None = None
    expected_schema_version: int
    message: str | None = None


class ErrorBody(_Out):
    """Every error response: a stable code, a message naming the field/value, optional details."""

    error: str = Field(examples=["invalid_input"])
    message: str
    details: Any = None


ResultDocumentsIn = ResultDocument | list[ResultDocument]
FailuresIn = Failure | list[Failure]
