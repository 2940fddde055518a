"""Cluster-mode snippets (stack_advisor.advisor.cluster.pool_snippets) without an apiserver: which
objects each kind of pool gets (tests/kube/test_cluster_targets.py dry-runs them for real)."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.cluster.cpu_pools import all_pools
from stack_advisor.advisor.cluster.node_source import nodes_from_json
from stack_advisor.advisor.cluster.pool_snippets import pool_snippet
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import JobShape
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.schema.models import SoftwareStack
from tests.support.dra_nodes import node as dra_node
from tests.support.dra_nodes import resource_slice
from tests.support.gfd_nodes import node

STACK = SoftwareStack(framework="pytorch", framework_version="2.5.1", cuda="12.4")


def _pools() -> dict[str, NodePool]:
    cpu = node("cpu-a", {"stack-advisor.io/pool": "cpu-pool"}, cpu="16", memory="64Gi")
    items = [cpu, dra_node(), resource_slice(8)]
    return {p.name: p for p in all_pools(nodes_from_json({"kind": "List", "items": items}))}


def _snippet(pool: NodePool, target: SnippetTarget, units: int = 1) -> tuple[Any, str | None]:
    return pool_snippet(
        pool=pool,
        stack=STACK,
        image="registry.example.org/bench:1",
        workload_name="bench",
        shape=JobShape(units_per_pod=units, pods=1, total_units=units),
        target=target,
        training=False,
        framework="pytorch",
    )


def test_a_cpu_pool_is_not_taken_for_a_dra_pool() -> None:
    """A CPU pool's unit ('node') has no '/' like a DeviceClass, but requests nothing."""
    pools = _pools()
    assert pools["cpu-pool"].kind == "cpu" and pools["dra-h100"].kind == "gpu"
    (pod,), why = _snippet(pools["cpu-pool"], SnippetTarget.POD)
    assert why is None and pod["kind"] == "Pod" and "resourceClaims" not in pod["spec"]
    assert pod["spec"]["nodeSelector"] == {"stack-advisor.io/pool": "cpu-pool"}


def test_a_dra_only_pool_is_claimed_for_every_target_that_can_hold_it() -> None:
    dra = _pools()["dra-h100"]
    assert dra.resource == "gpu.nvidia.com" and dra.gpus_per_node == 8
    for target, kinds in (
        (SnippetTarget.POD, ["ResourceClaimTemplate", "Pod"]),
        (SnippetTarget.DRA, ["ResourceClaimTemplate", "Pod"]),
        (SnippetTarget.DEPLOYMENT, ["ResourceClaimTemplate", "Deployment"]),
        (SnippetTarget.JOBSET, ["ResourceClaimTemplate", "JobSet"]),
    ):
        objects, why = _snippet(dra, target, 8)
        assert [o["kind"] for o in objects] == kinds, (target, why)
        assert "nvidia.com/gpu" not in str(objects)
    objects, why = _snippet(dra, SnippetTarget.TRAINJOB, 8)
    assert objects == [] and why and "resourceClaims" in why
