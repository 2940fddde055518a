"""The Explore page (every observation, filtered, sorted, charted) and the evidence behind a row:
one observation, and the host it ran on."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import ValidationError

from stack_advisor.advisor import service
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.api.deps import AdvisorDep, StoreDep
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.store.base import Store, validation_message
from stack_advisor.web import charts, session
from stack_advisor.web.explore import PAGE_SIZES, SORTS, ExploreQuery, explore, facets
from stack_advisor.web.pages.common import query_fields
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

# ---- explore ---------------------------------------------------------------------------------


@router.get("/")
def explore_page(request: Request, advisor: AdvisorDep, format: str = "html") -> Response:
    def build() -> Response:
        table = advisor.table()
        error, result = None, None
        try:
            query = ExploreQuery.model_validate(query_fields(request)).cleaned()
        except ValidationError as exc:
            if format != "html":
                raise InvalidInput(validation_message(exc)) from None
            # the page, saying what is wrong, over the default selection (not a JSON error)
            query, error = ExploreQuery(), validation_message(exc)
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
            # a driver is asked as the nodes' NVIDIA driver: another vendor's (a Neuchips card's
            # "1.0") is its own runtime's, not one to judge the part by
            "components": {
                c: r[c]
                for c in ("driver", "cuda", "cudnn", "tensorrt")
                if r[c] and (c != "driver" or accelerator_class(r["accelerator"]) == "nvidia")
            }
            | (
                {r["framework"]: r["framework_version"]}
                if r["framework"] and r["framework_version"]
                else {}
            )
            | ({"implementation": r["implementation"]} if r.get("implementation") else {}),
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
