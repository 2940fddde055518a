"""An anonymous prediction flood against a real ``advisor serve`` on loopback (issue 32), bounded in
time: while ``--clients`` anonymous clients keep posting predictions (``--queries`` each; 10 x 1,000
= 10k queries in flight by default, plus one 10k-query request per client and round), a probe
reads ``/healthz`` every 50 ms and a token holder asks for a normal recommendation every 200 ms.
Prints the p50/p99 latency of both, what the flood got back (200, 413, 503) and the load average.
The flood runs in a process of its own with its bodies encoded once, so the probes time the
server, not this script's GIL.

    python bench/flood.py [--seconds 20] [--clients 10] [--queries 1000] [--repo PATH]

``--repo`` serves another checkout (e.g. a worktree of main) for a before/after on the same
machine. The store is the starter knowledge base, seeded into a temporary XDG_DATA_HOME.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUERY = {
    "accelerator": "NVIDIA L4",
    "accelerator_count": 1,
    "placement": "bare-metal",
    "components": {"driver": "525.85.12", "cuda": "12.0", "tensorrt": "8.6.0"},
    "framework": "tensorrt",
    "benchmark": "resnet50",
    "scenario": "Offline",
    "metric": "samples_per_second",
}
RECOMMEND = {
    "workload": {"benchmark": "resnet50", "scenario": "Offline", "objective": "throughput"},
    "top": 5,
}


def _serve(repo: Path, data: Path, token: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(repo),
        "XDG_DATA_HOME": str(data),
        "ADVISOR_ENVIRONMENT": "production",
        "ADVISOR_READ_AUTH": "open",
        "ADVISOR_TOKENS": f"{token}:read",
    }
    for var in ("ADVISOR_STORE", "ADVISOR_API", "ADVISOR_TOKENS_FILE"):
        env.pop(var, None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stack_advisor.cli.main",
            "serve",
            "--port",
            "0",
            "--log-level",
            "warning",
        ],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 600  # the first start seeds the starter knowledge base
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode(errors="replace")
        if not line:
            break
        if "stack-advisor API on " in line:
            url = line.split("stack-advisor API on ", 1)[1].split()[0]
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # drain
            return proc, url
    proc.kill()
    raise SystemExit("advisor serve did not start")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _loop(
    stop: threading.Event, period_s: float, call: Any, out: list[float], errors: Counter[str]
) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        try:
            status = call()
            if status == 200:
                out.append((time.perf_counter() - start) * 1000)
            else:
                errors[str(status)] += 1
        except httpx.HTTPError as exc:
            errors[type(exc).__name__] += 1
        stop.wait(max(0.0, period_s - (time.perf_counter() - start)))


def _flooder(stop: Any, url: str, queries: int, statuses: Any) -> None:
    """One anonymous client posting ``queries`` and then 10,000 queries, in a loop. The bodies
    are encoded once: the flood must cost the server, not this process's GIL."""
    bodies = [json.dumps({"queries": [QUERY] * n}).encode() for n in (queries, 10_000)]
    headers = {"Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            for body in bodies:
                try:
                    key = str(
                        client.post("/v1/predictions", content=body, headers=headers).status_code
                    )
                except httpx.HTTPError as exc:
                    key = type(exc).__name__
                statuses[key] = statuses.get(key, 0) + 1


def _flood(stop: Any, url: str, clients: int, queries: int, statuses: Any) -> None:
    """The flood's clients, in a process of their own (the probes' latencies must not include
    waiting for the flooders' GIL)."""
    threads = [
        threading.Thread(target=_flooder, args=(stop, url, queries, statuses))
        for _ in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)


def _measure(url: str, token: str, seconds: float, clients: int, queries: int) -> dict[str, Any]:
    probe, rec = httpx.Client(base_url=url, timeout=30), httpx.Client(base_url=url, timeout=60)
    headers = {"Authorization": f"Bearer {token}"}
    warm = rec.post("/v1/recommendations", json=RECOMMEND, headers=headers)
    if warm.status_code != 200:
        raise SystemExit(f"the warm-up recommendation failed: {warm.status_code} {warm.text[:500]}")
    stop = threading.Event()
    health: list[float] = []
    recommend: list[float] = []
    errors: Counter[str] = Counter()
    manager = multiprocessing.Manager()
    flood_stop, flood = manager.Event(), manager.dict()
    flooders = multiprocessing.Process(
        target=_flood, args=(flood_stop, url, clients, queries, flood)
    )
    flooders.start()
    threads = [
        threading.Thread(
            target=_loop,
            args=(stop, 0.05, lambda: probe.get("/healthz").status_code, health, errors),
        ),
        threading.Thread(
            target=_loop,
            args=(
                stop,
                0.2,
                lambda: (
                    rec.post("/v1/recommendations", json=RECOMMEND, headers=headers).status_code
                ),
                recommend,
                errors,
            ),
        ),
    ]
    for t in threads:
        t.start()
    load_before = os.getloadavg()
    time.sleep(seconds)
    load_after = os.getloadavg()
    stop.set()
    flood_stop.set()
    for t in threads:
        t.join(180)
    flooders.join(180)
    return {
        "healthz": {
            "n": len(health),
            "p50_ms": round(statistics.median(health), 1) if health else None,
            "p99_ms": round(_percentile(health, 0.99), 1),
        },
        "recommend": {
            "n": len(recommend),
            "p50_ms": round(statistics.median(recommend), 1) if recommend else None,
            "p99_ms": round(_percentile(recommend, 0.99), 1),
        },
        "probe_errors": dict(errors),
        "flood_statuses": dict(flood),
        "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--queries", type=int, default=1_000, help="queries per flood request")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to serve")
    args = parser.parse_args()
    token = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as data:
        proc, url = _serve(args.repo.resolve(), Path(data), token)
        try:
            result = _measure(url, token, args.seconds, args.clients, args.queries)
        finally:
            proc.terminate()
            proc.wait(60)
    result.update(
        repo=str(args.repo),
        seconds=args.seconds,
        clients=args.clients,
        queries_per_request=args.queries,
        cpus=os.cpu_count(),
    )
    print(
        f"healthz   p50 {result['healthz']['p50_ms']} ms  p99 {result['healthz']['p99_ms']} ms "
        f"(n={result['healthz']['n']})"
    )
    print(
        f"recommend p50 {result['recommend']['p50_ms']} ms  p99 {result['recommend']['p99_ms']} ms "
        f"(n={result['recommend']['n']})"
    )
    print(f"flood statuses {result['flood_statuses']}  probe errors {result['probe_errors']}")
    print(f"load average (1 min) at start and end of the flood: {result['load_average_1min']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
