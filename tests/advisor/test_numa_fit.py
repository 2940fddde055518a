"""NUMA advice never proposes a pod that ``single-numa-node`` would refuse (issue 44): for a pool
known only by NFD's memory-numa label, every GPU count either gets ``restricted`` or a Guaranteed
pod whose CPUs fit one NUMA node; the kubelet-admission rule is checked on the node's own CPU
count, not on a figure of the test's."""

from __future__ import annotations

import copy

from stack_advisor.advisor.cluster.numa import advise, one_numa_cpus
from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from tests.support.numa_nodes import A100_NFD_ONLY


def _pool(node: dict[str, object]) -> object:
    (pool,) = group_pools(nodes_from_json({"kind": "List", "items": [node]}))
    return pool


def test_single_numa_node_advice_fits_one_numa_node_for_every_gpu_count() -> None:
    big = copy.deepcopy(A100_NFD_ONLY)  # the shape: 224 CPUs, 8 GPUs, NFD labels only
    for key in ("capacity", "allocatable"):
        big["status"][key]["cpu"] = "224"
    for node in (A100_NFD_ONLY, big):
        pool = _pool(node)
        found = one_numa_cpus(pool.numa)  # type: ignore[attr-defined]
        assert found is not None
        for units in range(1, pool.gpus_per_node + 1):  # type: ignore[attr-defined]
            advice = advise(pool, units, [])
            assert advice.sizing is not None
            if advice.topology_manager_policy == "single-numa-node":
                assert advice.sizing.cpus <= found[0] - 1, (units, advice.sizing)
            else:
                assert advice.topology_manager_policy == "restricted"
                assert "spread evenly" in advice.summary
    eight = advise(_pool(big), 8, [])
    assert eight.topology_manager_policy == "restricted"  # 8 GPUs cannot share one of 2 nodes
