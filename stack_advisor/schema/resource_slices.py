"""Accelerators a cluster publishes through Dynamic Resource Allocation (``resource.k8s.io/v1``
ResourceSlices) instead of node labels and extended resources: a node whose GPUs a DRA driver
advertises has no ``nvidia.com/gpu`` capacity and may have no GPU feature discovery labels.

Each slice names its driver and node and lists devices with typed attributes
(``{"string": ...}``, ``{"version": ...}``, ...) and capacities (``{"value": "80Gi"}``). Attribute
names are the driver's (``productName``) or qualified (``gpu.nvidia.com/productName``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceslices"
KIND = "ResourceSlice"
# device "type" values that are whole accelerators (the NVIDIA driver also publishes "mig")
WHOLE = ("gpu", "device", None)
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}
_UNITS["T"] = 10**12


@dataclass(frozen=True)
class DraDevices:
    """One driver's whole devices on one node."""

    driver: str
    count: int
    product: str | None
    memory_mib: int | None
    compute_capability: str | None
    driver_version: str | None


def _attr(device: dict[str, Any], driver: str, name: str) -> str | None:
    attrs = device.get("attributes") or {}
    value = attrs.get(name) or attrs.get(f"{driver}/{name}")
    if not isinstance(value, dict):
        return None
    for kind in ("string", "version", "int", "bool"):
        if kind in value:
            return str(value[kind])
    return None


def _mib(quantity: str | None) -> int | None:
    if not quantity:
        return None
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?|k)?", quantity.strip())
    if not found:
        return None
    return int(float(found.group(1)) * _UNITS.get(found.group(2) or "", 1) / 2**20)


def _capacity(device: dict[str, Any], driver: str, name: str) -> str | None:
    caps = device.get("capacity") or {}
    value = caps.get(name) or caps.get(f"{driver}/{name}")
    return str(value.get("value")) if isinstance(value, dict) and "value" in value else None


def devices_by_node(items: list[Any]) -> dict[str, list[DraDevices]]:
    """Node name → the whole devices each DRA driver publishes there (other kinds are skipped)."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for item in items:
        if not isinstance(item, dict) or item.get("kind", KIND) != KIND:
            continue
        spec = item.get("spec") or {}
        node, driver = spec.get("nodeName"), spec.get("driver")
        if not isinstance(node, str) or not isinstance(driver, str):
            continue  # a slice for many nodes (nodeSelector / allNodes) names no one node
        devices = [d for d in spec.get("devices") or [] if isinstance(d, dict)]
        grouped.setdefault((node, driver), []).extend(
            d for d in devices if _attr(d, driver, "type") in WHOLE
        )
    out: dict[str, list[DraDevices]] = {}
    for (node, driver), devices in sorted(grouped.items()):
        if not devices:
            continue
        first = devices[0]
        out.setdefault(node, []).append(
            DraDevices(
                driver=driver,
                count=len(devices),
                product=_attr(first, driver, "productName"),
                memory_mib=_mib(_capacity(first, driver, "memory")),
                compute_capability=_attr(first, driver, "cudaComputeCapability"),
                driver_version=_attr(first, driver, "driverVersion"),
            )
        )
    return out


def list_resource_slices(api_client: Any) -> list[dict[str, Any]]:
    """Every ResourceSlice; empty where the cluster serves no ``resource.k8s.io/v1``."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        listed = client.CustomObjectsApi(api_client).list_cluster_custom_object(
            GROUP, VERSION, PLURAL
        )
    except ApiException as exc:
        if exc.status in (404, 403):
            return []
        raise
    items = listed.get("items") if isinstance(listed, dict) else None
    return [i for i in items or [] if isinstance(i, dict)]
