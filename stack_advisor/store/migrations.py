"""Versioned migrations, applied in order and idempotently by ``Store.ensure_schema``.

Version 1 is the generated schema itself (``schema.ddl``). A later version lists the Cypher
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

from stack_advisor.schema.graph import (
    LEGACY_OBSERVATION_PROPERTIES,
    LEGACY_OBSERVATION_RELATIONSHIPS,
    SCHEMA_VERSION,
)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...] = ()
    data: Callable[[Any], dict[str, int]] | None = None  # called with the store


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial schema: stacks, components, accelerators, hosts, placements, "
        "benchmarks, runs, observations, failures",
    ),
    Migration(2, "node inventory: ClusterNode (advisor nodes sync); new table and constraint only"),
    Migration(3, "drop the Observation range indexes (Neo4j); no data changes"),
    Migration(
        4,
        "names through the catalogue: accelerators, frameworks and cuDNN versions of "
        "stored observations re-resolved (raw name kept in the provenance), stack labels "
        "rebuilt",
        data=lambda store: {**move_to_contexts(store), **reresolve_names(store)},
    ),
    Migration(
        5,
        "observation contexts: what the rows of one run on one node share (stack, "
        "accelerator, placement, host, run, source) moves from every observation and its "
        "five relationships to one Context node (faster ingest, no query loses)",
        data=lambda store: move_to_contexts(store),
    ),
    Migration(
        6,
        "generation stamps: each observation and context records the data generation of "
        "the batch that wrote it, so caches add what changed instead of rereading "
        "everything; the new column only (embedded engine), existing nodes stay unstamped "
        "(older than any cache built after the migration)",
    ),
    Migration(
        7,
        "one name per benchmark and one key per published result: benchmark names through "
        "the catalogue within their family (MLPerf Training's llama2_70b_lora, rgat for "
        "gnn, retinanet for ssd; the name as written kept in the provenance), and a "
        "published result keyed by where it was published (source, round, division, "
        "submitter, system, benchmark, metric), not by how much of its stack the file "
        "described, so a round imported from its summary table and from its results tree "
        "is stored once",
        data=lambda store: reresolve_names(store),
    ),
    Migration(
        8,
        "placement inside the host: NumaNode and DeviceAttachment nodes (a host's NUMA "
        "nodes, and each GPU's and NIC's PCI address, NUMA node, local CPUs and links) "
        "with HAS_NUMA_NODE, HAS_DEVICE and ATTACHED_TO, and the Host.topology_json "
        "column; new "
        "tables, constraints and the column only: hosts written before stay without a "
        "topology until a collector sends one",
    ),
    Migration(
        9,
        "submissions: each published observation links to a Submission node (round, "
        "division, submitter, system of one suite) made from its provenance details, "
        "which keep them as before",
        data=lambda store: link_submissions(store),
    ),
)

assert MIGRATIONS[-1].version == SCHEMA_VERSION, "add a migration when SCHEMA_VERSION changes"


def pending(current: int | None) -> list[Migration]:
    """Migrations newer than ``current`` (None: an empty store)."""
    return [m for m in MIGRATIONS if current is None or m.version > current]


# ---- v4: re-resolve stored names through the catalogue ---------------------------------------

_DELETE_OBSERVATIONS = "MATCH (o:Observation) WHERE o.key IN $keys DETACH DELETE o"
_DELETE_ORPHAN_CONTEXTS = (
    "MATCH (c:Context) OPTIONAL MATCH (c)<-[m:MEASURED_IN]-() WITH c, count(m) AS n WHERE n = 0 "
    "DETACH DELETE c"
)
_ACCELERATOR_EDGES = "MATCH (a:Accelerator {model: $model})<-[r]-() RETURN count(r) AS c"
_DELETE_ACCELERATOR = "MATCH (a:Accelerator {model: $model}) DETACH DELETE a"
_STACK_LABELS = (
    "MATCH (s:Stack) RETURN s.stack_id AS stack_id, s.label AS label, s.framework AS framework, "
    "s.framework_version AS framework_version, s.cuda AS cuda, s.cudnn AS cudnn, "
    "s.tensorrt AS tensorrt, s.driver AS driver"
)
_SET_STACK_LABEL = "MATCH (s:Stack {stack_id: $stack_id}) SET s.label = $label"


def reresolve_names(store: Any, batch_size: int = 2000) -> dict[str, int]:
    """Rewrite stored observations whose names the catalogue now spells otherwise, or whose key
    the code now derives otherwise (v7: published results).

    Each changed observation is written anew (its key follows its names) before the old one is
    deleted, so nothing is lost if this stops half way; Accelerator nodes left without edges are
    removed. No re-import is needed.
    """
    from stack_advisor.catalog.canonical import canonical_observation
    from stack_advisor.schema.models import IngestBatch, Observation

    memo: dict[int, Any] = {}
    changed: list[Observation] = []
    old_keys: list[str] = []
    raw_models: set[str] = set()
    for stored in store.iter_observations():
        obs = Observation.model_validate(stored.model_dump(exclude={"key", "generation"}))
        canon = canonical_observation(obs, memo)
        if canon is obs and obs.observation_key == stored.key:
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
    if stale:
        store._write(lambda run: run(_DELETE_ORPHAN_CONTEXTS, {}))
    removed = _remove_renamed_accelerators(store, raw_models)
    labels = _relabel_stacks(store)
    return {
        "observations_rewritten": len(changed),
        "accelerators_removed": removed,
        "stack_labels": labels,
    }


def _remove_renamed_accelerators(store: Any, raw_models: set[str]) -> int:
    """Delete the Accelerator nodes under names the catalogue now spells otherwise that no edge
    reaches any more; how many."""
    from stack_advisor.catalog.resolve import resolve_accelerator

    models = raw_models | {
        r["model"]
        for r in store.list_entities("accelerators")
        if resolve_accelerator(r["model"]).key != r["model"]
    }
    removed = 0
    for model in sorted(models):
        if resolve_accelerator(model).key == model:
            continue
        if int(store._read(_ACCELERATOR_EDGES, {"model": model})[0]["c"]) == 0:
            store._write(lambda run, m=model: run(_DELETE_ACCELERATOR, {"model": m}))
            removed += 1
    return removed


def _relabel_stacks(store: Any) -> int:
    """Rewrite the stored stack labels the code now writes otherwise; how many."""
    from stack_advisor.schema.models import SoftwareStack

    labels = 0
    for row in store._read(_STACK_LABELS, {}):
        fields = {
            k: row[k]
            for k in ("framework", "framework_version", "cuda", "cudnn", "tensorrt", "driver")
        }
        label = SoftwareStack(**fields).label()
        if label != row["label"]:
            params = {"stack_id": row["stack_id"], "label": label}
            store._write(lambda run, p=params: run(_SET_STACK_LABEL, p))
            labels += 1
    return labels


# ---- v5: observation contexts ------------------------------------------------------------------

_LEGACY_PAGE = (
    "MATCH (o:Observation) WHERE o.key > $after AND o.stack_id IS NOT NULL "
    "RETURN o.key AS key, "
    + ", ".join(f"o.{p} AS {p}" for p in LEGACY_OBSERVATION_PROPERTIES)
    + " ORDER BY o.key LIMIT $n"
)
_LINK_CONTEXT = (
    "UNWIND $rows AS r MATCH (o:Observation {key: r.key}), (c:Context {context_id: r.context_id}) "
    "CREATE (o)-[:MEASURED_IN]->(c)"
)
_DROP_LEGACY_EDGES = {
    rel: f"UNWIND $keys AS k MATCH (o:Observation {{key: k}})-[r:{rel}]->() DELETE r"
    for rel in LEGACY_OBSERVATION_RELATIONSHIPS
}
_DROP_LEGACY_PROPERTIES = "UNWIND $keys AS k MATCH (o:Observation {key: k}) SET " + ", ".join(
    f"o.{p} = NULL" for p in LEGACY_OBSERVATION_PROPERTIES
)


def move_to_contexts(store: Any, page: int = 5000) -> dict[str, int]:
    """Give every observation written before schema v5 its Context (created with its edges when
    new), then drop the observation's own copies and its five edges to the neighbours.

    One transaction per page of observations, in key order; a page is done when its
    observations' legacy properties are gone, so an interrupted run is finished by running it
    again. A store written by v5 code has nothing to move (and, embedded, not even the legacy
    columns: the probe's error means the same).
    """
    from stack_advisor.schema.errors import InvalidInput
    from stack_advisor.store import queries as Q
    from stack_advisor.store.batch_rows import create_rows

    moved = contexts_new = 0
    after = ""
    while True:
        try:
            rows = store._read(_LEGACY_PAGE, {"after": after, "n": page})
        except InvalidInput:  # the embedded engine: no such column, a store created at v5
            break
        if not rows:
            break
        contexts, links = _page_contexts(rows)
        keys = [r["key"] for r in rows]

        def work(
            run: Any,
            contexts: dict[str, dict[str, Any]] = contexts,
            links: list[dict[str, Any]] = links,
            keys: list[str] = keys,
        ) -> int:
            old = {x["key"] for x in run(Q.EXISTING_KEYS["Context"], {"keys": list(contexts)})}
            fresh = [c for cid, c in contexts.items() if cid not in old]
            create_rows(run, "Context", fresh, Q.CONTEXT_LINKS)
            run(_LINK_CONTEXT, {"rows": links})
            for query in _DROP_LEGACY_EDGES.values():
                run(query, {"keys": keys})
            run(_DROP_LEGACY_PROPERTIES, {"keys": keys})
            return len(fresh)

        contexts_new += store._write(work)
        moved += len(rows)
        after = keys[-1]
    return {"observations_moved_to_contexts": moved, "contexts_created": contexts_new}


def _page_contexts(
    rows: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """A page's Contexts (by id, from the observations' legacy properties) and the observation →
    context links."""
    from stack_advisor.store.batch_rows import context_id_of

    contexts: dict[str, dict[str, Any]] = {}
    links = []
    for r in rows:
        ctx = {p: r[p] for p in LEGACY_OBSERVATION_PROPERTIES if p != "benchmark_id"}
        cid = context_id_of(
            ctx["stack_id"],
            ctx["accelerator"],
            ctx["accelerator_count"],
            ctx["placement_id"],
            ctx["host"],
            ctx["run_id"],
            ctx["source_kind"],
            ctx["source"],
            ctx["placement_evidence_json"],
            ctx["placement_consistent"],
        )
        contexts.setdefault(cid, {"context_id": cid, **ctx})
        links.append({"key": r["key"], "context_id": cid})
    return contexts, links


# ---- v8: submissions ---------------------------------------------------------------------------

# A page of observations in key order (the key's index), with what names their submission and
# whether they link to one already: an interrupted migration is finished by running it again.
_SUBMISSION_PAGE = (
    "MATCH (o:Observation) WHERE o.key > $after WITH o ORDER BY o.key LIMIT $n "
    "MATCH (o)-[:MEASURED_IN]->(c:Context) OPTIONAL MATCH (o)-[r:IN_SUBMISSION]->(:Submission) "
    "RETURN o.key AS key, o.provenance_json AS provenance, c.source AS source, "
    "count(r) AS linked ORDER BY key"
)
_LINK_SUBMISSION = (
    "UNWIND $rows AS r MATCH (o:Observation {key: r.key}), "
    "(s:Submission {submission_id: r.submission_id}) CREATE (o)-[:IN_SUBMISSION]->(s)"
)


def link_submissions(store: Any, page: int = 5000) -> dict[str, int]:
    """Link every published observation written before schema v8 to its Submission (created
    when new), from the round, division, submitter and system id in its provenance details.

    One transaction per page of observations in key order; observations already linked are
    left alone, so running it again links nothing twice.
    """
    from stack_advisor.schema.models import Submission
    from stack_advisor.store import queries as Q
    from stack_advisor.store.flat_read import loads

    linked = created = 0
    after = ""
    while True:
        rows = store._read(_SUBMISSION_PAGE, {"after": after, "n": page})
        if not rows:
            break
        after = rows[-1]["key"]
        submissions: dict[str, dict[str, Any]] = {}
        links = []
        for r in rows:
            if int(r["linked"]) or not r["provenance"]:
                continue
            found = Submission.from_details(r["source"], loads(r["provenance"], {}))
            if found is None:
                continue
            sid = found.submission_id
            submissions.setdefault(sid, {"submission_id": sid, **found.model_dump()})
            links.append({"key": r["key"], "submission_id": sid})
        if not links:
            continue

        def work(
            run: Any,
            submissions: dict[str, dict[str, Any]] = submissions,
            links: list[dict[str, str]] = links,
        ) -> int:
            found = run(Q.EXISTING_KEYS["Submission"], {"keys": list(submissions)})
            old = {x["key"] for x in found}
            fresh = [row for sid, row in submissions.items() if sid not in old]
            if fresh:
                run(Q.create_nodes("Submission", frozenset(fresh[0])), {"rows": fresh})
            run(_LINK_SUBMISSION, {"rows": links})
            return len(fresh)

        created += store._write(work)
        linked += len(links)
    return {"observations_linked_to_submissions": linked, "submissions_created": created}
