"""Node inventory storage and schema migrations, on every backend."""

from __future__ import annotations

import pytest

from graph_schema.errors import InvalidInput
from graph_schema.migrations import MIGRATIONS, pending
from graph_schema.schema import SCHEMA_VERSION


def _node(name: str, model: str = "NVIDIA A100-SXM4-80GB") -> dict:
    return {
        "name": name,
        "pool": "a100",
        "host": {"name": name, "labels": {"nvidia.com/gpu.product": model}},
        "accelerator": {"model": model, "count": 8},
        "placement": {"kind": "bare-metal", "evidence": ["no HYPERVISOR cpuid label"]},
        "driver": "550.54.15",
    }


def test_sync_replaces_one_clusters_inventory(store):
    gen = store.stats().generation
    assert store.sync_inventory("prod", [_node("n1"), _node("n2")]) == 2
    assert store.sync_inventory("lab", [_node("l1", "NVIDIA L4")]) == 1
    assert store.stats().generation > gen
    assert [n["name"] for n in store.list_inventory("prod")] == ["n1", "n2"]
    assert store.sync_inventory("prod", [_node("n3")]) == 1  # n1, n2 are gone from the cluster
    assert [n["name"] for n in store.list_inventory()] == ["l1", "n3"]
    assert store.list_inventory("prod")[0] == _node("n3")
    with pytest.raises(InvalidInput, match="appears twice"):
        store.sync_inventory("prod", [_node("x"), _node("x")])
    assert [n["name"] for n in store.list_inventory("prod")] == ["n3"]


def test_an_older_store_is_migrated_in_place(store):
    store._write(lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 1", {}))
    assert store.schema_version() == 1
    assert [m.version for m in pending(1)] == [m.version for m in MIGRATIONS if m.version > 1]
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.schema_version() == SCHEMA_VERSION
    assert store.sync_inventory("c", [_node("a")]) == 1


@pytest.mark.neo4j
def test_v3_drops_the_observation_indexes_a_v1_store_has(neo4j_store):
    neo4j_store._driver.execute_query(
        "CREATE INDEX observation_metric IF NOT EXISTS FOR (n:Observation) ON (n.metric)"
    )
    neo4j_store._write(lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 1", {}))
    assert neo4j_store.ensure_schema() == SCHEMA_VERSION
    names = {r["name"] for r in neo4j_store._read("SHOW INDEXES YIELD name RETURN name", {})}
    assert "observation_metric" not in names and "observation_key_unique" in names
