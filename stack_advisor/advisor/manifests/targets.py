"""One node's Pod turned into the object a ``--target`` asks for, from the recommendation's own
facts (nodes, accelerators per node, training or serving, the part's NVLink domain and DRA
driver, the placement). A multi-node recommendation never becomes a single Pod: ``pod`` gives a
PyTorchJob gang (training) or a LeaderWorkerSet (serving); a target that cannot hold the shape
answers why instead of a manifest.

Kueue: the LocalQueue is a named placeholder (cluster-specific); the pod templates carry
``podset-required-topology`` at the hostname level for one node, at GFD's NVLink clique label when
the part's multi-node NVLink domain holds the whole job, else ``podset-preferred-topology`` at a
named rack level."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.manifests.dra import claim_template
from stack_advisor.advisor.manifests.gang import gang_snippet
from stack_advisor.advisor.manifests.kubevirt import virtual_machine
from stack_advisor.advisor.manifests.shape import JobShape, Placeholders, as_list, pod_template
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.advisor.manifests.workloads import (
    batch_job,
    deployment,
    job_set,
    leader_worker_set,
    train_job,
)
from stack_advisor.schema.models import PlacementKind

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
HOSTNAME = "kubernetes.io/hostname"
VM_PLACEMENTS = (PlacementKind.PASSTHROUGH, PlacementKind.VGPU)

Answer = tuple[dict[str, Any] | None, str | None]


def snippet_for(
    target: SnippetTarget,
    pod: dict[str, Any],
    shape: JobShape,
    placement: PlacementKind,
    min_driver: str | None = None,
    framework: str | None = None,
) -> Answer:
    """(manifest, None), or (None, why this target cannot place this recommendation)."""
    holes = Placeholders()
    if target is SnippetTarget.KUBEVIRT:
        answer = _kubevirt(pod, shape, placement, holes)
    elif target is SnippetTarget.DRA:
        answer = _dra(pod, shape, min_driver)
    elif target is SnippetTarget.KUEUE:
        answer = (_kueue(pod, shape, holes), None)
    elif target is SnippetTarget.TRAINJOB:
        answer = (
            (train_job(pod, shape, framework, holes), None)
            if shape.training
            else (None, "trainjob runs training; this is a serving recommendation: use lws")
        )
    elif target is SnippetTarget.LWS:
        answer = (
            (leader_worker_set(pod, shape), None)
            if not shape.training
            else (None, "lws serves models; this is a training recommendation: use jobset")
        )
    elif target is SnippetTarget.JOBSET:
        answer = (job_set(pod, shape), None)
    else:
        answer = _single_node(target, pod, shape)
    manifest, why = answer
    if manifest is not None:
        holes.stamp(manifest["items"][-1] if manifest["kind"] == "List" else manifest)
    return manifest, why


def _multi_node(pod: dict[str, Any], shape: JobShape) -> dict[str, Any]:
    if shape.training:
        return gang_snippet(
            pod, nodes=shape.nodes, per_node=shape.per_node, name=pod["metadata"]["name"]
        )
    return leader_worker_set(pod, shape)


def _single_node(target: SnippetTarget, pod: dict[str, Any], shape: JobShape) -> Answer:
    if shape.nodes > 1:
        if target is SnippetTarget.DEPLOYMENT:
            return None, (
                f"deployment places one node's Pod; this recommendation spans {shape.nodes} "
                "nodes: use --target lws (serving) or jobset / trainjob (training)"
            )
        return _multi_node(pod, shape), None
    if target is SnippetTarget.DEPLOYMENT:
        return deployment(pod), None
    return pod, None


def _dra(pod: dict[str, Any], shape: JobShape, min_driver: str | None) -> Answer:
    if shape.facts is None:
        return None, (
            f"dra: the catalogue knows no DRA driver for "
            f"{pod['metadata']['annotations'].get('stack-advisor/accelerator')}"
        )
    name = pod["metadata"]["name"]
    claim, consumer = claim_template(f"{name}-devices", pod, shape.facts, min_driver)
    if shape.nodes == 1:
        return as_list(claim, consumer), None
    owner = job_set(consumer, shape) if shape.training else leader_worker_set(consumer, shape)
    return as_list(claim, owner), None


def _kueue(pod: dict[str, Any], shape: JobShape, holes: Placeholders) -> dict[str, Any]:
    template = pod_template(pod, restart="Never" if shape.training else None)
    annotations = template["metadata"]["annotations"]
    if shape.nodes == 1:
        annotations[KUEUE_REQUIRED] = HOSTNAME
    elif shape.clique_label:
        annotations[KUEUE_REQUIRED] = shape.clique_label
    else:
        annotations[KUEUE_PREFERRED] = holes.add(
            "rack_topology_level",
            "the node label of your Kueue Topology's rack (or block) level",
        )
    if shape.training:
        obj = job_set(pod, shape, template) if shape.nodes > 1 else batch_job(pod, template)
    else:
        obj = (
            leader_worker_set(pod, shape, template)
            if shape.nodes > 1
            else deployment(pod, template)
        )
    obj["metadata"]["labels"][KUEUE_QUEUE] = holes.add(
        "local_queue", "the LocalQueue in this namespace that admits the workload"
    )
    return obj


def _kubevirt(
    pod: dict[str, Any], shape: JobShape, placement: PlacementKind, holes: Placeholders
) -> Answer:
    if placement not in VM_PLACEMENTS:
        return None, (
            f"kubevirt places VMs; this recommendation's placement is {placement.value}: "
            "choose a passthrough or vgpu row"
        )
    if shape.nodes > 1:
        return None, (
            f"kubevirt: this recommendation spans {shape.nodes} VMs; one VirtualMachineInstance "
            "cannot hold it"
        )
    return virtual_machine(pod, shape.per_node, placement, shape.facts, holes), None
