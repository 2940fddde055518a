"""Basis ``proxy``: a model the knowledge base has no results for, from the published results of
the models nearest to it on the same accelerator and stack family.

Each reference is one (benchmark, accelerator, framework) median throughput per accelerator in
MLPerf's latest round that holds it. A reference's figure is moved by the ratio of modelled time
per output token (``stack_advisor.advisor.proxy.work``: FLOPs at the part's peak plus bytes at its
bandwidth, the bytes term weighted by ``Knobs.memory_weight``, the efficiency ratio learned from
the references themselves). The nearest references (active parameters, dense or MoE, context)
are combined in a weighted geometric mean. The interval is the spread of the same procedure's
errors on benchmarks held out (``stack_advisor.advisor.proxy.validation``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import yaml

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.memory import default_precision, max_batch, part, usable_bytes
from stack_advisor.advisor.proxy.model import ModelSpec, catalogue_configs, from_catalogue
from stack_advisor.advisor.proxy.work import Traffic, token_work
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput

FAMILY = "mlperf-inference"
METRIC = "tokens_per_second"
NEAREST = 1  # references an answer is moved from (1: the nearest; held-out error chose it)
KV_SHARE = 0.5  # a replica's degree leaves at least this share of its memory to the KV cache


@dataclass(frozen=True)
class Knobs:
    """What the proxy learns, each by held-out error on the grids below: the memory term's
    weight against the FLOP term (the ratio of the two efficiencies), and how far a dense model
    is from a MoE one and one context from another when picking the nearest reference."""

    memory_weight: float
    moe_penalty: float
    context_weight: float


# log-spaced memory weights, and the nearness terms tried with each
KNOB_GRID = tuple(
    Knobs(float(w), moe, ctx)
    for w in np.geomspace(0.05, 20.0, 9)
    for moe in (0.0, 0.7)
    for ctx in (0.3, 1.0)
)


@dataclass(frozen=True)
class Reference:
    """One benchmark's published throughput per accelerator on one part and framework."""

    benchmark: str
    accelerator: str
    framework: str
    value: float  # tokens/s per accelerator, median of the latest round's results
    round: str
    results: int
    stack: str = ""  # the stack id of one of those results (its snippet's stack)


@dataclass(frozen=True)
class Workload:
    """What a point costs on its part: the model, its traffic and the part's figures."""

    model: ModelSpec
    traffic: Traffic
    precision: str
    flop_seconds: float  # FLOPs / peak
    byte_seconds: float  # bytes / bandwidth

    def time(self, memory_weight: float) -> float:
        return self.flop_seconds + memory_weight * self.byte_seconds


def llm_benchmarks() -> list[str]:
    """MLPerf LLM benchmarks whose model's published config the proxy holds."""
    return sorted(catalogue_configs())


def references(table: ObservationTable, scenario: str) -> list[Reference]:
    """Every (LLM benchmark, accelerator, framework) of the closed division with tokens/s
    results in ``scenario``: the latest round's median per accelerator."""
    known = set(llm_benchmarks())
    parts = load_catalog().accelerators
    groups: dict[tuple[str, str, str], dict[str, list[tuple[float, str]]]] = {}
    for i in np.flatnonzero(table.value > 0):
        if table.metric.vocab[table.metric.codes[i]] != METRIC:
            continue
        bench = table.bench_name.vocab[table.bench_name.codes[i]]
        if bench not in known or table.scenario.vocab[table.scenario.codes[i]] != scenario:
            continue
        if table.division.vocab[table.division.codes[i]] != "closed":
            continue
        acc = table.physical.vocab[table.physical.codes[i]]
        if acc not in parts or not parts[acc].memory_gb:
            continue
        stack = table.stacks.get(table.stack.vocab[table.stack.codes[i]])
        framework = (stack.framework if stack else None) or "unknown"
        count = max(1.0, float(table.count[i]))
        rnd = table.round.vocab[table.round.codes[i]]
        groups.setdefault((bench, acc, framework), {}).setdefault(rnd, []).append(
            (float(table.value[i]) / count, table.stack.vocab[table.stack.codes[i]])
        )
    out = []
    for (bench, acc, framework), by_round in groups.items():
        latest = max(by_round, key=_round_order)
        vals = [v for v, _ in by_round[latest]]
        stack_id = by_round[latest][0][1]
        value = float(np.median(vals))
        out.append(Reference(bench, acc, framework, value, latest, len(vals), stack_id))
    return sorted(out, key=lambda r: (r.benchmark, r.accelerator, r.framework))


def _round_order(name: str) -> tuple[float, ...]:
    digits = [float(p) for p in name.lstrip("v").split(".") if p.isdigit()]
    return tuple(digits)


@dataclass(frozen=True)
class PublishedTraffic:
    """A benchmark's dataset means as MLCommons publishes them (``traffic.yaml``)."""

    mean_output_tokens: float
    mean_input_tokens: float | None
    source: str


@lru_cache(maxsize=1)
def published_traffic() -> dict[str, PublishedTraffic]:
    """Each benchmark's published means with their source; benchmarks without any are absent."""
    text = (resources.files("stack_advisor.advisor.proxy") / "traffic.yaml").read_text()
    out: dict[str, PublishedTraffic] = {}
    for entry in yaml.safe_load(text)["benchmarks"]:
        mean_in = entry.get("mean_input_tokens")
        got = PublishedTraffic(
            float(entry["mean_output_tokens"]),
            float(mean_in) if mean_in is not None else None,
            str(entry["source"]),
        )
        for bench in entry["benchmarks"]:
            out[bench] = got
    return out


def benchmark_traffic(benchmark: str) -> tuple[int, int]:
    """A benchmark's input and output tokens per request: the dataset's means where MLCommons
    publishes both (``traffic.yaml``), else the rules' maximum input and the reference's
    generation limit. A mean output alone is not used: beside a maximum input it multiplies the
    prefill each output token carries (llama3.1-405b: 20,000 / 685), which measured worse
    (Server median APE 29.8% -> 48.3%, docs/proxy.md)."""
    entry = load_catalog().benchmark(FAMILY, benchmark)
    if entry is None or not entry.max_seq_len or not entry.max_output_tokens:
        raise InvalidInput(f"benchmark {benchmark!r}: the catalogue has no sequence lengths")
    mean = published_traffic().get(entry.id)
    if mean is not None and mean.mean_input_tokens is not None:
        return max(1, round(mean.mean_input_tokens)), max(1, round(mean.mean_output_tokens))
    return entry.max_seq_len, entry.max_output_tokens


@lru_cache(maxsize=4096)
def point_work(
    model: ModelSpec, accelerator: str, isl: int, osl: int, concurrency: int | None
) -> Workload | None:
    """The work of ``model`` on one part: the batch is ``concurrency`` per replica when given,
    else what memory holds at the smallest degree that fits (Offline's fill); None when the
    part publishes no peak or bandwidth, or the weights fit no degree up to 64."""
    from stack_advisor.advisor.proxy.memory import TP_DEGREES

    entry = part(accelerator)
    precision = default_precision(entry, model)
    peaks = entry.peak_tflops.as_dict() if entry.peak_tflops else {}
    peak = peaks.get(precision) or peaks.get("fp16") or peaks.get("bf16")
    if not peak or not entry.memory_bw_gbs:
        return None
    fill = 0
    for tp in TP_DEGREES:  # the smallest degree whose weights leave half the memory to the cache
        fill = max_batch(model, accelerator, tp, isl + osl, precision)
        if fill and model.weight_bytes(precision) <= tp * usable_bytes(entry) * KV_SHARE:
            break
    if not fill:
        return None
    batch = min(concurrency, fill) if concurrency else fill
    work = token_work(model, Traffic(isl=isl, osl=osl, batch=batch), precision)
    return Workload(
        model=model,
        traffic=Traffic(isl=isl, osl=osl, batch=batch),
        precision=precision,
        flop_seconds=work.flops / (peak * 1e12),
        byte_seconds=work.bytes / (entry.memory_bw_gbs * 1e9),
    )


def distance(a: Workload, b: Workload, knobs: Knobs) -> float:
    """How far two models are for the proxy: active parameters (log), dense vs MoE, context."""
    return (
        abs(math.log(a.model.active_params / b.model.active_params))
        + (knobs.moe_penalty if a.model.moe != b.model.moe else 0.0)
        + knobs.context_weight * abs(math.log(a.traffic.context / b.traffic.context))
    )


def benchmark_work(benchmark: str, accelerator: str) -> Workload | None:
    isl, osl = benchmark_traffic(benchmark)
    return point_work(from_catalogue(benchmark), accelerator, isl, osl, None)


def proxy_value(
    target: Workload,
    refs: list[Reference],
    knobs: Knobs,
) -> tuple[float, list[tuple[Reference, float, float]]] | None:
    """The target's throughput per accelerator from ``refs`` (one part), or None without any:
    (value, [(reference, its moved value, its weight)])."""
    moved = []
    for ref in refs:
        work = benchmark_work(ref.benchmark, ref.accelerator)
        if work is None:
            continue
        d = distance(target, work, knobs)
        value = ref.value * work.time(knobs.memory_weight) / target.time(knobs.memory_weight)
        moved.append((ref, value, 1.0 / (0.05 + d)))
    if not moved:
        return None
    moved.sort(key=lambda m: -m[2])
    chosen = moved[:NEAREST]
    total = sum(w for _, _, w in chosen)
    log_value = sum(w * math.log(v) for _, v, w in chosen) / total
    return math.exp(log_value), chosen
