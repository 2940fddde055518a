"""What the tests of the persisted calibration and round-drift prior share
(tests/advisor/test_calibration_file.py, tests/advisor/test_drift_prior_file.py): the first
published results of a few benchmarks of the starter snapshot in an embedded store file ingested
once per module, a copy of it per test (tests write to their store), and a calibration folder of
the test's own.

A module takes the fixtures under the names its tests use, e.g. ``store = results_store``, and
defines a module-scoped ``results_kb`` fixture returning ``first_results_kb(...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.schema.models import IngestBatch, Observation
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.starter_kb import copy_starter_kb


def first_results(counts: dict[str, int]) -> list[Observation]:
    """The snapshot's first ``counts[name]`` observations of each benchmark ``name``, in order."""
    snapshot = load_snapshot().observations
    rows: list[Observation] = []
    for name, count in counts.items():
        rows += [o for o in snapshot if o.benchmark.name == name][:count]
    return rows


def ingested_kb(folder: Path, rows: list[Observation]) -> Path:
    """An embedded store file in ``folder`` holding ``rows`` (closed: copy it per test)."""
    path = folder / "kb"
    with open_store(f"embedded:{path}") as store:
        store.ingest(IngestBatch(observations=rows))
    return path


def first_results_kb(folder: Path, counts: dict[str, int]) -> Path:
    """``ingested_kb`` of ``first_results(counts)``."""
    return ingested_kb(folder, first_results(counts))


@pytest.fixture
def calibration_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A calibration folder of the test's own for every Advisor it makes (tables stay shared)."""
    monkeypatch.setattr(
        Advisor,
        "caches",
        CacheFolders(tables=Advisor.caches.tables, calibration=tmp_path / "calibration"),
    )
    return tmp_path / "calibration"


@pytest.fixture
def results_store(results_kb: Path, tmp_path: Path) -> Iterator[Store]:
    """A copy of the module's ``results_kb`` store of the test's own (tests write to it)."""
    with open_store(copy_starter_kb(results_kb, tmp_path / "results" / "kb")) as store:
        yield store
