"""A small cluster of node pools labelled as GPU feature discovery, NFD and the GPU Operator label
real nodes (label names and value formats from their documentation; the values are configuration
examples, not measurements). Every node carries ``stack-advisor.io/test-cluster=pools`` so a test
can list just these on an apiserver shared with other tests.

Pools: A100 bare metal (2 nodes, tainted), L4 vGPU, T4 passthrough on driver 470 with pre-0.15
driver labels (GKE pool), A100 MIG single strategy, H100 MIG mixed strategy (EKS node group), one
AKS agent pool whose L4 nodes run two drivers (split into two pools), a KubeVirt node the GPU
Operator configured for VM passthrough, and a CPU node."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.gfd_nodes import (
    A100_BARE_METAL,
    A100_MIG_SINGLE,
    CPU_ONLY_NO_NFD,
    GPU_TAINT,
    L4_VGPU,
    NFD,
    T4_PASSTHROUGH_OLD_LABELS,
    node,
)

TEST_LABEL = "stack-advisor.io/test-cluster"
SELECTOR = f"{TEST_LABEL}=pools"


def _renamed(base: dict[str, Any], name: str, **labels: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out["metadata"]["name"] = name
    out["metadata"]["labels"].update(
        {"kubernetes.io/hostname": name, TEST_LABEL: "pools", **labels}
    )
    return out


def _with_resources(n: dict[str, Any], resources: dict[str, str]) -> dict[str, Any]:
    for key in ("capacity", "allocatable"):
        n["status"][key].pop("nvidia.com/gpu", None)
        n["status"][key].update(resources)
    return n


H100_MIXED = _with_resources(
    node(
        "p-h100-mixed-0",
        {
            TEST_LABEL: "pools",
            "eks.amazonaws.com/nodegroup": "h100-mig",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": "custom-4x1g-1x3g",
            "nvidia.com/mig-1g.10gb.count": "4",
            "nvidia.com/mig-1g.10gb.memory": "9856",
            "nvidia.com/mig-1g.10gb.multiprocessors": "16",
            "nvidia.com/mig-3g.40gb.count": "1",
            "nvidia.com/mig-3g.40gb.memory": "40192",
            "nvidia.com/mig-3g.40gb.multiprocessors": "60",
            "nvidia.com/cuda.driver-version.full": "550.90.07",
            "nvidia.com/cuda.driver-version.major": "550",
            "nvidia.com/cuda.driver-version.minor": "90",
            "nvidia.com/cuda.driver-version.revision": "07",
            "nvidia.com/cuda.runtime-version.full": "12.4",
            NFD + "cpu-model.vendor_id": "AMD",
            NFD + "cpu-cpuid.AVX512F": "true",
        },
        gpus=None,
    ),
    {"nvidia.com/mig-1g.10gb": "4", "nvidia.com/mig-3g.40gb": "1"},
)


def _l4_bare_metal(name: str, driver: str) -> dict[str, Any]:
    major, minor, rev = driver.split(".")
    return node(
        name,
        {
            TEST_LABEL: "pools",
            "agentpool": "gpupool",
            "nvidia.com/gpu.product": "NVIDIA-L4",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/gpu.memory": "23034",
            "nvidia.com/cuda.driver-version.full": driver,
            "nvidia.com/cuda.driver-version.major": major,
            "nvidia.com/cuda.driver-version.minor": minor,
            "nvidia.com/cuda.driver-version.revision": rev,
            NFD + "cpu-model.vendor_id": "Intel",
            NFD + "cpu-cpuid.AVX2": "true",
        },
        cpu="32",
        memory="131891200Ki",
        gpus="1",
    )


KUBEVIRT_PASSTHROUGH = node(
    "p-kubevirt-0",
    {
        TEST_LABEL: "pools",
        "stack-advisor.io/pool": "kubevirt",
        "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-40GB",
        "nvidia.com/gpu.workload.config": "vm-passthrough",
        NFD + "cpu-model.vendor_id": "Intel",
    },
    gpus=None,
)

POOL_NODES = [
    _renamed(A100_BARE_METAL, "p-a100-0"),
    _renamed(A100_BARE_METAL, "p-a100-1"),
    _renamed(L4_VGPU, "p-l4-vgpu-0"),
    _renamed(T4_PASSTHROUGH_OLD_LABELS, "p-t4-0"),
    _renamed(T4_PASSTHROUGH_OLD_LABELS, "p-t4-1"),
    _renamed(A100_MIG_SINGLE, "p-a100-mig-0"),
    H100_MIXED,
    _l4_bare_metal("p-l4-bm-0", "535.161.08"),
    _l4_bare_metal("p-l4-bm-1", "550.54.15"),
    KUBEVIRT_PASSTHROUGH,
    _renamed(CPU_ONLY_NO_NFD, "p-cpu-0"),
]
assert GPU_TAINT  # A100 nodes keep the GPU taint of their base


def h100_nodes(count: int) -> list[dict[str, Any]]:
    """``count`` 8-GPU H100 SXM nodes, labelled as GPU feature discovery labels them."""
    out = []
    for i in range(count):
        n = copy.deepcopy(A100_BARE_METAL)
        n["metadata"]["name"] = f"p-h100-{i}"
        n["metadata"]["labels"].update(
            {
                "kubernetes.io/hostname": f"p-h100-{i}",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.memory": "81559",
                "stack-advisor.io/pool": "h100-train",
            }
        )
        out.append(n)
    return out
