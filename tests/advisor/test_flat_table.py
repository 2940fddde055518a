"""The flat read (``Store.flat_observations``) gives the same table as the paged read of models,
row for row, on the starter knowledge base and on a store with odd rows (invalid ones, failures,
no host, an observation without a context, details and parameters that each decide a column),
on both engines, Neo4j's keyset pages across their boundaries included; and the answers built on
it are the same bytes."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import StoreUnavailable
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Failure,
    Host,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store
from stack_advisor.store.cypher_store import CypherStore
from stack_advisor.store.embedded_store import QUERY_TIMEOUT_S, EmbeddedStore
from stack_advisor.store.flat_read import RowReader
from stack_advisor.store.starter import seed_store
from tests.support.tables import assert_same_table

STACKS = (
    SoftwareStack(
        driver="550.54.15",
        cuda="12.4",
        cudnn="9.1.0",
        framework="pytorch",
        framework_version="2.3.1",
        raw="pytorch 2.3.1 / cuda 12.4",
    ),
    SoftwareStack(
        driver="535.161.08",
        cuda="12.2",
        framework="tensorflow",
        framework_version="2.15.1",
        extra={"jax": "0.4.30"},
        image="nvcr.io/nvidia/tensorflow:24.01-tf2-py3",
    ),
    SoftwareStack(),  # nothing known
)
ACCELERATORS = (
    Accelerator(model="H100-SXM5-80GB", count=8),
    Accelerator(model="L4"),
    Accelerator(model="A100-SXM4-80GB", count=2),
)
PLACEMENTS = (
    Placement(kind=PlacementKind.BARE_METAL),
    Placement(
        kind=PlacementKind.VGPU,
        hypervisor="kvm",
        vgpu_profile="A100-4C",
        evidence=["nvidia-smi: vGPU"],
        consistent=False,
    ),
    Placement(),
)
BENCHMARKS = (
    Benchmark(family="mlperf-inference", name="resnet50", parameters={"scenario": "Offline"}),
    Benchmark(
        family="mlperf-inference",
        name="bert-99",
        parameters={"scenario": "Server", "division": "open"},
    ),
    Benchmark(family="pi", name="gemm", parameters={"n": 4096, "dtype": "bf16"}),
)
HOSTS = (Host(name="gpu-node-1", cpu_model="EPYC 9654", cores=96), None)
PUBLISHED = Provenance(
    kind=SourceKind.PUBLISHED,
    source="mlperf-inference",
    details={
        "round": "v4.0",
        "division": "closed",
        "submitter": "Acme",
        "nodes": "2",
        "accelerators_per_node": "8",
    },
)
MEASURED = Provenance(kind=SourceKind.MEASURED, source="stack-advisor-collector")
ODD_ROWS = 400


def odd_batch(n: int = ODD_ROWS) -> IngestBatch:
    """``n`` observations over every combination of the odd parts above, and a few failures."""
    start = datetime(2024, 3, 1, tzinfo=UTC)
    observations = []
    for i in range(n):
        host = HOSTS[i % 2]
        observations.append(
            Observation(
                benchmark=BENCHMARKS[i % 3],
                metric=("throughput", "p90_latency_ms")[i % 5 == 0],
                value=100.0 + i * 1.25,
                unit=("samples/s", "ms")[i % 5 == 0],
                higher_is_better=i % 5 != 0,
                valid=i % 11 != 0,  # some are invalid: left out
                timestamp=start + timedelta(hours=i, microseconds=i * 37),
                stack=STACKS[i % 3],
                accelerator=ACCELERATORS[(i // 3) % 3],
                placement=PLACEMENTS[(i // 2) % 3],
                host=host,
                run_id=None if i % 7 == 0 else f"run-{i // 40}",
                provenance=PUBLISHED if i % 4 == 0 else MEASURED,
                source_key=f"sys-{i % 13}" if i % 4 == 0 else None,
            )
        )
    failures = [
        Failure(
            benchmark=BENCHMARKS[j % 3],
            stage="run",
            error_class="OOM",
            message=f"failure {j}",
            stack=STACKS[j % 3],
            accelerator=ACCELERATORS[j % 3],
            placement=PLACEMENTS[0],
            host=HOSTS[0],
            provenance=MEASURED,
        )
        for j in range(5)
    ]
    return IngestBatch(observations=observations, failures=failures)


def fill_odd(store: Store) -> int:
    """The odd batch, and an observation that no context or benchmark links to (written by hand:
    no ingest makes one); returns how many Observation nodes the store holds."""
    store.ingest(odd_batch())
    assert isinstance(store, CypherStore)
    store._write(
        lambda run: run(
            "CREATE (o:Observation {key: 'obs-zz-orphan', metric: 'throughput', "
            "value: 1.0, unit: 'x', "
            "higher_is_better: true, valid: true, timestamp: '2024-01-01T00:00:00+00:00'})",
            {},
        )
    )
    return store.stats().counts["Observation"]


def paged_table(store: Store) -> ObservationTable:
    return ObservationTable.from_observations(store.iter_observations(page=97), 1)


def flat_table(store: Store) -> ObservationTable:
    flat = store.flat_observations()
    assert flat is not None
    return ObservationTable.from_flat(flat, 1)


def assert_identical(a: ObservationTable, b: ObservationTable) -> None:
    assert_same_table(a, b)
    assert list(a.benchmarks) == list(b.benchmarks)  # first-seen order: the persisted file's
    assert list(a.stacks) == list(b.stacks)
    assert a.keys == sorted(a.keys)


@pytest.fixture
def neo4j_starter(neo4j_store: Store) -> Store:
    seed_store(neo4j_store)
    return neo4j_store


@pytest.mark.slow  # ~50 s: the whole starter knowledge base read both ways
def test_flat_table_equals_paged_table_on_the_starter_kb(mlperf_store: Store) -> None:
    flat = flat_table(mlperf_store)
    assert flat.n > 10_000
    assert_identical(flat, paged_table(mlperf_store))


@pytest.mark.neo4j
def test_flat_table_equals_paged_table_on_the_starter_kb_in_neo4j(neo4j_starter: Store) -> None:
    assert_identical(flat_table(neo4j_starter), paged_table(neo4j_starter))


def test_flat_table_equals_paged_table_with_odd_rows(store: Store) -> None:
    fill_odd(store)
    table = flat_table(store)
    assert 0 < table.n < ODD_ROWS  # the invalid rows and the orphan left out
    assert "obs-zz-orphan" not in table.keys
    assert set(table.submitter.vocab) == {"Acme", "gpu-node-1", ""}
    assert set(table.division.vocab) == {"closed", "open", ""}
    assert_identical(table, paged_table(store))


@pytest.mark.parametrize("engine", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_keyset_pages_across_their_boundaries(engine: str, request: pytest.FixtureRequest) -> None:
    """The keyset scan (Neo4j's; the embedded store streams one statement, and runs the pages
    here too) gives every row once, whatever the page size: smaller than, equal to and one more
    than the number of observations."""
    store = request.getfixturevalue(f"{engine}_store")
    n = fill_odd(store)
    whole = store.flat_observations()
    assert whole is not None and len(whole.rows) == n - 1  # the orphan left out
    for size in (7, n - 1, n, n + 1):
        store.flat_page = size
        seen: list[int] = []
        rows = CypherStore._flat_rows(store, RowReader(), seen.append)
        assert rows == whole.rows, size
        assert seen[-1] == n - 1 and len(seen) == n // size + 1


@pytest.fixture
def uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    """No persisted table, so each answer reads the store; the session's calibrations (keyed by
    the table's content, so a table that reads differently gets its own)."""
    monkeypatch.setattr(Advisor, "caches", CacheFolders(calibration=Advisor.caches.calibration))


WORKLOADS = (
    {"benchmark": "resnet50", "scenario": "Offline"},
    {"benchmark": "bert-99", "scenario": "Server"},
    {"benchmark": "resnet50", "scenario": "SingleStream", "objective": "latency"},
)


def _answers(store: Store) -> Iterator[str]:
    advisor = Advisor(store)
    for fields in WORKLOADS:
        answer = advisor.recommend(Workload(**fields), top=50)
        yield answer.model_copy(update={"elapsed_ms": 0.0}).model_dump_json()


def test_answers_from_the_flat_read_are_the_same_bytes(
    mlperf_store: Store, uncached: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    flat = list(_answers(mlperf_store))
    monkeypatch.setattr(type(mlperf_store), "_flat_observations", lambda self, progress: None)
    assert mlperf_store.flat_observations() is None  # the paged read, as the REST store has
    assert list(_answers(mlperf_store)) == flat


def test_the_embedded_store_serves_after_its_flat_read_reopens_the_engine(
    embedded_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flat read closes the engine and opens it again (to give the scan's pages back):
    afterwards reads, writes, the usual query timeout, the lock and close() work as before, and
    a reopen that fails is tried again by the next call."""
    assert isinstance(embedded_store, EmbeddedStore)
    store = embedded_store
    fill_odd(store)
    before = [o.key for o in store.iter_observations(page=50)]
    engine = store._db
    whole = store.flat_observations()
    assert whole is not None and store._db is not engine and store._conn is not None
    assert store._query_timeout_s == QUERY_TIMEOUT_S
    assert [o.key for o in store.iter_observations(page=50)] == before
    assert (
        store.ingest(
            IngestBatch(observations=odd_batch(ODD_ROWS + 3).observations[-3:])
        ).observations_new
        == 3
    )
    again = store.flat_observations()
    assert again is not None and len(again.rows) == len(whole.rows) + 3
    assert_identical(flat_table(store), paged_table(store))

    # the store's lock is held while it reopens: a call from another thread waits its turn
    with store._locked():
        waiting = ThreadPoolExecutor(1).submit(lambda: store.stats().counts["Observation"])
        store._reopen()
        assert not waiting.done()
    assert waiting.result(timeout=30) == len(before) + 1 + 3  # and the orphan

    def refused() -> None:
        raise StoreUnavailable("the engine would not open")

    with monkeypatch.context() as patch:
        patch.setattr(store, "_open", refused)
        store._reopen()  # logged, not raised: the read itself succeeded
        assert store._conn is None
    assert store.stats().counts["Observation"] == len(before) + 1 + 3  # opened by this call

    store.close()
    assert store._conn is None and store._db is None
    with pytest.raises(StoreUnavailable, match="is closed"):
        store.stats()
    store.close()  # twice is harmless (the fixture closes it again)
