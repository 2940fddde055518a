"""A system of several accelerator models ("mixed: 16x MI325X + 8x MI300X", as MLPerf publishes
heterogeneous multi-node systems): its throughput is the sum of its parts', each part estimated
through the same hierarchy with its own count, since each node serves its own share of the
queries. The answer's basis is its weakest part's, and at best interpolated (a sum of parts
measured elsewhere is no measurement of this system: ``observed`` is false), its interval the sum
of the parts' bounds (the parts' errors taken as moving together: the widest honest sum), and each
part is a factor, with the parts' own factors. A system the knowledge base holds as published (the
same parts, counts and nodes) is answered from its own results by ``predict`` first.

A latency (lower is better) is not a sum of parts: refused, as is any system with a part that
cannot be answered (the part's reason is kept).
"""

from __future__ import annotations

from collections.abc import Callable

from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.knowledge.rules import RuleSet
from stack_advisor.advisor.results import (
    Basis,
    Evidence,
    Factor,
    Interval,
    Prediction,
    PredictQuery,
)
from stack_advisor.catalog import AcceleratorMatch
from stack_advisor.catalog.rounds import round_key

ORDER = (Basis.OBSERVED, Basis.INTERPOLATED, Basis.TRANSFERRED)
PredictOne = Callable[[EvidenceIndex, RuleSet, PredictQuery], Prediction]


def refused_prediction(
    q: PredictQuery,
    reason: str | None,
    warnings: list[str] | None = None,
    accelerator: str | None = None,
) -> Prediction:
    """The answer to a query the hierarchy refuses: no figure, the reason (the first warning
    unless ``warnings`` are given), and the canonical ``accelerator`` when it was resolved."""
    return Prediction(
        query=q,
        value=None,
        interval=None,
        observed=False,
        basis=Basis.UNSUPPORTED,
        reason=reason,
        accelerator=accelerator,
        evidence=Evidence(count=0),
        warnings=warnings if warnings is not None else [reason or "unsupported"],
    )


def mixed_prediction(
    index: EvidenceIndex,
    rules: RuleSet,
    q: PredictQuery,
    match: AcceleratorMatch,
    predict_one: PredictOne,
) -> Prediction:
    """``q`` for the heterogeneous system ``match`` (kind ``mixed``) as the sum of its parts."""
    head = f"mixed accelerators: {q.accelerator!r}"
    answers: list[tuple[str, Prediction]] = []
    for part in match.parts:
        count = (part.nodes or 1) * part.per_node
        one = predict_one(
            index,
            rules,
            q.model_copy(update={"accelerator": part.accelerator.key, "accelerator_count": count}),
        )
        if one.basis is Basis.UNSUPPORTED or one.value is None or one.interval is None:
            return refused_prediction(
                q,
                f"{head}: its part {count}x {part.accelerator.key} cannot be estimated "
                f"({one.reason})",
            )
        answers.append((f"{count}x {part.accelerator.key}", one))
    if any(p.query.metric and not _higher_is_better(index, p) for _, p in answers):
        return refused_prediction(
            q,
            f"{head}: a heterogeneous system's {q.metric} is not the sum of its parts' (only "
            "throughput adds up across nodes)",
        )
    basis = max((Basis.INTERPOLATED, *(p.basis for _, p in answers)), key=ORDER.index)
    factors = [
        Factor(name="part", value=f"{label}: {p.basis.value} {p.value:.4g}", effect=1.0)
        for label, p in answers
    ]
    factors += [
        f.model_copy(update={"value": f"{label}: {f.value}"})
        for label, p in answers
        for f in p.factors
    ]
    rounds = sorted({p.round for _, p in answers if p.round}, key=round_key)
    warnings = [
        "a heterogeneous system: the sum of its parts' estimates (each node serves its own share)"
    ]
    for label, p in answers:
        warnings.extend(f"{label}: {w}" for w in p.warnings)
    return Prediction(
        query=q,
        value=sum(p.value for _, p in answers if p.value is not None),
        interval=Interval(
            low=sum(p.interval.low for _, p in answers if p.interval),
            high=sum(p.interval.high for _, p in answers if p.interval),
        ),
        observed=False,
        basis=basis,
        confidence=min(p.confidence for _, p in answers),
        accelerator=match.key,
        references=sorted({r for _, p in answers for r in p.references}),
        factors=factors,
        evidence=Evidence(count=sum(p.evidence.count for _, p in answers)),
        warnings=warnings,
        round=rounds[-1] if rounds else None,  # the round asked (a stack's own: its newest)
    )


def _higher_is_better(index: EvidenceIndex, p: Prediction) -> bool:
    q = p.query
    for key in index.slices:
        if key[0] == q.family and key[1] == q.benchmark and key[3] == q.metric:
            return index.higher_is_better(key)
    return True
