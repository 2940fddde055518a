"""Ingest throughput into each backend: observations/s for 10k and 100k observations.

The observations are synthetic (generated here, labelled source="bench-synthetic") and go only
into throw-away stores: a temporary embedded database and a scratch local Neo4j server (or the
server NEO4J_URI names — it is emptied first, so never point it at real data).

    python bench/ingest.py [--sizes 10000 100000] [--batch 10000] [--backends embedded neo4j]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graph_schema.models import (
    Accelerator,
    Benchmark,
    Host,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from graph_schema.registry import open_store

ACCELERATORS = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA A10"]
PLACEMENTS = list(PlacementKind)


def synthetic(n: int, seed: int = 7) -> list[Observation]:
    rng = random.Random(seed)
    stacks = [
        SoftwareStack(framework=f, framework_version=v, cuda=c, driver=d)
        for f, v in (("pytorch", "2.3.0"), ("pytorch", "2.4.1"), ("tensorflow", "2.15.0"))
        for c, d in (("12.1", "535.104.05"), ("12.4", "550.54.15"))
    ]
    prov = Provenance(kind=SourceKind.MEASURED, source="bench-synthetic")
    out = []
    for i in range(n):
        out.append(
            Observation(
                benchmark=Benchmark(family="pi", name="gemm", parameters={"n": 256 * (i % 32 + 1)}),
                metric="tflops",
                value=rng.uniform(10, 900),
                unit="TFLOP/s",
                samples=20,
                cv=0.02,
                stack=stacks[i % len(stacks)],
                accelerator=Accelerator(model=ACCELERATORS[i % len(ACCELERATORS)]),
                placement=Placement(kind=PLACEMENTS[i % len(PLACEMENTS)]),
                host=Host(name=f"node-{i % 64}"),
                run_id=f"run-{i // 1000}",
                provenance=prov,
                source_key=str(i),
            )
        )
    return out


def measure(store, observations: list[Observation], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(observations), batch):
        store.ingest(IngestBatch(observations=observations[i : i + batch]))
    return len(observations) / (time.perf_counter() - start)


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
            from tests.neo4j_server import start_local

            uri = stack.enter_context(start_local())
        store = open_store(uri, migrate=False)
        store.clear()
        store.ensure_schema()
        try:
            yield store
        finally:
            store.clear()
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--backends", nargs="+", default=["embedded", "neo4j"])
    args = parser.parse_args()
    data = synthetic(max(args.sizes))
    print(f"cores={os.cpu_count()} batch={args.batch} (each backend warmed up with 10k first)")
    for name in args.backends:
        with backend(name) as store:
            measure(store, data[:10_000], args.batch)  # warm the JIT/caches; a server runs warm
            for size in args.sizes:
                store.clear()
                store.ensure_schema()
                rate = measure(store, data[:size], args.batch)
                again = measure(store, data[:size], args.batch)
                load = os.getloadavg()[0]
                print(
                    f"{name:9s} n={size:>7d}  ingest {rate:8.0f} obs/s   "
                    f"re-send (no-op) {again:8.0f} obs/s   load avg {load:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
