"""A cluster node's NUMA layout from what Kubernetes publishes about it.

Sources, best first: NFD's NodeResourceTopology object (CRD ``topology.node.k8s.io``, written by
nfd-topology-updater: one zone per NUMA node with its CPUs, memory and devices, and the kubelet's
Topology Manager policy and scope); a fingerprint our collector stored for the host; NFD's
``feature.node.kubernetes.io/memory-numa`` label, which only says "more than one NUMA node".
Nothing is guessed: without any of them the layout is unknown (None).
"""

from __future__ import annotations

import re
from typing import Any

from stack_advisor.schema.topology import HostTopology, NodeNuma, NumaZone, zones_of

NFD = "feature.node.kubernetes.io/"
MEMORY_NUMA_LABEL = NFD + "memory-numa"
NRT_GROUP = "topology.node.k8s.io"
NRT_VERSIONS = ("v1alpha2", "v1alpha1")
NRT_PLURAL = "noderesourcetopologies"
GPU_RESOURCE = "nvidia.com/gpu"
# v1alpha1's topologyPolicies values → the kubelet's policy and scope
_V1ALPHA1_POLICIES = {
    "SingleNUMANodeContainerLevel": ("single-numa-node", "container"),
    "SingleNUMANodePodLevel": ("single-numa-node", "pod"),
    "Restricted": ("restricted", None),
    "RestrictedContainerLevel": ("restricted", "container"),
    "RestrictedPodLevel": ("restricted", "pod"),
    "BestEffort": ("best-effort", None),
    "BestEffortContainerLevel": ("best-effort", "container"),
    "BestEffortPodLevel": ("best-effort", "pod"),
    "None": ("none", None),
}
_ZONE = re.compile(r"(\d+)$")
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTE]i?|m)?$")
_FACTORS = {
    None: 1,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Ei": 2**60,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "E": 10**18,
    "m": 1e-3,
}


def quantity(text: Any) -> float | None:
    """A Kubernetes quantity (``64``, ``263840236Ki``, ``500m``) as a number; None when
    unreadable."""
    match = _QUANTITY.match(str(text).strip()) if text is not None else None
    if not match:
        return None
    return float(match.group(1)) * _FACTORS[match.group(2)]


def numa_from_labels(
    labels: dict[str, str], cpus: int | None, memory_mib: int | None
) -> NodeNuma | None:
    """NFD's memory-numa label: present and true → more than one NUMA node; absent while NFD's
    memory source ran (other memory-* labels) or cpu labels are there → NFD saw one; else
    unknown."""
    value = labels.get(MEMORY_NUMA_LABEL)
    if value is not None:
        multi = value == "true"
        return NodeNuma(
            multi=multi,
            numa_nodes=None if multi else 1,
            node_cpus=cpus,
            node_memory_mib=memory_mib,
            source="NFD label",
            evidence=[f"{MEMORY_NUMA_LABEL}={value}"],
        )
    if any(k.startswith(NFD + "cpu-") for k in labels):
        return NodeNuma(
            multi=False,
            numa_nodes=1,
            node_cpus=cpus,
            node_memory_mib=memory_mib,
            source="NFD label",
            evidence=[
                f"inferred: {MEMORY_NUMA_LABEL} absent while NFD's cpu labels are present, "
                "read as one NUMA node (NFD sets it only where there are several)"
            ],
        )
    return None


def _attribute(nrt: dict[str, Any], name: str) -> str | None:
    for attr in nrt.get("attributes") or []:
        if isinstance(attr, dict) and attr.get("name") == name:
            return str(attr.get("value"))
    return None


def numa_from_nrt(
    nrt: dict[str, Any], cpus: int | None = None, memory_mib: int | None = None
) -> NodeNuma:
    """A NodeResourceTopology object (v1alpha2 or v1alpha1) → the node's zones and kubelet policy.

    Raises ValueError naming the object when it has no zone of type Node."""
    name = (nrt.get("metadata") or {}).get("name", "?")
    zones = []
    for zone in nrt.get("zones") or []:
        if not isinstance(zone, dict) or zone.get("type") != "Node":
            continue
        number = _ZONE.search(str(zone.get("name", "")))
        if number is None:
            continue
        res = {
            r.get("name"): quantity(r.get("capacity"))
            for r in zone.get("resources") or []
            if isinstance(r, dict)
        }
        cpu, memory = res.get("cpu"), res.get("memory")
        zones.append(
            NumaZone(
                node=int(number.group(1)),
                cpus=int(cpu) if cpu is not None else None,
                memory_mib=int(memory / 2**20) if memory is not None else None,
                gpus=int(res.get(GPU_RESOURCE) or 0),
            )
        )
    if not zones:
        raise ValueError(f"NodeResourceTopology {name!r} has no zone of type Node")
    policy, scope = (
        _attribute(nrt, "topologyManagerPolicy"),
        _attribute(nrt, "topologyManagerScope"),
    )
    for legacy in nrt.get("topologyPolicies") or []:
        policy, scope = _V1ALPHA1_POLICIES.get(legacy, (policy, scope))
    zones.sort(key=lambda z: z.node)
    evidence = [
        f"NodeResourceTopology {name}: "
        + ", ".join(f"node {z.node}: {z.cpus} CPUs, {z.gpus} GPU(s)" for z in zones)
    ]
    if policy:
        evidence.append(
            f"kubelet topologyManagerPolicy={policy}" + (f", scope={scope}" if scope else "")
        )
    return NodeNuma(
        multi=sum(1 for z in zones if z.cpus) > 1,
        numa_nodes=len(zones),
        zones=zones,
        node_cpus=cpus,
        node_memory_mib=memory_mib,
        topology_manager_policy=policy,
        topology_manager_scope=scope,
        source="NodeResourceTopology",
        evidence=evidence,
    )


def numa_from_topology(topology: HostTopology, host: str) -> NodeNuma:
    """A fingerprint our collector stored for the host."""
    zones = zones_of(topology)
    return NodeNuma(
        multi=topology.multi_numa,
        numa_nodes=len(topology.numa_nodes),
        zones=zones,
        node_cpus=sum(z.cpus or 0 for z in zones) or None,
        source="stored fingerprint",
        evidence=[
            f"fingerprint of {host}: "
            + ", ".join(f"node {z.node}: {z.cpus} CPUs, {z.gpus} GPU(s)" for z in zones),
            *topology.evidence[-1:],
        ],
    )


def list_nrt(api_client: Any) -> dict[str, dict[str, Any]]:
    """Node name → its NodeResourceTopology object; empty where the cluster has no such CRD."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    custom = client.CustomObjectsApi(api_client)
    for version in NRT_VERSIONS:
        try:
            listed = custom.list_cluster_custom_object(NRT_GROUP, version, NRT_PLURAL)
        except ApiException as exc:
            if exc.status in (404, 403):  # no CRD (or not readable): the labels still count
                continue
            raise
        items = listed.get("items") if isinstance(listed, dict) else None
        return {item["metadata"]["name"]: item for item in items or [] if item.get("metadata")}
    return {}
