"""One query of a prediction batch about a described model (``POST /v1/predictions`` with a
``model`` object): judged on its own, answered by proxy exactly as ``advisor predict --model``
answers (``proxy.predictions``), one prediction per query.

A query with a ``model`` is such a query; a plain query never has one (its fields forbid it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stack_advisor.advisor.proxy.predictions import (
    MLPERF_INFERENCE,
    Recommender,
    proxy_predictions,
    refused,
    serving_scenario,
)
from stack_advisor.schema.checks import not_a_bool
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.store.base import validation_message

if TYPE_CHECKING:
    from stack_advisor.advisor.results import Prediction


class ModelQuery(BaseModel):
    """A described model on one accelerator: the figure by proxy (basis ``proxy``) of its best
    framework there (or the one named), at the smallest count that holds it or at
    ``accelerator_count``; refused alone, with the reason, where the proxy has none."""

    model_config = ConfigDict(extra="forbid")

    model: str | dict[str, Any] = Field(
        description="the model to estimate by proxy (docs/proxy.md): a catalogued LLM's name "
        "(gpt-oss-120b, or {name: gpt-oss-120b}), a Hugging Face config.json's fields, the short "
        "form (name, architecture, parameters, active_parameters, precision), or a training run "
        "(parameters, train_tokens, or train_samples with sequence_length; family "
        "mlperf-training)"
    )
    accelerator: str = Field(
        min_length=1, description="any name the catalogue knows, or a family (H100)"
    )
    accelerator_count: int | None = Field(
        default=None,
        ge=1,
        description="default: the smallest count that holds the model; more: the figure of the "
        "replicas it holds (accelerator-hours to train are the run's on any count)",
    )
    framework: str | None = Field(
        default=None, description="the reference framework's row (default: the best one)"
    )
    family: Literal["mlperf-inference", "mlperf-training"] = "mlperf-inference"
    scenario: str | None = Field(default=None, description="serving: Offline (default), Server")
    metric: str | None = Field(
        default=None,
        description="what the proxy answers (tokens_per_second, samples_per_second, "
        "accelerator_hours); a different one is refused",
    )
    isl: int | None = Field(default=None, ge=1, le=10_000_000, description="input tokens")
    osl: int | None = Field(default=None, ge=1, le=10_000_000, description="output tokens")
    concurrency: int | None = Field(
        default=None, ge=1, le=1_000_000, description="concurrent requests per replica"
    )

    @field_validator("accelerator_count", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        return not_a_bool(value)

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, value: str) -> str:
        from stack_advisor.advisor.names import accelerator_selector

        accelerator_selector(value)  # ValueError with the closest names
        return value.strip()

    @field_validator("scenario")
    @classmethod
    def _known_scenario(cls, value: str | None) -> str | None:
        from stack_advisor.advisor.names import canonical_scenario

        return canonical_scenario(value)

    def description(self) -> dict[str, Any]:
        """The model object (a name alone stands for its catalogue entry)."""
        return {"name": self.model} if isinstance(self.model, str) else self.model

    def workload(self) -> dict[str, Any]:
        """The workload ``advisor predict --model`` asks ``recommend`` (``cli.proxy``'s
        ``proxy_workload``): a training run has no scenario."""
        data: dict[str, Any] = {
            "family": self.family,
            "model": self.description(),
            "scenario": serving_scenario(self.family, self.scenario),
            "hardware": {"accelerators": [self.accelerator]},
            "isl": self.isl,
            "osl": self.osl,
            "concurrency": self.concurrency,
        }
        return {k: v for k, v in data.items() if v is not None}


def model_query(raw: Any) -> bool:
    """Whether a raw query of a batch describes a model (is answered here)."""
    return isinstance(raw, dict) and "model" in raw


def judge_model_query(i: int, raw: dict[str, Any]) -> ModelQuery | Prediction:
    """Query ``i`` validated on its own: a bad field, or a model description with a field
    missing or absurd, becomes its refusal naming ``queries.i.field`` (``queries.i.model.field``
    for the description's).

    Raises:
        InvalidInput: no accelerator to echo the refusal for (the batch's 422, as a plain query
            without one).
    """
    from stack_advisor.advisor.proxy.model import model_from_mapping

    try:
        query = ModelQuery.model_validate(raw)
    except ValidationError as exc:
        return _refused_raw(i, raw, validation_message(exc, prefix=f"queries.{i}"))
    try:
        model_from_mapping(query.description(), where=f"queries.{i}.model", family=query.family)
    except InvalidInput as exc:
        return _refused_raw(i, raw, exc.message)
    return query


def _refused_raw(i: int, raw: dict[str, Any], why: str) -> Prediction:
    accelerator = raw.get("accelerator")
    if not isinstance(accelerator, str) or not accelerator.strip():
        raise InvalidInput(
            f"queries.{i}.accelerator: a model query needs one (got {accelerator!r})"
        )
    count = raw.get("accelerator_count")
    model = raw.get("model")
    family = "mlperf-training" if raw.get("family") == "mlperf-training" else MLPERF_INFERENCE
    given = raw.get("scenario")
    spec = {
        "family": family,
        "model": model if isinstance(model, dict) else {"name": str(model or "model")},
        "scenario": serving_scenario(family, given if isinstance(given, str) else None),
    }
    valid_count = (
        count if isinstance(count, int) and not isinstance(count, bool) and count >= 1 else None
    )
    return refused(spec, accelerator.strip(), valid_count, why)


def answer_model_query(adv: Recommender, query: ModelQuery) -> Prediction:
    """The query's figure as ``advisor predict --model`` gives it on the query's accelerator
    (its first row: the best framework's, or the named framework's); refused with the reason
    the CLI would give as its error, or saying that the proxy has no row there."""
    spec = query.workload()
    count, asked = query.accelerator_count, query.accelerator
    try:
        rows = proxy_predictions(adv, spec, count=count, asked=[asked])
    except (InvalidInput, NotFound) as exc:
        return refused(spec, asked, count, exc.message)
    if query.framework is not None:
        wanted = query.framework.strip().lower()
        kept = [p for p in rows if (p.query.framework or "").lower() == wanted]
        if not kept and rows:
            on = sorted({p.query.framework or "?" for p in rows})
            why = (
                f"framework {query.framework!r}: the proxy answers {spec['model']['name']} on "
                f"{asked} with {', '.join(on)} only"
            )
            return refused(spec, asked, count, why)
        rows = kept
    if not rows:
        why = (
            f"accelerator {asked!r}: no proxy figure for {spec['model'].get('name')} on it (the "
            "knowledge base holds no result there to estimate from, or its memory cannot hold "
            "the model at up to 64 GPUs)"
        )
        return refused(spec, asked, count, why)
    best = rows[0]
    if query.metric is not None and query.metric != best.query.metric:
        why = f"metric {query.metric!r}: the proxy answers {best.query.metric} for this model"
        return refused(spec, asked, count, why)
    return best
