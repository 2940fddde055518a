"""Node pools: groups of a cluster's nodes that GPU feature discovery and NFD labels say are alike.

A pool is what a job can be placed on as one: the same GPU product, GPUs per node, GPU memory,
MIG strategy and profile, driver (full version), placement (bare metal / PCI passthrough / vGPU)
and GPU Operator workload configuration. Nodes are grouped by their pool label when there is one
(``cloud.google.com/gke-nodepool``, ``eks.amazonaws.com/nodegroup``, ``agentpool``, ...); a pool
label whose nodes differ in any of those is split, and the split is reported.

Each pool knows how to be targeted: the nodeSelector and node affinity that select exactly its
nodes, the tolerations its taints need, and the extended resource its MIG strategy exposes
(``nvidia.com/gpu``, or ``nvidia.com/mig-1g.10gb`` under the mixed strategy).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Where nodes come from lives in node_source; these names stay importable from here.
from stack_advisor.advisor.cluster.node_source import nodes_from_inventory as nodes_from_inventory
from stack_advisor.advisor.cluster.node_source import nodes_from_json as nodes_from_json
from stack_advisor.advisor.cluster.node_source import nrt_items as nrt_items
from stack_advisor.advisor.cluster.node_source import read_nodes_file as read_nodes_file
from stack_advisor.advisor.cluster.pool_devices import dra_device_class, vm_device
from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.catalog import AcceleratorEntry
from stack_advisor.schema.inventory import (
    GFD,
    HYPERVISOR_LABEL,
    POOL_LABELS,
    VGPU_LABEL,
    ClusterNode,
    device_resource,
    vendor_plugin,
)
from stack_advisor.schema.models import PlacementKind
from stack_advisor.schema.topology import NodeNuma

GPU_RESOURCE = "nvidia.com/gpu"
WORKLOAD_CONFIG_LABEL = GFD + "gpu.workload.config"
# The GPU Operator's per-node workload: containers get nvidia.com/gpu; the VM configurations hand
# the GPU to KubeVirt VMs (passthrough or vGPU) and expose nothing a Pod can request.
CONTAINER_WORKLOAD = "container"
# AKS names its pools with this label (the inventory's list also has
# kubernetes.azure.com/agentpool).
EXTRA_POOL_LABELS = ("agentpool",)
_MIG_SUFFIX = re.compile(r"-MIG-(\d+g\.\d+gb)$", re.IGNORECASE)
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+g\.\d+gb)$")
_MIG_COUNT_LABEL = re.compile(r"^nvidia\.com/mig-(\d+g\.\d+gb)\.count$")
_KB_MIG = re.compile(r"\((\d+)x(\d+g\.\d+gb) mig\)", re.IGNORECASE)
DRIVER_LABELS = (GFD + "cuda.driver-version.full",)
OLD_DRIVER_LABELS = (GFD + "cuda.driver.major", GFD + "cuda.driver.minor", GFD + "cuda.driver.rev")


# ---- the accelerator a GFD product names (one function; the catalogue replaces its body) -------
@dataclass(frozen=True)
class GfdProduct:
    """A ``nvidia.com/gpu.product`` value resolved: the physical GPU's spec and the MIG profile
    (single strategy appends ``-MIG-<profile>``; time-slicing with renaming appends ``-SHARED``)."""

    product: str
    base: str
    spec: AcceleratorEntry | None
    mig_profile: str | None
    shared: bool

    @property
    def kb_name(self) -> str:
        """The name the knowledge base would use for this device (MIG slices as the importer
        writes them), so the model's spec features apply."""
        name = self.base.replace("-", " ")
        return f"{name} (1x{self.mig_profile} MIG)" if self.mig_profile else name


def resolve_gfd_product(product: str) -> GfdProduct:
    """The accelerator behind a GFD product label, through the catalogue (which knows GFD's
    spellings). Unknown products keep ``spec=None`` (shown as unresolved)."""
    base, shared = product, False
    if base.upper().endswith("-SHARED"):
        base, shared = base[: -len("-SHARED")], True
    mig = _MIG_SUFFIX.search(base)
    profile = mig.group(1).lower() if mig else None
    if mig:
        base = base[: mig.start()]
    spec = resolve_accelerator(base).spec or resolve_accelerator(base.replace("-", " ")).spec
    return GfdProduct(product=product, base=base, spec=spec, mig_profile=profile, shared=shared)


def generation_min_driver(product: GfdProduct) -> str | None:
    """The oldest driver the device's generation runs on, when the catalogue knows it."""
    return getattr(resolve_accelerator(product.kb_name), "min_driver", None)


def _older(version: str, than: str) -> bool:
    from stack_advisor.advisor.knowledge.rules import parse_version

    a, b = parse_version(version), parse_version(than)
    return a is not None and b is not None and a < b


def kb_accelerator_key(name: str) -> tuple[str, str | None] | None:
    """(spec id, MIG profile) of a knowledge-base accelerator name; None when unresolved."""
    resolved = resolve_accelerator(name)
    if resolved.spec is None:
        return None
    mig = _KB_MIG.search(name)
    return resolved.spec.id, (mig.group(2).lower() if mig else None)


# ---- pools -------------------------------------------------------------------------------------
class NodePool(BaseModel):
    """Nodes alike by their labels, with what a manifest needs to land on exactly them."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["gpu", "cpu"] = Field(
        default="gpu",
        description="gpu: GFD-labelled GPU nodes; cpu: labelled "
        "nodes with no GPU (stack_advisor.advisor.cluster.cpu_pools)",
    )
    pool_label: str | None = Field(
        default=None, description="the label that named the group, if any"
    )
    pool_value: str | None = None
    nodes: list[str]
    schedulable_nodes: int = Field(description="Ready and not cordoned")
    product: str = Field(
        description="nvidia.com/gpu.product as GFD wrote it (another vendor's product label: "
        "amd.com/gpu.product-name, gpu.intel.com/product)"
    )
    accelerator: str | None = Field(
        default=None, description="spec id the product resolves to; null: unresolved"
    )
    kb_name: str = Field(description="the knowledge base's spelling of this device")
    mig_profile: str | None = None
    mig_strategy: str | None = None
    gpus_per_node: int = Field(
        description="allocatable units of `resource` per node (the smallest in the pool)"
    )
    gpu_memory_mib: int | None = None
    resource: str = Field(
        description="the extended resource a Pod requests: nvidia.com/gpu or "
        "nvidia.com/mig-<profile>; a name without '/' is the DRA DeviceClass of a pool whose "
        "devices only ResourceSlices publish (requested through a ResourceClaim)"
    )
    driver: str | None = None
    cuda_driver: str | None = Field(
        default=None, description="newest CUDA the driver supports (GFD)"
    )
    min_driver: str | None = Field(
        default=None, description="the oldest driver the GPU's generation runs on"
    )
    placement: PlacementKind
    placement_evidence: list[str] = Field(default_factory=list)
    workload_config: str | None = None
    sharing: str | None = None
    taints: list[dict[str, str]] = Field(default_factory=list)
    node_selector: dict[str, str]
    match_expressions: list[dict[str, Any]] = Field(default_factory=list)
    usable: bool = True
    reason: str | None = Field(
        default=None, description="why Pods cannot use this pool, when not usable"
    )
    numa: NodeNuma | None = Field(default=None, description="the nodes' NUMA layout; null: unknown")
    label_problems: list[str] = Field(
        default_factory=list,
        description="its nodes' GFD labels of the wrong shape, each once with the nodes that have "
        "it (ignored: the figure they would give is unknown or read from elsewhere)",
    )

    def tolerations(self) -> list[dict[str, str]]:
        """Tolerations for every taint of the pool's nodes (NoSchedule and NoExecute ones)."""
        out = []
        for t in self.taints:
            if t.get("effect") == "PreferNoSchedule":
                continue
            tol = (
                {"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]}
                if t.get("value")
                else {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
            )
            out.append(tol)
        return out

    def affinity(self) -> dict[str, Any] | None:
        if not self.match_expressions:
            return None
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(self.match_expressions)}]
                }
            }
        }

    def row(self) -> dict[str, Any]:
        return {
            "pool": self.name,
            "nodes": len(self.nodes),
            "gpu": self.product,
            "accelerator": self.accelerator,
            "gpus_per_node": self.gpus_per_node,
            "resource": self.resource,
            "driver": self.driver,
            "placement": self.placement.value,
            "mig": self.mig_profile or self.mig_strategy,
            "usable": self.usable if self.usable else f"no: {self.reason}",
        }


# Taints Kubernetes sets from a node's conditions (not-ready, unreachable, memory/disk pressure,
# uninitialized): a workload must wait for them to clear, not tolerate them.
_CONDITION_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")


def _taint(text: str) -> dict[str, str]:
    """``key=value:Effect`` (the inventory's form) → a taint dict."""
    head, _, effect = text.rpartition(":")
    key, _, value = head.partition("=")
    return {"key": key, "value": "" if value == "None" else value, "effect": effect}


def _driver_selector(labels: dict[str, str]) -> dict[str, str]:
    if labels.get(DRIVER_LABELS[0]):
        return {DRIVER_LABELS[0]: labels[DRIVER_LABELS[0]]}
    return {k: labels[k] for k in OLD_DRIVER_LABELS if labels.get(k)}


def _mig_resources(node: ClusterNode) -> dict[str, int]:
    """Mixed strategy: profile → allocatable slices (from the node's resources, else GFD's
    ``nvidia.com/mig-<profile>.count`` labels)."""
    out = {
        m.group(1): n
        for k, n in node.gpu_resources.items()
        if (m := _MIG_RESOURCE.match(k)) and n > 0
    }
    if not out:
        for key, value in node.host.labels.items():
            m = _MIG_COUNT_LABEL.match(key)
            if m and value.isdigit() and int(value) > 0:
                out[m.group(1)] = int(value)
    return out


@dataclass
class _Shape:
    """One node seen as a pool member (mixed MIG nodes give one shape per profile)."""

    node: ClusterNode
    product: str
    mig_profile: str | None
    resource: str
    units: int


def _shapes(node: ClusterNode) -> list[_Shape]:
    labels = node.host.labels
    # a DRA-only node has no GFD label: its accelerator comes from its ResourceSlices
    product = labels.get(GFD + "gpu.product") or (node.accelerator and node.accelerator.model)
    if not product:
        return []
    strategy = node.mig.get("strategy")
    if strategy == "mixed":
        return [
            _Shape(node, product, profile, f"nvidia.com/mig-{profile}", n)
            for profile, n in sorted(_mig_resources(node).items())
        ]
    resolved = resolve_gfd_product(product)
    if resolved.shared and node.gpu_resources.get(GPU_RESOURCE + ".shared"):
        resource = GPU_RESOURCE + ".shared"
    else:
        resource = device_resource(labels, (k for k, n in node.gpu_resources.items() if n > 0))
    units = node.gpu_resources.get(resource)
    special = vm_device(node) if units is None else None
    if units is None and (device_class := dra_device_class(node)):
        special = (device_class, node.allocatable_gpus or 0)  # requested through a ResourceClaim
    if special is not None:
        resource, units = special
    if units is None:
        units = (
            node.allocatable_gpus
            if node.allocatable_gpus is not None
            else (node.accelerator.count if node.accelerator else 0)
        )
    return [_Shape(node, product, resolved.mig_profile, resource, units)]


def _pool_label(node: ClusterNode, configured: str | None) -> tuple[str | None, str | None]:
    labels = node.host.labels
    if configured:
        return (configured, labels[configured]) if labels.get(configured) else (None, None)
    for key in (*POOL_LABELS[:-1], *EXTRA_POOL_LABELS, POOL_LABELS[-1]):  # instance type last
        if labels.get(key):
            return key, labels[key]
    return None, None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-")


def group_pools(nodes: Iterable[ClusterNode], *, pool_label: str | None = None) -> list[NodePool]:
    """Group GPU nodes into pools (nodes without a GPU product label are left out).

    Args:
        nodes: parsed nodes (``stack_advisor.schema.inventory.parse_node`` or a stored inventory).
        pool_label: the label that names pools in this cluster; default: the first of the
            known pool labels a node has.
    """
    groups: dict[tuple[Any, ...], list[_Shape]] = {}
    label_of: dict[tuple[Any, ...], tuple[str | None, str | None]] = {}
    for node in nodes:
        labels = node.host.labels
        key_label, key_value = _pool_label(node, pool_label)
        for shape in _shapes(node):
            key = (
                key_label,
                key_value,
                shape.product,
                shape.mig_profile,
                shape.resource,
                node.accelerator.count if node.accelerator else None,
                node.accelerator.memory_mib if node.accelerator else None,
                node.mig.get("strategy"),
                node.driver,
                node.placement.kind.value,
                labels.get(WORKLOAD_CONFIG_LABEL),
                node.gpu_sharing,
                node.numa.signature() if node.numa else None,  # NUMA layouts differ: not one pool
            )
            groups.setdefault(key, []).append(shape)
            label_of[key] = (key_label, key_value)
    # node shapes per pool label value (a mixed-MIG node's profiles are one shape)
    shapes_of: dict[tuple[str | None, str | None], set[tuple[Any, ...]]] = {}
    for key in groups:
        shapes_of.setdefault(label_of[key], set()).add(key[:3] + key[5:])
    per_value = {value: len(keys) for value, keys in shapes_of.items()}
    pools: list[NodePool] = []
    for key, shapes in groups.items():
        key_label, key_value = label_of[key]
        split = key_label is not None and per_value[(key_label, key_value)] > 1
        pools.append(_pool(shapes, key_label, key_value, split))
    names: dict[str, int] = {}
    for pool in sorted(pools, key=lambda p: (p.name, p.driver or "", p.nodes)):
        names[pool.name] = names.get(pool.name, 0) + 1
        if names[pool.name] > 1:  # same name after all (e.g. two drivers on one product)
            pool.name = f"{pool.name}-{names[pool.name]}"
    return sorted(pools, key=lambda p: p.name)


def _pool(
    shapes: list[_Shape], key_label: str | None, key_value: str | None, split: bool
) -> NodePool:
    first = shapes[0]
    node = first.node
    labels = node.host.labels
    resolved = resolve_gfd_product(first.product)
    profile = first.mig_profile
    placement = node.placement.kind
    parts = [key_value] if key_value else [_slug(resolved.base), placement.value]
    if split or not key_value:
        parts.append(node.driver or "no-driver")
    name = "/".join(p for p in parts if p)
    if first.resource.startswith("nvidia.com/mig-"):
        name += f"[{first.resource.removeprefix('nvidia.com/')}]"
    selector, expressions = _selector(first, key_label, key_value, split)
    workload_config = labels.get(WORKLOAD_CONFIG_LABEL)
    gfd = GfdProduct(first.product, resolved.base, resolved.spec, profile, resolved.shared)
    min_driver = generation_min_driver(gfd)
    usable, reason = _usable(shapes, workload_config, min_driver)
    units = min(s.units for s in shapes)
    memory = node.accelerator.memory_mib if node.accelerator else None
    if first.resource.startswith("nvidia.com/mig-"):
        mem_label = labels.get(f"{GFD}mig-{profile}.memory")
        memory = int(mem_label) if mem_label and mem_label.isdigit() else memory
    return NodePool(
        name=name,
        pool_label=key_label,
        pool_value=key_value,
        nodes=sorted(s.node.name for s in shapes),
        schedulable_nodes=sum(
            1 for s in shapes if s.node.ready is not False and not s.node.unschedulable
        ),
        product=first.product,
        accelerator=resolved.spec.id if resolved.spec else None,
        kb_name=gfd.kb_name,
        mig_profile=profile,
        mig_strategy=node.mig.get("strategy"),
        gpus_per_node=units,
        gpu_memory_mib=memory,
        resource=first.resource,
        driver=node.driver,
        cuda_driver=node.cuda_driver,
        min_driver=min_driver,
        placement=placement,
        placement_evidence=list(node.placement.evidence),
        workload_config=workload_config,
        sharing=node.gpu_sharing,
        taints=node_taints(s.node for s in shapes),
        node_selector=selector,
        match_expressions=expressions,
        usable=usable,
        reason=reason,
        numa=node.numa,
        label_problems=_label_problems(shapes),
    )


NAMED_NODES = 3  # nodes a label problem names; the others are counted


def _label_problems(shapes: list[_Shape]) -> list[str]:
    """The pool's nodes' label problems, each once with the nodes that have it (the first
    ``NAMED_NODES`` named, the rest counted: a broken labeller on 500 nodes is one line)."""
    nodes: dict[str, list[str]] = {}
    for shape in shapes:
        for problem in shape.node.label_problems:
            nodes.setdefault(problem, []).append(shape.node.name)
    out = []
    for problem, names in sorted(nodes.items()):
        named = sorted(names)
        more = f" and {len(named) - NAMED_NODES} more" if len(named) > NAMED_NODES else ""
        out.append(f"{problem} (on {', '.join(named[:NAMED_NODES])}{more})")
    return out


def _usable(
    shapes: list[_Shape], workload_config: str | None, min_driver: str | None
) -> tuple[bool, str | None]:
    """Whether Pods can use the pool's GPUs, and why not: GPUs handed to VMs, a driver older
    than the generation runs on, or nothing allocatable."""
    first = shapes[0]
    driver = first.node.driver
    if workload_config and workload_config != CONTAINER_WORKLOAD:
        return False, (
            f"{WORKLOAD_CONFIG_LABEL}={workload_config}: the GPU Operator hands these GPUs "
            "to virtual machines; Pods cannot request them"
        )
    if min_driver and driver and _older(driver, min_driver):
        why = f"driver {driver} is below {min_driver}, the oldest its GPU generation runs on"
        return False, why
    if min(s.units for s in shapes) < 1:
        return False, f"no allocatable {first.resource} on its nodes"
    return True, None


def _selector(
    first: _Shape, key_label: str | None, key_value: str | None, split: bool
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(node selector, match expressions) that pick the pool's nodes: its pool label, else (or
    when the label's nodes are split) the GPU product, driver, count and placement labels."""
    labels = first.node.host.labels
    placement = first.node.placement.kind
    selector: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    if key_label and key_value:
        selector[key_label] = key_value
    if split or not key_label:
        plugin = vendor_plugin(labels, [first.resource])
        product_label = str(plugin.product_label) if plugin else GFD + "gpu.product"
        count_label = plugin.count_label if plugin else GFD + "gpu.count"
        selector[product_label] = labels.get(product_label, first.product)
        selector.update(_driver_selector(labels))
        if count_label and labels.get(count_label):
            selector[count_label] = labels[count_label]
        if placement is PlacementKind.VGPU:
            selector[VGPU_LABEL] = "true"
        elif placement is PlacementKind.PASSTHROUGH:
            selector[HYPERVISOR_LABEL] = "true"
            expressions.append({"key": VGPU_LABEL, "operator": "NotIn", "values": ["true"]})
        elif placement is PlacementKind.BARE_METAL:
            expressions.append({"key": HYPERVISOR_LABEL, "operator": "DoesNotExist"})
            expressions.append({"key": VGPU_LABEL, "operator": "NotIn", "values": ["true"]})
        if labels.get(WORKLOAD_CONFIG_LABEL):
            selector[WORKLOAD_CONFIG_LABEL] = labels[WORKLOAD_CONFIG_LABEL]
    if first.node.mig.get("strategy") == "mixed":
        # the resource itself selects nodes that have the profile; the label says so too
        expressions.append({"key": f"{GFD}mig-{first.mig_profile}.count", "operator": "Exists"})
    return selector, expressions


def node_taints(nodes: Iterable[ClusterNode]) -> list[dict[str, str]]:
    """The taints of the pool's nodes (each once), less the node-state ones never tolerated."""
    taints: dict[tuple[str, str, str], dict[str, str]] = {}
    for node in nodes:
        for text in node.taints:
            t = _taint(text)
            if t["key"].startswith(
                _CONDITION_TAINTS
            ):  # the node's state, not the pool's: never tolerated
                continue
            taints[(t["key"], t["value"], t["effect"])] = t
    return sorted(taints.values(), key=lambda t: (t["key"], t["value"], t["effect"]))
