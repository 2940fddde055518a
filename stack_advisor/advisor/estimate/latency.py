"""LLM serving latency (p99 time to first token, time per output token): how sure an estimate is,
and whether a candidate meets a stated limit.

Estimates of TTFT/TPOT come from the same hierarchy as every figure
(``stack_advisor.advisor.estimate.index``: observed, interpolated from the accelerator's other
results, transferred from its peers by specs, refused). What differs is the interval. A p99 latency
under a Server or Interactive limit is mostly a serving-configuration choice (how close to the limit
the submitter tuned the load), so two systems with the same accelerator differ by up to 4x within
one round. The index calibrates observed and interpolated figures on round-to-round replays, which a
knowledge base with one round of latency results does not have; it would then borrow the whole
family's throughput residuals, far narrower than latency's. Here instead, each latency result is
replayed within its round: as the median of the same accelerator's other systems (interpolated) and
of its own configuration's other results (observed). The index uses these where its own cell has
fewer than ``MIN_RESIDUALS``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.results import Basis

METRICS = ("ttft_p99_ms", "tpot_p99_ms")  # the figures serving limits are checked against
MIN_RESIDUALS = 20
LEVEL_Q = (0.1, 0.5, 0.9)


def applies(key: tuple[str, ...]) -> bool:
    """Whether a slice (family, benchmark, scenario, metric, division) is a serving latency."""
    return key[3] in METRICS


class LatencyCalibration:
    """Within-round replays of the latency slices of one evidence index (computed on first use)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._pools: dict[tuple[Basis, str, str], np.ndarray] | None = None

    def quantiles(self, key: tuple[str, ...], basis: Basis) -> tuple[float, float, float] | None:
        """p10, median and p90 of the within-round log residuals of ``basis`` for the slice's
        (division, metric); None where there are fewer than ``MIN_RESIDUALS``."""
        values = self.pools().get((basis, key[4], key[3]))
        if values is None or len(values) < MIN_RESIDUALS:
            return None
        lo, mid, hi = quantiles(values, LEVEL_Q)
        return float(lo), float(mid), float(hi)

    def pools(self) -> dict[tuple[Basis, str, str], np.ndarray]:
        if self._pools is None:
            out: dict[tuple[Basis, str, str], list[float]] = defaultdict(list)
            for key, by_acc in self.index.slices.items():
                if applies(key):
                    for rows in by_acc.values():
                        self._replay(rows, (key[4], key[3]), out)
            self._pools = {k: np.asarray(v) for k, v in out.items()}
        return self._pools

    def _replay(
        self,
        rows: np.ndarray,
        cell: tuple[str, str],
        out: dict[tuple[Basis, str, str], list[float]],
    ) -> None:
        t, ix = self.index.table, self.index
        by_round: dict[float, list[int]] = defaultdict(list)
        for r in rows.tolist():
            by_round[float(ix.round_no[r])].append(r)
        for members in by_round.values():
            systems = np.asarray([t.system.codes[r] for r in members])
            candidates = np.asarray([t.candidate.codes[r] for r in members])
            values = np.asarray([float(t.value[r]) for r in members])
            for i, v in enumerate(values.tolist()):
                others = values[systems != systems[i]]  # another system of the same accelerator
                if len(others):
                    out[(Basis.INTERPOLATED, *cell)].append(math.log(v / median(others)))
                same = values[(candidates == candidates[i]) & (np.arange(len(values)) != i)]
                if len(same):
                    out[(Basis.OBSERVED, *cell)].append(math.log(v / median(same)))


def limit_verdict(limit: float, name: str, what: str, est: Any) -> tuple[str | None, str]:
    """(why a candidate is excluded, or None; what was checked) for an estimated latency
    against a stated limit: excluded when even the interval's low end is above the limit; kept
    with the estimate shown when the interval straddles it."""
    low, high, value = est.low, est.high, est.value
    text = f"{what} p99 estimated {value:.0f} ms (80% {low:.0f}..{high:.0f}, {est.basis.value})"
    if low > limit:
        return f"estimated {what} p99 above {name}={limit:g} ms: {text}", text
    if high > limit:
        return None, f"{text}: may exceed {name}={limit:g} ms"
    return None, f"{text} <= {name}={limit:g} ms"
