"""Proxy answers for a described model: one per accelerator and stack family the knowledge base
has LLM results for, each with its memory verdict, references, scaling and interval."""

from __future__ import annotations

import math
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.efficiency import Efficiency
from stack_advisor.advisor.proxy.estimate import (
    Moved,
    Reference,
    Workload,
    point_work,
    prior_efficiency,
    proxy_value,
    references,
)
from stack_advisor.advisor.proxy.indicators import Indicators, pi_factors
from stack_advisor.advisor.proxy.memory import MemoryVerdict, feasibility
from stack_advisor.advisor.proxy.model import ModelSpec
from stack_advisor.advisor.proxy.validation import Fit, fit, model_of
from stack_advisor.schema.errors import InvalidInput, NotFound

Factor = tuple[str, str, float]  # (name, value as text, effect on the figure)
# id(table) -> (the table, weakly; scenario -> references and fit): tables are unhashable
_FITS: dict[int, tuple[weakref.ref[ObservationTable], dict[str, tuple[list[Reference], Fit]]]] = {}


@dataclass
class ProxyAnswer:
    """Throughput per accelerator (tokens/s) of the model on one part and framework."""

    accelerator: str
    framework: str
    scenario: str
    value: float
    low: float
    high: float
    memory: MemoryVerdict
    references: list[str] = field(default_factory=list)
    factors: list[Factor] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def fitted(table: ObservationTable, scenario: str) -> tuple[list[Reference], Fit]:
    """The scenario's references and what the proxy learns from them, once per table."""
    held = _FITS.get(id(table))
    if held is None or held[0]() is not table:
        if len(_FITS) > 8:
            _FITS.clear()
        held = _FITS[id(table)] = (weakref.ref(table), {})
    memo = held[1]
    if scenario not in memo:
        refs = references(table, scenario)
        if not refs:
            raise NotFound(  # a gap in the knowledge base, not the user's bad input
                f"scenario {scenario!r}: the knowledge base holds no LLM tokens/s results to "
                "estimate by proxy from"
            )
        memo[scenario] = (refs, fit(refs))
    return memo[scenario]


def proxy_answers(
    table: ObservationTable,
    model: ModelSpec,
    *,
    scenario: str = "Offline",
    isl: int,
    osl: int,
    concurrency: int | None = None,
    accelerators: list[str] | None = None,
) -> list[ProxyAnswer]:
    """Best first. A part whose memory cannot hold the model at any degree up to 64 is left
    out; the references exclude the model's own benchmarks when it is a catalogued one.

    Raises:
        InvalidInput: no concurrency where the model's KV cache size is unknown.
        NotFound: no LLM results in the scenario, or only the model's own.
    """
    if not model.kv_elems_per_token and concurrency is None:
        raise InvalidInput(
            f"concurrency: {model.name}'s KV cache size is unknown (its description has no "
            "num_hidden_layers / hidden_size / heads), so memory cannot bound the batch: give "
            "the concurrent requests (--concurrency N, workload.concurrency) or the shape"
        )
    refs, learned = fitted(table, scenario)
    rest = [r for r in refs if model_of(r.benchmark) != model.source]
    if not rest:
        raise NotFound(
            f"model {model.name!r}: the knowledge base's only LLM results in {scenario!r} are "
            "its own benchmarks', so there is no other model to estimate it by proxy from"
        )
    prior = learned.prior if len(rest) == len(refs) else prior_efficiency(rest)
    pools: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    for r in rest:
        if not accelerators or r.accelerator in accelerators:
            pools[(r.accelerator, r.framework)].append(r)
    out = []
    for (acc, framework), pool in sorted(pools.items()):
        target = point_work(model, acc, isl, osl, concurrency)
        if target is None:
            continue
        (c, m), ind = pi_factors(table, acc, target.precision, framework)
        got = proxy_value(target, pool, prior.scaled(c, m), learned.strength)
        if got is None:
            continue
        plain = proxy_value(target, pool, prior, learned.strength) if ind else got
        pi_effect = got.value / plain.value if plain else 1.0
        answer = _answer(model, acc, framework, got, learned, scenario, isl, osl, target)
        answer.factors.append(_pi_factor(ind, acc, framework, pi_effect))
        out.append(answer)
    return sorted(out, key=lambda a: -a.value)


def _pi_factor(ind: Indicators | None, acc: str, framework: str, effect: float) -> Factor:
    if ind is None:
        return (
            "performance indicators",
            f"none in the knowledge base for {acc} ({framework}): efficiency from MLPerf "
            "references only",
            1.0,
        )
    return ("performance indicators (prior efficiency moved)", ind.text, round(effect, 4))


def _answer(
    model: ModelSpec,
    acc: str,
    framework: str,
    got: Moved,
    learned: Fit,
    scenario: str,
    isl: int,
    osl: int,
    target: Workload,
) -> ProxyAnswer:
    value = got.value
    context, batch = isl + osl, target.traffic.batch
    smallest = feasibility(model, acc, count=1, context=context, concurrency=batch).min_count
    verdict = feasibility(model, acc, count=smallest or 1, context=context, concurrency=batch)
    refs = [
        f"{r.benchmark} {scenario} on {r.accelerator} ({r.framework}, {r.round}): "
        f"{r.value:,.0f} tokens/s per accelerator"
        for r, _ in got.references
    ]
    factors = [
        ("work per token", f"{r.benchmark} -> {model.name}", round(moved / r.value, 4))
        for r, moved in got.references
    ]
    factors += _learned(got.efficiency, got.prior, learned, batch)
    factors.append(_link_factor(target, got.efficiency))
    notes = [
        f"basis proxy: {model.name} has no results; its work per output token on {acc} "
        f"({target.precision}: prefill and decode FLOPs, weight and KV-cache bytes) at the "
        f"compute and memory efficiency fitted to {len(refs)} published model(s) there",
        _interval_note(learned),
        verdict.text,
    ]
    return ProxyAnswer(
        accelerator=acc,
        framework=framework,
        scenario=scenario,
        value=value,
        low=value * math.exp(learned.q10),
        high=value * math.exp(learned.q90),
        memory=verdict,
        references=refs,
        factors=factors,
        notes=notes,
    )


def _link_factor(target: Workload, eff: Efficiency) -> Factor:
    """The tensor-parallel all-reduce's share of the token's time (published link bandwidth,
    not fitted); its effect is already in the figure."""
    share = target.link_seconds / target.seconds(eff)
    text = (
        f"TP{target.tp}: {100 * share:.0f}% of the time (hidden-state all-reduces at the "
        "link's published bandwidth)"
        if target.link_seconds
        else f"TP{target.tp}: none counted"
        + ("" if target.tp == 1 else " (the part publishes no scale-up link bandwidth)")
    )
    return ("tensor-parallel link", text, 1.0)


def _interval_note(learned: Fit) -> str:
    if learned.held_out:
        return (
            f"interval: p10..p90 of {learned.held_out} leave-one-model-out errors over "
            f"{learned.models} MLPerf LLMs"
        )
    return (
        f"interval: a factor of 2 either way, not measured: the knowledge base holds "
        f"{learned.models} MLPerf LLM(s) with countable work, none to hold out and test on"
    )


def _learned(eff: Efficiency, prior: Efficiency, learned: Fit, batch: int) -> list[Factor]:
    """What the answer was made with, as factors of no effect of their own."""
    return [
        (
            "efficiency on this part (fitted): compute, memory",
            f"{eff.compute:.3g} of peak, {eff.memory:.3g} of bandwidth",
            1.0,
        ),
        (
            "prior efficiency (every part), shrinkage strength (learned)",
            f"{prior.compute:.3g}, {prior.memory:.3g}; {learned.strength:g}",
            1.0,
        ),
        ("batch per replica", str(batch), 1.0),
    ]
