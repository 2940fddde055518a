"""GFD/NFD node labels → Host, Accelerator, Placement and driver."""

from __future__ import annotations

from typing import Any

import pytest

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.inventory import (
    ClusterNode,
    nodes_satisfying,
    parse_node,
    placement_from_labels,
)
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.base import Store
from tests.support.gfd_nodes import (
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
    assert (n.accelerator.model, n.accelerator.count, n.accelerator.memory_mib) == (
        "NVIDIA-A100-SXM4-80GB",
        8,
        81920,
    )
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
    assert (
        n.accelerator.count == 7
        and n.mig["strategy"] == "single"
        and n.mig["mig.config"] == "all-1g.5gb"
    )
    # NFD cpu-model labels but no HYPERVISOR label: bare metal, and the evidence says why.
    assert n.placement.kind is PlacementKind.BARE_METAL
    assert any("absent" in e for e in n.placement.evidence)


def test_cpu_node_without_nfd_is_unknown_not_guessed() -> None:
    n = parse_node(CPU_ONLY_NO_NFD)
    assert n.accelerator is None and n.driver is None
    assert n.placement.kind is PlacementKind.UNKNOWN
    assert n.host.memory_mib == 65536 and n.pool == "m6i.4xlarge"


def test_vgpu_label_contradicting_bare_metal_cpuid_is_flagged() -> None:
    p = placement_from_labels(
        {
            "nvidia.com/gpu.product": "NVIDIA-L4",
            "nvidia.com/vgpu.present": "true",
            "feature.node.kubernetes.io/cpu-cpuid.HYPERVISOR": "false",
        }
    )
    assert p.kind is PlacementKind.VGPU and p.consistent is False


def test_pools_satisfying_a_recommendation() -> None:
    nodes = [parse_node(n) for n in ALL_NODES]
    groups = nodes_satisfying(nodes, placement=PlacementKind.BARE_METAL, min_driver="545")
    assert list(groups) == ["a100-bm"]
    groups = nodes_satisfying(nodes, accelerator="Tesla-T4")
    assert [n.name for n in groups["t4-pool"]] == ["vm-t4-0"]
    assert nodes_satisfying(nodes, min_gpus=8).keys() == {"a100-bm"}


class _InventoryOnlyStore(Store):
    """Just enough of a Store to exercise the base class's inventory validation (the real
    backends' storage is tested by their own contract suite once they keep an inventory)."""

    def __init__(self) -> None:
        self.kept: dict[str, list[dict]] = {}

    def _sync_inventory(self, cluster: str, nodes: list[dict]) -> int:
        self.kept[cluster] = nodes
        return len(nodes)

    def _list_inventory(self, cluster: str | None) -> list[dict]:
        return [n for c, ns in sorted(self.kept.items()) if cluster in (None, c) for n in ns]

    def _unused(self, *args: object) -> Any:
        raise AssertionError("not part of this test")

    _ensure_schema = _schema_version = _ingest = _query_observations = _list_entities = _stats = (
        _unused
    )

    def close(self) -> None:
        return None


def test_store_inventory_validation_names_the_field() -> None:
    store = _InventoryOnlyStore()
    docs = [parse_node(n).model_dump(mode="json") for n in ALL_NODES]
    assert store.sync_inventory("prod", docs) == 5
    assert [ClusterNode.model_validate(d).name for d in store.list_inventory("prod")] == [
        n["metadata"]["name"] for n in ALL_NODES
    ]
    with pytest.raises(InvalidInput, match=r"nodes\.1\.name: 'gpu-a100-0' appears twice"):
        store.sync_inventory("prod", [docs[0], docs[0]])
    with pytest.raises(InvalidInput, match=r"nodes\.0\.name: a node needs a non-empty name"):
        store.sync_inventory("prod", [{"pool": "x"}])
    with pytest.raises(InvalidInput, match="cluster: ' ' cannot name an inventory: it is blank"):
        store.sync_inventory(" ", docs)


def test_backends_without_an_inventory_say_which_class() -> None:
    class NoInventory(_InventoryOnlyStore):
        _sync_inventory = Store._sync_inventory
        _list_inventory = Store._list_inventory

    with pytest.raises(NotImplementedError, match="NoInventory does not keep a node inventory"):
        NoInventory().sync_inventory("prod", [])
