"""A small table of real published MLPerf Inference closed-division results of CPU-only systems
(resnet50, per socket: the result divided by the system's sockets, as the importer counts them),
written into a store as the importer would store them. Values from the MLPerf Inference v1.1,
v2.0, v3.0 and v4.1 results tables (mlcommons/inference_results_vX.Y, Intel's submissions)."""

from __future__ import annotations

from datetime import UTC, datetime

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
from stack_advisor.store.base import Store

# (round, CPU, scenario) → published per-socket samples/s of its results
RESNET50: dict[tuple[str, str, str], list[float]] = {
    ("v1.1", "Intel Xeon Gold 6330", "Offline"): [1430.0],
    ("v1.1", "Intel Xeon Platinum 8352M", "Offline"): [1451.7],
    ("v1.1", "Intel Xeon Platinum 8360Y", "Offline"): [1853.4],
    ("v1.1", "Intel Xeon Platinum 8380", "Offline"): [2039.2, 2111.7, 2051.7],
    ("v2.0", "Intel Xeon Platinum 8380", "Offline"): [1911.7, 1982.1],
    ("v3.0", "Intel Xeon Platinum 8480+", "Offline"): [10289.4, 10276.4],
    ("v4.1", "Intel Xeon 6980P", "Offline"): [22808.6],
    ("v4.1", "Intel Xeon Platinum 8592+", "Offline"): [
        12678.4,
        12741.4,
        12552.9,
        12602.2,
        11837.1,
        12821.8,
    ],
    ("v1.1", "Intel Xeon Gold 6330", "Server"): [1030.2],
    ("v1.1", "Intel Xeon Platinum 8352M", "Server"): [1015.1],
    ("v1.1", "Intel Xeon Platinum 8360Y", "Server"): [1438.2],
    ("v1.1", "Intel Xeon Platinum 8380", "Server"): [1501.1, 1713.4, 1300.5],
    ("v2.0", "Intel Xeon Platinum 8380", "Server"): [1568.7, 1623.7],
    ("v3.0", "Intel Xeon Platinum 8480+", "Server"): [8173.8, 8163.8],
    ("v4.1", "Intel Xeon 6980P", "Server"): [19899.1],
    ("v4.1", "Intel Xeon Platinum 8592+", "Server"): [11250.9, 11250.9, 11250.8, 10500.8],
}
SOCKETS = 2


def write_cpu_results(store: Store) -> int:
    """Ingest ``RESNET50`` (two-socket systems, as published); returns the number of rows."""
    rows = []
    for (rnd, cpu, scenario), values in RESNET50.items():
        for value in values:
            i = len(rows)
            metric = "samples_per_second" if scenario == "Offline" else "queries_per_second"
            rows.append(
                Observation(
                    benchmark=Benchmark(
                        family="mlperf-inference",
                        name="resnet50",
                        parameters={"scenario": scenario, "division": "closed"},
                    ),
                    metric=metric,
                    value=value * SOCKETS,
                    unit="samples/s",
                    higher_is_better=True,
                    timestamp=datetime(2021 + i % 4, 1 + i % 12, 1, tzinfo=UTC),
                    stack=SoftwareStack(framework="openvino", framework_version="2021.4"),
                    accelerator=Accelerator(model=f"CPU {cpu}", vendor="cpu", count=SOCKETS),
                    placement=Placement(kind=PlacementKind.BARE_METAL),
                    provenance=Provenance(
                        kind=SourceKind.PUBLISHED,
                        source="mlperf-inference",
                        details={
                            "round": rnd,
                            "division": "closed",
                            "submitter": "Intel",
                            "system": f"cpu-{i}",
                        },
                    ),
                    source_key=f"cpu-results-{i}",
                )
            )
    store.ingest(IngestBatch(observations=rows))
    return len(rows)
