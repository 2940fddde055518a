"""Why a plan's Job failed, as ``schema.models.Failure`` records: one per failed pod (the Job's
condition, the pod's phase and reason, the collector container's exit code or why it waits, and the
tail of its log when a kubelet can serve it), or one for the Job when no pod ran."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stack_advisor.collectors.plan.model import Cell
from stack_advisor.schema.models import Failure, Host, Placement, Provenance, SourceKind

PROVENANCE_SOURCE = "stack-advisor-planner"

LogTail = Callable[[str, str], tuple[str | None, str | None]]
"""log_tail(pod, container) -> (text, why there is none)."""


def _container_states(
    status: dict[str, Any], stage: str, error_class: str, parts: list[str]
) -> tuple[str, str, str | None]:
    """(stage, error class, the container that terminated) from the pod's container states; what
    each says is added to ``parts``."""
    container = None
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "terminated" in state:
            term = state["terminated"]
            container = cs["name"]
            error_class = term.get("reason") or "Error"
            parts.append(f"container {cs['name']} exited with code {term.get('exitCode')}")
            if term.get("message"):
                parts.append(term["message"].strip())
        elif "waiting" in state:
            wait = state["waiting"]
            stage, error_class = "setup", wait.get("reason") or "Waiting"
            parts.append(
                f"container {cs['name']} waiting: {wait.get('reason')} "
                f"{wait.get('message') or ''}".strip()
            )
    return stage, error_class, container


def _pod_failure(
    pod: dict[str, Any], name: str, reason: str | None, base: dict[str, Any], log_tail: LogTail
) -> Failure:
    """The failure of one failed pod of Job ``name``."""
    status = pod.get("status") or {}
    meta = pod["metadata"]
    index = (meta.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", "0")
    node = (pod.get("spec") or {}).get("nodeName")
    parts = [f"job {name} failed ({reason or 'no reason given'})"]
    parts.append(
        f"pod {meta['name']} phase Failed"
        + (f" ({status['reason']})" if status.get("reason") else "")
    )
    if status.get("message"):
        parts.append(status["message"])
    stage, error_class, container = _container_states(
        status, "run", status.get("reason") or "PodFailed", parts
    )
    tail = None
    if container:
        tail, why = log_tail(meta["name"], container)
        if why:
            parts.append(why)
    return Failure(
        **base,
        host=Host(name=node) if node else None,
        run_id=f"{name}-r{index}",
        stage=stage,
        error_class=error_class,
        message="; ".join(parts),
        log_tail=tail,
    )


def job_failures(
    cell: Cell,
    job: dict[str, Any],
    reason: str | None,
    pods: list[dict[str, Any]],
    namespace: str,
    log_tail: LogTail,
) -> list[Failure]:
    """One Failure per failed pod of ``job`` (or one for the Job when no pod ran)."""
    name = job["metadata"]["name"]
    provenance = Provenance(
        kind=SourceKind.MEASURED,
        source=PROVENANCE_SOURCE,
        details={"plan": cell.plan, "cell": cell.cell_id, "job": name, "namespace": namespace},
    )
    base: dict[str, Any] = {
        "stack": cell.stack(),
        "accelerator": cell.pool.accelerator_model(),
        "placement": Placement(kind=cell.pool.placement),
        "provenance": provenance,
        "benchmark": cell.benchmark.benchmark_model(),
    }
    failures = [
        _pod_failure(pod, name, reason, base, log_tail)
        for pod in pods
        if (pod.get("status") or {}).get("phase") == "Failed"
    ]
    if not failures:
        stage = "schedule" if reason and "Deadline" in reason else "run"
        failures.append(
            Failure(
                **base,
                run_id=f"{name}-r0",
                stage=stage,
                error_class=(reason or "JobFailed").split(":")[0],
                message=f"job {name} failed ({reason or 'no reason given'}); no failed pod found",
            )
        )
    return failures
