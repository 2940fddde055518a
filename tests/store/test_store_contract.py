"""The store contract: every test runs on every backend (embedded, a real Neo4j server, and the
REST store over our own API served on loopback over an embedded store)."""

from __future__ import annotations

import pytest

from stack_advisor.schema.errors import InvalidInput, NotFound, SchemaMismatch
from stack_advisor.schema.graph import SCHEMA_VERSION
from stack_advisor.schema.models import (
    Accelerator,
    EntityKind,
    Failure,
    Host,
    IngestBatch,
    Measurement,
    Observation,
    ObservationFilter,
    Placement,
    PlacementKind,
    Provenance,
    ResultDocument,
    Run,
    SourceKind,
)
from stack_advisor.store.base import Store
from tests.support.samples import MEASURED, PUBLISHED, TF, TORCH, WHEN, make_obs
from tests.support.stores import ALL_BACKENDS, StoreCreator, make_creator


@pytest.fixture(params=ALL_BACKENDS)
def store_creator(request: pytest.FixtureRequest, tmp_path) -> StoreCreator:  # type: ignore[no-untyped-def]
    return make_creator(request, tmp_path)


def test_empty_store_has_current_schema(store):
    stats = store.stats()
    assert stats.schema_version == SCHEMA_VERSION
    assert stats.counts["Observation"] == 0
    assert store.ensure_schema() == SCHEMA_VERSION  # idempotent


def test_ingest_then_query_round_trips_every_field(store):
    obs = make_obs(1)
    result = store.ingest(IngestBatch(observations=[obs], runs=[Run(run_id="run-1")]))
    assert (result.observations_received, result.observations_new) == (1, 1)
    [back] = store.query_observations()
    assert back.key == obs.observation_key
    assert back.value == obs.value and back.p10 == obs.p10 and back.p90 == obs.p90
    assert back.stack == obs.stack
    assert back.accelerator == obs.accelerator
    assert back.placement == obs.placement
    assert back.host == obs.host
    assert back.benchmark == obs.benchmark
    assert back.provenance == obs.provenance
    assert back.timestamp == WHEN
    assert back.observation_key == back.key  # the key is derived from what was stored


def test_ingest_stores_catalogue_names_and_keeps_the_raw_one_as_provenance(store):
    raw = make_obs(
        1,
        acc="NVIDIA H100 80GB HBM3",
        stack=TORCH.model_copy(update={"framework": "torch", "cudnn": "91900"}),
    )
    store.ingest(IngestBatch(observations=[raw]))
    [back] = store.query_observations()
    assert back.accelerator.model == "H100-SXM5-80GB" and back.accelerator.vendor == "nvidia"
    assert back.provenance.details["accelerator_raw"] == "NVIDIA H100 80GB HBM3"
    assert (back.stack.framework, back.stack.cudnn) == ("pytorch", "9.19.0")
    assert back.observation_key == back.key
    again = store.ingest(IngestBatch(observations=[raw]))  # the same raw text: the same observation
    assert again.observations_new == 0
    store.ingest(IngestBatch(observations=[make_obs(2)]))
    [acc] = store.list_entities("accelerators")  # GET /v1/accelerators, advisor db stats
    assert (acc["model"], acc["resolved"], acc["kind"], acc["generation"]) == (
        "H100-SXM5-80GB",
        True,
        "accelerator",
        "hopper",
    )
    assert acc["observations"] == 2
    assert acc["aliases_seen"] == {"H100-SXM5-80GB": 1, "NVIDIA H100 80GB HBM3": 1}


def test_same_batch_twice_is_stored_once(store):
    batch = IngestBatch(observations=[make_obs(i) for i in range(20)])
    first = store.ingest(batch)
    gen = store.stats().generation
    again = store.ingest(batch)
    assert first.observations_new == 20
    assert again.observations_new == 0 and again.observations_received == 20
    assert store.stats().counts["Observation"] == 20
    assert store.stats().generation == gen  # nothing changed, caches stay valid


def test_duplicates_inside_one_batch_collapse(store):
    result = store.ingest(IngestBatch(observations=[make_obs(3), make_obs(3), make_obs(4)]))
    assert result.observations_new == 2
    assert store.stats().counts["Observation"] == 2


def test_bad_row_rejects_the_whole_batch_naming_field_and_value(store):
    rows = [make_obs(i).model_dump(mode="json") for i in range(5)]
    rows[3]["value"] = "fast"
    with pytest.raises(InvalidInput) as err:
        store.ingest({"observations": rows})
    assert "observations.3.value" in str(err.value) and "'fast'" in str(err.value)
    assert store.stats().counts["Observation"] == 0


def test_ingest_many_writes_each_batch_in_order_as_ingest_would(store):
    batches = [
        IngestBatch(observations=[make_obs(i) for i in range(start, start + 7)])
        for start in (0, 7, 14)
    ]
    batches.append(
        IngestBatch(observations=[make_obs(20), make_obs(21)])
    )  # 20: also in the batch before
    gen = store.stats().generation
    results = list(store.ingest_many(batches))
    assert [(r.observations_received, r.observations_new) for r in results] == [
        (7, 7),
        (7, 7),
        (7, 7),
        (2, 1),
    ]
    assert store.stats().counts["Observation"] == 22
    assert store.stats().generation == gen + 4  # one transaction per batch
    again = list(
        store.ingest_many(b.model_dump(mode="json") for b in batches)
    )  # dicts are validated too
    assert [r.observations_new for r in again] == [0, 0, 0, 0]
    assert store.stats().generation == gen + 4


def test_ingest_many_stops_at_a_bad_batch_after_writing_the_ones_before(store):
    rows = [make_obs(i).model_dump(mode="json") for i in range(10, 15)]
    rows[2]["samples"] = "many"
    batches = [
        IngestBatch(observations=[make_obs(i) for i in range(5)]),
        {"observations": rows},
        IngestBatch(observations=[make_obs(i) for i in range(20, 25)]),
    ]
    got = []
    with pytest.raises(InvalidInput) as err:
        for result in store.ingest_many(batches):
            got.append(result.observations_new)
    assert got == [5]  # the batch before the bad one was committed and reported
    assert "observations.2.samples" in str(err.value) and "'many'" in str(err.value)
    assert store.stats().counts["Observation"] == 5  # nothing of the bad batch, nothing after it


def test_ingest_many_stopped_early_writes_only_what_it_reported(store):
    batches = (IngestBatch(observations=[make_obs(i)]) for i in range(6))
    stream = store.ingest_many(batches)
    assert [next(stream).observations_new for _ in range(2)] == [1, 1]
    stream.close()
    assert store.stats().counts["Observation"] == 2


def test_failed_write_leaves_nothing_half_written(store, monkeypatch):
    """A failure in the middle of the transaction (after nodes were created) rolls it all back."""
    import stack_advisor.store.queries as Q

    real = Q.create_linked

    def broken(label, present, linked):
        if label == "Failure":
            return "THIS IS NOT CYPHER"
        return real(label, present, linked)

    monkeypatch.setattr(Q, "create_linked", broken)
    fail = Failure(
        stage="run",
        error_class="Unsupported",
        message="fp8 needs sm_89",
        stack=TORCH,
        accelerator=Accelerator(model="cpu"),
        placement=Placement(),
        provenance=MEASURED,
    )
    # each backend raises its own driver's error for the broken statement; what is left is the test
    with pytest.raises(Exception):  # noqa: B017
        store.ingest(IngestBatch(observations=[make_obs(i) for i in range(5)], failures=[fail]))
    monkeypatch.setattr(Q, "create_linked", real)
    counts = store.stats().counts
    assert counts["Observation"] == 0 and counts["Stack"] == 0 and counts["Failure"] == 0


def test_filters(store):
    store.ingest(
        IngestBatch(
            observations=[
                make_obs(1),
                make_obs(2, stack=TF),
                make_obs(3, acc="NVIDIA A100-SXM4-80GB"),
                make_obs(4, placement=PlacementKind.VGPU),
                make_obs(5, source=PUBLISHED, host=None, run_id=None),
                make_obs(6, metric="gbps"),
            ]
        )
    )
    q = store.query_observations
    assert len(q()) == 6
    assert {o.stack.framework for o in q(ObservationFilter(framework="tensorflow"))} == {
        "tensorflow"
    }
    assert len(q(ObservationFilter(accelerator="NVIDIA A100-SXM4-80GB"))) == 1
    assert len(q(ObservationFilter(placement=PlacementKind.VGPU))) == 1
    assert len(q(ObservationFilter(source="mlperf-inference"))) == 1
    assert len(q(ObservationFilter(metric="gbps"))) == 1
    assert len(q(ObservationFilter(stack_id=TF.stack_id))) == 1
    assert len(q(ObservationFilter(cuda="12.1", benchmark_family="pi", benchmark_name="gemm"))) == 5
    assert len(q(ObservationFilter(host="node-a"))) == 5
    assert q(ObservationFilter(accelerator="nope")) == []
    published = q(ObservationFilter(source="mlperf-inference"))[0]
    assert published.host is None and published.run_id is None


def test_pagination_is_stable_and_complete(store):
    store.ingest(IngestBatch(observations=[make_obs(i) for i in range(25)]))
    pages = [store.query_observations(limit=10, offset=o) for o in (0, 10, 20)]
    keys = [o.key for page in pages for o in page]
    assert [len(p) for p in pages] == [10, 10, 5]
    assert keys == sorted(keys) and len(set(keys)) == 25
    assert len(list(store.iter_observations(page=7))) == 25
    with pytest.raises(InvalidInput, match="limit"):
        store.query_observations(limit=0)


def test_one_observation_by_key(store):
    store.ingest(
        IngestBatch(
            observations=[make_obs(i) for i in range(5)] + [make_obs(9, host=None, run_id=None)]
        )
    )
    every = {o.key: o for o in store.iter_observations()}
    for key, obs in every.items():
        assert store.get_observation(key) == obs  # every field, the host's too (or none)
    with pytest.raises(NotFound, match="no observation with key 'obs-nope'"):
        store.get_observation("obs-nope")
    with pytest.raises(InvalidInput, match="key"):
        store.get_observation("")


def test_stored_values_by_key_in_bulk(store):
    """``observation_values``: the value of each key held, keys not held left out, a key asked
    twice answered once; what a re-import compares its figures with."""
    store.ingest(IngestBatch(observations=[make_obs(i) for i in range(5)]))
    every = {o.key: o.value for o in store.iter_observations()}
    asked = [*every, "obs-nope", next(iter(every))]
    assert store.observation_values(asked) == every
    assert store.observation_values([]) == {}


def test_a_corrected_figure_is_revised_in_place_and_caches_read_again(store):
    """``revise_observations``: an observation the store holds at another figure takes the new
    reading (its figure, samples, spread and provenance; a spread it does not give is cleared);
    one held at its figure, or not held, is left alone and moves nothing; a revision moves the
    generation and the cache identity on (a cache must read everything again), not the store's
    identity (a sweep's ledger keys on it)."""
    first, other = make_obs(0), make_obs(1)
    store.ingest(IngestBatch(observations=[first, other]))
    before = (store.generation(), store.cache_identity(), store.store_identity())
    assert store.revise_observations([first, make_obs(7)]) == 0  # as held; not held
    assert (store.generation(), store.cache_identity()) == before[:2]
    corrected = first.model_copy(
        update={"value": 123.5, "samples": 3, "p10": None, "p90": None, "cv": None}
    )
    assert store.revise_observations([corrected]) == 1
    back = store.get_observation(first.observation_key)
    assert (back.value, back.samples, back.p10, back.p90, back.cv) == (123.5, 3, None, None, None)
    assert store.get_observation(other.observation_key).value == other.value
    assert store.generation() > before[0]
    if before[1] is not None:
        assert store.cache_identity() != before[1]
        assert store.store_identity() == before[2]
    assert store.revise_observations([corrected]) == 0  # idempotent
    with pytest.raises(InvalidInput, match="observations"):
        store.revise_observations([{"value": "x"}])


def test_entities_stats_and_failures(store):
    doc = ResultDocument(
        run=Run(run_id="r-9", profile="quick"),
        provenance=MEASURED,
        stack=TORCH,
        accelerator=Accelerator(model="CPU Xeon", vendor="cpu"),
        placement=Placement(kind=PlacementKind.BARE_METAL),
        host=Host(name="node-b"),
        measurements=[make_obs(1).model_dump(include=set(Measurement.model_fields))],
        failures=[
            {
                "stage": "run",
                "error_class": "Unsupported",
                "message": "fp8 needs sm_89",
                "benchmark": {"family": "pi", "name": "gemm", "parameters": {"dtype": "fp8"}},
            }
        ],
    )
    result = store.ingest_document(doc)
    assert (result.observations_new, result.failures_new) == (1, 1)
    assert store.ingest_document(doc).failures_new == 0
    stacks = store.list_entities("stacks")
    assert [s["framework"] for s in stacks] == ["pytorch"]
    assert [a["model"] for a in store.list_entities(EntityKind.ACCELERATORS)] == ["CPU Xeon"]
    assert [r["run_id"] for r in store.list_entities("runs")] == ["r-9"]
    [failure] = store.list_entities("failures")
    assert failure["error_class"] == "Unsupported" and failure["stack_id"] == TORCH.stack_id
    assert failure["failure_class"] == "harness limitation"  # every backend says whose fault it is
    stats = store.stats()
    assert stats.observations_by_source == {"stack-advisor-collector": 1}
    assert stats.counts["Component"] == len(TORCH.components())
    with pytest.raises(InvalidInput, match="valid: stacks"):
        store.list_entities("widgets")


def test_mutable_nodes_are_refreshed_not_erased(store):
    store.ingest(IngestBatch(observations=[make_obs(1)]))
    later = make_obs(2).model_copy(
        update={"accelerator": Accelerator(model="NVIDIA H100 80GB HBM3", compute_capability="9.0")}
    )
    store.ingest(IngestBatch(observations=[later]))
    [acc] = store.list_entities("accelerators")
    assert acc["compute_capability"] == "9.0" and acc["memory_mib"] == 81559


def test_newer_schema_in_store_is_refused(store: Store, graph: Store) -> None:
    import stack_advisor.store.cypher_store as cs

    assert isinstance(graph, cs.CypherStore)
    graph._write(
        lambda run: run(
            "MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = $v", {"v": SCHEMA_VERSION + 1}
        )
    )
    with pytest.raises(SchemaMismatch, match="newer than this code"):
        store.ensure_schema()


def test_observations_since_a_generation_are_what_later_batches_wrote(store):
    store.ingest(IngestBatch(observations=[make_obs(i) for i in range(6)]))
    first = store.stats().generation
    store.ingest(
        IngestBatch(observations=[make_obs(i) for i in range(6)])
    )  # nothing new: no generation
    assert store.stats().generation == first
    # new observations in the context the first batch created, and in a new context
    store.ingest(
        IngestBatch(
            observations=[make_obs(i) for i in range(4, 9)]
            + [make_obs(20, stack=TF, host="node-b")]
        )
    )
    second = store.stats().generation
    store.ingest(IngestBatch(observations=[make_obs(30, acc="A100-SXM4-80GB")]))
    third = store.stats().generation
    assert first < second < third

    def source_keys(rows):
        return sorted(int(o.source_key) for o in rows)

    assert source_keys(store.observations_since(first)) == [6, 7, 8, 20, 30]
    assert source_keys(store.observations_since(first, until=second)) == [6, 7, 8, 20]
    assert source_keys(store.observations_since(second)) == [30]
    assert list(store.observations_since(third)) == []
    assert {o.generation for o in store.observations_since(first)} == {second, third}
    everything = store.query_observations(limit=100)
    assert {o.generation for o in everything if int(o.source_key) < 6} == {first}
    assert source_keys(store.observations_since(0)) == source_keys(everything)
    # pages of the delta are keyset pages, like every query
    paged = list(store.observations_since(first, page=2))
    assert [o.key for o in paged] == sorted(o.key for o in paged) and len(paged) == 5
    # combined with a filter
    flt = ObservationFilter(since_generation=first, framework="tensorflow")
    assert source_keys(store.query_observations(flt)) == [20]
    with pytest.raises(InvalidInput, match="generation"):
        list(store.observations_since(third, until=first))
    with pytest.raises(ValueError, match="until_generation"):
        ObservationFilter(until_generation=3)


def _published(
    i: int, source: str, round_: str, submitter: str, system: str, division: str = "closed"
) -> Observation:
    details = {
        "round": round_,
        "division": division,
        "submitter": submitter,
        "system_id": system,
        "file": f"{submitter}/results/{system}/{i}.json",
    }
    return make_obs(i, source=Provenance(kind=SourceKind.PUBLISHED, source=source, details=details))


def test_published_observations_link_to_their_submission(store: Store, graph: Store) -> None:
    """One Submission per suite, round, division, submitter and system, whichever suite; our own
    measurements name none; the provenance details read back as they were written."""
    published = [
        _published(1, "mlperf-inference", "v4.0", "NVIDIA", "dgx_h100"),
        _published(2, "mlperf-inference", "v4.0", "NVIDIA", "dgx_h100"),  # the same submission
        _published(3, "mlperf-inference", "v4.1", "NVIDIA", "dgx_h100"),
        _published(4, "mlperf-training", "v4.0", "NVIDIA", "dgx_h100"),  # same round, other suite
        _published(5, "mlperf-inference", "v4.0", "Dell", "xe9680", division="open"),
    ]
    store.ingest(IngestBatch(observations=[*published, make_obs(6)]))
    ids = [s["submission_id"] for s in store.list_entities(EntityKind.SUBMISSIONS)]
    assert ids == [
        "mlperf-inference:v4.0/closed/NVIDIA/dgx_h100",
        "mlperf-inference:v4.0/open/Dell/xe9680",
        "mlperf-inference:v4.1/closed/NVIDIA/dgx_h100",
        "mlperf-training:v4.0/closed/NVIDIA/dgx_h100",
    ]
    dell = store.list_entities("submissions")[1]
    assert {k: dell[k] for k in ("source", "round", "division", "submitter", "system")} == {
        "source": "mlperf-inference",
        "round": "v4.0",
        "division": "open",
        "submitter": "Dell",
        "system": "xe9680",
    }
    assert store.stats().counts["Submission"] == 4
    back = {o.source_key: o.provenance for o in store.query_observations()}
    assert all(back[o.source_key] == o.provenance for o in published)
    edges = graph._read(  # type: ignore[attr-defined]
        "MATCH (o:Observation)-[:IN_SUBMISSION]->(s:Submission) "
        "RETURN o.source_key AS key, s.submission_id AS sid ORDER BY key",
        {},
    )
    assert [e["key"] for e in edges] == ["1", "2", "3", "4", "5"]  # not 6, measured
    store.ingest(IngestBatch(observations=published))  # again: nothing new, no second edge
    assert len(graph._read("MATCH ()-[r:IN_SUBMISSION]->() RETURN r", {})) == 5  # type: ignore[attr-defined]
