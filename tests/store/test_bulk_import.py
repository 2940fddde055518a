"""The bulk path (`neo4j-admin database import full` from the CSV files ``BulkFiles`` writes)
gives the same graph and the same answers as a transactional load of the same batches: real
Neo4j on both sides (the session's server for the transactional load, a fresh local server whose
database is bulk-imported before its first start)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.graph import NODES
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    EntityKind,
    Failure,
    Host,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    Run,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store
from stack_advisor.store.bulk_import import BulkFiles
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot

WHEN = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
STACK = SoftwareStack(
    framework="torch",
    framework_version="2.5.1",
    cuda="12.4",
    cudnn="90100",
    driver="550.54.15",
    extra={"triton": "3.1.0"},
    raw='pip freeze:\nA,B "q"',
)
MEASURED = Provenance(
    kind=SourceKind.MEASURED, source='collector, "night"', details={"note": "a\nb"}
)


def _obs(
    i: int,
    *,
    host: Host | None,
    run_id: str | None,
    value: float = 1.0,
    note: str | None = None,
    acc: str = "NVIDIA H100 80GB HBM3",
) -> Observation:
    return Observation(
        benchmark=Benchmark(family="pi", name="gemm", parameters={"n": 1024 << (i % 3)}),
        metric="tflops",
        value=value + i,
        unit="TFLOP/s",
        samples=5,
        p10=value,
        cv=0.02,
        note=note,
        stack=STACK,
        accelerator=Accelerator(model=acc, count=8),
        placement=Placement(
            kind=PlacementKind.PASSTHROUGH, hypervisor="kvm", evidence=["dmi: KVM", "ünïcode ✓"]
        ),
        host=host,
        run_id=run_id,
        provenance=MEASURED,
        source_key=f"cell-{i}",
        timestamp=WHEN,
    )


def _batches() -> list[IngestBatch]:
    """Published results (the starter snapshot's resnet50 v1.1: a recommendation to compare) and
    collector-shaped batches with the cases the files must carry exactly: values with quotes,
    commas, line breaks, non-ASCII text, '' beside unknown (None), a catalogue name to resolve,
    duplicates inside a batch (the last wins) and across batches (the first wins), a host and a
    run that a later batch completes without erasing, failures with multi-line logs."""
    published = [
        o
        for o in load_snapshot().observations
        if o.benchmark.name == "resnet50" and o.provenance.details.get("round") == "v1.1"
    ]
    bare = Host(name="gpu-1")
    full = Host(name="gpu-1", cpu_model="EPYC 9654", cores=96, labels={"pool": "h100, big"})
    night1 = [_obs(i, host=bare, run_id="night-1", note="" if i == 0 else None) for i in range(6)]
    night1.append(_obs(0, host=bare, run_id="night-1", value=50.0, note='said "hi",\nthen left'))
    night2 = [_obs(i, host=full, run_id="night-2") for i in range(4)]
    night2.append(_obs(1, host=bare, run_id="night-1", value=999.0))  # sent again: the first stays
    failure = Failure(
        stage="run",
        error_class="OOM",
        message="CUDA out of memory",
        log_tail="Traceback:\r\n  line 1\n  line 2",
        timestamp=WHEN,
        stack=STACK,
        accelerator=Accelerator(model="H100-SXM5-80GB", count=8),
        placement=Placement(kind=PlacementKind.BARE_METAL),
        host=bare,
        run_id="night-2",
        provenance=MEASURED,
        benchmark=Benchmark(family="cnn", name="resnet50", parameters={}),
    )
    no_host = [
        _obs(i, host=None, run_id=None, acc="CPU Intel Xeon Platinum 8380") for i in range(2)
    ]
    return [
        IngestBatch(observations=published[: len(published) // 2]),
        IngestBatch(observations=night1, runs=[Run(run_id="night-1", collector="sa")]),
        IngestBatch(
            observations=night2 + no_host,
            failures=[failure],
            runs=[Run(run_id="night-1", started_at=WHEN), Run(run_id="night-2")],
        ),
        IngestBatch(observations=published[len(published) // 2 :] + published[:3]),
    ]


def _graph(uri: str) -> tuple[dict[str, Any], dict[str, set[Any]]]:
    """Every node's properties per label (SchemaInfo aside), every relationship by its ends'
    keys, and the constraints and indexes: the graph as Neo4j holds it; apart, the data
    generations each label's nodes carry (a transactional batch stamps its own, a bulk load
    none: what it wrote is the data before the first generation)."""
    import neo4j

    out: dict[str, Any] = {}
    generations: dict[str, set[Any]] = {}
    with neo4j.GraphDatabase.driver(uri) as driver:
        for spec in NODES:
            if spec.label == "SchemaInfo":
                continue
            records, _, _ = driver.execute_query(
                f"MATCH (n:{spec.label}) RETURN properties(n) AS p"
            )
            props = [r["p"] for r in records]
            generations[spec.label] = {p.pop("generation", None) for p in props}
            out[spec.label] = sorted(props, key=lambda p: str(sorted(p.items())))
        records, _, _ = driver.execute_query(
            "MATCH (a)-[r]->(b) RETURN type(r) AS t, labels(a)[0] AS la, labels(b)[0] AS lb, "
            "properties(a) AS pa, properties(b) AS pb"
        )
        keys = {s.label: s.key for s in NODES}
        out["relationships"] = sorted(
            (r["t"], r["pa"][keys[r["la"]]], r["pb"][keys[r["lb"]]]) for r in records
        )
        for what in ("CONSTRAINTS", "INDEXES"):
            records, _, _ = driver.execute_query(f"SHOW {what} YIELD name RETURN name")
            out[what] = sorted(r["name"] for r in records)
    return out, generations


def _answers(store: Store) -> dict[str, Any]:
    stats = store.stats().model_dump(exclude={"generation"})
    entities = {k.value: store.list_entities(k) for k in EntityKind}
    observations = [o.model_dump(exclude={"generation"}) for o in store.iter_observations()]
    workload = Workload(benchmark="resnet50", scenario="Offline", include_predicted=False)
    recommendation = Advisor(store, memo_answers=False).recommend(workload, top=3)
    return {
        "stats": stats,
        "entities": entities,
        "observations": observations,
        "recommendation": recommendation.model_dump(exclude={"generation", "elapsed_ms"}),
    }


@pytest.fixture
def offline_neo4j() -> Iterator[Any]:
    """A local server that has not started yet (its home exists; bulk-import before start)."""
    from tests.support.ci import IN_CI
    from tests.support.neo4j_server import LocalNeo4j, Neo4jUnavailable

    try:
        server = LocalNeo4j()
    except Neo4jUnavailable as exc:
        if IN_CI:
            pytest.fail(f"no local Neo4j: {exc}", pytrace=False)
        pytest.skip(f"no local Neo4j: {exc}")
    yield server
    server.remove()


@pytest.mark.neo4j
@pytest.mark.slow
def test_bulk_import_gives_the_graph_and_answers_of_a_transactional_load(
    neo4j_store: Store,
    neo4j_uri: str,
    offline_neo4j: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batches = _batches()
    transactional = [neo4j_store.ingest(b) for b in batches]
    files = []
    for i, batch in enumerate(batches):  # what a user has: one JSON file per batch
        files.append(tmp_path / f"batch-{i}.json")
        files[-1].write_text(batch.model_dump_json(), encoding="utf-8")
    command = [
        "db",
        "bulk-import",
        *map(str, files),
        "--neo4j-home",
        str(offline_neo4j.home),
        "--neo4j-lib",
        str(offline_neo4j.lib),
        "--json",
    ]

    code, out, _ = _advisor(capsys, *command)
    assert code == 0, out
    report = json.loads(out)
    for field in ("observations_received", "observations_new", "failures_received", "failures_new"):
        assert report[field] == sum(getattr(r, field) for r in transactional), field
    code, out, _ = _advisor(capsys, *command)  # the database exists now: refused, left as it is
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "conflict" and "nothing was imported" in error["message"]

    uri = offline_neo4j.start()
    with open_store(uri) as bulk_store:  # the normal open: schema setup creates the constraints
        (graph, generations), (want_graph, want_generations) = _graph(uri), _graph(neo4j_uri)
        assert graph == want_graph
        assert want_generations["Observation"] == set(range(1, len(batches) + 1))
        assert generations["Observation"] == generations["Context"] == {None}
        want, got = _answers(neo4j_store), _answers(bulk_store)
        assert got["recommendation"]["recommendations"], "the comparison needs an answer to compare"
        assert got == want
        assert bulk_store.generation() == 0  # a bulk load starts the data generations
        before = bulk_store.stats().counts["Observation"]
        again = bulk_store.ingest(batches[2])  # the bulk-loaded store takes transactional writes
        assert again.observations_new == 0 and bulk_store.stats().counts["Observation"] == before
        fresh = IngestBatch(observations=[_obs(10_000, host=None, run_id=None)])
        assert bulk_store.ingest(fresh).observations_new == 1
        # what changed since the bulk load is that batch alone, not the bulk-loaded data again
        assert [(o.source_key, o.generation) for o in bulk_store.observations_since(0)] == [
            ("cell-10000", 1)
        ]


def _advisor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app

    code = run_guarded(app, list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_files_count_what_a_transactional_load_finds_new_batch_by_batch(
    embedded_store: Store, tmp_path: Path
) -> None:
    files = BulkFiles(tmp_path / "csv")
    for batch in _batches():
        assert files.add(batch) == embedded_store.ingest(batch)
    plan = files.finish()
    assert plan.counts()["Observation"] == embedded_store.stats().counts["Observation"]
    assert any(f.multiline for f in plan.files if f.name == "Failure")  # neo4j-admin is told
    assert not any(f.multiline for f in plan.files if f.name == "Benchmark")


def test_without_a_neo4j_home_the_files_and_the_command_are_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "b.json"
    batch.write_text(_batches()[1].model_dump_json(), encoding="utf-8")
    code, out, _ = _advisor(
        capsys, "db", "bulk-import", str(batch), "--out", str(tmp_path / "csv"), "--json"
    )
    assert code == 0
    report = json.loads(out)
    args = report["neo4j_admin_arguments"]
    assert args[:3] == ["database", "import", "full"] and args[-1] == "neo4j"
    assert f"--nodes=Observation={tmp_path / 'csv' / 'nodes_Observation.csv'}" in args
    assert report["observations_new"] == 6  # 7 sent, one key twice
    header = (tmp_path / "csv" / "nodes_Observation.csv").read_text().splitlines()[0]
    assert header.startswith('"key:ID(Observation)","metric","value:double"')

    bad = tmp_path / "bad.json"
    bad.write_text('{"observations": [{"value": "fast"}]}', encoding="utf-8")
    code, out, _ = _advisor(
        capsys, "db", "bulk-import", str(batch), str(bad), "--out", str(tmp_path / "csv2"), "--json"
    )
    message = json.loads(out)["error"]["message"]
    assert code == 2 and str(bad) in message and "observations.0.value" in message
    assert not (tmp_path / "csv2").exists()  # the files of a failed run are removed
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    code, _, _ = _advisor(capsys, "db", "bulk-import", str(bad), "--out", str(keep), "--json")
    assert (
        code == 2 and (keep / "notes.txt").read_text() == "mine"
    )  # a folder in use is refused, kept


def test_bad_input_names_the_field_and_writes_nothing(tmp_path: Path) -> None:
    files = BulkFiles(tmp_path / "csv")
    with pytest.raises(InvalidInput, match=r"observations\.0\.value"):
        files.add({"observations": [{"value": "fast"}]})
    assert not any((tmp_path / "csv").iterdir())
    files.add(_batches()[1])
    files.finish()
    with pytest.raises(InvalidInput, match="not empty"):
        BulkFiles(tmp_path / "csv")
