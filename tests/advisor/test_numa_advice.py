"""Placement inside the node: NFD/NodeResourceTopology parsing, pool grouping by NUMA layout,
the advice (policy, sizing, VM pinning) and the expected gain from measured pairs only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.cluster.numa import (
    UNKNOWN_GAIN,
    advise,
    guarantee,
    kubelet_fragment,
    measured_gains,
    size_pod,
)
from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
)
from stack_advisor.schema.numa_labels import (
    numa_from_labels,
    numa_from_nrt,
    numa_from_topology,
    quantity,
)
from tests.support.numa_nodes import A100_NFD_ONLY, H100_NODES, NRTS, T4_VM, nrt
from tests.support.samples import MEASURED, TORCH

# the sysfs trees the topology reader tests use (tests/collectors/test_topology.py)
DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


def _pools(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {p.name: p for p in group_pools(nodes_from_json({"kind": "List", "items": items}))}


def test_nrt_gives_zones_and_the_kubelet_policy() -> None:
    numa = numa_from_nrt(nrt("n"), 224, None)
    assert numa.multi and numa.numa_nodes == 2 and numa.source == "NodeResourceTopology"
    assert [(z.node, z.cpus, z.gpus, z.memory_mib) for z in numa.zones] == [
        (0, 112, 4, 1031912),
        (1, 112, 4, 1031912),
    ]
    assert (
        numa.topology_manager_policy == "single-numa-node" and numa.topology_manager_scope == "pod"
    )
    legacy = numa_from_nrt(
        {**nrt("n"), "attributes": [], "topologyPolicies": ["RestrictedPodLevel"]}
    )
    assert (legacy.topology_manager_policy, legacy.topology_manager_scope) == ("restricted", "pod")
    with pytest.raises(ValueError, match="'empty' has no zone of type Node"):
        numa_from_nrt(
            {"metadata": {"name": "empty"}, "zones": [{"name": "socket-0", "type": "Socket"}]}
        )
    assert (
        quantity("263840236Ki") == 263840236 * 1024
        and quantity("500m") == 0.5
        and quantity("x") is None
    )


def test_nfd_labels_say_more_than_one_or_one() -> None:
    assert (
        numa_from_labels({"feature.node.kubernetes.io/memory-numa": "true"}, 64, 1024).multi is True
    )
    single = numa_from_labels({"feature.node.kubernetes.io/cpu-model.id": "143"}, 64, None)
    assert single is not None and single.multi is False and single.numa_nodes == 1
    assert numa_from_labels({"nvidia.com/gpu.product": "NVIDIA-L4"}, 8, None) is None


def test_stored_fingerprint_gives_zones() -> None:
    from stack_advisor.collectors.fingerprint.topology import topology_of_tree

    numa = numa_from_topology(topology_of_tree(DATA / "dgx-a100-2gpu-slurm"), "dgx")
    assert numa.numa_nodes == 8 and [z.gpus for z in numa.zones] == [0, 2, 0, 2, 0, 2, 0, 2]


def test_pools_carry_the_numa_layout_and_split_on_it() -> None:
    pools = _pools([*H100_NODES, *NRTS, A100_NFD_ONLY, T4_VM])
    h100 = pools["h100-numa"]
    assert (
        h100.nodes == ["numa-h100-0", "numa-h100-1"] and h100.numa.source == "NodeResourceTopology"
    )
    assert (
        pools["a100-nfd"].numa.source == "NFD label" and pools["a100-nfd"].numa.numa_nodes is None
    )
    # one node of the pool without its NRT object: another layout, so the pool label is split
    split = _pools([*H100_NODES, NRTS[0]])
    assert len(split) == 2 and {p.numa.source for p in split.values()} == {
        "NodeResourceTopology",
        "NFD label",
    }


def test_advice_for_a_two_socket_pool() -> None:
    h100 = _pools([*H100_NODES, *NRTS])["h100-numa"]
    one = advise(h100, 1, [])
    assert one.applies and one.topology_manager_policy == "single-numa-node"
    # memory follows the GPU's node: Memory Manager Static, reservedMemory on each NUMA node
    # summing to the kubelet's default hard eviction threshold (100Mi)
    assert one.kubelet_config == kubelet_fragment("single-numa-node", [0, 1])
    assert one.kubelet_config["memoryManagerPolicy"] == "Static"
    assert one.kubelet_config["reservedMemory"] == [
        {"numaNode": 0, "limits": {"memory": "50Mi"}},
        {"numaNode": 1, "limits": {"memory": "50Mi"}},
    ]
    assert "Memory Manager Static" in one.summary
    assert any("memory_manager_state" in step for step in one.steps)
    assert one.sizing.cpus == 27 and one.sizing.memory_mib == int(
        1031912 / 4 * 0.9
    )  # 112/4 CPUs, one for the kubelet
    assert one.gain_note == UNKNOWN_GAIN and one.expected_gain == []
    eight = advise(h100, 8, [])
    assert eight.topology_manager_policy == "restricted" and eight.sizing.cpus == 8 * 28 - 1
    # restricted may spread the pod over NUMA nodes: its memory is not pinned to one
    assert "memoryManagerPolicy" not in eight.kubelet_config
    assert "span NUMA nodes" in eight.summary


def test_advice_with_nfd_only_assumes_an_even_spread_and_says_so() -> None:
    a100 = _pools([A100_NFD_ONLY])["a100-nfd"]
    advice = advise(a100, 2, [])
    assert advice.applies and advice.sizing.cpus == 2 * (64 // 8) - 1
    assert "assumes the GPUs spread evenly" in advice.sizing.rule


def test_vm_pool_gets_pinning_advice_with_evidence() -> None:
    t4 = _pools([T4_VM])["t4-pool"]
    advice = advise(t4, 1, [])
    assert advice.applies and advice.kubelet_config is None
    assert any(
        "hw:cpu_policy=dedicated" in line and "hw:pci_numa_affinity_policy=required" in line
        for line in advice.vm_pinning
    )
    assert any("HYPERVISOR" in e for e in advice.evidence)
    # the guest's NUMA count says where it comes from: here no memory-numa label, an inference
    # (a probe read "1 NUMA node(s) (NFD label)" of nodes that carried no such label)
    assert "the guest sees 1 NUMA node(s) (NFD label: inferred: " in advice.vm_pinning[0]
    assert "memory-numa absent" in advice.vm_pinning[0]


def test_guaranteed_pod() -> None:
    pod = {
        "kind": "Pod",
        "metadata": {},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    sizing = size_pod(numa_from_nrt(nrt("n")), 1, 8)
    guarantee(pod, sizing)
    res = pod["spec"]["containers"][0]["resources"]
    assert (
        res["requests"]
        == res["limits"]
        == {"nvidia.com/gpu": 1, "cpu": "27", "memory": f"{int(1031912 / 4 * 0.9)}Mi"}
    )


def _numa_obs(binding: str, value: float, acc: str, name: str = "h2d") -> Observation:
    return Observation(
        benchmark=Benchmark(
            family="numa",
            name=name,
            parameters={
                "binding": binding,
                "cpu_node": 0 if binding == "local" else 1,
                "memory_node": 0 if binding == "local" else 1,
                "home_node": 0,
                "size_bytes": 1 << 28,
                "gpu_index": 0,
            },
        ),
        metric="gbps",
        value=value,
        unit="GB/s",
        stack=TORCH,
        accelerator=Accelerator(model=acc),
        placement=Placement(kind=PlacementKind.BARE_METAL),
        host=Host(name="dgx-1"),
        run_id="r",
        provenance=MEASURED,
        source_key=binding,
    )


def test_expected_gain_only_from_measured_pairs(store) -> None:
    assert measured_gains(store, "H100-SXM5-80GB") == []
    store.ingest(
        IngestBatch(
            observations=[
                _numa_obs("local", 50.0, "H100-SXM5-80GB"),
                _numa_obs("remote", 40.0, "H100-SXM5-80GB"),
                _numa_obs("local", 30.0, "A100-SXM4-80GB", "input_pipeline"),
            ]
        )
    )
    (gain,) = measured_gains(store, "H100-SXM5-80GB")  # the A100 figure has no remote partner
    assert gain.gain == pytest.approx(1.25) and gain.basis == "observed" and gain.host == "dgx-1"
    (other,) = measured_gains(store, "A100-SXM4-80GB")
    assert other.basis == "transferred" and "transferred" in other.note


def test_a_stored_fingerprint_of_the_node_gives_the_zones(store) -> None:
    from stack_advisor.advisor.cluster.numa import with_stored_topologies
    from stack_advisor.collectors.fingerprint.topology import topology_of_tree

    obs = _numa_obs("local", 1.0, "A100-SXM4-80GB")
    obs.host = Host(name="numa-a100-0", topology=topology_of_tree(DATA / "dgx-a100-2gpu-slurm"))
    store.ingest(IngestBatch(observations=[obs]))
    (node,) = with_stored_topologies(nodes_from_json([A100_NFD_ONLY]), store)
    assert node.numa.source == "stored fingerprint" and node.numa.numa_nodes == 8
    pool = group_pools([node])[0]
    advice = advise(pool, 2, [])
    assert (
        advice.topology_manager_policy == "single-numa-node"
        and advice.sizing.cpus == 32 // 2 * 2 - 1
    )


def test_guaranteed_manifests_pass_strict_openapi_validation() -> None:
    """The Pod and the gang's pod templates, made Guaranteed, against Kubernetes' OpenAPI schemas
    (kubernetes-validate, strict); the real apiserver's dry run is in tests/kube."""
    import kubernetes_validate

    from stack_advisor.advisor.cluster.manifests import pool_manifests
    from stack_advisor.schema.models import SoftwareStack

    h100 = _pools([*H100_NODES, *NRTS])["h100-numa"]
    for units, pods in ((1, 1), (8, 2)):
        advice = advise(h100, units, [])
        manifests = pool_manifests(
            pool=h100,
            stack=SoftwareStack(framework="pytorch", framework_version="2.3.0"),
            image="registry.example.org/x:1",
            workload_name="w",
            units_per_pod=units,
            pods=pods,
        )
        for m in manifests:
            guarantee(m, advice.sizing)
        targets = [m for m in manifests if m["kind"] == "Pod"] + [
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "t"},
                "template": r["template"],
            }
            for m in manifests
            if m["kind"] == "PyTorchJob"
            for r in m["spec"]["pytorchReplicaSpecs"].values()
        ]
        assert targets
        for target in targets:
            kubernetes_validate.validate(target, "1.35.0", strict=True)
            spec = target.get("spec") or target["template"]["spec"]
            res = spec["containers"][0]["resources"]
            assert res["requests"] == res["limits"] and res["limits"]["cpu"] == str(
                advice.sizing.cpus
            )
