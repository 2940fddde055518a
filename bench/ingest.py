"""Ingest throughput into each backend, in observations/s, at 100k and 1M observations.

The observations are synthetic fleet sweeps (``bench/fleet.py``: runs of ~60 observations on
300 nodes, shaped like the collectors' output) and go only into throw-away stores: a temporary
embedded database and a scratch local Neo4j server (or the server NEO4J_URI names — it is
emptied first, so never point it at real data). Batches of ``--batch`` observations, one
transaction each, after a 10k warm-up; "steady" is the rate of the last 10% of the load; "re-send"
sends the last 10% again (nothing new: the idempotency check only). Each load runs twice, on a
fresh store each time: batch by batch (``Store.ingest``), then pipelined (``Store.ingest_many``:
the next batch validated and shaped while the store writes the one before), with the ratio.

``--against REV`` runs the same load with the code of git revision REV (the previous approach:
before schema v5 observations carried their context themselves, and the driver packed in Python)
in a child process, on the same server, and prints the ratio. ``--python-packing`` turns the
driver's Rust packing off here too (to tell the two apart). On a shared machine wall-clock rates
say as much about the neighbours as about the code: ``--server-pid`` adds observations per
CPU-second (client and server together), which does not depend on what else runs.

``--bulk`` (Neo4j) also measures the bulk path for a first load, in the same run: the same
number of fleet observations written as CSV files by ``stack_advisor.store.bulk_import.BulkFiles``,
``neo4j-admin database import full`` into a fresh local server's home (stopped), the server
started, and the store opened as usual (its schema setup creates the constraints and indexes
over the imported nodes). It prints each phase, obs/s without and with the server start, the
ratio against the transactional path's rate, and observations per CPU-second (this process,
neo4j-admin and the server during the schema setup).

    python bench/ingest.py [--sizes 100000 1000000] [--batch 10000] [--backends embedded neo4j]
                           [--against a7b895a] [--bulk]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

# the child of --against imports that revision's code (--code-root) and this generator
sys.path.insert(
    0,
    sys.argv[sys.argv.index("--code-root") + 1]
    if "--code-root" in sys.argv
    else str(Path(__file__).resolve().parents[1]),
)
sys.path.insert(1, str(Path(__file__).resolve().parent))

import fleet

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store

ROOT = Path(__file__).resolve().parents[1]

WARMUP = 10_000
GROUP = 10  # batches generated ahead of each timed part (and passed to one ingest_many)
PIN = False  # --pin
SERVER_PID: int | None = None  # --server-pid: the Neo4j server's process, for its CPU time


def pin(server_pid: int) -> None:
    """``--pin``: this process on the first core, every thread of the server on the others (the
    threads it starts later inherit it), as if client and server had their own machines."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cores[:1])
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task.name), cores[1:])


def cpu_seconds() -> float:
    """CPU time of this process plus the server's (when its pid is known)."""
    total = time.process_time()
    if SERVER_PID:
        fields = Path(f"/proc/{SERVER_PID}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measure(store, n: int, batch: int, pipelined: bool = False) -> dict[str, float]:
    """Ingest the first ``n`` fleet observations (after the warm-up's) and time it: batch by
    batch with ``Store.ingest``, or with ``pipelined`` through ``Store.ingest_many`` (the next
    batch shaped while the store writes the one before). The observations are generated
    ``GROUP`` batches at a time, outside the timed part; "steady" is the time between results
    of the batches in the last tenth."""
    source = fleet.batches(n + WARMUP, batch)
    warm = 0
    while warm < WARMUP:
        part = next(source)
        store.ingest(IngestBatch(observations=part))
        warm += len(part)
    tail = n - n // 10
    done = total = cpu = steady_t = 0.0
    steady_n = 0
    last: list[IngestBatch] = []
    while done < n:
        group = [IngestBatch(observations=part) for part in itertools.islice(source, GROUP)]
        if not group:
            break
        start, cpu_start = time.perf_counter(), cpu_seconds()
        results = store.ingest_many(group) if pipelined else (store.ingest(part) for part in group)
        before = start
        for part, result in zip(group, results):
            now = time.perf_counter()
            if done + result.observations_received > tail:
                steady_t += now - before
                steady_n += result.observations_received
                last.append(part)
            done += result.observations_received
            before = now
        cpu += cpu_seconds() - cpu_start
        total += time.perf_counter() - start
    start = time.perf_counter()
    assert sum(r.observations_new for r in store.ingest_many(last)) == 0
    again = time.perf_counter() - start
    return {
        "rate": done / total,
        "steady": steady_n / steady_t,
        "resend": steady_n / again,
        "per_cpu_s": done / cpu,
    }


@contextlib.contextmanager
def backend(name: str):
    if name == "embedded":
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"embedded:{tmp}/kb")
            try:
                yield store
            finally:
                store.close()
        return
    uri = os.environ.get("NEO4J_URI")
    with contextlib.ExitStack() as stack:
        if not uri:
            from tests.support.neo4j_server import LocalNeo4j

            server = LocalNeo4j()
            stack.callback(server.remove)
            uri = server.start()
            os.environ["NEO4J_URI"] = uri  # the --against child uses the same server
            global SERVER_PID
            if SERVER_PID is None:  # ours: its CPU time counts while it runs
                SERVER_PID = server.proc.pid
                stack.callback(globals().__setitem__, "SERVER_PID", None)
            if PIN:
                pin(server.proc.pid)
        store = open_store(uri, migrate=False)
        try:
            yield store
        finally:
            store.clear()
            store.close()


def measure_bulk(n: int, batch: int) -> dict[str, float]:
    """The bulk path for the first ``n`` fleet observations into a new local server."""
    import resource

    from stack_advisor.store.bulk_import import BulkFiles, admin_from_lib, run_import
    from tests.support.neo4j_server import LocalNeo4j

    server = LocalNeo4j()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start, cpu0 = time.perf_counter(), time.process_time()
            files = BulkFiles(Path(tmp) / "csv")
            for part in fleet.batches(n, batch):
                files.add(IngestBatch(observations=part))
            plan = files.finish()
            csv_s, csv_cpu = time.perf_counter() - start, time.process_time() - cpu0
            children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            report = run_import(
                plan, admin_from_lib(server.lib, heap="1g"), server.home, max_off_heap="2G"
            )
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            admin_cpu = (children.ru_utime - children0.ru_utime) + (
                children.ru_stime - children0.ru_stime
            )
        start = time.perf_counter()
        uri = server.start()
        start_s = time.perf_counter() - start
        global SERVER_PID
        saved, SERVER_PID = SERVER_PID, server.proc.pid
        try:
            start, cpu0 = time.perf_counter(), cpu_seconds()
            with open_store(uri) as store:  # schema setup: constraints and indexes over the import
                schema_s, schema_cpu = time.perf_counter() - start, cpu_seconds() - cpu0
                count = store.stats().counts["Observation"]
        finally:
            SERVER_PID = saved
        assert count == plan.result.observations_new == n, (count, n)
    finally:
        server.remove()
    loaded = csv_s + report.seconds + schema_s
    return {
        "csv_s": csv_s,
        "import_s": report.seconds,
        "start_s": start_s,
        "schema_s": schema_s,
        "rate": n / loaded,
        "rate_with_start": n / (loaded + start_s),
        "per_cpu_s": n / (csv_cpu + admin_cpu + schema_cpu),
        "csv_cpu": csv_cpu,
        "admin_cpu": admin_cpu,
        "schema_cpu": schema_cpu,
    }


def bulk_line(b: dict[str, float], got: dict[str, float] | None = None) -> str:
    line = (
        f"{'':9s} bulk: files {b['csv_s']:.1f} s + neo4j-admin {b['import_s']:.1f} s + "
        f"constraints {b['schema_s']:.1f} s -> {b['rate']:7.0f} obs/s (with the server start, "
        f"{b['start_s']:.1f} s: {b['rate_with_start']:7.0f} obs/s)  "
        f"{b['per_cpu_s']:7.0f} obs per CPU-s "
        f"(CPU s: files {b['csv_cpu']:.1f}, neo4j-admin {b['admin_cpu']:.1f}, "
        f"constraints {b['schema_cpu']:.1f})"
    )
    if got is not None:
        line += (
            f"  -> bulk/transactional x{b['rate'] / got['rate']:.1f} (steady "
            f"x{b['rate'] / got['steady']:.1f}, "
            f"with start x{b['rate_with_start'] / got['rate']:.1f}, per CPU-s "
            f"x{b['per_cpu_s'] / got['per_cpu_s']:.1f})"
        )
    return line + f"  load avg {os.getloadavg()[0]:.1f}"


def fresh(store) -> None:
    if hasattr(store, "clear"):
        store.clear()
    store.ensure_schema()


def extract(rev: str, into: Path) -> Path:
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--backends", nargs="+", default=["embedded", "neo4j"])
    parser.add_argument(
        "--against", metavar="REV", help="also measure the code of this git revision"
    )
    parser.add_argument(
        "--python-packing", action="store_true", help="no Rust packing in the driver"
    )
    parser.add_argument(
        "--server-pid",
        type=int,
        help="the Neo4j server's pid (NEO4J_URI on this machine): "
        "also print observations per CPU-second of client and server together",
    )
    parser.add_argument(
        "--bulk",
        action="store_true",
        help="Neo4j: also measure the bulk path "
        "(neo4j-admin database import into a new local server) and the ratio",
    )
    parser.add_argument(
        "--bulk-only", action="store_true", help="only the bulk path (no transactional load)"
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="a local server: this process on one core, "
        "the server on the others (as if each had its machine; needs 2+ cores)",
    )
    parser.add_argument(
        "--no-pipelined",
        dest="pipelined",
        action="store_false",
        help="only batch by batch (not also through Store.ingest_many)",
    )
    parser.add_argument("--code-root", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global SERVER_PID, PIN
    SERVER_PID = args.server_pid
    PIN = args.pin
    if args.python_packing:
        import neo4j._codec.packstream.v1 as packstream

        def python_pack(self, data, dehydration_hooks=None):
            self._py_pack(data, dehydration_hooks)

        packstream.Packer._pack = python_pack
    results: dict[str, dict[str, float]] = {}
    if not args.json:
        print(
            f"cores={os.cpu_count()} batch={args.batch} fleet runs of {fleet.PER_RUN} "
            "observations; "
            f"load avg {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    if args.bulk_only:  # a size whose transactional load would take too long here
        for size in args.sizes:
            print(
                f"neo4j     n={size:>8d}  " + bulk_line(measure_bulk(size, args.batch)).lstrip(),
                flush=True,
            )
        return
    for name in args.backends:
        with backend(name) as store:
            fresh(store)  # a new server compiles its queries and warms its JIT on the first loads:
            measure(store, 5 * args.batch, args.batch)  # not on the first measured one
            for size in args.sizes:
                fresh(store)
                got = results[f"{name} {size}"] = measure(store, size, args.batch)
                if args.json:
                    continue
                line = (
                    f"{name:9s} n={size:>8d}  ingest {got['rate']:7.0f} obs/s  steady "
                    f"{got['steady']:7.0f} obs/s  "
                    f"re-send (no-op) {got['resend']:7.0f} obs/s  "
                    f"{got['per_cpu_s']:7.0f} obs per CPU-s  "
                    f"load avg {os.getloadavg()[0]:.1f}"
                )
                print(line, flush=True)
                if args.pipelined:
                    fresh(store)
                    pipe = results[f"{name} {size} pipelined"] = measure(
                        store, size, args.batch, pipelined=True
                    )
                    print(
                        f"{'':9s} pipelined (ingest_many): ingest {pipe['rate']:7.0f} "
                        "obs/s  steady "
                        f"{pipe['steady']:7.0f} obs/s  re-send {pipe['resend']:7.0f} obs/s  "
                        f"{pipe['per_cpu_s']:7.0f} obs per CPU-s  -> pipelined/per-batch "
                        f"x{pipe['rate'] / got['rate']:.2f} "
                        f"(steady x{pipe['steady'] / got['steady']:.2f})  load avg "
                        f"{os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                if args.bulk and name == "neo4j":
                    print(bulk_line(measure_bulk(size, args.batch), got), flush=True)
                if args.against:
                    old = against(args, name, size)
                    print(
                        f"{'':9s} {args.against}: ingest {old['rate']:7.0f} obs/s  "
                        f"steady {old['steady']:7.0f} "
                        f"obs/s  re-send {old['resend']:7.0f} obs/s  "
                        f"{old['per_cpu_s']:7.0f} obs per CPU-s  -> new/old "
                        f"x{got['rate'] / old['rate']:.1f} (steady "
                        f"x{got['steady'] / old['steady']:.1f}, "
                        f"per CPU-s x{got['per_cpu_s'] / old['per_cpu_s']:.1f})",
                        flush=True,
                    )
    if args.json:
        print(json.dumps(results))


def against(args: argparse.Namespace, name: str, size: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        code = extract(args.against, Path(tmp))
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--code-root",
            str(code),
            "--json",
            "--sizes",
            str(size),
            "--batch",
            str(args.batch),
            "--backends",
            name,
        ]
        if args.server_pid:
            cmd += ["--server-pid", str(args.server_pid)]
        cmd += [
            "--no-pipelined",
            "--python-packing",
        ]  # the previous approach as it ran: no Rust packing either
        done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if done.returncode:
            raise SystemExit(f"{args.against} failed:\n{done.stderr[-3000:]}")
        out = done.stdout
    return json.loads(out.strip().splitlines()[-1])[f"{name} {size}"]


if __name__ == "__main__":
    main()
