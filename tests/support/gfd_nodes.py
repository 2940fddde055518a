"""Node objects labelled the way NVIDIA GPU feature discovery and NFD label real nodes.

Label names and value formats follow the GFD and NFD documentation (gpu.product with spaces as
'-', gpu.memory in MiB, cuda.driver-version.* in GFD >= 0.15 and cuda.driver.* before it, MIG
single-strategy product names with the -MIG-<profile> suffix). The values are configuration
examples, not measurements."""

from __future__ import annotations

from typing import Any

NFD = "feature.node.kubernetes.io/"


def node(
    name: str,
    labels: dict[str, str],
    *,
    cpu: str = "64",
    memory: str = "528291220Ki",
    gpus: str | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
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
                "osImage": "Ubuntu 22.04.4 LTS",
                "kernelVersion": "5.15.0-105-generic",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.13",
                "kubeletVersion": "v1.35.4",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}
            ],
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

CPU_ONLY_NO_NFD = node(
    "cpu-0", {"node.kubernetes.io/instance-type": "m6i.4xlarge"}, cpu="16", memory="64Gi"
)

ALL_NODES = [A100_BARE_METAL, L4_VGPU, T4_PASSTHROUGH_OLD_LABELS, A100_MIG_SINGLE, CPU_ONLY_NO_NFD]


# ---- nodes for the placement-snippet tests (tests/kube/test_snippet.py) ---------------------
# One label marks them, so the snippet tests select among their own nodes only.
SNIPPET_SUITE = {"stack-advisor.io/suite": "snippet"}


def gpu_node(
    name: str,
    product: str,
    driver: str,
    *,
    labels: str = "new",
    gpus: int = 8,
    hypervisor: bool = False,
    vgpu: bool = False,
    mig_mixed: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A GPU node labelled as GFD and NFD label one. ``labels``: "new" (GFD >= 0.15:
    cuda.driver-version.{full,major,minor,revision}), "old" (cuda.driver.{major,minor,rev}) or
    "full-only". ``driver`` is written as GFD writes it, zero padding included ("470.82.01").
    ``mig_mixed``: MIG profile → instances, as the mixed strategy advertises them."""
    major, minor, rev = driver.split(".")
    out = {
        **SNIPPET_SUITE,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus),
        NFD + "cpu-model.vendor_id": "AMD",
        NFD + "cpu-cpuid.AVX2": "true",
    }
    if labels == "new":
        out.update(
            {
                "nvidia.com/cuda.driver-version.full": driver,
                "nvidia.com/cuda.driver-version.major": major,
                "nvidia.com/cuda.driver-version.minor": minor,
                "nvidia.com/cuda.driver-version.revision": rev,
            }
        )
    elif labels == "old":
        out.update(
            {
                "nvidia.com/cuda.driver.major": major,
                "nvidia.com/cuda.driver.minor": minor,
                "nvidia.com/cuda.driver.rev": rev,
            }
        )
    else:
        out["nvidia.com/cuda.driver-version.full"] = driver
    if hypervisor:
        out[NFD + "cpu-cpuid.HYPERVISOR"] = "true"
    if vgpu:
        out["nvidia.com/vgpu.present"] = "true"
    resources: dict[str, str] = {}
    if mig_mixed:
        out.update({"nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed"})
        for profile, count in mig_mixed.items():
            out[f"nvidia.com/mig-{profile}.count"] = str(count)
            resources[f"nvidia.com/mig-{profile}"] = str(count)
        gpus_free = "0"  # every GPU is partitioned
    else:
        gpus_free = str(gpus)
    made = node(name, out, gpus=gpus_free, taints=GPU_TAINT)
    for section in ("capacity", "allocatable"):
        made["status"][section].update(resources)
    return made


A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"
# Bare-metal A100 nodes around CUDA 12.0's minimum driver 525.60.13, in both label families.
DRIVER_NODES = [
    gpu_node("snip-a100-524-99-99", A100, "524.99.99"),
    gpu_node("snip-a100-525-60-12", A100, "525.60.12"),
    gpu_node("snip-a100-525-60-13", A100, "525.60.13"),
    gpu_node("snip-a100-525-61-00", A100, "525.61.00"),
    gpu_node("snip-a100-525-105-17", A100, "525.105.17"),  # minor 105 > 60 as integers, not as text
    gpu_node("snip-a100-550-54-15", A100, "550.54.15"),
    gpu_node("snip-a100-old-525-60-13", A100, "525.60.13", labels="old"),
    gpu_node("snip-a100-old-525-59-99", A100, "525.59.99", labels="old"),
    gpu_node("snip-a100-old-470-82-01", A100, "470.82.01", labels="old"),
    gpu_node("snip-a100-full-only", A100, "550.54.15", labels="full-only"),
]
PLACEMENT_NODES = [
    gpu_node("snip-a100-passthrough", A100, "550.54.15", hypervisor=True),
    gpu_node("snip-a100-vgpu", A100, "550.54.15", hypervisor=True, vgpu=True, gpus=4),
    gpu_node("snip-a100-2-gpus", A100, "550.54.15", gpus=2),
    gpu_node("snip-a100-mig-mixed", A100, "550.54.15", mig_mixed={"1g.10gb": 56}),
    gpu_node("snip-h100-passthrough", H100, "580.95.05", hypervisor=True, gpus=1),
    gpu_node("snip-h100-passthrough-580-65-05", H100, "580.65.05", hypervisor=True, gpus=1),
    gpu_node("snip-l4", "NVIDIA-L4", "550.54.15", gpus=1),
]
SNIPPET_NODES = DRIVER_NODES + PLACEMENT_NODES
