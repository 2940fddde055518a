"""Raw ingest batches: what the REST store sends for ``Store.ingest``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request

from advisor.api.deps import StoreDep, WriteCaller
from advisor.api.routes import WRITE_ERRORS
from advisor.api.routes.observations import check_batch_size
from advisor.api.schemas import IngestReport
from graph_schema.models import IngestBatch

router = APIRouter(prefix="/v1/batches", tags=["observations"])


@router.post(
    "",
    operation_id="ingestBatch",
    response_model=IngestReport,
    responses=WRITE_ERRORS,
    summary="Ingest contextualised observations, failures and runs in one transaction",
)
def ingest_batch(
    request: Request, batch: Annotated[IngestBatch, Body()], store: StoreDep, _: WriteCaller
) -> IngestReport:
    check_batch_size(len(batch.observations) + len(batch.failures) + len(batch.runs),
                     request.app.state.settings.max_batch_items)
    result = store.ingest(batch)
    request.app.state.resources.written()
    metrics = request.app.state.metrics
    metrics.observations_ingested.labels("true").inc(result.observations_new)
    metrics.observations_ingested.labels("false").inc(
        result.observations_received - result.observations_new
    )
    return IngestReport.of(result, 0)
