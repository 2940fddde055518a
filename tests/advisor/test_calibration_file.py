"""The evidence index's calibration persisted with the table's content (advisor.calibration_file):
a fresh process reuses it instead of replaying the history, answers exactly as the process that
computed it, never trusts a damaged file, and a change of data gets a calibration of its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor import calibration_file
from advisor.engine import Advisor
from advisor.estimate import EvidenceIndex
from graph_schema.models import IngestBatch
from graph_schema.starter import load_snapshot
from graph_schema.store import Store

QUERIES = [  # observed, interpolated (another count) and transferred (never measured) figures
    {"accelerator": "NVIDIA A100-SXM4-80GB", "accelerator_count": 8, "benchmark": "resnet50",
     "scenario": "Offline", "metric": "samples_per_second"},
    {"accelerator": "NVIDIA A100-SXM4-80GB", "accelerator_count": 3, "benchmark": "resnet50",
     "scenario": "Offline", "metric": "samples_per_second"},
    {"accelerator": "NVIDIA B200-SXM-180GB", "accelerator_count": 1, "benchmark": "resnet50",
     "scenario": "Offline", "metric": "samples_per_second"},
]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(calibration_file.CACHE_ENV, str(tmp_path / "calibration"))
    return tmp_path / "calibration"


@pytest.fixture
def store(embedded_store: Store) -> Store:
    """Real published resnet50 results of the starter snapshot (every round it holds)."""
    rows = [o for o in load_snapshot().observations if o.benchmark.name == "resnet50"][:600]
    embedded_store.ingest(IngestBatch(observations=rows))
    return embedded_store


def _answers(advisor: Advisor) -> list[tuple[str, float | None, float | None, float | None]]:
    return [(p.basis.value, p.value, p.interval.low if p.interval else None, p.interval.high if p.interval else None)
            for p in advisor.predict(QUERIES)]


def test_a_fresh_advisor_reuses_the_persisted_calibration(store: Store, folder: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
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
    persisted = calibration_file.load(again.table())
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
    assert calibration_file.load(Advisor(store).table()) is None
    assert _answers(Advisor(store)) == computed
    assert calibration_file.load(Advisor(store).table()) is not None  # written again, whole


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


def test_caching_off_writes_nothing(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(calibration_file.CACHE_ENV, "0")
    assert calibration_file.cache_dir() is None
    assert _answers(Advisor(store))[0][0] == "observed"
    assert calibration_file.load(Advisor(store).table()) is None


def test_transfer_intervals_follow_their_benchmarks_own_spread(store: Store, folder: Path) -> None:
    """Locally weighted conformal: in one calibration cell, a benchmark whose transfers always
    landed close gets a narrower interval than one whose transfers scatter, and over the cell the
    bounds still hold 80% of the residuals they were computed from."""
    from advisor.estimate import Calibration
    from advisor.results import Basis

    rng = np.random.default_rng(0)
    tight, wide = rng.normal(0.0, 0.05, 200), rng.normal(0.0, 0.5, 200)
    cell = (Basis.TRANSFERRED, "closed", "samples_per_second")
    pools = {(*cell, "resnet50", "Offline"): tight, (*cell, "bert-99", "Offline"): wide,
             cell: np.concatenate([tight, wide])}
    index = Advisor(store).evidence()
    index.adopt(Calibration(residuals={"mlperf-inference": pools}, alphas={}))

    def bounds(benchmark: str) -> tuple[float, float, float]:
        return index.quantiles(("mlperf-inference", benchmark, "Offline", "samples_per_second", "closed"),
                               Basis.TRANSFERRED)

    lo_t, _, hi_t = bounds("resnet50")
    lo_w, _, hi_w = bounds("bert-99")
    assert hi_t - lo_t < (hi_w - lo_w) / 4
    held = np.mean(np.concatenate([(tight >= lo_t) & (tight <= hi_t), (wide >= lo_w) & (wide <= hi_w)]))
    assert 0.78 <= held <= 0.82
    lo_u, _, hi_u = bounds("retinanet")  # no transfer history of its own: the cell's spread
    assert hi_t - lo_t < hi_u - lo_u < hi_w - lo_w
