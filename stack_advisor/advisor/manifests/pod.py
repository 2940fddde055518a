"""A ready Kubernetes placement per recommendation: a Pod the API server accepts, whose
scheduling constraints select nodes by the labels NVIDIA GPU feature discovery (GFD) and node
feature discovery (NFD) write.

Labels used:

- ``nvidia.com/gpu.product`` (GPU name with spaces as dashes; under the MIG *single* strategy GFD
  appends ``-MIG-<profile>``), ``nvidia.com/gpu.count``, ``nvidia.com/mig.capable``,
  ``nvidia.com/mig.strategy``, ``nvidia.com/vgpu.present``;
- the driver version as integers: ``nvidia.com/cuda.driver-version.{major,minor,revision}``
  (GFD 0.15 and later) or ``nvidia.com/cuda.driver.{major,minor,rev}`` (before);
- ``feature.node.kubernetes.io/cpu-cpuid.HYPERVISOR`` (NFD: the CPU reports a hypervisor, i.e.
  the node is a VM).

Node affinity compares integers only with ``Gt``/``Lt``, and its terms are ORed while the
expressions of a term are ANDed. A minimum driver ``M.m.r`` is therefore three terms per label
family: major > M; major = M and minor > m; major = M, minor = m and revision >= r — equality
written as ``Gt M-1`` and ``Lt M+1``, which also reads GFD's zero-padded values ("01") right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from stack_advisor.advisor.knowledge.specs import mig_profile, resolve_accelerator
from stack_advisor.advisor.manifests.image_check import image_stack
from stack_advisor.advisor.manifests.vendor import vendor_scheduling
from stack_advisor.catalog.architectures import cpu_architecture
from stack_advisor.catalog.device_plugins import device_facts
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind, SoftwareStack

GPU_RESOURCE = "nvidia.com/gpu"
HYPERVISOR = "feature.node.kubernetes.io/cpu-cpuid.HYPERVISOR"
VGPU_PRESENT = "nvidia.com/vgpu.present"
DRIVER_LABELS = (
    (
        "nvidia.com/cuda.driver-version.major",
        "nvidia.com/cuda.driver-version.minor",
        "nvidia.com/cuda.driver-version.revision",
    ),  # GFD >= 0.15
    ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"),
)
# What an image ships (the driver comes from the node): two stacks alike in these share an image.
IMAGE_COMPONENTS = ("cuda", "cudnn", "nccl", "tensorrt", "framework", "framework_version", "python")


def _name(text: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (slug or "workload")[:50].strip("-")


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def _equals(key: str, value: int) -> list[dict[str, Any]]:
    return [_expr(key, "Gt", str(value - 1)), _expr(key, "Lt", str(value + 1))]


def driver_version_parts(version: str) -> list[int]:
    """``"525.60.13"`` → ``[525, 60, 13]``. Raises InvalidInput for anything else."""
    parts = version.strip().split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise InvalidInput(f"minimum driver: {version!r} is not a driver version such as 525.60.13")
    return [int(p) for p in parts]


def driver_terms(min_driver: str) -> list[list[dict[str, Any]]]:
    """ORed lists of ANDed node-selector expressions: the node's driver is at least
    ``min_driver``, read from the newer GFD labels or from the older ones."""
    parts = driver_version_parts(min_driver)
    terms = []
    for labels in DRIVER_LABELS:
        for i, part in enumerate(parts):
            exprs = [e for j in range(i) for e in _equals(labels[j], parts[j])]
            last = i == len(parts) - 1
            exprs.append(_expr(labels[i], "Gt", str(part - 1 if last else part)))
            terms.append(exprs)
    return terms


def shipped(stack: SoftwareStack) -> tuple[str | None, ...] | None:
    """The components an image fixes, or None when the stack names no framework version (too
    little to say which image it was)."""
    if not (stack.framework and stack.framework_version):
        return None
    return tuple(getattr(stack, name) for name in IMAGE_COMPONENTS)


def image_index(stacks: Iterable[SoftwareStack]) -> dict[tuple[str | None, ...], str]:
    """Images the knowledge base records (collector runs from a collection plan carry theirs),
    by the components they ship; the first recorded wins."""
    index: dict[tuple[str | None, ...], str] = {}
    for stack in stacks:
        key = shipped(stack)
        if stack.image and key is not None:
            index.setdefault(key, stack.image)
    return index


def image_for(
    stack: SoftwareStack, index: dict[tuple[str | None, ...], str]
) -> tuple[str, str] | None:
    """(image, where it came from) for a stack, or None when the knowledge base knows none."""
    if stack.image:
        return stack.image, "recorded with this stack"
    key = shipped(stack)
    if key is not None and key in index:
        return index[key], "recorded with a stack of the same CUDA, cuDNN and framework versions"
    return None


def missing_image(stack: SoftwareStack) -> str:
    return (
        f"no placement snippet: the knowledge base records no container image for {stack.label()}; "
        "pass --image IMAGE (API: workload.image) to get one"
    )


def check_image(image: str) -> str:
    image = image.strip()
    if not image or any(c.isspace() for c in image):
        raise InvalidInput(
            f"--image: {image!r} is not a container image reference "
            "(e.g. nvcr.io/nvidia/pytorch:24.05-py3)"
        )
    return image


def placement_snippet(
    *,
    workload_name: str,
    stack: SoftwareStack,
    accelerator: str,
    count: int,
    placement: PlacementKind,
    image: str,
    image_source: str = "given (--image)",
    min_driver: str | None = None,
) -> dict[str, Any]:
    """A Pod manifest (dict) that runs ``image`` on a node matching the candidate.

    ``count`` is how many accelerators the workload uses (the user's ``--count`` when given);
    for a MIG candidate it is GPUs, each contributing the measured number of MIG instances.
    Raises:
        InvalidInput: a blank or malformed image, or a malformed minimum driver.
    """
    if count < 1:
        raise InvalidInput(f"count: must be >= 1, got {count}")
    annotations = {
        "stack-advisor/stack": stack.label(),
        "stack-advisor/accelerator": accelerator,
        "stack-advisor/placement": placement.value,
        "stack-advisor/image-source": image_source,
    }
    container: dict[str, Any] = {"name": "workload", "image": check_image(image)}
    ships = image_stack(image)
    if (
        ships is not None
    ):  # what the image runs, beside the ranked stack (explain warns when they part)
        annotations["stack-advisor/image-stack"] = ", ".join(f"{k} {v}" for k, v in ships.items())
    where = _Scheduling()
    resources = _resources(where, annotations, accelerator, count, placement, min_driver)
    if resources is not None:
        container["resources"] = resources
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _name(workload_name),
            "labels": {"app.kubernetes.io/managed-by": "stack-advisor"},
            "annotations": annotations,
        },
        "spec": where.spec(container),
    }


def _resources(
    where: _Scheduling,
    annotations: dict[str, str],
    accelerator: str,
    count: int,
    placement: PlacementKind,
    min_driver: str | None,
) -> dict[str, Any] | None:
    """The container's resources for the accelerator, its node selection set in ``where``; None
    for a CPU, or a device whose plugin the catalogue does not know (an annotation says so)."""
    resolved = resolve_accelerator(accelerator)
    if resolved.is_cpu:
        where.selector["kubernetes.io/arch"] = cpu_architecture(accelerator)
        return None
    if resolved.spec is not None and resolved.spec.vendor == "nvidia":
        return _nvidia(
            where, annotations, resolved.spec.gfd_product, accelerator, count, placement, min_driver
        )
    facts = device_facts(resolved.spec) if resolved.spec is not None else None
    if facts is None:
        annotations["stack-advisor/device"] = (
            f"{accelerator}: the catalogue knows no Kubernetes device plugin for this device; "
            "request its resource and select its nodes with your device plugin's labels"
        )
        return None
    resources: dict[str, Any] = vendor_scheduling(
        facts, accelerator, count, where.selector, where.exprs, annotations
    )
    return resources


@dataclass
class _Scheduling:
    """Where a Pod may run: node labels to select, affinity expressions (ANDed), minimum-driver
    terms (ORed, each with the expressions), tolerations."""

    selector: dict[str, str] = field(default_factory=dict)
    exprs: list[dict[str, Any]] = field(default_factory=list)
    driver: list[list[dict[str, Any]]] = field(default_factory=list)
    tolerations: list[dict[str, Any]] = field(default_factory=list)

    def spec(self, container: dict[str, Any]) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
        if self.selector:
            spec["nodeSelector"] = self.selector
        terms = [[*self.exprs, *d] for d in self.driver] or ([self.exprs] if self.exprs else [])
        if terms:
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                    }
                }
            }
        if self.tolerations:
            spec["tolerations"] = self.tolerations
        return spec


def _nvidia(
    where: _Scheduling,
    annotations: dict[str, str],
    product: str | None,
    accelerator: str,
    count: int,
    placement: PlacementKind,
    min_driver: str | None,
) -> dict[str, Any]:
    """Fill in the GFD/NFD labels an NVIDIA GPU node carries; the container's resources."""
    resource, amount = GPU_RESOURCE, count
    mig = mig_profile(accelerator)
    if mig is not None:
        per_gpu, profile = mig
        resource, amount = f"nvidia.com/mig-{profile}", per_gpu * count
        where.selector["nvidia.com/mig.capable"] = "true"
        where.selector["nvidia.com/mig.strategy"] = "mixed"
        annotations["stack-advisor/mig"] = (
            f"measured on {per_gpu} MIG {profile} instance(s) per GPU x {count} GPU(s); "
            "this Pod asks the "
            f"mixed strategy's {resource}. On single-strategy nodes GFD names the product "
            f"{product or '<gpu.product>'}-MIG-{profile} and the device plugin offers "
            "the instances as "
            f"{GPU_RESOURCE}: select "
            f"nvidia.com/gpu.product={product or '<gpu.product>'}-MIG-{profile} "
            f"and request {GPU_RESOURCE}: {amount} instead"
        )
    elif count > 1:
        where.exprs.append(_expr("nvidia.com/gpu.count", "Gt", str(count - 1)))
    if product:
        where.selector["nvidia.com/gpu.product"] = product
    where.tolerations.append({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"})
    if placement is PlacementKind.VGPU:
        where.selector[VGPU_PRESENT] = "true"
    elif placement is PlacementKind.BARE_METAL:
        where.exprs += [_expr(HYPERVISOR, "NotIn", "true"), _expr(VGPU_PRESENT, "NotIn", "true")]
        annotations["stack-advisor/vm-exclusion"] = (
            f"VMs are excluded by NFD's {HYPERVISOR} label; without NFD a VM cannot be told apart"
        )
    elif placement is PlacementKind.PASSTHROUGH:
        where.exprs += [_expr(HYPERVISOR, "In", "true"), _expr(VGPU_PRESENT, "NotIn", "true")]
    if min_driver:
        where.driver = driver_terms(min_driver)
        annotations["stack-advisor/min-driver"] = min_driver
    return {"limits": {resource: amount}}


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: ~20x faster


class _NoAliases(_BaseDumper):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(manifest: dict[str, Any]) -> str:
    """YAML for ``kubectl apply -f``: a ``v1`` List as one document per object."""
    if manifest.get("kind") == "List" and manifest.get("apiVersion") == "v1":
        return "---\n".join(to_yaml(item) for item in manifest["items"])
    return yaml.dump(manifest, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)
