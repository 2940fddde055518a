"""Proxy answers for a described vision model (samples/s per accelerator) or training run
(accelerator-hours to train), in ``recommend``'s shape: one row per part and framework the
knowledge base has results of other described models for."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.estimate import Moved, Reference, proxy_value
from stack_advisor.advisor.proxy.model import Described, described_flops
from stack_advisor.advisor.proxy.samples import (
    TRAINING_PEAKS,
    VISION_PEAKS,
    flops_work,
    training_references,
    vision_references,
)
from stack_advisor.advisor.proxy.validation import TRAINING, VISION, Fit, Kind, fit
from stack_advisor.advisor.results import (
    Basis,
    Candidate,
    Evidence,
    Factor,
    Interval,
    Recommendation,
    RecommendationSet,
)
from stack_advisor.schema.errors import NotFound
from stack_advisor.schema.models import PlacementKind, SoftwareStack

# A proxy whose held-out errors span more than this at 80% gives no figure: an interval wider than
# an order of magnitude answers nothing a platform team could act on.
MAX_SPREAD = 10.0


def flops_described(model: Any, family: str) -> bool:
    """Whether a workload's model object is a vision model (``flops_per_sample``) or a
    training run (family mlperf-training): answered here, not as an LLM."""
    return isinstance(model, dict) and (family == "mlperf-training" or "flops_per_sample" in model)


def _setup(
    table: ObservationTable, training: bool, scenario: str
) -> tuple[Kind, list[Reference], tuple[str, ...]]:
    if training:
        return TRAINING, training_references(table), TRAINING_PEAKS
    return VISION, vision_references(table, scenario), VISION_PEAKS


def sample_recommendations(
    table: ObservationTable,
    model: dict[str, Any],
    workload: dict[str, Any],
    *,
    scenario: str,
    allows: Any,
    top: int,
) -> RecommendationSet:
    """``recommend``'s answer for a described vision model or training run, best first.

    Raises:
        InvalidInput: a field of the description missing or absurd (named).
        NotFound: the knowledge base holds no described results to move.
    """
    start = time.perf_counter()
    training = str(workload.get("family")) == "mlperf-training"
    spec = described_flops(model, "workload.model")
    kind, refs, peaks = _setup(table, training, scenario)
    refs = [r for r in refs if kind.model_of(r.benchmark) != spec.name]
    if not refs:
        raise NotFound(
            f"model {spec.name!r}: the knowledge base holds no {kind.name} results of a "
            "described model to estimate it by proxy from"
        )
    learned = fit(refs, kind)
    spread = math.exp(learned.q90 - learned.q10)
    if spread > MAX_SPREAD:
        raise NotFound(
            f"model {spec.name!r}: no {kind.name} figure by proxy - the described models held "
            f"out in turn ({learned.held_out} results) came back within a {spread:,.0f}-fold "
            f"band at 80% (more than {MAX_SPREAD:g}-fold): their published work per "
            f"{'run' if training else 'sample'} does not carry from one model to another "
            "(docs/accuracy.md, the proxy section)"
        )
    pools: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    for r in refs:
        pools[(r.accelerator, r.framework)].append(r)
    rows = _ranked(table, spec, pools, (kind, peaks, learned), allows, training)
    unit = "accelerator-hours to train" if training else "samples/s per accelerator"
    return RecommendationSet(
        workload=workload,
        metric=rows[0].metric if rows else "",
        objective="time_to_train" if training else "throughput",
        generation=table.generation,
        candidates_considered=len(pools),
        recommendations=rows[:top],
        notes=[
            f"basis proxy: {spec.name} ({spec.flops:.3g} FLOPs per "
            f"{'training run' if training else 'sample'}, {spec.parameters / 1e6:.1f}M "
            f"parameters) in {unit}",
            f"described by {spec.source}",
        ],
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )


def _ranked(
    table: ObservationTable,
    spec: Described,
    pools: dict[tuple[str, str], list[Reference]],
    how: tuple[Kind, tuple[str, ...], Fit],
    allows: Any,
    training: bool,
) -> list[Recommendation]:
    """A row per (part, framework) the workload allows and the proxy answers on, best first."""
    kind, peaks, learned = how
    rows = []
    for (acc, framework), pool in sorted(pools.items()):
        target = flops_work(spec.flops, acc, peaks)
        if target is None or not allows(acc):
            continue
        got = proxy_value(target, pool, learned.prior, learned.strength, kind.work_of)
        if got is not None:
            rows.append(_row(table, spec, acc, framework, got, learned, training))
    rows.sort(key=lambda row: -row.score)
    for i, row in enumerate(rows, start=1):
        row.rank = i
    return rows


def _row(
    table: ObservationTable,
    spec: Described,
    acc: str,
    framework: str,
    got: Moved,
    learned: Fit,
    training: bool,
) -> Recommendation:
    value, low, high = (
        got.value,
        got.value * math.exp(learned.q10),
        got.value * math.exp(learned.q90),
    )
    if training:  # runs per accelerator-second -> accelerator-hours (lower is better)
        value, low, high = 1 / (3600 * value), 1 / (3600 * high), 1 / (3600 * low)
    ref = got.references[0][0]
    stack = table.stacks.get(ref.stack) or SoftwareStack(framework=framework)
    return Recommendation(
        rank=0,
        candidate=Candidate(
            stack_id=ref.stack,
            stack=stack.model_dump(mode="json", exclude_none=True),
            stack_label=stack.label(),
            accelerator=acc,
            accelerator_count=1,
            placement=PlacementKind.BARE_METAL,
        ),
        metric="accelerator_hours" if training else "samples_per_second",
        unit="accelerator-h" if training else "samples/s",
        higher_is_better=not training,
        basis=Basis.PROXY,
        value=value,
        interval=Interval(low=low, high=high),
        per_accelerator=True,
        score=-high if training else low,
        score_unit="pessimistic end of the interval (negated accelerator-hours for training)"
        if training
        else "samples/s per accelerator (pessimistic end of the interval)",
        confidence=round(low / high, 3),
        evidence=Evidence(count=0, sources=[_source(r, v, training) for r, v in got.references]),
        factors=_factors(spec, got, learned),
        warnings=[
            f"basis proxy: {spec.name} has no results; its FLOPs at {acc}'s peak and the compute "
            f"efficiency fitted to {len(got.references)} published result(s) there",
            f"interval: p10..p90 of {learned.held_out} leave-one-model-out errors over "
            f"{learned.models} described models",
        ],
        snippet_missing="a proxy answer has no measured stack of this model to deploy: the "
        "stack shown is the reference's",
    )


def _source(r: Reference, moved: float, training: bool) -> str:
    shown = (
        f"{1 / (3600 * r.value):,.3g} accelerator-h" if training else f"{r.value:,.4g} samples/s"
    )
    return f"{r.benchmark} on {r.accelerator} ({r.framework}, {r.round}): {shown} per accelerator"


def _factors(spec: Described, got: Moved, learned: Fit) -> list[Factor]:
    out = [
        Factor(name="work", value=f"{r.benchmark} -> {spec.name}", effect=round(v / r.value, 6))
        for r, v in got.references
    ]
    out.append(
        Factor(
            name="efficiency on this part (fitted), prior, strength",
            value=f"{got.efficiency.compute:.3g} of peak; {learned.prior.compute:.3g}; "
            f"{learned.strength:g}",
            effect=1.0,
        )
    )
    return out
