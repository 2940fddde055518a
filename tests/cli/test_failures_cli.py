"""`advisor db failures`: the recorded failures with their class, as `GET /v1/failures` gives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.guard import run_guarded
from cli.main import app
from graph_schema.models import IngestBatch
from graph_schema.registry import open_store
from tests.support.api import document


@pytest.fixture
def kb_with_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for var in ("ADVISOR_API", "ADVISOR_STORE", "ADVISOR_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    doc = document("run-classes", n=1)
    base = {k: doc[k] for k in ("stack", "accelerator", "placement", "provenance")} | {"run_id": "run-classes"}
    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ingest(IngestBatch.model_validate({"failures": [
            base | {"stage": "install", "error_class": "InstallError", "message": "no wheel for cp311"},
            base | {"stage": "run", "error_class": "NotSupported", "message": "cupy has no convolution primitive"},
            base | {"stage": "environment", "error_class": "MissingEnvironment", "message": "no torch extra"}]}))
    return uri


def test_failures_are_listed_with_their_class(kb_with_failures: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(app, ["db", "failures", "--store", kb_with_failures, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["error_class"], r["failure_class"]) for r in rows} == {
        ("InstallError", "stack failure"), ("NotSupported", "harness limitation"),
        ("MissingEnvironment", "environment")}

    assert run_guarded(app, ["db", "failures", "--store", kb_with_failures, "--class", "stack", "--json"]) == 0
    assert [r["error_class"] for r in json.loads(capsys.readouterr().out)] == ["InstallError"]

    assert run_guarded(app, ["db", "failures", "--store", kb_with_failures, "--format", "plain"]) == 0
    out = capsys.readouterr().out
    assert "failure_class" in out and "harness limitation" in out and "cupy has no convolution primitive" in out


def test_an_unknown_class_is_refused_naming_the_choices(kb_with_failures: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(app, ["db", "failures", "--store", kb_with_failures, "--class", "harnes"]) == 2
    err = capsys.readouterr().err
    assert "--class must be one of stack, harness, environment" in err and "did you mean 'harness'" in err
