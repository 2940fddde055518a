"""Stored accelerators described through the catalogue: what each is, how many observations it
has and under which published names they arrived (``GET /v1/accelerators``, ``advisor db
stats``)."""

from __future__ import annotations

from typing import Any

from stack_advisor.catalog.resolve import resolve_accelerator


def describe_accelerators(
    items: list[dict[str, Any]], usage: dict[str, dict[str, int]]
) -> list[dict[str, Any]]:
    """Each stored Accelerator node plus ``resolved``, ``kind`` (accelerator, cpu, mixed),
    catalogue fields, ``observations`` and ``aliases_seen`` (raw name → observations); most
    observed first."""
    out = []
    for item in items:
        model = item.get("model") or ""
        match = resolve_accelerator(model)
        seen = usage.get(model, {})
        entry = match.entry
        out.append(
            {
                **item,
                "resolved": match.resolved,
                "kind": match.kind,
                "name": entry.name if entry else None,
                "family": entry.family if entry else None,
                "generation": entry.generation if entry else None,
                "observations": sum(seen.values()),
                "aliases_seen": dict(sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))),
            }
        )
    return sorted(out, key=lambda d: (-d["observations"], d.get("model") or ""))
