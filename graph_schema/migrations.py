"""Versioned migrations, applied in order and idempotently by ``Store.ensure_schema``.

Version 1 is the generated schema itself (``graph_schema.ddl``). A later version lists the Cypher
statements (in the subset both engines run) that move data from the previous version; the
generated DDL (``IF NOT EXISTS``) is re-applied first on every migrate, so new tables, constraints
and indexes need no statements of their own. A migration whose change needs code (``data``: the
catalogue re-resolving names) runs it after the statements and before the version is bumped;
it is idempotent, so an interrupted migrate is finished by running it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graph_schema.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...] = ()
    data: Callable[[Any], dict[str, int]] | None = None  # called with the store


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema: stacks, components, accelerators, hosts, placements, "
                 "benchmarks, runs, observations, failures"),
    Migration(2, "node inventory: ClusterNode (advisor nodes sync); new table and constraint only"),
    Migration(3, "drop the Observation range indexes (Neo4j); no data changes"),
    Migration(4, "names through the catalogue: accelerators, frameworks and cuDNN versions of stored "
                 "observations re-resolved (raw name kept in the provenance), stack labels rebuilt",
              data=lambda store: reresolve_names(store)),
)

assert MIGRATIONS[-1].version == SCHEMA_VERSION, "add a migration when SCHEMA_VERSION changes"


def pending(current: int | None) -> list[Migration]:
    """Migrations newer than ``current`` (None: an empty store)."""
    return [m for m in MIGRATIONS if current is None or m.version > current]


# ---- v4: re-resolve stored names through the catalogue ---------------------------------------

_DELETE_OBSERVATIONS = "MATCH (o:Observation) WHERE o.key IN $keys DETACH DELETE o"
_ACCELERATOR_EDGES = "MATCH (a:Accelerator {model: $model})<-[r]-() RETURN count(r) AS c"
_DELETE_ACCELERATOR = "MATCH (a:Accelerator {model: $model}) DETACH DELETE a"
_STACK_LABELS = (
    "MATCH (s:Stack) RETURN s.stack_id AS stack_id, s.label AS label, s.framework AS framework, "
    "s.framework_version AS framework_version, s.cuda AS cuda, s.cudnn AS cudnn, "
    "s.tensorrt AS tensorrt, s.driver AS driver"
)
_SET_STACK_LABEL = "MATCH (s:Stack {stack_id: $stack_id}) SET s.label = $label"


def reresolve_names(store: Any, batch_size: int = 2000) -> dict[str, int]:
    """Rewrite stored observations whose names the catalogue now spells otherwise.

    Each changed observation is written anew (its key follows its names) before the old one is
    deleted, so nothing is lost if this stops half way; Accelerator nodes left without edges are
    removed. No re-import is needed.
    """
    from graph_schema.catalog.canonical import canonical_observation
    from graph_schema.catalog.resolve import resolve_accelerator
    from graph_schema.models import IngestBatch, Observation, SoftwareStack

    memo: dict[int, Any] = {}
    changed: list[Observation] = []
    old_keys: list[str] = []
    raw_models: set[str] = set()
    for stored in store.iter_observations():
        obs = Observation.model_validate(stored.model_dump(exclude={"key"}))
        canon = canonical_observation(obs, memo)
        if canon is obs:
            continue
        changed.append(canon)
        old_keys.append(stored.key)
        if canon.accelerator.model != obs.accelerator.model:
            raw_models.add(obs.accelerator.model)
    for start in range(0, len(changed), batch_size):
        store.ingest(IngestBatch(observations=changed[start : start + batch_size]))
    new_keys = {o.observation_key for o in changed}
    stale = [k for k in old_keys if k not in new_keys]
    for start in range(0, len(stale), batch_size):
        part = stale[start : start + batch_size]
        store._write(lambda run, keys=part: run(_DELETE_OBSERVATIONS, {"keys": keys}))
    models = raw_models | {r["model"] for r in store.list_entities("accelerators")
                           if resolve_accelerator(r["model"]).key != r["model"]}
    removed = 0
    for model in sorted(models):
        if resolve_accelerator(model).key == model:
            continue
        if int(store._read(_ACCELERATOR_EDGES, {"model": model})[0]["c"]) == 0:
            store._write(lambda run, m=model: run(_DELETE_ACCELERATOR, {"model": m}))
            removed += 1
    labels = 0
    for row in store._read(_STACK_LABELS, {}):
        fields = {k: row[k] for k in ("framework", "framework_version", "cuda", "cudnn", "tensorrt", "driver")}
        label = SoftwareStack(**fields).label()
        if label != row["label"]:
            store._write(lambda run, r=row, lb=label: run(_SET_STACK_LABEL, {"stack_id": r["stack_id"], "label": lb}))
            labels += 1
    return {"observations_rewritten": len(changed), "accelerators_removed": removed, "stack_labels": labels}
