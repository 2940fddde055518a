"""The catalogue of names and datasheet figures (accelerators, benchmarks), read-only.

Not the store's entity listings (``/v1/accelerators``: what observations name); this is what the
catalogue knows about each part, with its figures and public sources, whether or not any
observation names it yet. Names resolve through the one resolver (404 with "did you mean").
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from stack_advisor.api.deps import ReadCaller
from stack_advisor.api.routes import READ_ERRORS, error_responses
from stack_advisor.catalog import browse

router = APIRouter(prefix="/v1/catalogue", tags=["catalogue"])

_ONE_ERRORS = error_responses(401, 403, 404, 422)
Name = Annotated[
    str,
    Path(
        min_length=1,
        max_length=200,
        description="any spelling the catalogue knows (H200 NVL, NVIDIA-H100-80GB-HBM3, gb200)",
    ),
]


class CatalogueList(BaseModel):
    kind: str = Field(description="accelerators or benchmarks")
    total: int
    items: list[dict[str, Any]] = Field(
        description="one row per entry; accelerators carry dense peak figures per precision "
        "(TFLOP/s, TOPS for int8; null = not published), memory_gb, memory_bw_gbs, tdp_w, "
        "interconnect_gbs, counted_as, names and `source`"
    )


class CatalogueHit(BaseModel):
    kind: str = Field(description="accelerator or benchmark")
    id: str
    name: str
    why: str = Field(description="how the query matched")


class CatalogueSearch(BaseModel):
    query: str
    hits: list[CatalogueHit]


@router.get(
    "/accelerators",
    operation_id="listCatalogueAccelerators",
    response_model=CatalogueList,
    responses=READ_ERRORS,
    summary="Every accelerator the catalogue knows, with figures and sources",
)
def list_accelerators(
    _: ReadCaller,
    vendor: Annotated[
        str | None, Query(max_length=100, description="only this vendor (nvidia, amd, ...)")
    ] = None,
    family: Annotated[
        str | None, Query(max_length=100, description="only this family (H100, Gaudi 3)")
    ] = None,
) -> CatalogueList:
    items = browse.list_entries("accelerators", vendor=vendor, family=family)
    return CatalogueList(kind="accelerators", total=len(items), items=items)


@router.get(
    "/accelerators/{name:path}",
    operation_id="getCatalogueAccelerator",
    response_model=dict[str, Any],
    responses=_ONE_ERRORS,
    summary="One accelerator by any of its names (404 with did-you-mean)",
)
def get_accelerator(name: Name, _: ReadCaller) -> dict[str, Any]:
    return browse.show_accelerator(name)


@router.get(
    "/benchmarks",
    operation_id="listCatalogueBenchmarks",
    response_model=CatalogueList,
    responses=READ_ERRORS,
    summary="Every benchmark the catalogue knows, with its model facts",
)
def list_benchmarks(
    _: ReadCaller,
    family: Annotated[
        str | None,
        Query(max_length=100, description="only this family (mlperf-inference, mlperf-training)"),
    ] = None,
) -> CatalogueList:
    items = browse.list_entries("benchmarks", family=family)
    return CatalogueList(kind="benchmarks", total=len(items), items=items)


@router.get(
    "/benchmarks/{name:path}",
    operation_id="getCatalogueBenchmark",
    response_model=dict[str, Any],
    responses=_ONE_ERRORS,
    summary="One benchmark by any of its names (404 with did-you-mean)",
)
def get_benchmark(
    name: Name,
    _: ReadCaller,
    family: Annotated[
        str | None,
        Query(
            max_length=100,
            description="mlperf-inference, mlperf-training, ...; default: MLPerf Inference first",
        ),
    ] = None,
) -> dict[str, Any]:
    return browse.show_benchmark(name, family)


@router.get(
    "/search",
    operation_id="searchCatalogue",
    response_model=CatalogueSearch,
    responses=READ_ERRORS,
    summary="Catalogue entries whose names or properties contain the text",
)
def search(
    _: ReadCaller,
    q: Annotated[
        str, Query(min_length=1, max_length=200, description="a name, family, vendor or task")
    ],
) -> CatalogueSearch:
    return CatalogueSearch(query=q, hits=[CatalogueHit(**h) for h in browse.search(q)])
