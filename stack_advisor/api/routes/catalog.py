"""The catalogue: stacks, accelerators, placements, benchmarks, hosts, runs, failures.

One router per resource (``GET /v1/<kind>``), built from one definition so they cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Query

from stack_advisor.api.deps import ReadCaller, SettingsDep, StoreDep
from stack_advisor.api.routes import READ_ERRORS
from stack_advisor.api.schemas import EntityPage
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import EntityKind

_OPERATION_IDS = {
    EntityKind.STACKS: "listStacks",
    EntityKind.ACCELERATORS: "listAccelerators",
    EntityKind.PLACEMENTS: "listPlacements",
    EntityKind.BENCHMARKS: "listBenchmarks",
    EntityKind.HOSTS: "listHosts",
    EntityKind.RUNS: "listRuns",
    EntityKind.FAILURES: "listFailures",
    EntityKind.SUBMISSIONS: "listSubmissions",
}


def _handler(kind: EntityKind) -> Callable[..., EntityPage]:
    def list_entities(
        store: StoreDep,
        settings: SettingsDep,
        _: ReadCaller,
        limit: Annotated[int, Query(ge=1, le=100_000, description="page size")] = 1000,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> EntityPage:
        if limit > settings.max_page:
            raise InvalidInput(
                f"limit: must be at most {settings.max_page} on this server, got {limit}"
            )
        items = store.list_entities(kind)
        return EntityPage(
            kind=kind,
            items=items[offset : offset + limit],
            total=len(items),
            limit=limit,
            offset=offset,
        )

    list_entities.__name__ = f"list_{kind.value}"
    return list_entities


routers: list[APIRouter] = []
for _kind in EntityKind:
    _router = APIRouter(prefix=f"/v1/{_kind.value}", tags=["catalog"])
    _router.add_api_route(
        "",
        _handler(_kind),
        methods=["GET"],
        operation_id=_OPERATION_IDS[_kind],
        response_model=EntityPage,
        responses=READ_ERRORS,
        summary=f"Every {_kind.value[:-1]} in the store (properties as the schema names them)",
    )
    routers.append(_router)
