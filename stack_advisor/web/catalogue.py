"""The catalogue page: every accelerator the catalogue knows, with its dense figures and the
source of each entry — the rows ``GET /v1/catalogue/accelerators`` returns, searched with the
same function as ``GET /v1/catalogue/search``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from stack_advisor.catalog import browse
from stack_advisor.web import session
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)
COLUMNS = [
    "id",
    "name",
    "vendor",
    "family",
    "form_factor",
    "launch_year",
    "memory_gb",
    "memory_bw_gbs",
    "fp64",
    "fp32",
    "tf32",
    "bf16",
    "fp8",
    "fp6",
    "fp4",
    "int8",
    "tdp_w",
    "interconnect",
    "interconnect_gbs",
    "counted_as",
    "min_driver",
    "note",
    "source",
]


@router.get("/catalogue")
def catalogue_page(request: Request, q: str = "", format: str = "html") -> Response:
    def build() -> Response:
        rows = browse.list_entries("accelerators")
        if q.strip():
            wanted = {h["id"] for h in browse.search(q, limit=1000) if h["kind"] == "accelerator"}
            rows = [r for r in rows if r["id"] in wanted]
        if format != "html":
            return export(format, "catalogue", COLUMNS, rows, {"query": {"q": q}, "rows": rows})
        return page(
            request,
            "catalogue.html",
            title="Accelerator catalogue",
            q=q,
            rows=rows,
            columns=COLUMNS,
        )

    return session.guarded(request, format, build)
