"""The evidence index's calibration persisted with the table's content
(stack_advisor.advisor.estimate.calibration_file): a fresh process reuses it instead of replaying
the history, answers exactly as the process that computed it, never trusts a damaged file, and a
change of data gets a calibration of its own."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import analysis, calibration_file
from stack_advisor.advisor.estimate import query as estimate
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.schema.models import IngestBatch, Observation
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support import calibration_kb
from tests.support.calibration_kb import first_results_kb, ingested_kb
from tests.support.starter_kb import copy_starter_kb

QUERIES = [  # observed, interpolated (another count) and transferred (never measured) figures
    {
        "accelerator": "NVIDIA A100-SXM4-80GB",
        "accelerator_count": 8,
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    },
    {
        "accelerator": "NVIDIA A100-SXM4-80GB",
        "accelerator_count": 3,
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    },
    {
        "accelerator": "NVIDIA B200-SXM-180GB",
        "accelerator_count": 1,
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    },
]


folder = calibration_kb.calibration_folder  # the test's own calibration folder
store = calibration_kb.results_store  # a copy of results_kb of the test's own


@pytest.fixture(scope="module")
def results_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real published resnet50 results of the starter snapshot (every round it holds), in an
    embedded store file ingested once for the module."""
    return first_results_kb(tmp_path_factory.mktemp("resnet50"), {"resnet50": 600})


def _answers(advisor: Advisor) -> list[tuple[str, float | None, float | None, float | None]]:
    return [
        (
            p.basis.value,
            p.value,
            p.interval.low if p.interval else None,
            p.interval.high if p.interval else None,
        )
        for p in advisor.predict(QUERIES)
    ]


def test_a_fresh_advisor_reuses_the_persisted_calibration(
    store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Advisor(store)
    computed = _answers(first)
    assert {b for b, *_ in computed} == {"observed", "interpolated", "transferred"}
    files = list(folder.glob("calibration-*.npz"))
    assert len(files) == 1

    def replay(self: EvidenceIndex, family: str) -> None:
        raise AssertionError("the persisted calibration was replayed again")

    monkeypatch.setattr(EvidenceIndex, "residuals", replay)
    again = Advisor(store)
    assert _answers(again) == computed  # the same figures and intervals, to the last bit
    persisted = calibration_file.load(again.table(), folder=Advisor.caches.calibration)
    assert persisted is not None
    original = first.evidence().calibration()
    assert persisted.alphas == original.alphas
    for family, cells in original.residuals.items():
        assert persisted.residuals[family].keys() == cells.keys()
        for cell, values in cells.items():
            assert np.array_equal(persisted.residuals[family][cell], values)


def test_a_damaged_calibration_file_is_computed_over(store: Store, folder: Path) -> None:
    computed = _answers(Advisor(store))
    (path,) = folder.glob("calibration-*.npz")
    path.write_bytes(path.read_bytes()[:200])
    assert calibration_file.load(Advisor(store).table(), folder=Advisor.caches.calibration) is None
    assert _answers(Advisor(store)) == computed
    assert (
        calibration_file.load(Advisor(store).table(), folder=Advisor.caches.calibration) is not None
    )  # written again, whole


def test_new_data_gets_its_own_calibration(store: Store, folder: Path) -> None:
    advisor = Advisor(store)
    before = calibration_file.calibration_key(advisor.table())
    _answers(advisor)
    more = [o for o in load_snapshot().observations if o.benchmark.name == "bert-99"][:200]
    store.ingest(IngestBatch(observations=more))
    advisor.forget_generation()
    after = calibration_file.calibration_key(advisor.table())
    assert after != before
    _answers(advisor)
    assert len(list(folder.glob("calibration-*.npz"))) == 2


def test_caching_off_writes_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CacheFolders.from_environ({calibration_file.CACHE_ENV: "0"}).calibration is None
    monkeypatch.setattr(Advisor, "caches", CacheFolders(tables=Advisor.caches.tables))
    assert _answers(Advisor(store))[0][0] == "observed"
    assert calibration_file.load(Advisor(store).table(), folder=Advisor.caches.calibration) is None


def test_transfer_intervals_follow_their_benchmarks_own_spread(store: Store, folder: Path) -> None:
    """Locally weighted conformal: in one calibration cell, a benchmark whose transfers always
    landed close gets a narrower interval than one whose transfers scatter, and over the cell the
    bounds still hold 80% of the residuals they were computed from."""
    from stack_advisor.advisor.estimate.query import Calibration
    from stack_advisor.advisor.results import Basis

    rng = np.random.default_rng(0)
    tight, wide = rng.normal(0.0, 0.05, 200), rng.normal(0.0, 0.5, 200)
    cell = (Basis.TRANSFERRED, "closed", "samples_per_second")
    pools = {
        (*cell, "resnet50", "Offline"): tight,
        (*cell, "bert-99", "Offline"): wide,
        cell: np.concatenate([tight, wide]),
    }
    index = Advisor(store).evidence()
    index.adopt(Calibration(residuals={"mlperf-inference": pools}, alphas={}))

    def bounds(benchmark: str) -> tuple[float, float, float]:
        return index.quantiles(
            ("mlperf-inference", benchmark, "Offline", "samples_per_second", "closed"),
            Basis.TRANSFERRED,
        )

    lo_t, _, hi_t = bounds("resnet50")
    lo_w, _, hi_w = bounds("bert-99")
    assert hi_t - lo_t < (hi_w - lo_w) / 4
    held = np.mean(
        np.concatenate([(tight >= lo_t) & (tight <= hi_t), (wide >= lo_w) & (wide <= hi_w)])
    )
    assert 0.78 <= held <= 0.82
    lo_u, _, hi_u = bounds("retinanet")  # no transfer history of its own: the cell's spread
    assert hi_t - lo_t < hi_u - lo_u < hi_w - lo_w


# ---- the index's slices and the placement overheads, persisted beside the calibration ----------


def _paired_rows() -> list[Observation]:
    """resnet50 results plus every virtualised result of the snapshot with the bare-metal
    results of its benchmarks: paired placements, so overheads exist."""
    snapshot = load_snapshot().observations
    virtual = [o for o in snapshot if o.placement.kind.value in ("vgpu", "passthrough")]
    benches = {o.benchmark.name for o in virtual}
    rows = [o for o in snapshot if o.benchmark.name == "resnet50"][:600]
    return rows + [
        o for o in snapshot if o.benchmark.name in benches and o.benchmark.name != "resnet50"
    ]


@pytest.fixture(scope="module")
def paired_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store file holding the paired rows, ingested once for the module."""
    return ingested_kb(tmp_path_factory.mktemp("paired"), _paired_rows())


@pytest.fixture
def paired_store(paired_kb: Path, tmp_path: Path) -> Iterator[Store]:
    """A copy of the paired rows' store of the test's own."""
    with open_store(copy_starter_kb(paired_kb, tmp_path / "paired" / "kb")) as store:
        yield store


def _everything(advisor: Advisor) -> tuple[Any, ...]:
    """Predictions, a ranking and the placement overheads, as the CLI prints them (JSON)."""
    ranking = advisor.recommend({"benchmark": "resnet50", "scenario": "Offline"}, top=50)
    return (
        tuple(_answers(advisor)),
        ranking.model_dump_json(exclude={"elapsed_ms"}),
        [o.model_dump_json() for o in advisor.placement_overhead()],
    )


def _same_slices(a: dict[Any, dict[str, np.ndarray]], b: dict[Any, dict[str, np.ndarray]]) -> bool:
    return list(a) == list(b) and all(
        list(a[k]) == list(b[k]) and all(np.array_equal(a[k][acc], b[k][acc]) for acc in a[k])
        for k in a
    )


def test_a_fresh_advisor_reuses_the_slices_and_overheads(
    paired_store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Advisor(paired_store)
    computed = _everything(first)
    assert computed[2], "the fixture has paired placements"
    prepared = calibration_file.load_prepared(
        Advisor(paired_store).table(), folder=Advisor.caches.calibration
    )
    assert prepared is not None and prepared.slices is not None and prepared.overheads is not None
    assert _same_slices(prepared.slices, first.evidence().slices)
    assert list(prepared.overheads.items()) == list(first.overheads().items())

    def recompute(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("recomputed although persisted")

    monkeypatch.setattr(estimate, "group_slices", recompute)
    monkeypatch.setattr(analysis, "placement_overheads", recompute)
    assert _everything(Advisor(paired_store)) == computed  # the same answers, byte for byte
    only_overheads = Advisor(paired_store)  # `compare placement`: no index built
    assert [o.model_dump_json() for o in only_overheads.placement_overhead()] == computed[2]


def test_rows_in_another_order_reuse_the_calibration_not_the_slices(
    paired_store: Store, folder: Path
) -> None:
    """Equal content (same keys and values, so the same calibration key) whose rows differ in a
    column the slices read: the calibration is reused, slices and overheads are computed anew."""
    advisor = Advisor(paired_store)
    _everything(advisor)
    table = advisor.table()
    bare = table.placement.code("bare-metal")
    flipped = dataclasses.replace(
        table,
        placement=dataclasses.replace(
            table.placement,
            codes=np.where(table.placement.codes == bare, table.placement.code("unknown"), bare),
        ),
    )
    assert calibration_file.calibration_key(flipped) == calibration_file.calibration_key(table)
    assert calibration_file.layout_digest(flipped) != calibration_file.layout_digest(table)
    prepared = calibration_file.load_prepared(flipped, folder=Advisor.caches.calibration)
    assert prepared is not None and prepared.slices is None and prepared.overheads is None
    assert prepared.calibration.alphas == advisor.evidence().calibration().alphas
    fresh = Advisor(paired_store)  # over the other order: it recomputes, and the file follows it
    snapshot = fresh.snapshot(flipped)
    assert list(snapshot.overheads.items()) == list(analysis.placement_overheads(flipped).items())
    assert _same_slices(snapshot.index.slices, estimate.group_slices(flipped))
    again = calibration_file.load_prepared(flipped, folder=Advisor.caches.calibration)
    assert again is not None and again.slices is not None
    assert calibration_file.load_prepared(table, folder=Advisor.caches.calibration).slices is None  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def undamaged(
    tmp_path_factory: pytest.TempPathFactory, paired_kb: Path
) -> tuple[tuple[Any, ...], str, bytes]:
    """The answers over the paired rows and the calibration file they leave (its name and
    bytes), computed once for the damage cases: each case starts from a copy of the file."""
    root = tmp_path_factory.mktemp("undamaged")
    caches = CacheFolders(tables=Advisor.caches.tables, calibration=root / "calibration")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Advisor, "caches", caches)
        with open_store(copy_starter_kb(paired_kb, root / "kb")) as store:
            computed = _everything(Advisor(store))
    (path,) = (root / "calibration").glob("calibration-*.npz")
    return computed, path.name, path.read_bytes()


@pytest.mark.parametrize(
    "damage",
    ["row out of range", "listing longer than the rows", "not a list", "bad overhead", "truncated"],
)
def test_damaged_slices_or_overheads_are_computed_over(
    paired_store: Store, folder: Path, damage: str, undamaged: tuple[tuple[Any, ...], str, bytes]
) -> None:
    computed, name, data = undamaged
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    # the copy stands for this store's table: what follows fails for the damage alone
    prepared = calibration_file.load_prepared(
        Advisor(paired_store).table(), folder=Advisor.caches.calibration
    )
    assert prepared is not None and prepared.slices is not None
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: np.asarray(data[name]) for name in data.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    if damage == "row out of range":
        arrays["slice_rows"] = arrays["slice_rows"].copy()
        arrays["slice_rows"][-1] = 10**9
    elif damage == "listing longer than the rows":
        arrays["slice_rows"] = arrays["slice_rows"][:-3]
    elif damage == "not a list":
        meta["slices"] = 7
    elif damage == "bad overhead":
        meta["overheads"][0]["ratio"] = "fast"
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert (
        calibration_file.load_prepared(
            Advisor(paired_store).table(), folder=Advisor.caches.calibration
        )
        is None
    )
    assert _everything(Advisor(paired_store)) == computed
    assert (
        calibration_file.load_prepared(
            Advisor(paired_store).table(), folder=Advisor.caches.calibration
        ).slices
        is not None
    )  # type: ignore[union-attr]


def test_a_write_or_new_code_gets_slices_and_overheads_of_its_own(
    paired_store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    advisor = Advisor(paired_store)
    _everything(advisor)
    more = [o for o in load_snapshot().observations if o.benchmark.name == "resnet50"][600:700]
    paired_store.ingest(IngestBatch(observations=more))
    advisor.forget_generation()
    table = advisor.table()
    assert (
        calibration_file.load_prepared(table, folder=Advisor.caches.calibration) is None
    )  # new content: nothing persisted for it
    assert _same_slices(advisor.evidence().slices, estimate.group_slices(table))
    assert list(advisor.overheads().items()) == list(analysis.placement_overheads(table).items())
    monkeypatch.setattr(table_file, "_CODE_DIGEST", "another version of the code")
    assert calibration_file.load_prepared(table, folder=Advisor.caches.calibration) is None
