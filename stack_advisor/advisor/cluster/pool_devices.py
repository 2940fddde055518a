"""How a pool's devices are requested when no ``nvidia.com/gpu`` extended resource offers them:

- a node whose GPUs only a DRA driver publishes (ResourceSlices, no GPU feature discovery label:
  ``stack_advisor.schema.inventory.with_dra`` names the driver as the accelerator's vendor) is
  asked through a ResourceClaim of that driver's DeviceClass. A DeviceClass name has no ``/``, an
  extended resource always has one, so the pool's ``resource`` tells the two apart;
- a node the GPU Operator gave to VMs (``nvidia.com/gpu.workload.config=vm-passthrough`` or
  ``vm-vgpu``) advertises its GPUs through the sandbox device plugin as one resource per model
  (``nvidia.com/GA100_A100_PCIE_40GB``), the name KubeVirt's ``permittedHostDevices`` lists."""

from __future__ import annotations

from stack_advisor.schema.inventory import GFD, ClusterNode

GPU_RESOURCE = GFD + "gpu"
WORKLOAD_CONFIG_LABEL = GFD + "gpu.workload.config"
VM_CONFIGS = ("vm-passthrough", "vm-vgpu")


def is_device_class(resource: str) -> bool:
    """Whether a pool's ``resource`` is a DRA DeviceClass (no extended resource to request)."""
    return "/" not in resource


def dra_device_class(node: ClusterNode) -> str | None:
    """The DRA driver (its DeviceClass has the same name) of a node whose GPUs only ResourceSlices
    publish; None where GFD labels the node or an extended resource offers its GPUs."""
    accelerator = node.accelerator
    if accelerator is None or node.host.labels.get(GFD + "gpu.product"):
        return None
    vendor = accelerator.vendor or ""
    if GPU_RESOURCE in node.gpu_resources or "." not in vendor:
        return None
    return vendor


def vm_device(node: ClusterNode) -> tuple[str, int] | None:
    """(resource, allocatable) the sandbox device plugin advertises on a node configured for VMs;
    None elsewhere or when the node advertises no single such resource."""
    if node.host.labels.get(WORKLOAD_CONFIG_LABEL) not in VM_CONFIGS:
        return None
    found = [
        (name, count)
        for name, count in node.gpu_resources.items()
        if name != GPU_RESOURCE
        and not name.startswith(GFD + "mig-")
        and not name.endswith(".shared")
        and any(c.isupper() for c in name.removeprefix(GFD))
    ]
    return found[0] if len(found) == 1 else None
