"""The advice commands' JSON contract (scripts call them exactly as written): advisor recommend,
predict, evaluate, compare — run in-process against a real embedded store holding published
MLPerf results (resnet50 and bert-99 from the starter knowledge base)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot

runner = CliRunner()


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = f"embedded:{tmp_path_factory.mktemp('cli-kb') / 'kb'}"
    rows = [o for o in load_snapshot().observations if o.benchmark.name in ("resnet50", "bert-99")]
    with open_store(uri) as store:
        store.ensure_schema()
        store.ingest(IngestBatch(observations=rows))
    return uri


def _json(args: list[str], stdin: str | None = None) -> Any:
    result = runner.invoke(app, args, input=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _message(result: Any) -> str:
    """What the user sees: output, or the AdvisorError that ``stack_advisor.cli.main.main``
    prints."""
    return f"{result.output} {result.exception or ''}"


def test_recommend_json(kb: str) -> None:
    out = _json(
        [
            "recommend",
            "--benchmark",
            "resnet50",
            "--scenario",
            "Offline",
            "--top",
            "3",
            "--image",
            "nvcr.io/nvidia/tensorrt:23.04-py3",
            "--json",
            "--store",
            kb,
        ]
    )
    assert set(out) >= {
        "workload",
        "metric",
        "objective",
        "generation",
        "recommendations",
        "excluded",
        "notes",
    }
    assert len(out["recommendations"]) == 3
    for rec in out["recommendations"]:
        assert rec["basis"] in ("observed", "interpolated", "transferred")
        assert {"score", "confidence"} <= set(rec)
        assert set(rec["candidate"]) >= {
            "stack_id",
            "stack",
            "accelerator",
            "accelerator_count",
            "placement",
        }
        assert set(rec["evidence"]) >= {"count", "sources", "rounds", "last_seen"}
        assert yaml.safe_load(rec["snippet_yaml"])["kind"] == "Pod"


def test_recommend_flags_and_workload_file_agree(kb: str, tmp_path: Path) -> None:
    flags = _json(
        [
            "recommend",
            "--benchmark",
            "bert-99",
            "--scenario",
            "Server",
            "--accelerator",
            "A100",
            "--framework",
            "tensorrt>=8",
            "--objective",
            "cost",
            "--json",
            "--store",
            kb,
        ]
    )
    spec = tmp_path / "w.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "benchmark": "bert-99",
                "scenario": "Server",
                "objective": "cost",
                "frameworks": [{"name": "tensorrt", "version": ">=8"}],
                "hardware": {"accelerators": ["A100"]},
            }
        )
    )
    from_file = _json(["recommend", "--workload", str(spec), "--json", "--store", kb])
    assert [r["candidate"]["stack_id"] for r in flags["recommendations"]] == [
        r["candidate"]["stack_id"] for r in from_file["recommendations"]
    ]
    assert flags["recommendations"] and all(
        "A100" in r["candidate"]["accelerator"] for r in flags["recommendations"]
    )


def test_recommend_without_an_image_says_so_instead_of_an_invalid_pod(
    kb: str, tmp_path: Path
) -> None:
    """Reproducer: the snippet had no container image (the API server rejected the Pod)."""
    out = _json(
        [
            "recommend",
            "--benchmark",
            "resnet50",
            "--scenario",
            "Offline",
            "--top",
            "2",
            "--json",
            "--store",
            kb,
        ]
    )
    for rec in out["recommendations"]:
        assert rec["snippet_yaml"] is None and rec["snippet"] is None
        assert (
            "no container image" in rec["snippet_missing"] and "--image" in rec["snippet_missing"]
        )
    result = runner.invoke(
        app,
        [
            "recommend",
            "--benchmark",
            "resnet50",
            "--scenario",
            "Offline",
            "--top",
            "2",
            "--snippets",
            "--store",
            kb,
        ],
    )
    assert result.exit_code == 0 and "kind: Pod" not in result.output
    assert "no container image" in result.output and "--image" in result.output
    spec = tmp_path / "w.yaml"
    spec.write_text(yaml.safe_dump({"benchmark": "resnet50", "scenario": "Offline"}))
    out = _json(
        [
            "recommend",
            "--workload",
            str(spec),
            "--image",
            "nvcr.io/nvidia/tensorrt:23.04-py3",
            "--top",
            "1",
            "--json",
            "--store",
            kb,
        ]
    )
    assert (
        yaml.safe_load(out["recommendations"][0]["snippet_yaml"])["spec"]["containers"][0]["image"]
        == "nvcr.io/nvidia/tensorrt:23.04-py3"
    )
    result = runner.invoke(
        app, ["recommend", "--benchmark", "resnet50", "--image", "a b", "--store", kb]
    )
    assert result.exit_code != 0 and "image" in _message(result)


def test_recommend_bad_input_exits_1_naming_the_field(kb: str) -> None:
    result = runner.invoke(
        app, ["recommend", "--benchmark", "resnet50", "--objective", "fast", "--store", kb]
    )
    assert result.exit_code != 0 and "objective" in _message(result)


def test_predict_from_stdin(kb: str) -> None:
    queries = [
        {
            "accelerator": "NVIDIA A100-SXM-80GB",
            "accelerator_count": 8,
            "placement": "bare-metal",
            "components": {"cuda": "12.0", "tensorrt": "8.6.0", "driver": "525.60.13"},
            "framework": "tensorrt",
            "benchmark": "resnet50",
            "scenario": "Offline",
            "metric": "samples_per_second",
        }
    ]
    out = _json(["predict", "--query", "-", "--json", "--store", kb], stdin=json.dumps(queries))
    assert len(out) == 1
    p = out[0]
    assert set(p) >= {"query", "value", "interval", "observed", "basis", "evidence"}
    assert p["interval"]["low"] <= p["value"] <= p["interval"]["high"] and p["value"] > 0


def test_evaluate_json(kb: str) -> None:
    out = _json(
        [
            "evaluate",
            "--protocol",
            "by-round",
            "--train-until",
            "v2.1",
            "--test-round",
            "v3.0",
            "--json",
            "--store",
            kb,
        ]
    )
    assert out["protocol"] == "by-round" and out["holdout_count"] > 0 and out["train_count"] > 0
    overall = out["overall"]
    assert overall["predictions"] + overall["refused"] == out["holdout_count"]
    assert (
        overall["mape"] is not None and overall["mape"] >= 0 and overall["top1_regret"] is not None
    )
    assert {"by_basis", "by_seen", "by_benchmark", "by_metric"} <= set(out)
    assert overall["lookup_mape"] is not None
    bad = runner.invoke(app, ["evaluate", "--protocol", "colour", "--store", kb])
    assert bad.exit_code != 0 and "colour" in _message(bad)


def test_compare_json(kb: str) -> None:
    out = _json(
        [
            "compare",
            "stacks",
            "--a",
            "tensorrt=8.5.0",
            "--b",
            "tensorrt=8.6.0",
            "--benchmark",
            "resnet50",
            "--json",
            "--store",
            kb,
        ]
    )
    assert set(out) >= {"pairs", "ratio", "p_value", "a_count", "b_count", "verdict"}
    assert isinstance(_json(["compare", "placement", "--json", "--store", kb]), list)
    assert isinstance(
        _json(["compare", "regressions", "--component", "tensorrt", "--json", "--store", kb]), list
    )
