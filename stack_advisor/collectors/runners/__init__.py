"""Benchmark runners: each turns a profile into measurements (or failures).

A runner module calls ``register_runner`` at import time; ``RUNNER_MODULES`` lists the modules
imported lazily by ``get_runner``/``all_runners`` (so heavy frameworks load only when used).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import FailureIn, Measurement

PROFILES = ("quick", "full")

# name -> module; add a line when adding a runner.
RUNNER_MODULES: dict[str, str] = {
    "pi": "stack_advisor.collectors.runners.pi",
    "tf-cnn": "stack_advisor.collectors.runners.tf_cnn",
    "cnn": "stack_advisor.collectors.runners.cnn",
    "loadgen": "stack_advisor.collectors.runners.loadgen",
    "allreduce": "stack_advisor.collectors.runners.allreduce",
    "numa": "stack_advisor.collectors.runners.numa",
}


def check_runner(name: str) -> str:
    """``name`` if it is a runner; else ValueError listing the valid ones (for field validators)."""
    if name not in RUNNER_MODULES:
        raise ValueError(f"unknown runner {name!r}; valid: {', '.join(RUNNER_MODULES)}")
    return name


def check_profile(name: str) -> str:
    """``name`` if it is a profile; else ValueError listing the valid ones."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; valid: {', '.join(PROFILES)}")
    return name


Progress = Callable[[str, float], None]
"""progress(message, fraction_done in [0, 1])."""


@dataclass
class RunContext:
    profile: str = "quick"
    device: str = "auto"  # "cpu" | "cuda" | "auto"
    run_id: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # runner-specific, e.g. {"pis": [...]}

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise InvalidInput(
                f"profile must be one of {', '.join(PROFILES)}, got {self.profile!r}"
            )


@dataclass
class RunnerResult:
    measurements: list[Measurement] = field(default_factory=list)
    failures: list[FailureIn] = field(default_factory=list)
    # Stack facts only the run itself learns (e.g. the framework a runner loaded).
    stack_extra: dict[str, str] = field(default_factory=dict)


class Runner(Protocol):
    name: str
    description: str

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult: ...


_REGISTRY: dict[str, Runner] = {}


def register_runner(runner: Runner) -> Runner:
    _REGISTRY[runner.name] = runner
    return runner


def get_runner(name: str) -> Runner:
    """Raises InvalidInput naming the valid runners when ``name`` is unknown."""
    if name not in _REGISTRY:
        module = RUNNER_MODULES.get(name)
        if module is None:
            valid = ", ".join(sorted(RUNNER_MODULES))
            raise InvalidInput(f"unknown benchmark {name!r}; valid: {valid}")
        importlib.import_module(module)
    return _REGISTRY[name]
