"""What spanning nodes does to a part's per-accelerator figure: the factor between one part's
multi-node and single-node results of the same slice and round (issue 41: never a multi-node
result scaled to one node without a factor). An interpolation reads the results of the query's
system class where the part has them; where it has only the other class (GB300's llama3.1-405b
Server results are 72-GPU racks, asked for four in one server) it applies this factor, its
spread in the interval, and says so.

Measured on every shared round (v1.1-v5.1 inference, 24 pairs of LLM throughput on GPUs): a
multi-node result's per-accelerator figure is a median 0.964x the same part's single-node one of
the round (80%: 0.91-1.00x); CPU systems are left out (a CPU count is sockets, not nodes' share).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.references_class import spans_nodes

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any
MIN_CLASS_PAIRS = 8  # fewer pairs: no factor to apply, and the answer says so
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, ClassFactor | None]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ClassFactor:
    """Log median, p10 and p90 of multi-node over single-node per-accelerator figures."""

    log_mid: float
    log_lo: float
    log_hi: float
    pairs: int

    def ratio(self, to_multi: bool) -> float:
        """The factor moving a figure of the other class to a multi-node (or single-node) one."""
        return math.exp(self.log_mid if to_multi else -self.log_mid)

    def spread(self) -> tuple[float, float]:
        """The band's log half-widths (down, up) around the factor, either way."""
        return self.log_mid - self.log_lo, self.log_hi - self.log_mid

    def describe(self, to_multi: bool) -> str:
        kind = "multi-node" if to_multi else "single-node"
        band = f"80% {math.exp(self.log_lo):.2f}-{math.exp(self.log_hi):.2f}x"
        return (
            f"its results are all of {'single-node' if to_multi else 'multi-node'} systems: "
            f"moved to a {kind} one by {self.ratio(to_multi):.3f}x (multi-node per-accelerator "
            f"figures are {math.exp(self.log_mid):.3f}x single-node ones, {band}, from "
            f"{self.pairs} parts with both in one round)"
        )


def class_factor(index: EvidenceIndex, family: str) -> ClassFactor | None:
    """``family``'s factor over its higher-is-better slices, None with fewer than
    ``MIN_CLASS_PAIRS`` pairs (memoised per index)."""
    memo = _CACHE.setdefault(index, {})
    if family not in memo:
        memo[family] = _learn(index, family)
    return memo[family]


def _learn(index: EvidenceIndex, family: str) -> ClassFactor | None:
    logs: list[float] = []
    for key, by_acc in index.slices.items():
        if key[0] != family or not index.higher_is_better(key):
            continue
        for acc, rows in by_acc.items():
            if acc.startswith("mixed") or accelerator_class(index.raw_names.get(acc, acc)) == "cpu":
                continue
            spans = spans_nodes(index, rows)
            if spans.all() or not spans.any():
                continue
            rounds = index.round_no[rows]
            for rnd in sorted(set(rounds.tolist())):
                multi = rows[(rounds == rnd) & spans]
                single = rows[(rounds == rnd) & ~spans]
                if len(multi) and len(single):
                    ratio = np.median(index.unit[multi]) / np.median(index.unit[single])
                    if ratio > 0:
                        logs.append(float(math.log(ratio)))
    if len(logs) < MIN_CLASS_PAIRS:
        return None
    lo, mid, hi = np.quantile(np.asarray(logs), (0.1, 0.5, 0.9))
    return ClassFactor(float(mid), float(min(lo, mid)), float(max(hi, mid)), len(logs))
