"""The planner's own objects for a scheduled plan: the ConfigMap holding the plan and the
``batch/v1`` CronJob that runs ``advisor plan submit`` with it, so the pools' concurrency limits and
``--skip-observed`` hold for scheduled runs too."""

from __future__ import annotations

from typing import Any

import yaml

from stack_advisor.collectors.plan.model import Plan
from stack_advisor.collectors.plan.security import container_security, pod_security

PLAN_MOUNT = "/etc/stack-advisor/plan"


def plan_document(plan: Plan) -> str:
    """The plan as canonical YAML (what the scheduled planner reads from its ConfigMap)."""
    data = plan.model_dump(mode="json", by_alias=True, exclude_none=True)
    if plan.job.spool_claim is None:  # an explicit null (no claim), not the default claim
        data["job"]["spool_claim"] = None
    return yaml.safe_dump(data, sort_keys=False)


def planner_configmap(plan: Plan, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """The ConfigMap ``<name>-plan`` holding the plan's canonical YAML."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-plan", "namespace": plan.namespace, "labels": labels},
        "data": {"plan.yaml": plan_document(plan)},
    }


def planner_container(plan: Plan) -> dict[str, Any]:
    """The planner's container: ``advisor plan submit`` on the mounted plan."""
    command = [
        "advisor",
        "plan",
        "submit",
        f"{PLAN_MOUNT}/plan.yaml",
        "--namespace",
        plan.namespace,
    ]
    if plan.planner.skip_observed:
        command += ["--skip-observed", "--store", "$(ADVISOR_API)"]
    return {
        "name": "planner",
        "image": plan.planner.image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "env": [
            {"name": "ADVISOR_API", "value": plan.api.url},
            {
                "name": "ADVISOR_TOKEN",
                "valueFrom": {
                    "secretKeyRef": {
                        "name": plan.planner.token_secret,
                        "key": plan.planner.token_key,
                    }
                },
            },
            {"name": "HOME", "value": "/tmp"},
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "256Mi"},
            "limits": {"memory": "512Mi"},
        },
        "securityContext": container_security(),
        "volumeMounts": [
            {"name": "plan", "mountPath": PLAN_MOUNT, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def planner_deadline(plan: Plan) -> int:
    """Seconds the planner may run: it waits for every cell, pool by pool, each in its waves of
    the pool's concurrency, every repeat within the slowest deadline, plus an hour."""
    cells_per_pool = len(plan.images) * len(plan.benchmarks)
    if plan.sweep:  # one Job per sweep cell, its repeats inside
        cells_per_pool += len(plan.sweep.matrix.cells) * plan.sweep.matrix.repeats
    slowest = max(
        [
            plan.job.active_deadline_seconds,
            *(b.active_deadline_seconds or 0 for b in plan.benchmarks),
        ]
    )
    waves = max(-(-cells_per_pool // pool.concurrency) for pool in plan.pools)
    return slowest * plan.repeats * waves + 3600


def planner_cronjob(plan: Plan, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """The CronJob running the planner on the plan's ``schedule``."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": plan.namespace, "labels": labels},
        "spec": {
            "schedule": plan.schedule,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 3600,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": planner_deadline(plan),
                    "ttlSecondsAfterFinished": plan.job.ttl_seconds_after_finished,
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "restartPolicy": "Never",
                            "serviceAccountName": plan.planner.service_account,
                            "securityContext": pod_security(plan),
                            "containers": [planner_container(plan)],
                            "volumes": [
                                {"name": "plan", "configMap": {"name": f"{name}-plan"}},
                                {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                            ],
                        },
                    },
                },
            },
        },
    }
