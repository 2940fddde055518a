"""Node objects labelled the way NVIDIA GPU feature discovery and NFD label real nodes.

Label names and value formats follow the GFD and NFD documentation (gpu.product with spaces as
'-', gpu.memory in MiB, cuda.driver-version.* in GFD >= 0.15 and cuda.driver.* before it, MIG
single-strategy product names with the -MIG-<profile> suffix). The values are configuration
examples, not measurements."""

from __future__ import annotations

from typing import Any

NFD = "feature.node.kubernetes.io/"


def node(name: str, labels: dict[str, str], *, cpu: str = "64", memory: str = "528291220Ki",
         gpus: str | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus is not None:
        capacity["nvidia.com/gpu"] = gpus
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "nodeInfo": {
                "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-105-generic",
                "machineID": "", "systemUUID": "", "bootID": "", "containerRuntimeVersion": "containerd://1.7.13",
                "kubeletVersion": "v1.35.4", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        },
    }


GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]

A100_BARE_METAL = node(
    "gpu-a100-0",
    {
        "stack-advisor.io/pool": "a100-bm",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/cuda.driver-version.full": "550.54.15",
        "nvidia.com/cuda.driver-version.major": "550",
        "nvidia.com/cuda.driver-version.minor": "54",
        "nvidia.com/cuda.driver-version.revision": "15",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "4",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "none",
        NFD + "cpu-model.vendor_id": "Intel",
        NFD + "cpu-model.family": "6",
        NFD + "cpu-model.id": "143",
        NFD + "cpu-cpuid.AVX512F": "true",
        NFD + "cpu-cpuid.AMXBF16": "true",
    },
    gpus="8",
    taints=GPU_TAINT,
)

L4_VGPU = node(
    "vm-l4-0",
    {
        "stack-advisor.io/pool": "l4-vgpu",
        "nvidia.com/gpu.product": "NVIDIA-L4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.memory": "23034",
        "nvidia.com/vgpu.present": "true",
        "nvidia.com/vgpu.host-driver-branch": "r550_40",
        "nvidia.com/cuda.driver-version.full": "550.54.14",
        "nvidia.com/cuda.runtime-version.full": "12.4",
        NFD + "cpu-model.vendor_id": "AMD",
        NFD + "cpu-model.family": "25",
        NFD + "cpu-model.id": "1",
        NFD + "cpu-cpuid.HYPERVISOR": "true",
    },
    cpu="16",
    memory="65843088Ki",
    gpus="1",
)

T4_PASSTHROUGH_OLD_LABELS = node(
    "vm-t4-0",
    {
        "cloud.google.com/gke-nodepool": "t4-pool",
        "nvidia.com/gpu.product": "Tesla-T4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.memory": "15360",
        "nvidia.com/cuda.driver.major": "470",
        "nvidia.com/cuda.driver.minor": "82",
        "nvidia.com/cuda.driver.rev": "01",
        "nvidia.com/cuda.runtime.major": "11",
        "nvidia.com/cuda.runtime.minor": "4",
        NFD + "cpu-model.vendor_id": "Intel",
        NFD + "cpu-cpuid.HYPERVISOR": "true",
    },
    cpu="8",
    memory="30833004Ki",
    gpus="1",
)

A100_MIG_SINGLE = node(
    "gpu-a100-mig-0",
    {
        "stack-advisor.io/pool": "a100-mig",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "7",
        "nvidia.com/gpu.memory": "4864",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-1g.5gb",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/cuda.driver-version.full": "535.161.08",
        NFD + "cpu-model.vendor_id": "AMD",
    },
    gpus="7",
)

CPU_ONLY_NO_NFD = node("cpu-0", {"node.kubernetes.io/instance-type": "m6i.4xlarge"}, cpu="16", memory="64Gi")

ALL_NODES = [A100_BARE_METAL, L4_VGPU, T4_PASSTHROUGH_OLD_LABELS, A100_MIG_SINGLE, CPU_ONLY_NO_NFD]
