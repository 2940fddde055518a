"""Advice: recommendations, predictions, comparisons — delegated to the one ``Advisor`` of the
app (built once over the app's store; it keeps its table and model per store generation)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from stack_advisor.advisor import service
from stack_advisor.advisor.cluster.results import ClusterRecommendationSet
from stack_advisor.advisor.results import (
    Comparison,
    EvaluationReport,
    PlacementOverhead,
    Prediction,
    RecommendationSet,
    Regression,
)
from stack_advisor.advisor.verbs.compare_requests import StackRank
from stack_advisor.advisor.verbs.sweep import SweepComparison
from stack_advisor.api.answer_pool import Admission, AnswerPool
from stack_advisor.api.auth import ANONYMOUS, Caller
from stack_advisor.api.deps import AdvisorDep, ReadCaller, SettingsDep, StoreDep
from stack_advisor.api.errors import PayloadTooLarge
from stack_advisor.api.limits import AnswerBudget, answer_budget, check_cap, in_chunks
from stack_advisor.api.prediction_batch import answer_queries, in_order, judge_batch, to_answer
from stack_advisor.api.routes import READ_ERRORS, error_responses
from stack_advisor.api.schemas import PredictionBatch, PredictionRequest, RecommendationRequest
from stack_advisor.schema.checks import MAX_NAME, MAX_TEXT
from stack_advisor.schema.models import PlacementKind

RECOMMEND_EXAMPLE = {
    "workload": {
        "benchmark": "resnet50",
        "scenario": "Offline",
        "objective": "throughput",
        "hardware": {"placements": ["bare-metal", "vgpu"]},
    },
    "top": 5,
}
PREDICT_EXAMPLE = {
    "queries": [
        {
            "accelerator": "NVIDIA L4",
            "accelerator_count": 1,
            "placement": "bare-metal",
            "components": {"driver": "525.85.12", "cuda": "12.0", "tensorrt": "8.6.0"},
            "framework": "tensorrt",
            "benchmark": "resnet50",
            "scenario": "Offline",
            "metric": "samples_per_second",
        }
    ],
}

_PREDICTIONS = TypeAdapter(list[Prediction])
PREDICT_CHUNK = 100  # queries between two checks of the budget and the client
PREDICT_QUERY_BYTES = 2048  # the most one query may take in a body (a typical one: 260 bytes)

recommendations = APIRouter(prefix="/v1/recommendations", tags=["advice"])
predictions = APIRouter(prefix="/v1/predictions", tags=["advice"])
compare = APIRouter(prefix="/v1/compare", tags=["advice"])
evaluation = APIRouter(prefix="/v1/evaluation", tags=["advice"])


@recommendations.post(
    "",
    operation_id="recommend",
    response_model=RecommendationSet | ClusterRecommendationSet,
    responses={**READ_ERRORS, **error_responses(400, 404, 413)},
    summary="Rank software stacks and placements for a workload (or a cluster's node pools)",
    description="One row per (canonical accelerator, placement, stack). Each says its basis "
    "(observed, interpolated, transferred), the score the ranking uses, its 80% interval, "
    "confidence, observed range and counts, evidence (last_seen: the round's publication date), "
    "placement overhead against bare metal where paired results exist, warnings, and a Kubernetes "
    "Pod snippet for your accelerator count; refused candidates are listed under excluded with the "
    "reason. With `cluster` or `nodes` the answer ranks (node pool, stack) pairs: "
    "each with its basis "
    "(measured / observed / interpolated / transferred), an image and manifests that "
    "target exactly "
    "that pool; `what_if_driver` re-ranks as if a pool ran another driver.",
)
def recommend(
    body: Annotated[
        RecommendationRequest,
        Body(openapi_examples={"resnet50 Offline": {"value": RECOMMEND_EXAMPLE}}),
    ],
    advisor: AdvisorDep,
    settings: SettingsDep,
    _: ReadCaller,
    __: Annotated[
        AnswerBudget, Depends(answer_budget)
    ],  # stops the work past it or when the client goes
) -> Response:
    check_cap(
        len(body.nodes or ()), settings.max_recommend_nodes, "nodes", "ADVISOR_MAX_RECOMMEND_NODES"
    )
    # Serialised by pydantic directly: FastAPI's generic response path costs more than the
    # (memoised) answer itself; the schema is still documented by response_model.
    answer = service.recommend(advisor, body)
    return Response(answer.model_dump_json(), media_type="application/json")


@predictions.post(
    "",
    operation_id="predict",
    response_model=list[Prediction],
    responses={**READ_ERRORS, **error_responses(400, 404, 413, 429)},
    summary="Predict a metric for configurations; each answer says its basis (observed, "
    "interpolated, "
    "transferred) or is refused as unsupported with the reason",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/PredictionRequest"},
                    "examples": {"one query": {"value": PREDICT_EXAMPLE}},
                }
            },
        }
    },
)
async def predict(
    request: Request, advisor: AdvisorDep, settings: SettingsDep, caller: ReadCaller
) -> Response:
    # async: the body is parsed and answered by a worker process (``answer_pool``), a chunk at a
    # time: between chunks the answer's time budget is checked and a client that went away stops
    # it; anonymous requests are admitted a bounded number at a time
    _refuse_oversized(request, settings.max_predict_queries)
    pool: AnswerPool | None = request.app.state.answers
    if pool is not None:
        async with _admitted(request, caller):
            answer = await pool.predict(
                request,
                advisor,
                await request.body(),
                budget_s=settings.answer_budget_s,
                max_queries=settings.max_predict_queries,
            )
        return Response(answer, media_type="application/json")
    # ADVISOR_ANSWER_WORKERS=0: in the server's threads (the body parsed off the event loop)
    body = await run_in_threadpool(_prediction_request, await request.body())
    check_cap(
        len(body.queries), settings.max_predict_queries, "queries", "ADVISOR_MAX_PREDICT_QUERIES"
    )
    # each query judged on its own, as the CLI does: a bad field refuses that query alone; a
    # described model (a query with a ``model``) is answered by proxy as ``predict --model``
    judged = await run_in_threadpool(judge_batch, body.queries)
    answers = await in_chunks(
        request,
        to_answer(judged),
        lambda part: answer_queries(part, lambda plain: service.predict(advisor, plain), advisor),
        chunk=PREDICT_CHUNK,
        budget_s=settings.answer_budget_s,
    )
    return Response(
        _PREDICTIONS.dump_json(in_order(judged, answers)), media_type="application/json"
    )


def _admitted(request: Request, caller: Caller) -> AbstractAsyncContextManager[None]:
    """Anonymous callers wait for a place in the app's ``Admission`` (or are refused with 503
    or 429); token holders go straight to the pool."""
    if caller is not ANONYMOUS:
        return nullcontext()
    client = request.client.host if request.client else "unknown"
    admission: Admission = request.app.state.admission
    return admission.admitted(client)


def _refuse_oversized(request: Request, max_queries: int) -> None:
    """413 from the Content-Length alone when the body cannot hold at most ``max_queries``
    queries of ``PREDICT_QUERY_BYTES`` each: a flood of oversized requests is refused before its
    body is read and parsed (parsing 10,000 queries holds the GIL, and with it /healthz, for
    60-100 ms)."""
    declared = request.headers.get("content-length", "")
    limit = max_queries * PREDICT_QUERY_BYTES
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"a prediction request of {int(declared)} bytes cannot be at most {max_queries} "
            f"queries of {PREDICT_QUERY_BYTES} bytes (ADVISOR_MAX_PREDICT_QUERIES); split them "
            "over several requests",
            details={
                "limit": max_queries,
                "setting": "ADVISOR_MAX_PREDICT_QUERIES",
                "bytes": int(declared),
                "max_bytes": limit,
            },
        )


def _prediction_request(raw: bytes) -> PredictionBatch:
    """The body's envelope as FastAPI would validate it (a 422 naming ``body.queries``); its
    queries are judged one by one when answered (``PredictionBatch``)."""
    try:
        return PredictionBatch.model_validate_json(raw or b"null")
    except ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None


@compare.get(
    "",
    operation_id="compareStacks",
    response_model=Comparison,
    responses={**READ_ERRORS, **error_responses(404)},
    summary="Stack A against stack B on one benchmark, paired within a round",
)
def compare_stacks(
    advisor: AdvisorDep,
    _: ReadCaller,
    a: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_TEXT,
            description="stack id (stk-...) or component=version,...",
        ),
    ],
    b: Annotated[str, Query(min_length=1, max_length=MAX_TEXT, description="same form as a")],
    benchmark: Annotated[
        str, Query(min_length=1, max_length=MAX_NAME, description="benchmark name, e.g. resnet50")
    ],
    accelerator: Annotated[
        str | None,
        Query(
            max_length=MAX_NAME,
            description="only this accelerator: any name the catalogue knows, or a family "
            "(H100), generation (hopper) or vendor",
        ),
    ] = None,
    scenario: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    metric: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    family: Annotated[str, Query(max_length=MAX_NAME)] = "mlperf-inference",
) -> Comparison:
    return service.compare_stacks(
        advisor,
        a,
        b,
        benchmark=benchmark,
        accelerator=accelerator,
        scenario=scenario,
        metric=metric,
        family=family,
    )


@compare.get(
    "/rank-stacks",
    operation_id="rankStacks",
    response_model=list[StackRank],
    responses={**READ_ERRORS, **error_responses(404)},
    summary="The stacks one accelerator ran a benchmark with, fastest first; older versions "
    "carried forward by the upgrade factor learned from pairs (shown)",
)
def rank_stacks(
    advisor: AdvisorDep,
    _: ReadCaller,
    benchmark: Annotated[
        str, Query(min_length=1, max_length=MAX_NAME, description="benchmark, e.g. llama2-70b-99")
    ],
    accelerator: Annotated[
        str,
        Query(min_length=1, max_length=MAX_NAME, description="the accelerator, any spelling"),
    ],
    scenario: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    metric: Annotated[
        str | None,
        Query(max_length=MAX_NAME, description="default: the slice's throughput"),
    ] = None,
    family: Annotated[str, Query(max_length=MAX_NAME)] = "mlperf-inference",
    division: Annotated[str, Query(max_length=MAX_NAME)] = "closed",
    as_of: Annotated[
        str | None,
        Query(
            max_length=MAX_NAME,
            description="the stacks as of a round: its results and older ones (a round name, a "
            "date, today, now or next)",
        ),
    ] = None,
) -> list[dict[str, object]]:
    return service.rank_stacks(
        advisor,
        benchmark=benchmark,
        accelerator=accelerator,
        scenario=scenario,
        metric=metric,
        family=family,
        division=division,
        as_of=as_of,
    )


@compare.get(
    "/placement",
    operation_id="comparePlacements",
    response_model=list[PlacementOverhead],
    responses=READ_ERRORS,
    summary="Virtualised placements against bare metal per accelerator, from paired results",
)
def compare_placements(
    advisor: AdvisorDep,
    _: ReadCaller,
    accelerator: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    placement: Annotated[PlacementKind | None, Query()] = None,
) -> list[PlacementOverhead]:
    return service.placement_overheads(advisor, accelerator, placement)


@compare.get(
    "/regressions",
    operation_id="findRegressions",
    response_model=list[Regression],
    responses={**READ_ERRORS, **error_responses(404)},
    summary="Newer component versions that are slower, with Mann-Whitney U support",
)
def find_regressions(
    advisor: AdvisorDep,
    _: ReadCaller,
    component: Annotated[
        str,
        Query(max_length=MAX_NAME, description="driver, cuda, cudnn, tensorrt, framework_version"),
    ] = "driver",
    benchmark: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    accelerator: Annotated[str | None, Query(max_length=MAX_NAME)] = None,
    alpha: Annotated[float, Query(gt=0, lt=1)] = 0.05,
) -> list[Regression]:
    return service.regressions(
        advisor, component, accelerator=accelerator, benchmark=benchmark, alpha=alpha
    )


@compare.get(
    "/sweep",
    operation_id="compareSweepCells",
    response_model=SweepComparison,
    responses={**READ_ERRORS, **error_responses(404)},
    summary="What each cell of a sweep changed on its node: speed relative to the baseline "
    "cell per "
    "benchmark, with a 95% interval, flagged only beyond the run-to-run spread",
)
def compare_sweep_cells(
    store: StoreDep,
    _: ReadCaller,
    sweep: Annotated[
        str, Query(min_length=1, max_length=MAX_NAME, description="the sweep matrix's name")
    ],
    host: Annotated[
        str | None,
        Query(max_length=MAX_NAME, description="the node (needed when several ran the sweep)"),
    ] = None,
    baseline: Annotated[
        str | None,
        Query(
            max_length=MAX_NAME,
            description="the cell the others are compared to (default: the first cell measured)",
        ),
    ] = None,
    cell: Annotated[
        str | None, Query(max_length=MAX_NAME, description="only this cell against the baseline")
    ] = None,
    flagged_only: Annotated[
        bool, Query(description="only changes beyond the run-to-run spread")
    ] = False,
) -> SweepComparison:
    return service.sweep(
        store, sweep, host=host, baseline=baseline, cell=cell, flagged_only=flagged_only
    )


@evaluation.get(
    "",
    operation_id="evaluatePredictions",
    response_model=EvaluationReport,
    responses={**READ_ERRORS, **error_responses(404)},
    summary="Accuracy of predict on held-out published results, per slice, against the "
    "simple lookup",
    description="Holds published results out (by round, or leaving one accelerator out), answers "
    "them "
    "through predict and scores MAPE, median APE, 80% interval coverage and top-1 regret per slice "
    "(`advisor evaluate`). Kept per store generation: the first call fits, later ones are read.",
)
def evaluate(
    advisor: AdvisorDep,
    _: ReadCaller,
    protocol: Annotated[
        str,
        Query(
            description="by-round (train on earlier rounds, test the latest) or "
            "loao (leave one accelerator out)"
        ),
    ] = "by-round",
    train_until: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_NAME, description="last training round (by-round)"),
    ] = None,
    test_round: Annotated[
        str | None,
        Query(
            min_length=1, max_length=MAX_NAME, description="round to test on (default: the latest)"
        ),
    ] = None,
) -> Response:
    report = service.evaluate(advisor, protocol, train_until=train_until, test_round=test_round)
    return Response(report.model_dump_json(), media_type="application/json")


routers = [recommendations, predictions, compare, evaluation]
# models the OpenAPI document needs although no route declares them as a parameter
REQUEST_MODELS = [PredictionRequest]
