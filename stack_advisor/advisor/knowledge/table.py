"""A flat, columnar copy of the knowledge base's observations, built once per store generation.

The advisor answers from memory: strings become integer codes (``Column``), numbers numpy arrays,
so a recommendation is a handful of vectorised masks and group-bys over this table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stack_advisor.advisor.knowledge.columns import Column, KeyList
from stack_advisor.advisor.knowledge.table_rows import CATEGORICAL as CATEGORICAL
from stack_advisor.advisor.knowledge.table_rows import (
    BenchmarkInfo,
    BenchPart,
    ContextPart,
    RowBuilder,
    flat_context,
)
from stack_advisor.advisor.knowledge.table_rows import physical_key as physical_key
from stack_advisor.catalog.rounds import round_key
from stack_advisor.schema.models import Observation, SoftwareStack, StoredObservation
from stack_advisor.store.base import FlatObservations

log = logging.getLogger(__name__)
_UNSEEN: Any = object()

NUMERIC = ("value", "count", "timestamp", "higher_is_better")


def content_digest(table: ObservationTable) -> str:
    """A digest of the table's content (observation keys and values): models fitted on equal
    content are interchangeable, whatever store or generation they came from."""
    digest = hashlib.sha256(f"{table.n}:".encode())
    digest.update("\n".join(sorted(table.keys)).encode())
    digest.update(table.value.tobytes())
    return digest.hexdigest()[:32]


@dataclass
class ObservationTable:
    """Every observation of one store generation, column by column."""

    generation: int
    n: int
    value: np.ndarray
    count: np.ndarray
    timestamp: np.ndarray
    higher_is_better: np.ndarray
    metric: Column
    unit: Column
    benchmark: Column  # benchmark_id
    family: Column
    bench_name: Column
    scenario: Column
    division: Column
    round: Column
    source: Column
    submitter: Column
    accelerator: Column
    physical: Column  # the device behind the name (spec id; vGPU profiles resolve to their GPU)
    placement: Column
    stack: Column  # stack_id
    candidate: Column  # (stack_id, accelerator, count, placement)
    system: Column  # (nodes, accelerators per node, interconnect) as published; "" when not given
    keys: Sequence[str]
    benchmarks: dict[str, BenchmarkInfo] = field(default_factory=dict)
    stacks: dict[str, SoftwareStack] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    load_seconds: float = 0.0
    # content digest (keys and values), set when persisted
    # (stack_advisor.advisor.knowledge.table_file)
    digest: str = ""
    # the persisted-table key of the store lineage this table was read from, less the
    # generation (``stack_advisor.advisor.knowledge.table_file.lineage``); None when it came from
    # elsewhere
    lineage: dict[str, Any] | None = None

    @classmethod
    def from_observations(
        cls, observations: Iterable[Observation], generation: int = 0
    ) -> ObservationTable:
        start = time.perf_counter()
        rows = RowBuilder()
        # ids are content hashes: memoise them on cheap tuples of the content
        benches: dict[tuple[str, str, str], BenchPart] = {}
        stack_memo: dict[tuple[Any, ...], str] = {}
        contexts: dict[tuple[Any, ...], ContextPart] = {}
        for obs in observations:
            if not obs.valid:
                continue
            bench = obs.benchmark
            bkey = (bench.family, bench.name, repr(sorted(bench.parameters.items())))
            bpart = benches.get(bkey)
            if bpart is None:
                bpart = benches[bkey] = BenchPart.of(bench)
            st = obs.stack
            skey = (
                st.driver,
                st.cuda,
                st.cudnn,
                st.nccl,
                st.tensorrt,
                st.framework,
                st.framework_version,
                st.python,
                tuple(sorted(st.extra.items())),
                st.image,
            )
            sid = stack_memo.get(skey)
            if sid is None:
                sid = stack_memo[skey] = st.stack_id
            acc, host = obs.accelerator, obs.host
            ckey = (
                sid,
                acc.model,
                acc.count,
                obs.placement.kind.value,
                obs.provenance.source,
                host.name if host else "",
            )
            cpart = contexts.get(ckey)
            if cpart is None:
                cpart = contexts[ckey] = ContextPart.of(sid, st, *ckey[1:])
            rows.add(
                obs.key if isinstance(obs, StoredObservation) else "",
                obs.metric,
                obs.unit,
                float(obs.value),
                obs.timestamp.timestamp(),
                bool(obs.higher_is_better),
                obs.provenance.details,
                bpart,
                cpart,
            )
        table = cls(generation=generation, **rows.columns())
        table.load_seconds = time.perf_counter() - start
        return table

    @classmethod
    def from_flat(cls, flat: FlatObservations, generation: int = 0) -> ObservationTable:
        """The table of a store's flat read (``Store.flat_observations``): equal to
        ``from_observations`` of the same store's observations in key order, row for row, in the
        same order, vocabularies included (one row builder decides both)."""
        start = time.perf_counter()
        rows = RowBuilder()
        benches: dict[str, BenchPart | None] = {}
        contexts: dict[str, ContextPart | None] = {}
        stack_ids: dict[str, str] = {}
        for row in flat.rows:
            if not row.valid:
                continue
            bpart = benches.get(row.benchmark_id, _UNSEEN)
            if bpart is _UNSEEN:
                bench = flat.benchmarks.get(row.benchmark_id)
                bpart = benches[row.benchmark_id] = None if bench is None else BenchPart.of(bench)
            cpart = contexts.get(row.context_id, _UNSEEN)
            if cpart is _UNSEEN:
                cpart = contexts[row.context_id] = flat_context(flat, row.context_id, stack_ids)
            if bpart is None or cpart is None:  # the paged read's joins drop it too
                continue
            rows.add(
                row.key,
                row.metric,
                row.unit,
                row.value,
                row.timestamp.timestamp(),
                row.higher_is_better,
                row.details,
                bpart,
                cpart,
            )
        table = cls(generation=generation, **rows.columns())
        table.load_seconds = time.perf_counter() - start
        return table

    def appended(self, observations: Iterable[Observation], generation: int) -> ObservationTable:
        """This table with ``observations`` added after its rows, labelled ``generation``: the
        rows here keep their codes (new values are appended to each vocabulary), so adding a
        few observations costs the few, not a rereading of every one. ``self`` is unchanged.

        The digest chains this table's with the new rows' (equal content reached by another
        history gets another digest: a calibration computed again, never a wrong one)."""
        start = time.perf_counter()
        delta = ObservationTable.from_observations(observations, generation)
        if delta.n == 0:
            out = dataclasses.replace(self, generation=generation)
            out.load_seconds = time.perf_counter() - start
            return out
        base_digest = self.digest or content_digest(self)
        keys = (
            self.keys.extended(delta.keys)
            if isinstance(self.keys, KeyList)
            else [*self.keys, *delta.keys]
        )
        stacks = {**self.stacks, **delta.stacks}
        parts: dict[str, Any] = {
            **{
                name: np.concatenate([getattr(self, name), getattr(delta, name)])
                for name in NUMERIC
            },
            **{name: getattr(self, name).extended(getattr(delta, name)) for name in CATEGORICAL},
        }
        out = ObservationTable(
            generation=generation,
            n=self.n + delta.n,
            keys=keys,
            benchmarks={**self.benchmarks, **delta.benchmarks},
            stacks=stacks,
            images={sid: st.image for sid, st in stacks.items() if st.image},
            digest=hashlib.sha256(f"{base_digest}+{content_digest(delta)}".encode()).hexdigest()[
                :32
            ],
            lineage=self.lineage,
            **parts,
        )
        out.load_seconds = time.perf_counter() - start
        return out

    # ---- selections ----------------------------------------------------------------------
    def benchmark_mask(
        self, family: str, name: str, parameters: dict[str, Any]
    ) -> tuple[np.ndarray, list[str]]:
        """Rows of the benchmark whose parameters match every pinned one the KB records.

        Returns the mask and the pinned parameter names that no benchmark of that name records
        (ignored, so the caller can warn)."""
        matching = [b for b in self.benchmarks.values() if b.family == family and b.name == name]
        recorded = set().union(*(b.parameters.keys() for b in matching)) if matching else set()
        ignored = sorted(k for k in parameters if k not in recorded)
        pinned = {k: v for k, v in parameters.items() if k in recorded}

        def ok(b: BenchmarkInfo) -> bool:
            return all(
                str(b.parameters.get(k)).lower() == str(v).lower() for k, v in pinned.items()
            )

        ids = [b.benchmark_id for b in matching if ok(b)]
        return self.benchmark.mask(ids), ignored

    def latest_round(self, family: str | None = None) -> str:
        """The newest round in the table, or among ``family``'s rows (Training's rounds are
        numbered apart from Inference's: v5.0 can be Training's newest while Inference has v5.1)."""
        if family is None:
            rounds = [r for r in self.round.vocab if r]
        else:
            codes = np.unique(self.round.codes[self.family.codes == self.family.code(family)])
            rounds = [r for r in (self.round.vocab[int(c)] for c in codes) if r]
        return max(rounds, key=round_key) if rounds else ""


def group_rows(
    columns: list[np.ndarray], rows: np.ndarray
) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """``rows`` grouped by the values of ``columns`` (integer arrays aligned with ``rows``): one
    (key, rows) pair per distinct key, keys in the order they first appear and rows in their
    order, as a dict of lists filled row by row would give, without a Python step per row (a
    million rows: a few ten milliseconds instead of seconds)."""
    rows = np.asarray(rows)
    if not len(rows):
        return []
    if not columns:
        return [((), rows)]
    cols = [np.asarray(c).astype(np.int64, copy=False) for c in columns]
    lows = [int(c.min()) for c in cols]
    spans = [int(c.max()) - low + 1 for c, low in zip(cols, lows)]
    size = 1
    for span in spans:
        size *= span
    if size < 2**62:  # one integer per key (mixed radix)
        key = np.zeros(len(rows), dtype=np.int64)
        for c, low, span in zip(cols, lows, spans):
            key = key * span + (c - low)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(
            np.column_stack(cols), axis=0, return_index=True, return_inverse=True
        )
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.flatnonzero(np.diff(inverse[order])) + 1
    parts = np.split(rows[order], bounds)
    starts = np.split(order, bounds)
    out = [(tuple(int(c[i[0]]) for c in cols), part) for part, i in zip(parts, starts)]
    appearance = np.argsort(first, kind="stable")
    return [out[g] for g in appearance.tolist()]


def round_number(value: str) -> float:
    """'v2.1' → 2.1 (NaN when unknown)."""
    parts = round_key(value)
    if not parts or parts == (0,):
        return float("nan")
    return parts[0] + (parts[1] / 10 if len(parts) > 1 else 0.0)


def group_ids(columns: Iterable[np.ndarray]) -> np.ndarray:
    """One dense integer per row, equal for the rows equal in every column (codes or values)."""
    ids: np.ndarray | None = None
    for col in columns:
        codes = np.unique(col, return_inverse=True)[1].reshape(-1).astype(np.int64)
        if ids is None:
            ids = codes
            continue
        ids = np.unique(ids * (int(codes.max(initial=0)) + 1) + codes, return_inverse=True)[1]
        ids = ids.reshape(-1).astype(np.int64)
    return np.zeros(0, np.int64) if ids is None else ids
