"""A manifest that lands a workload on exactly one node pool.

Built on the generic placement snippet (``stack_advisor.advisor.manifests.pod.placement_snippet``:
container, image,
annotations), then narrowed to the pool: its nodeSelector (pool label, or GFD labels when the
pool has none or its label mixes node shapes), node affinity (VM exclusion, MIG profile),
tolerations for its taints, and the resource its MIG strategy exposes. A job larger than one node
becomes a gang: a Volcano PodGroup (minMember = pods) and a Kubeflow PyTorchJob whose Master and
Workers each take one node's worth of the resource.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.manifests.pod import placement_snippet
from stack_advisor.schema.models import SoftwareStack

GANG_SCHEDULER = "volcano"


def _name(text: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (slug or "workload")[:50].strip("-")


def pool_pod(
    *,
    pool: NodePool,
    stack: SoftwareStack,
    image: str,
    workload_name: str,
    units: int,
    image_source: str | None = None,
) -> dict[str, Any]:
    """One Pod on one node of the pool, requesting ``units`` of the pool's resource."""
    common: dict[str, Any] = {
        "workload_name": workload_name,
        "accelerator": pool.kb_name,
        "count": units,
        "placement": pool.placement,
    }
    manifest = placement_snippet(
        stack=stack, image=image, image_source=image_source or "given (--image)", **common
    )
    meta = manifest["metadata"]
    meta["name"] = _name(workload_name)
    annotations = meta.setdefault("annotations", {})
    for stale in ("stack-advisor/min-driver", "stack-advisor/mig", "stack-advisor/vm-exclusion"):
        annotations.pop(stale, None)  # about generic nodes; this Pod targets one known pool
    annotations["stack-advisor/pool"] = pool.name
    annotations["stack-advisor/accelerator"] = pool.product
    if pool.driver:
        annotations["stack-advisor/pool-driver"] = pool.driver
    spec = manifest["spec"]
    container = spec["containers"][0]
    container["image"] = image
    if pool.kind == "gpu":
        container["resources"] = {"limits": {pool.resource: units}}
    else:  # a CPU-only pool: the benchmark measures the node; no extended resource to request
        container.pop("resources", None)
    spec["nodeSelector"] = dict(pool.node_selector)
    affinity = pool.affinity()
    if affinity:
        spec["affinity"] = affinity
    else:
        spec.pop("affinity", None)
    tolerations = pool.tolerations()
    if tolerations:
        spec["tolerations"] = tolerations
    else:
        spec.pop("tolerations", None)
    return manifest


def pool_manifests(
    *,
    pool: NodePool,
    stack: SoftwareStack,
    image: str,
    workload_name: str,
    units_per_pod: int,
    pods: int,
    namespace: str | None = None,
    image_source: str | None = None,
) -> list[dict[str, Any]]:
    """The objects to apply: one Pod, or (``pods`` > 1) a PodGroup and a PyTorchJob gang."""
    pod = pool_pod(
        pool=pool,
        stack=stack,
        image=image,
        workload_name=workload_name,
        units=units_per_pod,
        image_source=image_source,
    )
    if namespace:
        pod["metadata"]["namespace"] = namespace
    if pods <= 1:
        return [pod]
    return _gang(pod, pool, units_per_pod, pods, namespace)


def _gang(
    pod: dict[str, Any], pool: NodePool, units_per_pod: int, pods: int, namespace: str | None
) -> list[dict[str, Any]]:
    """A Volcano PodGroup and a PyTorchJob of ``pods`` replicas (one master) made of ``pod``."""
    name = pod["metadata"]["name"]
    meta: dict[str, Any] = {
        "name": name,
        "labels": dict(pod["metadata"]["labels"]),
        "annotations": dict(pod["metadata"]["annotations"]),
    }
    if namespace:
        meta["namespace"] = namespace
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": copy.deepcopy(meta),
        "spec": {"minMember": pods, "minResources": {pool.resource: str(units_per_pod * pods)}},
    }
    spec = copy.deepcopy(pod["spec"])
    spec["containers"][0]["name"] = "pytorch"  # the training operator looks for this container
    spec["schedulerName"] = GANG_SCHEDULER
    spec.pop("restartPolicy", None)  # set per replica type below
    template = {
        "metadata": {
            "labels": dict(meta["labels"]),
            "annotations": {**meta["annotations"], "scheduling.k8s.io/group-name": name},
        },
        "spec": spec,
    }
    replicas: dict[str, Any] = {
        "Master": {"replicas": 1, "restartPolicy": "Never", "template": copy.deepcopy(template)},
        "Worker": {
            "replicas": pods - 1,
            "restartPolicy": "Never",
            "template": copy.deepcopy(template),
        },
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", "schedulingPolicy": {"minAvailable": pods}},
            "pytorchReplicaSpecs": replicas,
        },
    }
    return [group, job]
