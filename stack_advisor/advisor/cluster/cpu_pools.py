"""CPU-only node pools: nodes with no GPU that a pool label names (``stack-advisor.io/pool``, a GKE
node pool, an EKS node group, ... or ``--pool-label``), for the benchmarks that run on CPUs (the PI
suite's memory, FMA and GEMM kernels).

The basis of a CPU pool's figure is always ``measured``: a knowledge-base figure counts for the
pool only when our collectors measured it, on a CPU, on one of the pool's own nodes (the figure's
hosts and the pool's node names meet). Nothing is interpolated or transferred to a CPU pool:
Kubernetes labels do not name the CPU (NFD's ``cpu-model.*`` labels are vendor, family and model
ids, not the part the knowledge base records), and the engine's model is fitted on accelerator
specs. A CPU pool with no such figure is excluded with that reason; run the plan's CPU benchmarks
on it first. GPU pools are untouched: their nodes carry GFD's product label and never become CPU
pools, and the instance type (the pool label of last resort for GPU nodes) does not make a CPU
pool, so an unlabelled CPU node (a control-plane node, say) stays out as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from stack_advisor.advisor.cluster.pool_devices import dra_device_class
from stack_advisor.advisor.cluster.pools import (
    EXTRA_POOL_LABELS,
    NodePool,
    group_pools,
    node_taints,
)
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.results import Recommendation
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.inventory import POOL_LABELS, ClusterNode

# A CPU pool's unit: a whole node (its benchmarks measure the node; a Pod requests no extended
# resource).
CPU_POOL_RESOURCE = "node"
CPU_PRODUCT = "CPU-only"
UNMEASURED = "not measured on the pool's nodes"
UNMEASURED_REASON = (
    "CPU-only pool: its figures are only those our collectors measured on its own nodes "
    "(no CPU model to predict from), and none is recorded for this benchmark; "
    "run the plan's CPU benchmarks on it (advisor plan render/submit)"
)
# pool labels that someone set to form a pool (the instance type is a machine type, not a pool)
_CPU_POOL_LABELS = tuple(
    label
    for label in (*POOL_LABELS, *EXTRA_POOL_LABELS)
    if label != "node.kubernetes.io/instance-type"
)


def _pool_label(node: ClusterNode, configured: str | None) -> tuple[str, str] | None:
    labels = node.host.labels
    for key in (configured,) if configured else _CPU_POOL_LABELS:
        if labels.get(key):
            return key, labels[key]
    return None


def _has_gpus(node: ClusterNode) -> bool:
    """Whether the node offers any vendor's GPU resource (a Gaudi node carries no product label:
    its GPUs are unnamed, not absent)."""
    return any(n > 0 for n in node.gpu_resources.values())


def cpu_pools(nodes: Iterable[ClusterNode], *, pool_label: str | None = None) -> list[NodePool]:
    """Nodes without GPUs (no product label of any vendor, no GPU resource, no DRA devices),
    grouped by their pool label (nodes without one are left out), as ``NodePool(kind="cpu")``:
    one node is one unit, selected by the pool label."""
    groups: dict[tuple[str, str], list[ClusterNode]] = {}
    for node in nodes:
        if node.accelerator is not None or dra_device_class(node) or _has_gpus(node):
            continue  # a GPU node (labelled by GFD or another vendor's labeller, or DRA)
        key = _pool_label(node, pool_label)
        if key is not None:
            groups.setdefault(key, []).append(node)
    pools = []
    for (label, value), members in sorted(groups.items()):
        first = members[0]
        pools.append(
            NodePool(
                name=value,
                kind="cpu",
                pool_label=label,
                pool_value=value,
                nodes=sorted(n.name for n in members),
                schedulable_nodes=sum(
                    1 for n in members if n.ready is not False and not n.unschedulable
                ),
                product=CPU_PRODUCT,
                accelerator=None,
                kb_name="CPU",
                gpus_per_node=1,
                resource=CPU_POOL_RESOURCE,
                placement=first.placement.kind,
                placement_evidence=list(first.placement.evidence),
                taints=node_taints(members),
                node_selector={label: value},
                numa=first.numa,
            )
        )
    return pools


def all_pools(nodes: list[ClusterNode], *, pool_label: str | None = None) -> list[NodePool]:
    """The GPU pools (``group_pools``) and then the CPU-only pools of the same nodes."""
    return group_pools(nodes, pool_label=pool_label) + cpu_pools(nodes, pool_label=pool_label)


def cpu_workload(workload: Workload) -> Workload:
    """The workload asked of the knowledge base's CPU rows only (the name selector ``cpu``)."""
    hw = workload.hardware.model_copy(
        update={
            "accelerators": ["cpu"],
            "driver": None,
            "include_cpu": True,
            "placements": None,
            "count": None,
            "min_count": None,
            "max_count": None,
        }
    )
    return workload.model_copy(
        # every stack ranked: a pool's rows are (pool, stack) pairs, not the default view's one
        # row per stack family
        update={"hardware": hw, "per_accelerator": None, "all_rows": True}
    )


def measured_on(recs: Iterable[Recommendation], pool: NodePool) -> list[Recommendation]:
    """The recommendations our collectors measured on a CPU on one of the pool's nodes."""
    nodes = set(pool.nodes)
    return [
        r
        for r in recs
        if accelerator_class(
            r.candidate.published_names[0]
            if r.candidate.published_names
            else r.candidate.accelerator
        )
        == "cpu"
        and any(s != "mlperf-inference" for s in r.evidence.sources)
        and nodes & set(r.evidence.submitters)
    ]
