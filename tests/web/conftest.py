"""Web explorer fixtures: one small embedded store for the whole package (a slice of the starter
knowledge base: resnet50 and llama2-70b-99 in every round and scenario, the H100 micro-benchmarks
measured on bare metal and in VMs, and the recorded failures), an app that needs a read token, and
its tokens."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.api import make_app

BENCHMARKS = {"resnet50", "conv2d", "gemm", "llama2-70b-99"}  # llama: LLM columns, long refusals


@pytest.fixture(scope="package")
def web_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    snapshot = load_snapshot()
    store = open_store(f"embedded:{tmp_path_factory.mktemp('web-kb') / 'kb'}")
    store.ingest(
        IngestBatch(
            observations=[o for o in snapshot.observations if o.benchmark.name in BENCHMARKS],
            failures=snapshot.failures,
            runs=snapshot.runs,
        )
    )
    yield store
    store.close()


@pytest.fixture(scope="package")
def sweep_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A store holding a real sweep: two numpy builds measured on this machine (the matrix of
    tests/collectors/test_sweep.py, its two cells that install), through `advisor sweep`."""
    import yaml

    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app
    from tests.support.sweep import MATRIX

    tmp = tmp_path_factory.mktemp("sweep")
    matrix = tmp / "matrix.yaml"
    matrix.write_text(yaml.safe_dump({**MATRIX, "cells": MATRIX["cells"][:2]}))
    with pytest.MonkeyPatch.context() as env:
        for var in ("ADVISOR_API", "ADVISOR_STORE", "ADVISOR_TOKEN", "ADVISOR_SWEEP_CACHE"):
            env.delenv(var, raising=False)
        env.setenv("XDG_DATA_HOME", str(tmp / "data"))
        env.setenv("ADVISOR_SWEEP_UV_CACHE", str(Path.home() / ".cache/stack-advisor/sweep/uv"))
        code = run_guarded(
            app,
            [
                "sweep",
                str(matrix),
                "--store",
                str(tmp / "kb"),
                "--cache-dir",
                str(tmp / "cache"),
                "--format",
                "plain",
            ],
        )
    assert code == 0
    store = open_store(str(tmp / "kb"))
    yield store
    store.close()


@pytest.fixture(scope="package")
def web_tokens() -> dict[str, str]:
    return {scope: secrets.token_urlsafe(24) for scope in ("read", "write")}


@pytest.fixture(scope="package")
def web_app(web_store: Store, web_tokens: dict[str, str]) -> FastAPI:
    return make_app(web_store, web_tokens)


@pytest.fixture(scope="package")
def artifacts() -> Path:
    """Screenshots and downloads of the browser tests (test-artifacts/ is not committed)."""
    folder = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
