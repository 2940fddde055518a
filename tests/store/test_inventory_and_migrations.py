"""Node inventory storage and schema migrations, on every backend."""

from __future__ import annotations

import pytest

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.store.migrations import MIGRATIONS, pending
from tests.support.samples import cluster_node


def test_sync_replaces_one_clusters_inventory(store):
    gen = store.stats().generation
    assert store.sync_inventory("prod", [cluster_node("n1"), cluster_node("n2")]) == 2
    assert store.sync_inventory("lab", [cluster_node("l1", "NVIDIA L4")]) == 1
    assert store.stats().generation > gen
    assert [n["name"] for n in store.list_inventory("prod")] == ["n1", "n2"]
    assert (
        store.sync_inventory("prod", [cluster_node("n3")]) == 1
    )  # n1, n2 are gone from the cluster
    assert [n["name"] for n in store.list_inventory()] == ["l1", "n3"]
    assert store.list_inventory("prod")[0] == cluster_node("n3")
    with pytest.raises(InvalidInput, match="appears twice"):
        store.sync_inventory("prod", [cluster_node("x"), cluster_node("x")])
    assert [n["name"] for n in store.list_inventory("prod")] == ["n3"]


def test_an_older_store_is_migrated_in_place(store):
    store._write(lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 1", {}))
    assert store.schema_version() == 1
    assert [m.version for m in pending(1)] == [m.version for m in MIGRATIONS if m.version > 1]
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.schema_version() == SCHEMA_VERSION
    assert store.sync_inventory("c", [cluster_node("a")]) == 1


@pytest.mark.neo4j
def test_v3_drops_the_observation_indexes_a_v1_store_has(neo4j_store):
    neo4j_store._driver.execute_query(
        "CREATE INDEX observation_metric IF NOT EXISTS FOR (n:Observation) ON (n.metric)"
    )
    neo4j_store._write(
        lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 1", {})
    )
    assert neo4j_store.ensure_schema() == SCHEMA_VERSION
    names = {r["name"] for r in neo4j_store._read("SHOW INDEXES YIELD name RETURN name", {})}
    assert "observation_metric" not in names and "observation_key_unique" in names


def test_v4_re_resolves_stored_names_without_a_re_import(store):
    """A v3 store holds names as sources wrote them; migrating to v4 rewrites them in catalogue
    names (the raw one kept as provenance), drops the orphaned Accelerator nodes and rebuilds
    stack labels — on every backend."""
    from stack_advisor.schema.models import IngestBatch
    from tests.support.samples import TORCH, make_obs

    raw_stack = TORCH.model_copy(
        update={
            "framework": "tensorrt",
            "framework_version": "8.6.0",
            "tensorrt": "8.6.0",
            "cudnn": "91900",
        }
    )
    raw = [
        make_obs(1, acc="NVIDIA H100 80GB HBM3"),
        make_obs(2, acc="NVIDIA H100-SXM-80GB-02", stack=raw_stack),
        make_obs(3, acc="Tesla T4"),
        make_obs(4, acc="Foo GPU 9000"),
    ]
    store._ingest(IngestBatch(observations=raw))  # as a v3 store wrote them: no catalogue
    store._write(
        lambda run: run(
            "MATCH (s:Stack) SET s.label = 'tensorrt 8.6.0, cuda 12.1, tensorrt 8.6.0'", {}
        )
    )
    store._write(lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 3", {}))
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.migration_report[4]["observations_rewritten"] == 3
    back = {o.source_key: o for o in store.query_observations()}
    assert len(back) == 4
    assert back["1"].accelerator.model == back["2"].accelerator.model == "H100-SXM5-80GB"
    assert back["2"].provenance.details["accelerator_raw"] == "NVIDIA H100-SXM-80GB-02"
    assert back["2"].stack.cudnn == "9.19.0"
    assert back["3"].accelerator.model == "T4"
    assert back["4"].accelerator.model == "Foo GPU 9000"  # unresolved: kept as written
    assert all(o.key == o.observation_key for o in back.values())
    models = {a["model"] for a in store.list_entities("accelerators")}
    assert models == {"H100-SXM5-80GB", "T4", "Foo GPU 9000"}
    labels = {s["label"] for s in store.list_entities("stacks")}
    assert not any(label.count("tensorrt") > 1 for label in labels)
    assert store.ensure_schema() == SCHEMA_VERSION  # idempotent


_LEGACY_EDGES = {
    "ON_STACK": ("USES_STACK", "Stack"),
    "ON_ACCELERATOR": ("USES_ACCELERATOR", "Accelerator"),
    "IN_PLACEMENT": ("USES_PLACEMENT", "Placement"),
    "ON_HOST": ("USES_HOST", "Host"),
    "IN_RUN": ("PART_OF_RUN", "Run"),
}


def _as_v4(store) -> None:
    """Rewrite a v5 graph in the v4 shape: contexts folded back into every observation (its
    properties and five edges), no Context nodes — what a store written before v5 holds."""
    from stack_advisor.schema.graph import CONTEXT, LEGACY_OBSERVATION_PROPERTIES

    def run(q: str) -> object:
        return store._write(lambda r: r(q, {}))

    if store.uri.startswith("embedded:"):  # the v4 tables had these columns and relationships
        for prop in LEGACY_OBSERVATION_PROPERTIES:
            ptype = CONTEXT.properties.get(prop, "STRING")
            run(f"ALTER TABLE Observation ADD {prop} {getattr(ptype, 'value', ptype)}")
        for rel, (_, target) in _LEGACY_EDGES.items():
            run(f"CREATE REL TABLE {rel}(FROM Observation TO {target})")
    copies = ", ".join(
        f"o.{p} = c.{p}" for p in LEGACY_OBSERVATION_PROPERTIES if p != "benchmark_id"
    )
    run(f"MATCH (o:Observation)-[:MEASURED_IN]->(c:Context) SET {copies}")
    run("MATCH (o:Observation)-[:OF_BENCHMARK]->(b:Benchmark) SET o.benchmark_id = b.benchmark_id")
    for rel, (new, target) in _LEGACY_EDGES.items():
        run(
            "MATCH "
            f"(o:Observation)-[:MEASURED_IN]->(:Context)-[:{new}]->(x:{target}) "
            f"CREATE (o)-[:{rel}]->(x)"
        )
    run("MATCH (c:Context) DETACH DELETE c")
    run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 4")


def test_v5_moves_observation_contexts_out_without_a_re_import(store):
    """A v4 store (every observation with its own copies and five edges) migrated to v5 answers
    the same, holds one Context per run/node/stack instead, and is idempotent."""
    from stack_advisor.schema.models import IngestBatch
    from stack_advisor.store.migrations import move_to_contexts
    from tests.support.samples import TF, make_obs

    obs = [
        make_obs(1),
        make_obs(2),
        make_obs(3, host=None, run_id=None),
        make_obs(4, stack=TF, acc="T4"),
    ]
    store.ingest(IngestBatch(observations=obs))
    before = [o.model_dump() for o in store.query_observations()]
    _as_v4(store)
    assert store._read("MATCH (c:Context) RETURN count(c) AS c", {})[0]["c"] == 0
    assert store.query_observations() == []  # the v5 query needs contexts
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.migration_report[5] == {"observations_moved_to_contexts": 4, "contexts_created": 3}
    assert [o.model_dump() for o in store.query_observations()] == before
    assert (
        store._read("MATCH (o:Observation)-[r:ON_STACK]->() RETURN count(r) AS c", {})[0]["c"] == 0
    )
    assert (
        store._read("MATCH (o:Observation) WHERE o.stack_id IS NOT NULL RETURN count(o) AS c", {})[
            0
        ]["c"]
        == 0
    )
    assert move_to_contexts(store) == {"observations_moved_to_contexts": 0, "contexts_created": 0}
    assert store.ingest(IngestBatch(observations=obs)).observations_new == 0  # same keys


def test_v6_adds_generation_stamps_to_a_v5_store_and_stamps_what_comes_after(store):
    """A v5 store (no stamps; embedded: no such columns) migrated to v6 keeps its observations
    unstamped (older than any cache built after the migration) and stamps every later batch."""
    from stack_advisor.schema.models import IngestBatch
    from tests.support.samples import TF, make_obs

    store.ingest(IngestBatch(observations=[make_obs(1), make_obs(2, stack=TF)]))
    before = [o.model_dump(exclude={"generation"}) for o in store.query_observations()]

    def run(q: str) -> object:
        return store._write(lambda r: r(q, {}))

    if store.uri.startswith("embedded:"):  # the v5 tables had no such columns
        run("ALTER TABLE Observation DROP generation")
        run("ALTER TABLE Context DROP generation")
    else:
        run("MATCH (n) WHERE n:Observation OR n:Context REMOVE n.generation")
    run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 5")
    assert store.ensure_schema() == SCHEMA_VERSION
    migrated = store.query_observations()
    assert [o.model_dump(exclude={"generation"}) for o in migrated] == before
    assert {o.generation for o in migrated} == {None}
    generation = store.stats().generation
    assert list(store.observations_since(0)) == []  # unstamped: before every stamp
    store.ingest(
        IngestBatch(observations=[make_obs(3), make_obs(4, stack=TF)])
    )  # into the old contexts
    assert sorted(o.source_key for o in store.observations_since(generation)) == ["3", "4"]
    assert store.ensure_schema() == SCHEMA_VERSION  # idempotent


def test_v9_links_published_observations_of_an_older_store_to_submissions(store):
    """A v7 store (no Submission nodes; embedded: not even the tables) migrated to v8: every
    published observation links to its submission, measured ones to none, reads return what
    they returned before, and running the step again changes nothing."""
    from stack_advisor.schema.models import IngestBatch, Provenance, SourceKind
    from stack_advisor.store.migrations import link_submissions
    from tests.support.samples import TF, make_obs

    def published(i: int, system: str) -> object:
        details = {"round": "v5.0", "division": "closed", "submitter": "Acme", "system_id": system}
        return make_obs(
            i,
            source=Provenance(
                kind=SourceKind.PUBLISHED, source="mlperf-inference", details=details
            ),
        )

    store.ingest(
        IngestBatch(
            observations=[
                published(1, "a"),
                published(2, "a"),
                published(3, "b"),
                make_obs(4, stack=TF),
            ]
        )
    )
    before = [o.model_dump() for o in store.query_observations()]

    def run(q: str) -> object:
        return store._write(lambda r: r(q, {}))

    if store.uri.startswith("embedded:"):  # the v7 schema had no such tables
        run("DROP TABLE IN_SUBMISSION")
        run("DROP TABLE Submission")
    else:
        run("MATCH (s:Submission) DETACH DELETE s")
    run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 7")
    assert store.ensure_schema() == SCHEMA_VERSION
    assert store.migration_report[9] == {
        "observations_linked_to_submissions": 3,
        "submissions_created": 2,
    }
    assert [o.model_dump() for o in store.query_observations()] == before
    edges = store._read(
        "MATCH (o:Observation)-[:IN_SUBMISSION]->(s:Submission) "
        "RETURN o.source_key AS key, s.system AS system ORDER BY key",
        {},
    )
    assert [(e["key"], e["system"]) for e in edges] == [("1", "a"), ("2", "a"), ("3", "b")]
    assert link_submissions(store) == {
        "observations_linked_to_submissions": 0,
        "submissions_created": 0,
    }
