"""Timing done right: warm-up, device synchronisation, repeats until the median is stable.

A ``Kernel`` knows how to run its operation once and how to time ``number`` runs with the device
synchronised (CUDA events on GPU, a wall clock around a synchronised region elsewhere).
``measure`` warms up, batches very short operations so a sample outlasts the timer's resolution,
then takes samples until the median is known to ``target_rel_error`` (its standard error from the
median absolute deviation), the time budget is spent, or ``max_repeats`` is reached — never fewer
than ``min_repeats``. ``summarise`` turns samples into median, p10/p90, stddev and the
coefficient of variation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

MAD_TO_SIGMA = 1.4826  # median absolute deviation → standard deviation (normal data)
MEDIAN_EFFICIENCY = 1.2533  # standard error of the median = 1.2533 σ / sqrt(n) (normal data)
MAX_BATCH = 100_000


class NotSupported(Exception):
    """A backend cannot run this PI with these parameters on this device (the reason says why)."""


def _no_op() -> None:
    return None


@dataclass
class Kernel:
    """One prepared operation. ``run`` launches it (it may return before the device is done);
    ``sync`` waits for the device; ``flush`` evicts caches (L2) between samples; ``session``
    wraps the whole measurement (e.g. a matmul precision setting). ``timer`` replaces the wall
    clock: ``timer(number)`` returns the seconds that ``number`` runs took (CUDA events)."""

    run: Callable[[], object]
    sync: Callable[[], object] = _no_op
    flush: Callable[[], object] | None = None
    session: Callable[[], AbstractContextManager[object]] = nullcontext
    timer: Callable[[int], float] | None = None
    label: str = ""

    def timed(self, number: int, clock: Callable[[], float] = time.perf_counter) -> float:
        """Seconds for ``number`` runs, device synchronised before and after."""
        if self.timer is not None:
            return self.timer(number)
        self.sync()
        start = clock()
        for _ in range(number):
            self.run()
        self.sync()
        return clock() - start


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 2
    min_repeats: int = 5
    max_repeats: int = 200
    budget_s: float = 1.0
    target_rel_error: float = 0.01
    min_sample_s: float = 2e-3
    flush_l2: bool = False

    def __post_init__(self) -> None:
        if self.min_repeats < 3:
            raise ValueError(f"min_repeats must be >= 3 (for p10/p90), got {self.min_repeats}")
        if self.max_repeats < self.min_repeats:
            raise ValueError(
                f"max_repeats ({self.max_repeats}) must be >= min_repeats ({self.min_repeats})"
            )
        if (
            self.warmup < 0
            or self.budget_s <= 0
            or self.target_rel_error <= 0
            or self.min_sample_s < 0
        ):
            raise ValueError(f"invalid timing policy {self!r}")


@dataclass(frozen=True)
class Timing:
    """Seconds per run, one entry per sample; ``number`` runs were timed per sample."""

    seconds: list[float]
    number: int
    stop_reason: str
    warmup: int = 0
    flushed: bool = False
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Summary:
    median: float
    p10: float
    p90: float
    mean: float
    stddev: float
    cv: float
    n: int


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (NumPy's default method), q in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarise(values: Sequence[float]) -> Summary:
    """Median, p10/p90, mean, population stddev and cv (stddev / mean) of positive values."""
    if not values:
        raise ValueError("no samples to summarise")
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"samples must be finite, got {list(values)!r}")
    n = len(values)
    mean = sum(values) / n
    stddev = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    return Summary(
        median=percentile(values, 50),
        p10=percentile(values, 10),
        p90=percentile(values, 90),
        mean=mean,
        stddev=stddev,
        cv=stddev / mean if mean > 0 else 0.0,
        n=n,
    )


def median_rel_error(values: Sequence[float]) -> float:
    """Relative standard error of the median, from the MAD (robust to the odd slow sample)."""
    n = len(values)
    if n < 2:
        return math.inf
    med = percentile(values, 50)
    if med <= 0:
        return math.inf
    mad = percentile([abs(v - med) for v in values], 50)
    return MEDIAN_EFFICIENCY * MAD_TO_SIGMA * mad / math.sqrt(n) / med


def calibrate(kernel: Kernel, min_sample_s: float) -> int:
    """How many runs one sample needs to last at least ``min_sample_s``."""
    if min_sample_s <= 0:
        return 1
    once = kernel.timed(1)
    if once >= min_sample_s:
        return 1
    return min(MAX_BATCH, max(1, math.ceil(min_sample_s / max(once, 1e-9))))


def measure(
    kernel: Kernel,
    policy: TimingPolicy = TimingPolicy(),
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Warm up, calibrate, then sample until the median is stable (see the module docstring).
    With ``flush_l2`` the cache is flushed before every sample and each sample is one run."""
    flush = policy.flush_l2 and kernel.flush is not None
    with kernel.session():
        for _ in range(policy.warmup):
            kernel.timed(1)
        number = 1 if flush else calibrate(kernel, policy.min_sample_s)
        samples: list[float] = []
        start = clock()
        reason = "max_repeats"
        while len(samples) < policy.max_repeats:
            if flush:
                kernel.flush()  # type: ignore[misc]
                kernel.sync()
            samples.append(kernel.timed(number) / number)
            if len(samples) < policy.min_repeats:
                continue
            if median_rel_error(samples) <= policy.target_rel_error:
                reason = "stable"
                break
            if clock() - start >= policy.budget_s:
                reason = "budget"
                break
    return Timing(
        seconds=samples, number=number, stop_reason=reason, warmup=policy.warmup, flushed=flush
    )
