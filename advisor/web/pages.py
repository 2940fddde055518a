"""The web explorer's pages. Each page answers with the same functions the ``/v1`` routes call
(``Advisor.recommend``, ``Advisor.compare``, ``Advisor.placement_overhead``, ``Advisor.predict``,
``Store.query_observations``, ``Store.list_entities``) and the same rows ``advisor plot`` draws
(``advisor.charts.data``), so a page and the API cannot disagree. Every form is a GET form: the URL
holds every field (a permalink), and ``format=csv`` or ``format=json`` exports what is shown.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from advisor.api.deps import get_advisor, get_store
from advisor.api.errors import Forbidden, Unauthorized
from advisor.web import charts, session
from advisor.web.explore import PAGE_SIZES, SORTS, ExploreQuery, explore, facets
from advisor.web.render import FORMATS, export, page
from graph_schema.errors import AdvisorError, InvalidInput, NotFound
from graph_schema.models import FailureClass, ObservationFilter, PlacementKind, failure_class
from graph_schema.store import Store, validation_message

router = APIRouter(include_in_schema=False)
StoreDep = Annotated[Store, Depends(get_store)]
AdvisorDep = Annotated[Any, Depends(get_advisor)]

EXPLORE_COLUMNS = ["key", "accelerator", "count", "placement", "benchmark", "scenario", "metric", "unit",
                   "value", "per_accelerator", "driver", "cuda", "cudnn", "tensorrt", "framework",
                   "framework_version", "source", "round", "submitter", "basis"]
PLACEMENTS = [p.value for p in PlacementKind]


def _guarded(request: Request, fmt: str, build: Callable[[], Response]) -> Response:
    """Authorise, then build. Without a token a browser is sent to the login form (an export
    gets the API's JSON 401); a bad input is shown on the page, with the form kept."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        session.page_caller(request)
    except Unauthorized:
        if fmt != "html":
            raise
        return RedirectResponse(session.login_url(request), status_code=303)
    except Forbidden as exc:
        if fmt != "html":
            raise
        return page(request, "message.html", status_code=403, title="Not allowed", error=exc.message)
    return build()


_MEMO: dict[tuple[Any, ...], Any] = {}
_MEMO_LOCK = threading.Lock()


def memoised(advisor: Any, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """An answer computed once per store generation (what the advisor's own memo does for
    recommendations): pages that read many observations from the store are paid for once
    until the data changes. Errors are not kept."""
    full = (id(advisor.store), advisor.table().generation, *key)
    with _MEMO_LOCK:
        if full in _MEMO:
            return copy.deepcopy(_MEMO[full])
    value = compute()
    with _MEMO_LOCK:
        if len(_MEMO) >= 128:
            _MEMO.clear()
        _MEMO[full] = value
    return copy.deepcopy(value)


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
            return export(format, "observations", EXPLORE_COLUMNS + (
                ["advisor_value", "advisor_basis", "advisor_low", "advisor_high"] if query.advisor_figure else []),
                result.rows, {"query": query.model_dump(), "total": result.total, "page": result.page,
                              "pages": result.pages, "rows": result.rows, "figures": result.figures})
        chart = explore_charts(result.figures) if result else ""
        return page(request, "explore.html", title="Explore", q=query, result=result, error=error,
                    facets=facets(table), sorts=SORTS, sizes=PAGE_SIZES, chart=chart,
                    columns=EXPLORE_COLUMNS, generation=table.generation, n=table.n)

    return _guarded(request, format, build)


def explore_charts(figures: list[dict[str, Any]]) -> str:
    """One chart per metric (and unit): minutes to train never share an axis with samples/s."""
    by_metric: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in figures:
        by_metric.setdefault((f["metric"], f.get("unit") or ""), []).append(f)
    return "".join(
        charts.bar_chart(
            [charts.Bar(f"{f['accelerator']} · {f['benchmark']} {f['scenario']}".strip(), f["median"], f["p10"],
                        f["p90"], note=f"{f['observations']} observations, p10–p90") for f in group],
            title=f"{metric}: median per accelerator of the selection, with p10–p90",
            unit=f"{metric} ({unit}{', per accelerator' if group[0].get('per_accelerator') else ''})")
        for (metric, unit), group in by_metric.items())


def _add_advisor_figures(advisor: Any, rows: list[dict[str, Any]]) -> None:
    """The advisor's figure for each shown row's configuration, as ``POST /v1/predictions``
    answers it: observed (aggregated) where the knowledge base has it, else predicted, labelled."""
    queries = [{"accelerator": r["accelerator"], "accelerator_count": r["count"], "placement": r["placement"],
                "components": {c: r[c] for c in ("driver", "cuda", "cudnn", "tensorrt") if r[c]}
                | ({r["framework"]: r["framework_version"]} if r["framework"] and r["framework_version"] else {}),
                "framework": r["framework"], "family": r["family"], "benchmark": r["benchmark"],
                "scenario": r["scenario"] or None, "metric": r["metric"],
                # the row's own division: an open-division row asked as closed found no CPU measured
                "parameters": {"division": r["division"]} if r.get("division") else {}} for r in rows]
    if not queries:
        return
    for row, pred in zip(rows, advisor.predict(queries), strict=True):
        row["advisor_value"] = pred.value
        row["advisor_basis"] = pred.basis.value
        row["advisor_low"] = pred.interval.low if pred.interval else None
        row["advisor_high"] = pred.interval.high if pred.interval else None
        row["advisor_reason"] = pred.reason


@router.get("/observation")
def observation_page(request: Request, store: StoreDep, advisor: AdvisorDep, key: str = "",
                     format: str = "html") -> Response:
    def build() -> Response:
        obs = _find_observation(store, key)
        doc = obs.model_dump(mode="json")
        if format != "html":
            return export(format, "observation", list(doc), [doc], doc)
        return page(request, "observation.html", title="Evidence", obs=obs, doc=doc)

    return _guarded(request, format, build)


@router.get("/host")
def host_page(request: Request, store: StoreDep, name: str = "", format: str = "html") -> Response:
    """A host's placement inside the node (``Store.host_topology``): NUMA nodes and attachments."""
    def build() -> Response:
        if not name:
            raise InvalidInput("name: give the host's name (an observation's page links it)")
        topology = store.host_topology(name)
        if topology is None:
            raise NotFound(f"no topology stored for host {name!r}: `advisor collect` on it records one")
        rows = [d.model_dump(mode="json") | {"device": d.label} for d in topology.devices]
        if format != "html":
            return export(format, "host", ["device", "kind", "pci_address", "numa_node", "cpu_affinity", "links"],
                          rows, {"host": name, **topology.model_dump(mode="json")})
        return page(request, "host.html", title=f"Host {name}", name=name, topology=topology, rows=rows)

    return _guarded(request, format, build)


def _find_observation(store: Store, key: str) -> Any:
    """One observation by key: what ``GET /v1/observations/{key}`` returns (a keyed lookup)."""
    if not key:
        raise InvalidInput("key: give the observation's key (the Explore table links each row)")
    return store.get_observation(key)


# ---- leaderboard -----------------------------------------------------------------------------

@router.get("/leaderboard")
def leaderboard_page(request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        f = _fields(request)
        benchmark, scenario, metric = f.get("benchmark") or None, f.get("scenario") or None, f.get("metric") or None
        accelerator, placement = f.get("accelerator") or None, f.get("placement") or None
        rows, notes, error, series = [], [], None, None
        if benchmark:
            try:
                rows, notes, series = memoised(
                    advisor, ("leaderboard", benchmark, scenario, metric, accelerator, placement),
                    lambda: leaderboard(store, benchmark=benchmark, scenario=scenario, metric=metric,
                                        accelerator=accelerator, placement=placement))
            except (InvalidInput, NotFound) as exc:
                if format != "html":
                    raise
                error = exc.message
        columns = ["rank", "accelerator", "placement", "value", "low", "high", "interval", "observations",
                   *(series or {}).get("token_latencies", []), "stack", "accelerator_names", "accelerator_counts"]
        if format != "html":
            return export(format, "leaderboard", columns, rows,
                          {"query": f, "series": series, "notes": notes, "rows": rows})
        chart = charts.bar_chart(
            [charts.Bar(r["accelerator"], r["value"], r["low"], r["high"], group=r["placement"],
                        note=f"{r['stack']}; interval: {r['interval']}") for r in rows],
            title=f"Leaderboard: {series['heading'] if series else ''}",
            unit=series["value_label"] if series else "") if rows else ""
        table = advisor.table()
        if series:  # the form shows what the board opened on
            f = {**f, "scenario": f.get("scenario") or series.get("scenario") or "", "metric": f.get("metric") or series["metric"]}
        return page(request, "leaderboard.html", title="Leaderboard", f=f, rows=rows, notes=notes, error=error,
                    series=series, chart=chart, facets=facets(table), placements=PLACEMENTS, columns=columns,
                    latency_labels=dict(TOKEN_LATENCIES))

    return _guarded(request, format, build)


def leaderboard(store: Store, *, benchmark: str, scenario: str | None, metric: str | None,
                accelerator: str | None, placement: str | None) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """Best stack per (canonical accelerator, placement), best first: ``advisor plot throughput``'s
    rows (``plot_data.throughput_chart``, top 1 stack) for each placement, over the observations
    ``GET /v1/observations?benchmark_name=...`` returns."""
    from advisor.charts import data as plot_data

    kind = plot_data.parse_placement(placement, plot_data.FORM) if placement else None
    parts = benchmark.split("/")  # a name, family/name, or an id (family/name/hash: one series)
    flt = ObservationFilter(benchmark_id=benchmark, placement=kind) if len(parts) == 3 else \
        ObservationFilter(benchmark_name=parts[-1], placement=kind)
    observations = list(store.iter_observations(flt))
    if not observations:
        raise NotFound(f"Benchmark: no observations of {benchmark!r}"
                       f"{' in placement ' + placement if placement else ''}")
    defaults: list[str] = []
    if metric is None:
        scenario, metric, defaults = default_series(observations, scenario)
    by_place: dict[str, list[Any]] = {}
    for obs in observations:
        by_place.setdefault(obs.placement.kind.value, []).append(obs)
    rows, notes, series, first_error = [], list(defaults), None, None
    for place in sorted(by_place):
        try:
            chart = plot_data.throughput_chart(by_place[place], benchmark=benchmark, scenario=scenario,
                                               metric=metric, accelerators=[accelerator] if accelerator else None,
                                               top=1, spelling=plot_data.FORM)
        except InvalidInput:
            raise  # several series match: the user chooses one, for every placement alike
        except NotFound as exc:
            first_error = first_error or exc
            notes.append(f"{place}: {exc.message}")
            continue
        series = series or chart.series
        if chart.series != series:
            notes.append(f"{place}: left out, its results are another series ({chart.series.heading if chart.series else ''})")
            continue
        notes.extend(f"{place}: {n}" for n in chart.notes if "stacks shown" not in n)
        rows.extend({**r, "placement": place} for r in chart.rows)
    if series is None:
        assert first_error is not None
        raise first_error
    better = (lambda v: -v) if series.higher_is_better else (lambda v: v)
    rows.sort(key=lambda r: (better(r["value"]), r["accelerator"], r["placement"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    token_latencies = add_token_latencies(rows, observations, series.scenario)
    info = series.as_dict() | {"heading": series.heading, "value_label": series.value_label,
                               "token_latencies": token_latencies}
    return rows, notes, info


TOKEN_LATENCIES = (("ttft_p99_ms", "TTFT p99 (ms)"), ("tpot_p99_ms", "TPOT p99 (ms)"))


def default_series(observations: list[Any], scenario: str | None) -> tuple[str | None, str | None, list[str]]:
    """The scenario and metric a leaderboard opens on when none is chosen: the benchmark's
    throughput (the most-recorded higher-is-better metric, as ``recommend`` ranks by), in its
    most-recorded scenario; with a note saying so. (None, None) when nothing is higher-is-better."""
    counts: dict[tuple[str, str], int] = {}
    for o in observations:
        scen = str(o.benchmark.parameters.get("scenario") or "")
        if o.valid and o.higher_is_better and (scenario is None or scen.lower() == scenario.lower()):
            counts[(scen, o.metric)] = counts.get((scen, o.metric), 0) + 1
    if not counts:
        return scenario, None, []
    (scen, metric), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    chosen = scenario or scen or None
    return chosen, metric, [f"showing {metric}{' in ' + scen if scen and not scenario else ''}: the benchmark's "
                            "throughput metric (most recorded); choose another metric or scenario above"]


def add_token_latencies(rows: list[dict[str, Any]], observations: list[Any], scenario: str | None) -> list[str]:
    """TTFT and TPOT (p99, ms) of each row's accelerator, placement and stack in the same scenario,
    where the results record them (LLM benchmarks): the median over the matching results. Returns
    the columns added (none when the benchmark records no token latencies)."""
    from advisor.charts.data import canonical_name

    wanted = {m for m, _ in TOKEN_LATENCIES}
    found: dict[tuple[str, str, str, str], list[float]] = {}
    for o in observations:
        scen = str(o.benchmark.parameters.get("scenario") or "")
        if o.metric in wanted and o.valid and (scenario is None or scen.lower() == scenario.lower()):
            key = (o.metric, canonical_name(o.accelerator.model), o.placement.kind.value, o.stack.stack_id)
            found.setdefault(key, []).append(o.value)
    columns = [m for m, _ in TOKEN_LATENCIES if any(k[0] == m for k in found)]
    for r in rows:
        for m in columns:
            values = found.get((m, r["accelerator"], r["placement"], r["stack_id"]))
            r[m] = float(np.median(values)) if values else None
    return columns


# ---- recommend -------------------------------------------------------------------------------

def workload_from_form(request: Request) -> tuple[dict[str, Any], int]:
    """The workload body ``POST /v1/recommendations`` takes, from the form's fields.

    Raises:
        InvalidInput: a number field that is not a number (named).
    """
    q = request.query_params
    get = lambda k: (q.get(k) or "").strip() or None

    def integer(name: str) -> int | None:
        text = get(name)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            raise InvalidInput(f"{name}: must be a whole number, got {text!r}") from None

    def decimal(name: str) -> float | None:
        text = get(name)
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise InvalidInput(f"{name}: must be a number, got {text!r}") from None

    workload: dict[str, Any] = {k: get(k) for k in ("family", "benchmark", "task", "scenario", "metric",
                                                     "objective", "precision", "model", "image") if get(k)}
    for name in ("min_confidence", "max_ttft_ms", "max_tpot_ms"):
        if decimal(name) is not None:
            workload[name] = decimal(name)
    hardware: dict[str, Any] = {}
    if get("accelerators"):
        hardware["accelerators"] = [a.strip() for a in (get("accelerators") or "").split(",") if a.strip()]
    for name in ("count", "min_count", "max_count"):
        if integer(name) is not None:
            hardware[name] = integer(name)
    if get("include_cpu") in ("yes", "no"):
        hardware["include_cpu"] = get("include_cpu") == "yes"
    placements = [p for p in q.getlist("placements") if p]
    if placements:
        hardware["placements"] = placements
    if get("driver"):
        hardware["driver"] = get("driver")
    if hardware:
        workload["hardware"] = hardware
    if get("framework"):
        workload["frameworks"] = [{"name": get("framework"), "version": get("framework_version")}]
    if integer("batch_size") is not None:
        workload["batch_size"] = integer("batch_size")
    if integer("min_evidence") is not None:
        workload["min_evidence"] = integer("min_evidence")
    if get("include_predicted") in ("yes", "no"):
        workload["include_predicted"] = get("include_predicted") == "yes"
    return workload, integer("top") or 5


@router.get("/recommend")
def recommend_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        asked = bool(request.query_params.get("benchmark") or request.query_params.get("task"))
        answer, error, workload, top = None, None, {}, 5
        if asked:
            try:
                workload, top = workload_from_form(request)
                answer = advisor.recommend(workload, top=top)
            except AdvisorError as exc:
                if format != "html":
                    raise
                error = exc.message
        rows = [_recommend_row(r) for r in answer.recommendations] if answer else []
        if format != "html":
            if answer is None:
                raise InvalidInput("benchmark: give a benchmark or a task to recommend for")
            return export(format, "recommendations", list(rows[0]) if rows else ["rank"], rows,
                          {"request": {"workload": workload, "top": top}, **answer.model_dump(mode="json")})
        table = advisor.table()
        from advisor.workload import TASKS, Objective

        chart = charts.bar_chart(
            [charts.Bar(f"{r['rank']}. {r['accelerator']} x{r['count']}", r["value"], r["low"], r["high"],
                        group=r["basis"], note=r["stack"]) for r in rows],
            title="Expected value of each recommendation with its 80% interval",
            unit=f"{answer.metric}" if answer else "") if rows else ""
        return page(request, "recommend.html", title="Recommend", f=request.query_params, answer=answer, rows=rows,
                    error=error, facets=facets(table), placements=PLACEMENTS, tasks=sorted(TASKS),
                    objectives=[o.value for o in Objective], chart=chart,
                    families=sorted({b.family for b in table.benchmarks.values()}),
                    placements_chosen=request.query_params.getlist("placements"))

    return _guarded(request, format, build)


def _recommend_row(r: Any) -> dict[str, Any]:
    c = r.candidate
    return {
        "rank": r.rank, "accelerator": c.accelerator, "count": c.accelerator_count, "placement": c.placement.value,
        "stack": c.stack_label, "stack_id": c.stack_id, "metric": r.metric, "unit": r.unit, "basis": r.basis.value,
        "basis_note": r.basis_note, "measured_on": r.evidence.measured_on,
        "value": r.value, "low": r.interval.low, "high": r.interval.high, "confidence": r.confidence,
        "per_accelerator": r.per_accelerator, "evidence_count": r.evidence.count,
        "rounds": r.evidence.rounds, "submitters": r.evidence.submitters, "sources": r.evidence.sources,
        "placement_overhead": r.placement_overhead.text if r.placement_overhead else None,
        "warnings": r.warnings, "snippet_yaml": r.snippet_yaml, "snippet_missing": r.snippet_missing,
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
                comparisons = compare_benchmarks(advisor, a, b, accelerator=accelerator,
                                                 benchmark=f.get("benchmark") or None,
                                                 scenario=f.get("scenario") or None)
            except (InvalidInput, NotFound) as exc:
                if format != "html":
                    raise
                error = exc.message
        try:
            from advisor.charts.data import overhead_chart

            overheads = overhead_chart(advisor.placement_overhead(accelerator)).rows
        except NotFound as exc:
            overhead_note = exc.message
        except InvalidInput as exc:
            error = error or exc.message
        columns = ["benchmark", "scenario", "metric", "stack_a", "stack_b", "pairs", "ratio", "low", "high",
                   "p_value", "a_count", "b_count", "a_median", "b_median", "verdict"]
        if format != "html":
            return export(format, "compare", columns, comparisons,
                          {"query": f, "comparisons": comparisons, "placement_overhead": overheads})
        shown = [c for c in comparisons if c["ratio"] is not None]
        chart = charts.bar_chart(
            [charts.Bar(f"{c['benchmark']} {c['scenario']}".strip(), c["ratio"], c["low"], c["high"],
                        note=c["verdict"]) for c in shown],
            title="B against A per benchmark (speed ratio, >1 means B is faster; 1.0 dashed)",
            unit="B/A speed ratio", reference=1.0) if shown else ""
        overhead_svg = charts.bar_chart(
            [charts.Bar(o["accelerator"], o["ratio"], o["low"], o["high"], group=o["placement"],
                        note=o["summary"]) for o in overheads],
            title="Speed in VMs relative to bare metal (1.0 dashed)", unit="ratio to bare metal",
            reference=1.0) if overheads else ""
        table = advisor.table()
        stacks = sorted(((sid, st.label()) for sid, st in table.stacks.items()), key=lambda s: s[1])[:500]
        return page(request, "compare.html", title="Compare", f=f, comparisons=comparisons, error=error,
                    chart=chart, overheads=overheads, overhead_svg=overhead_svg, overhead_note=overhead_note,
                    facets=facets(table), stacks=stacks, columns=columns)

    return _guarded(request, format, build)


def compare_benchmarks(advisor: Any, a: str, b: str, *, accelerator: str | None, benchmark: str | None,
                       scenario: str | None) -> list[dict[str, Any]]:
    """``GET /v1/compare`` (``Advisor.compare``) for each benchmark and scenario both stacks ran on
    (or the one asked for); benchmarks where neither stack has a result are left out.

    Raises:
        NotFound: a stack selector matching no stack, or no benchmark with results of either.
    """
    table = advisor.table()
    combos = sorted({(info.family, info.name, info.scenario or "") for info in table.benchmarks.values()
                     if (benchmark is None or info.name == benchmark) and (scenario is None or info.scenario == scenario)})
    if not combos:
        raise NotFound(f"benchmark: nothing recorded for {benchmark or 'any benchmark'}"
                       f"{' in scenario ' + scenario if scenario else ''}")
    out: list[dict[str, Any]] = []
    last: AdvisorError | None = None
    for family, name, scen in combos:
        try:
            c = advisor.compare(a, b, benchmark=name, accelerator=accelerator, scenario=scen or None, family=family)
        except NotFound as exc:
            if exc.message.startswith("stack:"):
                raise
            last = exc
            continue
        if c.a_count or c.b_count:
            out.append({"benchmark": name, "scenario": scen, **c.model_dump(mode="json"),
                        "low": c.interval.low if c.interval else None,
                        "high": c.interval.high if c.interval else None})
    if not out:
        raise last or NotFound("neither stack has results on the chosen benchmarks")
    out.sort(key=lambda c: (c["pairs"] == 0, c["benchmark"], c["scenario"]))
    return out


@router.get("/compare/sweep")
def compare_sweep_page(request: Request, store: StoreDep, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        from advisor.verbs.sweep import sweep_names, sweep_report

        f = _fields(request)
        sweep = f.get("sweep") or None
        report, error = None, None
        if sweep:
            try:
                report = sweep_report(store, sweep, host=f.get("host") or None, baseline=f.get("baseline") or None,
                                      cell=f.get("cell") or None, flagged_only=f.get("flagged_only") == "yes")
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
        chart = charts.bar_chart(
            [charts.Bar(f"{r['benchmark']} · {r['cell']}", r["ratio"], r["low"], r["high"], group=r["cell"],
                        note=f"{r['parameters']}; {r['verdict']}; 95% interval from {r['interval_from']}")
             for r in rows],
            title=f"Speed of each cell relative to {doc['baseline']} (>1 is faster; 1.0 dashed)",
            unit="speed ratio to the baseline cell", reference=1.0) if doc and rows else ""
        sweeps = memoised(advisor, ("sweeps",), lambda: sweep_names(store))
        return page(request, "compare_sweep.html", title="Compare sweep cells", f=f, report=doc, rows=rows,
                    error=error, chart=chart, sweeps=sweeps, cells=[c["cell"] for c in doc["cells"]] if doc else [])

    return _guarded(request, format, build)


SWEEP_COLUMNS = ["benchmark", "parameters", "metric", "unit", "cell", "stack", "value", "baseline_value", "ratio",
                 "low", "high", "repeats", "baseline_repeats", "interval_from", "spread", "flagged", "verdict", "basis"]


# ---- known-bad -------------------------------------------------------------------------------

@router.get("/known-bad")
def known_bad_page(request: Request, store: StoreDep, advisor: AdvisorDep, q: str = "",
                   format: str = "html") -> Response:
    def build() -> Response:
        rows = memoised(advisor, ("known-bad",), lambda: known_bad(store, advisor))
        if q.strip():
            words = q.lower().split()
            rows = [r for r in rows if all(w in " ".join(str(v) for v in r.values()).lower() for w in words)]
        columns = ["kind", "severity", "what", "stack", "accelerator", "placement", "benchmark", "message", "when"]
        if format != "html":
            return export(format, "known-bad", columns, rows, {"query": {"q": q}, "rows": rows})
        return page(request, "known_bad.html", title="Known-bad combinations", q=q, rows=rows[:500],
                    total=len(rows), columns=columns)

    return _guarded(request, format, build)


def known_bad(store: Store, advisor: Any) -> list[dict[str, Any]]:
    """Recorded stack failures (``GET /v1/failures``'s list, less harness limitations and
    environment failures: ``graph_schema.models.failure_class``) and the stacks of the knowledge base that
    break a compatibility rule (what ``recommend`` excludes or warns about)."""
    table = advisor.table()
    try:
        failures = store.list_entities("failures")
    except NotImplementedError:
        failures = []
    labels = {sid: st.label() for sid, st in table.stacks.items()}
    # only a stack failure is known-bad: harness limitations and what a node lacked are not
    failures = [f for f in failures if failure_class(f.get("stage"), f.get("error_class")) is FailureClass.STACK]
    rows = [{"kind": "failure", "severity": "error",
             "what": f"{f.get('stage', '')}: {f.get('error_class', '')}",
             "stack": labels.get(str(f.get("stack_id")), f.get("stack_id")), "accelerator": f.get("accelerator"),
             "placement": str(f.get("placement_id") or "").split("|")[0], "benchmark": f.get("benchmark_id"),
             "message": f.get("message", ""), "when": f.get("timestamp")} for f in failures]
    for sid, stack in table.stacks.items():
        for v in advisor.rules.check_stack(stack):
            used = table.stack.codes == table.stack.code(sid)
            accels = sorted({table.accelerator.vocab[c] for c in np.unique(table.accelerator.codes[used])})
            rows.append({"kind": "rule", "severity": v.severity.value, "what": v.rule, "stack": labels[sid],
                         "accelerator": ", ".join(accels[:6]) + (" …" if len(accels) > 6 else ""),
                         "placement": "", "benchmark": "", "message": v.message, "when": ""})
    return rows


# ---- login -----------------------------------------------------------------------------------

@router.get("/login")
def login_form(request: Request, next: str = "/") -> Response:
    return page(request, "login.html", title="Log in", next=session.safe_next(next))


@router.post("/login")
async def login(request: Request) -> Response:
    form = await session.form_fields(request)
    target = session.safe_next(form.get("next"))
    token = form.get("token", "").strip()
    from advisor.api.auth import authorize
    from advisor.api.settings import Scope

    throttle = _login_throttle(request)
    address = request.client.host if request.client else "unknown"
    wait = throttle.wait_s(address)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        response = page(request, "login.html", status_code=429, title="Log in", next=target,
                        error=f"too many failed logins from this address; try again in {seconds} s")
        response.headers["Retry-After"] = str(seconds)
        return response
    try:
        authorize(request.app.state.tokens, f"Bearer {token}" if token else None, Scope.READ, open_access=False)
    except (Unauthorized, Forbidden) as exc:
        throttle.failed(address)
        return page(request, "login.html", status_code=exc.status_code, title="Log in", next=target,
                    error=exc.message)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(session.COOKIE, token, max_age=session.COOKIE_MAX_AGE_S, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")
    return response


def _login_throttle(request: Request) -> session.LoginThrottle:
    state = request.app.state
    throttle = getattr(state, "login_throttle", None)
    if throttle is None:
        throttle = state.login_throttle = session.LoginThrottle()
    return throttle  # type: ignore[no-any-return]


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(session.COOKIE, path="/")
    return response
