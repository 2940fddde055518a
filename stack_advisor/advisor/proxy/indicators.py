"""The stack's own performance indicators (family ``pi``) in the proxy's efficiency.

The collectors measure GEMM TFLOPS at LLM shapes and memory-copy bandwidth per part, stack and
precision. Their share of the part's published peak and bandwidth says how much of the data sheet
a stack reaches on that part. The proxy's prior efficiency (learned over every part's MLPerf
results against the data sheets) assumes a typical part; on a part with indicators the prior is
moved by the part's measured shares over the typical measured shares (their geometric mean over
every part with indicators). The factor shows in the answer; without indicators it is 1 and the
answer says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.memory import part

FAMILY = "pi"
# GEMM shapes of an LLM layer's prefill (collectors.runners: llm-qkv, llm-mlp-up/down); the
# decode shape (16 rows) measures launch overhead, not the part's arithmetic
_PREFILL_SHAPES = ("llm-qkv", "llm-mlp-up", "llm-mlp-down")
_LARGE_COPY = 1 << 26  # elements: 256 MiB of fp32, far beyond any L2
# the PI collectors' framework for an MLPerf stack family that runs on it
_RUNS_ON = {"vllm": "pytorch", "sglang": "pytorch", "pytorch": "pytorch", "jax": "jax"}


@dataclass(frozen=True)
class Indicators:
    """Measured figures of one part (median over results) and their share of the data sheet."""

    accelerator: str
    framework: str  # the PI stack's framework the figures come from
    precision: str
    gemm_tflops: float
    gemm_share: float
    bandwidth_gbs: float
    bandwidth_share: float
    results: int

    @property
    def text(self) -> str:
        return (
            f"{self.accelerator} ({self.framework}, {self.results} PI results): GEMM "
            f"{self.gemm_tflops:,.0f} TFLOPS {self.precision} at LLM shapes "
            f"({100 * self.gemm_share:.0f}% of peak), copy bandwidth "
            f"{self.bandwidth_gbs:,.0f} GB/s ({100 * self.bandwidth_share:.0f}%)"
        )


def _rows(table: ObservationTable) -> dict[tuple[str, str, str], list[float]]:
    """(accelerator, framework, figure) -> values; figure is ``gemm:<dtype>`` or ``copy``."""
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    code = table.family.index.get(FAMILY)
    if code is None:
        return out
    for i in np.flatnonzero((table.family.codes == code) & (table.value > 0)):
        params = table.benchmarks[table.benchmark.vocab[table.benchmark.codes[i]]].parameters
        name = table.bench_name.vocab[table.bench_name.codes[i]]
        if name == "gemm" and params.get("shape") in _PREFILL_SHAPES:
            figure = f"gemm:{params.get('dtype')}"
        elif name == "mem_copy" and int(params.get("elements") or 0) >= _LARGE_COPY:
            figure = "copy"
        else:
            continue
        stack = table.stacks.get(table.stack.vocab[table.stack.codes[i]])
        framework = (stack.framework if stack else None) or "unknown"
        acc = table.physical.vocab[table.physical.codes[i]]
        out[(acc, framework, figure)].append(float(table.value[i]))
    return out


def indicators(
    table: ObservationTable, accelerator: str, precision: str, framework: str | None = None
) -> Indicators | None:
    """The part's measured GEMM (at ``precision``) and bandwidth, from the PI results of the
    framework ``framework`` runs on when there are some, else of any framework on the part
    (the one with most results); None without both figures."""
    rows = _rows(table)
    frameworks = sorted(
        {f for (a, f, _) in rows if a == accelerator},
        key=lambda f: (f != _RUNS_ON.get(framework or ""), -len(rows[(accelerator, f, "copy")])),
    )
    entry = part(accelerator)
    peaks = entry.peak_tflops.as_dict() if entry.peak_tflops else {}
    for fw in frameworks:
        gemm, copy = (
            rows.get((accelerator, fw, f"gemm:{precision}")),
            rows.get((accelerator, fw, "copy")),
        )
        if not gemm or not copy or not peaks.get(precision) or not entry.memory_bw_gbs:
            continue
        g, c = float(np.median(gemm)), float(np.median(copy))
        return Indicators(
            accelerator,
            fw,
            precision,
            g,
            g / float(peaks[precision]),
            c,
            c / float(entry.memory_bw_gbs),
            len(gemm) + len(copy),
        )
    return None


def typical_shares(table: ObservationTable, precision: str) -> tuple[float, float] | None:
    """The geometric mean of every indicated part's GEMM and bandwidth shares."""
    parts = sorted({a for (a, _, _) in _rows(table)})
    found = [ind for a in parts if (ind := indicators(table, a, precision)) is not None]
    if not found:
        return None
    return (
        math.exp(float(np.mean([math.log(i.gemm_share) for i in found]))),
        math.exp(float(np.mean([math.log(i.bandwidth_share) for i in found]))),
    )


def pi_factors(
    table: ObservationTable, accelerator: str, precision: str, framework: str | None = None
) -> tuple[tuple[float, float], Indicators | None]:
    """(compute, memory) factors on the prior efficiency of ``accelerator``, and the
    indicators they come from; (1, 1) and None where the part has none."""
    ind = indicators(table, accelerator, precision, framework)
    typical = typical_shares(table, precision) if ind else None
    if ind is None or typical is None:
        return (1.0, 1.0), None
    return (ind.gemm_share / typical[0], ind.bandwidth_share / typical[1]), ind
