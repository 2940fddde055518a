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


# a described training run's fields (docs/proxy.md): the size, and tokens or steps to train
RUN_FIELDS = ("parameters", "train_tokens", "train_steps", "global_batch", "sequence_length")
MLPERF_TRAINING = "mlperf-training"


def _at_least_one(form: GetForm, name: str, kind: type[int] | type[float]) -> Any:
    value = form.number(name, kind)
    if value is not None and not value >= 1:
        raise InvalidInput(f"{name}: must be at least 1, got {form.text(name)!r}")
    return value


def training_run(form: GetForm, pasted: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model object's fields of a training run given in the form's own fields: its
    ``parameters`` and ``train_tokens``, or ``train_steps`` x ``global_batch`` samples of
    ``sequence_length`` tokens (``proxy.model.described_flops``); none given: empty. The
    ``pasted`` description may hold what the fields leave out (the tokens).

    Raises:
        InvalidInput: a field not a number or below 1, steps without the batch or the sequence
            length, tokens and steps both, or a family other than mlperf-training (each named).
    """
    given = {name: _at_least_one(form, name, float) for name in RUN_FIELDS}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return {}
    family = form.text("family")
    if family not in (None, MLPERF_TRAINING):
        raise InvalidInput(
            f"family: a training run ({', '.join(given)}) is estimated for {MLPERF_TRAINING}, "
            f"not {family}"
        )
    for name in ("train_steps", "global_batch", "sequence_length"):
        if name in given and given[name] != int(given[name]):
            raise InvalidInput(f"{name}: must be a whole number, got {form.text(name)!r}")
    if "train_steps" in given:
        if "train_tokens" in given:
            raise InvalidInput("train_steps: give train_tokens or train_steps, not both")
        for needed in ("global_batch", "sequence_length"):
            if needed not in given:
                raise InvalidInput(
                    f"{needed}: needed with train_steps (tokens to train = train_steps x "
                    "global_batch x sequence_length)"
                )
        steps, batch = given.pop("train_steps"), given.pop("global_batch")
        return {**given, "train_samples": steps * batch}
    if "train_tokens" not in given and not {"train_tokens", "train_samples"} & set(pasted or {}):
        raise InvalidInput(
            f"train_tokens: a training run ({', '.join(given)} given) needs train_tokens, or "
            "train_steps with global_batch and sequence_length"
        )
    if "global_batch" in given:
        raise InvalidInput(
            "global_batch: counts only with train_steps (give train_tokens alone, or "
            "train_steps with global_batch and sequence_length)"
        )
    return given


def _same(pasted: Any, value: float) -> bool:
    try:
        return float(pasted) == value
    except (TypeError, ValueError):
        return False


def _described_model(form: GetForm) -> dict[str, Any] | None:
    """The workload's model object from the form: a pasted short YAML or config.json
    (``model_yaml``), the training run's own fields (``training_run``: beside a paste they
    complete it, and may not contradict it), or the model field's catalogue name when no
    benchmark or task is asked.

    Raises:
        InvalidInput: pasted text that is not a YAML/JSON mapping (named ``model_yaml``); a
            training field that is bad or that the paste gives otherwise (named).
    """
    described = _pasted_model(form, form.text("model_yaml"))
    run = training_run(form, described)
    if not run:
        return described
    for name, value in run.items():
        if described is not None and name in described and not _same(described[name], value):
            raise InvalidInput(
                f"{name}: {value:g} in the form but {described[name]!r} in model_yaml; give it once"
            )
    return {"name": form.text("model") or "training run", **(described or {}), **run}


def _pasted_model(form: GetForm, pasted: str | None) -> dict[str, Any] | None:
    """``model_yaml`` as a model object, named by the model field unless it names itself; with
    no paste, the model field's catalogue name when no benchmark or task is asked.

    Raises:
        InvalidInput: pasted text that is not a YAML/JSON mapping (named ``model_yaml``).
    """
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
        "as_of",
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
        if any(form.text(name) for name in RUN_FIELDS):
            workload["family"] = MLPERF_TRAINING
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
    asked = any(
        request.query_params.get(k)
        for k in ("benchmark", "task", "model", "model_yaml", "train_tokens", "train_steps")
    )
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
