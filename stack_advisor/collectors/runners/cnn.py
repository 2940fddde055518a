"""Framework-neutral CNN throughput, measured the way tf_cnn_benchmarks measures it.

Synthetic ImageNet-shaped data (random images and labels made once, on the device), training
(forward, cross-entropy, backward, SGD with momentum) or forward-only; warm-up batches are
excluded; each step is timed with the device synchronised; images/sec is the batch size over the
mean step time, ± the standard error of the per-step speeds, with jitter = 1.4826 × their median
absolute deviation (``step_statistics``, the formula of tf_cnn_benchmarks' ``get_perf_timing``).

PyTorch (CPU, CUDA) and TensorFlow/Keras (when installed) run the same architectures from
``collectors.models``, so any stack can be compared on the same workload. The quick profile uses
a small CNN, small batch and 64-pixel images; every such choice is in the Benchmark's parameters
so quick and full figures are never mixed up.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from pydantic import ValidationError

from stack_advisor.collectors.models import MODELS
from stack_advisor.collectors.models.params import CnnParams
from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment
from stack_advisor.schema.models import Benchmark, FailureIn, Measurement

log = logging.getLogger(__name__)

FAMILY = "cnn"
JITTER_SCALE = 1.4826  # MAD → standard deviation for normally distributed speeds


@dataclass(frozen=True)
class StepStats:
    images_per_sec: float  # batch / mean step time
    stderr: float  # std of per-step speeds / sqrt(n)
    jitter: float  # 1.4826 × MAD of per-step speeds
    stddev: float
    p10: float
    p90: float
    steps: int


def step_statistics(batch_size: int, step_times_s: list[float]) -> StepStats:
    """tf_cnn_benchmarks' figures from per-step times (seconds). Raises ValueError when empty or
    when a time is not positive."""
    if not step_times_s:
        raise ValueError("no step times to summarise")
    times = np.asarray(step_times_s, dtype=float)
    if np.any(times <= 0) or not np.all(np.isfinite(times)):
        raise ValueError(f"step times must be positive and finite, got {step_times_s!r}")
    speeds = batch_size / times
    std = float(np.std(speeds))
    return StepStats(
        images_per_sec=float(batch_size / np.mean(times)),
        stderr=std / math.sqrt(len(speeds)),
        jitter=float(JITTER_SCALE * np.median(np.abs(speeds - np.median(speeds)))),
        stddev=std,
        p10=float(np.percentile(speeds, 10)),
        p90=float(np.percentile(speeds, 90)),
        steps=len(speeds),
    )


def reported_spread(stats: StepStats) -> tuple[float | None, float | None, str]:
    """(p10, p90, note) to report beside the run's throughput. The headline is batch / mean step
    time; a few slow steps can put it below the per-step p10, and then the per-step percentiles
    do not describe it: they are left out and the note says so."""
    if stats.p10 <= stats.images_per_sec <= stats.p90:
        return stats.p10, stats.p90, ""
    return (
        None,
        None,
        (
            f"; per-step p10..p90 {stats.p10:.1f}..{stats.p90:.1f} left out: slow "
            f"steps put the run's throughput outside them"
        ),
    )


PROFILES: dict[str, dict[str, Any]] = {
    "quick": dict(
        model="small_cnn", batch_size=8, image_size=64, num_batches=12, num_warmup_batches=2
    ),
    "full": dict(
        model="resnet50", batch_size=64, image_size=224, num_batches=100, num_warmup_batches=10
    ),
}


def _framework_available(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def params_for(ctx: RunContext) -> CnnParams:
    """Profile defaults, then ``ctx.options``. Raises InvalidInput naming the field and value."""
    values = dict(PROFILES[ctx.profile])
    framework = ctx.options.get("framework", "auto")
    if framework == "auto":
        framework = "torch" if _framework_available("torch") else "tensorflow"
    values["framework"] = framework
    known = set(CnnParams.model_fields) - {"framework"}
    unknown = sorted(set(ctx.options) - known - {"framework"})
    if unknown:
        raise InvalidInput(
            f"cnn: unknown option(s) {', '.join(unknown)}; valid: "
            f"{', '.join(sorted(known | {'framework'}))}"
        )
    values.update({k: v for k, v in ctx.options.items() if k in known})
    try:
        params = CnnParams(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"cnn option {field}={first.get('input')!r} is invalid: {first['msg']}"
        ) from exc
    if params.model not in MODELS:
        raise InvalidInput(
            f"cnn option model={params.model!r} is unknown; valid: {', '.join(MODELS)}"
        )
    return params


class StepTimer(Protocol):
    """One framework's training or inference step on synthetic data, built once."""

    label: str  # e.g. "torch 2.5.1 cpu, 2 threads"

    def step(self) -> None:
        """Run one step (used for warm-up; may return before the device is done)."""

    def timed_step(self) -> float:
        """Run one step and return its duration in seconds, measured with the device
        synchronised (CUDA events on GPU)."""


class CnnRunner:
    name = "cnn"
    description = (
        "CNN training/inference throughput on synthetic ImageNet-shaped data (PyTorch or Keras)"
    )

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        params = params_for(ctx)
        if not _framework_available(params.framework):
            extra = "torch" if params.framework == "torch" else "tensorflow"
            raise MissingEnvironment(
                f"cnn: framework {params.framework!r} is not installed in this Python: "
                f"pip install 'stack-advisor[{extra}]' (or --option framework=...)"
            )
        if params.framework == "torch":
            from stack_advisor.collectors.models import torch_bench as backend
        else:
            from stack_advisor.collectors.models import keras_bench as backend  # type: ignore[no-redef]
        device = backend.resolve_device(ctx.device)
        benchmark = Benchmark(family=FAMILY, name=params.model, parameters=params.identity(device))
        result = RunnerResult(stack_extra=backend.stack_facts())
        try:
            timer = backend.prepare(params, device)
            times = time_steps(timer, params, progress)
        except (RuntimeError, ValueError, MemoryError) as exc:  # OOM, unsupported dtype on device
            log.warning("cnn %s on %s failed: %s", params.model, device, exc)
            result.failures.append(
                FailureIn(
                    benchmark=benchmark,
                    stage="run",
                    error_class=type(exc).__name__,
                    message=str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__,
                    log_tail=str(exc)[-4000:] or None,
                )
            )
            return result
        stats = step_statistics(params.batch_size, times)
        p10, p90, spread_note = reported_spread(stats)
        result.measurements.append(
            Measurement(
                benchmark=benchmark,
                metric="images_per_sec",
                value=stats.images_per_sec,
                unit="images/s",
                higher_is_better=True,
                samples=stats.steps,
                p10=p10,
                p90=p90,
                stddev=stats.stddev,
                cv=stats.stddev / stats.images_per_sec if stats.images_per_sec > 0 else None,
                note=(
                    f"{stats.images_per_sec:.1f} +/- {stats.stderr:.1f} images/sec "
                    f"(jitter = {stats.jitter:.1f}); {stats.steps} timed steps after "
                    f"{params.num_warmup_batches} warm-up; {timer.label}{spread_note}"
                ),
            )
        )
        return result


def time_steps(timer: StepTimer, params: CnnParams, progress: Progress | None) -> list[float]:
    """Warm-up steps (not timed), then timed steps (seconds each, device synchronised)."""
    total = params.num_warmup_batches + params.num_batches
    for i in range(params.num_warmup_batches):
        timer.step()
        if progress:
            progress(f"warm-up {i + 1}/{params.num_warmup_batches}", (i + 1) / total)
    times: list[float] = []
    for i in range(params.num_batches):
        times.append(timer.timed_step())
        if progress:
            progress(
                f"step {i + 1}/{params.num_batches}", (params.num_warmup_batches + i + 1) / total
            )
    return times


register_runner(CnnRunner())
