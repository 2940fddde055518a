"""Sample observations and inventory nodes the store, migration and concurrency tests share."""

from __future__ import annotations

from datetime import UTC, datetime

from stack_advisor.schema.models import (
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

MEASURED = Provenance(kind=SourceKind.MEASURED, source="stack-advisor-collector")
PUBLISHED = Provenance(
    kind=SourceKind.PUBLISHED, source="mlperf-inference", details={"round": "v3.0"}
)
TORCH = SoftwareStack(
    framework="pytorch", framework_version="2.3.0", cuda="12.1", cudnn="8.9.2", driver="535.104.05"
)
TF = SoftwareStack(framework="tensorflow", framework_version="2.15.0", cuda="12.2")
WHEN = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def make_obs(
    i: int,
    *,
    stack: SoftwareStack = TORCH,
    acc: str = "H100-SXM5-80GB",
    placement: PlacementKind = PlacementKind.BARE_METAL,
    source: Provenance = MEASURED,
    host: str | None = "node-a",
    run_id: str | None = "run-1",
    metric: str = "tflops",
    value: float | None = None,
) -> Observation:
    return Observation(
        benchmark=Benchmark(
            family="pi", name="gemm", parameters={"n": 1024 * (i % 4 + 1), "dtype": "bf16"}
        ),
        metric=metric,
        value=100.0 + i if value is None else value,
        unit="TFLOP/s",
        samples=10,
        p10=99.0 + i,
        p90=101.0 + i,
        cv=0.01,
        stack=stack,
        accelerator=Accelerator(model=acc, vendor="nvidia", count=1, memory_mib=81559),
        placement=Placement(kind=placement, evidence=["nvml: NONE", "no hypervisor flag"]),
        host=Host(name=host, cpu_model="Xeon", cores=16, labels={"pool": "h100"}) if host else None,
        run_id=run_id,
        provenance=source,
        source_key=str(i),
        timestamp=WHEN,
    )


def cluster_node(name: str, model: str = "NVIDIA A100-SXM4-80GB") -> dict:
    return {
        "name": name,
        "pool": "a100",
        "host": {"name": name, "labels": {"nvidia.com/gpu.product": model}},
        "accelerator": {"model": model, "count": 8},
        "placement": {"kind": "bare-metal", "evidence": ["no HYPERVISOR cpuid label"]},
        "driver": "550.54.15",
    }


WRITERS = 8


def overlapping_batches(
    writers: int = WRITERS, per_writer: int = 4, size: int = 60, distinct: int = 200
) -> list[list[IngestBatch]]:
    """Each writer's batches: windows over ``distinct`` observations that overlap the other
    writers' (the same keys, stacks, hosts and accelerators written at the same time), and
    several stacks and hosts so writers contend on dimension nodes too."""
    from stack_advisor.schema.models import SoftwareStack

    stacks = [
        SoftwareStack(framework="torch", framework_version=f"2.{v}.0", cuda="12.4")
        for v in range(3)
    ]
    out = []
    for w in range(writers):
        mine = []
        for b in range(per_writer):
            start = (w * 37 + b * 53) % distinct
            ids = [(start + k) % distinct for k in range(size)]
            mine.append(
                IngestBatch(
                    observations=[
                        make_obs(i, stack=stacks[i % 3], host=f"node-{i % 5}") for i in ids
                    ]
                )
            )
        out.append(mine)
    return out
