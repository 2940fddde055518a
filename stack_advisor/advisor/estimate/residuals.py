"""The conformal calibration of ``stack_advisor.advisor.estimate.index``: log residuals of each
basis replayed on a family's own history, pooled per calibration cell, and the cells a basis
reads its p10/p90 from.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.cpu_transfer import cpu_replay
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.query import PoolKey, SliceKey
from stack_advisor.advisor.estimate.transfer_replay import replay
from stack_advisor.advisor.results import Basis

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any

LEVEL = 0.8
QUANTILES = ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2)
SHRINK = (
    20  # pseudo-residuals pulling a slice's spread towards its cell's (few residuals: the cell's)
)
# where a basis has too few residuals anywhere in its family
FALLBACK = {
    Basis.OBSERVED: (-0.25, 0.0, 0.25),
    Basis.INTERPOLATED: (-0.25, 0.0, 0.25),
    Basis.TRANSFERRED: (-0.6, 0.0, 0.5),
}
# (the cell's median, spread, scaled p10/p90, its slices' spreads)
ScaledCell = tuple[float, float, float, float, dict[tuple[str, str], float]]


def residual_quantiles(values: np.ndarray) -> tuple[float, float, float]:
    """(p10, median, p90)."""
    lo, mid, hi = quantiles(values, (QUANTILES[0], 0.5, QUANTILES[1]))
    return float(lo), float(mid), float(hi)


def calibration_cells(
    basis: Basis, division: str, metric: str, way: str | None
) -> tuple[tuple[Any, ...], ...]:
    """The cells ``basis`` reads its quantiles from, first with enough residuals wins.

    Observed and interpolated figures pool the division's metrics that run the same way
    (``way``: "higher"/"lower"; throughputs in queries, samples or tokens per second move alike
    between rounds; a metric new in the last round, tokens per second, has no history of its
    own); an observed configuration varies no more than its accelerator's other results."""
    if basis is Basis.OBSERVED:
        return (
            (Basis.OBSERVED, division, way),
            (Basis.INTERPOLATED, division, way),
            (Basis.OBSERVED, None, None),
        )
    if basis is Basis.INTERPOLATED:
        return ((Basis.INTERPOLATED, division, way), (Basis.INTERPOLATED, None, None))
    return ((Basis.TRANSFERRED, division, metric), (Basis.TRANSFERRED, None, None))


def scaled_cell(pools: dict[PoolKey, np.ndarray], cell: PoolKey) -> ScaledCell:
    """A transfer cell's residuals, each divided by the spread of its own slice (median absolute
    deviation, shrunk towards the cell's by ``SHRINK`` pseudo-residuals): the cell's median and
    spread, the scaled p10/p90 and each slice's spread (``EvidenceIndex._normalised``)."""
    mid = median(pools[cell])
    cell_spread = max(median(np.abs(pools[cell] - mid)), 1e-6)
    spreads: dict[tuple[str, str], float] = {}
    scaled = []
    for k, values in pools.items():
        if len(k) == 5 and k[:3] == cell:
            n = len(values)
            own = median(np.abs(values - mid))
            spreads[(k[3], k[4])] = max((n * own + SHRINK * cell_spread) / (n + SHRINK), 1e-6)
            scaled.append((values - mid) / spreads[(k[3], k[4])])
    lo, hi = quantiles(np.concatenate(scaled), QUANTILES)
    return mid, cell_spread, float(lo), float(hi), spreads


def history_residuals(index: EvidenceIndex, family: str) -> dict[PoolKey, np.ndarray]:
    """Log residuals of each basis on the family's own history: every round predicted from
    the rounds before it (observed: same configuration; interpolated: same accelerator; every
    transition, not the last two: the spread differs from one transition to the next, and
    one or two of them set intervals too narrow for ≤v3.0 → v4.1 and too wide for ≤v4.1 →
    v5.1), and every accelerator from its peers of the same round (transferred: per slice,
    and their cell as the union). Observed and interpolated cells are also pooled per
    (division, "higher"/"lower"): the way the metric runs."""
    out: dict[PoolKey, list[float]] = defaultdict(list)
    for key, by_acc in index.slices.items():
        if key[0] != family:
            continue
        rounds = sorted(
            {float(index.round_no[r]) for rows in by_acc.values() for r in rows.tolist()}
        )
        for acc, rows in by_acc.items():
            _round_to_round(index, key, acc, rows, rounds, out)
        if len(by_acc) >= 2:
            replay(index, key, by_acc, rounds, out)
            cpu_replay(index, key, by_acc, out)
    return _pooled(index, family, out)


def _round_to_round(
    index: EvidenceIndex,
    key: SliceKey,
    acc: str,
    rows: np.ndarray,
    rounds: list[float],
    out: dict[PoolKey, list[float]],
) -> None:
    """One accelerator's interpolated and observed residuals at every round transition: each
    round's results against the latest earlier round's, less the round drift a carry would apply
    (``estimate.drift``)."""
    t = index.table
    cell = (key[4], key[3])
    for rnd in rounds[1:]:  # every transition: how rounds have moved, averaged
        now = rows[index.round_no[rows] == rnd]
        before = rows[index.round_no[rows] < rnd]
        if not len(now) or not len(before):
            continue
        last = index.latest(before)
        ref = median(index.unit[last])
        shift = index.round_drift.shift(key, acc, float(index.round_no[last[0]]), rnd)
        out[(Basis.INTERPOLATED, *cell)].extend((np.log(index.unit[now] / ref) - shift).tolist())
        cand_before = t.candidate.codes[before]
        for r in now.tolist():
            same = before[cand_before == t.candidate.codes[r]]
            if len(same):
                last_same = index.latest(same)
                ref_same = median(index.unit[last_same])
                moved = index.round_drift.shift(key, acc, float(index.round_no[last_same[0]]), rnd)
                out[(Basis.OBSERVED, *cell)].append(math.log(index.unit[r] / ref_same) - moved)


def _pooled(
    index: EvidenceIndex, family: str, out: dict[PoolKey, list[float]]
) -> dict[PoolKey, np.ndarray]:
    """The residual lists as arrays, with the transfer cells as the union of their slices, each
    basis's whole family, and observed/interpolated cells per (division, way the metric runs)."""
    pooled: dict[PoolKey, np.ndarray] = {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
    for k in [k for k in pooled if len(k) == 5]:  # the transfer cells, from their slices
        cell_key = k[:3]
        pooled[cell_key] = (
            np.concatenate([pooled[cell_key], pooled[k]]) if cell_key in pooled else pooled[k]
        )
    ways = {
        (key[4], key[3]): "higher" if index.higher_is_better(key) else "lower"
        for key in index.slices
        if key[0] == family
    }
    by_way: dict[PoolKey, list[np.ndarray]] = defaultdict(list)
    for basis in (Basis.OBSERVED, Basis.INTERPOLATED, Basis.TRANSFERRED):
        parts = [v for k, v in pooled.items() if k[0] is basis and len(k) == 3]
        pooled[(basis, None, None)] = np.concatenate(parts) if parts else np.empty(0)
        if basis is not Basis.TRANSFERRED:
            for own in [
                c for c in pooled if c[0] is basis and len(c) == 3 and (c[1], c[2]) in ways
            ]:
                by_way[(basis, own[1], ways[(own[1], own[2])])].append(pooled[own])
    pooled.update({k: np.concatenate(v) for k, v in by_way.items()})
    return pooled
