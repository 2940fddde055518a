"""Ingest under 8 concurrent writers on a local Neo4j (issue 18): overlapping batches written
at once; prints observations lost and duplicated (both must be 0), the transactions the driver
retried after transient errors (deadlocks), and the wall time.

    python bench/concurrent_writers.py [--writers 8] [--per-writer 4] [--size 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.catalog.canonical import canonical_observation
from stack_advisor.store.registry import open_store
from tests.support.neo4j_server import start_local
from tests.support.samples import overlapping_batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--per-writer", type=int, default=4)
    parser.add_argument("--size", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bad = 0
    with start_local() as uri:
        for round_ in range(args.rounds):
            store = open_store(uri)
            store.clear()  # type: ignore[attr-defined]
            store.ensure_schema()
            batches = overlapping_batches(args.writers, args.per_writer, args.size)
            # the store keeps observations in catalogue names, so their keys are the canonical ones
            expected = {
                canonical_observation(o).observation_key
                for mine in batches
                for b in mine
                for o in b.observations
            }
            barrier = threading.Barrier(args.writers)

            def writer(mine: list, store=store, barrier=barrier) -> int:  # type: ignore[no-untyped-def,type-arg]
                barrier.wait()
                return sum(store.ingest(b).observations_new for b in mine)

            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.writers) as pool:
                new = sum(pool.map(writer, batches))
            seconds = time.perf_counter() - start
            keys = [o.key for o in store.iter_observations()]
            lost = len(expected - set(keys))
            duplicated = len(keys) - len(set(keys))
            sent = sum(len(b.observations) for mine in batches for b in mine)
            print(
                f"round {round_ + 1}: writers={args.writers} observations sent={sent} "
                f"distinct={len(expected)} stored={len(keys)} reported_new={new} lost={lost} "
                f"duplicated={duplicated} transient_retries={store.transient_retries} "  # type: ignore[attr-defined]
                f"wall={seconds:.2f} s"
            )
            bad += lost + duplicated + (new != len(expected))
            store.close()
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
