"""GFD/NFD node labels → Host, Accelerator, Placement and driver."""

from __future__ import annotations

from collectors.inventory import nodes_satisfying, parse_node, placement_from_labels
from graph_schema.models import PlacementKind
from tests.kube.gfd_nodes import (
    A100_BARE_METAL,
    A100_MIG_SINGLE,
    ALL_NODES,
    CPU_ONLY_NO_NFD,
    L4_VGPU,
    T4_PASSTHROUGH_OLD_LABELS,
)


def test_bare_metal_a100_with_current_gfd_labels() -> None:
    n = parse_node(A100_BARE_METAL)
    assert n.accelerator is not None
    assert (n.accelerator.model, n.accelerator.count, n.accelerator.memory_mib) == ("NVIDIA-A100-SXM4-80GB", 8, 81920)
    assert n.accelerator.compute_capability == "8.0"
    assert (n.driver, n.cuda_driver) == ("550.54.15", "12.4")
    assert n.placement.kind is PlacementKind.BARE_METAL
    assert n.pool == "a100-bm" and n.selector() == {"stack-advisor.io/pool": "a100-bm"}
    assert n.host.cpu_model == "Intel family 6 model 143"
    assert {"AVX512F", "AMXBF16"} <= set(n.host.cpu_flags)
    assert (n.host.cores, n.host.memory_mib) == (64, 515909)
    assert n.host.kernel == "5.15.0-105-generic" and n.ready is True
    assert n.taints == ["nvidia.com/gpu=present:NoSchedule"]
    assert n.mig["strategy"] == "none" and n.mig["mig.capable"] == "true"


def test_vgpu_vm() -> None:
    n = parse_node(L4_VGPU)
    assert n.placement.kind is PlacementKind.VGPU
    assert n.placement.vgpu_profile == "NVIDIA-L4"
    assert "nvidia.com/vgpu.present=true" in n.placement.evidence
    assert n.placement.consistent


def test_passthrough_vm_with_pre_0_15_driver_labels() -> None:
    n = parse_node(T4_PASSTHROUGH_OLD_LABELS)
    assert n.placement.kind is PlacementKind.PASSTHROUGH
    assert (n.driver, n.cuda_driver) == ("470.82.01", "11.4")
    assert n.pool == "t4-pool" and n.pool_label == "cloud.google.com/gke-nodepool"


def test_mig_single_strategy() -> None:
    n = parse_node(A100_MIG_SINGLE)
    assert n.accelerator is not None and n.accelerator.model.endswith("-MIG-1g.5gb")
    assert n.accelerator.count == 7 and n.mig["strategy"] == "single" and n.mig["mig.config"] == "all-1g.5gb"
    # NFD cpu-model labels but no HYPERVISOR label: bare metal, and the evidence says why.
    assert n.placement.kind is PlacementKind.BARE_METAL
    assert any("absent" in e for e in n.placement.evidence)


def test_cpu_node_without_nfd_is_unknown_not_guessed() -> None:
    n = parse_node(CPU_ONLY_NO_NFD)
    assert n.accelerator is None and n.driver is None
    assert n.placement.kind is PlacementKind.UNKNOWN
    assert n.host.memory_mib == 65536 and n.pool == "m6i.4xlarge"


def test_vgpu_label_contradicting_bare_metal_cpuid_is_flagged() -> None:
    p = placement_from_labels({
        "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/vgpu.present": "true",
        "feature.node.kubernetes.io/cpu-cpuid.HYPERVISOR": "false",
    })
    assert p.kind is PlacementKind.VGPU and p.consistent is False


def test_pools_satisfying_a_recommendation() -> None:
    nodes = [parse_node(n) for n in ALL_NODES]
    groups = nodes_satisfying(nodes, placement=PlacementKind.BARE_METAL, min_driver="545")
    assert list(groups) == ["a100-bm"]
    groups = nodes_satisfying(nodes, accelerator="Tesla-T4")
    assert [n.name for n in groups["t4-pool"]] == ["vm-t4-0"]
    assert nodes_satisfying(nodes, min_gpus=8).keys() == {"a100-bm"}
