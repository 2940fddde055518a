"""Reading the observation table from a store (a cold start without a persisted table): the flat
read (``Store.flat_observations`` → ``ObservationTable.from_flat``) against the paged read of
models (``iter_observations`` → ``ObservationTable.from_observations``), in the same run.

Each size fills a throw-away store with the synthetic fleet observations (``bench/fleet.py``,
shaped like the collectors' output) and reads it once each way, each read in a fresh child
process so that its peak resident memory is its own. Prints wall and CPU seconds (the child's;
on a shared machine wall time says as much about the neighbours as about the code), peak RSS,
the ratios, and the load average; the two tables must have the same content digest.

Embedded by default (a temporary database); ``--backends neo4j`` uses a scratch local Neo4j
server (or the one NEO4J_URI names: it is emptied first, so never point it at real data), and
adds the server's CPU seconds during the read.

    python bench/table_read.py [--sizes 10000 100000] [--backends embedded neo4j] [--ways flat
    paged]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "bench"))

import fleet
import ingest

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store

ROOT = Path(__file__).resolve().parents[1]

BATCH = 10_000


def read_once(uri: str, way: str) -> dict[str, float | int | str]:
    """The child: one read of the table, timed (its own wall, CPU and peak RSS)."""
    from stack_advisor.advisor.knowledge.table import ObservationTable, content_digest
    from stack_advisor.advisor.knowledge.table_file import READ_PAGE

    store = open_store(uri, migrate=False)
    start, cpu = time.perf_counter(), time.process_time()
    if way == "flat":
        flat = store.flat_observations()
        assert flat is not None, f"{uri} has no flat read"
        table = ObservationTable.from_flat(flat, 0)
    else:
        table = ObservationTable.from_observations(store.iter_observations(page=READ_PAGE), 0)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "n": table.n,
        "digest": content_digest(table),
        "rss_mb": peak_rss_mb(),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started (VmHWM: getrusage's maxrss carries
    the parent's peak across fork and exec on Linux, and the parent filled the store)."""
    for text in Path("/proc/self/status").read_text().splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    return float("nan")


def server_cpu_s() -> float:
    pid = ingest.SERVER_PID
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(uri: str, way: str) -> dict[str, float | int | str]:
    server = server_cpu_s()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", way, "--uri", uri],
        capture_output=True,
        text=True,
        env=os.environ,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the {way} read failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    got["server_cpu_s"] = server_cpu_s() - server
    return got


def line(name: str, size: int, way: str, got: dict[str, float | int | str]) -> str:
    server = f" (+{got['server_cpu_s']:.1f} server)" if got["server_cpu_s"] else ""
    return (
        f"{name:9s} n={size:>8d}  {way:5s} {got['wall_s']:8.1f} s wall  "
        f"{got['cpu_s']:8.1f} CPU s{server}  "
        f"peak RSS {got['rss_mb']:6.0f} MB  rows {got['n']}  load avg {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--backends", nargs="+", default=["embedded"], choices=["embedded", "neo4j"]
    )
    parser.add_argument(
        "--ways",
        nargs="+",
        default=["flat", "paged"],
        choices=["flat", "paged"],
        help="leave out the paged read where it would take too long",
    )
    parser.add_argument("--child", choices=["flat", "paged"], help=argparse.SUPPRESS)
    parser.add_argument("--uri", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(read_once(args.uri, args.child)))
        return
    print(
        f"cores={os.cpu_count()} fleet runs of {fleet.PER_RUN} observations; load avg "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for name in args.backends:
        with ingest.backend(name) as store:
            uri = store.uri
            for size in args.sizes:
                ingest.fresh(store)
                start = time.perf_counter()
                for part in fleet.batches(size, BATCH):
                    store.ingest(IngestBatch(observations=part))
                print(
                    f"{name:9s} n={size:>8d}  filled in {time.perf_counter() - start:.0f} s",
                    flush=True,
                )
                if name == "embedded":
                    store.close()  # one process at a time opens an embedded store
                got = {}
                for way in args.ways:
                    got[way] = measure(uri, way)
                    print(line(name, size, way, got[way]), flush=True)
                if name == "embedded":
                    store = open_store(uri)
                if len(got) == 2:
                    flat, paged = got["flat"], got["paged"]
                    assert flat["digest"] == paged["digest"], "the two reads gave different tables"
                    print(
                        f"{'':9s} {'':10s}  paged/flat: wall "
                        f"x{paged['wall_s'] / flat['wall_s']:.1f}  "
                        f"CPU x{paged['cpu_s'] / flat['cpu_s']:.1f}  peak RSS "
                        f"{paged['rss_mb']:.0f} vs {flat['rss_mb']:.0f} MB; same table",
                        flush=True,
                    )
            if name == "embedded":
                store.close()


if __name__ == "__main__":
    main()
