"""Fixtures for the advisor engine tests: a real embedded store seeded once per session with the
starter knowledge base (published MLPerf Inference results, v1.1-v3.0), and an Advisor over it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graph_schema.registry import open_store
from graph_schema.starter import seed_store
from graph_schema.store import Store


@pytest.fixture(scope="session")
def mlperf_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
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
