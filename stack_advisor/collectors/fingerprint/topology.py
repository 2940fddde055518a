"""Placement inside the node: NUMA nodes, and the NUMA node, local CPUs and peer links of every
GPU and NIC.

Sources, each named in the result: sysfs everywhere (``/sys/devices/system/node/node*`` for the
NUMA nodes; ``/sys/bus/pci/devices/*/{class,vendor,numa_node,local_cpulist}`` for the devices);
NVML's PCI bus id (to match NVML's GPU index to its PCI device) and common-ancestor level; and
``nvidia-smi topo -m`` where the tool is installed (its link matrix: NV#, PIX, PXB, PHB, NODE, SYS).
sysfs wins for the NUMA node and CPU list; ``topo -m`` fills them in only where sysfs is not
readable. Inside a VM the result is what the guest sees, and says whether the hypervisor exposes
the GPUs' NUMA affinity at all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

from stack_advisor.collectors.fingerprint.nvml import Nvml, NvmlError
from stack_advisor.collectors.fingerprint.sources import FileRoot
from stack_advisor.schema.topology import DeviceAttachment, HostTopology, NumaNode

NODE_DIR = "/sys/devices/system/node"
PCI_DIR = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA controller, 3D controller
NIC_CLASSES = ("0x0200", "0x0207")  # Ethernet, InfiniBand
# NVML's nvmlGpuTopologyLevel_t → nvidia-smi's link names
NVML_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
TOPO_TIMEOUT_S = 30
_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\w+|CPU\d*)$")


# ---- sysfs -------------------------------------------------------------------------------------
def read_numa_nodes(root: FileRoot) -> list[NumaNode]:
    """The host's NUMA nodes with their CPUs, memory and distances (empty when sysfs has none)."""
    nodes = []
    for path in root.glob(NODE_DIR, "node[0-9]*"):
        number = int(path.name[4:])
        base = f"{NODE_DIR}/{path.name}"
        meminfo = _MEMTOTAL.search(root.read(f"{base}/meminfo") or "")
        distance = (root.first_line(f"{base}/distance") or "").split()
        nodes.append(
            NumaNode(
                node=number,
                cpus=root.first_line(f"{base}/cpulist") or "",
                memory_mib=int(meminfo.group(1)) // 1024 if meminfo else None,
                distances=[int(d) for d in distance if d.isdigit()],
            )
        )
    return sorted(nodes, key=lambda n: n.node)


def _net_name(root: FileRoot, base: str) -> str | None:
    for sub in ("infiniband", "net"):  # the RDMA device (mlx5_0) is what NCCL and topo -m name
        names = root.glob(f"{base}/{sub}", "*")
        if names:
            return min(p.name for p in names)
    return None


def read_pci_devices(root: FileRoot) -> list[DeviceAttachment]:
    """NVIDIA GPUs and network devices on the PCI bus, with their NUMA node and local CPUs."""
    out = []
    kind: Literal["gpu", "nic"]
    for path in root.glob(PCI_DIR, "*"):
        base = f"{PCI_DIR}/{path.name}"
        cls = (root.first_line(f"{base}/class") or "").lower()
        vendor = (root.first_line(f"{base}/vendor") or "").lower()
        if vendor == NVIDIA_VENDOR and cls.startswith(GPU_CLASSES):
            kind, name = "gpu", None
        elif cls.startswith(NIC_CLASSES):
            kind, name = "nic", _net_name(root, base)
        else:
            continue
        numa = root.first_line(f"{base}/numa_node")
        cpus = root.first_line(f"{base}/local_cpulist")
        out.append(
            DeviceAttachment(
                kind=kind,
                name=name,
                pci_address=path.name,
                numa_node=int(numa)
                if numa is not None and numa.lstrip("-").isdigit() and int(numa) >= 0
                else None,
                cpu_affinity=cpus,
                source=f"{base}/{{numa_node,local_cpulist}}",
            )
        )
    return sorted(out, key=lambda d: d.pci_address or "")


# ---- nvidia-smi topo -m --------------------------------------------------------------------------
def run_topo_matrix() -> str | None:
    """``nvidia-smi topo -m``'s text, or None where the tool is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "topo", "-m"], capture_output=True, text=True, timeout=TOPO_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_topo_matrix(text: str) -> dict[str, dict[str, Any]]:
    """``nvidia-smi topo -m`` → {row name: {"links": {peer: type}, "cpus": str|None,
    "numa": int|None}}.

    NIC columns are renamed by the legend (NIC0 → mlx5_0). Raises ValueError when the text has
    no header row naming GPU columns."""
    lines = [ln.rstrip() for ln in text.replace("\x1b[4m", "").replace("\x1b[0m", "").splitlines()]
    header_at = next((i for i, ln in enumerate(lines) if ln.split()[:1] == ["GPU0"]), None)
    if header_at is None:
        raise ValueError("nvidia-smi topo -m output without a header row starting with GPU0")
    columns = [
        tok for tok in lines[header_at].split() if _DEVICE.match(tok) and not tok.startswith("CPU")
    ]
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", text, re.MULTILINE))
    rows: dict[str, dict[str, Any]] = {}
    for line in lines[header_at + 1 :]:
        tokens = line.split()
        if not tokens or tokens[0] not in columns:
            if tokens and tokens[0] == "Legend:":
                break
            continue
        name = tokens[0]
        links = dict(zip(columns, tokens[1 : 1 + len(columns)], strict=False))
        tail = tokens[1 + len(columns) :]
        cpus = tail[0] if tail and tail[0] != "N/A" else None
        numa = int(tail[1]) if len(tail) > 1 and tail[1].isdigit() else None
        rows[legend.get(name, name)] = {
            "links": {legend.get(k, k): v for k, v in links.items() if k != name},
            "cpus": cpus,
            "numa": numa,
        }
    return rows


# ---- NVML ----------------------------------------------------------------------------------------
def nvml_bus_ids(nvml: Nvml | None) -> tuple[list[str | None], str | None]:
    """Each NVML GPU's PCI bus id (index order), and why they are unknown when they are."""
    if nvml is None:
        return [], "NVML not available"
    try:
        count = nvml.device_count()
    except NvmlError as exc:
        return [], str(exc)
    ids: list[str | None] = []
    why = None
    for i in range(count):
        try:
            ids.append(nvml.pci_bus_id(i))
        except NvmlError as exc:
            ids.append(None)
            why = str(exc)
    return ids, why


def nvml_links(nvml: Nvml, count: int) -> dict[int, dict[str, str]]:
    """GPU i → {GPUj: PIX|PXB|PHB|NODE|SYS} from NVML's common ancestor (no NVLink names)."""
    out: dict[int, dict[str, str]] = {}
    for i in range(count):
        for j in range(count):
            if i == j:
                continue
            try:
                level = nvml.topology_level(i, j)
            except NvmlError:
                continue
            out.setdefault(i, {})[f"GPU{j}"] = NVML_LEVELS.get(level, str(level))
    return out


# ---- putting it together -------------------------------------------------------------------------
def _with_indices(
    gpus: list[DeviceAttachment], bus_ids: list[str | None], evidence: list[str]
) -> list[DeviceAttachment]:
    """GPU index by NVML's bus id where NVML answers, else by PCI order (NVML's enumeration order).

    In a container or a batch job NVML sees only the GPUs handed to it while sysfs lists every
    GPU of the host: those others keep ``index=None`` and are noted."""
    by_address = {g.pci_address: g for g in gpus}
    matched: dict[str | None, int] = {}
    for index, bus in enumerate(bus_ids):
        address = DeviceAttachment(kind="gpu", pci_address=bus).pci_address if bus else None
        if address in by_address:
            matched[address] = index
    if matched:
        evidence.append("GPU index from NVML's PCI bus id")
        hidden = len(gpus) - len(matched)
        if hidden:
            evidence.append(
                f"{hidden} GPU(s) on the PCI bus are not visible to NVML here (another "
                "container's or job's): listed without an index"
            )
        return [g.model_copy(update={"index": matched.get(g.pci_address)}) for g in gpus]
    if gpus:
        evidence.append("GPU index from PCI address order (NVML's enumeration order)")
    return [g.model_copy(update={"index": i}) for i, g in enumerate(gpus)]


def _merge_topo(
    devices: list[DeviceAttachment], matrix: dict[str, dict[str, Any]], evidence: list[str]
) -> list[DeviceAttachment]:
    out = []
    for dev in devices:
        row = matrix.get(dev.label)
        if row is None:
            out.append(dev)
            continue
        update: dict[str, Any] = {
            "links": row["links"],
            "source": dev.source + "; nvidia-smi topo -m",
        }
        if dev.cpu_affinity is None and row["cpus"]:
            update["cpu_affinity"] = row["cpus"]
        if dev.numa_node is None and row["numa"] is not None:
            update["numa_node"] = row["numa"]
            evidence.append(f"{dev.label}: NUMA node from nvidia-smi topo -m (sysfs gave none)")
        out.append(dev.model_copy(update=update))
    return out


def _guest_view(topology: HostTopology, virtual: bool | None) -> HostTopology:
    """In a VM: whether the guest can see which (v)NUMA node each GPU is on."""
    if not virtual:
        return topology.model_copy(update={"virtual": virtual})
    gpus = topology.gpus
    exposed = bool(gpus) and topology.multi_numa and all(g.numa_node is not None for g in gpus)
    note = f"VM guest: {len(topology.cpu_nodes)} vNUMA node(s) with CPUs; " + (
        "no GPU visible"
        if not gpus
        else "the hypervisor exposes each GPU's NUMA node (vNUMA with PCI NUMA affinity: the vCPUs "
        "are likely pinned to it)"
        if exposed
        else "the GPUs' NUMA affinity is not visible to the guest (numa_node -1 or a single vNUMA "
        "node): whether the vCPUs sit on the GPU's host NUMA node cannot be told from inside"
    )
    affinity = None if not gpus else "exposed" if exposed else "hidden"
    return topology.model_copy(
        update={"virtual": True, "guest_affinity": affinity, "evidence": [*topology.evidence, note]}
    )


def read_topology(
    root: FileRoot,
    nvml: Nvml | None = None,
    topo_text: str | None = None,
    virtual: bool | None = None,
) -> HostTopology:
    """The host's topology from sysfs under ``root``, NVML (bus ids, ancestor levels) and a
    ``nvidia-smi topo -m`` text (None: not available)."""
    evidence: list[str] = []
    numa = read_numa_nodes(root)
    evidence.append(
        f"{len(numa)} NUMA node(s) in {NODE_DIR}" if numa else f"no {NODE_DIR}/node* directories"
    )
    devices = read_pci_devices(root)
    gpus = [d for d in devices if d.kind == "gpu"]
    bus_ids, why = nvml_bus_ids(nvml)
    if why and gpus:
        evidence.append(f"NVML bus ids unavailable: {why}")
    devices = _with_indices(gpus, bus_ids, evidence) + [d for d in devices if d.kind == "nic"]
    if topo_text:
        try:
            matrix = parse_topo_matrix(topo_text)
        except ValueError as exc:
            evidence.append(f"nvidia-smi topo -m not parsed: {exc}")
        else:
            devices = _merge_topo(devices, matrix, evidence)
            evidence.append("links from nvidia-smi topo -m")
    elif nvml is not None and gpus and any(bus_ids):
        links = nvml_links(nvml, len(bus_ids))
        devices = [
            d.model_copy(update={"links": links.get(d.index, {}) if d.index is not None else {}})
            if d.kind == "gpu"
            else d
            for d in devices
        ]
        if links:
            evidence.append(
                "GPU-GPU links from nvmlDeviceGetTopologyCommonAncestor (NVLink not named)"
            )
    return _guest_view(HostTopology(numa_nodes=numa, devices=devices, evidence=evidence), virtual)


def topology_of_tree(tree: Path, virtual: bool | None = None) -> HostTopology:
    """A recorded tree (``sys/...`` and optionally ``nvidia-smi-topo-m.txt``) read as a host."""
    topo = tree / "nvidia-smi-topo-m.txt"
    return read_topology(
        FileRoot(tree), None, topo.read_text() if topo.is_file() else None, virtual
    )
