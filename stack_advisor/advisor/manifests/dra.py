"""Dynamic Resource Allocation (``resource.k8s.io/v1``): a ResourceClaimTemplate asking the
vendor's DRA driver for the recommendation's devices, with CEL selectors from the catalogue's facts
(product name, memory, CUDA compute capability, minimum driver), and the Pod changed to consume it.

A DRA cluster need not run GPU feature discovery, so the Pod's label selectors and node affinity
(GFD's) are dropped: the device selectors say the same to the scheduler through ResourceSlices."""

from __future__ import annotations

import copy
from typing import Any

from stack_advisor.catalog.device_plugins import DeviceFacts

CLAIM = "accelerators"
MIG_CLASS = "mig.nvidia.com"  # the NVIDIA DRA driver's DeviceClass for MIG devices


def _quantity_gb(gb: float) -> str:
    return f"{gb:g}G"


def _semver(version: str) -> str:
    parts = [*version.split("."), "0", "0"][:3]
    return ".".join(str(int(p)) for p in parts)


def selectors(
    facts: DeviceFacts, min_driver: str | None, mig_profile: str | None
) -> list[dict[str, Any]]:
    """CEL selectors (ANDed) for the part, from what the catalogue knows about its DRA driver."""
    plugin = facts.plugin
    domain = f'device.attributes["{plugin.dra_driver}"]'
    exprs = [f'device.driver == "{plugin.dra_driver}"']
    if mig_profile:
        exprs.append(f'{domain}.profile == "{mig_profile}"')
    if plugin.dra_product_attribute and facts.nvml_name:
        exprs.append(f'{domain}.{plugin.dra_product_attribute} == "{facts.nvml_name}"')
    if plugin.dra_memory_capacity and facts.memory_gb and not mig_profile:
        exprs.append(
            f'device.capacity["{plugin.dra_driver}"].{plugin.dra_memory_capacity}'
            f'.compareTo(quantity("{_quantity_gb(facts.memory_gb)}")) >= 0'
        )
    if plugin.dra_compute_capability_attribute and facts.compute_capability:
        exprs.append(
            f"{domain}.{plugin.dra_compute_capability_attribute}"
            f'.compareTo(semver("{_semver(facts.compute_capability)}")) == 0'
        )
    if min_driver and plugin.vendor == "nvidia":
        exprs.append(f'{domain}.driverVersion.compareTo(semver("{_semver(min_driver)}")) >= 0')
    return [{"cel": {"expression": e}} for e in exprs]


def claim_template(
    name: str, pod: dict[str, Any], facts: DeviceFacts, min_driver: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ResourceClaimTemplate, the Pod consuming it) for one node's worth of devices."""
    pod = copy.deepcopy(pod)
    spec = pod["spec"]
    container = spec["containers"][0]
    limits = container.get("resources", {}).get("limits", {})
    resource, count = next(iter(limits.items())) if limits else (facts.plugin.resource, 1)
    mig = (
        resource.removeprefix("nvidia.com/mig-") if resource.startswith("nvidia.com/mig-") else None
    )
    device_class = MIG_CLASS if mig else facts.plugin.dra_driver
    template: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "labels": dict(pod["metadata"].get("labels", {}))},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": CLAIM,
                            "exactly": {
                                "deviceClassName": device_class,
                                "allocationMode": "ExactCount",
                                "count": int(count),
                                "selectors": selectors(facts, min_driver, mig),
                            },
                        }
                    ]
                }
            }
        },
    }
    if "namespace" in pod["metadata"]:
        template["metadata"]["namespace"] = pod["metadata"]["namespace"]
    container["resources"] = {"claims": [{"name": CLAIM}]}
    spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": name}]
    spec.pop("nodeSelector", None)
    spec.pop("affinity", None)
    pod["metadata"]["annotations"]["stack-advisor/dra"] = (
        f"{int(count)} device(s) of DeviceClass {device_class} through ResourceClaimTemplate "
        f"{name}; node labels are not required (the selectors match the devices' attributes)"
    )
    return template, pod
