"""The count scaling of MLPerf Training figures and the budget a candidate runs at
(``stack_advisor.advisor.estimate.training`` explains the method): the scaling line, the pairs
it is fitted to, and the peak figures a transfer scales by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_spec
from stack_advisor.advisor.estimate.query import SliceKey

FAMILY = "mlperf-training"
X0 = math.log(8.0)  # the line's centre: a node of 8


def budget_count(budget: int, published_counts: list[int]) -> int:
    """The count a candidate runs at under a budget of ``budget`` accelerators: the most whole
    nodes that fit, a node being the smallest size its systems were published at (a budget
    below one node: the budget itself)."""
    node = min((n for n in published_counts if n > 0), default=1)
    return budget if budget < node else budget // node * node


def budget_refusal(budget: int, published_counts: list[int], benchmark: str) -> str | None:
    """Why a budget cannot be answered: beyond twice the largest system ever published on the
    benchmark, where the count scaling would be extrapolated past anything seen."""
    largest = max(published_counts, default=0)
    if largest and budget > 2 * largest:
        return (
            f"a budget of {budget} accelerators is beyond every published {benchmark} "
            "system (the largest ran "
            f"{largest}); the count scaling is not extrapolated past twice that. Name a "
            f"budget up to {2 * largest}"
        )
    return None


def applies(key: SliceKey, higher_is_better: bool) -> bool:
    """Whether a slice is estimated here: MLPerf Training figures, which fall (time) or rise
    (accelerator-hours) with the count in a way the count scaling learns."""
    return key[0] == FAMILY and not higher_is_better


@dataclass(frozen=True)
class CountScaling:
    """``d log(value) / d log(count) = clip(c0 + c1·(log n − X0), low, high)``."""

    c0: float
    c1: float
    low: float
    high: float
    pairs: int
    source: str  # what it was learned from, for the factor's text

    def slope(self, x: np.ndarray) -> np.ndarray:
        return np.clip(self.c0 + self.c1 * (x - X0), self.low, self.high)

    def log_ratio(self, n_from: float, n_to: float) -> float:
        """log(value at n_to / value at n_from)."""
        if n_from == n_to:
            return 0.0
        grid = np.linspace(math.log(n_from), math.log(n_to), 64)
        s = self.slope(grid)
        return float(np.sum((s[1:] + s[:-1]) / 2 * np.diff(grid)))


@dataclass
class Pairs:
    """Slopes between two counts of one accelerator in one round, with their weights."""

    x: list[float] = field(default_factory=list)  # midpoint log count
    slope: list[float] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)

    def extend(self, other: Pairs) -> None:
        self.x += other.x
        self.slope += other.slope
        self.weight += other.weight


def fit_line(p: Pairs) -> tuple[float, float]:
    """(c0, c1) of the weighted least-squares line through the pairs (flat with one count)."""
    w = np.asarray(p.weight)
    x = np.asarray(p.x) - X0
    y = np.asarray(p.slope)
    if len(set(p.x)) < 2:
        return float(np.average(y, weights=w)), 0.0
    design = np.stack([np.ones_like(x), x], axis=1) * np.sqrt(w)[:, None]
    coef, *_ = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)
    return float(coef[0]), float(coef[1])


def peaks(name: str) -> tuple[float, float] | None:
    """(16-bit peak compute, bandwidth): training runs in bf16/fp16, not int8."""
    spec = accelerator_spec(name)
    compute = spec.figure("bf16_tflops") or spec.figure("fp16_tflops")
    bandwidth = spec.figure("memory_bw_gbs")
    return (float(compute), float(bandwidth)) if compute and bandwidth else None
