"""`advisor nodes topology`: a host's NUMA nodes and where each GPU and NIC is attached — this
machine's, a recorded sysfs tree's, or the one a collector stored for a host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stack_advisor.cli.render import OutputFormat, info, print_json, render, stdout
from stack_advisor.schema.errors import InvalidInput, NotFound


def load_topology(*, host: str | None, root: str | None, store_uri: str | None) -> tuple[Any, str]:
    """The topology asked for and where it comes from. Raises InvalidInput for a bad
    combination or path, NotFound when the store has none for the host."""
    if host and root:
        raise InvalidInput("--host reads the store and --root a recorded tree: give one")
    if host:
        from stack_advisor.cli.plan import open_store_uri

        kb = open_store_uri(store_uri)
        try:
            found = kb.host_topology(host)
        except NotImplementedError as exc:
            raise InvalidInput(f"--host: {exc}") from None
        finally:
            kb.close()
        if found is None:
            raise NotFound(
                f"--host: no topology stored for {host!r} (run `advisor collect` on it: every "
                "collected document carries the host's topology)"
            )
        return found, f"stored for {host}"
    from stack_advisor.collectors.fingerprint import open_nvml
    from stack_advisor.collectors.fingerprint.placement import detect_hypervisor, read_dmi
    from stack_advisor.collectors.fingerprint.sources import FileRoot
    from stack_advisor.collectors.fingerprint.topology import (
        read_topology,
        run_topo_matrix,
        topology_of_tree,
    )

    if root:
        tree = Path(root)
        if not (tree / "sys").is_dir():
            raise InvalidInput(
                f"--root: {root!r} has no sys/ folder (a recorded tree holds "
                "sys/devices/system/node and sys/bus/pci/devices)"
            )
        return topology_of_tree(tree), f"recorded tree {root}"
    nvml, _ = open_nvml()
    fileroot = FileRoot()
    cpu_text = fileroot.read("/proc/cpuinfo") or ""
    hv = detect_hypervisor("hypervisor" in cpu_text.split(), read_dmi(fileroot))
    return read_topology(
        fileroot, nvml, run_topo_matrix() if nvml else None, virtual=hv.present
    ), "this machine"


def show(topology: Any, source: str, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        print_json({"source": source, **topology.model_dump(mode="json")})
        return
    nodes = [
        {
            "numa_node": n.node,
            "cpus": n.cpus or "-",
            "cpu_count": n.cpu_count,
            "memory_mib": n.memory_mib,
            "gpus": ",".join(g.label for g in topology.gpus if g.numa_node == n.node) or None,
        }
        for n in topology.numa_nodes
    ]
    render(
        nodes,
        fmt=fmt,
        title=f"NUMA nodes ({source})",
        columns=["numa_node", "cpus", "cpu_count", "memory_mib", "gpus"],
    )
    stdout.print()
    devices = [
        {
            "device": d.label,
            "kind": d.kind,
            "pci": d.pci_address,
            "numa_node": d.numa_node,
            "cpu_affinity": d.cpu_affinity,
            "nearest": _nearest(d),
        }
        for d in topology.devices
    ]
    render(
        devices,
        fmt=fmt,
        title=f"{len(topology.gpus)} GPU(s), {len(topology.nics)} NIC(s)",
        columns=["device", "kind", "pci", "numa_node", "cpu_affinity"],
        details=["nearest"],
    )
    for line in topology.evidence:
        info(line)


def _nearest(device: Any) -> str | None:
    """The peers on the closest link (NVLink, one switch) — what a GPU pairs with."""
    order = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
    links = {peer: kind for peer, kind in device.links.items() if kind not in ("X", "")}
    if not links:
        return None
    best = min(0 if k.startswith("NV") else order.get(k, 9) for k in links.values())
    peers = [
        f"{p} ({k})"
        for p, k in links.items()
        if (0 if k.startswith("NV") else order.get(k, 9)) == best
    ]
    return ", ".join(peers)
