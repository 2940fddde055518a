"""Every snippet target for a row of each vendor the catalogue knows a device plugin for, in the
shapes a recommendation takes (one node or several; training or serving; bare metal or a VM)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from stack_advisor.advisor.manifests.pod import placement_snippet
from stack_advisor.advisor.manifests.recommended import snippet_name, target_snippet
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.schema.models import PlacementKind, SoftwareStack

# (catalogue id, vendor resource): one part per device plugin entry, plus a part whose product
# label value no source gives (MI325X) and one whose NVLink domain spans nodes (GB200)
PARTS = (
    ("H100-SXM5-80GB", "nvidia.com/gpu"),
    ("GB200", "nvidia.com/gpu"),
    ("MI300X", "amd.com/gpu"),
    ("MI325X", "amd.com/gpu"),
    ("Gaudi3", "habana.ai/gaudi"),
    ("Max-1550", "gpu.intel.com/i915"),
    ("Arc-Pro-B60", "gpu.intel.com/xe"),
)
STACK = SoftwareStack(
    driver="550.54.15", cuda="12.4", framework="pytorch", framework_version="2.3.1"
)
PLACEHOLDER = re.compile(r"REPLACE_[A-Z0-9_]+")


@dataclass(frozen=True)
class Case:
    part: str
    resource: str
    target: SnippetTarget
    nodes: int
    per_node: int
    training: bool
    placement: PlacementKind

    @property
    def label(self) -> str:
        kind = "train" if self.training else "serve"
        return f"{self.target}/{self.part}/{self.nodes}x{self.per_node}/{kind}/{self.placement}"


def cases() -> Iterator[Case]:
    for target in SnippetTarget:
        for part, resource in PARTS:
            for nodes, training in ((1, False), (1, True), (2, False), (4, True)):
                for placement in (PlacementKind.BARE_METAL, PlacementKind.PASSTHROUGH):
                    yield Case(part, resource, target, nodes, 8, training, placement)


def build(case: Case, rank: int = 1) -> tuple[dict[str, Any] | None, str | None]:
    driver = "550.54.15" if case.resource == "nvidia.com/gpu" else None
    pod = placement_snippet(
        workload_name=snippet_name("llama2-70b-99", rank, case.label),
        stack=STACK,
        accelerator=case.part,
        count=case.per_node,
        placement=case.placement,
        image="registry.example/serving:1.0",
        min_driver=driver,
    )
    return target_snippet(
        pod,
        target=case.target,
        accelerator=case.part,
        nodes=case.nodes,
        per_node=case.per_node,
        training=case.training,
        placement=case.placement,
        min_driver=driver,
        framework=STACK.framework,
    )


def objects(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects a snippet applies (a v1 List's items)."""
    return list(manifest["items"]) if manifest["kind"] == "List" else [manifest]
