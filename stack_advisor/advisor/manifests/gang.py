"""A multi-node training job placed as a gang: a Kubeflow PyTorchJob built from one node's Pod."""

from __future__ import annotations

import copy
from typing import Any


def gang_snippet(pod: dict[str, Any], *, nodes: int, per_node: int, name: str) -> dict[str, Any]:
    """A Kubeflow PyTorchJob that asks for ``nodes`` workers as a gang (all scheduled or none,
    ``runPolicy.schedulingPolicy.minAvailable``), each worker the given Pod's spec (built for
    ``per_node`` accelerators, so its resource requests, MIG ones included, stand as they are): a
    multi-node training job placed as the published system ran."""
    template = copy.deepcopy(pod["spec"])
    template.pop("restartPolicy", None)
    for container in template.get("containers", []):
        container["name"] = "pytorch"  # the container name the training operator expects
    metadata = copy.deepcopy(pod["metadata"])
    metadata["annotations"]["stack-advisor/gang"] = (
        f"{nodes} nodes x {per_node} accelerators, scheduled together (minAvailable={nodes}); "
        "with Volcano or scheduler-plugins coscheduling this is one PodGroup"
    )
    replica = {"restartPolicy": "OnFailure", "template": {"spec": template}}
    specs: dict[str, Any] = {"Master": {**replica, "replicas": 1}}
    if nodes > 1:
        specs["Worker"] = {**copy.deepcopy(replica), "replicas": nodes - 1}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {**metadata, "name": name},
        "spec": {
            "runPolicy": {"schedulingPolicy": {"minAvailable": nodes}},
            "pytorchReplicaSpecs": specs,
        },
    }
