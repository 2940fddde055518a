"""A node whose GPUs only a DRA driver publishes: no GPU feature discovery labels, no
``nvidia.com/gpu`` capacity, and a ``resource.k8s.io/v1`` ResourceSlice of the NVIDIA DRA
driver's shape (attributes productName, type, driverVersion, cudaComputeCapability; capacity
memory) listing its eight GPUs."""

from __future__ import annotations

from typing import Any

DRA_NODE = "dra-h100-0"
PRODUCT = "NVIDIA H100 80GB HBM3"  # NVML's name for the H100 SXM5 80GB


def node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": DRA_NODE,
            "labels": {
                "kubernetes.io/hostname": DRA_NODE,
                "kubernetes.io/arch": "amd64",
                "stack-advisor.io/pool": "dra-h100",
            },
        },
        "status": {
            "capacity": {"cpu": "128", "memory": "1056000000Ki", "pods": "110"},
            "allocatable": {"cpu": "126", "memory": "1040000000Ki", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def resource_slice(gpus: int = 8) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": PRODUCT},
                "driverVersion": {"version": "570.124.6"},
                "cudaComputeCapability": {"version": "9.0.0"},
                "index": {"int": i},
            },
            "capacity": {"memory": {"value": "81559Mi"}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{DRA_NODE}-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": DRA_NODE,
            "pool": {"name": DRA_NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
