"""advisor collect end to end: real PI runs stored in the embedded store and in Neo4j."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.collectors.collect import collect, merge_stack
from stack_advisor.collectors.fingerprint import FileRoot, fingerprint_host
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import ObservationFilter, SoftwareStack
from stack_advisor.store.base import Store

SMALL = {"pis": "gemm,mem_copy", "backends": "numpy"}


@pytest.fixture(scope="module")
def fingerprint():  # type: ignore[no-untyped-def]
    return fingerprint_host(nvml=None, libraries=False)


def test_collect_stores_real_observations_once(store: Store, fingerprint) -> None:  # type: ignore[no-untyped-def]
    outcome = collect(
        ["pi"], run_id="run-test-1", options=SMALL, fingerprint=fingerprint, device="cpu"
    )
    [doc] = outcome.documents
    assert (
        doc.provenance.source == "stack-advisor-collector"
        and doc.provenance.kind.value == "measured"
    )
    assert {m.benchmark.name for m in doc.measurements} == {"gemm", "mem_copy"}
    assert all(m.value > 0 and m.p10 is not None and m.cv is not None for m in doc.measurements)
    assert any(f.error_class == "Unsupported" for f in doc.failures)  # numpy bf16 GEMM
    first = store.ingest_document(doc)
    assert first.observations_new == len(doc.measurements) > 0
    again = collect(
        ["pi"], run_id="run-test-1", options=SMALL, fingerprint=fingerprint, device="cpu"
    )
    assert store.ingest_document(again.documents[0]).observations_new == 0
    stored = store.query_observations(ObservationFilter(run_id="run-test-1", benchmark_family="pi"))
    assert len(stored) == len(doc.measurements) and stored[0].host is not None


def test_bad_input_is_named_before_running(fingerprint) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput, match="nope"):
        collect(["nope"], fingerprint=fingerprint)
    with pytest.raises(InvalidInput, match="profile"):
        collect(["pi"], profile="huge", fingerprint=fingerprint)
    with pytest.raises(InvalidInput, match="backends"):
        collect(["pi"], options={"backends": "fortran"}, fingerprint=fingerprint)


def test_merge_stack_moves_the_fingerprint_framework_to_extra() -> None:
    base = SoftwareStack(framework="torch", framework_version="2.5.0", extra={"numpy": "2.0"})
    merged = merge_stack(base, {"framework": "numpy", "framework_version": "2.0", "cuda": "12.4"})
    assert (merged.framework, merged.framework_version, merged.cuda) == ("numpy", "2.0", "12.4")
    assert merged.extra == {"torch": "2.5.0"}


def test_cli_json_summary_and_out_file(tmp_path: Path) -> None:
    out = tmp_path / "docs.json"
    store_path = tmp_path / "kb"
    args = [
        "collect",
        "--device",
        "cpu",
        "--run-id",
        "cli-1",
        "-o",
        "pis=mem_copy",
        "-o",
        "backends=numpy",
        "--store",
        f"embedded:{store_path}",
        "--out",
        str(out),
        "--json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (
        summary["run_id"] == "cli-1"
        and summary["measurements"] == 1
        and summary["stored"]["observations_new"] == 1
    )
    assert json.loads(out.read_text())[0]["measurements"][0]["benchmark"]["name"] == "mem_copy"
    again = CliRunner().invoke(app, args)
    assert json.loads(again.stdout)["stored"]["observations_new"] == 0


def test_cli_rejects_malformed_options() -> None:
    result = CliRunner().invoke(app, ["collect", "-o", "novalue", "--no-store"])
    assert result.exit_code != 0 and "novalue" in str(result.exception)


def test_recorded_tree_root_is_used(fingerprint) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(FileRoot().root, Path) and fingerprint.host.name
