"""The workload objects a snippet can be: a Deployment and a batch Job (one node), a
LeaderWorkerSet (a multi-node server: one leader and ``nodes - 1`` workers, recreated as a group),
a JobSet and a Kubeflow Trainer ``TrainJob`` (training across ``nodes``), each built from one
node's Pod so the resource requests and node constraints stand as the recommendation set them.

Where the part's NVLink domain spans nodes (GB200/GB300 NVL72) and holds the whole job, the group
is kept inside one domain by GFD's clique label (LWS and JobSet exclusive-topology annotations)."""

from __future__ import annotations

import copy
from typing import Any

from stack_advisor.advisor.manifests.shape import (
    NAME_LABEL,
    JobShape,
    Placeholders,
    object_meta,
    pod_template,
)

LWS_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
JOBSET_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
GANG = "stack-advisor/gang"
# The ClusterTrainingRuntimes Kubeflow Trainer v2 publishes (manifests/base/runtimes), by the
# frameworks that launch on them (NeMo and Megatron train through torchrun), and their one
# replicated job
TRAINER_RUNTIMES = {
    "pytorch": "torch-distributed",
    "torch": "torch-distributed",
    "nemo": "torch-distributed",
    "megatron": "torch-distributed",
    "megatron-lm": "torch-distributed",
    "deepspeed": "deepspeed-distributed",
    "mlx": "mlx-distributed",
}
TRAINER_RUNTIME = TRAINER_RUNTIMES["pytorch"]
TRAINER_JOB = "node"


def deployment(pod: dict[str, Any], template: dict[str, Any] | None = None) -> dict[str, Any]:
    """One replica of the Pod, kept running (a single-node server)."""
    meta = object_meta(pod)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {NAME_LABEL: meta["name"]}},
            "template": template or pod_template(pod),
        },
    }


def batch_job(pod: dict[str, Any], template: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Pod run to completion once, no retries (a failed benchmark is a result to read)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": object_meta(pod),
        "spec": {
            "backoffLimit": 0,
            "template": template or pod_template(pod, restart="Never"),
        },
    }


def leader_worker_set(
    pod: dict[str, Any], shape: JobShape, template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A LeaderWorkerSet of ``shape.nodes`` pods per replica, each one node's worth."""
    meta = object_meta(pod)
    tmpl = template or pod_template(pod)
    annotations = meta.setdefault("annotations", {})
    annotations[GANG] = (
        f"{shape.nodes} pods x {shape.per_node} accelerators: one leader and {shape.nodes - 1} "
        "workers, created and restarted as a group"
    )
    if shape.clique_label:
        annotations[LWS_TOPOLOGY] = shape.clique_label
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": shape.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": copy.deepcopy(tmpl),
                "workerTemplate": copy.deepcopy(tmpl),
            },
        },
    }


def job_set(
    pod: dict[str, Any], shape: JobShape, template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A JobSet with one indexed Job of ``shape.nodes`` pods that must all complete."""
    meta = object_meta(pod)
    annotations = meta.setdefault("annotations", {})
    annotations[GANG] = (
        f"{shape.nodes} pods x {shape.per_node} accelerators, all or none: admit it through Kueue "
        "(--target kueue) or a coscheduling scheduler so no pod waits alone"
    )
    if shape.clique_label:
        annotations[JOBSET_TOPOLOGY] = shape.clique_label
    job_spec = {
        "parallelism": shape.nodes,
        "completions": shape.nodes,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": template or pod_template(pod, restart="Never"),
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": job_spec}}],
        },
    }


def train_job(
    pod: dict[str, Any], shape: JobShape, framework: str | None, holes: Placeholders
) -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob on ``shape.nodes`` nodes, on the runtime the Trainer
    publishes for the framework; a framework without one is a named placeholder. Node selector and
    tolerations go in ``podSpecOverrides``; node affinity (minimum driver, VM exclusion) has no
    field there and is said in an annotation."""
    meta = object_meta(pod)
    spec = pod["spec"]
    container = spec["containers"][0]
    runtime = TRAINER_RUNTIMES.get((framework or "pytorch").lower()) or holes.add(
        "training_runtime", f"the ClusterTrainingRuntime for {framework} in your cluster"
    )
    trainer: dict[str, Any] = {"image": container["image"], "numNodes": shape.nodes}
    if container.get("resources"):
        trainer["resourcesPerNode"] = copy.deepcopy(container["resources"])
    override: dict[str, Any] = {"targetJobs": [{"name": TRAINER_JOB}]}
    for key in ("nodeSelector", "tolerations"):
        if spec.get(key):
            override[key] = copy.deepcopy(spec[key])
    annotations = meta.setdefault("annotations", {})
    annotations[GANG] = (
        f"{shape.nodes} nodes x {shape.per_node} accelerators, all or none: set podGroupPolicy "
        "(coscheduling or volcano) in the runtime, or admit the TrainJob through Kueue"
    )
    if spec.get("affinity"):
        annotations["stack-advisor/node-affinity"] = (
            "podSpecOverrides has no affinity field: the minimum-driver and VM terms of this "
            "recommendation belong in the runtime's pod template"
        )
    body: dict[str, Any] = {"runtimeRef": {"name": runtime}, "trainer": trainer}
    if len(override) > 1:
        body["podSpecOverrides"] = [override]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": meta,
        "spec": body,
    }
