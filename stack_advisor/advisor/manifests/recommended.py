"""A recommendation row's snippet: its unique name, its job shape (nodes from the published
system, else one), and the object its ``--target`` asks for."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.advisor.manifests.shape import JobShape
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.advisor.manifests.targets import snippet_for
from stack_advisor.catalog.device_plugins import device_facts
from stack_advisor.schema.models import PlacementKind


def snippet_name(benchmark: str | None, rank: int, *identity: object) -> str:
    """``<benchmark>-<rank>-<6 hex of the row's identity>``: unique across rows and answers
    (two rows of one rank in different answers, or a long benchmark name cut short, never
    collide), a DNS label short enough for the objects controllers name after it."""
    slug = re.sub(r"[^a-z0-9-]+", "-", (benchmark or "workload").lower()).strip("-")[:32]
    digest = hashlib.sha256("|".join(map(str, identity)).encode()).hexdigest()[:6]
    return f"{slug.strip('-') or 'workload'}-{rank}-{digest}"


def published_nodes(system: dict[str, str], count: int) -> tuple[int, int] | None:
    """(nodes, accelerators per node) of a multi-node published system, else None."""
    nodes = int(system["nodes"]) if system.get("nodes", "").isdigit() else 1
    if nodes <= 1:
        return None
    per = system.get("accelerators_per_node", "")
    return nodes, int(per) if per.isdigit() else max(1, count // nodes)


def target_snippet(
    pod: dict[str, Any],
    *,
    target: SnippetTarget,
    accelerator: str,
    nodes: int,
    per_node: int,
    training: bool,
    placement: PlacementKind,
    min_driver: str | None,
    framework: str | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """The object ``target`` asks for, built from one node's Pod; (None, why) when the target
    cannot hold the recommendation."""
    spec = resolve_accelerator(accelerator).spec
    shape = JobShape(
        nodes=nodes,
        per_node=per_node,
        training=training,
        facts=device_facts(spec) if spec is not None else None,
    )
    return snippet_for(target, pod, shape, placement, min_driver, framework)
