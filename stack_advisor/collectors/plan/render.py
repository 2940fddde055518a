"""Render a plan's cells as Kubernetes objects (plain dicts, ready for YAML or the API).

One ``batch/v1`` Job per cell (``completions = repeats``, Indexed, one pod at a time); a
distributed cell (allreduce with ``workers > 1``) becomes a Kubeflow PyTorchJob or MPIJob, plus a
Volcano PodGroup when its pool asks for gang scheduling. A scheduled plan becomes one
``batch/v1`` CronJob that runs the planner (``advisor plan submit``) with the plan from a
ConfigMap, so the pools' concurrency limits and ``--skip-observed`` hold for scheduled runs too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from stack_advisor.collectors.plan.model import GPU_RESOURCE, Cell, Plan, ResourceSpec
from stack_advisor.collectors.plan.planner import planner_configmap, planner_cronjob
from stack_advisor.collectors.plan.security import container_security, pod_security

PART_OF = "stack-advisor"
LABEL_PLAN = "stack-advisor.io/plan"
LABEL_CELL = "stack-advisor.io/cell"
LABEL_POOL = "stack-advisor.io/pool"
LABEL_IMAGE = "stack-advisor.io/image"
LABEL_BENCHMARK = "stack-advisor.io/benchmark"
LABEL_SUBMISSION = "stack-advisor.io/submission"
ANNOTATION_STACK = "stack-advisor.io/stack"
ANNOTATION_ACCELERATOR = "stack-advisor.io/accelerator"
ANNOTATION_PLACEMENT = "stack-advisor.io/placement"
CONTAINER = "collector"


def cell_labels(cell: Cell, submission: str | None = None) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/name": "stack-advisor",
        "app.kubernetes.io/component": "collector",
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": "stack-advisor-planner",
        LABEL_PLAN: cell.plan,
        LABEL_CELL: cell.cell_id,
        LABEL_POOL: cell.pool.name,
        LABEL_IMAGE: cell.image.name,
        LABEL_BENCHMARK: cell.benchmark.name,
    }
    if submission:
        labels[LABEL_SUBMISSION] = submission
    return labels


def cell_annotations(cell: Cell) -> dict[str, str]:
    """What the planner needs to record a failure without reading the plan again."""
    acc = cell.pool.accelerator_model()
    return {
        ANNOTATION_STACK: json.dumps(
            cell.stack().model_dump(mode="json", exclude_defaults=True), sort_keys=True
        ),
        ANNOTATION_ACCELERATOR: json.dumps(
            acc.model_dump(mode="json", exclude_none=True), sort_keys=True
        ),
        ANNOTATION_PLACEMENT: cell.pool.placement.value,
    }


def _resources(cell: Cell, plan: Plan) -> dict[str, Any]:
    spec: ResourceSpec = cell.benchmark.resources or plan.resources
    requests = dict(spec.requests)
    limits = dict(spec.limits)
    if cell.gpus:
        # Extended resources: the limit is what counts; a request, if given, must equal it.
        limits[GPU_RESOURCE] = str(cell.gpus)
        requests[GPU_RESOURCE] = str(cell.gpus)
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def _env(plan: Plan, cell: Cell) -> list[dict[str, Any]]:
    def field(path: str) -> dict[str, Any]:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    env: list[dict[str, Any]] = [
        {"name": "ADVISOR_API", "value": plan.api.url},
        {
            "name": "ADVISOR_TOKEN",
            "valueFrom": {
                "secretKeyRef": {"name": plan.api.token_secret, "key": plan.api.token_key}
            },
        },
        {"name": "NODE_NAME", **field("spec.nodeName")},
        {"name": "POD_NAME", **field("metadata.name")},
        {"name": "POD_NAMESPACE", **field("metadata.namespace")},
        {"name": "JOB_NAME", **field("metadata.labels['batch.kubernetes.io/job-name']")},
        {
            "name": "JOB_COMPLETION_INDEX",
            **field("metadata.annotations['batch.kubernetes.io/job-completion-index']"),
        },
        {"name": "ADVISOR_PLAN", "value": plan.name},
        # recorded with the stack, so the advisor's placement snippets can name this image
        {"name": "ADVISOR_IMAGE", "value": cell.image.image},
        {"name": "ADVISOR_CELL", "value": cell.cell_id},
        # A read-only root filesystem: everything writable lives under the /tmp emptyDir.
        {"name": "HOME", "value": "/tmp"},
        {"name": "XDG_CACHE_HOME", "value": "/tmp/cache"},
        {"name": "XDG_DATA_HOME", "value": "/tmp/data"},
    ]
    if plan.job.spool_claim:
        env.append({"name": "XDG_STATE_HOME", "value": SPOOL_MOUNT})
    if cell.sweep_cell:
        env.append({"name": SWEEP_MATRIX_ENV, "value": sweep_matrix_of(plan, cell)})
        env.append({"name": "ADVISOR_SWEEP_CACHE", "value": "/tmp/sweep"})
    return env


SWEEP_MATRIX_ENV = "ADVISOR_SWEEP_MATRIX"
SPOOL_MOUNT = "/var/lib/stack-advisor"  # XDG_STATE_HOME: the spool is <it>/stack-advisor/spool


def render_spool_claim(plan: Plan) -> list[dict[str, Any]]:
    """The collectors' spool claim (empty when ``job.spool_claim`` is null). ReadWriteMany: a
    pool's pods run on several nodes at once and all mount it; concurrent re-sends are safe (a
    document sent by one pod is skipped by the others, and ingest is idempotent by run id)."""
    job = plan.job
    if not job.spool_claim:
        return []
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": job.spool_size}},
    }
    if job.spool_storage_class:
        spec["storageClassName"] = job.spool_storage_class
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": job.spool_claim,
                "namespace": plan.namespace,
                "labels": {
                    "app.kubernetes.io/name": "stack-advisor",
                    "app.kubernetes.io/component": "collector-spool",
                    "app.kubernetes.io/part-of": PART_OF,
                },
            },
            "spec": spec,
        }
    ]


def sweep_matrix_of(plan: Plan, cell: Cell) -> str:
    """The plan's sweep matrix cut down to this Job's one cell (JSON, in an env variable)."""
    assert plan.sweep is not None and cell.sweep_cell is not None
    matrix = plan.sweep.matrix
    data = matrix.model_dump(mode="json", exclude_none=True)
    data["cells"] = [
        c.model_dump(mode="json", exclude_none=True)
        for c in matrix.cells
        if c.id == cell.sweep_cell
    ]
    data.pop("baseline", None)
    return json.dumps(data, sort_keys=True)


def collect_command(cell: Cell, run_id: str) -> list[str]:
    if cell.sweep_cell:
        # --force: each scheduled run gets its own run ids, so a driver upgrade shows as a change
        return ["advisor", "sweep", f"env:{SWEEP_MATRIX_ENV}", "--force", "--api", "$(ADVISOR_API)"]
    bench = cell.benchmark
    cmd = [
        "advisor",
        "collect",
        "--benchmark",
        bench.runner,
        "--profile",
        bench.profile,
        "--run-id",
        run_id,
    ]
    options = bench.option_args()
    if bench.distributed:
        options += ["--option", f"workers={bench.workers}"]
    return cmd + options


def pod_spec(
    plan: Plan, cell: Cell, run_id: str, container_name: str = CONTAINER
) -> dict[str, Any]:
    mounts: list[dict[str, Any]] = [{"name": "tmp", "mountPath": "/tmp"}]
    container: dict[str, Any] = {
        "name": container_name,
        "image": cell.image.image,
        "imagePullPolicy": cell.image.pull_policy,
        "command": collect_command(cell, run_id),
        "env": _env(plan, cell),
        "resources": _resources(cell, plan),
        "securityContext": container_security(),
        "volumeMounts": mounts,
    }
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": plan.job.service_account,
        "automountServiceAccountToken": False,
        "securityContext": pod_security(plan),
        "nodeSelector": dict(cell.pool.selector),
        "containers": [container],
        "volumes": [
            {
                "name": "tmp",
                "emptyDir": {
                    "sizeLimit": plan.sweep.disk if cell.sweep_cell and plan.sweep else "10Gi"
                },
            }
        ],
    }
    if plan.job.spool_claim:
        mounts.append({"name": "spool", "mountPath": SPOOL_MOUNT})
        spec["volumes"].append(
            {"name": "spool", "persistentVolumeClaim": {"claimName": plan.job.spool_claim}}
        )
    if cell.pool.affinity:
        spec["affinity"] = cell.pool.affinity
    if cell.pool.tolerations:
        spec["tolerations"] = [t.to_k8s() for t in cell.pool.tolerations]
    return spec


def job_name(cell: Cell, submission: str | None = None) -> str:
    return f"{cell.job_name}-{submission}" if submission else cell.job_name


def render_job(plan: Plan, cell: Cell, submission: str | None = None) -> dict[str, Any]:
    """The batch/v1 Job of a (non-distributed) cell. Each completion index is one repeat and
    one run: ``--run-id <job name>-r<index>``."""
    labels = cell_labels(cell, submission)
    run_id = "$(JOB_NAME)-r$(JOB_COMPLETION_INDEX)"
    deadline = cell.benchmark.active_deadline_seconds or plan.job.active_deadline_seconds
    # a sweep cell runs its matrix's repeats itself, in one pod (one environment to create)
    repeats = 1 if cell.sweep_cell else plan.repeats
    if cell.sweep_cell and plan.sweep:
        deadline *= plan.sweep.matrix.repeats
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(cell, submission),
            "namespace": plan.namespace,
            "labels": labels,
            "annotations": cell_annotations(cell),
        },
        "spec": {
            "completions": repeats,
            "parallelism": 1,
            "completionMode": "Indexed",
            "backoffLimit": plan.job.backoff_limit,
            # The deadline covers every repeat of the cell.
            "activeDeadlineSeconds": deadline * repeats,
            "ttlSecondsAfterFinished": plan.job.ttl_seconds_after_finished,
            "template": {
                "metadata": {"labels": labels, "annotations": cell_annotations(cell)},
                "spec": pod_spec(plan, cell, run_id),
            },
        },
    }


def _gang(cell: Cell, template: dict[str, Any], group: str) -> None:
    template["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = group
    template["spec"]["schedulerName"] = "volcano"


def render_distributed(
    plan: Plan, cell: Cell, submission: str | None = None
) -> list[dict[str, Any]]:
    """A PyTorchJob (kubeflow.org/v1) or MPIJob (kubeflow.org/v2beta1) for a multi-worker
    cell, preceded by a Volcano PodGroup when the pool asks for gang scheduling."""
    bench = cell.benchmark
    name = job_name(cell, submission)
    labels = cell_labels(cell, submission)
    run_id = f"{name}-r0"
    deadline = bench.active_deadline_seconds or plan.job.active_deadline_seconds
    objects: list[dict[str, Any]] = []
    run_policy: dict[str, Any] = {
        "backoffLimit": plan.job.backoff_limit,
        "activeDeadlineSeconds": deadline,
        "ttlSecondsAfterFinished": plan.job.ttl_seconds_after_finished,
        "cleanPodPolicy": "None",
    }
    if cell.pool.gang_scheduling:
        objects.append(_podgroup(plan, cell, name, labels))
        run_policy["schedulingPolicy"] = {"minAvailable": bench.workers}

    def template(container: str) -> dict[str, Any]:
        tpl = {
            "metadata": {"labels": labels, "annotations": cell_annotations(cell)},
            "spec": pod_spec(plan, cell, run_id, container),
        }
        if cell.pool.gang_scheduling:
            _gang(cell, tpl, name)
        return tpl

    meta = {
        "name": name,
        "namespace": plan.namespace,
        "labels": labels,
        "annotations": cell_annotations(cell),
    }
    if bench.distributed_kind == "PyTorchJob":
        objects.append(_pytorch_job(meta, run_policy, bench.workers, template))
    else:
        objects.append(_mpi_job(meta, run_policy, cell, template))
    return objects


def _podgroup(plan: Plan, cell: Cell, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """The Volcano PodGroup that makes a distributed cell's pods start together or not at all."""
    bench = cell.benchmark
    min_resources = {GPU_RESOURCE: str(cell.gpus * bench.workers)} if cell.gpus else {}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": plan.namespace, "labels": labels},
        "spec": {
            "minMember": bench.workers,
            **({"minResources": min_resources} if min_resources else {}),
        },
    }


def _pytorch_job(
    meta: dict[str, Any],
    run_policy: dict[str, Any],
    workers: int,
    template: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """A PyTorchJob: one master, ``workers - 1`` workers."""
    replicas = {
        "Master": {"replicas": 1, "restartPolicy": "Never", "template": template("pytorch")}
    }
    if workers > 1:
        replicas["Worker"] = {
            "replicas": workers - 1,
            "restartPolicy": "Never",
            "template": template("pytorch"),
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": replicas},
    }


def _mpi_job(
    meta: dict[str, Any],
    run_policy: dict[str, Any],
    cell: Cell,
    template: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """An MPIJob: one launcher, ``workers`` workers with a slot per GPU."""
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "slotsPerWorker": max(cell.gpus, 1),
            "runPolicy": run_policy,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": template("launcher"),
                },
                "Worker": {
                    "replicas": cell.benchmark.workers,
                    "restartPolicy": "Never",
                    "template": template("worker"),
                },
            },
        },
    }


def render_cell(plan: Plan, cell: Cell, submission: str | None = None) -> list[dict[str, Any]]:
    if cell.benchmark.distributed:
        return render_distributed(plan, cell, submission)
    return [render_job(plan, cell, submission)]


def render_schedule(plan: Plan) -> list[dict[str, Any]]:
    """The ConfigMap holding the plan and the CronJob running the planner on ``schedule``.
    Empty when the plan has no schedule."""
    if not plan.schedule:
        return []
    name = f"sa-{plan.name}"
    labels = {
        "app.kubernetes.io/name": "stack-advisor",
        "app.kubernetes.io/component": "planner",
        "app.kubernetes.io/part-of": PART_OF,
        LABEL_PLAN: plan.name,
    }
    return [
        planner_configmap(plan, name, labels),
        planner_cronjob(plan, name, labels),
        *render_spool_claim(plan),
    ]


def render_plan(
    plan: Plan, cells: list[Cell], submission: str | None = None
) -> list[dict[str, Any]]:
    """Every object of a plan: the cells' jobs, then the schedule (if any)."""
    objects: list[dict[str, Any]] = [] if plan.schedule else render_spool_claim(plan)
    for cell in cells:
        objects.extend(render_cell(plan, cell, submission))
    return objects + render_schedule(plan)


GENERATED_MARK = "# Generated by `advisor plan render"


def generated_header(command: str) -> str:
    """The first line of every file ``plan render --out`` writes: how it was made, and the mark
    by which a later render knows the file is its own to replace."""
    return f"{GENERATED_MARK}{command[len('advisor plan render') :]}`; do not edit.\n"


def foreign_files(folder: Path, names: list[str]) -> list[str]:
    """Those of ``names`` that exist in ``folder`` and were not written by ``plan render``
    (a hand-written ``kustomization.yaml``, say): replacing them needs ``--force``."""
    found = []
    for name in names:
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            found.append(name)
        elif path.is_file():
            with path.open("rb") as handle:
                if not handle.read(len(GENERATED_MARK) + 8).startswith(GENERATED_MARK.encode()):
                    found.append(name)
    return found


def object_filename(obj: dict[str, Any]) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


class _PlainDumper(yaml.SafeDumper):
    """No ``&id001`` anchors: objects share label dicts, readers expect them written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(objects: list[dict[str, Any]]) -> str:
    return yaml.dump_all(objects, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)
