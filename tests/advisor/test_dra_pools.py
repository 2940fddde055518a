"""`--nodes` on a cluster that publishes its GPUs only through DRA: `kubectl get
nodes,resourceslices -o json` gives Nodes without GFD labels or nvidia.com/gpu capacity, and the
ResourceSlices that list the devices; the pools come from the slices."""

from __future__ import annotations

from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from tests.support.dra_nodes import DRA_NODE, PRODUCT, node, resource_slice


def test_pools_come_from_resource_slices_when_nodes_carry_no_gpu_labels() -> None:
    bare = nodes_from_json({"kind": "List", "items": [node()]})
    assert bare[0].accelerator is None  # the labels alone know of no GPU

    (parsed,) = nodes_from_json({"kind": "List", "items": [node(), resource_slice(8)]})
    assert parsed.name == DRA_NODE and parsed.accelerator is not None
    assert parsed.accelerator.model == PRODUCT.replace(" ", "-")
    assert (parsed.accelerator.count, parsed.allocatable_gpus) == (8, 8)
    assert parsed.accelerator.memory_mib == 81559 and parsed.accelerator.compute_capability == "9.0"
    assert parsed.driver == "570.124.6"
    (pool,) = group_pools([parsed])
    assert pool.accelerator is not None and pool.accelerator.startswith("H100")
    assert pool.gpus_per_node == 8


def test_mig_devices_and_slices_of_other_nodes_are_not_counted() -> None:
    mig = resource_slice(2)
    mig["spec"]["devices"][1]["attributes"]["type"] = {"string": "mig"}
    other = resource_slice(4)
    other["spec"]["nodeName"] = "another-node"
    (parsed,) = nodes_from_json({"kind": "List", "items": [node(), mig, other]})
    assert parsed.accelerator is not None and parsed.accelerator.count == 1
