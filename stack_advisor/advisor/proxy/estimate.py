"""Basis ``proxy``: a model the knowledge base has no results for, from the published results of
the other models on the same accelerator and stack family.

Each reference is one (benchmark, accelerator, framework) median throughput per accelerator in
MLPerf's latest round that holds it. A point's time per output token is its work
(``stack_advisor.advisor.proxy.work``: prefill and decode FLOPs at the part's peak, weight and KV
bytes at its bandwidth) over a compute and a memory efficiency fitted to the part's references and
shrunk toward every part's (``stack_advisor.advisor.proxy.efficiency``); the shrinkage's strength is
learned by held-out error. The interval is the spread of the same procedure's errors on models
held out (``stack_advisor.advisor.proxy.validation``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.efficiency import Efficiency, Point, Work, fit_efficiency
from stack_advisor.advisor.proxy.memory import default_precision, max_batch, part, usable_bytes
from stack_advisor.advisor.proxy.model import ModelSpec, catalogue_configs, from_catalogue
from stack_advisor.advisor.proxy.work import Traffic, link_bytes, token_work
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput

FAMILY = "mlperf-inference"
METRIC = "tokens_per_second"
KV_SHARE = 0.5  # a replica's degree leaves at least this share of its memory to the KV cache


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
    link_seconds: float = 0.0  # tensor-parallel all-reduce bytes / the link's bandwidth
    tp: int = 1  # the tensor-parallel degree the batch was sized at

    def seconds(self, eff: Efficiency) -> float:
        return eff.seconds(self.flop_seconds, self.byte_seconds) + self.link_seconds


# (benchmark, accelerator) -> the work of one unit of its metric there (None: not countable)
WorkOf = Callable[[str, str], Work | None]


def llm_benchmarks() -> list[str]:
    """MLPerf LLM benchmarks whose model's published config the proxy holds."""
    return sorted(catalogue_configs())


def references(table: ObservationTable, scenario: str) -> list[Reference]:
    """Every (LLM benchmark, accelerator, framework) of the closed division with tokens/s
    results in ``scenario``: the latest round's median per accelerator."""
    return collect(table, scenario, set(llm_benchmarks()), METRIC, FAMILY)


def collect(
    table: ObservationTable,
    scenario: str,
    known: set[str],
    metric: str,
    family: str,
    *,
    per_count: bool = True,
    invert: bool = False,
    scale: float = 1.0,
) -> list[Reference]:
    """Every (benchmark of ``known``, accelerator, framework) of ``family``'s closed division
    with ``metric`` results in ``scenario``: the latest round's median per accelerator (the
    value over the result's accelerator count with ``per_count``; 1 / value with ``invert``, so
    a cost such as accelerator-hours becomes a rate), times ``scale``."""
    parts = load_catalog().accelerators
    groups: dict[tuple[str, str, str], dict[str, list[tuple[float, str]]]] = {}
    for i in np.flatnonzero(table.value > 0):
        if table.metric.vocab[table.metric.codes[i]] != metric:
            continue
        if table.family.vocab[table.family.codes[i]] != family:
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
        count = max(1.0, float(table.count[i])) if per_count else 1.0
        value = float(table.value[i])
        rnd = table.round.vocab[table.round.codes[i]]
        groups.setdefault((bench, acc, framework), {}).setdefault(rnd, []).append(
            (
                scale * (1.0 / value if invert else value) / count,
                table.stack.vocab[table.stack.codes[i]],
            )
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


def benchmark_traffic(benchmark: str) -> tuple[int, int]:
    """A benchmark's input and output tokens per request: the catalogue's rules maximum input and
    reference generation limit (``max_seq_len``, ``max_output_tokens``), or the dataset means
    (``mean_input_tokens``, ``mean_output_tokens``, each published with its source) once every
    MLPerf LLM publishes both.

    All references must be described alike: the fitted efficiencies absorb how far a
    description is from the real traffic, so one benchmark by its means among the others by
    their maxima is moved away from them. Measured on the starter KB (docs/proxy.md) with
    llama3.1-405b alone by its published means (9,428 in, 684.68 out): LOO median APE Offline
    19.8% -> 24.8%, Server 22.8% -> 29.6%, llama3.1-405b itself Offline 46.0% -> 94.5%."""
    entry = load_catalog().benchmark(FAMILY, benchmark)
    if entry is None or not entry.max_seq_len or not entry.max_output_tokens:
        raise InvalidInput(f"benchmark {benchmark!r}: the catalogue has no sequence lengths")
    if entry.mean_input_tokens and entry.mean_output_tokens and _every_mean_published():
        isl, osl = entry.mean_input_tokens.value, entry.mean_output_tokens.value
        return max(1, round(isl)), max(1, round(osl))
    return entry.max_seq_len, entry.max_output_tokens


@lru_cache(maxsize=1)
def _every_mean_published() -> bool:
    entries = [load_catalog().benchmark(FAMILY, b) for b in llm_benchmarks()]
    return all(e and e.mean_input_tokens and e.mean_output_tokens for e in entries)


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
    fill, tp = 0, 1
    for tp in TP_DEGREES:  # the smallest degree whose weights leave half the memory to the cache
        fill = max_batch(model, accelerator, tp, isl + osl, precision)
        if fill and model.weight_bytes(precision) <= tp * usable_bytes(entry) * KV_SHARE:
            break
    if not fill:
        return None
    batch = min(concurrency, fill) if concurrency else fill
    traffic = Traffic(isl=isl, osl=osl, batch=batch)
    work = token_work(model, traffic, precision)
    link = link_bytes(model, traffic, tp)
    link_bw = entry.interconnect_gbs / 2 * 1e9 if entry.interconnect_gbs else 0.0  # one way
    return Workload(
        model=model,
        traffic=traffic,
        precision=precision,
        flop_seconds=work.flops / (peak * 1e12),
        byte_seconds=work.bytes / (entry.memory_bw_gbs * 1e9),
        # a rank's bytes per token of its replica; tp ranks share the replica's tokens, so an
        # accelerator spends tp x that per token of its own (none where the link is unknown)
        link_seconds=tp * link / link_bw if link_bw else 0.0,
        tp=tp,
    )


def benchmark_work(benchmark: str, accelerator: str) -> Workload | None:
    isl, osl = benchmark_traffic(benchmark)
    return point_work(from_catalogue(benchmark), accelerator, isl, osl, None)


@dataclass(frozen=True)
class Moved:
    """A proxy figure and how it was made: the part's efficiencies, the prior they were shrunk
    toward, and what each reference alone implies for the target (its value x its time over the
    target's)."""

    value: float
    efficiency: Efficiency
    prior: Efficiency
    references: list[tuple[Reference, float]]


def points(
    refs: list[Reference], work_of: WorkOf | None = None
) -> list[tuple[Reference, Work, Point]]:
    """The references whose work the proxy can count (a published peak and bandwidth);
    ``work_of`` (benchmark, accelerator) -> its work, the LLMs' ``benchmark_work`` by default."""
    out = []
    for ref in refs:
        work = (work_of or benchmark_work)(ref.benchmark, ref.accelerator)
        if work is not None:
            point = Point(work.flop_seconds, work.byte_seconds, ref.value, work.link_seconds)
            out.append((ref, work, point))
    return out


def prior_efficiency(refs: list[Reference], work_of: WorkOf | None = None) -> Efficiency:
    """The efficiencies that fit every reference on every part at once (the shrinkage target).

    Raises:
        InvalidInput: no reference with countable work.
    """
    got = [p for _, _, p in points(refs, work_of)]
    if not got:
        names = sorted({f"{r.benchmark} on {r.accelerator}" for r in refs})[:5]
        raise InvalidInput(
            f"references: none of {len(refs)} ({', '.join(names) or 'none given'}) has countable "
            "work (a part with a published peak and bandwidth whose memory holds the model)"
        )
    return fit_efficiency(got)


def proxy_value(
    target: Work,
    refs: list[Reference],
    prior: Efficiency,
    strength: float,
    work_of: WorkOf | None = None,
) -> Moved | None:
    """The target's throughput per accelerator from ``refs`` (one part), or None without any:
    the part's efficiencies fitted to them, shrunk toward ``prior`` by ``strength``."""
    got = points(refs, work_of)
    if not got:
        return None
    eff = fit_efficiency([p for _, _, p in got], prior, strength)
    time = target.seconds(eff)
    moved = [(ref, ref.value * work.seconds(eff) / time) for ref, work, _ in got]
    return Moved(1.0 / time, eff, prior, moved)
