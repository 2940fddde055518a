"""The one declarative graph schema.

Neo4j constraints/indexes and the embedded engine's DDL are both generated from ``NODES`` and
``RELATIONSHIPS`` below; queries use only the labels, properties and relationship types named
here. Bump ``SCHEMA_VERSION`` and add a migration in ``store.migrations`` when this changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

SCHEMA_VERSION = 9


class PropType(str, Enum):
    STRING = "STRING"
    INT = "INT64"
    FLOAT = "DOUBLE"
    BOOL = "BOOLEAN"
    TIMESTAMP = "STRING"  # ISO-8601 UTC text: sorts correctly and is identical on both engines


@dataclass(frozen=True)
class NodeSpec:
    label: str
    key: str
    properties: dict[str, PropType]
    indexed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.key not in self.properties:
            raise ValueError(f"{self.label}: key {self.key!r} is not among its properties")
        for name in self.indexed:
            if name not in self.properties:
                raise ValueError(f"{self.label}: indexed {name!r} is not among its properties")


@dataclass(frozen=True)
class RelSpec:
    type: str
    source: str
    target: str
    properties: dict[str, PropType] = field(default_factory=dict)


# one letter per type keeps the tables below readable as tables
S, I, F, B, T = PropType.STRING, PropType.INT, PropType.FLOAT, PropType.BOOL, PropType.TIMESTAMP  # noqa: E741

STACK = NodeSpec(
    "Stack",
    "stack_id",
    {
        "stack_id": S,
        "driver": S,
        "cuda": S,
        "cudnn": S,
        "nccl": S,
        "tensorrt": S,
        "framework": S,
        "framework_version": S,
        "python": S,
        "extra_json": S,
        "image": S,
        "raw": S,
        "label": S,
    },
    indexed=("framework", "cuda", "driver"),
)
COMPONENT = NodeSpec(
    "Component",
    "component_id",
    {"component_id": S, "name": S, "version": S},
    indexed=("name",),
)
ACCELERATOR = NodeSpec(
    "Accelerator",
    "model",
    {"model": S, "vendor": S, "memory_mib": I, "compute_capability": S},
)
HOST = NodeSpec(
    "Host",
    "name",
    {
        "name": S,
        "cpu_model": S,
        "cores": I,
        "cpu_flags_json": S,
        "numa_nodes": I,
        "memory_mib": I,
        "os": S,
        "kernel": S,
        "labels_json": S,
        # schema v8: whether the topology was seen from a VM guest, and its evidence (JSON); the
        # NUMA nodes and device attachments themselves are nodes of their own
        "topology_json": S,
    },
)
# Placement inside a host (schema v8): its NUMA nodes, and where each GPU and NIC is attached.
# Keys are "<host>/numa<N>" and "<host>/<pci address>"; a host's topology is replaced whole when a
# document brings a new one (stack_advisor.store.topology_store).
NUMA_NODE = NodeSpec(
    "NumaNode",
    "numa_id",
    {
        "numa_id": S,
        "host": S,
        "node": I,
        "cpus": S,
        "cpu_count": I,
        "memory_mib": I,
        "distances_json": S,
    },
    indexed=("host",),
)
DEVICE_ATTACHMENT = NodeSpec(
    "DeviceAttachment",
    "attachment_id",
    {
        "attachment_id": S,
        "host": S,
        "kind": S,  # gpu | nic
        "device_index": I,
        "name": S,
        "pci_address": S,
        "numa_node": I,
        "cpu_affinity": S,
        "links_json": S,
        "source": S,
    },
    indexed=("host",),
)
PLACEMENT = NodeSpec(
    "Placement",
    "placement_id",
    {"placement_id": S, "kind": S, "hypervisor": S, "vgpu_profile": S},
    indexed=("kind",),
)
BENCHMARK = NodeSpec(
    "Benchmark",
    "benchmark_id",
    {"benchmark_id": S, "family": S, "name": S, "parameters_json": S},
    indexed=("family", "name"),
)
RUN = NodeSpec(
    "Run",
    "run_id",
    {
        "run_id": S,
        "started_at": T,
        "finished_at": T,
        "collector": S,
        "collector_version": S,
        "run_profile": S,
    },
)
# A published submission (schema v8): one system's results in one round of a benchmark suite, as
# its submitter published them. Observations from it link to it (IN_SUBMISSION), whichever suite
# (MLPerf Inference, MLPerf Training); our own measurements have none. The observation's
# provenance keeps the same coordinates among its details, as before.
SUBMISSION = NodeSpec(
    "Submission",
    "submission_id",
    {
        "submission_id": S,  # <source>:<round>/<division>/<submitter>/<system>
        "source": S,  # the provenance source: mlperf-inference, mlperf-training, ...
        "round": S,
        "division": S,
        "submitter": S,
        "system": S,  # the submitter's system id
    },
    indexed=("round", "submitter"),
)
# Where and how observations were measured: everything that rows of one run on one node share
# (stack, accelerator and count, placement, host, run, source). Each observation links to one
# context instead of to five neighbours and carries none of these properties itself (schema v5):
# a sweep writes a few contexts and thousands of observations, and Neo4j's ingest cost was the
# relationships and properties per observation.
CONTEXT = NodeSpec(
    "Context",
    "context_id",
    {
        "context_id": S,
        # denormalised copies of the neighbours' keys: filters without traversals
        "stack_id": S,
        "accelerator": S,
        "accelerator_count": I,
        "placement_id": S,
        "placement_kind": S,
        "host": S,
        "run_id": S,
        "source_kind": S,
        "source": S,
        "placement_evidence_json": S,
        "placement_consistent": B,
        # the data generation of the last batch that added observations to it (schema v6): what
        # changed since a generation is found from the few contexts stamped after it
        "generation": I,
    },
    indexed=("generation",),
)
OBSERVATION = NodeSpec(
    "Observation",
    "key",
    {
        "key": S,
        "metric": S,
        "value": F,
        "unit": S,
        "higher_is_better": B,
        "samples": I,
        "p10": F,
        "p90": F,
        "stddev": F,
        "cv": F,
        "valid": B,
        "note": S,
        "timestamp": T,
        "source_url": S,
        "source_key": S,
        "provenance_json": S,
        # the data generation of the batch that wrote it (schema v6; none before): a cache of
        # the table at generation G adds what ``Store.observations_since(G)`` returns
        "generation": I,
    },
    # No range indexes: every read either scans all observations (the advisor's table) or filters
    # with ``($x = '' OR o.x = $x)``, which Neo4j cannot answer from an index, and each index
    # roughly halved Neo4j's ingest rate. Schema v3 dropped the six that v1 had.
)
# What an observation carried itself before schema v5 (its context now has them); the v5
# migration moves them out.
LEGACY_OBSERVATION_PROPERTIES = (
    "stack_id",
    "accelerator",
    "accelerator_count",
    "placement_id",
    "placement_kind",
    "host",
    "run_id",
    "source_kind",
    "source",
    "placement_evidence_json",
    "placement_consistent",
    "benchmark_id",
)
# Columns added to a table after its first version: the embedded engine's ``CREATE ... IF NOT
# EXISTS`` leaves an existing table as it was, so its DDL adds these (Neo4j needs nothing).
ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Context", "generation"),
    ("Observation", "generation"),
    ("Host", "topology_json"),
)
LEGACY_OBSERVATION_RELATIONSHIPS = (
    "ON_STACK",
    "ON_ACCELERATOR",
    "IN_PLACEMENT",
    "ON_HOST",
    "IN_RUN",
)
FAILURE = NodeSpec(
    "Failure",
    "key",
    {
        "key": S,
        "stage": S,
        "error_class": S,
        "message": S,
        "log_tail": S,
        "timestamp": T,
        "run_id": S,
        "stack_id": S,
        "accelerator": S,
        "placement_id": S,
        "benchmark_id": S,
        "host": S,
        "source": S,
    },
    indexed=("stack_id", "accelerator"),
)
CLUSTER_NODE = NodeSpec(
    "ClusterNode",
    "node_key",
    {
        "node_key": S,  # <cluster>/<node name>
        "cluster": S,
        "name": S,
        "pool": S,
        "accelerator": S,
        "placement_kind": S,
        "driver": S,
        "node_json": S,  # stack_advisor.schema.inventory.ClusterNode, as synced
        "synced_at": T,
    },
    indexed=("cluster", "accelerator"),
)
SCHEMA_INFO = NodeSpec(
    "SchemaInfo",
    "name",
    {"name": S, "version": I, "generation": I, "applied_at": T},
)

NODES: tuple[NodeSpec, ...] = (
    STACK,
    COMPONENT,
    ACCELERATOR,
    HOST,
    NUMA_NODE,
    DEVICE_ATTACHMENT,
    PLACEMENT,
    BENCHMARK,
    RUN,
    SUBMISSION,
    CONTEXT,
    OBSERVATION,
    FAILURE,
    CLUSTER_NODE,
    SCHEMA_INFO,
)

RELATIONSHIPS: tuple[RelSpec, ...] = (
    RelSpec("HAS_COMPONENT", "Stack", "Component"),
    RelSpec("OF_BENCHMARK", "Observation", "Benchmark"),
    RelSpec("MEASURED_IN", "Observation", "Context"),
    RelSpec("IN_SUBMISSION", "Observation", "Submission"),
    RelSpec("USES_STACK", "Context", "Stack"),
    RelSpec("USES_ACCELERATOR", "Context", "Accelerator"),
    RelSpec("USES_PLACEMENT", "Context", "Placement"),
    RelSpec("USES_HOST", "Context", "Host"),
    RelSpec("PART_OF_RUN", "Context", "Run"),
    RelSpec("FAILED_ON_STACK", "Failure", "Stack"),
    RelSpec("FAILED_ON_ACCELERATOR", "Failure", "Accelerator"),
    RelSpec("FAILED_IN_PLACEMENT", "Failure", "Placement"),
    RelSpec("FAILED_BENCHMARK", "Failure", "Benchmark"),
    RelSpec("FAILED_ON_HOST", "Failure", "Host"),
    RelSpec("HAS_NUMA_NODE", "Host", "NumaNode"),
    RelSpec("HAS_DEVICE", "Host", "DeviceAttachment"),
    RelSpec("ATTACHED_TO", "DeviceAttachment", "NumaNode"),
)

NODE_BY_LABEL = {spec.label: spec for spec in NODES}

# Neo4j indexes an earlier schema version created and this one no longer declares.
RETIRED_NEO4J_INDEXES = tuple(
    f"observation_{prop}"
    for prop in ("metric", "source", "stack_id", "accelerator", "placement_kind", "benchmark_id")
)
