"""Micro-benchmarks (performance indicators): pure measurement kernels, parameters in, numbers
out. No I/O and nothing from the collectors or the store; ``collectors.runners.pi`` stores
results."""

from stack_advisor.microbench.pis import PIS, PerformanceIndicator, get_pi
from stack_advisor.microbench.profiles import Case, cases, policy
from stack_advisor.microbench.suite import CaseResult, run_case
from stack_advisor.microbench.timing import (
    Kernel,
    NotSupported,
    Summary,
    Timing,
    TimingPolicy,
    measure,
    summarise,
)

__all__ = [
    "PIS",
    "Case",
    "CaseResult",
    "Kernel",
    "NotSupported",
    "PerformanceIndicator",
    "Summary",
    "Timing",
    "TimingPolicy",
    "cases",
    "get_pi",
    "measure",
    "policy",
    "run_case",
    "summarise",
]
