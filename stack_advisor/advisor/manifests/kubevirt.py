"""A KubeVirt ``VirtualMachineInstance`` for a VM placement (GPU passthrough or vGPU): the node
it may run on (NVIDIA GPU Operator's ``nvidia.com/gpu.workload.config`` = ``vm-passthrough`` /
``vm-vgpu``, the part's product label) and one ``gpus`` entry per accelerator.

What a recommendation cannot know is a named placeholder: the resource name the cluster's
``permittedHostDevices`` gives the GPU (or the vGPU type's mediated device), the guest memory (a
quantity field, so only named in the placeholders annotation) and the VM disk image (the
recommended container image is not a bootable disk). The object is checked against the schema
KubeVirt's virt-operator installs (tests/kube/test_snippet_targets.py)."""

from __future__ import annotations

import copy
from typing import Any

from stack_advisor.advisor.manifests.shape import Placeholders, object_meta
from stack_advisor.catalog.device_plugins import DeviceFacts
from stack_advisor.schema.models import PlacementKind

_CONFIG = {PlacementKind.PASSTHROUGH: "vm-passthrough", PlacementKind.VGPU: "vm-vgpu"}


def virtual_machine(
    pod: dict[str, Any],
    per_node: int,
    placement: PlacementKind,
    facts: DeviceFacts | None,
    holes: Placeholders,
    device_name: str | None = None,
) -> dict[str, Any]:
    """One VM with ``per_node`` GPUs of the recommendation's part; ``device_name``: the resource
    the nodes' sandbox device plugin advertises (a cluster's own fact), else a placeholder."""
    meta = object_meta(pod)
    kind = "vGPU type" if placement is PlacementKind.VGPU else "passthrough GPU"
    device = device_name or holes.add(
        "vgpu_resource_name" if placement is PlacementKind.VGPU else "gpu_resource_name",
        f"the resourceName your KubeVirt CR's permittedHostDevices gives the {kind} of "
        f"{meta['annotations'].get('stack-advisor/accelerator', 'this part')}",
    )
    selector = _node_selector(facts, placement)
    # the guest's memory is the user's to size; a placeholder in a quantity field fails
    # KubeVirt's schema, so the field is left out and named among the placeholders
    holes.add(
        "guest_memory",
        "the VM's memory: set spec.domain.memory.guest (or resources.requests.memory) to a "
        "Kubernetes quantity; KubeVirt admits no VM without it",
    )
    spec: dict[str, Any] = {
        "domain": {
            "devices": {
                "gpus": [{"name": f"gpu{i}", "deviceName": device} for i in range(per_node)],
                "disks": [{"name": "root", "disk": {"bus": "virtio"}}],
            },
        },
        "volumes": [
            {
                "name": "root",
                "containerDisk": {
                    "image": holes.add(
                        "vm_disk_image",
                        f"a bootable containerDisk image whose guest runs "
                        f"{pod['spec']['containers'][0]['image']}",
                    )
                },
            }
        ],
    }
    if selector:
        spec["nodeSelector"] = selector
    if pod["spec"].get("tolerations"):
        spec["tolerations"] = copy.deepcopy(pod["spec"]["tolerations"])
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": meta,
        "spec": spec,
    }


def _node_selector(facts: DeviceFacts | None, placement: PlacementKind) -> dict[str, str]:
    """The GPU Operator's VM configuration label, else the part's product label."""
    if facts is None:
        return {}
    plugin = facts.plugin
    if plugin.workload_config_label:
        # the GPU Operator runs no feature discovery on VM nodes: the GPU model is pinned by
        # the permittedHostDevices resource name instead of a product label
        return {plugin.workload_config_label: _CONFIG[placement]}
    if plugin.product_label and facts.product_value:
        return {plugin.product_label: facts.product_value}
    return {}
