#!/usr/bin/env python
"""Time the import of the shared MLPerf rounds into the embedded store and into Neo4j.

    python bench/import_mlperf.py [MLPERF_DIR] [--neo4j bolt://localhost:7687] [--batch-size N]

Each store starts empty (a fresh embedded directory; for Neo4j, a throwaway local server, or the
database the URI names, which must be a scratch one: it is emptied first; --skip-neo4j skips it). With ``--repeat N`` each store is timed N times. Prints, per store: seconds to parse, seconds to
ingest, total, observations written, and the time of a second (idempotent) import. Goal: <= 30 s
per store for the four rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from collectors.importers.mlperf import (
    DEFAULT_BATCH,
    ingest_observations,
    read_tree,
    to_observation,
)


def parse_all(paths: list[Path]) -> tuple[list, float]:
    started = time.perf_counter()
    observations = []
    cache: dict = {}
    for path in paths:
        observations.extend(to_observation(r, cache) for r in read_tree(path).records)
    return observations, time.perf_counter() - started


def bench_store(label: str, uri: str, paths: list[Path], batch_size: int, clear: bool = False) -> dict:
    from graph_schema.registry import open_store

    with open_store(uri) as store:
        store.ensure_schema()
        if clear:
            _clear_neo4j(store)
        observations, parse_s = parse_all(paths)
        started = time.perf_counter()
        new, received = ingest_observations(store, observations, batch_size=batch_size)
        ingest_s = time.perf_counter() - started
        started = time.perf_counter()
        again, _ = ingest_observations(store, observations, batch_size=batch_size)
        reingest_s = time.perf_counter() - started
        stats = store.stats()
    row = {
        "store": label,
        "observations": received,
        "new": new,
        "parse_s": round(parse_s, 2),
        "ingest_s": round(ingest_s, 2),
        "total_s": round(parse_s + ingest_s, 2),
        "reimport_new": again,
        "reimport_ingest_s": round(reingest_s, 2),
        "store_observations_by_source": stats.observations_by_source,
    }
    print(
        f"{label:11s} parse {parse_s:6.2f} s  ingest {ingest_s:6.2f} s  total {parse_s + ingest_s:6.2f} s  "
        f"observations {received} (new {new})  re-import {reingest_s:6.2f} s (new {again})"
    )
    return row


def _clear_neo4j(store: object) -> None:
    clear = getattr(store, "clear", None)
    if clear is None:
        raise SystemExit("cannot empty the Neo4j database: the store has no clear()")
    clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mlperf_dir", nargs="?", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf")
    parser.add_argument("--neo4j", default=os.environ.get("ADVISOR_NEO4J_URI"),
                        help="Neo4j URI of a scratch database (emptied first); default: a throwaway "
                             "local server (tests/neo4j_server.start_local)")
    parser.add_argument("--skip-neo4j", action="store_true")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--repeat", type=int, default=1,
                        help="import into a fresh store this many times (the first Neo4j run is a cold JVM)")
    args = parser.parse_args(argv)
    paths = sorted(args.mlperf_dir.glob("inference_v*.tar.gz"))
    if not paths:
        parser.error(f"no inference_v*.tar.gz in {args.mlperf_dir}")
    print(f"{len(paths)} rounds from {args.mlperf_dir}, batch size {args.batch_size}")
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-mlperf-") as tmp:
            bench_store(f"embedded#{attempt + 1}", f"embedded:{tmp}/kb", paths, args.batch_size)
    if not args.skip_neo4j:
        with contextlib.ExitStack() as stack:
            uri = args.neo4j
            if not uri:
                from tests.neo4j_server import start_local

                uri = stack.enter_context(start_local())
            for attempt in range(args.repeat):
                bench_store(f"neo4j#{attempt + 1}", uri, paths, args.batch_size, clear=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
