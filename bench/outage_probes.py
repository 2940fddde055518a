"""Probe latencies during a Neo4j outage (issue 18): the API (uvicorn, loopback) over a local
Neo4j that is killed with SIGKILL while a crowd of reads waits on it. Prints /healthz and /readyz
latencies (median and max) before and during the outage and the time to recover, without
restarting the API, after Neo4j is started again.

    python bench/outage_probes.py [--crowd 45] [--probes 20]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.api import document
from tests.support.api_process import Api
from tests.support.neo4j_server import LocalNeo4j


def probe(client: httpx.Client, url: str, n: int) -> tuple[list[float], list[int]]:
    """``n`` GETs on one kept-alive client, as the kubelet probes: building a client per request
    (an SSL context each) would time this process, not the server."""
    seconds, codes = [], []
    for _ in range(n):
        start = time.perf_counter()
        r = client.get(url, timeout=60)
        seconds.append(time.perf_counter() - start)
        codes.append(r.status_code)
    return seconds, codes


def show(label: str, seconds: list[float], codes: list[int]) -> None:
    print(
        f"{label:28s} median {statistics.median(seconds) * 1000:7.1f} ms   "
        f"max {max(seconds) * 1000:7.1f} ms   statuses {sorted(set(codes))}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowd", type=int, default=45, help="reads waiting on the dead store")
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    neo4j = LocalNeo4j()
    neo4j.start()
    with tempfile.TemporaryDirectory() as tmp:
        api = Api(neo4j.uri, tokens, Path(tmp) / "api.log").start()
        probes, shared = httpx.Client(), httpx.Client(timeout=120)  # built before any clock
        try:
            httpx.post(
                api.url + "/v1/observations",
                json=document("run-bench", n=3),
                timeout=120,
                headers={"Authorization": f"Bearer {tokens['write']}"},
            )
            show("/healthz, store up", *probe(probes, api.url + "/healthz", args.probes))
            show("/readyz, store up", *probe(probes, api.url + "/readyz", args.probes))
            neo4j.kill()
            crowd = [
                threading.Thread(target=lambda: shared.get(api.url + "/v1/observations"))
                for _ in range(args.crowd)
            ]
            for t in crowd:
                t.start()
            time.sleep(2.0)  # the crowd is waiting on the dead store
            show(
                f"/healthz, outage +{args.crowd} reads",
                *probe(probes, api.url + "/healthz", args.probes),
            )
            seconds, codes = probe(probes, api.url + "/readyz", max(3, args.probes // 4))
            show(f"/readyz, outage +{args.crowd} reads", seconds, codes)
            start = time.perf_counter()
            r = httpx.get(api.url + "/v1/observations", timeout=120)
            print(
                f"store route during outage: {r.status_code} in "
                f"{(time.perf_counter() - start) * 1000:.0f} ms, Retry-After="
                f"{r.headers.get('Retry-After')}, error={r.json().get('error')}"
            )
            for t in crowd:
                t.join(120)
            neo4j.start()
            back = time.perf_counter()
            while httpx.get(api.url + "/readyz", timeout=10).status_code != 200:
                time.sleep(0.2)
            print(
                f"ready again {time.perf_counter() - back:.1f} s after Neo4j answered bolt, "
                f"same API process: {api.proc is not None and api.proc.poll() is None}"
            )
        finally:
            probes.close()
            shared.close()
            api.stop()
            neo4j.remove()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
