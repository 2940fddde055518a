"""The node inventory (``advisor nodes sync``): one cluster's nodes, replaced as a whole."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query
from pydantic import AfterValidator, BaseModel, Field

from stack_advisor.advisor.service import check_batch_size
from stack_advisor.api.deps import ReadCaller, ResourcesDep, SettingsDep, StoreDep, WriteCaller
from stack_advisor.api.routes import READ_ERRORS, WRITE_ERRORS
from stack_advisor.api.schemas import ErrorBody
from stack_advisor.store.base import MAX_CLUSTER_NAME, cluster_name_problem

router = APIRouter(prefix="/v1/inventory", tags=["inventory"])

# ``:path`` so that a name with '/' reaches the handler and gets a 422 naming the field (without
# it the router answers 404 or redirects with 307 on a trailing slash). The pattern documents the
# rule; ``cluster_name_problem`` enforces it (also '.' and '..', which clients collapse into
# another path, and U+FFFD, what the server decodes from bytes that are not UTF-8) with a message
# saying what is wrong.
CLUSTER_PATTERN = r"^[^/\x00-\x1f\x7f-\x9f\u2028\u2029\ufffd]+$"


def _usable_cluster_name(name: str) -> str:
    problem = cluster_name_problem(name)
    if problem:
        raise ValueError(f"cannot name an inventory: {problem}")
    return name


ClusterName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_CLUSTER_NAME,
        description="the inventory's name: any printable Unicode but '/', not '.' or '..'",
        json_schema_extra={"pattern": CLUSTER_PATTERN},
    ),
    AfterValidator(_usable_cluster_name),
]


# A name with '/..' segments ('a/../..') is resolved by the client (RFC 3986 dot segments) into
# another path before it is sent: the server sees PUT /v1 or /v1/inventory, never this route.
_AWAY = (
    "the path was resolved into another one before it reached this route: a cluster name "
    "with '/..' segments (e.g. `a/../..`), which clients remove; percent-encode '/' and '.'"
)
RESOLVED_AWAY: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": _AWAY + " (404: no route at the resolved path)"},
    405: {"model": ErrorBody, "description": _AWAY + " (405: a route without PUT there)"},
}


class InventoryBody(BaseModel):
    nodes: list[dict[str, Any]] = Field(
        description="one object per node as `advisor nodes list --json` prints it, each with a "
        "unique non-empty `name`"
    )


class InventoryReport(BaseModel):
    cluster: str
    nodes: int = Field(ge=0, description="how many nodes the cluster's inventory holds now")


class InventoryPage(BaseModel):
    items: list[dict[str, Any]]
    total: int


@router.put(
    "/{cluster:path}",
    operation_id="syncInventory",
    response_model=InventoryReport,
    responses={**WRITE_ERRORS, **RESOLVED_AWAY},
    summary="Replace one cluster's node inventory, in one transaction",
)
def sync_inventory(
    cluster: ClusterName,
    body: Annotated[InventoryBody, Body()],
    store: StoreDep,
    settings: SettingsDep,
    resources: ResourcesDep,
    _: WriteCaller,
) -> InventoryReport:
    check_batch_size(len(body.nodes), settings.max_batch_items)
    nodes = store.sync_inventory(cluster, body.nodes)
    resources.written()
    return InventoryReport(cluster=cluster, nodes=nodes)


@router.get(
    "",
    operation_id="listInventory",
    response_model=InventoryPage,
    responses=READ_ERRORS,
    summary="The stored nodes (of one cluster, or all), ordered by cluster then name",
)
def list_inventory(
    store: StoreDep,
    _: ReadCaller,
    cluster: Annotated[
        str | None, Query(min_length=1, max_length=MAX_CLUSTER_NAME, pattern=CLUSTER_PATTERN)
    ] = None,
) -> InventoryPage:
    items = store.list_inventory(cluster)
    return InventoryPage(items=items, total=len(items))
