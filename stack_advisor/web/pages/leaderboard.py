"""The leaderboard: the best figure per accelerator and placement for one benchmark, as
``GET /v1/leaderboard`` ranks it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from stack_advisor.advisor import service
from stack_advisor.api.deps import AdvisorDep, StoreDep
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.web import charts, session
from stack_advisor.web.explore import facets
from stack_advisor.web.pages.common import PLACEMENTS, given, query_fields, row_bars
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)

_COLUMNS_BEFORE = ["rank", "accelerator", "placement", "value", "low", "high", "interval"]
_COLUMNS_AFTER = ["stack", "accelerator_names", "accelerator_counts"]


def _board(
    f: dict[str, Any], store: StoreDep, advisor: AdvisorDep, format: str
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any] | None, str | None]:
    """(rows, notes, series, error) of the board the form asks for; an HTML page shows the
    error, an export raises it."""
    benchmark = f.get("benchmark") or None
    if not benchmark:
        return [], [], None, None
    try:
        rows, notes, series = service.leaderboard(
            advisor,
            store,
            benchmark=benchmark,
            **given(f, "scenario", "metric", "accelerator", "placement"),
        )
    except (InvalidInput, NotFound) as exc:
        if format != "html":
            raise
        return [], [], None, exc.message
    return rows, notes, series, None


def _chart(rows: list[dict[str, Any]], series: dict[str, Any] | None) -> str:
    if not rows:
        return ""
    return charts.bar_chart(
        row_bars(
            rows,
            lambda r: r["accelerator"],
            lambda r: f"{r['stack']}; interval: {r['interval']}",
            group="placement",
        ),
        title=f"Leaderboard: {series['heading'] if series else ''}",
        unit=series["value_label"] if series else "",
    )


@router.get("/leaderboard")
def leaderboard_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html"
) -> Response:
    def build() -> Response:
        f = query_fields(request)
        rows, notes, series, error = _board(f, store, advisor, format)
        latencies = (series or {}).get("token_latencies", [])
        columns = [*_COLUMNS_BEFORE, "observations", *latencies, *_COLUMNS_AFTER]
        if format != "html":
            doc = {"query": f, "series": series, "notes": notes, "rows": rows}
            return export(format, "leaderboard", columns, rows, doc)
        if series:  # the form shows what the board opened on
            f = {
                **f,
                "scenario": f.get("scenario") or series.get("scenario") or "",
                "metric": f.get("metric") or series["metric"],
            }
        return page(
            request,
            "leaderboard.html",
            title="Leaderboard",
            f=f,
            rows=rows,
            notes=notes,
            error=error,
            series=series,
            chart=_chart(rows, series),
            facets=facets(advisor.table()),
            placements=PLACEMENTS,
            columns=columns,
            latency_labels=dict(service.TOKEN_LATENCIES),
        )

    return session.guarded(request, format, build)
