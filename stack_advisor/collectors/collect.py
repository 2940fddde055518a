"""``advisor collect``'s engine: fingerprint the node, run the chosen runners, build result
documents, and hand them to a store, a file, or the API (spooling when it is unreachable).

Runs whose runners report different stacks (e.g. the PI suite on torch and tf-cnn on TensorFlow)
become one document per stack: a document holds exactly one stack. Keys are content-derived and
include the run id, so collecting again with the same ``run_id`` stores nothing twice.
"""

from __future__ import annotations

import logging
import secrets
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from stack_advisor.collectors.fingerprint import Fingerprint, fingerprint_host
from stack_advisor.collectors.runners import RunContext, Runner, RunnerResult, get_runner
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment, Unsupported
from stack_advisor.schema.models import (
    ENVIRONMENT_STAGE,
    HARNESS_STAGE,
    FailureIn,
    Provenance,
    ResultDocument,
    Run,
    SoftwareStack,
    SourceKind,
    utcnow,
)

log = logging.getLogger(__name__)

SOURCE = "stack-advisor-collector"
STACK_KEYS = (
    "framework",
    "framework_version",
    "cuda",
    "cudnn",
    "nccl",
    "driver",
    "tensorrt",
    "python",
)

UNSUPPORTED = HARNESS_STAGE
"""Failure stage of what the benchmark cannot run on this backend (no kernel for a dtype): a harness
limitation, recorded but not a failure of the stack. What the node lacks (a pip extra, a device) is
stage ``environment`` (``MissingEnvironment``)."""

ProgressFactory = Callable[[str], Callable[[str, float], None]]
"""progress_for(runner name) -> progress(message, fraction)."""


def collector_version() -> str:
    try:
        return metadata.version("stack-advisor")
    except metadata.PackageNotFoundError:
        return "0"


def new_run_id(host: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{host}-{stamp}-{secrets.token_hex(3)}"


def merge_stack(base: SoftwareStack, extra: dict[str, str]) -> SoftwareStack:
    """The fingerprinted stack with what a runner learnt: named fields replace, others go to
    ``extra``. When the runner's framework is not the fingerprint's primary one, the primary's
    version moves to ``extra`` (it is still installed) and the runner's takes its place."""
    stack = base.model_copy(deep=True)
    if extra.get("framework") and extra["framework"] != stack.framework:
        if stack.framework and stack.framework_version:
            stack.extra[stack.framework] = stack.framework_version
        stack.extra.pop(extra["framework"], None)
        stack.framework_version = None
    for key, value in extra.items():
        if key in STACK_KEYS:
            setattr(stack, key, value)
        else:
            stack.extra[key] = value
    return stack


@dataclass
class CollectOutcome:
    documents: list[ResultDocument]
    fingerprint: Fingerprint
    run_id: str
    runner_errors: list[str] = field(default_factory=list)


def _failed(name: str, exc: BaseException, stage: str) -> RunnerResult:
    text = str(exc) or type(exc).__name__
    return RunnerResult(
        failures=[
            FailureIn(
                stage=stage,
                error_class=type(exc).__name__,
                message=f"{name}: {text.splitlines()[0][:500]}",
                log_tail=traceback.format_exc()[-4000:],
            )
        ]
    )


def _run_runner(
    runner: Runner,
    ctx: RunContext,
    progress: Callable[[str, float], None] | None,
    errors: list[str],
) -> RunnerResult:
    """One runner's result; a runner that cannot run or crashes gives a failure instead (its
    error added to ``errors``), so the others' results are kept.

    Raises:
        InvalidInput: the runner refused its options.
    """
    try:
        return runner.run(ctx, progress)
    except InvalidInput:
        raise
    except MissingEnvironment as exc:  # a pip extra, a script or a device this node lacks
        log.info("%s: %s", runner.name, exc)
        text = str(exc)
        errors.append(text if text.startswith(f"{runner.name}:") else f"{runner.name}: {text}")
        return _failed(runner.name, exc, ENVIRONMENT_STAGE)
    except Unsupported as exc:  # the caller reports runner_errors; logging it too printed it twice
        log.info("%s: %s", runner.name, exc)
        errors.append(
            str(exc) if str(exc).startswith(f"{runner.name}:") else f"{runner.name}: {exc}"
        )
        return _failed(runner.name, exc, UNSUPPORTED)
    except Exception as exc:  # a crashing runner must not lose the others' results
        log.exception("runner %s crashed", runner.name)
        errors.append(f"{runner.name}: {type(exc).__name__}: {exc}")
        return _failed(runner.name, exc, "run")


def _documents(
    run: Run,
    fp: Fingerprint,
    details: dict[str, str],
    groups: dict[str, tuple[SoftwareStack, RunnerResult]],
) -> list[ResultDocument]:
    """One document per stack the runners ran with, all of one run on one node."""
    provenance = Provenance(kind=SourceKind.MEASURED, source=SOURCE, details=details)
    return [
        ResultDocument(
            run=run,
            provenance=provenance,
            stack=stack,
            accelerator=fp.accelerator,
            placement=fp.placement,
            host=fp.host,
            fingerprint=fp.raw,
            measurements=res.measurements,
            failures=res.failures,
        )
        for stack, res in groups.values()
    ]


def collect(
    benchmarks: list[str],
    profile: str = "quick",
    device: str = "auto",
    run_id: str | None = None,
    options: dict[str, Any] | None = None,
    fingerprint: Fingerprint | None = None,
    progress_for: ProgressFactory | None = None,
) -> CollectOutcome:
    """Fingerprint, run each runner, and build the documents.

    Raises:
        InvalidInput: an unknown benchmark, profile, device or option (nothing is run).
    """
    if not benchmarks:
        raise InvalidInput("choose at least one benchmark (--benchmark)")
    if device not in ("auto", "cpu", "cuda"):
        raise InvalidInput(f"device must be auto, cpu or cuda, got {device!r}")
    runners = [get_runner(name) for name in dict.fromkeys(benchmarks)]  # validates names first
    ctx_args: dict[str, Any] = dict(profile=profile, device=device, options=dict(options or {}))
    RunContext(**ctx_args)  # validates the profile before the (slow) fingerprint
    fp = fingerprint or fingerprint_host()
    run_id = run_id or new_run_id(fp.host.name)
    if not run_id.strip():
        raise InvalidInput("run id must not be blank")
    run = Run(
        run_id=run_id, collector=SOURCE, collector_version=collector_version(), profile=profile
    )
    groups: dict[str, tuple[SoftwareStack, RunnerResult]] = {}
    errors: list[str] = []
    for runner in runners:
        ctx = RunContext(run_id=run_id, **ctx_args)
        progress = progress_for(runner.name) if progress_for else None
        result = _run_runner(runner, ctx, progress, errors)
        stack = merge_stack(fp.stack, result.stack_extra)
        key = stack.stack_id
        if key in groups:
            groups[key][1].measurements.extend(result.measurements)
            groups[key][1].failures.extend(result.failures)
        else:
            groups[key] = (stack, RunnerResult(list(result.measurements), list(result.failures)))
    run.finished_at = utcnow()
    details = {
        "collector_version": run.collector_version,
        "host": fp.host.name,
        "profile": profile,
        "device": device,
        "benchmarks": ",".join(r.name for r in runners),
    }
    documents = _documents(run, fp, details, groups)
    return CollectOutcome(documents=documents, fingerprint=fp, run_id=run_id, runner_errors=errors)
