"""A pool's manifests for the ``--target`` the workload asks (cluster mode): one node's Pod narrowed
to the pool (``stack_advisor.advisor.cluster.manifests.pool_pod``: its node selector, affinity,
tolerations and resource), turned into the target's object with the pool's own facts - its nodes
and GPUs per node (the job's shape), its part's catalogue facts, the DRA driver of a pool whose
devices only ResourceSlices publish, the sandbox resource of a pool given to VMs.

- ``pod`` on a pool with an extended resource: a Pod, or for training across nodes a Volcano
  PodGroup + PyTorchJob gang (``pool_manifests``), for serving across nodes a LeaderWorkerSet;
- a pool whose resource is a DRA DeviceClass (``pool_devices``): whatever the target, a
  ResourceClaimTemplate of that class and the target's object consuming it; never an
  extended-resource request its nodes cannot satisfy;
- ``kubevirt``: a VirtualMachineInstance on a pool the GPU Operator gave to VMs.

The NUMA sizing (``numa.guarantee``) applies to every pod these objects make, afterwards."""

from __future__ import annotations

import dataclasses
from typing import Any

from stack_advisor.advisor.cluster.manifests import pool_manifests, pool_pod
from stack_advisor.advisor.cluster.pool_devices import (
    GPU_RESOURCE,
    VM_CONFIGS,
    WORKLOAD_CONFIG_LABEL,
    is_device_class,
)
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import JobShape as PoolShape
from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.advisor.manifests.dra import claim_template
from stack_advisor.advisor.manifests.kubevirt import virtual_machine
from stack_advisor.advisor.manifests.shape import JobShape, Placeholders
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.advisor.manifests.targets import snippet_for
from stack_advisor.catalog.device_plugins import DeviceFacts, device_facts, plugins
from stack_advisor.schema.inventory import GFD
from stack_advisor.schema.models import PlacementKind, SoftwareStack

Answer = tuple[list[dict[str, Any]], str | None]
VM_PLACEMENT = {"vm-passthrough": PlacementKind.PASSTHROUGH, "vm-vgpu": PlacementKind.VGPU}


def claims_only(pool: NodePool) -> bool:
    """Whether the pool's GPUs are requested through a ResourceClaim only (a CPU pool's unit,
    the node, has no ``/`` either but requests nothing)."""
    return pool.kind == "gpu" and is_device_class(pool.resource)


def pool_facts(pool: NodePool) -> DeviceFacts | None:
    """The catalogue's facts of the pool's part; on a DRA pool, its DRA driver is the one its
    ResourceSlices name (the catalogue's vendor entry for that driver where the part is
    unknown)."""
    spec = resolve_accelerator(pool.accelerator).spec if pool.accelerator else None
    facts = device_facts(spec) if spec is not None else None
    if not claims_only(pool):
        return facts
    driver = pool.resource
    if facts is not None:
        plugin = facts.plugin.model_copy(update={"dra_driver": driver})
        return dataclasses.replace(facts, plugin=plugin)
    known = next((p for p in plugins() if p.dra_driver == driver), None)
    if known is None:
        return None
    return DeviceFacts(known, None, None, None, None, None)


def vm_pool(pool: NodePool) -> tuple[NodePool | None, str]:
    """The pool as a VM placement (usable, placed as its GPU Operator configuration says), or
    (None, why KubeVirt cannot place a VM there)."""
    config = pool.workload_config
    if config not in VM_CONFIGS:
        return None, (
            f"kubevirt places VMs; this pool's nodes run containers "
            f"({WORKLOAD_CONFIG_LABEL}={config or 'unset'}): the GPU Operator hands GPUs to "
            "KubeVirt on nodes labelled vm-passthrough or vm-vgpu"
        )
    if pool.gpus_per_node < 1:
        return None, (
            f"kubevirt: the nodes advertise no GPU for VMs (the sandbox device plugin's "
            f"{GFD}<MODEL> resource, which permittedHostDevices names, is not allocatable)"
        )
    if pool.reason and not pool.reason.startswith(WORKLOAD_CONFIG_LABEL):
        return None, pool.reason  # unusable for another reason than being given to VMs
    update = {"usable": True, "reason": None, "placement": VM_PLACEMENT[config]}
    return pool.model_copy(update=update), ""


def pool_snippet(
    *,
    pool: NodePool,
    stack: SoftwareStack,
    image: str,
    workload_name: str,
    shape: PoolShape,
    target: SnippetTarget,
    training: bool,
    framework: str | None,
    image_source: str | None = None,
) -> Answer:
    """(the objects to apply, None), or ([], why the target cannot place the job on the pool)."""
    dra = claims_only(pool)
    if target is SnippetTarget.POD and not dra and (training or shape.pods <= 1):
        return pool_manifests(
            pool=pool,
            stack=stack,
            image=image,
            workload_name=workload_name,
            units_per_pod=shape.units_per_pod,
            pods=shape.pods,
            image_source=image_source,
        ), None
    pod = pool_pod(
        pool=pool,
        stack=stack,
        image=image,
        workload_name=workload_name,
        units=shape.units_per_pod,
        image_source=image_source,
    )
    job = JobShape(shape.pods, shape.units_per_pod, training, pool_facts(pool))
    if target is SnippetTarget.KUBEVIRT:
        return _virtual_machine(pool, pod, job)
    if dra or target is SnippetTarget.DRA:
        return _claimed(pool, pod, job, target, framework)
    manifest, why = snippet_for(target, pod, job, pool.placement, None, framework)
    return _objects(manifest), why


def _objects(manifest: dict[str, Any] | None) -> list[dict[str, Any]]:
    if manifest is None:
        return []
    return list(manifest["items"]) if manifest.get("kind") == "List" else [manifest]


def _claimed(
    pool: NodePool,
    pod: dict[str, Any],
    job: JobShape,
    target: SnippetTarget,
    framework: str | None,
) -> Answer:
    """A ResourceClaimTemplate for one node's devices and the target's object consuming it."""
    if job.facts is None:
        return [], (
            f"dra: the catalogue knows no DRA driver for {pool.product} (resource "
            f"{pool.resource}); request its devices with your driver's DeviceClass"
        )
    if target is SnippetTarget.TRAINJOB:
        return [], (
            "trainjob: a TrainJob's podSpecOverrides carry no resourceClaims, so it cannot "
            "consume a ResourceClaimTemplate; use --target jobset"
        )
    name = pod["metadata"]["name"]
    claim, consumer = claim_template(f"{name}-devices", pod, job.facts, None)
    # the pool's labels were read from its nodes; GFD's are absent where only DRA publishes GPUs
    selector = {
        k: v for k, v in pool.node_selector.items() if not (claims_only(pool) and k.startswith(GFD))
    }
    if selector:
        consumer["spec"]["nodeSelector"] = selector
    if not claims_only(pool) and pool.affinity():
        consumer["spec"]["affinity"] = pool.affinity()
    if target is SnippetTarget.DRA:  # as the catalogue's dra target: one Pod, or the group
        single = SnippetTarget.POD
        target = (
            single
            if job.nodes == 1
            else (SnippetTarget.JOBSET if job.training else SnippetTarget.LWS)
        )
    manifest, why = snippet_for(target, consumer, job, pool.placement, None, framework)
    if manifest is None:
        return [], why
    return [claim, *_objects(manifest)], None


def _virtual_machine(pool: NodePool, pod: dict[str, Any], job: JobShape) -> Answer:
    """One VirtualMachineInstance on the pool, its GPUs the sandbox resource its nodes
    advertise."""
    _, why = vm_pool(pool)
    if why:
        return [], why
    if job.nodes > 1:
        return [], (
            f"kubevirt: the job spans {job.nodes} VMs; one VirtualMachineInstance cannot hold it"
        )
    holes = Placeholders()
    device = None if pool.resource == GPU_RESOURCE else pool.resource
    placement = VM_PLACEMENT[str(pool.workload_config)]
    vm = virtual_machine(pod, job.per_node, placement, job.facts, holes, device_name=device)
    vm["spec"]["nodeSelector"] = dict(pool.node_selector)  # the pool's own labels
    holes.stamp(vm)
    return [vm], None
