"""The failure documents of a sweep cell that never ran, or ran only some benchmarks: on the node
as the sweeper sees it, with the stack the matrix asked for (marked as requested: nothing of it was
measured) or the version installed in its environment."""

from __future__ import annotations

import json
from typing import Any

from stack_advisor.collectors.collect import SOURCE, collector_version
from stack_advisor.collectors.plan.model import RUNNER_FAMILIES
from stack_advisor.collectors.sweep.matrix import Cell, SweepBenchmark, SweepMatrix
from stack_advisor.collectors.sweep.outcome import CellOutcome
from stack_advisor.schema.models import (
    Benchmark,
    FailureIn,
    Provenance,
    ResultDocument,
    Run,
    SoftwareStack,
    SourceKind,
    utcnow,
)


def sweep_details(matrix: SweepMatrix, out: CellOutcome, env_key: str | None) -> dict[str, str]:
    """The provenance details every document of a cell carries."""
    return {
        "sweep": matrix.name,
        "sweep_cell": out.cell,
        "sweep_signature": out.signature,
        "sweep_env": env_key or "",
        "sweep_requested": json.dumps(out.requested, sort_keys=True),
        "lock": out.lock,
    }


def _requested_stack(
    matrix: SweepMatrix, fingerprint: Any, cell: Cell, stage: str, installed_version: str | None
) -> SoftwareStack:
    return SoftwareStack(
        driver=fingerprint.stack.driver,
        framework=cell.framework,
        framework_version=installed_version or cell.version,
        cuda=cell.cuda,
        cudnn=cell.cudnn,
        nccl=cell.nccl,
        raw=f"requested by sweep {matrix.name} cell {cell.id}; "
        + ("not run" if stage == "unsupported" else "not installed or not importable"),
    )


def _failures(
    benchmarks: list[SweepBenchmark],
    stage: str,
    error_class: str,
    message: str | list[str],
    log_tail: str,
) -> list[FailureIn]:
    """One failure per benchmark; ``message`` is one for all or one each."""
    messages = [message] * len(benchmarks) if isinstance(message, str) else message
    return [
        FailureIn(
            benchmark=Benchmark(
                family=RUNNER_FAMILIES[b.runner],
                name=b.runner,
                parameters={"profile": b.profile, **b.runner_options()},
            ),
            stage=stage,
            error_class=error_class,
            message=text[:1000],
            log_tail=log_tail[-4000:] or None,
        )
        for b, text in zip(benchmarks, messages, strict=True)
    ]


def failure_document(
    matrix: SweepMatrix,
    fingerprint: Any,
    out: CellOutcome,
    cell: Cell,
    benchmarks: list[SweepBenchmark],
    failure: tuple[str, str, str | list[str], str],
    run_id: str | None,
    installed_version: str | None,
) -> ResultDocument:
    """One document of failures of ``benchmarks`` in this cell; ``failure`` is (stage, error
    class, message, log tail)."""
    stage, error_class, message, log_tail = failure
    now = utcnow()  # one clock reading: a run never finishes before it starts
    run = Run(
        run_id=run_id or out.run_ids[0],
        collector=SOURCE,
        collector_version=collector_version(),
        profile=matrix.benchmarks[0].profile,
        started_at=now,
        finished_at=now,
    )
    details = {
        **sweep_details(matrix, out, out.env_key),
        "host": fingerprint.host.name,
        "device": matrix.device,
    }
    return ResultDocument(
        run=run,
        provenance=Provenance(kind=SourceKind.MEASURED, source=SOURCE, details=details),
        stack=_requested_stack(matrix, fingerprint, cell, stage, installed_version),
        accelerator=fingerprint.accelerator,
        placement=fingerprint.placement,
        host=fingerprint.host,
        fingerprint={},
        failures=_failures(benchmarks, stage, error_class, message, log_tail),
    )
