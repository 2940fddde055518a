"""The advisor's verbs answered by a served stack-advisor API (``advisor --api URL ...``).

A client that asks the API's answer endpoints (``POST /v1/recommendations``, ``POST
/v1/predictions``, ``GET /v1/compare...``, ``GET /v1/evaluation``) instead of reading every
observation through the REST store and fitting the model again: the server already holds its
snapshot, so a remote answer costs one request. The answers are the same result models the local
``Advisor`` returns, parsed from the server's JSON, so the CLI renders both alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from stack_advisor.advisor import results
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.rest_store import RestStore

if TYPE_CHECKING:
    from stack_advisor.advisor.cluster.results import ClusterRecommendationSet

_PREDICTIONS = TypeAdapter(list[results.Prediction])
_OVERHEADS = TypeAdapter(list[results.PlacementOverhead])
_REGRESSIONS = TypeAdapter(list[results.Regression])
EVALUATE_TIMEOUT_S = (
    600.0  # an evaluation refits the model on the server; the first one takes a while
)


class RemoteAdvisor:
    """The verbs of ``stack_advisor.advisor.engine.Advisor`` over the API behind ``store`` (its URL
    and token).

    Args:
        store: the REST store of the API (the CLI's ``--api URL``); it stays the caller's to close.
    """

    def __init__(self, store: RestStore) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"RemoteAdvisor({self.store.uri!r})"

    def recommend(
        self, workload: Workload | dict[str, Any], top: int = 5
    ) -> results.RecommendationSet:
        body = {"workload": _workload_json(workload), "top": top}
        return results.RecommendationSet.model_validate(
            self.store.call("POST", "/v1/recommendations", json=body)
        )

    def recommend_cluster(
        self,
        workload: Workload | dict[str, Any],
        *,
        cluster: str | None = None,
        nodes: list[dict[str, Any]] | None = None,
        **options: Any,
    ) -> ClusterRecommendationSet:
        """The cluster mode of ``recommend``: a recorded inventory (``cluster``) or Node objects
        (``nodes``); ``options``: the request's ``top``, ``pool_label``, ``what_if_driver``,
        ``gpus``, ``nodes_count``, ``image``, ``per_pool`` (None: the server's default)."""
        body = {
            "workload": _workload_json(workload),
            "cluster": cluster,
            "nodes": nodes,
            **{k: v for k, v in options.items() if v is not None},
        }
        from stack_advisor.advisor.cluster.results import ClusterRecommendationSet

        answer = self.store.call(
            "POST", "/v1/recommendations", json={k: v for k, v in body.items() if v is not None}
        )
        return ClusterRecommendationSet.model_validate(answer)

    def predict(
        self, queries: list[results.PredictQuery] | list[dict[str, Any]]
    ) -> list[results.Prediction]:
        body = {
            "queries": [
                q.model_dump(mode="json") if isinstance(q, results.PredictQuery) else q
                for q in queries
            ]
        }
        return _PREDICTIONS.validate_python(self.store.call("POST", "/v1/predictions", json=body))

    def compare(
        self,
        stack_a: str | dict[str, str],
        stack_b: str | dict[str, str],
        *,
        benchmark: str,
        accelerator: str | None = None,
        scenario: str | None = None,
        metric: str | None = None,
        family: str = "mlperf-inference",
    ) -> results.Comparison:
        params = {
            "a": _selector(stack_a),
            "b": _selector(stack_b),
            "benchmark": benchmark,
            "accelerator": accelerator,
            "scenario": scenario,
            "metric": metric,
            "family": family,
        }
        return results.Comparison.model_validate(
            self.store.call("GET", "/v1/compare", params=_given(params))
        )

    def placement_overhead(
        self, accelerator: str | None = None, placement: PlacementKind | str | None = None
    ) -> list[results.PlacementOverhead]:
        kind = placement.value if isinstance(placement, PlacementKind) else placement
        params = _given({"accelerator": accelerator, "placement": kind})
        return _OVERHEADS.validate_python(
            self.store.call("GET", "/v1/compare/placement", params=params)
        )

    def regressions(
        self,
        component: str = "driver",
        *,
        accelerator: str | None = None,
        benchmark: str | None = None,
        alpha: float = 0.05,
    ) -> list[results.Regression]:
        params = _given(
            {
                "component": component,
                "accelerator": accelerator,
                "benchmark": benchmark,
                "alpha": alpha,
            }
        )
        return _REGRESSIONS.validate_python(
            self.store.call("GET", "/v1/compare/regressions", params=params)
        )

    def rank_stacks(
        self,
        *,
        benchmark: str,
        scenario: str | None = None,
        metric: str | None = None,
        accelerator: str,
        family: str = "mlperf-inference",
        division: str = "closed",
        as_of: str | None = None,
    ) -> list[dict[str, Any]]:
        params = {
            "benchmark": benchmark,
            "accelerator": accelerator,
            "scenario": scenario,
            "metric": metric,
            "family": family,
            "division": division,
            "as_of": as_of,
        }
        from stack_advisor.advisor.verbs.compare_requests import StackRank

        rows = self.store.call("GET", "/v1/compare/rank-stacks", params=_given(params))
        return [StackRank.model_validate(r).model_dump() for r in rows]

    def evaluate(
        self,
        protocol: str = "by-round",
        *,
        train_until: str | None = None,
        test_round: str | None = None,
    ) -> results.EvaluationReport:
        params = _given(
            {"protocol": protocol, "train_until": train_until, "test_round": test_round}
        )
        answer = self.store.call("GET", "/v1/evaluation", params=params, timeout=EVALUATE_TIMEOUT_S)
        return results.EvaluationReport.model_validate(answer)


def _workload_json(workload: Workload | dict[str, Any]) -> dict[str, Any]:
    """The workload as the API takes it (validated here first, so a bad flag is named locally)."""
    if not isinstance(workload, Workload):
        workload = Workload.from_dict(workload)
    return workload.model_dump(mode="json", exclude_none=True)


def _selector(stack: str | dict[str, str]) -> str:
    """A stack selector in the query-string form: ``stk-...`` or ``component=version,...``."""
    return stack if isinstance(stack, str) else ",".join(f"{k}={v}" for k, v in stack.items())


def _given(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}
