"""A batch as the rows a graph store writes: models → rows per label, deduplicated, with their
links; and the statements that create rows with their edges. Shared by the transactional ingest
(``stack_advisor.store.cypher_store``), the bulk import's files and the migrations' data steps."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from stack_advisor.runtime.gc_pause import gc_paused
from stack_advisor.schema.graph import NODE_BY_LABEL
from stack_advisor.schema.models import IngestBatch, Observation, Submission
from stack_advisor.store import queries as Q
from stack_advisor.store.topology_store import host_json

Run = Callable[[str, dict[str, Any]], list[dict[str, Any]]]
"""run(query, parameters) -> rows as dicts; executes inside the current transaction."""

CHUNK = 5_000
# Content-keyed nodes never change; the others are refreshed with what a new batch knows.
MUTABLE = ("Accelerator", "Host", "Run")
# Dimension nodes, created before the observations and failures that link to them; a context
# links to the ones before it, so it comes last.
DIMENSIONS = (
    "Stack",
    "Component",
    "Accelerator",
    "Host",
    "Placement",
    "Benchmark",
    "Run",
    "Submission",
    "Context",
)


def iso_utc(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def context_id_of(*parts: Any) -> str:
    """A context's id: a digest of what it is (stack, accelerator and count, placement, host,
    run, source kind and name, placement evidence and consistency)."""
    return (
        "ctx-"
        + hashlib.sha256(
            "\x1f".join("" if p is None else str(p) for p in parts).encode()
        ).hexdigest()[:32]
    )


def chunks(rows: list[Any]) -> Iterable[list[Any]]:
    for i in range(0, len(rows), CHUNK):
        yield rows[i : i + CHUNK]


class BatchRows:
    """The rows one batch writes, deduplicated per label: what the transactional ingest
    (``CypherStore``) and the bulk import's files (``store.bulk_import``) both write."""

    def __init__(self) -> None:
        self._stack_ids: dict[Any, str] = {}
        self._bench_ids: dict[Any, str] = {}
        self.nodes: dict[str, dict[str, dict[str, Any]]] = {label: {} for label in DIMENSIONS}
        self.observations: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, dict[str, Any]] = {}
        self.links: dict[str, list[dict[str, str]]] = {}
        self.stack_components: dict[str, list[str]] = {}
        self.topologies: dict[str, Any] = {}  # host name -> HostTopology (schema v8)
        self._objects: dict[tuple[str, int], Any] = {}
        self._context_ids: dict[tuple[Any, ...], str] = {}

    def stack_id(self, stack: Any) -> str:
        """Memoised per batch: most rows of a batch share a few stacks."""
        memo = (
            stack.driver,
            stack.cuda,
            stack.cudnn,
            stack.nccl,
            stack.tensorrt,
            stack.framework,
            stack.framework_version,
            stack.python,
            tuple(sorted(stack.extra.items())),
            stack.image,
        )
        sid = self._stack_ids.get(memo)
        if sid is None:
            sid = self._stack_ids[memo] = stack.stack_id
        return sid

    def benchmark_id(self, bench: Any) -> str:
        memo = (bench.family, bench.name, repr(bench.parameters))
        bid = self._bench_ids.get(memo)
        if bid is None:
            bid = self._bench_ids[memo] = bench.benchmark_id
        return bid

    def _by_object(self, kind: str, obj: Any, build: Callable[[Any], Any]) -> Any:
        """``build(obj)`` once per object of the batch (rows of one batch share their stack,
        accelerator, placement, host and provenance objects; the batch keeps them alive, so
        their ids are stable for the batch's lifetime)."""
        key = (kind, id(obj))
        hit = self._objects.get(key)
        if hit is None:
            hit = self._objects[key] = build(obj)
        return hit

    @staticmethod
    def _stack_row(stack: Any, stack_id: str) -> dict[str, Any]:
        return {
            "stack_id": stack_id,
            "driver": stack.driver,
            "cuda": stack.cuda,
            "cudnn": stack.cudnn,
            "nccl": stack.nccl,
            "tensorrt": stack.tensorrt,
            "framework": stack.framework,
            "framework_version": stack.framework_version,
            "python": stack.python,
            "extra_json": compact_json(stack.extra),
            "image": stack.image,
            "raw": stack.raw,
            "label": stack.label(),
        }

    @staticmethod
    def _accelerator_row(acc: Any) -> dict[str, Any]:
        return {
            "model": acc.model,
            "vendor": acc.vendor,
            "memory_mib": acc.memory_mib,
            "compute_capability": acc.compute_capability,
        }

    @staticmethod
    def _placement_row(placement: Any) -> dict[str, Any]:
        return {
            "placement_id": placement.placement_id,
            "kind": placement.kind.value,
            "hypervisor": placement.hypervisor,
            "vgpu_profile": placement.vgpu_profile,
        }

    @staticmethod
    def _host_row(host: Any) -> dict[str, Any]:
        return {
            "name": host.name,
            "cpu_model": host.cpu_model,
            "cores": host.cores,
            "cpu_flags_json": compact_json(host.cpu_flags),
            "numa_nodes": host.numa_nodes,
            "memory_mib": host.memory_mib,
            "os": host.os,
            "kernel": host.kernel,
            "labels_json": compact_json(host.labels),
            "topology_json": host_json(host.topology),
        }

    def add_context(self, item: Any) -> dict[str, Any]:
        stack, acc, placement, host = item.stack, item.accelerator, item.placement, item.host
        stack_id = self._by_object("stack_id", stack, self.stack_id)
        if stack_id not in self.nodes["Stack"]:
            self.nodes["Stack"][stack_id] = self._stack_row(stack, stack_id)
            comps = []
            for name, version in stack.components().items():
                cid = f"{name}@{version}"
                self.nodes["Component"][cid] = {
                    "component_id": cid,
                    "name": name,
                    "version": version,
                }
                comps.append(cid)
            self.stack_components[stack_id] = comps
        # mutable nodes: the last object of the batch with a key wins, as before the memo
        self.nodes["Accelerator"][acc.model] = self._by_object("acc", acc, self._accelerator_row)
        prow = self._by_object("placement", placement, self._placement_row)
        pid = prow["placement_id"]
        self.nodes["Placement"][pid] = prow
        if host is not None:
            self.nodes["Host"][host.name] = self._by_object("host", host, self._host_row)
            # the batch's last topology of a host wins, as for its row
            if host.topology is not None:
                self.topologies[host.name] = host.topology
        bench = getattr(item, "benchmark", None)
        bench_id = self.benchmark_id(bench) if bench is not None else None
        if bench is not None and bench_id is not None and bench_id not in self.nodes["Benchmark"]:
            self.nodes["Benchmark"][bench_id] = {
                "benchmark_id": bench_id,
                "family": bench.family,
                "name": bench.name,
                "parameters_json": bench.parameters_json(),
            }
        return {
            "stack_id": stack_id,
            "accelerator": acc.model,
            "placement_id": pid,
            "benchmark_id": bench_id,
            "host": host.name if host is not None else None,
        }

    def submission_id(self, prov: Any) -> str | None:
        """The id of the submission ``prov`` names (its row added once), or None."""
        return self._by_object("submission", prov, self._submission)  # type: ignore[no-any-return]

    def _submission(self, prov: Any) -> str | None:
        found = Submission.from_provenance(prov)
        if found is None:
            return None
        sid = found.submission_id
        self.nodes["Submission"].setdefault(sid, {"submission_id": sid, **found.model_dump()})
        return sid

    def context_id(self, obs: Any, ctx: dict[str, Any]) -> str:
        """The id of the context ``obs`` was measured in (memoised per batch)."""
        placement, prov = obs.placement, obs.provenance
        memo = (
            ctx["stack_id"],
            ctx["accelerator"],
            obs.accelerator.count,
            ctx["placement_id"],
            ctx["host"],
            obs.run_id,
            prov.kind.value,
            prov.source,
            id(placement),
        )
        cid = self._context_ids.get(memo)
        if cid is None:
            evidence = self._by_object("evidence", placement, lambda p: compact_json(p.evidence))
            cid = self._context_ids[memo] = context_id_of(
                *memo[:-1], evidence, placement.consistent
            )
        return cid

    @classmethod
    @gc_paused()
    def from_batch(cls, batch: IngestBatch) -> BatchRows:
        rows = cls()
        for run in batch.runs:
            rows.nodes["Run"][run.run_id] = {
                "run_id": run.run_id,
                "started_at": iso_utc(run.started_at),
                "finished_at": iso_utc(run.finished_at),
                "collector": run.collector,
                "collector_version": run.collector_version,
                "run_profile": run.profile,
            }
        for obs in batch.observations:
            rows._add_observation(obs)
        for fail in batch.failures:
            ctx = rows.add_context(fail)
            rows.failures[fail.failure_key] = {
                "key": fail.failure_key,
                "stage": fail.stage,
                "error_class": fail.error_class,
                "message": fail.message,
                "log_tail": fail.log_tail,
                "timestamp": iso_utc(fail.timestamp),
                "run_id": fail.run_id,
                "source": fail.provenance.source,
                **ctx,
            }
        return rows

    def _add_observation(self, obs: Observation) -> None:
        """The observation's row, its context's (the first time it is seen) and its run's."""
        ctx = self.add_context(obs)
        prov = obs.provenance
        context_id = self.context_id(obs, ctx)
        contexts = self.nodes["Context"]
        if context_id not in contexts:
            contexts[context_id] = {
                "context_id": context_id,
                "stack_id": ctx["stack_id"],
                "accelerator": ctx["accelerator"],
                "accelerator_count": obs.accelerator.count,
                "placement_id": ctx["placement_id"],
                "placement_kind": obs.placement.kind.value,
                "host": ctx["host"],
                "run_id": obs.run_id,
                "source_kind": prov.kind.value,
                "source": prov.source,
                "placement_evidence_json": self._by_object(
                    "evidence", obs.placement, lambda p: compact_json(p.evidence)
                ),
                "placement_consistent": obs.placement.consistent,
            }
        key = obs.key_with(ctx["benchmark_id"], ctx["stack_id"])
        self.observations[key] = {
            "key": key,
            "metric": obs.metric,
            "value": float(obs.value),
            "unit": obs.unit,
            # stored only where they differ from the default (True, True, no details):
            # each property costs Neo4j ~1.3 µs of CPU per observation (docs/scale.md)
            "higher_is_better": None if obs.higher_is_better else False,
            "samples": obs.samples,
            "p10": obs.p10,
            "p90": obs.p90,
            "stddev": obs.stddev,
            "cv": obs.cv,
            "valid": None if obs.valid else False,
            "note": obs.note,
            "timestamp": iso_utc(obs.timestamp),
            "source_url": prov.url,
            "source_key": obs.source_key,
            "provenance_json": self._by_object(
                "details", prov, lambda p: compact_json(p.details) if p.details else None
            ),
            "context_id": context_id,
            "benchmark_id": ctx["benchmark_id"],
            "submission_id": self.submission_id(prov),
        }
        if obs.run_id and obs.run_id not in self.nodes["Run"]:
            self.nodes["Run"][obs.run_id] = {"run_id": obs.run_id}


def shape_rows(
    label: str, rows: list[dict[str, Any]], extra: frozenset[str] = frozenset()
) -> tuple[frozenset[str], list[dict[str, Any]]]:
    """The schema properties some row knows, and every row cut to exactly those plus the
    ``extra`` columns (one shape). Rows that all have the same columns, among them those, are
    passed as they are (built by ``BatchRows``: no copy); the query reads only the columns it
    names."""
    spec = NODE_BY_LABEL[label]
    present = frozenset(
        p for p in spec.properties if p == spec.key or any(r.get(p) is not None for r in rows)
    )
    columns = present | extra
    first = rows[0].keys()
    if columns <= first and all(r.keys() == first for r in rows):
        return present, rows
    return present, [{p: r.get(p) for p in columns} for r in rows]


def create_rows(
    run: Run,
    label: str,
    items: list[dict[str, Any]],
    links: tuple[Any, ...],
    *,
    by_position: bool = False,
) -> None:
    """CREATE ``items`` of ``label`` with their edges to ``links`` (see ``queries.LINKS``); rows
    are grouped by the optional neighbours they have, so that a MATCH never drops a row. With
    ``by_position`` each distinct neighbour is looked up once per chunk, not once per row
    (``queries.create_linked_by_position``)."""
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    for item in items:
        linked = frozenset(col for _, _, col in links if item.get(col))
        groups.setdefault(linked, []).append(item)
    for linked, group in groups.items():
        for part in chunks(group):
            present, shaped = shape_rows(label, part, linked)
            if not (by_position and linked):
                run(Q.create_linked(label, present, linked), {"rows": shaped})
                continue
            params: dict[str, Any] = {"rows": shaped}
            for i, (_rel, _target, column) in enumerate(links):
                if column in linked:
                    at: dict[str, int] = {}
                    for row in shaped:
                        row[f"p{i}"] = at.setdefault(row[column], len(at))
                    params[f"n{i}"] = list(at)
            created = run(Q.create_linked_by_position(label, present, linked), params)[0]["created"]
            if created != len(shaped):  # a neighbour was missing: roll the transaction back
                raise RuntimeError(
                    f"created {created} of {len(shaped)} {label} nodes: a neighbour "
                    "the batch wrote earlier in this transaction was not found"
                )
