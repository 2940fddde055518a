"""Fixtures for the advisor engine tests: a real embedded store seeded once per session with the
starter knowledge base (published MLPerf Inference results, v1.1-v3.0), and an Advisor over it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import seed_store


@pytest.fixture(scope="session")
def mlperf_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = open_store(f"embedded:{tmp_path_factory.mktemp('mlperf-kb') / 'kb'}")
    seed_store(store)
    yield store
    store.close()


@pytest.fixture(scope="session")
def kb_advisor(mlperf_store: Store):  # type: ignore[no-untyped-def]
    from stack_advisor.advisor.engine import Advisor

    advisor = Advisor(mlperf_store)
    advisor.warm()
    return advisor
