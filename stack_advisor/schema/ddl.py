"""DDL for both engines, generated from the one schema in ``stack_advisor.schema.graph``."""

from __future__ import annotations

from stack_advisor.schema.graph import (
    ADDED_COLUMNS,
    NODE_BY_LABEL,
    NODES,
    RELATIONSHIPS,
    RETIRED_NEO4J_INDEXES,
)


def ladybug_statements() -> list[str]:
    """CREATE NODE/REL TABLE statements for the embedded engine (idempotent)."""
    out = []
    for node in NODES:
        cols = ", ".join(f"{name} {ptype.value}" for name, ptype in node.properties.items())
        out.append(f"CREATE NODE TABLE IF NOT EXISTS {node.label}({cols}, PRIMARY KEY({node.key}))")
    for rel in RELATIONSHIPS:
        cols = "".join(f", {name} {ptype.value}" for name, ptype in rel.properties.items())
        out.append(
            f"CREATE REL TABLE IF NOT EXISTS {rel.type}(FROM {rel.source} TO {rel.target}{cols})"
        )
    for label, column in ADDED_COLUMNS:  # tables created by an earlier schema version
        out.append(
            f"ALTER TABLE {label} ADD IF NOT EXISTS {column} "
            f"{NODE_BY_LABEL[label].properties[column].value}"
        )
    return out


def neo4j_statements() -> list[str]:
    """Uniqueness constraints on keys and range indexes on filtered properties (idempotent)."""
    out = []
    for node in NODES:
        low = node.label.lower()
        out.append(
            f"CREATE CONSTRAINT {low}_{node.key}_unique IF NOT EXISTS "
            f"FOR (n:{node.label}) REQUIRE n.{node.key} IS UNIQUE"
        )
        for prop in node.indexed:
            out.append(
                f"CREATE INDEX {low}_{prop} IF NOT EXISTS FOR (n:{node.label}) ON (n.{prop})"
            )
    out.extend(f"DROP INDEX {name} IF EXISTS" for name in RETIRED_NEO4J_INDEXES)
    return out
