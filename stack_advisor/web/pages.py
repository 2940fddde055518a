"""The web explorer's pages. Each page answers through the services the ``/v1`` routes call
(``stack_advisor.advisor.service``: recommend, predict, compare, placement overheads, sweeps, the
leaderboard and known-bad rows) and the same rows ``advisor plot`` draws
(``stack_advisor.advisor.charts.data``), so a page and the API cannot disagree; a page only parses
its form and renders. Every form is a GET form: the URL holds every field (a permalink), and
``format=csv`` or ``format=json`` exports what is shown.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from stack_advisor.advisor import service
from stack_advisor.api.deps import AdvisorDep, StoreDep
from stack_advisor.api.errors import Forbidden, Unauthorized
from stack_advisor.schema.errors import AdvisorError, InvalidInput, NotFound
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.base import Store, validation_message
from stack_advisor.web import charts, session
from stack_advisor.web.explore import PAGE_SIZES, SORTS, ExploreQuery, explore, facets
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)

EXPLORE_COLUMNS = [
    "key",
    "accelerator",
    "count",
    "placement",
    "benchmark",
    "scenario",
    "metric",
    "unit",
    "value",
    "per_accelerator",
    "driver",
    "cuda",
    "cudnn",
    "tensorrt",
    "framework",
    "framework_version",
    "source",
    "round",
    "submitter",
    "basis",
]
PLACEMENTS = [p.value for p in PlacementKind]


def _fields(request: Request) -> dict[str, Any]:
    return {k: v for k, v in request.query_params.items()}


# ---- explore ---------------------------------------------------------------------------------


@router.get("/")
def explore_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        table = advisor.table()
        try:
            query = ExploreQuery.model_validate(_fields(request)).cleaned()
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from None
        error, result = None, None
        try:
            result = explore(table, query)
        except InvalidInput as exc:
            if format != "html":
                raise
            error = exc.message
        if result is not None and query.advisor_figure:
            _add_advisor_figures(advisor, result.rows)
        if format != "html":
            assert result is not None
            return export(
                format,
                "observations",
                EXPLORE_COLUMNS
                + (
                    ["advisor_value", "advisor_basis", "advisor_low", "advisor_high"]
                    if query.advisor_figure
                    else []
                ),
                result.rows,
                {
                    "query": query.model_dump(),
                    "total": result.total,
                    "page": result.page,
                    "pages": result.pages,
                    "rows": result.rows,
                    "figures": result.figures,
                },
            )
        chart = explore_charts(result.figures) if result else ""
        return page(
            request,
            "explore.html",
            title="Explore",
            q=query,
            result=result,
            error=error,
            facets=facets(table),
            sorts=SORTS,
            sizes=PAGE_SIZES,
            chart=chart,
            columns=EXPLORE_COLUMNS,
            generation=table.generation,
            n=table.n,
        )

    return session.guarded(request, format, build)


def explore_charts(figures: list[dict[str, Any]]) -> str:
    """One chart per metric (and unit): minutes to train never share an axis with samples/s."""
    by_metric: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in figures:
        by_metric.setdefault((f["metric"], f.get("unit") or ""), []).append(f)
    return "".join(
        charts.bar_chart(
            [
                charts.Bar(
                    f"{f['accelerator']} · {f['benchmark']} {f['scenario']}".strip(),
                    f["median"],
                    f["p10"],
                    f["p90"],
                    note=f"{f['observations']} observations, p10–p90",
                )
                for f in group
            ],
            title=f"{metric}: median per accelerator of the selection, with p10–p90",
            unit=f"{metric} "
            f"({unit}{', per accelerator' if group[0].get('per_accelerator') else ''})",
        )
        for (metric, unit), group in by_metric.items()
    )


def _add_advisor_figures(advisor: Any, rows: list[dict[str, Any]]) -> None:
    """The advisor's figure for each shown row's configuration, as ``POST /v1/predictions``
    answers it: observed (aggregated) where the knowledge base has it, else predicted, labelled."""
    queries = [
        {
            "accelerator": r["accelerator"],
            "accelerator_count": r["count"],
            "placement": r["placement"],
            "components": {c: r[c] for c in ("driver", "cuda", "cudnn", "tensorrt") if r[c]}
            | (
                {r["framework"]: r["framework_version"]}
                if r["framework"] and r["framework_version"]
                else {}
            ),
            "framework": r["framework"],
            "family": r["family"],
            "benchmark": r["benchmark"],
            "scenario": r["scenario"] or None,
            "metric": r["metric"],
            # the row's own division: an open-division row asked as closed found no CPU measured
            "parameters": {"division": r["division"]} if r.get("division") else {},
        }
        for r in rows
    ]
    if not queries:
        return
    for row, pred in zip(rows, service.predict(advisor, queries), strict=True):
        row["advisor_value"] = pred.value
        row["advisor_basis"] = pred.basis.value
        row["advisor_low"] = pred.interval.low if pred.interval else None
        row["advisor_high"] = pred.interval.high if pred.interval else None
        row["advisor_reason"] = pred.reason


@router.get("/observation")
def observation_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, key: str = "", format: str = "html"
) -> Response:
    def build() -> Response:
        obs = _find_observation(store, key)
        doc = obs.model_dump(mode="json")
        if format != "html":
            return export(format, "observation", list(doc), [doc], doc)
        return page(request, "observation.html", title="Evidence", obs=obs, doc=doc)

    return session.guarded(request, format, build)


@router.get("/host")
def host_page(request: Request, store: StoreDep, name: str = "", format: str = "html") -> Response:
    """A host's placement inside the node (``Store.host_topology``): NUMA nodes and attachments."""

    def build() -> Response:
        if not name:
            raise InvalidInput("name: give the host's name (an observation's page links it)")
        topology = store.host_topology(name)
        if topology is None:
            raise NotFound(
                f"no topology stored for host {name!r}: `advisor collect` on it records one"
            )
        rows = [d.model_dump(mode="json") | {"device": d.label} for d in topology.devices]
        if format != "html":
            return export(
                format,
                "host",
                ["device", "kind", "pci_address", "numa_node", "cpu_affinity", "links"],
                rows,
                {"host": name, **topology.model_dump(mode="json")},
            )
        return page(
            request, "host.html", title=f"Host {name}", name=name, topology=topology, rows=rows
        )

    return session.guarded(request, format, build)


def _find_observation(store: Store, key: str) -> Any:
    """One observation by key: what ``GET /v1/observations/{key}`` returns (a keyed lookup)."""
    if not key:
        raise InvalidInput("key: give the observation's key (the Explore table links each row)")
    return store.get_observation(key)


# ---- leaderboard -----------------------------------------------------------------------------


@router.get("/leaderboard")
def leaderboard_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html"
) -> Response:
    def build() -> Response:
        f = _fields(request)
        benchmark, scenario, metric = (
            f.get("benchmark") or None,
            f.get("scenario") or None,
            f.get("metric") or None,
        )
        accelerator, placement = f.get("accelerator") or None, f.get("placement") or None
        rows: list[dict[str, Any]] = []
        notes: list[str] = []
        error, series = None, None
        if benchmark:
            try:
                rows, notes, series = service.leaderboard(
                    advisor,
                    store,
                    benchmark=benchmark,
                    scenario=scenario,
                    metric=metric,
                    accelerator=accelerator,
                    placement=placement,
                )
            except (InvalidInput, NotFound) as exc:
                if format != "html":
                    raise
                error = exc.message
        columns = [
            "rank",
            "accelerator",
            "placement",
            "value",
            "low",
            "high",
            "interval",
            "observations",
            *(series or {}).get("token_latencies", []),
            "stack",
            "accelerator_names",
            "accelerator_counts",
        ]
        if format != "html":
            return export(
                format,
                "leaderboard",
                columns,
                rows,
                {"query": f, "series": series, "notes": notes, "rows": rows},
            )
        chart = (
            charts.bar_chart(
                [
                    charts.Bar(
                        r["accelerator"],
                        r["value"],
                        r["low"],
                        r["high"],
                        group=r["placement"],
                        note=f"{r['stack']}; interval: {r['interval']}",
                    )
                    for r in rows
                ],
                title=f"Leaderboard: {series['heading'] if series else ''}",
                unit=series["value_label"] if series else "",
            )
            if rows
            else ""
        )
        table = advisor.table()
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
            chart=chart,
            facets=facets(table),
            placements=PLACEMENTS,
            columns=columns,
            latency_labels=dict(service.TOKEN_LATENCIES),
        )

    return session.guarded(request, format, build)


# ---- recommend -------------------------------------------------------------------------------


class _Form:
    """A GET form's fields: text trimmed (empty is None), numbers parsed with the field named."""

    def __init__(self, request: Request) -> None:
        self.fields = request.query_params

    def text(self, name: str) -> str | None:
        return (self.fields.get(name) or "").strip() or None

    def number(self, name: str, kind: type[int] | type[float]) -> int | float | None:
        text = self.text(name)
        try:
            return None if text is None else kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise InvalidInput(f"{name}: must be {what}, got {text!r}") from None

    def choice(self, name: str) -> bool | None:
        """``yes``/``no`` as True/False; anything else None."""
        return {"yes": True, "no": False}.get(self.text(name) or "")


def _described_model(form: _Form) -> dict[str, Any] | None:
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
    form = _Form(request)
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


@router.get("/recommend")
def recommend_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        asked = any(
            request.query_params.get(k) for k in ("benchmark", "task", "model", "model_yaml")
        )
        answer, error, top = None, None, 5
        workload: dict[str, Any] = {}
        if asked:
            try:
                workload, top = workload_from_form(request)
                answer = service.recommend_workload(advisor, workload, top)
            except AdvisorError as exc:
                if format != "html":
                    raise
                error = exc.message
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

        chart = (
            charts.bar_chart(
                [
                    charts.Bar(
                        f"{r['rank']}. {r['accelerator']} x{r['count']}",
                        r["value"],
                        r["low"],
                        r["high"],
                        group=r["basis"],
                        note=r["stack"],
                    )
                    for r in rows
                ],
                title="Expected value of each recommendation with its 80% interval",
                unit=f"{answer.metric}" if answer else "",
            )
            if rows
            else ""
        )
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
            chart=chart,
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


# ---- compare ---------------------------------------------------------------------------------


@router.get("/compare")
def compare_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        f = _fields(request)
        a, b, accelerator = f.get("a") or None, f.get("b") or None, f.get("accelerator") or None
        comparisons, error, overheads, overhead_note = [], None, [], None
        if a and b:
            try:
                comparisons = service.compare_benchmarks(
                    advisor,
                    a,
                    b,
                    accelerator=accelerator,
                    benchmark=f.get("benchmark") or None,
                    scenario=f.get("scenario") or None,
                )
            except (InvalidInput, NotFound) as exc:
                if format != "html":
                    raise
                error = exc.message
        try:
            from stack_advisor.advisor.charts.data import overhead_chart

            overheads = overhead_chart(service.placement_overheads(advisor, accelerator)).rows
        except NotFound as exc:
            overhead_note = exc.message
        except InvalidInput as exc:
            error = error or exc.message
        columns = [
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
        if format != "html":
            return export(
                format,
                "compare",
                columns,
                comparisons,
                {"query": f, "comparisons": comparisons, "placement_overhead": overheads},
            )
        shown = [c for c in comparisons if c["ratio"] is not None]
        chart = (
            charts.bar_chart(
                [
                    charts.Bar(
                        f"{c['benchmark']} {c['scenario']}".strip(),
                        c["ratio"],
                        c["low"],
                        c["high"],
                        note=c["verdict"],
                    )
                    for c in shown
                ],
                title="B against A per benchmark (speed ratio, >1 means B is faster; 1.0 dashed)",
                unit="B/A speed ratio",
                reference=1.0,
            )
            if shown
            else ""
        )
        overhead_svg = (
            charts.bar_chart(
                [
                    charts.Bar(
                        o["accelerator"],
                        o["ratio"],
                        o["low"],
                        o["high"],
                        group=o["placement"],
                        note=o["summary"],
                    )
                    for o in overheads
                ],
                title="Speed in VMs relative to bare metal (1.0 dashed)",
                unit="ratio to bare metal",
                reference=1.0,
            )
            if overheads
            else ""
        )
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
            chart=chart,
            overheads=overheads,
            overhead_svg=overhead_svg,
            overhead_note=overhead_note,
            facets=facets(table),
            stacks=stacks,
            columns=columns,
        )

    return session.guarded(request, format, build)


@router.get("/compare/sweep")
def compare_sweep_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html"
) -> Response:
    def build() -> Response:
        f = _fields(request)
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
        chart = (
            charts.bar_chart(
                [
                    charts.Bar(
                        f"{r['benchmark']} · {r['cell']}",
                        r["ratio"],
                        r["low"],
                        r["high"],
                        group=r["cell"],
                        note=f"{r['parameters']}; {r['verdict']}; 95% interval from "
                        f"{r['interval_from']}",
                    )
                    for r in rows
                ],
                title=f"Speed of each cell relative to {doc['baseline']} (>1 is faster; "
                "1.0 dashed)",
                unit="speed ratio to the baseline cell",
                reference=1.0,
            )
            if doc and rows
            else ""
        )
        sweeps = service.sweeps(advisor, store)
        return page(
            request,
            "compare_sweep.html",
            title="Compare sweep cells",
            f=f,
            report=doc,
            rows=rows,
            error=error,
            chart=chart,
            sweeps=sweeps,
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


# ---- known-bad -------------------------------------------------------------------------------


@router.get("/known-bad")
def known_bad_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, q: str = "", format: str = "html"
) -> Response:
    def build() -> Response:
        rows = service.known_bad(advisor, store)
        if q.strip():
            words = q.lower().split()
            rows = [
                r
                for r in rows
                if all(w in " ".join(str(v) for v in r.values()).lower() for w in words)
            ]
        columns = [
            "kind",
            "severity",
            "what",
            "stack",
            "accelerator",
            "placement",
            "benchmark",
            "message",
            "when",
        ]
        if format != "html":
            return export(format, "known-bad", columns, rows, {"query": {"q": q}, "rows": rows})
        return page(
            request,
            "known_bad.html",
            title="Known-bad combinations",
            q=q,
            rows=rows[:500],
            total=len(rows),
            columns=columns,
        )

    return session.guarded(request, format, build)


# ---- login -----------------------------------------------------------------------------------


@router.get("/login")
def login_form(request: Request, next: str = "/") -> Response:
    return page(request, "login.html", title="Log in", next=session.safe_next(next))


@router.post("/login")
async def login(request: Request) -> Response:
    form = await session.form_fields(request)
    target = session.safe_next(form.get("next"))
    token = form.get("token", "").strip()
    from stack_advisor.api.auth import authorize
    from stack_advisor.api.settings import Scope

    throttle = _login_throttle(request)
    address = request.client.host if request.client else "unknown"
    wait = throttle.wait_s(address)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        response = page(
            request,
            "login.html",
            status_code=429,
            title="Log in",
            next=target,
            error=f"too many failed logins from this address; try again in {seconds} s",
        )
        response.headers["Retry-After"] = str(seconds)
        return response
    try:
        authorize(
            request.app.state.tokens,
            f"Bearer {token}" if token else None,
            Scope.READ,
            open_access=False,
        )
    except (Unauthorized, Forbidden) as exc:
        throttle.failed(address)
        return page(
            request,
            "login.html",
            status_code=exc.status_code,
            title="Log in",
            next=target,
            error=exc.message,
        )
    redirect = RedirectResponse(target, status_code=303)
    redirect.set_cookie(
        session.COOKIE,
        token,
        max_age=session.COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return redirect


def _login_throttle(request: Request) -> session.LoginThrottle:
    state = request.app.state
    throttle: session.LoginThrottle | None = getattr(state, "login_throttle", None)
    if throttle is None:
        throttle = state.login_throttle = session.LoginThrottle()
    return throttle


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(session.COOKIE, path="/")
    return response
