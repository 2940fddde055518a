"""The software class of a framework: whether results run on it come from a reference
implementation or an optimised runtime (``frameworks.yaml``'s ``software_class``, with its
source), looked up through the one framework resolver."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from graph_schema.catalog.resolve import load_catalog, resolve_framework_name


@dataclass(frozen=True)
class SoftwareClass:
    """A framework's class and where the catalogue has it from."""

    framework: str  # the canonical framework id
    software_class: str  # "reference" or "optimised" (``entries.SOFTWARE_CLASSES``)
    source: str

    def describe(self) -> str:
        return f"{self.framework} ({self.software_class}; {self.source})"


@lru_cache(maxsize=1024)
def software_class(framework: str | None) -> SoftwareClass | None:
    """The class of the framework ``framework`` names (an id, alias or published spelling);
    None when the name is unresolved or the catalogue gives the framework no class (a framework
    used both ways, or a component)."""
    if not framework or not framework.strip():
        return None
    match = resolve_framework_name(framework.strip())
    if not match.resolved:
        return None
    entry = load_catalog().frameworks.get(match.id)
    if entry is None or entry.software_class is None or entry.class_source is None:
        return None
    return SoftwareClass(entry.id, entry.software_class, entry.class_source)
