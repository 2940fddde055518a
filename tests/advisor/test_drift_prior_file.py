"""The round drift's learned prior persisted beside the calibration
(stack_advisor.advisor.estimate.calibration_file.PriorFile): a fresh process restores it instead of
pairing every slice's rounds again, answers exactly as a process that learned it (and as one with
caching off), learns over a damaged file, and a change of data learns a prior of its own."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import calibration_file
from stack_advisor.advisor.estimate.drift import RoundDrift
from stack_advisor.advisor.estimate.drift_prior import DriftPrior, PriorState
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.starter import load_snapshot
from tests.support import calibration_kb
from tests.support.calibration_kb import first_results_kb

# evidence of older rounds carried to today's round and forecasts beyond the knowledge base: both
# read the prior (its cells and its calibrated scales)
QUERIES = [
    {
        "accelerator": "NVIDIA A100-SXM4-80GB",
        "accelerator_count": 8,
        "benchmark": "resnet50",
        "scenario": scenario,
        "metric": "samples_per_second",
        "as_of": as_of,
    }
    for scenario in ("Offline", "Server")
    for as_of in ("today", "next")
]


folder = calibration_kb.calibration_folder  # the test's own calibration folder
store = calibration_kb.results_store  # a copy of results_kb of the test's own


@pytest.fixture(scope="module")
def results_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real published resnet50 and bert-99 results of the starter snapshot (several rounds), in
    an embedded store file ingested once for the module."""
    counts = {"resnet50": 600, "bert-99": 300}
    return first_results_kb(tmp_path_factory.mktemp("drift-prior"), counts)


def _answers(advisor: Advisor) -> list[str]:
    ranked = advisor.recommend({"benchmark": "resnet50", "scenario": "Offline"}, top=20)
    return [ranked.model_dump_json(exclude={"elapsed_ms"})] + [
        p.model_dump_json() for p in advisor.predict(QUERIES)
    ]


def _learned(advisor: Advisor) -> PriorState:
    """The prior learned afresh over the advisor's index (no shelf)."""
    return DriftPrior(RoundDrift(advisor.evidence())).state()


def test_a_fresh_advisor_restores_the_prior_and_answers_the_same(
    store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Advisor(store)
    learned = _answers(first)
    assert any("forecast" in a for a in learned), "the queries read the prior"
    assert len(list(folder.glob("drift-prior-*.json"))) == 1
    state = calibration_file.PriorFile(first.table(), folder).load()
    assert state is not None and len(state.steps) > 20
    assert state == _learned(first)  # every step, in order, and every scale, to the last bit

    def collect(self: DriftPrior) -> None:
        raise AssertionError("the persisted prior was learned again")

    monkeypatch.setattr(DriftPrior, "_collect", collect)
    again = Advisor(store)
    assert _answers(again) == learned
    assert again.evidence().round_drift.prior.state() == state
    monkeypatch.undo()
    monkeypatch.setattr(Advisor, "caches", CacheFolders(tables=Advisor.caches.tables))
    assert _answers(Advisor(store)) == learned  # caching off: learned in the process, same bytes


def test_a_damaged_prior_file_is_learned_over(
    store: Store, folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    learned = _answers(Advisor(store))
    (path,) = folder.glob("drift-prior-*.json")
    path.write_bytes(path.read_bytes()[:300])
    with caplog.at_level(logging.WARNING):
        assert _answers(Advisor(store)) == learned
    assert "ignoring the unreadable drift prior" in caplog.text
    restored = calibration_file.PriorFile(Advisor(store).table(), folder).load()
    assert restored is not None and restored == _learned(Advisor(store))  # written again, whole


def test_new_data_learns_a_prior_of_its_own(store: Store, folder: Path) -> None:
    advisor = Advisor(store)
    _answers(advisor)
    before = calibration_file.prior_digest(advisor.table())
    more = [o for o in load_snapshot().observations if o.benchmark.name == "resnet50"][600:700]
    store.ingest(IngestBatch(observations=more))
    advisor.forget_generation()
    assert calibration_file.prior_digest(advisor.table()) != before
    _answers(advisor)
    assert len(list(folder.glob("drift-prior-*.json"))) == 2
    restored = calibration_file.PriorFile(advisor.table(), folder).load()
    assert restored == _learned(advisor)
