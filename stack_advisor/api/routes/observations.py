"""Observations: query them, and ingest collector result documents (idempotent)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query

from stack_advisor.advisor import service
from stack_advisor.api import examples
from stack_advisor.api.deps import (
    AdminCaller,
    MetricsDep,
    ReadCaller,
    ResourcesDep,
    SettingsDep,
    StoreDep,
    WriteCaller,
)
from stack_advisor.api.document_bounds import check_item_bounds
from stack_advisor.api.routes import READ_ERRORS, WRITE_ERRORS, error_responses
from stack_advisor.api.schemas import (
    IngestReport,
    ObservationPage,
    ObservationPublic,
    ObservationQuery,
    ResultDocumentsIn,
    RevisionReport,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import IngestBatch, ObservationFilter, ResultDocument
from stack_advisor.store.base import MAX_OFFSET

router = APIRouter(prefix="/v1/observations", tags=["observations"])


@router.get(
    "",
    operation_id="listObservations",
    response_model=ObservationPage,
    responses=READ_ERRORS,
    summary="Observations matching every given filter, ordered by key",
)
def list_observations(
    query: Annotated[ObservationQuery, Query()],
    store: StoreDep,
    settings: SettingsDep,
    _: ReadCaller,
) -> ObservationPage:
    if query.limit > settings.max_page:
        raise InvalidInput(
            f"limit: must be at most {settings.max_page} on this server, got {query.limit}; "
            "page with after=<next_after>"
        )
    flt = ObservationFilter(**query.model_dump(exclude={"limit", "offset", "after"}))
    rows = store.query_observations(flt, limit=query.limit, offset=query.offset, after=query.after)
    items = [ObservationPublic.model_validate(r.model_dump()) for r in rows]
    full = len(rows) == query.limit
    next_offset = query.offset + len(rows) if full else None
    if next_offset is not None and (query.after or next_offset > MAX_OFFSET):
        next_offset = None  # offsets count from the cursor, and stop at MAX_OFFSET
    return ObservationPage(
        items=items,
        limit=query.limit,
        offset=query.offset,
        next_offset=next_offset,
        next_after=rows[-1].key if full else None,
    )


@router.get(
    "/{key:path}",
    operation_id="getObservation",
    response_model=ObservationPublic,
    responses={**READ_ERRORS, **error_responses(404)},
    summary="One observation by its key",
)
def get_observation(key: str, store: StoreDep, _: ReadCaller) -> ObservationPublic:
    return ObservationPublic.model_validate(store.get_observation(key).model_dump())


@router.post(
    "/revisions",
    operation_id="reviseObservations",
    response_model=RevisionReport,
    responses=WRITE_ERRORS,
    summary="Replace stored figures a publisher corrected, in one transaction (admin scope)",
    description="The batch's observations (as POST /v1/batches takes them; failures and runs "
    "are refused) replace the figure, samples, spread and provenance the store holds under "
    "their keys where the figure differs; keys it does not hold are left out. Idempotent. An "
    "admin token: unlike an ingest, it overwrites what is stored.",
)
def revise_observations(
    batch: Annotated[IngestBatch, Body()],
    store: StoreDep,
    settings: SettingsDep,
    resources: ResourcesDep,
    _: AdminCaller,
) -> RevisionReport:
    if batch.failures or batch.runs:
        raise InvalidInput("a revision replaces observations only: send no failures or runs")
    extra = check_item_bounds(
        ((f"observations[{i}]", o) for i, o in enumerate(batch.observations)),
        settings.max_nested_entries,
        settings.max_text_chars,
    )
    service.check_batch_size(len(batch.observations) + extra, settings.max_batch_items)
    revised = service.revise_observations(store, batch, resources)
    return RevisionReport(received=len(batch.observations), revised=revised)


@router.post(
    "",
    operation_id="ingestResultDocuments",
    response_model=IngestReport,
    responses=WRITE_ERRORS,
    summary="Ingest one collector result document or a list of them, in one transaction",
    description="Idempotent: identities are derived from content, so re-sending a document "
    "(e.g. a collector flushing its spool) stores nothing twice.",
)
def ingest_result_documents(
    documents: Annotated[
        ResultDocumentsIn,
        Body(
            openapi_examples={
                "one document": {"value": examples.RESULT_DOCUMENT},
                "a list": {"value": [examples.RESULT_DOCUMENT]},
            }
        ),
    ],
    store: StoreDep,
    settings: SettingsDep,
    resources: ResourcesDep,
    metrics: MetricsDep,
    _: WriteCaller,
) -> IngestReport:
    docs = documents if isinstance(documents, list) else [documents]
    extra = check_item_bounds(
        ((f"documents[{i}]", d) for i, d in enumerate(docs)),
        settings.max_nested_entries,
        settings.max_text_chars,
    )
    service.check_batch_size(
        sum(len(d.measurements) + len(d.failures) + 1 for d in docs) + extra,
        settings.max_batch_items,
    )
    return IngestReport.of(
        service.ingest(store, merge_documents(docs), resources, metrics), len(docs)
    )


def merge_documents(docs: list[ResultDocument]) -> IngestBatch:
    """All documents as one batch, so a list is written in one transaction."""
    batch = IngestBatch()
    for doc in docs:
        part = doc.to_batch()
        batch.observations.extend(part.observations)
        batch.failures.extend(part.failures)
        batch.runs.extend(part.runs)
    return batch
