"""Scheduling for a non-NVIDIA accelerator: the resource its device plugin advertises and the node
labels its feature discovery writes, all read from the catalogue (``device_plugins.yaml``).

A label whose value no source gives (most parts' product label) is not guessed: the snippet says
which label would pin the part, and the resource request alone keeps the Pod on the vendor's
nodes."""

from __future__ import annotations

from typing import Any

from stack_advisor.catalog.device_plugins import DeviceFacts


def vendor_scheduling(
    facts: DeviceFacts,
    accelerator: str,
    count: int,
    selector: dict[str, str],
    exprs: list[dict[str, Any]],
    annotations: dict[str, str],
) -> dict[str, Any]:
    """Fill ``selector``/``exprs``/``annotations`` for the part; return the container's
    resources."""
    plugin = facts.plugin
    if plugin.product_label and facts.product_value:
        selector[plugin.product_label] = facts.product_value
    elif plugin.product_label:
        annotations["stack-advisor/select-part"] = (
            f"no published {plugin.product_label} value for {accelerator} in the catalogue: the "
            f"{plugin.resource} request keeps this Pod on {plugin.vendor} nodes; add nodeSelector "
            f"{plugin.product_label}=<the value your labeller writes> to pin the part"
        )
    if plugin.family_label and plugin.family_value:
        selector[plugin.family_label] = plugin.family_value
    if plugin.count_label and count > 1:
        exprs.append({"key": plugin.count_label, "operator": "Gt", "values": [str(count - 1)]})
    annotations["stack-advisor/nfd"] = (
        f"NFD labels these nodes {plugin.nfd_label}=true with deviceLabelFields [vendor] "
        f"(pci-<class>_{plugin.pci_vendor}.present by default)"
    )
    return {"limits": {plugin.resource: count}}
