"""Latency of ``Advisor.recommend`` over a large knowledge base, warm, in both graph stores.

Fills a fresh store (a temp embedded store; a throwaway local Neo4j from
``tests/support/neo4j_server.start_local()``, or the URI you give, wiped first only with --wipe)
with N synthetic observations (source ``bench-synthetic``, the same generator as
bench/api_latency.py: load for the benchmark, not knowledge), then times: the first call (table
load and model fit), and R warm calls cycling through several workloads (different benchmarks,
parameters, objectives and constraints). Prints p50/p90/max per store twice: every answer computed
(the advisor's answer memo off), and with the memo on (what a repeated question costs: the
generation read + a copy).

    python bench/recommend_latency.py                   # embedded + local Neo4j, 100k observations
    python bench/recommend_latency.py --skip-neo4j
    python bench/recommend_latency.py --neo4j bolt://neo4j:pw@host:7687 --wipe
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORKLOADS: list[dict[str, Any]] = [
    {
        "family": "cnn",
        "benchmark": "resnet50",
        "parameters": {"batch_size": 64, "precision": "fp16"},
    },
    {"family": "cnn", "benchmark": "vgg16", "parameters": {"batch_size": 32}, "objective": "cost"},
    {
        "family": "cnn",
        "benchmark": "mobilenet_v2",
        "frameworks": [{"name": "pytorch", "version": ">=2.3"}],
    },
    {
        "family": "cnn",
        "benchmark": "resnet50",
        "hardware": {"placements": ["bare-metal", "vgpu"], "accelerators": ["A100", "H100"]},
    },
    {
        "family": "cnn",
        "benchmark": "vgg16",
        "parameters": {"precision": "fp32"},
        "hardware": {"driver": "535.161.08"},
    },
]


def _synthetic(n: int) -> list[Any]:
    spec = importlib.util.spec_from_file_location("api_latency", ROOT / "bench" / "api_latency.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic(n)  # type: ignore[no-any-return]


def fill(store: Any, n: int) -> float:
    from stack_advisor.schema.models import IngestBatch

    start = time.perf_counter()
    obs = _synthetic(n)
    for i in range(0, n, 5000):
        store.ingest(IngestBatch(observations=obs[i : i + 5000]))
    return time.perf_counter() - start


def measure(name: str, store: Any, n: int, repeats: int) -> None:
    from stack_advisor.advisor.engine import Advisor

    os.environ.setdefault(
        "ADVISOR_CALIBRATION_CACHE", "0"
    )  # time a real calibration, not the disk cache
    fill_s = fill(store, n) if store.stats().counts.get("Observation", 0) < n else 0.0
    count = store.stats().counts.get("Observation", 0)
    advisor = Advisor(store, memo_answers=False)
    t0 = time.perf_counter()
    advisor.table()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    advisor.recommend(WORKLOADS[0], top=5)
    first_s = time.perf_counter() - t0
    print(
        f"{name:9s} {count} observations: table load {load_s:.1f} s, first call (+fit) "
        f"{first_s:.1f} s, fill {fill_s:.0f} s"
    )
    for w in WORKLOADS:  # each workload once, so warm means warm
        advisor.recommend(w, top=5)
    for label, memo in (("computed", False), ("memoised", True)):
        advisor.memo_answers = memo
        ms = []
        for i in range(repeats):
            t0 = time.perf_counter()
            result = advisor.recommend(WORKLOADS[i % len(WORKLOADS)], top=5)
            ms.append((time.perf_counter() - t0) * 1000)
            assert result.recommendations, f"no recommendation for {WORKLOADS[i % len(WORKLOADS)]}"
        arr = np.asarray(ms)
        p50, p90 = np.percentile(arr, 50), np.percentile(arr, 90)
        verdict = "meets" if p90 <= 200 else "misses"
        print(
            f"{name:9s}   warm recommend, {label:8s}: p50 {p50:6.1f} ms  p90 {p90:6.1f} ms  "
            f"max {arr.max():6.1f} ms (n={len(arr)}; {verdict} the <= 200 ms goal)"
        )


@contextlib.contextmanager
def neo4j_uri(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    from tests.support.neo4j_server import start_local

    with start_local() as uri:
        yield uri


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--observations", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=50, help="warm calls per store")
    ap.add_argument("--neo4j", help="Neo4j URI to use instead of a throwaway local server")
    ap.add_argument("--wipe", action="store_true", help="empty the given Neo4j first")
    ap.add_argument("--skip-embedded", action="store_true")
    ap.add_argument(
        "--embedded",
        help="reuse this embedded store (embedded:PATH; filled only if "
        "it holds fewer than --observations) instead of a fresh temp one",
    )
    ap.add_argument("--skip-neo4j", action="store_true")
    args = ap.parse_args()
    from stack_advisor.store.registry import open_store

    print(
        f"Advisor.recommend, {args.observations} synthetic observations, top 5, "
        f"{len(WORKLOADS)} workloads cycled"
    )
    if not args.skip_embedded:
        with (
            tempfile.TemporaryDirectory(prefix="advisor-bench-") as tmp,
            open_store(args.embedded or f"embedded:{Path(tmp) / 'kb'}") as store,
        ):
            store.ensure_schema()
            measure("embedded", store, args.observations, args.repeats)
    if not args.skip_neo4j:
        with neo4j_uri(args.neo4j) as uri, open_store(uri) as store:
            store.ensure_schema()
            if args.wipe or not args.neo4j:
                store.clear()
            measure("neo4j", store, args.observations, args.repeats)


if __name__ == "__main__":
    main()
