"""``advisor predict --model``: a described model's figures by proxy, in predict's shapes.

The answer comes through ``recommend`` (locally or from a served API, one path), every part and
framework the proxy answers for; each row becomes a ``Prediction`` at the smallest count that
holds the model, so the table and the JSON read as any other prediction's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stack_advisor.schema.errors import InvalidInput

if TYPE_CHECKING:
    from stack_advisor.advisor.results import Prediction, RecommendationSet

ALL_ROWS = 1000


def described_model(model: str | None) -> bool:
    """Whether ``--model`` names a description file (``advisor.proxy.model.model_file``); the
    proxy's module is imported only when a model is given (a plain recommend never needs it)."""
    if model is None:
        return False
    from stack_advisor.advisor.proxy.model import model_file

    return model_file(model)


def proxy_fields(
    model: str | None, isl: int | None, osl: int | None, concurrency: int | None
) -> dict[str, Any]:
    """The workload fields of the proxy flags: ``--model FILE`` as a model object, and the
    traffic. A name stays a name (a catalogued LLM without results is answered by proxy too).

    Raises:
        InvalidInput: --isl/--osl/--concurrency without --model or --benchmark to apply to.
    """
    out: dict[str, Any] = {"isl": isl, "osl": osl, "concurrency": concurrency}
    if model is not None and described_model(model):
        from stack_advisor.advisor.proxy.model import read_model_file

        out["model"] = read_model_file(model)
    return {k: v for k, v in out.items() if v is not None}


def as_predictions(answer: RecommendationSet, scenario: str) -> list[Prediction]:
    """Each proxy recommendation as a prediction at its count (throughput of that count)."""
    from stack_advisor.advisor.results import Interval, Prediction, PredictQuery

    out = []
    for r in answer.recommendations:
        n = r.candidate.accelerator_count
        query = PredictQuery(
            accelerator=r.candidate.accelerator,
            accelerator_count=n,
            framework=str(r.candidate.stack.get("framework") or "") or None,
            benchmark=str(answer.workload.get("benchmark") or "model"),
            scenario=scenario,
            metric=r.metric,
        )
        out.append(
            Prediction(
                query=query,
                value=r.value * n,
                interval=Interval(low=r.interval.low * n, high=r.interval.high * n),
                observed=False,
                basis=r.basis,
                confidence=r.confidence,
                accelerator=r.candidate.accelerator,
                references=r.evidence.sources,
                factors=r.factors,
                evidence=r.evidence,
                warnings=r.warnings,
            )
        )
    return out


def proxy_workload(
    *,
    model: str | None,
    benchmark: str | None,
    scenario: str | None,
    isl: int | None,
    osl: int | None,
    concurrency: int | None,
    accelerators: list[str] | None,
) -> dict[str, Any]:
    """``predict --model``'s workload.

    Raises:
        InvalidInput: neither --model nor --benchmark.
    """
    if model is None and benchmark is None:
        raise InvalidInput(
            "give --query FILE, or describe a model: --model FILE|NAME (docs/proxy.md)"
        )
    data: dict[str, Any] = {
        "benchmark": benchmark,
        "model": model,
        "scenario": scenario or "Offline",
        "hardware": {"accelerators": accelerators or None},
        **proxy_fields(model, isl, osl, concurrency),
    }
    return {k: v for k, v in data.items() if v is not None}
