"""Medians and quantiles of small 1-D float arrays, equal to numpy's (``np.median``,
``np.quantile`` with the default linear method) to the last bit.

An answer takes hundreds of them over a handful of values each; numpy's general versions spend
most of their time in dispatch and NaN checks (and the first ``np.median`` imports ``numpy.ma``),
which was a fifth of a warm ``advisor recommend``. These sort once and index. NaN in the input is
the caller's bug here (numpy would return NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def median(values: np.ndarray | Sequence[float]) -> float:
    """``float(np.median(values))`` for a non-empty 1-D array."""
    v = sorted(values.tolist() if isinstance(values, np.ndarray) else values)
    n = len(v)
    if not n:
        raise ValueError("median of an empty array")
    half = n // 2
    return float(v[half]) if n % 2 else (v[half - 1] + v[half]) / 2


def median_rows(samples: np.ndarray) -> np.ndarray:
    """``np.median(samples, axis=1)`` for a 2-D array."""
    ordered = np.sort(samples, axis=1)
    half = ordered.shape[1] // 2
    middle: np.ndarray = (
        ordered[:, half] if ordered.shape[1] % 2 else (ordered[:, half - 1] + ordered[:, half]) / 2
    )
    return middle


def quantile(values: np.ndarray | Sequence[float], q: float) -> float:
    """``float(np.quantile(values, q))`` (linear interpolation) for a non-empty 1-D array."""
    return quantiles(values, (q,))[0]


def quantiles(values: np.ndarray | Sequence[float], qs: Sequence[float]) -> list[float]:
    """``np.quantile(values, qs)`` as floats: one sort for all of ``qs``."""
    v = sorted(values.tolist() if isinstance(values, np.ndarray) else values)
    n = len(v)
    if not n:
        raise ValueError("quantile of an empty array")
    out = []
    for q in qs:
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        t = pos - lo
        a, b = float(v[lo]), float(v[hi])
        diff = b - a
        # numpy's _lerp: from the nearer end, so t = 1 gives b exactly
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out
