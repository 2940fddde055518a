"""Raw ingest batches: what the REST store sends for ``Store.ingest``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from stack_advisor.advisor import service
from stack_advisor.api.deps import MetricsDep, ResourcesDep, SettingsDep, StoreDep, WriteCaller
from stack_advisor.api.document_bounds import check_item_bounds
from stack_advisor.api.routes import WRITE_ERRORS
from stack_advisor.api.schemas import IngestReport
from stack_advisor.schema.models import IngestBatch

router = APIRouter(prefix="/v1/batches", tags=["observations"])


@router.post(
    "",
    operation_id="ingestBatch",
    response_model=IngestReport,
    responses=WRITE_ERRORS,
    summary="Ingest contextualised observations, failures and runs in one transaction",
)
def ingest_batch(
    batch: Annotated[IngestBatch, Body()],
    store: StoreDep,
    settings: SettingsDep,
    resources: ResourcesDep,
    metrics: MetricsDep,
    _: WriteCaller,
) -> IngestReport:
    extra = check_item_bounds(
        (
            (f"{kind}[{i}]", item)
            for kind in ("observations", "failures", "runs")
            for i, item in enumerate(getattr(batch, kind))
        ),
        settings.max_nested_entries,
        settings.max_text_chars,
    )
    service.check_batch_size(
        len(batch.observations) + len(batch.failures) + len(batch.runs) + extra,
        settings.max_batch_items,
    )
    return IngestReport.of(service.ingest(store, batch, resources, metrics), 0)
