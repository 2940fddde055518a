"""Latency of POST /v1/recommendations under concurrent load on loopback.

Fills a fresh store (never yours: a temp directory, and a throwaway local Neo4j server, or the
Neo4j you name, which is wiped first only with --wipe) with N synthetic observations (source
``bench-synthetic``: load for the benchmark, not knowledge), starts ``advisor serve`` on a free
loopback port, and drives it with C concurrent clients. Prints p50/p99/max and throughput per store.

    python bench/api_latency.py                       # both stores, 100k observations, 8 clients
    python bench/api_latency.py --neo4j bolt://127.0.0.1:7687 --wipe
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)

ROOT = Path(__file__).resolve().parents[1]

ACCELERATORS = [
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA H100 80GB HBM3",
    "NVIDIA L4",
    "NVIDIA T4",
    "NVIDIA A10",
    "NVIDIA L40S",
    "NVIDIA V100-SXM2-32GB",
    "NVIDIA A30",
]
STACKS = [
    SoftwareStack(driver=d, cuda=c, cudnn=n, framework=f, framework_version=v)
    for d, c, n in (("535.161.08", "12.2", "8.9.7"), ("550.54.15", "12.4", "9.1.0"))
    for f, v in (("pytorch", "2.2.2"), ("pytorch", "2.3.1"), ("tensorflow", "2.15.1"))
]
BENCHMARKS = [
    Benchmark(family="cnn", name=m, parameters={"batch_size": b, "precision": p})
    for m in ("resnet50", "vgg16", "mobilenet_v2")
    for b in (32, 64)
    for p in ("fp32", "fp16")
]
PLACEMENTS = [
    Placement(kind=PlacementKind.BARE_METAL),
    Placement(kind=PlacementKind.PASSTHROUGH, hypervisor="kvm"),
    Placement(kind=PlacementKind.VGPU, hypervisor="kvm", vgpu_profile="A100-4C"),
]
PROVENANCE = Provenance(kind=SourceKind.MEASURED, source="bench-synthetic")


def synthetic(n: int, seed: int = 7) -> list[Observation]:
    return list(iter_synthetic(n, seed))


def iter_synthetic(n: int, seed: int = 7) -> Iterator[Observation]:
    """The first ``n`` synthetic observations, one at a time (a million do not sit in memory)."""
    rng = random.Random(seed)
    combos = list(itertools.product(ACCELERATORS, STACKS, BENCHMARKS, PLACEMENTS))
    for i in range(n):
        accel, stack, bench, placement = combos[i % len(combos)]
        value = rng.uniform(100, 3000)
        yield Observation(
            benchmark=bench,
            metric="throughput",
            value=value,
            unit="images/s",
            samples=5,
            p10=value * 0.97,
            p90=value * 1.03,
            cv=0.02,
            stack=stack,
            accelerator=Accelerator(model=accel),
            placement=placement,
            run_id=f"bench-run-{i // len(combos)}",
            provenance=PROVENANCE,
        )


def fill(store_uri: str, n: int, wipe: bool) -> float:
    from stack_advisor.store.registry import open_store

    start = time.perf_counter()
    with open_store(store_uri) as store:
        store.ensure_schema()
        if wipe and hasattr(store, "wipe"):
            store.wipe()
        if not wipe and store.stats().counts.get("Observation", 0) >= n:
            return 0.0  # a reused store that already holds the load
        rows = iter_synthetic(n)
        while batch := list(itertools.islice(rows, 5000)):
            store.ingest(IngestBatch(observations=batch))
        count = store.stats().counts.get("Observation", 0)
    if count < n:
        raise SystemExit(f"store holds {count} observations after filling, expected >= {n}")
    return time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(store_uri: str, token: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # the code of this checkout (the installed `advisor` script may belong to another one)
    env = {
        **os.environ,
        "ADVISOR_TOKENS": f"{token}:read",
        "ADVISOR_ENVIRONMENT": "production",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("advisor")),
            "serve",
            "--port",
            str(port),
            "--store",
            store_uri,
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"advisor serve exited; see {log}")
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"advisor serve not ready after 120 s; see {log}")


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) of a process, in MB (Linux /proc)."""
    fields = dict(
        line.split(":", 1)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if ":" in line
    )
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def workload_bodies() -> list[dict[str, Any]]:
    """One body per benchmark variant and framework in the synthetic data (36): the load is not
    one repeated question. (After its first answer, each is served from the engine's memo for
    the store generation, as a real server's repeated questions are.)"""
    out = []
    for bench in BENCHMARKS:
        for framework in ("pytorch", "tensorflow", None):
            workload: dict[str, Any] = {
                "family": bench.family,
                "benchmark": bench.name,
                "parameters": dict(bench.parameters),
            }
            if framework:
                workload["frameworks"] = [{"name": framework}]
            out.append({"workload": workload, "top": 5})
    return out


def drive(
    url: str, bodies: list[dict[str, Any]], clients: int, per_client: int, warmup: int
) -> tuple[np.ndarray, float, list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    # every client warms up, then all start the measured requests together: throughput is
    # counted over the measured window only (the first warm-up waits for the table and model)
    ready = threading.Barrier(clients + 1)
    stride = -(-len(bodies) // clients)  # with warmup >= stride, every body is asked before timing

    def worker(me: int) -> None:
        # read timeout long enough for the first request to wait for the warm-up (table + model)
        with httpx.Client(base_url=url, timeout=httpx.Timeout(30, read=600)) as client:
            mine = []
            for i in range(warmup + per_client):
                if i == warmup:
                    try:
                        ready.wait()
                    except threading.BrokenBarrierError:
                        return
                t0 = time.perf_counter()
                r = client.post("/v1/recommendations", json=bodies[(me * stride + i) % len(bodies)])
                dt = time.perf_counter() - t0
                if r.status_code != 200:
                    with lock:
                        errors.append(f"{r.status_code}: {r.text[:200]}")
                    ready.abort()
                    return
                if i >= warmup:
                    mine.append(dt)
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    start = time.perf_counter()
    for t in threads:
        t.join()
    return np.array(latencies) * 1000, time.perf_counter() - start, errors


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--observations", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=100, help="measured requests per client")
    ap.add_argument("--warmup", type=int, default=5, help="unmeasured requests per client")
    ap.add_argument(
        "--neo4j",
        help="Neo4j URI (bolt://user:pass@host:port) instead of a throwaway "
        "local server (tests/support/neo4j_server.start_local)",
    )
    ap.add_argument("--skip-neo4j", action="store_true")
    ap.add_argument("--wipe", action="store_true", help="empty the Neo4j store first")
    ap.add_argument("--skip-embedded", action="store_true")
    ap.add_argument(
        "--embedded",
        help="reuse this embedded store (embedded:PATH; filled only if "
        "it holds fewer than --observations) instead of a fresh temp one",
    )
    ap.add_argument(
        "--workload",
        type=Path,
        help="one JSON body for POST /v1/recommendations "
        "(default: the 36 benchmark x framework variants of the synthetic data, in turn)",
    )
    args = ap.parse_args()
    bodies = [json.loads(args.workload.read_text())] if args.workload else workload_bodies()

    stores: list[tuple[str, str, bool]] = []  # name, uri, wipe first
    tmp = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    if not args.skip_embedded:
        stores.append(("embedded", args.embedded or f"embedded:{tmp / 'kb'}", False))
    local = contextlib.ExitStack()
    if not args.skip_neo4j:
        if args.neo4j:
            stores.append(("neo4j", args.neo4j, args.wipe))
        else:
            from tests.support.neo4j_server import start_local

            stores.append(("neo4j", local.enter_context(start_local()), True))
    token = secrets.token_urlsafe(24)
    print(
        f"POST /v1/recommendations, {args.observations} observations, {args.clients} "
        f"concurrent clients x {args.requests} requests (+{args.warmup} warm-up), "
        f"{len(bodies)} workload(s) in turn, loopback, ADVISOR_GENERATION_TTL_S="
        f"{os.environ.get('ADVISOR_GENERATION_TTL_S', '1 (default)')}"
    )
    with local:
        for name, uri, wipe in stores:
            fill_s = fill(uri, args.observations, wipe)
            proc, url = serve(uri, token, tmp / f"serve-{name}.log")
            try:
                ms, wall, errors = drive(url, bodies, args.clients, args.requests, args.warmup)
                rss, peak = memory_mb(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            if errors:
                print(f"{name:9s} FAILED: {errors[0]}")
                continue
            p50, p99 = np.percentile(ms, 50), np.percentile(ms, 99)
            verdict = "meets" if p99 <= 50 else "misses"
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            print(
                f"{name:9s} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {ms.max():7.1f} ms  "
                f"{len(ms) / wall:6.1f} req/s  API RSS {rss:.0f} MB (peak {peak:.0f} MB)  "
                f"(n={len(ms)}, fill {fill_s:.0f} s; load avg {load}; "
                f"{verdict} the p99 <= 50 ms goal)",
                flush=True,
            )


if __name__ == "__main__":
    main()
