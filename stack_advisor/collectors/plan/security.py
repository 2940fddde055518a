"""The restricted Pod Security contexts every pod of a plan runs under: the collectors' and the
planner's (non-root, no privilege escalation, read-only root, no capabilities, RuntimeDefault
seccomp)."""

from __future__ import annotations

from typing import Any

from stack_advisor.collectors.plan.model import Plan


def container_security() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security(plan: Plan) -> dict[str, Any]:
    uid = plan.job.run_as_user
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "fsGroup": uid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
