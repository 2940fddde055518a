"""Advice: recommendations, predictions, comparisons — delegated to the one ``Advisor`` of the
app (built once over the app's store; it keeps its table and model per store generation)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from advisor.api.deps import AdvisorDep, ReadCaller
from advisor.api.routes import READ_ERRORS, error_responses
from advisor.results import (
    Comparison,
    PlacementOverhead,
    Prediction,
    PredictQuery,
    RecommendationSet,
    Regression,
)
from advisor.workload import Workload
from graph_schema.models import PlacementKind


class RecommendationRequest(BaseModel):
    """What to recommend for, and how many answers."""

    model_config = ConfigDict(extra="forbid")

    workload: Workload
    top: int = Field(default=5, ge=1, le=100)


class PredictionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    queries: list[PredictQuery] = Field(min_length=1, max_length=10_000)


RECOMMEND_EXAMPLE = {
    "workload": {"benchmark": "resnet50", "scenario": "Offline", "objective": "throughput",
                 "hardware": {"placements": ["bare-metal", "vgpu"]}},
    "top": 5,
}
PREDICT_EXAMPLE = {
    "queries": [{"accelerator": "NVIDIA L4", "accelerator_count": 1, "placement": "bare-metal",
                 "components": {"driver": "525.85.12", "cuda": "12.0", "tensorrt": "8.6.0"},
                 "framework": "tensorrt", "benchmark": "resnet50", "scenario": "Offline",
                 "metric": "samples_per_second"}],
}

_PREDICTIONS = TypeAdapter(list[Prediction])

recommendations = APIRouter(prefix="/v1/recommendations", tags=["advice"])
predictions = APIRouter(prefix="/v1/predictions", tags=["advice"])
compare = APIRouter(prefix="/v1/compare", tags=["advice"])


@recommendations.post(
    "",
    operation_id="recommend",
    response_model=RecommendationSet,
    responses={**READ_ERRORS, **error_responses(400, 404, 413)},
    summary="Rank software stacks and placements for a workload",
    description="Each recommendation is labelled observed or predicted, with its interval, "
    "evidence, the factors that moved it, placement overhead against bare metal where paired "
    "results exist, warnings, and a ready Kubernetes Pod snippet.",
)
def recommend(
    body: Annotated[RecommendationRequest, Body(openapi_examples={"resnet50 Offline": {"value": RECOMMEND_EXAMPLE}})],
    advisor: AdvisorDep,
    _: ReadCaller,
) -> Response:
    # Serialised by pydantic directly: FastAPI's generic response path costs more than the
    # (memoised) answer itself; the schema is still documented by response_model.
    result = advisor.recommend(body.workload, top=body.top)
    return Response(result.model_dump_json(), media_type="application/json")


@predictions.post(
    "",
    operation_id="predict",
    response_model=list[Prediction],
    responses={**READ_ERRORS, **error_responses(400, 404, 413)},
    summary="Predict a metric for configurations (observed values are returned as such)",
)
def predict(
    body: Annotated[PredictionRequest, Body(openapi_examples={"one query": {"value": PREDICT_EXAMPLE}})],
    advisor: AdvisorDep,
    _: ReadCaller,
) -> Response:
    predictions = advisor.predict(body.queries)
    return Response(_PREDICTIONS.dump_json(predictions), media_type="application/json")


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
    a: Annotated[str, Query(min_length=1, description="stack id (stk-...) or component=version,...")],
    b: Annotated[str, Query(min_length=1, description="same form as a")],
    benchmark: Annotated[str, Query(min_length=1, description="benchmark name, e.g. resnet50")],
    accelerator: Annotated[str | None, Query(description="only this accelerator (substring)")] = None,
    scenario: Annotated[str | None, Query()] = None,
    metric: Annotated[str | None, Query()] = None,
    family: Annotated[str, Query()] = "mlperf-inference",
) -> Comparison:
    return advisor.compare(a, b, benchmark=benchmark, accelerator=accelerator,  # type: ignore[no-any-return]
                           scenario=scenario, metric=metric, family=family)


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
    accelerator: Annotated[str | None, Query()] = None,
    placement: Annotated[PlacementKind | None, Query()] = None,
) -> list[PlacementOverhead]:
    return advisor.placement_overhead(accelerator, placement)  # type: ignore[no-any-return]


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
    component: Annotated[str, Query(description="driver, cuda, cudnn, tensorrt, framework_version")] = "driver",
    benchmark: Annotated[str | None, Query()] = None,
    accelerator: Annotated[str | None, Query()] = None,
    alpha: Annotated[float, Query(gt=0, lt=1)] = 0.05,
) -> list[Regression]:
    return advisor.regressions(component, accelerator=accelerator, benchmark=benchmark,  # type: ignore[no-any-return]
                               alpha=alpha)


routers = [recommendations, predictions, compare]
