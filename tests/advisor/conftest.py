"""Fixtures for the advisor engine tests: a real embedded store seeded once per session with the
starter knowledge base (published MLPerf Inference results, v1.1-v3.0), and an Advisor over it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_schema.registry import open_store
from graph_schema.starter import seed_store
from graph_schema.store import Store


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep fitted models out of the user's cache."""
    folder = tmp_path_factory.mktemp("models")
    saved = os.environ.get("ADVISOR_MODEL_CACHE")
    os.environ["ADVISOR_MODEL_CACHE"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("ADVISOR_MODEL_CACHE", None)
    else:
        os.environ["ADVISOR_MODEL_CACHE"] = saved


@pytest.fixture(scope="session")
def mlperf_store(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Store]:
    store = open_store(f"embedded:{tmp_path_factory.mktemp('mlperf-kb') / 'kb'}")
    seed_store(store)
    yield store
    store.close()


@pytest.fixture(scope="session")
def kb_advisor(mlperf_store: Store):  # type: ignore[no-untyped-def]
    from advisor.engine import Advisor

    advisor = Advisor(mlperf_store)
    advisor.warm()
    return advisor
