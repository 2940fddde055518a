"""What both graph backends share: models → rows, rows → models, and every operation written once
over two primitives a backend provides (a read, and a write transaction)."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from stack_advisor.schema.errors import SchemaMismatch, StoreUnavailable
from stack_advisor.schema.graph import NODES, SCHEMA_VERSION
from stack_advisor.schema.models import (
    INT64_MAX,
    EntityKind,
    IngestBatch,
    IngestResult,
    ObservationFilter,
    StoredObservation,
    StoreStats,
)
from stack_advisor.schema.topology import HostTopology
from stack_advisor.store import queries as Q
from stack_advisor.store.base import FlatObservations, FlatRow, Store, checked_batch
from stack_advisor.store.batch_rows import (
    DIMENSIONS,
    MUTABLE,
    BatchRows,
    Run,
    chunks,
    compact_json,
    create_rows,
    iso_utc,
    shape_rows,
)
from stack_advisor.store.flat_read import RowReader, assemble, loads, stack_fields
from stack_advisor.store.migrations import pending
from stack_advisor.store.topology_store import read_host_topology, write_topologies

T = TypeVar("T")

CLEAR_SLICE = 50_000
# The flat read's keyset pages (``CypherStore._flat_rows``): at 50k rows a page is a few seconds
# of Neo4j's time, far fewer round trips than the paged read's 5k.
FLAT_PAGE = 50_000

ENTITY_LABEL = {
    EntityKind.STACKS: "Stack",
    EntityKind.ACCELERATORS: "Accelerator",
    EntityKind.PLACEMENTS: "Placement",
    EntityKind.BENCHMARKS: "Benchmark",
    EntityKind.HOSTS: "Host",
    EntityKind.RUNS: "Run",
    EntityKind.FAILURES: "Failure",
    EntityKind.SUBMISSIONS: "Submission",
}


class CypherStore(Store):
    """A store over a Cypher engine. Backends implement ``_read``, ``_write`` and ``_apply_ddl``."""

    flat_page = FLAT_PAGE  # rows per page of the flat read's keyset scan (tests set it small)
    # Observations link to their neighbours found once per chunk (``create_rows``): Neo4j. The
    # embedded engine cannot CREATE a relationship to a list element ("Cannot bind x0 as node
    # pattern"), so it finds them per row.
    links_by_position = False

    @abstractmethod
    def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...

    @abstractmethod
    def _write(self, work: Callable[[Run], T]) -> T:
        """Run ``work(run)`` in one write transaction; commit on return, roll back on error."""

    @abstractmethod
    def _apply_ddl(self) -> None: ...

    # ---- schema --------------------------------------------------------------------------
    def _schema_version(self) -> int | None:
        try:
            rows = self._read(Q.READ_SCHEMA_INFO, {})
        except StoreUnavailable:
            raise  # an outage is not an empty store (readiness must say which)
        except Exception:
            return None
        return int(rows[0]["version"]) if rows else None

    def _ensure_schema(self) -> int:
        current = self._schema_version()
        if current is not None and current > SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the store at {self.uri} has schema version {current}, newer than this code's "
                f"{SCHEMA_VERSION}; upgrade stack-advisor before using it"
            )
        todo = pending(current)
        if not todo and current is not None:
            return current
        self._apply_ddl()
        now = iso_utc(datetime.now(UTC))
        # Data steps (code, several transactions) run after the statements and before the
        # version moves; an empty store has no data to move.
        data_steps = [m for m in todo if m.data is not None] if current is not None else []

        def work(run: Run) -> None:
            for migration in todo:
                for statement in migration.statements:
                    run(statement, {})
            if current is None:
                run(Q.CREATE_SCHEMA_INFO, {"version": SCHEMA_VERSION, "now": now})
            elif not data_steps:
                run(Q.SET_SCHEMA_VERSION, {"version": SCHEMA_VERSION, "now": now})

        self._write(work)
        if data_steps:
            report: dict[int, dict[str, int]] = {}
            for migration in data_steps:
                assert migration.data is not None
                report[migration.version] = migration.data(self)
            # what the data steps changed (advisor db migrate prints it)
            self.migration_report = report
            version = {"version": SCHEMA_VERSION, "now": now}
            self._write(lambda run: run(Q.SET_SCHEMA_VERSION, version))
        return SCHEMA_VERSION

    def check_schema(self) -> None:
        """Raise SchemaMismatch unless the store is at exactly this code's schema version."""
        version = self._schema_version()
        if version != SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the store at {self.uri} has schema version {version}, this code needs "
                f"{SCHEMA_VERSION}; run `advisor db migrate`"
            )

    # ---- writes --------------------------------------------------------------------------
    def _ingest(self, batch: IngestBatch) -> IngestResult:
        return self._write_rows(batch, BatchRows.from_batch(batch))

    def ingest_many(
        self, batches: Iterable[IngestBatch | dict[str, Any]]
    ) -> Iterator[IngestResult]:
        """Batch N+1 is validated, resolved and shaped into rows here while a worker thread
        writes batch N (the database's work and the wait for it; one write in flight, so the
        batches commit in order and each sees the ones before it)."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest") as pool:
            pending: Future[IngestResult] | None = None
            for batch in batches:
                try:
                    checked = checked_batch(batch)
                    rows = BatchRows.from_batch(checked)
                except BaseException:
                    if pending is not None:  # the batch before this one is written first
                        yield pending.result()
                    raise
                if pending is not None:
                    yield pending.result()
                pending = pool.submit(self._write_rows, checked, rows)
            if pending is not None:
                yield pending.result()

    def _write_rows(self, batch: IngestBatch, rows: BatchRows) -> IngestResult:
        """One transaction: the rows of ``batch`` not yet in the store, and its result."""

        def work(run: Run) -> IngestResult:
            # first: the rows carry the generation they make (see queries.UNBUMP_GENERATION)
            generation = int(run(Q.BUMP_GENERATION, {})[0]["generation"])
            old_obs = _existing(run, "Observation", list(rows.observations))
            old_fail = _existing(run, "Failure", list(rows.failures))
            new_obs = [r for k, r in rows.observations.items() if k not in old_obs]
            new_fail = [r for k, r in rows.failures.items() if k not in old_fail]
            for row in new_obs:
                row["generation"] = generation
            grown = {r["context_id"] for r in new_obs}  # contexts that get observations now
            dims_changed, new_stacks = _write_dimensions(run, rows, grown, generation)
            _link(
                run,
                "HAS_COMPONENT",
                [{"src": s, "dst": c} for s in new_stacks for c in rows.stack_components[s]],
            )
            if rows.topologies:
                write_topologies(run, rows.topologies)
            create_rows(
                run, "Observation", new_obs, Q.OBSERVATION_LINKS, by_position=self.links_by_position
            )
            create_rows(run, "Failure", new_fail, Q.FAILURE_LINKS)
            if not (new_obs or new_fail or dims_changed):
                run(Q.UNBUMP_GENERATION, {})
            return IngestResult(
                observations_received=len(batch.observations),
                observations_new=len(new_obs),
                failures_received=len(batch.failures),
                failures_new=len(new_fail),
            )

        return self._write(work)

    # ---- reads ---------------------------------------------------------------------------
    def _query_observations(
        self, flt: ObservationFilter, limit: int, offset: int, after: str | None
    ) -> list[StoredObservation]:
        bounds = ("since_generation", "until_generation")
        params: dict[str, Any] = {
            name: ("" if value is None else getattr(value, "value", value))
            for name, value in flt.model_dump(exclude=set(bounds)).items()
        }
        params["after"] = after or ""
        keys_query, rows_query = Q.OBSERVATION_KEYS, Q.QUERY_OBSERVATIONS
        if flt.since_generation is not None:
            keys_query, rows_query = Q.OBSERVATION_KEYS_SINCE, Q.QUERY_OBSERVATIONS_SINCE
            params["since_generation"] = flt.since_generation
            params["until_generation"] = (
                INT64_MAX if flt.until_generation is None else flt.until_generation
            )
        if offset:
            # the offset becomes a key: no SKIP reaches the engine (see queries.OBSERVATION_KEYS)
            keys = self._read(keys_query, {**params, "limit": offset})
            if len(keys) < offset:
                return []
            params["after"] = keys[-1]["key"]
        params["limit"] = limit
        if flt == ObservationFilter() and not offset:
            page = {"after": params["after"], "limit": limit}
            return self._with_hosts(self._read(Q.QUERY_OBSERVATIONS_PAGE, page))
        return self._with_hosts(self._read(rows_query, params))

    def _flat_observations(self, progress: Callable[[int], None]) -> FlatObservations:
        # the observations first: the contexts, stacks and benchmarks they name exist after them
        rows = self._flat_rows(RowReader(), progress)
        return assemble(self._read, rows)

    def _flat_rows(self, reader: RowReader, progress: Callable[[int], None]) -> list[FlatRow]:
        """Every observation, read by ``reader``, in key order: keyset pages of ``flat_page``
        rows (ORDER BY the key, WHERE the key > the last one), each bounded in time by
        ``_read_values``. A backend may scan otherwise."""
        out: list[FlatRow] = []
        after = ""
        while True:
            page = self._read_values(
                Q.FLAT_OBSERVATIONS_PAGE, {"after": after, "limit": self.flat_page}
            )
            for values in page:
                row = reader(values)
                if row is not None:
                    out.append(row)
            progress(len(out))
            if len(page) < self.flat_page:
                return out
            after = page[-1][0]

    def _read_values(self, query: str, params: dict[str, Any]) -> list[Sequence[Any]]:
        """A read's rows as value sequences in the order the query returns them; a backend may
        give it more time than other reads (a page of the flat read)."""
        return [tuple(r.values()) for r in self._read(query, params)]

    def _host_topology(self, host: str) -> HostTopology | None:
        return read_host_topology(self._read, host)

    def _observation_values(self, keys: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        for part in chunks(keys):
            out.update(
                (r["key"], float(r["value"]))
                for r in self._read(Q.OBSERVATION_VALUES, {"keys": part})
            )
        return out

    def _revise_observations(self, batch: IngestBatch) -> int:
        """One transaction: each observation whose stored figure differs set in place
        (``queries.revise_observations``); where any was, the generation bumped (first, as an
        ingest's: the write lock on SchemaInfo orders writers) and the revision marked (the
        cache identity moves on); else the bump taken back."""
        rows = list(BatchRows.from_batch(batch).observations.values())
        now = iso_utc(datetime.now(UTC))

        def work(run: Run) -> int:
            run(Q.BUMP_GENERATION, {})
            found = 0
            for part in chunks(rows):
                present, shaped = shape_rows("Observation", part)
                found += len(run(Q.revise_observations(present), {"rows": shaped}))
            if found:
                run(Q.MARK_REVISED, {"now": now})
            else:
                run(Q.UNBUMP_GENERATION, {})
            return found

        return self._write(work)

    def _get_observation(self, key: str) -> StoredObservation | None:
        found = self._with_hosts(self._read(Q.OBSERVATION_BY_KEY, {"key": key}))
        return found[0] if found else None

    def _with_hosts(self, rows: list[dict[str, Any]]) -> list[StoredObservation]:
        host_names = sorted({r["host"] for r in rows if r["host"]})
        hosts = {}
        if host_names:
            hosts = {h["name"]: h for h in self._read(Q.HOSTS_BY_NAME, {"keys": host_names})}
        return [_observation_from_row(r, hosts.get(r["host"])) for r in rows]

    def _list_entities(self, kind: EntityKind) -> list[dict[str, Any]]:
        return self._read(Q.LIST_NODES[ENTITY_LABEL[kind]], {})

    def _stats(self) -> StoreStats:
        info = self._read(Q.READ_SCHEMA_INFO, {})
        counts = {n.label: int(self._read(Q.COUNT_NODES[n.label], {})[0]["c"]) for n in NODES}
        counts.pop("SchemaInfo", None)
        by_source = {r["source"]: int(r["c"]) for r in self._read(Q.OBSERVATIONS_BY_SOURCE, {})}
        return StoreStats(
            schema_version=int(info[0]["version"]) if info else None,
            counts=counts,
            observations_by_source=by_source,
            generation=int(info[0]["generation"]) if info else 0,
        )

    # ---- node inventory ------------------------------------------------------------------
    def _sync_inventory(self, cluster: str, nodes: list[dict[str, Any]]) -> int:
        now = iso_utc(datetime.now(UTC))
        rows = []
        for node in nodes:
            acc = node.get("accelerator") or {}
            placement = node.get("placement") or {}
            rows.append(
                {
                    "node_key": f"{cluster}/{node['name']}",
                    "cluster": cluster,
                    "name": node["name"],
                    "pool": node.get("pool"),
                    "accelerator": acc.get("model"),
                    "placement_kind": placement.get("kind"),
                    "driver": node.get("driver"),
                    "node_json": compact_json(node),
                    "synced_at": now,
                }
            )

        def work(run: Run) -> int:
            run(Q.DELETE_CLUSTER_NODES, {"cluster": cluster})
            for part in chunks(rows):
                present, shaped = shape_rows("ClusterNode", part)
                run(Q.create_nodes("ClusterNode", present), {"rows": shaped})
            run(Q.BUMP_GENERATION, {})
            return len(rows)

        return self._write(work)

    def _list_inventory(self, cluster: str | None) -> list[dict[str, Any]]:
        rows = self._read(Q.LIST_CLUSTER_NODES, {"cluster": cluster or ""})
        return [json.loads(r["node_json"]) for r in rows]

    def _accelerator_usage(self) -> dict[str, dict[str, int]]:
        """Stored accelerator name → {raw name as published: observations}."""
        out: dict[str, dict[str, int]] = {}
        for r in self._read(Q.ACCELERATOR_USAGE, {}):
            raw = loads(r["provenance"], {}).get("accelerator_raw") or r["model"]
            seen = out.setdefault(r["model"], {})
            seen[raw] = seen.get(raw, 0) + 1
        return out

    def generation(self) -> int:
        """One read of the schema node, not the counts ``stats`` makes."""
        info = self._read(Q.READ_SCHEMA_INFO, {})
        return int(info[0]["generation"]) if info else 0

    def store_identity(self) -> str | None:
        """The URI and when the schema was created or last migrated (a store emptied by
        ``clear`` and set up again gets a new one); None before the schema exists."""
        return self._identities()[0]

    def cache_identity(self) -> str | None:
        """``store_identity``, and when a figure was last revised (``revise_observations``):
        a cache of the data must read them again after either."""
        return self._identities()[1]

    def _identities(self) -> tuple[str | None, str | None]:
        """(``store_identity``, ``cache_identity``) from one read of the schema nodes."""
        info = self._read(Q.READ_STORE_IDENTITY, {})
        if not info or info[0]["applied_at"] is None:
            return None, None
        identity = f"{self.uri}|schema {info[0]['version']}|{info[0]['applied_at']}"
        revised = info[0]["revised"]
        return identity, identity + (f"|revised {revised}" if revised is not None else "")

    def _clear(self) -> None:
        """Deletes relationships, then nodes, ``CLEAR_SLICE`` at a time, one transaction each, so
        a large graph does not exceed the server's transaction memory; interrupted, it leaves a
        smaller graph.
        """

        def some(query: str) -> Callable[[Run], list[dict[str, Any]]]:
            return lambda run: run(query, {"n": CLEAR_SLICE})

        for query in (Q.DELETE_SOME_RELATIONSHIPS, Q.DELETE_SOME):
            while self._write(some(query))[0]["c"]:
                pass


def _existing(run: Run, label: str, keys: list[str]) -> set[str]:
    """Those of ``keys`` already stored as ``label`` nodes."""
    found: set[str] = set()
    for part in chunks(keys):
        found.update(r["key"] for r in run(Q.EXISTING_KEYS[label], {"keys": part}))
    return found


def _create(run: Run, label: str, items: list[dict[str, Any]]) -> None:
    for part in chunks(items):
        present, shaped = shape_rows(label, part)
        run(Q.create_nodes(label, present), {"rows": shaped})


def _link(run: Run, rel: str, pairs: list[dict[str, str]]) -> None:
    for part in chunks(pairs):
        run(Q.LINK[rel], {"rows": part})


def _write_dimensions(
    run: Run, rows: BatchRows, grown: set[str], generation: int
) -> tuple[bool, list[str]]:
    """Create the dimension nodes (stacks, accelerators, contexts, ...) not yet stored, stamp the
    contexts that get observations now with ``generation`` and refresh the mutable ones; whether
    any node was created, and the ids of the new stacks."""
    changed = False
    new_stacks: list[str] = []
    for label in DIMENSIONS:
        items = rows.nodes[label]
        if not items:
            continue
        old = _existing(run, label, list(items))
        fresh = [r for k, r in items.items() if k not in old]
        if label == "Context":
            for row in fresh:
                row["generation"] = generation
            stamp = sorted(grown & old)
            for part in chunks(stamp):
                run(Q.STAMP_CONTEXTS, {"keys": part, "generation": generation})
        if fresh and label in Q.LINKS:
            create_rows(run, label, fresh, Q.LINKS[label])
            changed = True
        elif fresh:
            _create(run, label, fresh)
            changed = True
            if label == "Stack":
                new_stacks = [r["stack_id"] for r in fresh]
        if label in MUTABLE:
            stale = [r for k, r in items.items() if k in old]
            for part in chunks(stale):
                present, shaped = shape_rows(label, part)
                run(Q.refresh_nodes(label, present), {"rows": shaped})
    return changed, new_stacks


def _observation_from_row(r: dict[str, Any], host: dict[str, Any] | None) -> StoredObservation:
    details = loads(r["provenance_json"], {})
    return StoredObservation.model_validate(
        {
            "key": r["key"],
            "benchmark": {
                "family": r["b_family"],
                "name": r["b_name"],
                "parameters": loads(r["b_parameters_json"], {}),
            },
            "metric": r["metric"],
            "value": r["value"],
            "unit": r["unit"],
            "higher_is_better": r["higher_is_better"] is not False,  # unset: the default
            "samples": r["samples"],
            "p10": r["p10"],
            "p90": r["p90"],
            "stddev": r["stddev"],
            "cv": r["cv"],
            "valid": r["valid"] is not False,
            "note": r["note"],
            "timestamp": r["timestamp"],
            "stack": stack_fields(r, "s_"),
            "accelerator": {
                "model": r["accelerator"],
                "vendor": r["a_vendor"],
                "count": r["accelerator_count"],
                "memory_mib": r["a_memory_mib"],
                "compute_capability": r["a_compute_capability"],
            },
            "placement": {
                "kind": r["placement_kind"],
                "hypervisor": r["p_hypervisor"],
                "vgpu_profile": r["p_vgpu_profile"],
                "evidence": loads(r["placement_evidence_json"], []),
                "consistent": r["placement_consistent"],
            },
            "host": None if host is None else _host_fields(host),
            "run_id": r["run_id"],
            "provenance": {
                "kind": r["source_kind"],
                "source": r["source"],
                "url": r["source_url"],
                "details": details,
            },
            "source_key": r["source_key"],
            "generation": r["generation"],
        }
    )


def _host_fields(host: dict[str, Any]) -> dict[str, Any]:
    """A stored Host node's row as the model's fields."""
    return {
        "name": host["name"],
        "cpu_model": host["cpu_model"],
        "cores": host["cores"],
        "cpu_flags": loads(host["cpu_flags_json"], []),
        "numa_nodes": host["numa_nodes"],
        "memory_mib": host["memory_mib"],
        "os": host["os"],
        "kernel": host["kernel"],
        "labels": loads(host["labels_json"], {}),
    }
