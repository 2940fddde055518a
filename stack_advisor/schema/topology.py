"""Placement inside a node: the host's NUMA nodes and where each GPU and NIC is attached.

Collectors build a ``HostTopology`` from sysfs (and NVML or ``nvidia-smi topo -m`` where present),
or from a cluster's NodeResourceTopology objects; the stores keep it as ``NumaNode`` and
``DeviceAttachment`` nodes of the host (schema v8); the advisor reads it to decide whether a pool
needs NUMA alignment. A value nothing reported stays ``None``: a PCI device whose firmware (or
hypervisor) gives no NUMA node has ``numa_node=None``, never a guessed 0.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# ``nvidia-smi topo -m``'s link types, nearest first (its legend): the same board, NVLink,
# one PCIe switch, several switches, a host bridge, host bridges of one NUMA node, across sockets.
LINK_TYPES = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")
_CPULIST = re.compile(r"^\s*$|^\d+(-\d+)?(,\d+(-\d+)?)*$")
MAX_CPU = 1 << 16  # Linux's NR_CPUS tops out at 8192; a larger number is a typo or an attack
MAX_ITEMS = 4096
_PCI = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def parse_cpulist(text: str) -> list[int]:
    """The kernel's cpulist format (``0-3,8-11``) as CPU numbers. Raises ValueError naming the
    text."""
    text = text.strip()
    if not _CPULIST.match(text):
        raise ValueError(f"{text!r} is not a CPU list such as '0-55,112-167'")
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        lo, hi = int(first), int(last or first)
        if hi >= MAX_CPU:
            raise ValueError(f"{text!r}: CPU {hi} is beyond {MAX_CPU - 1}")
        if hi < lo:
            raise ValueError(f"{text!r}: range {part!r} runs backwards")
        cpus.extend(range(lo, hi + 1))
    return sorted(set(cpus))


def format_cpulist(cpus: list[int] | set[int]) -> str:
    """CPU numbers as the kernel writes them: ``[0, 1, 2, 8]`` → ``0-2,8``."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    start = prev = None
    for cpu in [*ordered, None]:
        if start is not None and (cpu is None or cpu != prev + 1):  # type: ignore[operator]
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if cpu is not None and start is None:
            start = cpu
        prev = cpu
    return ",".join(out)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NumaNode(_Strict):
    """One NUMA node of the host (as the OS, or a guest's vNUMA, sees it)."""

    node: int = Field(ge=0)
    cpus: str = Field(
        default="", description="its CPUs in cpulist form ('' for a memory-only node)"
    )
    memory_mib: int | None = Field(default=None, ge=0)
    distances: list[int] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="SLIT distances to node 0, 1, ..."
    )

    @field_validator("cpus")
    @classmethod
    def _cpulist(cls, value: str) -> str:
        return format_cpulist(parse_cpulist(value))

    @property
    def cpu_count(self) -> int:
        return len(parse_cpulist(self.cpus))


class DeviceAttachment(_Strict):
    """Where one GPU or NIC hangs off: its PCI address, NUMA node, local CPUs, links to peers."""

    kind: Literal["gpu", "nic"]
    index: int | None = Field(
        default=None, ge=0, description="GPU index (NVML / nvidia-smi order); None for NICs"
    )
    name: str | None = Field(
        default=None, description="GPU model, or the NIC's RDMA/net device name"
    )
    pci_address: str | None = Field(
        default=None, description="domain:bus:device.function, lower case"
    )
    numa_node: int | None = Field(
        default=None, ge=0, description="None: the platform reports none (-1)"
    )
    cpu_affinity: str | None = Field(default=None, description="CPUs local to the device (cpulist)")
    links: dict[str, str] = Field(
        default_factory=dict,
        max_length=MAX_ITEMS,
        description="peer (GPU0, NIC1, mlx5_0) → link type",
    )
    source: str = ""

    @field_validator("pci_address")
    @classmethod
    def _pci(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if value.count(":") == 1:  # bus:dev.fn without a domain (nvidia-smi, lspci)
            value = "0000:" + value
        domain, _, rest = value.partition(":")
        value = f"{domain[-4:] if len(domain) > 4 and set(domain[:-4]) <= {'0'} else domain}:{rest}"
        if not _PCI.match(value):
            raise ValueError(f"{value!r} is not a PCI address such as '0000:1b:00.0'")
        return value

    @field_validator("cpu_affinity")
    @classmethod
    def _affinity(cls, value: str | None) -> str | None:
        return None if value is None else format_cpulist(parse_cpulist(value))

    @property
    def label(self) -> str:
        return (
            f"GPU{self.index}"
            if self.kind == "gpu" and self.index is not None
            else (self.name or self.pci_address or "?")
        )


class HostTopology(_Strict):
    """A host's NUMA nodes and device attachments, and what a VM guest can tell about them."""

    numa_nodes: list[NumaNode] = Field(default_factory=list, max_length=MAX_ITEMS)
    devices: list[DeviceAttachment] = Field(default_factory=list, max_length=MAX_ITEMS)
    virtual: bool | None = Field(
        default=None, description="seen from inside a VM (None: not known)"
    )
    guest_affinity: Literal["exposed", "hidden"] | None = Field(
        default=None,
        description="in a VM: whether the hypervisor shows the GPUs' NUMA nodes to the guest",
    )
    evidence: list[str] = Field(default_factory=list)

    @property
    def gpus(self) -> list[DeviceAttachment]:
        return sorted(
            (d for d in self.devices if d.kind == "gpu"),
            key=lambda d: (d.index if d.index is not None else 1 << 30, d.pci_address or ""),
        )

    @property
    def nics(self) -> list[DeviceAttachment]:
        return [d for d in self.devices if d.kind == "nic"]

    @property
    def cpu_nodes(self) -> list[NumaNode]:
        """NUMA nodes that have CPUs (memory-only nodes, e.g. HBM or CXL, cannot run a thread)."""
        return [n for n in self.numa_nodes if n.cpus]

    @property
    def multi_numa(self) -> bool:
        return len(self.cpu_nodes) > 1

    def node(self, number: int | None) -> NumaNode | None:
        return next((n for n in self.numa_nodes if n.node == number), None)


class NumaZone(_Strict):
    """One NUMA node as the scheduler needs it: how many CPUs, how much memory, how many GPUs."""

    node: int = Field(ge=0)
    cpus: int | None = Field(default=None, ge=0)
    memory_mib: int | None = Field(default=None, ge=0)
    gpus: int | None = Field(default=None, ge=0)


class NodeNuma(_Strict):
    """A cluster node's NUMA layout, from the best source there is: NFD's NodeResourceTopology
    object (per-zone CPUs, memory and GPUs, the kubelet's Topology Manager policy), a stored
    fingerprint of the host, or NFD's ``memory-numa`` label (more than one node, no sizes)."""

    multi: bool | None = Field(description="more than one NUMA node with CPUs (None: not known)")
    numa_nodes: int | None = Field(
        default=None, ge=0, description="None where only 'more than one' is known"
    )
    zones: list[NumaZone] = Field(default_factory=list)
    node_cpus: int | None = Field(default=None, ge=0, description="the node's CPU capacity")
    node_memory_mib: int | None = Field(default=None, ge=0)
    topology_manager_policy: str | None = Field(
        default=None, description="the kubelet's, where NRT reports it"
    )
    topology_manager_scope: str | None = None
    source: str
    evidence: list[str] = Field(default_factory=list)

    def signature(self) -> tuple[object, ...]:
        """What makes two nodes alike for placement inside the node (pool grouping)."""
        return (self.multi, self.numa_nodes, tuple((z.cpus, z.gpus) for z in self.zones))


def zones_of(topology: HostTopology) -> list[NumaZone]:
    """The per-node CPU, memory and GPU counts of a fingerprinted host."""
    return [
        NumaZone(
            node=n.node,
            cpus=n.cpu_count,
            memory_mib=n.memory_mib,
            gpus=sum(1 for g in topology.gpus if g.numa_node == n.node),
        )
        for n in topology.numa_nodes
    ]
