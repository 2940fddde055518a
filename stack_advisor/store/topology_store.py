"""A host's topology in the graph: ``NumaNode`` and ``DeviceAttachment`` nodes (schema v8).

Written inside the ingest's transaction for every host of the batch that brings a topology: the
host's old topology nodes are deleted and the new ones created, so the graph holds the latest
fingerprint of each host (a host's topology changes when it is rebuilt, not per run). Read back
as the same ``HostTopology`` the collector built. Statements are in the Cypher both engines run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stack_advisor.schema.topology import DeviceAttachment, HostTopology, NumaNode

Run = Callable[[str, dict[str, Any]], list[dict[str, Any]]]
Read = Callable[[str, dict[str, Any]], list[dict[str, Any]]]

_DELETE = {
    "NumaNode": "MATCH (n:NumaNode {host: $host}) DETACH DELETE n",
    "DeviceAttachment": "MATCH (d:DeviceAttachment {host: $host}) DETACH DELETE d",
}
_CREATE_NUMA = (
    "UNWIND $rows AS r MATCH (h:Host {name: r.host}) "
    "CREATE (n:NumaNode {numa_id: r.numa_id, host: r.host, node: r.node, cpus: r.cpus, "
    "cpu_count: r.cpu_count, "
    "memory_mib: r.memory_mib, distances_json: r.distances_json}), (h)-[:HAS_NUMA_NODE]->(n)"
)
_DEVICE_PROPS = (
    "attachment_id",
    "host",
    "kind",
    "device_index",
    "name",
    "pci_address",
    "numa_node",
    "cpu_affinity",
    "links_json",
    "source",
)
_ATTACH = (
    "UNWIND $rows AS r MATCH (d:DeviceAttachment {attachment_id: r.src}), "
    "(n:NumaNode {numa_id: r.dst}) "
    "CREATE (d)-[:ATTACHED_TO]->(n)"
)
_READ_NUMA = (
    "MATCH (h:Host {name: $host})-[:HAS_NUMA_NODE]->(n:NumaNode) "
    "RETURN n.node AS node, n.cpus AS cpus, "
    "n.memory_mib AS memory_mib, n.distances_json AS distances_json ORDER BY n.node"
)
_READ_DEVICES = (
    "MATCH (h:Host {name: $host})-[:HAS_DEVICE]->(d:DeviceAttachment) RETURN "
    + ", ".join(f"d.{p} AS {p}" for p in _DEVICE_PROPS)
    + " ORDER BY d.attachment_id"
)
_READ_HOST = "MATCH (h:Host {name: $host}) RETURN h.topology_json AS topology_json"


def host_json(topology: HostTopology | None) -> str | None:
    """What the Host node keeps itself: the guest view and the evidence."""
    if topology is None:
        return None
    return json.dumps(
        {
            "virtual": topology.virtual,
            "guest_affinity": topology.guest_affinity,
            "evidence": topology.evidence,
        },
        sort_keys=True,
    )


def _numa_id(host: str, node: int) -> str:
    return f"{host}/numa{node}"


def _device_rows(host: str, topology: HostTopology) -> list[dict[str, Any]]:
    rows = []
    for i, dev in enumerate(topology.devices):
        key = dev.pci_address or f"{dev.kind}{dev.index if dev.index is not None else i}"
        rows.append(
            {
                "attachment_id": f"{host}/{key}",
                "host": host,
                "kind": dev.kind,
                "device_index": dev.index,
                "name": dev.name,
                "pci_address": dev.pci_address,
                "numa_node": dev.numa_node,
                "cpu_affinity": dev.cpu_affinity,
                "links_json": json.dumps(dev.links, sort_keys=True),
                "source": dev.source,
            }
        )
    return rows


def _create_devices(run: Run, rows: list[dict[str, Any]]) -> None:
    """Rows grouped by the properties they have: the embedded engine types an all-null column
    as STRING, which an INT64 property refuses."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        present = tuple(p for p in _DEVICE_PROPS if row[p] is not None)
        groups.setdefault(present, []).append({p: row[p] for p in present})
    for present, part in groups.items():
        props = ", ".join(f"{p}: r.{p}" for p in present)
        run(
            "UNWIND $rows AS r MATCH (h:Host {name: r.host}) "
            f"CREATE (d:DeviceAttachment {{{props}}}), "
            "(h)-[:HAS_DEVICE]->(d)",
            {"rows": part},
        )


def write_topologies(run: Run, topologies: dict[str, HostTopology]) -> None:
    """Replace each host's topology nodes (the Host nodes exist: the ingest wrote them first)."""
    for host, topology in sorted(topologies.items()):
        for statement in _DELETE.values():
            run(statement, {"host": host})
        numa = [
            {
                "numa_id": _numa_id(host, n.node),
                "host": host,
                "node": n.node,
                "cpus": n.cpus,
                "cpu_count": n.cpu_count,
                "memory_mib": n.memory_mib if n.memory_mib is not None else -1,
                "distances_json": json.dumps(n.distances),
            }
            for n in topology.numa_nodes
        ]
        if numa:
            run(_CREATE_NUMA, {"rows": numa})
        devices = _device_rows(host, topology)
        if devices:
            _create_devices(run, devices)
        known = {n.node for n in topology.numa_nodes}
        pairs = [
            {"src": row["attachment_id"], "dst": _numa_id(host, row["numa_node"])}
            for row in devices
            if row["numa_node"] in known
        ]
        if pairs:
            run(_ATTACH, {"rows": pairs})


def read_host_topology(read: Read, host: str) -> HostTopology | None:
    """The stored topology of ``host``; None when the host or its topology is not stored."""
    found = read(_READ_HOST, {"host": host})
    if not found or found[0]["topology_json"] is None:
        return None
    head = json.loads(found[0]["topology_json"])
    numa = [
        NumaNode(
            node=r["node"],
            cpus=r["cpus"] or "",
            memory_mib=None if r["memory_mib"] is None or r["memory_mib"] < 0 else r["memory_mib"],
            distances=json.loads(r["distances_json"] or "[]"),
        )
        for r in read(_READ_NUMA, {"host": host})
    ]
    devices = [
        DeviceAttachment(
            kind=r["kind"],
            index=r["device_index"],
            name=r["name"],
            pci_address=r["pci_address"],
            numa_node=r["numa_node"],
            cpu_affinity=r["cpu_affinity"],
            links=json.loads(r["links_json"] or "{}"),
            source=r["source"] or "",
        )
        for r in read(_READ_DEVICES, {"host": host})
    ]
    devices.sort(key=lambda d: (d.kind != "gpu", d.pci_address or ""))  # the collector's order
    return HostTopology(numa_nodes=numa, devices=devices, **head)
