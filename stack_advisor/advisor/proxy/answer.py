"""Proxy answers for a described model: one per accelerator and stack family the knowledge base
has LLM results for, each with its memory verdict, references, scaling and interval."""

from __future__ import annotations

import math
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.estimate import Reference, point_work, proxy_value, references
from stack_advisor.advisor.proxy.memory import MemoryVerdict, feasibility
from stack_advisor.advisor.proxy.model import ModelSpec
from stack_advisor.advisor.proxy.validation import Fit, fit, model_of
from stack_advisor.schema.errors import InvalidInput, NotFound

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
    factors: list[tuple[str, str, float]] = field(default_factory=list)
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
        NotFound: no LLM results in the scenario.
    """
    if not model.kv_elems_per_token and concurrency is None:
        raise InvalidInput(
            f"concurrency: {model.name}'s KV cache size is unknown (its description has no "
            "num_hidden_layers / hidden_size / heads), so memory cannot bound the batch: give "
            "the concurrent requests (--concurrency N, workload.concurrency) or the shape"
        )
    refs, learned = fitted(table, scenario)
    own = {model.source}
    pools: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    for r in refs:
        if model_of(r.benchmark) not in own and (not accelerators or r.accelerator in accelerators):
            pools[(r.accelerator, r.framework)].append(r)
    out = []
    for (acc, framework), pool in sorted(pools.items()):
        answer = _answer(model, acc, framework, pool, learned, scenario, isl, osl, concurrency)
        if answer is not None:
            out.append(answer)
    return sorted(out, key=lambda a: -a.value)


def _answer(
    model: ModelSpec,
    acc: str,
    framework: str,
    pool: list[Reference],
    learned: Fit,
    scenario: str,
    isl: int,
    osl: int,
    concurrency: int | None,
) -> ProxyAnswer | None:
    target = point_work(model, acc, isl, osl, concurrency)
    got = proxy_value(target, pool, learned.knobs) if target else None
    if target is None or got is None:
        return None
    value, chosen = got
    context, batch = isl + osl, target.traffic.batch
    smallest = feasibility(model, acc, count=1, context=context, concurrency=batch).min_count
    verdict = feasibility(model, acc, count=smallest or 1, context=context, concurrency=batch)
    refs = [
        f"{r.benchmark} {scenario} on {r.accelerator} ({r.framework}, {r.round}): "
        f"{r.value:,.0f} tokens/s per accelerator"
        for r, _, _ in chosen
    ]
    factors = [
        ("work per token", f"{r.benchmark} -> {model.name}", round(moved / r.value, 4))
        for r, moved, _ in chosen
    ]
    factors += _learned(learned, batch)
    notes = [
        f"basis proxy: {model.name} has no results; moved from the nearest published model on "
        f"{acc} by modelled time per output token ({target.precision})",
        f"interval: p10..p90 of leave-one-model-out errors over {learned.models} MLPerf LLMs",
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


def _learned(learned: Fit, batch: int) -> list[tuple[str, str, float]]:
    """The knobs the answer was made with, as factors of no effect of their own."""
    k = learned.knobs
    return [
        ("memory-term weight (learned)", f"{k.memory_weight:.3g}", 1.0),
        (
            "nearness: MoE penalty, context weight (learned)",
            f"{k.moe_penalty:g}, {k.context_weight:g}",
            1.0,
        ),
        ("batch per replica", str(batch), 1.0),
    ]
