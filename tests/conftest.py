"""Shared fixtures: stores over every backend (Feast-style creators), and isolation from the
user's own data directories."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.ci import IN_CI
from tests.support.starter_kb import copy_starter_kb, make_starter_kb
from tests.support.stores import (
    GRAPH_BACKENDS,
    EmbeddedCreator,
    Neo4jCreator,
    StoreCreator,
    make_creator,
)

# Test modules import TensorFlow at collection time; Triton's LLVM must be loaded before it or a
# later torch optimizer aborts the process (see stack_advisor.microbench.frameworks).
with contextlib.suppress(Exception):  # no Triton: nothing can clash
    import triton._C.libtriton  # noqa: F401


# What collection imports (TensorFlow, torch, the catalogue, the test modules, the starter
# snapshot that advisor/test_rules.py reads at import: ~1.1M objects for the fast tier) lives as
# long as the session. The cyclic collector is off during collection; then all of it is frozen
# for the session (gc.freeze: full collections skip it; what tests make is collected as before).
# Each full collection walked it: in the fast tier, GC took 18.3 CPU-s (25 full collections,
# 14.8 s; 2.8 s of them during collection), frozen 13.3 s (50 cheaper ones after collection,
# 10.7 s, and 4 during collection, 1.0 s). Unfrozen at the end, so pytest's last collections and
# the interpreter's exit see every object as before. The tests then make objects in bursts (an
# index, an app, a table per test): a young generation of 20,000 objects instead of 700 took GC
# from 12.2 CPU-s in 12,205 collections to 4.1 s in 261, the tier from 4.77 to 4.29 CPU-minutes
# (bench/fast_tier.py, one run each in turn); cycles are still collected, later.
GC_THRESHOLD = (20_000, 20, 10)
_GC_BEFORE = gc.get_threshold()


def pytest_configure(config: pytest.Config) -> None:
    gc.disable()


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.enable()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def pytest_unconfigure(config: pytest.Config) -> None:
    gc.unfreeze()
    gc.set_threshold(*_GC_BEFORE)
    gc.enable()  # a run stopped before collection ended


@pytest.fixture(autouse=True, scope="session")
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Never touch the real default store, spool or caches of the person running the tests."""
    root = tmp_path_factory.mktemp("xdg")
    saved = {
        k: os.environ.get(k)
        for k in (
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
            "ADVISOR_STORE",
            "ADVISOR_TABLE_CACHE",
            "ADVISOR_CALIBRATION_CACHE",
            "ADVISOR_CATALOG_CACHE",
            "ADVISOR_RESIDENT",
        )
    }
    # no resident answerer (stack_advisor.cli.resident) from any CLI call of the tests, in-process
    # or in a subprocess (they inherit it); tests/cli/test_resident.py turns it on for its own
    os.environ["ADVISOR_RESIDENT"] = "0"
    os.environ["XDG_DATA_HOME"] = str(root / "data")
    os.environ["XDG_STATE_HOME"] = str(root / "state")
    os.environ["ADVISOR_TABLE_CACHE"] = str(root / "tables")  # persisted observation tables
    os.environ["ADVISOR_CALIBRATION_CACHE"] = str(root / "calibration")  # and their calibrations
    os.environ["ADVISOR_CATALOG_CACHE"] = str(root / "catalogue")  # the parsed catalogue
    os.environ.pop("ADVISOR_STORE", None)
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.advisor.knowledge.cache_folders import CacheFolders

    # in-process advisors persist where this session's CLI and API do (the edge passes the
    # folders in; library code never reads the environment)
    saved_caches = Advisor.caches
    Advisor.caches = CacheFolders.from_environ(os.environ)
    yield
    Advisor.caches = saved_caches
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


# ---- stores: one creator per backend (tests/support/stores.py); every contract test runs on each


@pytest.fixture
def embedded_store(tmp_path: Path) -> Iterator[Store]:
    creator = EmbeddedCreator(tmp_path)
    yield creator.create()
    creator.teardown()


@pytest.fixture
def neo4j_store(neo4j_uri: str) -> Iterator[Store]:
    creator = Neo4jCreator(neo4j_uri)
    yield creator.create()
    creator.teardown()


@pytest.fixture(params=GRAPH_BACKENDS)
def store_creator(request: pytest.FixtureRequest, tmp_path: Path) -> StoreCreator:
    """The graph backends; the store contract's module widens this to ``ALL_BACKENDS``."""
    return make_creator(request, tmp_path)


@pytest.fixture
def store(store_creator: StoreCreator) -> Iterator[Store]:
    s = store_creator.create()
    yield s
    store_creator.teardown()


@pytest.fixture
def graph(store: Store, store_creator: StoreCreator) -> Store:
    """The graph store under ``store`` (itself, or the one the REST store's API serves)."""
    return store_creator.graph()


# ---- the real Neo4j server (owner: tests/support/neo4j_server.py) --------------------------------
# Policy: NEO4J_URI when set; else testcontainers (neo4j:5.26-community) when a Docker engine
# answers; else the local Neo4j 5.26 Community server assembled from Maven Central
# (deploy/neo4j-local/setup.sh). Outside CI a missing server/Java skips with the reason; under
# CI=true it fails the run.


@pytest.fixture(scope="session")
def neo4j_uri() -> Iterator[str]:
    from tests.support.neo4j_server import Neo4jUnavailable, neo4j_server

    server = neo4j_server()
    try:
        uri = server.__enter__()
    except Neo4jUnavailable as exc:
        reason = f"no Neo4j server: {exc}"
        if IN_CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        yield uri
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def local_neo4j() -> Iterator[Any]:
    """A Neo4j server of the test's own (tests/support/neo4j_server.py's LocalNeo4j), for tests that
    kill and restart it; removed afterwards."""
    from tests.support.neo4j_server import LocalNeo4j, Neo4jUnavailable

    try:
        server = LocalNeo4j()
        server.start()
    except Neo4jUnavailable as exc:
        if IN_CI:
            pytest.fail(f"no Neo4j server: {exc}", pytrace=False)
        pytest.skip(f"no Neo4j server: {exc}")
    yield server
    server.remove()


# The starter knowledge base: its store file made once per session (tests/support/starter_kb.py;
# never opened: copy it with copy_starter_kb for a store of your own), a real embedded store over
# one copy, and an Advisor over that (the advisor, API and web tests).


@pytest.fixture(scope="session")
def starter_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_starter_kb(tmp_path_factory.mktemp("starter-kb"))


@pytest.fixture(scope="session")
def mlperf_store(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> Iterator[Store]:
    store = open_store(copy_starter_kb(starter_kb, tmp_path_factory.mktemp("mlperf-kb") / "kb"))
    yield store
    store.close()


@pytest.fixture(scope="session")
def kb_advisor(mlperf_store: Store):  # type: ignore[no-untyped-def]
    from stack_advisor.advisor.engine import Advisor

    advisor = Advisor(mlperf_store)
    advisor.warm()
    return advisor
