"""Node pools from GFD/NFD labels: grouping, splitting, resources, targeting, job shapes, input
errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_advisor.advisor.cluster.manifests import pool_manifests
from stack_advisor.advisor.cluster.pools import (
    group_pools,
    nodes_from_json,
    read_nodes_file,
    resolve_gfd_product,
)
from stack_advisor.advisor.cluster.targets import job_shape, parse_what_if
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind, SoftwareStack
from tests.support.gfd_pools import POOL_NODES


@pytest.fixture(scope="module")
def pools():  # type: ignore[no-untyped-def]
    return {p.name: p for p in group_pools(nodes_from_json({"kind": "List", "items": POOL_NODES}))}


def test_pools_are_grouped_by_pool_label_and_split_when_nodes_differ(pools) -> None:  # type: ignore[no-untyped-def]
    assert set(pools) == {
        "a100-bm",
        "a100-mig",
        "gpupool/535.161.08",
        "gpupool/550.54.15",
        "h100-mig[mig-1g.10gb]",
        "h100-mig[mig-3g.40gb]",
        "kubevirt",
        "l4-vgpu",
        "t4-pool",
    }
    a100 = pools["a100-bm"]
    assert a100.nodes == ["p-a100-0", "p-a100-1"] and a100.schedulable_nodes == 2
    assert (a100.accelerator, a100.gpus_per_node, a100.driver, a100.placement) == (
        "A100-SXM4-80GB",
        8,
        "550.54.15",
        PlacementKind.BARE_METAL,
    )
    assert a100.node_selector == {"stack-advisor.io/pool": "a100-bm"}
    assert a100.tolerations() == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]
    # one agentpool label, two drivers: two pools, each selected by its GFD labels as well
    old, new = pools["gpupool/535.161.08"], pools["gpupool/550.54.15"]
    assert old.node_selector["nvidia.com/cuda.driver-version.full"] == "535.161.08"
    assert (
        new.node_selector["agentpool"] == "gpupool"
        and new.node_selector["nvidia.com/gpu.product"] == "NVIDIA-L4"
    )
    assert {
        "key": "feature.node.kubernetes.io/cpu-cpuid.HYPERVISOR",
        "operator": "DoesNotExist",
    } in new.match_expressions
    t4 = pools["t4-pool"]
    assert (t4.driver, t4.placement, t4.pool_label) == (
        "470.82.01",
        PlacementKind.PASSTHROUGH,
        "cloud.google.com/gke-nodepool",
    )


def test_vgpu_and_mig_pools_get_their_resources(pools) -> None:  # type: ignore[no-untyped-def]
    vgpu = pools["l4-vgpu"]
    assert vgpu.placement is PlacementKind.VGPU and vgpu.resource == "nvidia.com/gpu"
    single = pools["a100-mig"]
    assert (single.resource, single.mig_profile, single.gpus_per_node) == (
        "nvidia.com/gpu",
        "1g.5gb",
        7,
    )
    assert (
        single.kb_name == "NVIDIA A100 SXM4 40GB (1x1g.5gb MIG)"
        and single.accelerator == "A100-SXM4-40GB"
    )
    small, large = pools["h100-mig[mig-1g.10gb]"], pools["h100-mig[mig-3g.40gb]"]
    assert (small.resource, small.gpus_per_node, small.gpu_memory_mib) == (
        "nvidia.com/mig-1g.10gb",
        4,
        9856,
    )
    assert (large.resource, large.gpus_per_node) == ("nvidia.com/mig-3g.40gb", 1)
    assert small.accelerator == "H100-SXM5-80GB" and small.node_selector == {
        "eks.amazonaws.com/nodegroup": "h100-mig"
    }
    stack = SoftwareStack(cuda="12.4", framework="torch", framework_version="2.5.1")
    (pod,) = pool_manifests(
        pool=small,
        stack=stack,
        image="example.org/torch:2.5.1",
        workload_name="bert",
        units_per_pod=2,
        pods=1,
    )
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/mig-1g.10gb": 2}}
    assert pod["spec"]["containers"][0]["image"] == "example.org/torch:2.5.1"
    assert pod["spec"]["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "h100-mig"}


def test_vm_configured_gpus_are_not_offered_to_pods(pools) -> None:  # type: ignore[no-untyped-def]
    kubevirt = pools["kubevirt"]
    assert not kubevirt.usable and "vm-passthrough" in str(kubevirt.reason)


def test_job_shapes_and_gangs(pools) -> None:  # type: ignore[no-untyped-def]
    a100 = pools["a100-bm"]
    assert job_shape(a100, None, None).model_dump() == {
        "units_per_pod": 8,
        "pods": 1,
        "total_units": 8,
    }
    assert job_shape(a100, 4, None).model_dump() == {
        "units_per_pod": 4,
        "pods": 1,
        "total_units": 4,
    }
    assert job_shape(a100, 16, None).model_dump() == {
        "units_per_pod": 8,
        "pods": 2,
        "total_units": 16,
    }
    assert "it has 2 schedulable" in job_shape(a100, 24, None)  # type: ignore[operator]
    assert "its nodes have 8" in job_shape(a100, 18, 2)  # type: ignore[operator]
    with pytest.raises(InvalidInput, match="does not split evenly"):
        job_shape(a100, 15, 2)
    stack = SoftwareStack(cuda="12.4", framework="torch", framework_version="2.5.1")
    group, job = pool_manifests(
        pool=a100,
        stack=stack,
        image="example.org/torch:2.5.1",
        workload_name="llm",
        units_per_pod=8,
        pods=2,
    )
    assert group["kind"] == "PodGroup" and group["spec"] == {
        "minMember": 2,
        "minResources": {"nvidia.com/gpu": "16"},
    }
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] == 1 and replicas["Worker"]["replicas"] == 1
    spec = replicas["Worker"]["template"]["spec"]
    assert spec["schedulerName"] == "volcano" and spec["containers"][0]["name"] == "pytorch"
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    assert spec["tolerations"] == a100.tolerations()


def test_gfd_products_resolve_through_one_function() -> None:
    assert resolve_gfd_product("Tesla-T4").spec.id == "T4"  # type: ignore[union-attr]
    mig = resolve_gfd_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
    assert mig.spec is not None and (mig.spec.id, mig.mig_profile) == ("A100-SXM4-40GB", "1g.5gb")
    shared = resolve_gfd_product("NVIDIA-L4-SHARED")
    assert shared.shared and shared.spec is not None and shared.spec.id == "L4"
    assert resolve_gfd_product("NVIDIA-Imaginary-9000").spec is None


def test_bad_nodes_input_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="expected `kubectl get nodes -o json` output"):
        nodes_from_json({"kind": "PodList", "items": None})
    with pytest.raises(InvalidInput, match=r"items\.0: kind 'Pod' is not a Node"):
        nodes_from_json({"items": [{"kind": "Pod", "metadata": {"name": "x"}}]})
    with pytest.raises(InvalidInput, match=r"items\.0\.metadata\.name"):
        nodes_from_json({"items": [{"kind": "Node", "metadata": {}}]})
    with pytest.raises(InvalidInput, match=r"items\.0\.metadata\.name"):
        nodes_from_json({"items": [{"metadata": 5}]})
    with pytest.raises(InvalidInput, match=r"items\.0 \(n1\): not a Node object"):
        nodes_from_json({"items": [{"metadata": {"name": "n1", "labels": ["not", "a", "map"]}}]})
    with pytest.raises(
        InvalidInput, match=r"items\.0: neither a Node object nor a stored inventory node"
    ):
        nodes_from_json([{"name": 5}])
    bad = tmp_path / "nodes.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInput, match="is not JSON"):
        read_nodes_file(str(bad))
    with pytest.raises(InvalidInput, match="cannot read"):
        read_nodes_file(str(tmp_path / "missing.json"))
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"items": POOL_NODES}))
    assert len(read_nodes_file(str(good))) == len(POOL_NODES)
    assert len(read_nodes_file("-", json.dumps({"items": POOL_NODES[:2]}))) == 2
    with pytest.raises(InvalidInput, match="POOL=VERSION"):
        parse_what_if(["t4-pool"])
    assert parse_what_if(["gpupool/535.161.08=550.54.15"]) == {"gpupool/535.161.08": "550.54.15"}
