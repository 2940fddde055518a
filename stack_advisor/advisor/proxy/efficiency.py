"""The two efficiencies that turn a token's work into time, learned from published results.

A token on a part takes ``FLOPs / (peak x compute) + bytes / (bandwidth x memory)``: the roofline
sum with a compute and a memory efficiency (shares of the part's published peak and bandwidth),
plus the tensor-parallel link's time, which is counted, not fitted (``Point.link_seconds``).
On a part, both are fitted to its references (least squares of ln(published x modelled time)),
shrunk toward the efficiencies of every reference on every part (the prior) by ``strength``: a
part with one reference keeps the prior's balance of the two and moves its level; a part with
many follows its own results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

# ln(efficiency) searched on a grid: 10^-2.5 .. 10^0.8 of the published figure, 0.02 decade apart
_LOG_GRID = np.arange(-2.5, 0.81, 0.02) * math.log(10.0)
_LOG_C, _LOG_M = np.meshgrid(_LOG_GRID, _LOG_GRID, indexing="ij")
_INV_C, _INV_M = np.exp(-_LOG_C), np.exp(-_LOG_M)
# how far from the prior one unit of strength weighs like one reference's squared log error
PRIOR_SCALE = 0.1 * math.log(10.0)


@dataclass(frozen=True)
class Efficiency:
    """Shares of a part's published peak FLOP rate (``compute``) and bandwidth (``memory``)
    that a stack reaches on LLM serving."""

    compute: float
    memory: float

    def seconds(self, flop_seconds: float, byte_seconds: float) -> float:
        """Time of a token whose FLOPs take ``flop_seconds`` at peak and bytes
        ``byte_seconds`` at full bandwidth."""
        return flop_seconds / self.compute + byte_seconds / self.memory

    def scaled(self, compute: float, memory: float) -> Efficiency:
        return Efficiency(self.compute * compute, self.memory * memory)


class Work(Protocol):
    """What one unit of a metric costs on a part (an LLM's output token, a vision model's
    sample, a training run): its time at the part's peak FLOP rate and full bandwidth, and the
    counted (not fitted) link time."""

    @property
    def flop_seconds(self) -> float: ...

    @property
    def byte_seconds(self) -> float: ...

    @property
    def link_seconds(self) -> float: ...

    def seconds(self, eff: Efficiency) -> float: ...


@dataclass(frozen=True)
class Point:
    """One reference for the fit: its token's time at peak and its published throughput."""

    flop_seconds: float
    byte_seconds: float
    value: float  # tokens/s per accelerator
    link_seconds: float = 0.0  # tensor-parallel traffic at the link's bandwidth (not fitted)


def fit_efficiency(
    points: Sequence[Point], prior: Efficiency | None = None, strength: float = 0.0
) -> Efficiency:
    """The efficiencies that make ``points``' modelled throughput closest to their published
    one (squared log error), ``strength`` x the squared distance to ``prior`` added.

    Raises:
        ValueError: no points and no prior.
    """
    if not points and prior is None:
        raise ValueError("fit_efficiency: no points and no prior to fit from")
    loss = np.zeros_like(_LOG_C)
    for p in points:
        modelled = p.flop_seconds * _INV_C + p.byte_seconds * _INV_M + p.link_seconds
        loss += np.log(p.value * modelled) ** 2
    if prior is not None and strength > 0:
        dc = _LOG_C - math.log(prior.compute)
        dm = _LOG_M - math.log(prior.memory)
        loss += strength * (dc**2 + dm**2) / PRIOR_SCALE**2
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return Efficiency(float(math.exp(_LOG_GRID[i])), float(math.exp(_LOG_GRID[j])))
