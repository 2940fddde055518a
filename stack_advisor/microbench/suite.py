"""Run PI cases on backends: prepare, measure, and turn per-run seconds into rates."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from stack_advisor.microbench.backends import Backend
from stack_advisor.microbench.pis import get_pi
from stack_advisor.microbench.timing import (
    NotSupported,
    Summary,
    Timing,
    TimingPolicy,
    measure,
    summarise,
)

log = logging.getLogger(__name__)


@dataclass
class CaseResult:
    pi: str
    pi_version: int
    params: dict[str, Any]
    backend: str
    backend_version: str
    device: str
    status: Literal["ok", "unsupported", "error"]
    metric: str
    unit: str
    rates: list[float] = field(default_factory=list)
    summary: Summary | None = None
    timing: Timing | None = None
    label: str = ""
    message: str = ""
    error_class: str = ""

    @property
    def identity(self) -> dict[str, Any]:
        """The canonical parameters of this case, backend and PI version included."""
        return {
            **self.params,
            "backend": self.backend,
            "device": self.device,
            "pi_version": self.pi_version,
        }


def run_case(
    pi_name: str,
    params: dict[str, Any],
    backend: Backend,
    device: str,
    policy: TimingPolicy,
    measure_fn: Callable[..., Timing] = measure,
) -> CaseResult:
    """One case on one backend. Bad parameters raise pydantic's ValidationError (naming the
    field); an unsupported case or a crash is a result with that status, never a figure."""
    pi = get_pi(pi_name)
    typed = pi.parse(params)
    result = CaseResult(
        pi=pi.name,
        pi_version=pi.version,
        params=typed.model_dump(),
        backend=backend.name,
        backend_version=backend.version(),
        device=device,
        status="ok",
        metric=pi.unit.metric,
        unit=pi.unit.unit,
    )
    try:
        kernel = backend.prepare(pi.name, typed, device)
        flush = bool(getattr(typed, "flush_l2", False))
        timing = measure_fn(kernel, _with_flush(policy, flush))
    except NotSupported as exc:
        result.status, result.message, result.error_class = "unsupported", str(exc), "Unsupported"
        return result
    except Exception as exc:  # OOM, no kernel for a dtype, a framework bug: a crash, never a figure
        log.warning("%s on %s/%s failed: %s", pi.name, backend.name, device, exc)
        result.status, result.error_class = "error", type(exc).__name__
        result.message = (str(exc).splitlines() or [type(exc).__name__])[0][:500]
        return result
    result.label = kernel.label
    result.timing = timing
    result.rates = [pi.rate(typed, s) for s in timing.seconds]
    result.summary = summarise(result.rates)
    return result


def _with_flush(policy: TimingPolicy, flush: bool) -> TimingPolicy:
    if policy.flush_l2 == flush:
        return policy
    from dataclasses import replace

    return replace(policy, flush_l2=flush)
