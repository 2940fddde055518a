#!/usr/bin/env python
"""Time the import of the shared MLPerf data sets into the embedded store and into Neo4j.

    python bench/import_mlperf.py [MLPERF_DIR] [--training DIR] [--neo4j bolt://localhost:7687]
    [--batch-size N]

Data sets: every ``inference_v*.tar.gz`` in MLPERF_DIR and every ``training_v*.tar.gz`` in the
training directory (default ../shared/data/mlperf-training; --skip-training skips it). Each store
starts empty (a fresh embedded directory; for Neo4j, a throwaway local server, or the database
the URI names, which must be a scratch one: it is emptied first; --skip-neo4j skips it). With
``--repeat N`` each store is timed N times. Prints, per store and data set: seconds to parse,
seconds to ingest, observations written; then per store the totals and the time of a second
(idempotent) import of everything. Goal: <= 30 s per store for the four v1.1-v3.0 rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.collectors.importers import mlperf_training
from stack_advisor.collectors.importers.mlperf import (
    DEFAULT_BATCH,
    ingest_observations,
    read_tree,
    to_observations,
)
from stack_advisor.schema.models import IngestBatch

ROOT = Path(__file__).resolve().parents[1]


def parse(path: Path) -> tuple[IngestBatch, float]:
    """One data set as the importers read it (inference round or training round), timed."""
    started = time.perf_counter()
    if path.name.startswith("training_"):
        batch = mlperf_training.to_batch(mlperf_training.read_training_tree(path))
    else:
        cache: dict = {}
        batch = IngestBatch(
            observations=[o for r in read_tree(path).records for o in to_observations(r, cache)]
        )
    return batch, time.perf_counter() - started


def _ingest(store: object, batch: IngestBatch, batch_size: int) -> tuple[int, int]:
    if batch.runs or batch.failures:
        store.ingest(IngestBatch(runs=batch.runs, failures=batch.failures))  # type: ignore[attr-defined]
    return ingest_observations(store, batch.observations, batch_size=batch_size)  # type: ignore[arg-type]


def bench_store(
    label: str, uri: str, paths: list[Path], batch_size: int, clear: bool = False
) -> dict:
    from stack_advisor.store.registry import open_store

    rows = []
    with open_store(uri) as store:
        store.ensure_schema()
        if clear:
            _clear_neo4j(store)
        batches = []
        for path in paths:
            batch, parse_s = parse(path)
            started = time.perf_counter()
            new, received = _ingest(store, batch, batch_size)
            ingest_s = time.perf_counter() - started
            batches.append(batch)
            rows.append(
                {
                    "data_set": path.name,
                    "observations": received,
                    "new": new,
                    "parse_s": round(parse_s, 2),
                    "ingest_s": round(ingest_s, 2),
                }
            )
            print(
                f"{label:11s} {path.name:26s} parse {parse_s:6.2f} s  ingest {ingest_s:6.2f} s  "
                f"total {parse_s + ingest_s:6.2f} s  observations {received} (new {new})"
            )
        started = time.perf_counter()
        again = sum(_ingest(store, batch, batch_size)[0] for batch in batches)
        reingest_s = time.perf_counter() - started
        stats = store.stats()
    parse_total = sum(r["parse_s"] for r in rows)
    ingest_total = sum(r["ingest_s"] for r in rows)
    print(
        f"{label:11s} {'all':26s} parse {parse_total:6.2f} s  ingest {ingest_total:6.2f} s  "
        f"total {parse_total + ingest_total:6.2f} s  re-import {reingest_s:6.2f} s (new {again})  "
        f"store {stats.observations_by_source}"
    )
    return {
        "store": label,
        "data_sets": rows,
        "reimport_new": again,
        "reimport_ingest_s": round(reingest_s, 2),
        "store_observations_by_source": stats.observations_by_source,
    }


def _clear_neo4j(store: object) -> None:
    clear = getattr(store, "clear", None)
    if clear is None:
        raise SystemExit("cannot empty the Neo4j database: the store has no clear()")
    clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "mlperf_dir", nargs="?", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf"
    )
    parser.add_argument(
        "--neo4j",
        default=os.environ.get("ADVISOR_NEO4J_URI"),
        help="Neo4j URI of a scratch database (emptied first); default: a throwaway "
        "local server (tests/support/neo4j_server.start_local)",
    )
    parser.add_argument(
        "--training", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf-training"
    )
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--skip-neo4j", action="store_true")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="import into a fresh store this many times (the first Neo4j run is a cold JVM)",
    )
    args = parser.parse_args(argv)
    paths = sorted(args.mlperf_dir.glob("inference_v*.tar.gz"))
    if not paths:
        parser.error(f"no inference_v*.tar.gz in {args.mlperf_dir}")
    if not args.skip_training:
        paths += sorted(args.training.glob("training_v*.tar.gz"))
    print(
        f"{len(paths)} data sets ({', '.join(p.name for p in paths)}), batch size {args.batch_size}"
    )
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-mlperf-") as tmp:
            bench_store(f"embedded#{attempt + 1}", f"embedded:{tmp}/kb", paths, args.batch_size)
    if not args.skip_neo4j:
        with contextlib.ExitStack() as stack:
            uri = args.neo4j
            if not uri:
                from tests.support.neo4j_server import start_local

                uri = stack.enter_context(start_local())
            for attempt in range(args.repeat):
                bench_store(f"neo4j#{attempt + 1}", uri, paths, args.batch_size, clear=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
