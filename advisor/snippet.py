"""A ready Kubernetes placement per recommendation: a Pod whose scheduling constraints select
nodes by NVIDIA GPU feature discovery labels.

Labels used (GPU feature discovery / GPU operator): ``nvidia.com/gpu.product`` (GPU name with
spaces as dashes), ``nvidia.com/gpu.count``, ``nvidia.com/cuda.driver-version.major`` (GFD
0.15 and later, which also write ``nvidia.com/cuda.driver-version.full``) or the older
``nvidia.com/cuda.driver.major``, ``nvidia.com/vgpu.present``, ``nvidia.com/mig.capable``. Node
affinity compares integers with ``Gt``/``Lt`` only, so the minimum driver is expressed on the
major version, in two ORed terms (new label, old label); the full version is an annotation.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from advisor.specs import is_mig, resolve_accelerator
from graph_schema.models import PlacementKind, SoftwareStack

GPU_RESOURCE = "nvidia.com/gpu"


def _name(text: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (slug or "workload")[:50].strip("-")


def placement_snippet(
    *,
    workload_name: str,
    stack: SoftwareStack,
    accelerator: str,
    count: int,
    placement: PlacementKind,
    min_driver: str | None = None,
) -> dict[str, Any]:
    """A Pod manifest (dict) that lands the workload on a matching node."""
    resolved = resolve_accelerator(accelerator)
    annotations = {
        "stack-advisor/stack": stack.label(),
        "stack-advisor/accelerator": accelerator,
        "stack-advisor/placement": placement.value,
    }
    container: dict[str, Any] = {"name": "workload"}
    if stack.image:
        container["image"] = stack.image
    else:
        annotations["stack-advisor/image"] = (
            "the knowledge base records no image for this stack; set spec.containers[0].image "
            f"to one with {stack.label()}"
        )
    selector: dict[str, str] = {}
    terms: list[dict[str, Any]] = []
    driver_terms: list[dict[str, Any]] = []
    tolerations: list[dict[str, Any]] = []
    if resolved.is_cpu:
        selector["kubernetes.io/arch"] = "arm64" if re.search(r"arm|cortex|carmel|apple|aarch", accelerator, re.IGNORECASE) else "amd64"
    elif resolved.spec is not None and resolved.spec.vendor == "nvidia":
        if resolved.spec.gfd_product:
            selector["nvidia.com/gpu.product"] = resolved.spec.gfd_product
        if is_mig(accelerator):
            selector["nvidia.com/mig.capable"] = "true"
            annotations["stack-advisor/mig"] = (
                "measured on a MIG slice; on mixed-strategy nodes request the matching "
                "nvidia.com/mig-<profile> resource instead of nvidia.com/gpu"
            )
        elif count > 1:
            terms.append({"key": "nvidia.com/gpu.count", "operator": "Gt", "values": [str(count - 1)]})
        container["resources"] = {"limits": {GPU_RESOURCE: count}}
        tolerations.append({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"})
        if placement is PlacementKind.VGPU:
            selector["nvidia.com/vgpu.present"] = "true"
        elif placement in (PlacementKind.BARE_METAL, PlacementKind.PASSTHROUGH):
            terms.append({"key": "nvidia.com/vgpu.present", "operator": "NotIn", "values": ["true"]})
        if min_driver:
            major = int(min_driver.split(".")[0])
            driver_terms = [{"key": key, "operator": "Gt", "values": [str(major - 1)]}
                            for key in ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")]
            annotations["stack-advisor/min-driver"] = min_driver
    else:
        annotations["stack-advisor/device"] = (
            f"{accelerator}: no NVIDIA GPU feature discovery labels are known for this device; "
            "select its nodes with your device plugin's labels"
        )
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if selector:
        spec["nodeSelector"] = selector
    if terms:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": terms}]}}}
    if driver_terms:  # terms are ORed: a node with either driver label qualifies
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [*terms, d]} for d in driver_terms]}}}
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": _name(workload_name), "labels": {"app.kubernetes.io/managed-by": "stack-advisor"},
                     "annotations": annotations},
        "spec": spec,
    }


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: ~20x faster


class _NoAliases(_BaseDumper):  # type: ignore[misc, valid-type]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(manifest: dict[str, Any]) -> str:
    return yaml.dump(manifest, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)
