"""Failures: a benchmark that could not run or crashed on a stack/accelerator/placement."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request

from advisor.api import examples
from advisor.api.deps import StoreDep, WriteCaller
from advisor.api.routes import WRITE_ERRORS
from advisor.api.routes.observations import check_batch_size
from advisor.api.schemas import FailuresIn, IngestReport

router = APIRouter(prefix="/v1/failures", tags=["failures"])


@router.post(
    "",
    operation_id="recordFailures",
    response_model=IngestReport,
    responses=WRITE_ERRORS,
    summary="Record one failure or a list of them (idempotent)",
)
def record_failures(
    request: Request,
    failures: Annotated[
        FailuresIn,
        Body(openapi_examples={"one failure": {"value": examples.FAILURE}}),
    ],
    store: StoreDep,
    _: WriteCaller,
) -> IngestReport:
    items = failures if isinstance(failures, list) else [failures]
    check_batch_size(len(items), request.app.state.settings.max_batch_items)
    result = store.record_failures(items)
    request.app.state.resources.written()
    return IngestReport.of(result, 0)
