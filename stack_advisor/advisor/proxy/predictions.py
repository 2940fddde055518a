"""A described model's figures by proxy, in predict's shapes: what ``advisor predict --model``
and ``POST /v1/predictions``'s model queries (``proxy.model_query``) answer.

The answer comes through ``recommend`` (an ``Advisor``, a served API's client, or a knowledge
snapshot in an answer worker: anything with ``recommend(workload, top=)``), every part and
framework the proxy answers for; each row becomes a ``Prediction`` at the smallest count that
holds the model, so the table and the JSON read as any other prediction's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from stack_advisor.schema.errors import NotFound

if TYPE_CHECKING:
    from stack_advisor.advisor.results import Prediction, Recommendation, RecommendationSet

ALL_ROWS = 1000
MLPERF_INFERENCE = "mlperf-inference"


def serving_scenario(family: str, scenario: str | None) -> str | None:
    """The scenario a proxy or flag query is asked in: the one given, else Offline for serving;
    a training run has none."""
    return scenario or ("Offline" if family == MLPERF_INFERENCE else None)


class Recommender(Protocol):
    """What answers a workload: ``Advisor.recommend`` and its remote and snapshot kin."""

    def recommend(self, workload: Any, top: int = 5) -> RecommendationSet: ...


def as_predictions(
    answer: RecommendationSet, scenario: str | None, count: int | None = None
) -> list[Prediction]:
    """Each proxy recommendation as a prediction: at its own count (the smallest that holds an
    LLM), or at ``count`` where given."""
    return [_prediction(answer, r, scenario, count) for r in answer.recommendations]


def _prediction(
    answer: RecommendationSet, r: Recommendation, scenario: str | None, count: int | None
) -> Prediction:
    """One row at ``count`` (default: its own). A figure per accelerator (tokens/s, samples/s)
    scales with the replicas of the row's count that ``count`` holds; accelerator-hours to train
    are the run's on any count."""
    from stack_advisor.advisor.estimate.drift import MOVED_BY
    from stack_advisor.advisor.results import Basis, Interval, Prediction, PredictQuery
    from stack_advisor.advisor.verbs.mixed_system import refused_prediction

    need = r.candidate.accelerator_count
    n = count or need
    query = PredictQuery(
        accelerator=r.candidate.accelerator,
        accelerator_count=n,
        placement=r.candidate.placement,
        framework=str(r.candidate.stack.get("framework") or "") or None,
        family=str(answer.workload.get("family") or MLPERF_INFERENCE),
        benchmark=str(answer.workload.get("benchmark") or "model"),
        scenario=answer.workload.get("scenario") or scenario,  # as the catalogue spells it
        metric=r.metric,
    )
    if n < need:
        why = (
            f"accelerator_count: {n} is fewer than the {need} x {r.candidate.accelerator} the "
            "model's weights and cache need"
        )
        return refused_prediction(query, why, accelerator=r.candidate.accelerator)
    warnings, scale = list(r.warnings), float(n // need * need)
    if not (r.higher_is_better and r.per_accelerator):
        scale = 1.0
        if count:
            warnings.append(
                f"{r.value / n:.3g} h to train on {n} accelerators if the run scales linearly to "
                "them (the figure is accelerator-hours; no scaling evidence)"
            )
    elif scale < n:
        warnings.append(f"{n // need} replica(s) of {need} use {scale:g} of the {n} accelerators")
    return Prediction(
        query=query,
        value=r.value * scale,
        interval=Interval(low=r.interval.low * scale, high=r.interval.high * scale),
        # as measured: an observed row at its own count, not moved to another round
        observed=r.basis is Basis.OBSERVED
        and n == need
        and not any(f.name in MOVED_BY for f in r.factors),
        basis=r.basis,
        confidence=r.confidence,
        accelerator=r.candidate.accelerator,
        references=r.evidence.sources,
        factors=r.factors,
        evidence=r.evidence,
        warnings=warnings,
        round=r.round,
    )


def proxy_predictions(
    adv: Recommender, spec: dict[str, Any], *, count: int | None, asked: list[str] | None
) -> list[Prediction]:
    """``predict --model``: the proxy's rows as predictions (``as_predictions``). A vision
    model or training run gets one per accelerator (its best framework's) and, for each asked
    accelerator the proxy has no figure on, a refused prediction saying why; a refusal of the
    whole description (a vision band over ``MAX_SPREAD``) is one refused prediction per asked
    accelerator (none asked: the error, as ``recommend`` gives it)."""
    from stack_advisor.advisor.names import accelerator_selector
    from stack_advisor.advisor.proxy.sample_answer import flops_described

    family = str(spec.get("family") or MLPERF_INFERENCE)
    if not flops_described(spec.get("model"), family):
        ranked = adv.recommend(spec, top=ALL_ROWS)
        rows = as_predictions(ranked, spec.get("scenario"), count)
        rows = rows if count else smallest_counts(rows)
        return rows + _unanswered(spec, asked, rows, ranked, count)
    try:
        answer = adv.recommend(spec, top=ALL_ROWS)
    except NotFound as exc:
        if not asked:
            raise
        return [refused(spec, text, count, exc.message) for text in asked]
    best: dict[str, Prediction] = {}
    for p in as_predictions(answer, spec.get("scenario"), count):
        best.setdefault(p.accelerator or p.query.accelerator, p)  # rows come best first
    out = list(best.values())
    for text in asked or []:
        selector = accelerator_selector(text)
        if not any(selector.matches(name) for name in best):
            why = (
                f"accelerator {text!r}: the knowledge base holds no result of a described "
                "model on it to estimate by proxy from"
            )
            out.append(refused(spec, text, count, why))
    return out


def _unanswered(
    spec: dict[str, Any],
    asked: list[str] | None,
    rows: list[Prediction],
    ranked: RecommendationSet,
    count: int | None,
) -> list[Prediction]:
    """A refused prediction for each asked accelerator no row answers (a probe's A100 gave an
    empty table and exit 0), with the ranking's reason for leaving it out where it gave one."""
    from stack_advisor.advisor.names import accelerator_selector

    out = []
    for text in asked or []:
        selector = accelerator_selector(text)
        if any(selector.matches(p.accelerator or p.query.accelerator) for p in rows):
            continue
        reasons = [e.reason for e in ranked.excluded_candidates if selector.matches(e.accelerator)]
        why = (
            reasons[0]
            if reasons
            else (
                f"accelerator {text!r}: the proxy has no figure on it (no LLM results of it, or of "
                "its stack family, to fit its efficiency from)"
            )
        )
        out.append(refused(spec, text, count, why))
    return out


def smallest_counts(rows: list[Prediction]) -> list[Prediction]:
    """One prediction per part and placement: the ranking's row at its smallest count (the best
    of those where several stacks ran it), in the ranking's order."""
    kept: dict[tuple[str, str], Prediction] = {}
    for p in rows:
        key = (p.accelerator or p.query.accelerator, p.query.placement.value)
        if key not in kept or p.query.accelerator_count < kept[key].query.accelerator_count:
            kept[key] = p
    chosen = {id(p) for p in kept.values()}
    return [p for p in rows if id(p) in chosen]


def refused(spec: dict[str, Any], accelerator: str, count: int | None, why: str) -> Prediction:
    """The refused prediction of a described model (``spec``: its workload) on ``accelerator``:
    the query echoes what was asked, the reason says why."""
    from stack_advisor.advisor.proxy.sample_answer import flops_described
    from stack_advisor.advisor.results import PredictQuery
    from stack_advisor.advisor.verbs.mixed_system import refused_prediction

    family = str(spec.get("family") or MLPERF_INFERENCE)
    model = spec.get("model")
    name = model.get("name") if isinstance(model, dict) else model
    metric = "accelerator_hours"
    if family == MLPERF_INFERENCE:  # a vision model's samples, else an LLM's tokens
        vision = flops_described(model, family)
        metric = "samples_per_second" if vision else "tokens_per_second"
    asked: dict[str, Any] = {"accelerator_count": count} if count else {}
    query = PredictQuery(
        accelerator=_echo(accelerator, "(invalid)"),
        family=_echo(family, MLPERF_INFERENCE),
        benchmark=_echo(name, "model"),
        scenario=_echo(spec.get("scenario"), None),
        metric=metric,
        **asked,
    )
    return refused_prediction(query, why)


def _echo(value: Any, instead: str | None) -> Any:
    """A refused query's field as asked where it is a name a query may hold (text of at most
    ``MAX_NAME`` characters), else ``instead`` (a model given as a list, a megabyte of text):
    the refusal's reason says what was wrong."""
    from stack_advisor.schema.checks import MAX_NAME

    return value if isinstance(value, str) and 0 < len(value) <= MAX_NAME else instead
