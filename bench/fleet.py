"""Synthetic fleet data shaped like what the project collects: nightly sweeps on a few hundred
GPU nodes (one run per node and night: one host, one stack, one accelerator model and count,
one placement, a few dozen benchmark cells with one to three metrics each), accelerators in the
proportions of the MLPerf Inference results, stacks moving on every few weeks.

Deterministic (seeded): the same ``n`` gives the same observations in every process, so the
benches generate them instead of storing them. Labelled ``source="bench-synthetic"``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)

NODES = 300
# (model, weight, GPUs per node): roughly the mix of the MLPerf Inference v4-v5 closed results
ACCELERATORS = (
    ("H100-SXM5-80GB", 30, 8),
    ("A100-SXM4-80GB", 20, 8),
    ("L40S", 12, 4),
    ("L4", 12, 1),
    ("H200-SXM-141GB", 10, 8),
    ("A10", 8, 1),
    ("T4", 8, 1),
)
STACKS = tuple(
    SoftwareStack(driver=d, cuda=c, cudnn=n, nccl=nc, framework=f, framework_version=v)
    for d, c, n, nc in (
        ("535.161.08", "12.2", "8.9.7", "2.19.3"),
        ("550.54.15", "12.4", "9.1.0", "2.20.5"),
        ("560.35.03", "12.6", "9.5.1", "2.23.4"),
    )
    for f, v in (("pytorch", "2.3.1"), ("pytorch", "2.5.1"), ("tensorflow", "2.16.1"))
)
# benchmark cells of a nightly sweep and the metrics each reports
CELLS = (
    [
        (Benchmark(family="pi", name="gemm", parameters={"n": n, "dtype": t}), ("tflops",))
        for n in (1024, 2048, 4096, 8192, 16384)
        for t in ("fp32", "bf16", "fp16")
    ]
    + [
        (
            Benchmark(family="pi", name="allreduce", parameters={"bytes": 1 << s}),
            ("busbw_gbps", "latency_us"),
        )
        for s in (10, 14, 18, 22, 26, 30)
    ]
    + [
        (
            Benchmark(family="cnn", name=m, parameters={"batch_size": b, "precision": "fp16"}),
            ("images_per_s", "step_ms", "gpu_util"),
        )
        for m in ("resnet50", "vgg16", "mobilenet_v2")
        for b in (32, 64, 128)
    ]
    + [
        (
            Benchmark(family="mlperf-inference", name="resnet50", parameters={"scenario": s}),
            ("samples_per_s", "latency_p99_ms"),
        )
        for s in ("Offline", "Server")
    ]
)
PER_RUN = sum(len(metrics) for _, metrics in CELLS)


def runs(seed: int = 7) -> Iterator[list[Observation]]:
    """Runs in order (night by night, node by node), each as the list of its observations."""
    rng = random.Random(seed)
    weights = [w for _, w, _ in ACCELERATORS]
    nodes = []
    for i in range(NODES):
        model, _, count = rng.choices(ACCELERATORS, weights)[0]
        kind = rng.choices(
            [PlacementKind.BARE_METAL, PlacementKind.PASSTHROUGH, PlacementKind.VGPU], [80, 15, 5]
        )[0]
        placement = Placement(
            kind=kind,
            hypervisor=None if kind == PlacementKind.BARE_METAL else "kvm",
            vgpu_profile="A100-4C" if kind == PlacementKind.VGPU else None,
        )
        nodes.append(
            (
                Host(name=f"gpu-node-{i:03d}", cores=64),
                Accelerator(model=model, count=count),
                placement,
                rng.randrange(len(STACKS)),
                rng.uniform(0.5, 2.0),
            )
        )
    prov = Provenance(kind=SourceKind.MEASURED, source="bench-synthetic")
    night = 0
    while True:
        for host, acc, placement, stack_at, speed in nodes:
            stack = STACKS[(stack_at + night // 30) % len(STACKS)]
            run_id = f"sweep-{night:04d}-{host.name}"
            out = []
            for bench, metrics in CELLS:
                for metric in metrics:
                    value = speed * rng.uniform(50, 1000)
                    out.append(
                        Observation(
                            benchmark=bench,
                            metric=metric,
                            value=value,
                            unit="1",
                            samples=5,
                            cv=rng.uniform(0.005, 0.05),
                            stack=stack,
                            accelerator=acc,
                            placement=placement,
                            host=host,
                            run_id=run_id,
                            provenance=prov,
                        )
                    )
            yield out
        night += 1


def batches(n: int, size: int, seed: int = 7) -> Iterator[list[Observation]]:
    """The first ``n`` observations, in batches of ``size`` (whole runs where they fit)."""
    done, pending = 0, []
    for run in runs(seed):
        pending.extend(run[: n - done - len(pending)])
        while len(pending) >= size or (pending and done + len(pending) >= n):
            yield pending[:size]
            done += len(pending[:size])
            pending = pending[size:]
        if done >= n:
            return
