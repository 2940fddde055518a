"""``advisor import results`` and ``advisor import tf-cnn`` against a real embedded store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.imports import tf_cnn_context
from stack_advisor.collectors.importers.results import documents_batch, load_documents
from stack_advisor.schema.errors import InvalidInput

DATA = Path(__file__).parents[1] / "data"

DOCUMENT: dict[str, Any] = {
    "run": {"run_id": "run-import-test"},
    "provenance": {
        "kind": "measured",
        "source": "stack-advisor-collector",
        "details": {"host": "node-a"},
    },
    "stack": {"framework": "pytorch", "framework_version": "2.3.1", "python": "3.11.7"},
    "accelerator": {"model": "CPU Test CPU", "vendor": "cpu"},
    "placement": {"kind": "bare-metal"},
    "host": {"name": "node-a"},
    "measurements": [
        {
            "benchmark": {"family": "pi", "name": "gemm", "parameters": {"n": 512}},
            "metric": "gflops",
            "value": 41.0,
            "unit": "GFLOP/s",
            "samples": 5,
            "p10": 40.0,
            "p90": 42.0,
        },
    ],
    "failures": [{"stage": "run", "error_class": "Unsupported", "message": "no GPU"}],
}


def test_one_document_or_a_list(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(DOCUMENT))
    many = tmp_path / "many.json"
    second = json.loads(json.dumps(DOCUMENT))
    second["run"]["run_id"] = "run-import-test-2"
    many.write_text(json.dumps([DOCUMENT, second]))
    assert len(load_documents(one)) == 1
    docs = load_documents(many)
    batch = documents_batch(docs)
    assert (len(batch.observations), len(batch.failures), len(batch.runs)) == (2, 2, 2)


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{nope", "not JSON"),
        ("[1]", "[0]: a result document must be a JSON object, got int"),
        (
            json.dumps([DOCUMENT, {**DOCUMENT, "accelerator": {"model": "  "}}]),
            "[1]: accelerator.model",
        ),
        (
            json.dumps(
                {**DOCUMENT, "measurements": [{**DOCUMENT["measurements"][0], "value": "fast"}]}
            ),
            "measurements.0.value",
        ),
    ],
)
def test_malformed_documents_name_the_field(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InvalidInput) as info:
        load_documents(path)
    assert fragment in str(info.value) and "bad.json" in str(info.value)


def test_tf_cnn_context_from_files_and_flags(tmp_path: Path) -> None:
    fingerprint = tmp_path / "fp.json"
    fingerprint.write_text(
        json.dumps({k: DOCUMENT[k] for k in ("stack", "accelerator", "placement", "host")})
    )
    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps({"framework": "tensorflow", "framework_version": "2.21"}))
    ctx = tf_cnn_context(
        stack_json=stack,
        fingerprint=fingerprint,
        overrides={("stack", "cuda"): None, ("placement", "kind"): "vgpu"},
    )
    assert (ctx["stack"].framework, ctx["stack"].framework_version, ctx["stack"].python) == (
        "tensorflow",
        "2.21",
        "3.11.7",
    )
    assert ctx["placement"].kind.value == "vgpu" and ctx["host"].name == "node-a"
    with pytest.raises(InvalidInput, match="--accelerator"):
        tf_cnn_context(stack_json=None, fingerprint=None, overrides={})
    with pytest.raises(InvalidInput, match=r"placement.kind"):
        tf_cnn_context(
            stack_json=None,
            fingerprint=None,
            overrides={("accelerator", "model"): "CPU x", ("placement", "kind"): "cloud"},
        )


# ---- through the CLI into a real store ---------------------------------------------------------


def _store_uri(tmp_path: Path) -> str:
    return f"embedded:{tmp_path / 'kb'}"


def test_cli_import_results_is_idempotent_and_all_or_nothing(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    uri = _store_uri(tmp_path)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(DOCUMENT))
    runner = CliRunner()
    first = runner.invoke(app, ["import", "results", str(good), "--store", uri, "--json"])
    assert first.exit_code == 0, first.output
    row = json.loads(first.stdout)
    assert (row["documents"], row["observations_new"], row["failures_new"]) == (1, 1, 1)
    again = json.loads(
        runner.invoke(app, ["import", "results", str(good), "--store", uri, "--json"]).stdout
    )
    assert (again["observations_new"], again["failures_new"]) == (0, 0)

    other = json.loads(json.dumps(DOCUMENT))
    other["run"]["run_id"] = "run-other"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([other, {**DOCUMENT, "placement": {"kind": "teleported"}}]))
    failed = runner.invoke(
        app, ["import", "results", str(good), str(bad), "--store", uri, "--json"]
    )
    assert failed.exit_code != 0
    from stack_advisor.store.registry import open_store

    with open_store(uri) as store:
        assert store.stats().observations_by_source == {"stack-advisor-collector": 1}


def test_cli_import_tf_cnn_log(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    uri = _store_uri(tmp_path)
    log = DATA / "tf_cnn" / "measured_tf2.21_resnet50_cpu_train.log"
    runner = CliRunner()
    args = [
        "import",
        "tf-cnn",
        str(log),
        "--accelerator",
        "CPU Test CPU",
        "--placement",
        "bare-metal",
        "--host",
        "node-a",
        "--run-id",
        "tfcnn-test",
        "--store",
        uri,
        "--json",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (
        row["run_id"] == "tfcnn-test"
        and row["measurements"] >= 1
        and row["observations_new"] == row["measurements"]
    )
    assert json.loads(runner.invoke(app, args).stdout)["observations_new"] == 0
    crash = runner.invoke(
        app,
        [
            "import",
            "tf-cnn",
            str(DATA / "tf_cnn" / "measured_tf2.21_crash_invalid_model.log"),
            "--accelerator",
            "CPU Test CPU",
            "--store",
            uri,
            "--json",
        ],
    )
    assert crash.exit_code == 0, crash.output
    assert json.loads(crash.stdout)["failures_new"] == 1


def test_cli_import_results_from_a_directory(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    folder = tmp_path / "results"
    folder.mkdir()
    for i in range(3):
        doc = json.loads(json.dumps(DOCUMENT))
        doc["run"]["run_id"] = f"run-dir-{i}"
        (folder / f"run{i}.json").write_text(json.dumps(doc))
    (folder / "notes.txt").write_text("not a document")
    result = CliRunner().invoke(
        app, ["import", "results", str(folder), "--store", _store_uri(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (row["files"], row["documents"], row["observations_new"]) == (3, 3, 3)
