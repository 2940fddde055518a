"""What a workload adds beyond ranking one metric: serving latency limits (LLM time to first token
and per output token) and the systems behind multi-node results (node count, interconnect); the
gang placement itself is ``stack_advisor.advisor.manifests.gang``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.latency import limit_verdict
from stack_advisor.advisor.estimate.latency_limit import limit_ms
from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.workload import Workload

LIMITED = (("tpot_p99_ms", "time per output token"), ("ttft_p99_ms", "time to first token"))


def beyond_limits(index: EvidenceIndex, q: Query) -> list[str]:
    """For a throughput estimated (not measured) in a serving scenario with published p99
    latency limits: the limits its own latency estimate lies wholly above. A valid run at that
    throughput is then not expected, which the figure alone would not say."""
    out: list[str] = []
    if q.division != "closed":
        return out
    for metric, what in LIMITED:
        limit = limit_ms(q.family, q.benchmark, q.scenario, metric)
        if limit is None:
            continue
        est = index.estimate(dataclasses.replace(q, metric=metric))
        value, low, high = est.value, est.low, est.high
        if est.basis is Basis.UNSUPPORTED or value is None or low is None or high is None:
            continue
        if low > limit:
            out.append(
                f"its estimated p99 {what}, {value:,.4g} ms (80% {low:,.4g}-"
                f"{high:,.4g}), lies wholly above the published {q.scenario} limit of "
                f"{limit:g} ms: a valid {q.scenario} run at this throughput is not expected"
            )
    return out


def latency_exclusions(
    table: ObservationTable, bench_rows: np.ndarray, workload: Workload
) -> dict[int, str]:
    """Candidate code → why it is excluded, for candidates whose observed latency (worst p99 over
    their observations of this benchmark) breaks a limit the workload states."""
    out: dict[int, str] = {}
    for name, (limit, metric, what) in workload.latency_limits().items():
        code = table.metric.code(metric)
        if code < 0:
            continue
        rows = bench_rows[table.metric.codes[bench_rows] == code]
        worst: dict[int, float] = {}
        for cand, value in zip(table.candidate.codes[rows].tolist(), table.value[rows].tolist()):
            worst[cand] = max(value, worst.get(cand, value))
        for cand, value in worst.items():
            if value > limit and cand not in out:
                out[cand] = f"observed {what} p99 above {name}={limit:g} ms"
    return out


def latency_evidence(
    table: ObservationTable, bench_rows: np.ndarray, workload: Workload, candidate: int
) -> tuple[list[str], list[str]]:
    """(checked, unchecked): the limits this candidate was checked against, with its observed
    p99, and those it has no observation for."""
    checked, unchecked = [], []
    for name, (limit, metric, what) in workload.latency_limits().items():
        code = table.metric.code(metric)
        rows = (
            bench_rows[
                (table.metric.codes[bench_rows] == code)
                & (table.candidate.codes[bench_rows] == candidate)
            ]
            if code >= 0
            else bench_rows[:0]
        )
        if len(rows):
            checked.append(
                f"{what} p99 {float(table.value[rows].max()):.0f} ms <= {name}={limit:g} "
                "ms (observed)"
            )
        else:
            unchecked.append(f"{name} not checked: no observed {what} for this configuration")
    return checked, unchecked


def estimated_limits(
    index: Any, workload: Workload, base: Query, candidate: int
) -> tuple[str | None, list[str]]:
    """For a configuration without an observed TTFT/TPOT on this benchmark (``candidate``: its
    code, -1 when never observed): each stated limit checked against the latency estimated for
    it by the same hierarchy (``stack_advisor.advisor.estimate.latency``). Returns (why it is
    excluded, or None; what was checked or why it could not be)."""
    table = index.table
    checks: list[str] = []
    for name, (limit, metric, what) in workload.latency_limits().items():
        code = table.metric.code(metric)
        if (
            code >= 0
            and candidate >= 0
            and bool(((table.metric.codes == code) & (table.candidate.codes == candidate)).any())
        ):
            continue  # observed: checked against the observation (latency_exclusions)
        est = index.estimate(dataclasses.replace(base, metric=metric))
        if est.basis is Basis.UNSUPPORTED or est.value is None:
            continue  # stays "not checked" (``latency_evidence``)
        excluded, text = limit_verdict(limit, name, what, est)
        if excluded:
            return excluded, checks
        checks.append(text)
    return None, checks


def system_details(table: ObservationTable, rows: np.ndarray) -> dict[str, str]:
    """Nodes, accelerators per node and interconnect as the systems behind ``rows`` publish them
    (the most common value of each, ties to the first seen; left out when never given)."""
    out: dict[str, str] = {}
    values = table.system.values(rows) if len(rows) else []
    for i, name in enumerate(("nodes", "accelerators_per_node", "interconnect")):
        seen = [v[i] for v in values if v and v[i]]
        if seen:
            out[name] = Counter(seen).most_common(1)[0][
                0
            ]  # not max(set(...)): set order varies per process
    return out
