"""What the estimate modules read of ``index.EvidenceIndex``: one Protocol, so the index can call
the scenario, stack-effect, latency-limit and drift estimates without those modules importing
the index (and the index them, in a circle)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from stack_advisor.advisor.estimate.query import Estimate, Query, SliceKey
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.results import Basis

Slices = dict[SliceKey, dict[str, np.ndarray]]
"""Each slice's row arrays by name (``rows``, ``accel``, ...), as the index builds them."""


class RoundTarget(Protocol):
    """What the scenario and stack estimates read of the round drift: the round an answer is
    for, the rounds a slice holds and the parts measured in two of them."""

    def target(self, q: Query, as_of: str) -> float: ...

    def slice_target(self, key: SliceKey, as_of: str) -> float: ...

    def rounds(self, key: SliceKey) -> list[float]: ...

    def pairs(self, key: SliceKey, old: float, new: float) -> list[tuple[str, float]]: ...


class EvidenceIndex(Protocol):
    """The index's columns and the few answers other estimate modules ask of it."""

    table: ObservationTable
    slices: Slices
    accel: np.ndarray
    unit: np.ndarray
    round_no: np.ndarray
    raw_names: dict[str, str]

    def higher_is_better(self, key: SliceKey) -> bool: ...

    def latest(self, rows: np.ndarray, upto: float = ...) -> np.ndarray: ...

    def quantiles(self, key: SliceKey, basis: Basis) -> tuple[float, float, float]: ...

    def scenarios(self, family: str, benchmark: str) -> list[str]: ...

    def benchmarks(self, family: str) -> list[str]: ...

    @property
    def round_drift(self) -> RoundTarget: ...

    def estimate(self, q: Query) -> Estimate: ...
