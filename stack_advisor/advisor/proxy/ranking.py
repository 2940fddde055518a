"""Proxy answers in the shapes every other answer has: a ``RecommendationSet`` for ``recommend``
and ``Prediction``s for ``predict``, so tables and JSON read the same whatever the basis."""

from __future__ import annotations

import time
from typing import Any

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.answer import ProxyAnswer, proxy_answers
from stack_advisor.advisor.proxy.estimate import benchmark_traffic
from stack_advisor.advisor.proxy.model import ModelSpec, catalogue_configs, model_from_mapping
from stack_advisor.advisor.proxy.sample_answer import flops_described, sample_recommendations
from stack_advisor.advisor.results import (
    Basis,
    Candidate,
    Evidence,
    Factor,
    Interval,
    Recommendation,
    RecommendationSet,
)
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import PlacementKind, SoftwareStack

METRIC, UNIT = "tokens_per_second", "tokens/s"


def described_model(
    model: str | dict[str, Any] | None, benchmark: str | None, known: list[str], family: str
) -> ModelSpec | None:
    """The model to answer by proxy, or None for the usual path: a model object, or a
    catalogued LLM benchmark (``benchmark`` or ``model`` by name) without results (``known``:
    the benchmarks the knowledge base holds)."""
    if isinstance(model, dict):
        if family != "mlperf-inference":
            raise InvalidInput(
                f"model: a described model is estimated for serving (mlperf-inference) only, "
                f"not {family}"
            )
        return model_from_mapping(model, family=family)
    name = benchmark or model
    if family != "mlperf-inference" or name is None or name in known:
        return None
    if name not in catalogue_configs():
        return None
    return model_from_mapping({"name": name}, family=family)


def traffic(spec: ModelSpec, isl: int | None, osl: int | None) -> tuple[int, int]:
    """Input and output tokens: as given, else the catalogued benchmark's own.

    Raises:
        InvalidInput: a model of the user's without --isl/--osl.
    """
    if isl is not None and osl is not None:
        return isl, osl
    if spec.name in catalogue_configs():
        own_isl, own_osl = benchmark_traffic(spec.name)
        return isl or own_isl, osl or own_osl
    missing = "isl" if isl is None else "osl"
    raise InvalidInput(
        f"{missing}: give the request's {'input' if missing == 'isl' else 'output'} tokens "
        f"(--{missing} N, or workload.{missing}) to estimate {spec.name} by proxy"
    )


def _candidate(table: ObservationTable, a: ProxyAnswer, stack_id: str) -> Candidate:
    stack = table.stacks.get(stack_id) or SoftwareStack(framework=a.framework)
    return Candidate(
        stack_id=stack_id,
        stack=stack.model_dump(mode="json", exclude_none=True),
        stack_label=stack.label(),
        accelerator=a.accelerator,
        accelerator_count=a.memory.count,
        placement=PlacementKind.BARE_METAL,
    )


def _evidence(a: ProxyAnswer) -> Evidence:
    return Evidence(count=0, sources=a.references)


def recommendation(
    table: ObservationTable, rank: int, a: ProxyAnswer, stack: str
) -> Recommendation:
    return Recommendation(
        rank=rank,
        candidate=_candidate(table, a, stack),
        metric=METRIC,
        unit=UNIT,
        higher_is_better=True,
        basis=Basis.PROXY,
        value=a.value,
        interval=Interval(low=a.low, high=a.high),
        per_accelerator=True,
        score=a.low,
        score_unit=f"{UNIT} per accelerator (pessimistic end of the interval)",
        confidence=round(a.low / a.high, 3),
        evidence=_evidence(a),
        factors=[Factor(name=n, value=v, effect=e) for n, v, e in a.factors],
        warnings=a.notes,
        snippet_missing="a proxy answer has no measured stack of this model to deploy: the "
        "stack shown is the reference's",
    )


def proxy_recommendations(
    table: ObservationTable,
    spec: ModelSpec,
    workload: dict[str, Any],
    *,
    scenario: str,
    isl: int | None,
    osl: int | None,
    concurrency: int | None,
    allows: Any,
    top: int,
) -> RecommendationSet:
    """``recommend``'s answer by proxy: best throughput per accelerator first (the pessimistic
    end of each interval ranks); ``allows(accelerator)`` is the workload's hardware filter."""
    start = time.perf_counter()
    isl, osl = traffic(spec, isl, osl)
    answers = proxy_answers(
        table, spec, scenario=scenario, isl=isl, osl=osl, concurrency=concurrency
    )
    kept = sorted((a for a in answers if allows(a.accelerator)), key=lambda a: -a.low)
    stacks = _reference_stacks(table, scenario)
    recs = [
        recommendation(table, i, a, stacks.get((a.accelerator, a.framework), ""))
        for i, a in enumerate(kept[:top], start=1)
    ]
    return RecommendationSet(
        workload=workload,
        metric=METRIC,
        objective="throughput",
        generation=table.generation,
        candidates_considered=len(answers),
        excluded={"accelerator not allowed": len(answers) - len(kept)}
        if len(kept) < len(answers)
        else {},
        recommendations=recs,
        notes=[
            f"basis proxy: {spec.name} ({spec.architecture}, {spec.params / 1e9:.1f}B parameters, "
            f"{spec.active_params / 1e9:.1f}B active) at {isl} input / {osl} output tokens"
            + (f", {concurrency} concurrent" if concurrency else ", batch filling memory"),
            f"described by {spec.source}",
        ],
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


def _reference_stacks(table: ObservationTable, scenario: str) -> dict[tuple[str, str], str]:
    from stack_advisor.advisor.proxy.answer import fitted

    refs, _ = fitted(table, scenario)
    return {(r.accelerator, r.framework): r.stack for r in refs}


def answered_by_proxy(knowledge: Knowledge, workload: Workload) -> bool:
    """Whether ``recommend`` answers ``workload`` by proxy (``by_proxy`` is not None): a vision
    model or training run is (its refusal included), as is a described or catalogued LLM."""
    if flops_described(workload.model, workload.family):
        return True
    known = knowledge.index.benchmarks(workload.family)
    return described_model(workload.model, workload.benchmark, known, workload.family) is not None


def by_proxy(knowledge: Knowledge, workload: Workload, top: int) -> RecommendationSet | None:
    """``recommend``'s hook: the proxy's answer for a described model or a catalogued LLM the
    knowledge base has no results for; None for everything else. A vision model
    (``flops_per_sample``) or a training run (family mlperf-training) is answered by
    ``sample_answer``."""
    if isinstance(workload.model, dict) and flops_described(workload.model, workload.family):
        return sample_recommendations(
            knowledge.table,
            workload.model,
            workload.model_dump(mode="json", exclude_none=True),
            scenario=workload.scenario or "Offline",
            allows=workload.hardware.allows,
            top=top,
        )
    known = knowledge.index.benchmarks(workload.family)
    spec = described_model(workload.model, workload.benchmark, known, workload.family)
    if spec is None:
        return None
    try:
        return proxy_recommendations(
            knowledge.table,
            spec,
            workload.model_dump(mode="json", exclude_none=True),
            scenario=workload.scenario or "Offline",
            isl=workload.isl,
            osl=workload.osl,
            concurrency=workload.concurrency,
            allows=workload.hardware.allows,
            top=top,
        )
    except NotFound as exc:
        if workload.model is not None:  # the user's own description: its error is the answer
            raise
        raise NotFound(  # a catalogued benchmark asked by name: say first that it has no results
            f"benchmark: no results yet for {workload.benchmark} in {workload.family}, and no "
            f"proxy estimate either ({exc.message})"
        ) from None
