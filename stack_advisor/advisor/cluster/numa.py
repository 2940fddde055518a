"""Placement inside the node: what aligns a GPU pod (or a GPU VM) with the GPU's NUMA node.

For a pool whose nodes have more than one NUMA node: the kubelet's Topology Manager
(``single-numa-node`` when the pod's GPUs fit one NUMA node, else ``restricted``, scope ``pod``) and
CPU Manager ``static`` as a KubeletConfiguration fragment for the pool's nodes, and a Guaranteed-QoS
pod whose integer CPU request (and memory) is the GPU's share of its NUMA node, so the kubelet
can give it exclusive CPUs next to its GPUs. For PCI-passthrough and vGPU pools: pin the VM's vCPUs
and memory to the GPU's host NUMA node (OpenStack flavor extra specs), with the evidence.

The expected gain is never made up: it is the ratio of NUMA-local to NUMA-remote figures the
knowledge base holds (``advisor collect --benchmark numa``), labelled observed (same GPU as the
pool) or transferred (another GPU), or "unknown" when there is no measured pair.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.schema.models import ObservationFilter, PlacementKind
from stack_advisor.schema.numa_labels import numa_from_topology
from stack_advisor.schema.topology import NodeNuma

KUBELET_API = "kubelet.config.k8s.io/v1beta1"
# The kubelet's default hard eviction threshold, memory.available<100Mi
# (https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/)
EVICTION_MEMORY_MIB = 100
MEMORY_SHARE = 0.9  # of the GPU's share of its NUMA node's memory: the rest stays for the system
PAIR_KEYS = ("binding", "cpu_node", "memory_node")
UNKNOWN_GAIN = (
    "unknown: the knowledge base holds no NUMA-local/remote pair (run `advisor collect "
    "--benchmark numa` on a node with more than one NUMA node)"
)


class NumaGain(BaseModel):
    """One measured pair: the same benchmark NUMA-local and NUMA-remote on one host."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    unit: str
    local: float
    remote: float
    gain: float = Field(description="local / remote (higher is better)")
    basis: Literal["observed", "transferred"]
    host: str | None
    accelerator: str
    note: str


class PodSizing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cpus: int = Field(ge=1)
    memory_mib: int | None = Field(default=None, ge=1)
    rule: str


class NumaAdvice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    applies: bool
    summary: str
    topology_manager_policy: str | None = None
    kubelet_config: dict[str, Any] | None = None
    sizing: PodSizing | None = None
    vm_pinning: list[str] = Field(default_factory=list)
    expected_gain: list[NumaGain] = Field(default_factory=list)
    gain_note: str = UNKNOWN_GAIN
    evidence: list[str] = Field(default_factory=list)
    steps: list[str] = Field(default_factory=list)


# ---- measured pairs ------------------------------------------------------------------------------
def measured_gains(store: Any, accelerator: str | None = None) -> list[NumaGain]:
    """Local/remote pairs of the knowledge base's ``numa`` observations; ``accelerator`` (a
    resolved name) marks pairs on the same GPU observed, others transferred."""
    from stack_advisor.advisor.knowledge.specs import resolve_accelerator

    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for obs in store.iter_observations(ObservationFilter(benchmark_family="numa")):
        params = dict(obs.benchmark.parameters)
        binding = params.get("binding")
        if binding not in ("local", "remote") or not obs.valid:
            continue
        rest = json.dumps(
            {k: v for k, v in params.items() if k not in PAIR_KEYS}, sort_keys=True, default=str
        )
        key = (
            obs.host.name if obs.host else None,
            obs.accelerator.model,
            obs.benchmark.name,
            rest,
            obs.unit,
        )
        groups.setdefault(key, {})[binding] = obs
    wanted = resolve_accelerator(accelerator).key if accelerator else None
    out = []
    for (host, acc, name, _rest, unit), pair in sorted(
        groups.items(), key=lambda kv: tuple(map(str, kv[0]))
    ):
        if set(pair) != {"local", "remote"} or pair["remote"].value <= 0:
            continue
        local, remote = pair["local"], pair["remote"]
        same = wanted is not None and resolve_accelerator(acc).key == wanted
        out.append(
            NumaGain(
                benchmark=f"numa/{name}",
                unit=unit,
                local=local.value,
                remote=remote.value,
                gain=local.value / remote.value,
                basis="observed" if same else "transferred",
                host=host,
                accelerator=acc,
                note=(
                    f"measured on {host or 'an unnamed host'} ({acc}): local "
                    f"{local.value:.4g} vs remote "
                    f"{remote.value:.4g} {unit}"
                    + ("" if same else "; another GPU: transferred, not this pool's")
                ),
            )
        )
    return out


# ---- the kubelet ------------------------------------------------------------------------------
def kubelet_fragment(policy: str, numa_nodes: list[int] | None = None) -> dict[str, Any]:
    """The KubeletConfiguration fields that align a pod's CPUs, memory and GPUs; with the NUMA
    nodes' ids, the Memory Manager's too (``memory_manager``)."""
    fragment: dict[str, Any] = {
        "apiVersion": KUBELET_API,
        "kind": "KubeletConfiguration",
        "cpuManagerPolicy": "static",
        # the static policy hands out whole CPUs and needs some reserved for the system
        "kubeReserved": {"cpu": "1"},
        "topologyManagerPolicy": policy,
        "topologyManagerScope": "pod",
    }
    if numa_nodes:
        fragment.update(memory_manager(numa_nodes))
    return fragment


def memory_manager(numa_nodes: list[int]) -> dict[str, Any]:
    """Memory Manager ``Static``: a Guaranteed pod's memory comes from the NUMA node the Topology
    Manager chose for its CPUs and GPUs. The kubelet starts only when ``reservedMemory`` summed
    over the NUMA nodes equals kubeReserved + systemReserved memory + the hard eviction threshold
    of ``memory.available``; this fragment reserves no kube or system memory and keeps the
    kubelet's default threshold (100Mi), so the reservations sum to 100Mi, split over the nodes
    (the remainder on the first)."""
    share, rest = divmod(EVICTION_MEMORY_MIB, len(numa_nodes))
    return {
        "memoryManagerPolicy": "Static",
        "reservedMemory": [
            {"numaNode": node, "limits": {"memory": f"{share + (rest if i == 0 else 0)}Mi"}}
            for i, node in enumerate(numa_nodes)
        ],
    }


def numa_node_ids(numa: NodeNuma) -> list[int]:
    """The NUMA nodes' ids: the zones', else 0..n-1; [0] where only "more than one" is known
    (all of the reservation on node 0 still sums right)."""
    if numa.zones:
        return sorted({z.node for z in numa.zones})
    return list(range(numa.numa_nodes)) if numa.numa_nodes else [0]


def _gpu_zones(numa: NodeNuma) -> list[Any]:
    return [z for z in numa.zones if z.gpus]


def size_pod(numa: NodeNuma, units: int, gpus_per_node: int) -> PodSizing | None:
    """CPUs (integer) and memory for a pod of ``units`` GPUs: its GPUs' share of their NUMA node."""
    zones = _gpu_zones(numa)
    if zones and all(z.cpus for z in zones):
        per_gpu = min(z.cpus // z.gpus for z in zones)
        mem = [z.memory_mib / z.gpus for z in zones if z.memory_mib]
        memory = int(min(mem) * units * MEMORY_SHARE) if len(mem) == len(zones) else None
        rule = (
            f"{per_gpu} CPUs per GPU: the fewest CPUs per GPU of a NUMA node that has "
            f"GPUs ({numa.source})"
            + (
                f"; memory {MEMORY_SHARE:.0%} of the GPUs' share of their node's memory"
                if memory
                else ""
            )
        )
    elif numa.node_cpus and gpus_per_node:
        per_gpu = numa.node_cpus // gpus_per_node
        memory = (
            int(numa.node_memory_mib / gpus_per_node * units * MEMORY_SHARE)
            if numa.node_memory_mib
            else None
        )
        rule = (
            f"{per_gpu} CPUs per GPU: the node's {numa.node_cpus} CPUs over its "
            f"{gpus_per_node} GPUs; the per-NUMA "
            f"sizes are not published ({numa.source}), so this assumes the GPUs spread "
            "evenly over the NUMA nodes"
        )
    else:
        return None
    cpus = max(
        1, per_gpu * units - (1 if per_gpu * units > 1 else 0)
    )  # one CPU left for kubeReserved
    return PodSizing(cpus=cpus, memory_mib=max(1, memory) if memory else None, rule=rule)


def one_numa_cpus(numa: NodeNuma) -> tuple[int, str] | None:
    """(CPUs of the smallest NUMA node, how that is known), or None without CPU counts. Where
    only "more than one NUMA node" is known, the node's CPUs over two: no NUMA node of a node
    split evenly holds more."""
    sizes = [z.cpus for z in numa.zones if z.cpus]
    if sizes:
        return min(sizes), "its smallest NUMA node's CPUs"
    if numa.node_cpus:
        split = numa.numa_nodes or 2
        over = f"{split}" if numa.numa_nodes else "at least 2"
        return numa.node_cpus // split, f"the node's {numa.node_cpus} CPUs over {over} NUMA nodes"
    return None


def fit_one_numa(numa: NodeNuma, sizing: PodSizing) -> PodSizing:
    """Under ``single-numa-node`` the kubelet admits a Guaranteed pod only when its exclusive
    CPUs come from one NUMA node: the request is capped at one NUMA node's CPUs (one left for
    the system), memory scaled with it."""
    found = one_numa_cpus(numa)
    if found is None or sizing.cpus <= max(1, found[0] - 1):
        return sizing
    cpus = max(1, found[0] - 1)
    memory = int(sizing.memory_mib * cpus / sizing.cpus) if sizing.memory_mib else None
    return PodSizing(
        cpus=cpus,
        memory_mib=max(1, memory) if memory else None,
        rule=f"{sizing.rule}; capped at {cpus} CPUs: single-numa-node admits only a pod whose "
        f"CPUs fit one NUMA node ({found[1]}, one left for the system)",
    )


def _policy(numa: NodeNuma, units: int, gpus_per_node: int = 0) -> tuple[str, str]:
    zones = _gpu_zones(numa)
    most = max((z.gpus or 0 for z in zones), default=None)
    if most is None and gpus_per_node:
        split = numa.numa_nodes or 2
        even = max(1, gpus_per_node // split)
        if units > even:
            return "restricted", (
                f"the per-NUMA GPU count is not published; {gpus_per_node} GPUs spread evenly "
                f"over {numa.numa_nodes or 'at least 2'} NUMA nodes put {even} on each, fewer "
                f"than the pod's {units}: single-numa-node would reject it; restricted admits "
                "the narrowest alignment"
            )
    if most is not None and units > most:
        return "restricted", (
            f"the pod's {units} GPUs span NUMA nodes (at most {most} per node): single-numa-node "
            "would reject it; restricted admits the narrowest alignment"
        )
    if most is None:
        return "single-numa-node", (
            "the per-NUMA GPU count is not published: single-numa-node rejects a pod "
            "whose GPUs cannot share one NUMA node (use restricted for such pods)"
        )
    return "single-numa-node", f"the pod's {units} GPU(s) fit one NUMA node ({most} GPUs per node)"


def _vm_pinning(pool_placement: PlacementKind, numa: NodeNuma | None) -> list[str]:
    guest = (
        "the guest sees "
        + (
            f"{numa.numa_nodes} NUMA node(s)"
            if numa and numa.numa_nodes
            else "an unknown NUMA layout"
        )
        # what says so: the label as read, or the inference from its absence
        + (f" ({numa.source}: {'; '.join(numa.evidence)})" if numa and numa.evidence else "")
        + (f" ({numa.source})" if numa and not numa.evidence else "")
    )
    device = (
        "the passed-through GPU"
        if pool_placement is PlacementKind.PASSTHROUGH
        else "the vGPU's physical GPU"
    )
    return [
        (
            f"These nodes are VMs with {device}; {guest}. Whether the vCPUs and memory "
            "sit on the GPU's host NUMA "
            "node is decided by the hypervisor, not the kubelet: pin them there."
        ),
        (
            "OpenStack flavor extra specs: hw:cpu_policy=dedicated (vCPUs pinned to host "
            "CPUs), hw:numa_nodes=1 "
            "(one guest NUMA node, placed on one host NUMA node) when the VM's vCPUs and "
            "memory fit one host NUMA "
            "node, and hw:pci_numa_affinity_policy=required (or numa_policy in the PCI "
            "alias) so the GPU comes "
            "from that same host NUMA node; hw:mem_page_size=large backs the guest "
            "memory with huge pages on that node."
        ),
        (
            "Other hypervisors: pin the vCPUs (libvirt <vcpupin>/<numatune "
            "mode='strict'>, VMware NUMA affinity) to "
            "the host NUMA node of the GPU's PCI address "
            "(/sys/bus/pci/devices/<address>/numa_node on the host)."
        ),
    ]


def advise(pool: Any, units: int, gains: list[NumaGain]) -> NumaAdvice:
    """The advice for ``units`` GPUs per pod on ``pool`` (a ``NodePool``)."""
    numa: NodeNuma | None = pool.numa
    evidence = list(numa.evidence) if numa else []
    gain_note = "from measured pairs (local / remote)" if gains else UNKNOWN_GAIN
    vm = pool.placement in (PlacementKind.PASSTHROUGH, PlacementKind.VGPU)
    vm_text = _vm_pinning(pool.placement, numa) if vm else []
    if vm:
        evidence.extend(pool.placement_evidence)
    if numa is None or not numa.multi:
        why = (
            "the NUMA layout of these nodes is unknown (no NodeResourceTopology, no NFD "
            "memory-numa label, "
            "no stored fingerprint)"
            if numa is None or numa.multi is None
            else "one NUMA node per node: nothing to align inside the node"
        )
        return NumaAdvice(
            applies=bool(vm),
            summary=("VM pinning: " if vm else "") + why,
            vm_pinning=vm_text,
            expected_gain=gains,
            gain_note=gain_note,
            evidence=evidence,
        )
    policy, why = _policy(numa, units, pool.gpus_per_node)
    sizing = size_pod(numa, units, pool.gpus_per_node)
    if sizing is not None and policy == "single-numa-node":
        sizing = fit_one_numa(numa, sizing)
    # memory follows the GPUs' node only where the pod is Guaranteed with a memory request and
    # the Topology Manager keeps it on one NUMA node
    pinned = policy == "single-numa-node" and sizing is not None and bool(sizing.memory_mib)
    summary = (
        f"{numa.numa_nodes or 'several'} NUMA nodes per node: Topology Manager {policy} "
        "+ CPU Manager static"
        + (" + Memory Manager Static" if pinned else "")
        + f"; {why}"
        + (
            f"; Guaranteed pod with {sizing.cpus} CPUs"
            + (f" and {sizing.memory_mib}Mi memory" if sizing.memory_mib else "")
            if sizing
            else "; CPU request not sized (no CPU counts published)"
        )
    )
    return NumaAdvice(
        applies=True,
        summary=summary,
        topology_manager_policy=policy,
        kubelet_config=kubelet_fragment(policy, numa_node_ids(numa) if pinned else None),
        sizing=sizing,
        vm_pinning=vm_text,
        expected_gain=gains,
        gain_note=gain_note,
        evidence=evidence,
        steps=_steps(numa, policy, pinned),
    )


def _steps(numa: NodeNuma, policy: str, pinned: bool) -> list[str]:
    """What the cluster's operator does to apply the kubelet fragment."""
    steps = [
        "kubelet on the pool's nodes: merge the fragment "
        f"(topologyManagerPolicy={policy}, cpuManagerPolicy=static"
        + (", memoryManagerPolicy=Static" if pinned else "")
        + ")",
        (
            "changing cpuManagerPolicy needs each node drained, "
            "/var/lib/kubelet/cpu_manager_state removed and the "
            "kubelet restarted"
        ),
        "the GPU device plugin must report NUMA hints (the NVIDIA device plugin does, from NVML)",
    ]
    if pinned:
        steps += [
            "changing memoryManagerPolicy likewise needs /var/lib/kubelet/memory_manager_state "
            "removed before the kubelet restarts",
            f"reservedMemory sums to {EVICTION_MEMORY_MIB}Mi, the kubelet's default hard "
            "eviction threshold: where the nodes set kubeReserved or systemReserved memory or "
            "another evictionHard memory.available, raise it to their sum or the kubelet "
            "refuses to start",
        ]
    if numa.topology_manager_policy:
        steps.insert(
            0,
            f"the nodes' kubelet reports topologyManagerPolicy={numa.topology_manager_policy} now",
        )
    return steps


def _pod_specs(obj: Any) -> list[dict[str, Any]]:
    """Every pod spec inside an object: a Pod's, a template's (Deployment, Job), a PyTorchJob
    replica's, a LeaderWorkerSet's leader and worker, a JobSet's jobs'."""
    if isinstance(obj, list):
        return [spec for item in obj for spec in _pod_specs(item)]
    if not isinstance(obj, dict):
        return []
    if isinstance(obj.get("containers"), list):
        return [obj]
    return [spec for value in obj.values() for spec in _pod_specs(value)]


def _guaranteed(resources: dict[str, Any], sizing: PodSizing) -> dict[str, Any]:
    """Limits and equal requests: integer CPUs, memory, the devices as they were (DRA claims
    kept)."""
    limits = dict(resources.get("limits") or {})
    limits["cpu"] = str(sizing.cpus)
    if sizing.memory_mib:
        limits["memory"] = f"{sizing.memory_mib}Mi"
    out: dict[str, Any] = {"limits": limits, "requests": dict(limits)}
    if resources.get("claims"):
        out["claims"] = resources["claims"]
    return out


def guarantee(manifest: dict[str, Any], sizing: PodSizing) -> None:
    """Make every container of every pod the manifest makes Guaranteed QoS (a TrainJob's
    ``resourcesPerNode`` too): integer CPU and memory requests equal to their limits, the GPUs
    (or DRA claims) as they were. Memory the Memory Manager can pin to the GPUs' NUMA node."""
    for spec in _pod_specs(manifest.get("spec") or {}):
        for container in spec.get("containers") or []:
            container["resources"] = _guaranteed(container.get("resources") or {}, sizing)
    trainer = (manifest.get("spec") or {}).get("trainer")
    if isinstance(trainer, dict) and "resourcesPerNode" in trainer:
        trainer["resourcesPerNode"] = _guaranteed(trainer["resourcesPerNode"], sizing)
    annotations = manifest.setdefault("metadata", {}).setdefault("annotations", {})
    annotations["stack-advisor/numa-sizing"] = sizing.rule


def pool_advice(
    store: Any, pool: Any, units: int, memo: dict[Any, list[NumaGain]], generation: Any = None
) -> NumaAdvice:
    """``advise`` with the knowledge base's pairs, read once per data generation and GPU."""
    key = (generation, pool.accelerator)
    if key not in memo:
        if len(memo) > 256:
            memo.clear()
        memo[key] = measured_gains(store, pool.accelerator) if store is not None else []
    return advise(pool, units, memo[key])


def with_stored_topologies(nodes: list[Any], store: Any) -> list[Any]:
    """Nodes that have no NodeResourceTopology take the fingerprint our collector stored for the
    host of the same name (``advisor collect`` on the node), which has per-NUMA counts."""
    out = []
    for node in nodes:
        checkpoint("reading the nodes' stored topologies")
        if node.numa is None or node.numa.source == "NFD label":
            try:
                topology = store.host_topology(node.name) if store is not None else None
            except NotImplementedError:
                topology = None
            if topology is not None and topology.numa_nodes:
                node = node.model_copy(update={"numa": numa_from_topology(topology, node.name)})
        out.append(node)
    return out
