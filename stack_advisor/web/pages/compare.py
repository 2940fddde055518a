"""The Compare pages: two stacks benchmark by benchmark (with the placement overheads), and the
cells of a sweep against its baseline."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from stack_advisor.advisor import service
from stack_advisor.api.deps import AdvisorDep, StoreDep
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.web import charts, session
from stack_advisor.web.explore import facets
from stack_advisor.web.pages.common import given, query_fields, row_bars
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)

# ---- compare ---------------------------------------------------------------------------------


COMPARE_COLUMNS = [
    "benchmark",
    "scenario",
    "metric",
    "stack_a",
    "stack_b",
    "pairs",
    "ratio",
    "low",
    "high",
    "p_value",
    "a_count",
    "b_count",
    "a_median",
    "b_median",
    "verdict",
]


def _comparisons(
    f: dict[str, Any], advisor: AdvisorDep, format: str
) -> tuple[list[dict[str, Any]], str | None]:
    """(comparisons, error) of stacks ``a`` and ``b``; an export raises the error."""
    a, b = f.get("a") or None, f.get("b") or None
    if not (a and b):
        return [], None
    try:
        comparisons = service.compare_benchmarks(
            advisor, a, b, **given(f, "accelerator", "benchmark", "scenario")
        )
    except (InvalidInput, NotFound) as exc:
        if format != "html":
            raise
        return [], exc.message
    return comparisons, None


def _overheads(
    advisor: AdvisorDep, accelerator: str | None
) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """(placement overhead rows, why there are none, error)."""
    try:
        from stack_advisor.advisor.charts.data import overhead_chart

        return overhead_chart(service.placement_overheads(advisor, accelerator)).rows, None, None
    except NotFound as exc:
        return [], exc.message, None
    except InvalidInput as exc:
        return [], None, exc.message


def _ratio_chart(comparisons: list[dict[str, Any]]) -> str:
    shown = [c for c in comparisons if c["ratio"] is not None]
    if not shown:
        return ""
    return charts.bar_chart(
        row_bars(
            shown,
            lambda c: f"{c['benchmark']} {c['scenario']}".strip(),
            lambda c: c["verdict"],
            value="ratio",
        ),
        title="B against A per benchmark (speed ratio, >1 means B is faster; 1.0 dashed)",
        unit="B/A speed ratio",
        reference=1.0,
    )


def _overhead_chart(overheads: list[dict[str, Any]]) -> str:
    if not overheads:
        return ""
    return charts.bar_chart(
        row_bars(
            overheads,
            lambda o: o["accelerator"],
            lambda o: o["summary"],
            value="ratio",
            group="placement",
        ),
        title="Speed in VMs relative to bare metal (1.0 dashed)",
        unit="ratio to bare metal",
        reference=1.0,
    )


@router.get("/compare")
def compare_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        f = query_fields(request)
        comparisons, error = _comparisons(f, advisor, format)
        overheads, overhead_note, overhead_error = _overheads(advisor, f.get("accelerator") or None)
        error = error or overhead_error
        if format != "html":
            doc = {"query": f, "comparisons": comparisons, "placement_overhead": overheads}
            return export(format, "compare", COMPARE_COLUMNS, comparisons, doc)
        table = advisor.table()
        stacks = sorted(
            ((sid, st.label()) for sid, st in table.stacks.items()), key=lambda s: s[1]
        )[:500]
        return page(
            request,
            "compare.html",
            title="Compare",
            f=f,
            comparisons=comparisons,
            error=error,
            chart=_ratio_chart(comparisons),
            overheads=overheads,
            overhead_svg=_overhead_chart(overheads),
            overhead_note=overhead_note,
            facets=facets(table),
            stacks=stacks,
            columns=COMPARE_COLUMNS,
        )

    return session.guarded(request, format, build)


def _sweep_chart(doc: dict[str, Any] | None, rows: list[dict[str, Any]]) -> str:
    if not (doc and rows):
        return ""
    return charts.bar_chart(
        row_bars(
            rows,
            lambda r: f"{r['benchmark']} · {r['cell']}",
            lambda r: f"{r['parameters']}; {r['verdict']}; 95% interval from {r['interval_from']}",
            value="ratio",
            group="cell",
        ),
        title=f"Speed of each cell relative to {doc['baseline']} (>1 is faster; 1.0 dashed)",
        unit="speed ratio to the baseline cell",
        reference=1.0,
    )


@router.get("/compare/sweep")
def compare_sweep_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html"
) -> Response:
    def build() -> Response:
        f = query_fields(request)
        sweep = f.get("sweep") or None
        report, error = None, None
        if sweep:
            try:
                report = service.sweep(
                    store,
                    sweep,
                    host=f.get("host"),
                    baseline=f.get("baseline"),
                    cell=f.get("cell"),
                    flagged_only=f.get("flagged_only") == "yes",
                )
            except (InvalidInput, NotFound) as exc:
                if format != "html":
                    raise
                error = exc.message
        doc = report.model_dump(mode="json") if report else None
        rows = doc["ratios"] if doc else []
        if format != "html":
            if doc is None:
                raise InvalidInput("sweep: give the sweep's name (its matrix's name)")
            return export(format, "compare-sweep", SWEEP_COLUMNS, rows, {"query": f, **doc})
        return page(
            request,
            "compare_sweep.html",
            title="Compare sweep cells",
            f=f,
            report=doc,
            rows=rows,
            error=error,
            chart=_sweep_chart(doc, rows),
            sweeps=service.sweeps(advisor, store),
            cells=[c["cell"] for c in doc["cells"]] if doc else [],
        )

    return session.guarded(request, format, build)


SWEEP_COLUMNS = [
    "benchmark",
    "parameters",
    "metric",
    "unit",
    "cell",
    "stack",
    "value",
    "baseline_value",
    "ratio",
    "low",
    "high",
    "repeats",
    "baseline_repeats",
    "interval_from",
    "spread",
    "flagged",
    "verdict",
    "basis",
]
