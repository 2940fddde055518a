"""Nodes whose NUMA layout NFD publishes, for the placement-inside-the-node tests.

Two DGX H100-like nodes (2 sockets, 112 CPUs and 4 GPUs per NUMA node: the layout of the
`dgx-h100-8gpu` topology fixture, NVIDIA/nccl issue #1363) with NFD's NodeResourceTopology
objects (topology.node.k8s.io/v1alpha2, as nfd-topology-updater writes them); an A100 pool with
only NFD's memory-numa label; a T4 passthrough VM pool; a single-NUMA L4 node. Label names and
formats from the GFD/NFD documentation; capacities are configuration examples, not measurements."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.gfd_nodes import A100_BARE_METAL, GPU_TAINT, NFD, T4_PASSTHROUGH_OLD_LABELS, node

TEST_LABEL = "stack-advisor.io/test-cluster"
SELECTOR = f"{TEST_LABEL}=numa"
MEMORY_NUMA = NFD + "memory-numa"

H100_LABELS = {
    "stack-advisor.io/pool": "h100-numa",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/cuda.driver-version.full": "550.54.15",
    "nvidia.com/cuda.driver-version.major": "550",
    "nvidia.com/cuda.driver-version.minor": "54",
    "nvidia.com/cuda.driver-version.revision": "15",
    "nvidia.com/cuda.runtime-version.full": "12.4",
    "nvidia.com/mig.strategy": "none",
    NFD + "cpu-model.vendor_id": "Intel",
    NFD + "cpu-cpuid.AMXBF16": "true",
    MEMORY_NUMA: "true",
}


def _named(base: dict[str, Any], name: str, **labels: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out["metadata"]["name"] = name
    out["metadata"]["labels"].update({"kubernetes.io/hostname": name, TEST_LABEL: "numa", **labels})
    return out


def nrt(
    name: str,
    *,
    cpus: int = 112,
    memory: str = "1031912Mi",
    gpus: int = 4,
    policy: str = "single-numa-node",
) -> dict[str, Any]:
    """A NodeResourceTopology as nfd-topology-updater publishes it (v1alpha2)."""

    def zone(n: int) -> dict[str, Any]:
        resources = [
            {
                "name": "cpu",
                "capacity": str(cpus),
                "allocatable": str(cpus - (1 if n == 0 else 0)),
                "available": str(cpus - (1 if n == 0 else 0)),
            },
            {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory},
            {
                "name": "nvidia.com/gpu",
                "capacity": str(gpus),
                "allocatable": str(gpus),
                "available": str(gpus),
            },
        ]
        return {
            "name": f"node-{n}",
            "type": "Node",
            "resources": resources,
            "costs": [
                {"name": "node-0", "value": 10 if n == 0 else 21},
                {"name": "node-1", "value": 21 if n == 0 else 10},
            ],
        }

    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "labels": {TEST_LABEL: "numa"}},
        "topologyPolicies": [],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": "pod"},
        ],
        "zones": [zone(0), zone(1)],
    }


H100_NODES = [
    _named(
        node(
            f"numa-h100-{i}",
            H100_LABELS,
            cpu="224",
            memory="2113560576Ki",
            gpus="8",
            taints=GPU_TAINT,
        ),
        f"numa-h100-{i}",
    )
    for i in range(2)
]
A100_NFD_ONLY = _named(
    A100_BARE_METAL, "numa-a100-0", **{"stack-advisor.io/pool": "a100-nfd", MEMORY_NUMA: "true"}
)
T4_VM = _named(T4_PASSTHROUGH_OLD_LABELS, "numa-t4-vm-0")
NUMA_NODES = [*H100_NODES, A100_NFD_ONLY, T4_VM]
NRTS = [nrt(n["metadata"]["name"]) for n in H100_NODES]
