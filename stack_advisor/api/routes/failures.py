"""Failures: a benchmark that could not run or crashed on a stack/accelerator/placement."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from stack_advisor.advisor import service
from stack_advisor.api import examples
from stack_advisor.api.deps import ResourcesDep, SettingsDep, StoreDep, WriteCaller
from stack_advisor.api.document_bounds import check_item_bounds
from stack_advisor.api.routes import WRITE_ERRORS
from stack_advisor.api.schemas import FailuresIn, IngestReport

router = APIRouter(prefix="/v1/failures", tags=["failures"])


@router.post(
    "",
    operation_id="recordFailures",
    response_model=IngestReport,
    responses=WRITE_ERRORS,
    summary="Record one failure or a list of them (idempotent)",
)
def record_failures(
    failures: Annotated[
        FailuresIn,
        Body(openapi_examples={"one failure": {"value": examples.FAILURE}}),
    ],
    store: StoreDep,
    settings: SettingsDep,
    resources: ResourcesDep,
    _: WriteCaller,
) -> IngestReport:
    items = failures if isinstance(failures, list) else [failures]
    extra = check_item_bounds(
        ((f"failures[{i}]", f) for i, f in enumerate(items)),
        settings.max_nested_entries,
        settings.max_text_chars,
    )
    service.check_batch_size(len(items) + extra, settings.max_batch_items)
    return IngestReport.of(service.record_failures(store, items, resources), 0)
