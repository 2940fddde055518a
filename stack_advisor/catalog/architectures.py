"""The node architecture (``kubernetes.io/arch``) of a CPU-only system, from its published name
(``architectures.yaml``)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml

from stack_advisor.catalog.entries import ArchitectureEntry
from stack_advisor.schema.errors import InvalidInput


@lru_cache(maxsize=1)
def _architectures() -> tuple[str, tuple[tuple[str, re.Pattern[str]], ...]]:
    from stack_advisor.catalog.resolve import load_entries

    entries = load_entries("architectures.yaml", "architectures", ArchitectureEntry)
    text = (resources.files("stack_advisor.catalog") / "architectures.yaml").read_text(
        encoding="utf-8"
    )
    default = yaml.safe_load(text).get("default")
    if not isinstance(default, str) or not default:
        raise InvalidInput("catalogue file architectures.yaml: expected a 'default' architecture")
    return default, tuple((e.id, re.compile("|".join(e.patterns), re.IGNORECASE)) for e in entries)


def cpu_architecture(name: str) -> str:
    """``kubernetes.io/arch`` for a CPU's published name: 'arm64' for Neoverse, Graviton-like
    Arm parts, the default ('amd64') otherwise."""
    default, patterns = _architectures()
    return next((arch for arch, pattern in patterns if pattern.search(name)), default)
