"""`advisor db failures`: the recorded failures with their class, as `GET /v1/failures` gives
them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from tests.support.api import document
from tests.support.cli import advisor, isolate_cli


@pytest.fixture
def kb_with_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    isolate_cli(monkeypatch, tmp_path)
    doc = document("run-classes", n=1)
    base = {k: doc[k] for k in ("stack", "accelerator", "placement", "provenance")} | {
        "run_id": "run-classes"
    }
    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ingest(
            IngestBatch.model_validate(
                {
                    "failures": [
                        base
                        | {
                            "stage": "install",
                            "error_class": "InstallError",
                            "message": "no wheel for cp311",
                        },
                        base
                        | {
                            "stage": "run",
                            "error_class": "NotSupported",
                            "message": "cupy has no convolution primitive",
                        },
                        base
                        | {
                            "stage": "environment",
                            "error_class": "MissingEnvironment",
                            "message": "no torch extra",
                        },
                    ]
                }
            )
        )
    return uri


def test_failures_are_listed_with_their_class(
    kb_with_failures: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = advisor(capsys, "db", "failures", "--store", kb_with_failures, "--json")
    rows = json.loads(out)
    assert code == 0
    assert {(r["error_class"], r["failure_class"]) for r in rows} == {
        ("InstallError", "stack failure"),
        ("NotSupported", "harness limitation"),
        ("MissingEnvironment", "environment"),
    }

    code, out, _ = advisor(
        capsys, "db", "failures", "--store", kb_with_failures, "--class", "stack", "--json"
    )
    assert code == 0 and [r["error_class"] for r in json.loads(out)] == ["InstallError"]

    code, out, _ = advisor(
        capsys, "db", "failures", "--store", kb_with_failures, "--format", "plain"
    )
    assert (
        code == 0
        and "failure_class" in out
        and "harness limitation" in out
        and "cupy has no convolution primitive" in out
    )


def test_an_unknown_class_is_refused_naming_the_choices(
    kb_with_failures: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = advisor(
        capsys, "db", "failures", "--store", kb_with_failures, "--class", "harnes"
    )
    assert (
        code == 2
        and "--class must be one of stack, harness, environment" in err
        and "did you mean 'harness'" in err
    )
