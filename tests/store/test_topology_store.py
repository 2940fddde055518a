"""A host's topology through the store (schema v8), on every backend: written with a collector's
document, read back equal, replaced by the next one, left alone by documents without one, and
the migration that adds it (v8)."""

from __future__ import annotations

from pathlib import Path

from stack_advisor.collectors.fingerprint.topology import topology_of_tree
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.schema.models import Host, IngestBatch
from tests.support.samples import make_obs as _obs

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


def _with_topology(i: int, tree: str, host: str = "node-a"):  # -> Observation
    obs = _obs(i, host=host)
    obs.host = Host(name=host, cpu_model="Xeon", cores=224, topology=topology_of_tree(DATA / tree))
    return obs


def test_topology_round_trips_and_is_replaced(store) -> None:
    store.ingest(IngestBatch(observations=[_with_topology(1, "dgx-h100-8gpu")]))
    stored = store.host_topology("node-a")
    assert stored == topology_of_tree(DATA / "dgx-h100-8gpu")
    assert [g.numa_node for g in stored.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    edges = store._read(
        "MATCH (d:DeviceAttachment)-[:ATTACHED_TO]->(n:NumaNode {node: 1}) "
        "WHERE d.kind = 'gpu' RETURN count(d) AS c",
        {},
    )
    assert edges[0]["c"] == 4
    # a document without a topology leaves the stored one alone
    store.ingest(IngestBatch(observations=[_obs(2, host="node-a")]))
    assert store.host_topology("node-a") == stored
    # a new topology replaces the old one whole
    store.ingest(IngestBatch(observations=[_with_topology(3, "single-gpu-1numa")]))
    replaced = store.host_topology("node-a")
    assert len(replaced.numa_nodes) == 1 and len(replaced.gpus) == 1
    counts = store.stats().counts
    assert counts["NumaNode"] == 1 and counts["DeviceAttachment"] == 2


def test_two_hosts_keep_their_own_and_unknown_hosts_have_none(store) -> None:
    store.ingest(
        IngestBatch(
            observations=[
                _with_topology(1, "dgx-h100-8gpu", "h100-a"),
                _with_topology(2, "dgx-a100-2gpu-slurm", "a100-b"),
            ]
        )
    )
    a100 = store.host_topology("a100-b")
    assert len(a100.numa_nodes) == 8 and [g.index for g in a100.gpus][:2] == [0, 1]
    assert len(store.host_topology("h100-a").gpus) == 8
    assert store.host_topology("nowhere") is None


def test_v8_migrates_an_older_store(store) -> None:
    store.ingest(IngestBatch(observations=[_obs(1)]))

    def run(q: str) -> object:
        return store._write(lambda r: r(q, {}))

    if store.uri.startswith("embedded:"):  # v6 had neither the tables nor the column
        for rel in ("HAS_NUMA_NODE", "HAS_DEVICE", "ATTACHED_TO"):
            run(f"DROP TABLE {rel}")
        run("DROP TABLE NumaNode")
        run("DROP TABLE DeviceAttachment")
        run("ALTER TABLE Host DROP topology_json")
    run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 6")
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.host_topology("node-a") is None  # written before v8: no topology
    store.ingest(IngestBatch(observations=[_with_topology(2, "dgx-h100-8gpu")]))
    assert len(store.host_topology("node-a").gpus) == 8
    assert store.ensure_schema() == SCHEMA_VERSION  # idempotent
