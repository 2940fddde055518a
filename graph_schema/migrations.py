"""Versioned migrations, applied in order and idempotently by ``Store.ensure_schema``.

Version 1 is the generated schema itself (``graph_schema.ddl``). A later version lists the Cypher
statements (in the subset both engines run) that move data from the previous version; the
generated DDL (``IF NOT EXISTS``) is re-applied first on every migrate, so new tables, constraints
and indexes need no statements of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph_schema.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...] = ()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema: stacks, components, accelerators, hosts, placements, "
                 "benchmarks, runs, observations, failures"),
    Migration(2, "node inventory: ClusterNode (advisor nodes sync); new table and constraint only"),
    Migration(3, "drop the Observation range indexes (Neo4j); no data changes"),
)

assert MIGRATIONS[-1].version == SCHEMA_VERSION, "add a migration when SCHEMA_VERSION changes"


def pending(current: int | None) -> list[Migration]:
    """Migrations newer than ``current`` (None: an empty store)."""
    return [m for m in MIGRATIONS if current is None or m.version > current]
