"""The answers the server gives, shared by the JSON routes (``stack_advisor.api.routes``) and the
web pages (``stack_advisor.web``): each takes the app's advisor (or store) and plain arguments and
returns result models or rows. Routes and pages only parse their input (a JSON body, a query string,
a form) and render the answer (JSON, HTML, CSV), so a page and the API cannot answer differently.

Answers that read many observations from the store (the leaderboard, the known-bad list, the
sweeps) are kept in the advisor's one answer cache (``Advisor.memoised``), per store generation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stack_advisor.advisor import results
from stack_advisor.advisor.budget import check_cap
from stack_advisor.advisor.cluster.results import ClusterRecommendationSet
from stack_advisor.advisor.leaderboard import (  # re-exported: the leaderboard's home moved
    TOKEN_LATENCIES as TOKEN_LATENCIES,
)
from stack_advisor.advisor.leaderboard import add_token_latencies as add_token_latencies
from stack_advisor.advisor.leaderboard import default_series as default_series
from stack_advisor.advisor.leaderboard import leaderboard as leaderboard
from stack_advisor.advisor.verbs.sweep import SweepComparison, sweep_names, sweep_report
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import AdvisorError, NotFound
from stack_advisor.schema.models import (
    Failure,
    FailureClass,
    IngestBatch,
    IngestResult,
    PlacementKind,
    failure_class,
)
from stack_advisor.store.base import Store

if TYPE_CHECKING:
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.api.middleware import Metrics
    from stack_advisor.api.resources import Resources
    from stack_advisor.api.schemas import RecommendationRequest


# ---- the advisor's verbs -----------------------------------------------------------------------


def recommend(
    advisor: Advisor, request: RecommendationRequest
) -> results.RecommendationSet | ClusterRecommendationSet:
    """Ranked stacks and placements for the request's workload; with ``cluster`` (a recorded
    inventory) or ``nodes`` (Node objects), ranked (node pool, stack) pairs of that cluster."""
    if not (request.cluster or request.nodes):
        return advisor.recommend(request.workload, top=request.top)
    from stack_advisor.advisor.cluster.advice import recommend_nodes
    from stack_advisor.advisor.cluster.pools import nodes_from_inventory, nodes_from_json

    if request.cluster:
        nodes, source = (
            nodes_from_inventory(advisor.store, request.cluster),
            f"cluster {request.cluster}",
        )
    else:
        nodes, source = (
            nodes_from_json(request.nodes, where="nodes"),
            f"{len(request.nodes or [])} nodes",
        )
    return recommend_nodes(
        advisor,
        request.workload,
        nodes,
        source=source,
        pool_label=request.pool_label,
        top=request.top,
        per_pool=request.per_pool,
        gpus=request.gpus,
        nodes_count=request.nodes_count,
        image=request.image,
        what_if_driver=request.what_if_driver,
    )


def recommend_workload(
    advisor: Advisor, workload: Workload | dict[str, Any], top: int
) -> results.RecommendationSet:
    """``recommend`` for a workload alone (the web form's fields)."""
    return advisor.recommend(workload, top=top)


def predict(
    advisor: Advisor, queries: list[results.PredictQuery] | list[dict[str, Any]]
) -> list[results.Prediction]:
    return advisor.predict(queries)


def evaluate(
    advisor: Advisor, protocol: str, *, train_until: str | None, test_round: str | None
) -> results.EvaluationReport:
    """``predict``'s accuracy on held-out published results
    (``stack_advisor.advisor.verbs.evaluate``)."""
    return advisor.memoised(
        ("evaluate", protocol, train_until, test_round),
        lambda: advisor.evaluate(protocol, train_until=train_until, test_round=test_round),
    )


def compare_stacks(
    advisor: Advisor,
    a: str,
    b: str,
    *,
    benchmark: str,
    accelerator: str | None = None,
    scenario: str | None = None,
    metric: str | None = None,
    family: str = "mlperf-inference",
) -> results.Comparison:
    return advisor.compare(
        a,
        b,
        benchmark=benchmark,
        accelerator=accelerator,
        scenario=scenario,
        metric=metric,
        family=family,
    )


def _benchmark_combos(
    advisor: Advisor, benchmark: str | None, scenario: str | None
) -> list[tuple[str, str, str]]:
    """(family, name, scenario) of every benchmark recorded, or of the one asked for; NotFound
    when there is none."""
    combos = sorted(
        {
            (info.family, info.name, info.scenario or "")
            for info in advisor.table().benchmarks.values()
            if (benchmark is None or info.name == benchmark)
            and (scenario is None or info.scenario == scenario)
        }
    )
    if not combos:
        raise NotFound(
            f"benchmark: nothing recorded for {benchmark or 'any benchmark'}"
            f"{' in scenario ' + scenario if scenario else ''}"
        )
    return combos


def compare_benchmarks(
    advisor: Advisor,
    a: str,
    b: str,
    *,
    accelerator: str | None,
    benchmark: str | None,
    scenario: str | None,
) -> list[dict[str, Any]]:
    """``compare_stacks`` for each benchmark and scenario both stacks ran on (or the one asked
    for); benchmarks where neither stack has a result are left out.

    Raises:
        NotFound: a stack selector matching no stack, or no benchmark with results of either.
    """
    out: list[dict[str, Any]] = []
    last: AdvisorError | None = None
    for family, name, scen in _benchmark_combos(advisor, benchmark, scenario):
        try:
            c = compare_stacks(
                advisor,
                a,
                b,
                benchmark=name,
                accelerator=accelerator,
                scenario=scen or None,
                family=family,
            )
        except NotFound as exc:
            if exc.message.startswith("stack:"):
                raise
            last = exc
            continue
        if c.a_count or c.b_count:
            out.append(
                {
                    "benchmark": name,
                    "scenario": scen,
                    **c.model_dump(mode="json"),
                    "low": c.interval.low if c.interval else None,
                    "high": c.interval.high if c.interval else None,
                }
            )
    if not out:
        raise last or NotFound("neither stack has results on the chosen benchmarks")
    out.sort(key=lambda c: (c["pairs"] == 0, c["benchmark"], c["scenario"]))
    return out


def rank_stacks(
    advisor: Advisor,
    *,
    benchmark: str,
    accelerator: str,
    scenario: str | None = None,
    metric: str | None = None,
    family: str = "mlperf-inference",
    division: str = "closed",
    as_of: str | None = None,
) -> list[dict[str, Any]]:
    """The stacks one accelerator ran a benchmark with, fastest first (``Advisor.rank_stacks``).

    Raises:
        InvalidInput: ``as_of`` names no round, or the request names no slice.
        NotFound: the accelerator never ran the slice.
    """
    return advisor.rank_stacks(
        benchmark=benchmark,
        scenario=scenario,
        metric=metric,
        accelerator=accelerator,
        family=family,
        division=division,
        as_of=as_of,
    )


def placement_overheads(
    advisor: Advisor, accelerator: str | None = None, placement: PlacementKind | str | None = None
) -> list[results.PlacementOverhead]:
    return advisor.placement_overhead(accelerator, placement)


def regressions(
    advisor: Advisor,
    component: str,
    *,
    accelerator: str | None,
    benchmark: str | None,
    alpha: float,
) -> list[results.Regression]:
    return advisor.regressions(component, accelerator=accelerator, benchmark=benchmark, alpha=alpha)


def sweep(
    store: Store,
    name: str,
    *,
    host: str | None,
    baseline: str | None,
    cell: str | None,
    flagged_only: bool,
) -> SweepComparison:
    """What each cell of a sweep changed on its node (``stack_advisor.advisor.verbs.sweep``)."""
    return sweep_report(
        store,
        name,
        host=host or None,
        baseline=baseline or None,
        cell=cell or None,
        flagged_only=flagged_only,
    )


def sweeps(advisor: Advisor, store: Store) -> list[str]:
    return advisor.memoised(("sweeps",), lambda: sweep_names(store))


# ---- rows read from the store (the leaderboard: stack_advisor.advisor.leaderboard) -------------


def known_bad(advisor: Advisor, store: Store) -> list[dict[str, Any]]:
    """Recorded stack failures (``GET /v1/failures``'s list, less harness limitations and
    environment failures: ``stack_advisor.schema.models.failure_class``) and the stacks of the
    knowledge base that break a compatibility rule (what ``recommend`` excludes or warns about)."""
    return advisor.memoised(("known-bad",), lambda: _known_bad(advisor, store))


def _known_bad(advisor: Advisor, store: Store) -> list[dict[str, Any]]:
    table = advisor.table()
    try:
        failures = store.list_entities("failures")
    except NotImplementedError:
        failures = []
    labels = {sid: st.label() for sid, st in table.stacks.items()}
    # only a stack failure is known-bad: harness limitations and what a node lacked are not
    failures = [
        f
        for f in failures
        if failure_class(f.get("stage"), f.get("error_class")) is FailureClass.STACK
    ]
    rows = [
        {
            "kind": "failure",
            "severity": "error",
            "what": f"{f.get('stage', '')}: {f.get('error_class', '')}",
            "stack": labels.get(str(f.get("stack_id")), f.get("stack_id")),
            "accelerator": f.get("accelerator"),
            "placement": str(f.get("placement_id") or "").split("|")[0],
            "benchmark": f.get("benchmark_id"),
            "message": f.get("message", ""),
            "when": f.get("timestamp"),
        }
        for f in failures
    ]
    for sid, stack in table.stacks.items():
        for v in advisor.rules.check_stack(stack):
            used = table.stack.codes == table.stack.code(sid)
            accels = sorted(
                {table.accelerator.vocab[c] for c in np.unique(table.accelerator.codes[used])}
            )
            rows.append(
                {
                    "kind": "rule",
                    "severity": v.severity.value,
                    "what": v.rule,
                    "stack": labels[sid],
                    "accelerator": ", ".join(accels[:6]) + (" …" if len(accels) > 6 else ""),
                    "placement": "",
                    "benchmark": "",
                    "message": v.message,
                    "when": "",
                }
            )
    return rows


# ---- writes ------------------------------------------------------------------------------------


def ingest(
    store: Store, batch: IngestBatch, resources: Resources, metrics: Metrics
) -> IngestResult:
    """Write a batch (observations, failures, runs) in one transaction; then the advisor reads the
    store's generation again on its next answer, and the ingest counters move."""
    result = store.ingest(batch)
    resources.written()
    metrics.observations_ingested.labels("true").inc(result.observations_new)
    metrics.observations_ingested.labels("false").inc(
        result.observations_received - result.observations_new
    )
    return result


def revise_observations(store: Store, batch: IngestBatch, resources: Resources) -> int:
    """Replace stored figures in one transaction (``Store.revise_observations``); then the
    advisor reads the store again on its next answer."""
    revised = store.revise_observations(batch.observations)
    resources.written()
    return revised


def record_failures(store: Store, failures: list[Failure], resources: Resources) -> IngestResult:
    result = store.record_failures(failures)
    resources.written()
    return result


def check_batch_size(items: int, cap: int) -> None:
    """One request is one transaction, and the embedded store serves one at a time: a bounded
    batch keeps every other request's wait bounded too. Everything written counts: measurements,
    failures, runs (a document's run is one), inventory nodes.

    Raises:
        PayloadTooLarge: 413 naming ``ADVISOR_MAX_BATCH_ITEMS``.
    """
    check_cap(
        items, cap, "items (measurements, failures, runs or nodes)", "ADVISOR_MAX_BATCH_ITEMS"
    )
