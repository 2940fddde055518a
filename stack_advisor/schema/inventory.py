"""Node inventory: a cluster's nodes as the knowledge base models them.

NVIDIA GPU feature discovery (GFD) and Node Feature Discovery (NFD) label each node; this
module turns those labels into ``Host``, ``Accelerator`` and ``Placement`` plus the driver, so
the advisor can name the node pools that satisfy a recommendation. Nothing is guessed: a value
no label states stays ``None``, and every placement decision lists the labels it rests on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stack_advisor.catalog import resolve_accelerator
from stack_advisor.catalog.device_plugins import DevicePlugin, plugins
from stack_advisor.catalog.rounds import release_key
from stack_advisor.schema.models import Accelerator, Host, Placement, PlacementKind
from stack_advisor.schema.numa_labels import list_nrt, numa_from_labels, numa_from_nrt
from stack_advisor.schema.resource_slices import DraDevices, devices_by_node, list_resource_slices
from stack_advisor.schema.topology import NodeNuma

GFD = "nvidia.com/"
NFD = "feature.node.kubernetes.io/"
HYPERVISOR_LABEL = NFD + "cpu-cpuid.HYPERVISOR"
VGPU_LABEL = GFD + "vgpu.present"
# Labels that name a node's pool, most specific first (ours, then the clouds', then GFD's product).
POOL_LABELS = (
    "stack-advisor.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
GPU_RESOURCE = "nvidia.com/gpu"
# GFD labels whose values are whole numbers, and the prefixes of its version labels (whole-number
# parts, or a dotted ``full``): a value of another shape is reported and ignored
_WHOLE_LABELS = (
    "gpu.count",
    "gpu.memory",
    "gpu.compute.major",
    "gpu.compute.minor",
    "gpu.replicas",
)
_VERSION_PREFIXES = (
    "cuda.driver-version.",
    "cuda.driver.",
    "cuda.runtime-version.",
    "cuda.runtime.",
)
_FULL_VERSION = r"[0-9]+(?:\.[0-9]+){1,3}"
_WHOLE = r"[0-9]+"
_REVISION = (".rev", ".revision")  # empty for a two-part driver (418.67): GFD writes it so


class ClusterNode(BaseModel):
    """One node: its host, accelerator, placement and driver, and the labels that select it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    pool: str | None = Field(
        default=None, description="the value of the first POOL_LABELS label present"
    )
    pool_label: str | None = None
    host: Host
    accelerator: Accelerator | None = None
    placement: Placement
    driver: str | None = None
    cuda_driver: str | None = Field(default=None, description="newest CUDA the driver supports")
    mig: dict[str, str] = Field(default_factory=dict)
    gpu_sharing: str | None = None
    allocatable_gpus: int | None = None
    gpu_resources: dict[str, int] = Field(
        default_factory=dict,
        description="allocatable nvidia.com/* extended resources (gpu, gpu.shared, mig-<profile>), "
        "and other vendors' GPU resources (amd.com/gpu, habana.ai/gaudi, gpu.intel.com/xe)",
    )
    ready: bool | None = None
    unschedulable: bool = False
    taints: list[str] = Field(default_factory=list)
    numa: NodeNuma | None = Field(
        default=None, description="NUMA layout (NodeResourceTopology or NFD); null: unknown"
    )
    label_problems: list[str] = Field(
        default_factory=list,
        description="GFD labels whose values are not of their shape (ignored, so the figure they "
        "would give is unknown or read from elsewhere)",
    )

    def selector(self) -> dict[str, str]:
        """A nodeSelector for this node's group: its pool label, else its GPU product."""
        if self.pool_label and self.pool:
            return {self.pool_label: self.pool}
        labels = self.host.labels
        plugin = vendor_plugin(labels, self.gpu_resources)
        label = str(plugin.product_label) if plugin else GFD + "gpu.product"
        product = labels.get(label)
        return {label: product} if product else {"kubernetes.io/hostname": self.name}

    def row(self) -> dict[str, Any]:
        acc = self.accelerator
        return {
            "node": self.name,
            "pool": self.pool,
            "gpu": acc.model if acc else None,
            "gpus": acc.count if acc else 0,
            "gpu_memory_mib": acc.memory_mib if acc else None,
            "driver": self.driver,
            "cuda_driver": self.cuda_driver,
            "placement": self.placement.kind.value,
            "mig": self.mig.get("strategy"),
            "cpu": self.host.cpu_model,
            "numa": None
            if self.numa is None
            else (self.numa.numa_nodes or (">1" if self.numa.multi else None)),
            "ready": self.ready,
            "label_problems": "; ".join(self.label_problems) or None,
        }


def label_problems(labels: dict[str, str]) -> list[str]:
    """The GFD labels whose values are not of their shape: a count, memory or compute capability
    that is not a whole number, a driver or CUDA version part that is not one (a revision may be
    empty, as GFD writes it for a two-part driver), a ``full`` version that is not dotted numbers;
    read as written, untrimmed. Each is named with its value; it is ignored."""
    out = []
    for key, value in sorted(labels.items()):
        if not key.startswith(GFD):
            continue
        name, text = key[len(GFD) :], str(value)
        versioned = name.startswith(_VERSION_PREFIXES)
        if versioned and name.endswith(".full"):
            if not re.fullmatch(_FULL_VERSION, text):
                out.append(f"{key}={value!r} is not a version such as 550.54.15: ignored")
        elif versioned and name.endswith(_REVISION) and not text:
            continue
        elif (name in _WHOLE_LABELS or versioned) and not re.fullmatch(_WHOLE, text):
            out.append(f"{key}={value!r} is not a whole number: ignored")
    return out


def _without(labels: dict[str, str], problems: list[str]) -> dict[str, str]:
    """``labels`` less those ``problems`` name (``label_problems``' texts start with the key)."""
    bad = {p.split("=", 1)[0] for p in problems}
    return {k: v for k, v in labels.items() if k not in bad}


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# The third part of a driver version is ``rev`` in GFD's older labels and ``revision`` in GFD >=
# 0.15 (``nvidia.com/cuda.driver-version.revision``); either is read under either prefix.
_PART_SPELLINGS = {"rev": ("rev", "revision"), "revision": ("revision", "rev")}


def _version(labels: dict[str, str], *prefixes: str, parts: tuple[str, ...]) -> str | None:
    """``<prefix>full`` if present, else ``major.minor[.rev]`` from the first prefix that has a
    major."""
    for prefix in prefixes:
        if labels.get(prefix + "full"):
            return labels[prefix + "full"]
        if labels.get(prefix + parts[0]):
            values = [
                next(
                    (
                        labels[prefix + name]
                        for name in _PART_SPELLINGS.get(p, (p,))
                        if labels.get(prefix + name)
                    ),
                    None,
                )
                for p in parts
            ]
            return ".".join(v for v in values if v)
    return None


def _memory_mib(quantity: str | None) -> int | None:
    """A Kubernetes memory quantity (``263840236Ki``, ``64Gi``, bytes) in MiB."""
    if not quantity:
        return None
    units = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "K": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
    }
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            number = _float(quantity[: -len(suffix)])
            return int(number * factor / 2**20) if number is not None else None
    number = _float(quantity)
    return int(number / 2**20) if number is not None else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def placement_from_labels(labels: dict[str, str]) -> Placement:
    """vGPU when GFD says ``vgpu.present=true``; a VM with the GPU passed through when NFD sees
    the CPUID hypervisor bit without vGPU; bare metal when NFD ran and saw no hypervisor;
    unknown without NFD. The labels used are the evidence."""
    evidence: list[str] = []
    vgpu = labels.get(VGPU_LABEL)
    hypervisor = labels.get(HYPERVISOR_LABEL)
    nfd_ran = any(k.startswith(NFD + "cpu-") for k in labels)
    has_gpu = bool(labels.get(GFD + "gpu.product"))
    if vgpu is not None:
        evidence.append(f"{VGPU_LABEL}={vgpu}")
    if hypervisor is not None:
        evidence.append(f"{HYPERVISOR_LABEL}={hypervisor}")
    elif nfd_ran:
        evidence.append(f"{HYPERVISOR_LABEL} absent while NFD cpu labels are present")
    if vgpu == "true":
        profile = labels.get(GFD + "gpu.product")
        branch = labels.get(GFD + "vgpu.host-driver-branch")
        if branch:
            evidence.append(f"{GFD}vgpu.host-driver-branch={branch}")
        consistent = hypervisor != "false"
        return Placement(
            kind=PlacementKind.VGPU, vgpu_profile=profile, evidence=evidence, consistent=consistent
        )
    if hypervisor == "true":
        kind = PlacementKind.PASSTHROUGH if has_gpu else PlacementKind.UNKNOWN
        if not has_gpu:
            evidence.append("a VM without GPU labels: no GPU placement to name")
        return Placement(kind=kind, evidence=evidence)
    if nfd_ran:
        return Placement(kind=PlacementKind.BARE_METAL, evidence=evidence)
    evidence.append("no NFD cpu labels: placement cannot be told")
    return Placement(kind=PlacementKind.UNKNOWN, evidence=evidence)


def vendor_plugin(labels: dict[str, str], offered: Iterable[str] = ()) -> DevicePlugin | None:
    """The device plugin of a vendor other than NVIDIA whose product label a node carries (AMD's
    node labeller ``amd.com/gpu.product-name``, Intel's ``gpu.intel.com/product``:
    ``catalog/device_plugins.yaml``), or None (a GFD-labelled node, or none of them): such a
    node's GPUs are that plugin's extended resource. Where plugins share a label (Intel's xe and
    i915 plugins), the one whose resource the node ``offered`` (allocatable) is chosen."""
    if labels.get(GFD + "gpu.product"):
        return None
    found = [
        p
        for p in plugins()
        if p.product_label and not p.product_label.startswith(GFD) and labels.get(p.product_label)
    ]
    offers = set(offered)
    chosen = next((p for p in found if p.resource in offers), None)
    if chosen is not None or len(found) < 2:
        return chosen or (found[0] if found else None)
    # none offered: the plugin for the part's generation (Intel's Max 1550 runs i915, B70 xe)
    entry = resolve_accelerator(labels[str(found[0].product_label)].replace("_", " ")).entry
    generation = entry.generation if entry is not None else None
    return next((p for p in found if generation in p.generations), found[0])


def _offered(allocatable: dict[str, str]) -> list[str]:
    """The resources a node has any of (allocatable, positive)."""
    return [k for k, v in allocatable.items() if (_int(str(v)) or 0) > 0]


@lru_cache(maxsize=1)
def _plugin_resources() -> frozenset[str]:
    """Every vendor's GPU extended resource (``catalog/device_plugins.yaml``)."""
    return frozenset(p.resource for p in plugins())


def device_resource(labels: dict[str, str], offered: Iterable[str] = ()) -> str:
    """The extended resource a node's GPUs are requested by: ``nvidia.com/gpu``, or the resource
    of the vendor plugin whose labels it carries (``vendor_plugin``)."""
    return _resource_of(vendor_plugin(labels, offered))


def _resource_of(plugin: DevicePlugin | None) -> str:
    return plugin.resource if plugin else GPU_RESOURCE


def _vendor_accelerator(
    plugin: DevicePlugin, labels: dict[str, str], allocatable: dict[str, str]
) -> Accelerator:
    product = labels[str(plugin.product_label)]
    count = _int(labels.get(plugin.count_label)) if plugin.count_label else None
    if count is None or count < 1:
        count = max(_int(allocatable.get(plugin.resource)) or 0, 1)
    memory = _int(labels.get(plugin.memory_label)) if plugin.memory_label else None
    return Accelerator(model=product, vendor=plugin.vendor, count=count, memory_mib=memory)


def _accelerator(
    labels: dict[str, str], allocatable: dict[str, str], plugin: DevicePlugin | None
) -> Accelerator | None:
    """The node's GPU: as GFD labels it, else as ``plugin`` (``vendor_plugin``) does."""
    product = labels.get(GFD + "gpu.product")
    if not product:
        return _vendor_accelerator(plugin, labels, allocatable) if plugin else None
    major, minor = labels.get(GFD + "gpu.compute.major"), labels.get(GFD + "gpu.compute.minor")
    count = _int(labels.get(GFD + "gpu.count"))
    if count is None:
        # a negative allocatable count is no count (a node object written by hand): one GPU
        count = max(_int(allocatable.get(GPU_RESOURCE)) or 0, 1)
    return Accelerator(
        model=product,
        vendor="NVIDIA",
        count=count,
        memory_mib=_int(labels.get(GFD + "gpu.memory")),
        compute_capability=f"{major}.{minor}" if major and minor else None,
    )


def _mig(labels: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in labels.items():
        if key.startswith((GFD + "mig.", GFD + "mig-")):
            out[key[len(GFD) :]] = value
    if GFD + "mig.strategy" in labels:
        out["strategy"] = labels[GFD + "mig.strategy"]
    return out


def _cpu_model(labels: dict[str, str]) -> str | None:
    vendor = labels.get(NFD + "cpu-model.vendor_id")
    family = labels.get(NFD + "cpu-model.family")
    model_id = labels.get(NFD + "cpu-model.id")
    if not (vendor or family or model_id):
        return None
    return " ".join(
        p
        for p in (
            vendor,
            f"family {family}" if family else None,
            f"model {model_id}" if model_id else None,
        )
        if p
    )


def _node_host(
    name: str, labels: dict[str, str], info: dict[str, Any], capacity: dict[str, Any]
) -> Host:
    """The node as a host: CPU (NFD's model and flags), cores, memory, OS and kernel."""
    flags = sorted(
        k[len(NFD + "cpu-cpuid.") :]
        for k, v in labels.items()
        if k.startswith(NFD + "cpu-cpuid.") and v == "true"
    )
    return Host(
        name=name,
        cpu_model=_cpu_model(labels),
        cores=_int(capacity.get("cpu")),
        cpu_flags=flags,
        memory_mib=_memory_mib(capacity.get("memory")),
        os=info.get("osImage") or None,
        kernel=info.get("kernelVersion") or labels.get(NFD + "kernel-version.full"),
        labels=labels,
    )


def parse_node(node: dict[str, Any], nrt: dict[str, Any] | None = None) -> ClusterNode:
    """A Node object (as the API returns it, camelCase JSON) → ``ClusterNode``; ``nrt`` is the
    node's NodeResourceTopology object where the cluster has one."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    raw: dict[str, str] = dict(meta.get("labels") or {})
    problems = label_problems(raw)
    labels = _without(raw, problems)  # the host keeps every label: selectors read them
    info = status.get("nodeInfo") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    host = _node_host(meta["name"], raw, info, capacity)
    plugin = vendor_plugin(labels, _offered(allocatable))  # another vendor's GPUs, or None
    pool_label = next((k for k in POOL_LABELS if labels.get(k)), None)
    ready = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
    taints = [
        f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in spec.get("taints") or []
    ]
    return ClusterNode(
        name=meta["name"],
        pool=labels.get(pool_label) if pool_label else None,
        pool_label=pool_label,
        host=host,
        accelerator=_accelerator(labels, allocatable, plugin),
        placement=placement_from_labels(labels),
        driver=_version(
            labels,
            GFD + "cuda.driver-version.",
            GFD + "cuda.driver.",
            parts=("major", "minor", "rev"),
        ),
        cuda_driver=_version(
            labels, GFD + "cuda.runtime-version.", GFD + "cuda.runtime.", parts=("major", "minor")
        ),
        mig=_mig(labels),
        gpu_sharing=labels.get(GFD + "gpu.sharing-strategy"),
        allocatable_gpus=_int(allocatable.get(_resource_of(plugin))),
        gpu_resources={
            k: n
            for k, v in allocatable.items()
            if (k.startswith(GFD) or k in _plugin_resources()) and (n := _int(str(v))) is not None
        },
        ready=ready,
        unschedulable=bool(spec.get("unschedulable")),
        taints=taints,
        numa=numa_from_nrt(nrt, host.cores, host.memory_mib)
        if nrt
        else numa_from_labels(labels, host.cores, host.memory_mib),
        label_problems=problems,
    )


def with_dra(node: ClusterNode, devices: list[DraDevices]) -> ClusterNode:
    """The node with its DRA devices as its accelerator, where its labels name none."""
    if node.accelerator is not None or not devices:
        return node
    main = max(devices, key=lambda d: d.count)
    cc = main.compute_capability
    accelerator = Accelerator(
        model=(main.product or main.driver).replace(" ", "-"),  # as GFD writes product names
        vendor=main.driver,
        count=main.count,
        memory_mib=main.memory_mib,
        compute_capability=".".join(cc.split(".")[:2]) if cc else None,
    )
    return node.model_copy(
        update={
            "accelerator": accelerator,
            "allocatable_gpus": main.count,
            "driver": node.driver or main.driver_version,
        }
    )


def list_cluster_nodes(api_client: Any, selector: str | None = None) -> list[ClusterNode]:
    """Every node of the cluster (optionally filtered by a label selector), parsed."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from stack_advisor.collectors.executors.kubernetes import api_error

    try:
        raw = client.CoreV1Api(api_client).list_node(label_selector=selector or "")
    except (ApiException, HTTPError) as exc:
        raise api_error(exc, "listing nodes") from None
    items = api_client.sanitize_for_serialization(raw).get("items") or []
    try:
        topologies = list_nrt(api_client)
        dra = devices_by_node(list_resource_slices(api_client))
    except (ApiException, HTTPError) as exc:
        raise api_error(exc, "listing NodeResourceTopology objects and ResourceSlices") from None
    return sorted(
        (
            with_dra(parse_node(item, topologies.get(item["metadata"]["name"])), dra.get(name, []))
            for item in items
            if (name := item["metadata"]["name"])
        ),
        key=lambda n: n.name,
    )


def nodes_satisfying(
    nodes: Iterable[ClusterNode],
    *,
    accelerator: str | None = None,
    placement: PlacementKind | None = None,
    min_driver: str | None = None,
    min_gpus: int = 0,
) -> dict[str, list[ClusterNode]]:
    """Nodes fitting a recommendation, grouped by pool (or by their selector when poolless)."""

    # A node's GFD label ("NVIDIA-H100-80GB-HBM3") and a recommendation's accelerator
    # ("H100-SXM5-80GB") are compared as catalogue names.
    wanted = resolve_accelerator(accelerator).key if accelerator else None
    groups: dict[str, list[ClusterNode]] = {}
    for node in nodes:
        acc = node.accelerator
        if wanted and (acc is None or resolve_accelerator(acc.model).key != wanted):
            continue
        if placement and node.placement.kind != placement:
            continue
        if min_gpus and (acc is None or acc.count < min_gpus):
            continue
        if min_driver and (
            node.driver is None or release_key(node.driver) < release_key(min_driver)
        ):
            continue
        key = node.pool or ",".join(f"{k}={v}" for k, v in node.selector().items())
        groups.setdefault(key, []).append(node)
    return groups
