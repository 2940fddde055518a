"""What every snippet target starts from: the recommendation's job shape (nodes, accelerators per
node, training or serving, the part's multi-node NVLink domain), one node's Pod, and the named
placeholders for what the recommendation cannot know."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from stack_advisor.catalog.device_plugins import DeviceFacts

PLACEHOLDERS = "stack-advisor/placeholders"
NAME_LABEL = "app.kubernetes.io/name"


@dataclass(frozen=True)
class JobShape:
    """``nodes`` x ``per_node`` accelerators; ``training`` decides Job-like vs serving objects."""

    nodes: int
    per_node: int
    training: bool
    facts: DeviceFacts | None = None

    @property
    def clique_label(self) -> str | None:
        """The node label of a multi-node NVLink domain that holds the whole job, else None."""
        facts = self.facts
        if self.nodes < 2 or facts is None or not facts.nvlink_domain_gpus:
            return None  # one node: its GPUs share the node; nothing to keep together
        if not facts.plugin.clique_label:
            return None
        if self.nodes * self.per_node > facts.nvlink_domain_gpus:
            return None
        return facts.plugin.clique_label


@dataclass
class Placeholders:
    """Values the recommendation cannot know, each a named ``REPLACE_<WHAT>`` with its meaning."""

    named: dict[str, str] = field(default_factory=dict)

    def add(self, what: str, meaning: str) -> str:
        name = "REPLACE_" + what.upper()
        self.named[name] = meaning
        return name

    def stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.named:
            notes = "; ".join(f"{k}: {v}" for k, v in sorted(self.named.items()))
            obj["metadata"].setdefault("annotations", {})[PLACEHOLDERS] = notes
        return obj


def object_meta(pod: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A top-level object's metadata from the Pod's: same name, labels and annotations."""
    meta: dict[str, Any] = copy.deepcopy(pod["metadata"])
    if name:
        meta["name"] = name
    meta.setdefault("labels", {})[NAME_LABEL] = meta["name"]
    return meta


def pod_template(pod: dict[str, Any], restart: str | None = None) -> dict[str, Any]:
    """The Pod as a template: labels and annotations kept, ``restartPolicy`` as the owner needs
    (None: the default, Always, that controllers of long-running pods require)."""
    spec = copy.deepcopy(pod["spec"])
    spec.pop("restartPolicy", None)
    if restart:
        spec["restartPolicy"] = restart
    labels = dict(pod["metadata"].get("labels", {}))
    labels[NAME_LABEL] = pod["metadata"]["name"]
    return {
        "metadata": {
            "labels": labels,
            "annotations": dict(pod["metadata"].get("annotations", {})),
        },
        "spec": spec,
    }


def as_list(*objects: dict[str, Any]) -> dict[str, Any]:
    """One object as is; several as a ``v1`` List (``kubectl apply -f`` takes either)."""
    if len(objects) == 1:
        return objects[0]
    return {"apiVersion": "v1", "kind": "List", "items": list(objects)}
