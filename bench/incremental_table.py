"""Time to the first answer after a small ingest: the table of the previous generation with what
was written since appended (``Store.observations_since``), against the table read whole from
the store, in the same run, with the ratio.

For each store: the table and calibration of its current generation are built and persisted
(into a temporary cache folder), ``--add`` new observations are ingested (bench/api_latency.py's
generator under a new run id: new keys), then three advisors answer the same recommendation:

* fresh process, incremental: nothing in memory; the persisted table of the previous generation
  plus the new rows (what a CLI call or a restarted replica does);
* held table, incremental: the advisor that held the previous table (an API process);
* fresh process, full: the persisted table turned off; every observation read from the store.

Each first answer includes everything it needs: table, evidence index, calibration (computed
again in every variant: the table's content changed). The stores are never emptied; they gain
the ``--add`` observations (source ``bench-synthetic``).

    python bench/incremental_table.py --store embedded:/path/to/kb --store bolt://127.0.0.1:7687
    python bench/incremental_table.py --observations 100000      # a fresh temporary embedded store
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "bench"))

from api_latency import fill, synthetic

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import calibration_file
from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store

ROOT = Path(__file__).resolve().parents[1]

WORKLOAD = {
    "family": "cnn",
    "benchmark": "resnet50",
    "parameters": {"batch_size": 32, "precision": "fp16"},
}


@contextlib.contextmanager
def caches(tables: str, calibration: str) -> Iterator[None]:
    """The advisors made inside persist in these folders (``"0"``: not at all)."""
    saved = Advisor.caches
    Advisor.caches = CacheFolders.from_environ(
        {table_file.CACHE_ENV: tables, calibration_file.CACHE_ENV: calibration}
    )
    try:
        yield
    finally:
        Advisor.caches = saved


CPU: dict[int, float] = {}  # id(advisor) -> CPU seconds of its last first_answer


def first_answer(advisor: Advisor) -> tuple[float, float]:
    """(seconds to the table, seconds to the first answer) for an advisor; the CPU seconds this
    process spent on it go to ``CPU`` (on a shared machine the wall time says as much about the
    neighbours)."""
    start, cpu = time.perf_counter(), time.process_time()
    advisor.table()
    table_s = time.perf_counter() - start
    advisor.recommend(WORKLOAD)
    CPU[id(advisor)] = time.process_time() - cpu
    return table_s, time.perf_counter() - start


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(uri: str, add: int, folder: Path, full: bool = True) -> None:
    tables, calib = str(folder / "tables"), str(folder / "calibration")
    with open_store(uri) as store, caches(tables, calib):
        held = Advisor(store)
        cpu = time.process_time()
        prime_table, prime = first_answer(held)  # builds (or loads) the table and calibration
        prime_cpu = time.process_time() - cpu
        print(
            f"{uri}: primed: table {prime_table:.1f} s, first answer {prime:.1f} s "
            f"({prime_cpu:.1f} CPU s); load avg {load()}",
            flush=True,
        )
        n = held.table().n
        tag = time.time_ns()
        new = [
            o.model_copy(update={"run_id": f"bench-add-{tag}-{i}"})
            for i, o in enumerate(synthetic(add))
        ]
        start = time.perf_counter()
        result = store.ingest(IngestBatch(observations=new))
        ingest_s = time.perf_counter() - start
        if result.observations_new != add:
            raise SystemExit(
                f"expected {add} new observations, the store took {result.observations_new}"
            )
        fresh_advisor = Advisor(store)
        fresh_table, fresh = first_answer(fresh_advisor)
        held_table, held_s = first_answer(held)
        full_table = full_s = full_cpu = float("nan")
        if full:
            with caches("0", str(folder / "calibration-full")):
                full_advisor = Advisor(store)
                full_table, full_s = first_answer(full_advisor)
                full_cpu = CPU[id(full_advisor)]
        fresh_cpu, held_cpu = CPU[id(fresh_advisor)], CPU[id(held)]
        print(
            f"{uri}: {n} observations + {add} (ingest {ingest_s:.2f} s); load avg {load()}",
            flush=True,
        )
        print(
            f"  first answer, fresh process, incremental: {fresh:7.2f} s (table "
            f"{fresh_table:.2f} s; "
            f"{fresh_cpu:.2f} CPU s)"
        )
        print(
            f"  first answer, held table,    incremental: {held_s:7.2f} s (table "
            f"{held_table:.2f} s; "
            f"{held_cpu:.2f} CPU s)"
        )
        print(
            f"  first answer, fresh process, full read:   {full_s:7.2f} s (table "
            f"{full_table:.2f} s; "
            f"{full_cpu:.2f} CPU s)"
        )
        print(
            f"  -> incremental x{full_s / fresh:.1f} faster (fresh process), "
            f"x{full_s / held_s:.1f} "
            f"(held table); table alone x{full_table / fresh_table:.0f} / "
            f"x{full_table / held_table:.0f}; "
            f"CPU x{full_cpu / fresh_cpu:.1f} / x{full_cpu / held_cpu:.1f}; load avg {load()}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--store", action="append", default=[], help="an existing store URI (repeatable)"
    )
    ap.add_argument(
        "--observations",
        type=int,
        nargs="*",
        default=[],
        help="sizes of fresh temporary embedded stores to fill and measure",
    )
    ap.add_argument("--add", type=int, default=100)
    ap.add_argument(
        "--cache",
        type=Path,
        help="keep the persisted tables here (a second run on the "
        "same store starts from them instead of reading the store whole to prime)",
    )
    ap.add_argument(
        "--skip-full",
        action="store_true",
        help="no full-read variant (at a million "
        "observations on a loaded machine it takes long; the priming line times one)",
    )
    args = ap.parse_args()
    if not args.store and not args.observations:
        args.observations = [100_000]
    with tempfile.TemporaryDirectory(prefix="advisor-incremental-") as tmp:
        folder = Path(tmp)
        for i, uri in enumerate(args.store):
            measure(uri, args.add, args.cache or folder / f"existing-{i}", not args.skip_full)
        for n in args.observations:
            uri = f"embedded:{folder / f'kb-{n}'}"
            fill(uri, n, wipe=False)
            measure(uri, args.add, folder / f"run-{n}")


if __name__ == "__main__":
    main()
