"""What the CLI's commands ask of an advisor, whether it answers here (``engine.Advisor`` over a
store) or through a served API (``remote.RemoteAdvisor``): one Protocol, so a command is written
once for both and the type checker holds each implementation to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from stack_advisor.advisor.results import (
    Comparison,
    EvaluationReport,
    PlacementOverhead,
    Prediction,
    PredictQuery,
    RecommendationSet,
    Regression,
)
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import PlacementKind


class Answerer(Protocol):
    """The advisor's verbs as a user calls them (contracts: ``engine.Advisor``)."""

    def recommend(self, workload: Workload | dict[str, Any], top: int = 5) -> RecommendationSet: ...

    def predict(self, queries: list[PredictQuery] | list[dict[str, Any]]) -> list[Prediction]: ...

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
    ) -> Comparison: ...

    def placement_overhead(
        self, accelerator: str | None = None, placement: PlacementKind | str | None = None
    ) -> list[PlacementOverhead]: ...

    def regressions(
        self,
        component: str = "driver",
        *,
        accelerator: str | None = None,
        benchmark: str | None = None,
        alpha: float = 0.05,
    ) -> list[Regression]: ...

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
    ) -> list[dict[str, Any]]: ...

    def evaluate(
        self,
        protocol: str = "by-round",
        *,
        train_until: str | None = None,
        test_round: str | None = None,
    ) -> EvaluationReport: ...


if TYPE_CHECKING:  # both implementations are held to the Protocol by mypy
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.advisor.remote import RemoteAdvisor

    def _conforms(local: Advisor, remote: RemoteAdvisor) -> tuple[Answerer, Answerer]:
        return local, remote
