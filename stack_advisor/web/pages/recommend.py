"""The Recommend page: a workload from a GET form, answered as ``POST /v1/recommendations``
answers it."""

from __future__ import annotations

from typing import Any

import yaml
from fastapi import APIRouter, Request
from fastapi.responses import Response

from stack_advisor.advisor import service
from stack_advisor.api.deps import AdvisorDep
from stack_advisor.schema.errors import AdvisorError, InvalidInput
from stack_advisor.web import charts, session
from stack_advisor.web.explore import facets
from stack_advisor.web.pages.common import PLACEMENTS, GetForm, row_bars
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)

# ---- recommend -------------------------------------------------------------------------------


def _described_model(form: GetForm) -> dict[str, Any] | None:
    """The workload's model object from the form: a pasted short YAML or config.json
    (``model_yaml``), or the model field's catalogue name when no benchmark or task is asked.

    Raises:
        InvalidInput: pasted text that is not a YAML/JSON mapping (named ``model_yaml``).
    """
    pasted = form.text("model_yaml")
    if pasted is not None:
        try:
            data = yaml.safe_load(pasted)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise InvalidInput(
                f"model_yaml: not YAML or JSON{where}; paste the short form "
                "or a config.json (docs/proxy.md)"
            ) from None
        if not isinstance(data, dict):
            raise InvalidInput(
                f"model_yaml: expected a mapping of fields, got {type(data).__name__}"
            )
        name = form.text("model")
        return {"name": name, **data} if name and "name" not in data else data
    name = form.text("model")
    if name and not (form.text("benchmark") or form.text("task")):
        return {"name": name}
    return None


def workload_from_form(request: Request) -> tuple[dict[str, Any], int]:
    """The workload body ``POST /v1/recommendations`` takes, from the form's fields.

    Raises:
        InvalidInput: a number field that is not a number (named).
    """
    form = GetForm(request)
    fields: list[tuple[dict[str, Any], str, Any]] = []
    workload: dict[str, Any] = {}
    hardware: dict[str, Any] = {}
    for name in (
        "family",
        "benchmark",
        "task",
        "scenario",
        "metric",
        "objective",
        "precision",
        "model",
        "image",
        "target",
    ):
        fields.append((workload, name, form.text(name)))
    fields += [
        (workload, name, form.number(name, float))
        for name in ("min_confidence", "max_ttft_ms", "max_tpot_ms")
    ]
    accelerators = [a.strip() for a in (form.text("accelerators") or "").split(",") if a.strip()]
    fields.append((hardware, "accelerators", accelerators or None))
    fields += [
        (hardware, name, form.number(name, int)) for name in ("count", "min_count", "max_count")
    ]
    fields.append((hardware, "include_cpu", form.choice("include_cpu")))
    fields.append(
        (hardware, "placements", [p for p in form.fields.getlist("placements") if p] or None)
    )
    fields.append((hardware, "driver", form.text("driver")))
    framework = form.text("framework")
    fields.append((workload, "hardware", hardware))
    fields.append(
        (
            workload,
            "frameworks",
            framework and [{"name": framework, "version": form.text("framework_version")}],
        )
    )
    fields += [(workload, name, form.number(name, int)) for name in ("batch_size", "min_evidence")]
    fields += [(workload, name, form.number(name, int)) for name in ("isl", "osl", "concurrency")]
    fields.append((workload, "include_predicted", form.choice("include_predicted")))
    described = _described_model(form)
    if described is not None:  # a model to estimate by proxy (docs/proxy.md)
        fields.append((workload, "model", described))
    for into, name, value in fields:
        if value is not None and value != {}:
            into[name] = value
    top = form.number("top", int)
    return workload, int(top) if top else 5


def _answer(
    request: Request, advisor: AdvisorDep, format: str
) -> tuple[Any, str | None, dict[str, Any], int]:
    """(answer, error, workload, top) for the form; no answer when nothing is asked. An HTML page
    shows the error, an export raises it."""
    asked = any(request.query_params.get(k) for k in ("benchmark", "task", "model", "model_yaml"))
    workload: dict[str, Any] = {}
    if not asked:
        return None, None, workload, 5
    try:
        workload, top = workload_from_form(request)
        return service.recommend_workload(advisor, workload, top), None, workload, top
    except AdvisorError as exc:
        if format != "html":
            raise
        return None, exc.message, workload, 5


def _chart(rows: list[dict[str, Any]], answer: Any) -> str:
    if not rows:
        return ""
    return charts.bar_chart(
        row_bars(
            rows,
            lambda r: f"{r['rank']}. {r['accelerator']} x{r['count']}",
            lambda r: r["stack"],
            group="basis",
        ),
        title="Expected value of each recommendation with its 80% interval",
        unit=f"{answer.metric}" if answer else "",
    )


@router.get("/recommend")
def recommend_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        answer, error, workload, top = _answer(request, advisor, format)
        rows = [_recommend_row(r) for r in answer.recommendations] if answer else []
        if format != "html":
            if answer is None:
                raise InvalidInput(
                    "benchmark: give a benchmark, a task or a model to recommend for"
                )
            return export(
                format,
                "recommendations",
                list(rows[0]) if rows else ["rank"],
                rows,
                {"request": {"workload": workload, "top": top}, **answer.model_dump(mode="json")},
            )
        table = advisor.table()
        from stack_advisor.advisor.workload import TASKS, Objective

        return page(
            request,
            "recommend.html",
            title="Recommend",
            f=request.query_params,
            answer=answer,
            rows=rows,
            error=error,
            facets=facets(table),
            placements=PLACEMENTS,
            tasks=sorted(TASKS),
            objectives=[o.value for o in Objective],
            chart=_chart(rows, answer),
            families=sorted({b.family for b in table.benchmarks.values()}),
            placements_chosen=request.query_params.getlist("placements"),
        )

    return session.guarded(request, format, build)


def _recommend_row(r: Any) -> dict[str, Any]:
    c = r.candidate
    return {
        "rank": r.rank,
        "accelerator": c.accelerator,
        "count": c.accelerator_count,
        "placement": c.placement.value,
        "stack": c.stack_label,
        "stack_id": c.stack_id,
        "metric": r.metric,
        "unit": r.unit,
        "basis": r.basis.value,
        "basis_note": r.basis_note,
        "measured_on": r.evidence.measured_on,
        "value": r.value,
        "low": r.interval.low,
        "high": r.interval.high,
        "confidence": r.confidence,
        "per_accelerator": r.per_accelerator,
        "evidence_count": r.evidence.count,
        "rounds": r.evidence.rounds,
        "submitters": r.evidence.submitters,
        "sources": r.evidence.sources,
        "placement_overhead": r.placement_overhead.text if r.placement_overhead else None,
        "warnings": r.warnings,
        "snippet_yaml": r.snippet_yaml,
        "snippet_missing": r.snippet_missing,
    }
