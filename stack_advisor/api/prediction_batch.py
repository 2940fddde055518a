"""``POST /v1/predictions``'s queries, each judged and answered on its own, whether it names a
configuration (``advisor.verbs.predict``) or describes a model (``advisor.proxy.model_query``,
answered by proxy as ``advisor predict --model`` answers). The server's threads and the answer
workers both answer a batch through here, a chunk at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.advisor.proxy.model_query import (
    ModelQuery,
    answer_model_query,
    judge_model_query,
    model_query,
)
from stack_advisor.advisor.results import Prediction, PredictQuery, RecommendationSet
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs.predict import judge_queries
from stack_advisor.advisor.workload import Workload

Query = PredictQuery | ModelQuery
Judged = PredictQuery | ModelQuery | Prediction
# stands in for a model query while judge_queries judges the others (it passes queries through)
_PLACE = PredictQuery(accelerator="-", benchmark="-", metric="-")


def judge_batch(queries: list[Any]) -> list[Judged]:
    """Each query judged on its own, in the batch's order: a query or its refusal (a bad field,
    named ``queries.N.field``).

    Raises:
        InvalidInput: a query that is not a mapping or lacks a required field (the 422).
    """
    described = {i: judge_model_query(i, q) for i, q in enumerate(queries) if model_query(q)}
    if not described:
        return list(judge_queries(queries))
    plain = judge_queries([_PLACE if i in described else q for i, q in enumerate(queries)])
    return [described.get(i, judged) for i, judged in enumerate(plain)]


def to_answer(judged: list[Judged]) -> list[Query]:
    """The queries ``judge_batch`` left to answer, in order."""
    return [q for q in judged if not isinstance(q, Prediction)]


def answer_queries(
    queries: list[Query],
    predict: Callable[[list[PredictQuery]], list[Prediction]],
    recommender: Any,
) -> list[Prediction]:
    """One prediction per query, in order: the plain ones by ``predict`` (together), the model
    ones by proxy through ``recommender.recommend`` (an ``Advisor``, or a ``SnapshotRecommender``
    in a worker)."""
    plain = [q for q in queries if isinstance(q, PredictQuery)]
    answered = iter(predict(plain) if plain else [])
    out = []
    for q in queries:
        if isinstance(q, ModelQuery):
            checkpoint("the answer's model queries")  # each is a recommend of its own
            out.append(answer_model_query(recommender, q))
        else:
            out.append(next(answered))
    return out


def in_order(judged: list[Judged], answers: list[Prediction]) -> list[Prediction]:
    """The batch's predictions in its order: its refusals where ``judge_batch`` made them, the
    ``answers`` to ``to_answer(judged)`` in the other places."""
    left = iter(answers)
    return [q if isinstance(q, Prediction) else next(left) for q in judged]


def predict_batch(adv: Any, queries: list[Any]) -> list[Prediction]:
    """A batch as ``POST /v1/predictions`` answers it, through ``adv`` (an ``Advisor`` or a
    served API's client): ``advisor predict --query`` with model queries in its file.

    Raises:
        InvalidInput: as ``judge_batch``.
    """
    judged = judge_batch(queries)
    return in_order(judged, answer_queries(to_answer(judged), adv.predict, adv))


class SnapshotRecommender:
    """``recommend`` over one knowledge snapshot (an answer worker's: no store, no memo)."""

    def __init__(self, knowledge: Knowledge) -> None:
        self.knowledge = knowledge

    def recommend(self, workload: Workload | dict[str, Any], top: int = 5) -> RecommendationSet:
        from stack_advisor.advisor.verbs.recommend import recommend

        found = workload if isinstance(workload, Workload) else Workload.from_dict(workload)
        return recommend(self.knowledge, found, top)
