"""The micro-benchmark (PI) suite as a runner: microbench cases → Measurements and Failures.

Options (``advisor collect --option k=v``): ``backends`` (comma list; default numpy, torch, cupy,
jax where installed; ``tensorflow`` only when named), ``pis`` (comma list of PI names to keep).
Each case's Benchmark is ``family="pi"``, ``name=<pi>``, parameters = the PI's typed parameters
plus backend, device and PI version, so figures of different kernels or versions never mix.
"""

from __future__ import annotations

import logging
from typing import Any

from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.microbench import PIS, cases, policy, run_case
from stack_advisor.microbench.backends import (
    BACKEND_MODULES,
    DEFAULT_BACKENDS,
    Backend,
    get_backend,
    installed,
)
from stack_advisor.microbench.suite import CaseResult
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment
from stack_advisor.schema.models import Benchmark, FailureIn, Measurement

log = logging.getLogger(__name__)

FAMILY = "pi"
OPTIONS = ("backends", "pis")


def _names(value: Any, valid: list[str], option: str) -> list[str]:
    items = [
        v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()
    ]
    bad = [v for v in items if v not in valid]
    if bad or not items:
        raise InvalidInput(
            f"pi option {option}={value!r} is invalid; valid names: {', '.join(valid)}"
        )
    return items


def select_backends(ctx: RunContext) -> list[Backend]:
    unknown = sorted(set(ctx.options) - set(OPTIONS))
    if unknown:
        raise InvalidInput(
            f"pi: unknown option(s) {', '.join(unknown)}; valid: {', '.join(OPTIONS)}"
        )
    if "backends" in ctx.options:
        names = _names(ctx.options["backends"], list(BACKEND_MODULES), "backends")
        missing = [n for n in names if not installed(n)]
        if missing:
            raise MissingEnvironment(
                f"pi: backend(s) {', '.join(missing)} not installed in this Python"
            )
    else:
        names = [n for n in DEFAULT_BACKENDS if installed(n)]
    return [get_backend(n) for n in names]


def resolve_device(requested: str, backends: list[Backend]) -> str:
    if requested not in ("auto", "cpu", "cuda"):
        raise InvalidInput(f"device must be auto, cpu or cuda, got {requested!r}")
    has_cuda = any("cuda" in b.devices() for b in backends)
    if requested == "auto":
        return "cuda" if has_cuda else "cpu"
    if requested == "cuda" and not has_cuda:
        raise MissingEnvironment(
            "pi: device 'cuda' requested but no installed backend sees a CUDA device"
        )
    return requested


def measurement_of(result: CaseResult) -> Measurement:
    assert result.summary is not None and result.timing is not None
    s = result.summary
    return Measurement(
        benchmark=Benchmark(family=FAMILY, name=result.pi, parameters=result.identity),
        metric=result.metric,
        value=s.median,
        unit=result.unit,
        higher_is_better=True,
        samples=s.n,
        p10=s.p10,
        p90=s.p90,
        stddev=s.stddev,
        cv=s.cv,
        note=(
            f"median of {s.n} samples ({result.timing.number} run(s) each, {result.timing.warmup} "
            "warm-up, "
            "stopped: "
            f"{result.timing.stop_reason}{', L2 flushed' if result.timing.flushed else ''}); "
            f"{result.label}; {result.backend} {result.backend_version}"
        ),
    )


def failure_of(result: CaseResult) -> FailureIn:
    return FailureIn(
        benchmark=Benchmark(family=FAMILY, name=result.pi, parameters=result.identity),
        # "unsupported" (no kernel for this dtype on this backend) is not a failure of the stack
        stage="unsupported" if result.status == "unsupported" else "run",
        error_class=result.error_class or "Unsupported",
        message=f"{result.backend} {result.backend_version}: {result.message}",
    )


def stack_facts(backends: list[Backend], device: str) -> dict[str, str]:
    names = [b.name for b in backends if device in b.devices()]
    if "torch" in names:
        from stack_advisor.collectors.fingerprint.software import torch_facts

        return torch_facts(device == "cuda")
    primary = next((b for b in backends if b.name == names[0]), None) if names else None
    if primary is None:
        return {}
    facts = {"framework": primary.name, "framework_version": primary.version()}
    if primary.name == "tensorflow" and device == "cuda":
        import tensorflow as tf  # already imported by the backend

        info = tf.sysconfig.get_build_info()
        facts.update(
            {k: str(info[f"{k}_version"]) for k in ("cuda", "cudnn") if info.get(f"{k}_version")}
        )
    return facts


class PiRunner:
    name = "pi"
    description = (
        "micro-benchmark performance indicators: GEMM, conv2d, memory, transfer, attention"
    )

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        backends = select_backends(ctx)
        device = resolve_device(ctx.device, backends)
        selected = cases(ctx.profile, device)
        if "pis" in ctx.options:
            keep = _names(ctx.options["pis"], list(PIS), "pis")
            selected = [c for c in selected if c.pi in keep]
        runnable = [b for b in backends if device in b.devices()]
        result = RunnerResult(stack_extra=stack_facts(backends, device))
        total = max(1, len(selected) * len(runnable))
        done = 0
        timing_policy = policy(ctx.profile, device)
        for backend in runnable:
            for case in selected:
                if progress:
                    progress(
                        f"{backend.name} {case.pi} {case.params.get('dtype', '')}".strip(),
                        done / total,
                    )
                outcome = run_case(case.pi, case.params, backend, device, timing_policy)
                if outcome.status == "ok":
                    result.measurements.append(measurement_of(outcome))
                else:
                    result.failures.append(failure_of(outcome))
                done += 1
        if progress:
            progress("done", 1.0)
        return result


register_runner(PiRunner())
