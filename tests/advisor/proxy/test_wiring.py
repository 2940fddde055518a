"""``advisor recommend|predict --model`` and the workload's model object, on a real embedded
store holding the starter knowledge base's published LLM tokens/s results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from stack_advisor.advisor.workload import Workload
from stack_advisor.cli.main import app
from stack_advisor.schema.errors import InvalidInput
from tests.support.starter_kb import llm_tokens_per_second, snapshot_store

runner = CliRunner()
QWEN = yaml.safe_load((Path(__file__).parent / "data" / "published.yaml").read_text())["models"][3]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    return snapshot_store(tmp_path_factory.mktemp("proxy-kb"), llm_tokens_per_second)


def _json(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
def test_catalogued_llm_without_results_answers_by_proxy(kb: str) -> None:
    got = _json(
        [
            "recommend",
            "--benchmark",
            "gpt-oss-120b",
            "--scenario",
            "Offline",
            "--top",
            "3",
            "--json",
            "--store",
            kb,
        ]
    )
    recs = got["recommendations"]
    assert recs and {r["basis"] for r in recs} == {"proxy"}
    for r in recs:
        assert r["interval"]["low"] < r["value"] < r["interval"]["high"]
        assert r["evidence"]["sources"] and r["factors"]
    assert [r["score"] for r in recs] == sorted((r["score"] for r in recs), reverse=True)


@pytest.mark.slow
def test_flags_with_a_count_answer_a_catalogued_model_by_proxy(kb: str) -> None:
    """``predict --benchmark gpt-oss-120b ... --count 8`` was refused as an unknown benchmark
    while the same flags without ``--count`` answered by proxy: both answer by proxy."""
    args = ["predict", "--benchmark", "gpt-oss-120b", "--scenario", "Offline"]
    got = _json([*args, "--accelerator", "H100-SXM5-80GB", "--count", "8", "--json", "--store", kb])
    assert got and {p["basis"] for p in got} == {"proxy"}
    assert {p["query"]["accelerator_count"] for p in got} == {8}


@pytest.mark.slow
def test_predict_model_file(kb: str, tmp_path: Path) -> None:
    config = tmp_path / "Qwen3-30B-A3B" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(QWEN["config"]))
    args = [
        "predict",
        "--model",
        str(config),
        "--isl",
        "2048",
        "--osl",
        "512",
        "--concurrency",
        "64",
        "--accelerator",
        "H100-SXM5-80GB",
        "--json",
        "--store",
        kb,
    ]
    got = _json(args)
    assert got and all(p["basis"] == "proxy" for p in got)
    assert {p["query"]["benchmark"] for p in got} == {"Qwen3-30B-A3B"}
    assert {p["accelerator"] for p in got} == {"H100-SXM5-80GB"}
    assert all("fits" in p["warnings"][-1] for p in got)
    # a part the proxy has no figure on is refused saying so, beside the answered one (a probe
    # got an empty table and exit 0 for A100)
    both = _json([*args[:-3], "--accelerator", "A100-SXM4-80GB", "--json", "--store", kb])
    refused = [p for p in both if p["basis"] == "unsupported"]
    assert [p["query"]["accelerator"] for p in refused] == ["A100-SXM4-80GB"]
    assert "the proxy has no figure on it" in refused[0]["reason"]
    assert [p for p in both if p["basis"] == "proxy"]


def test_workload_model_object_errors_name_the_field() -> None:
    bad = {**QWEN["config"], "num_experts_per_tok": 200, "name": "q"}
    with pytest.raises(InvalidInput, match="num_experts_per_tok"):
        Workload.from_dict({"model": bad, "isl": 10, "osl": 10})
    with pytest.raises(InvalidInput, match="isl"):
        Workload.from_dict({"model": {**QWEN["config"], "name": "q"}, "isl": 0})
    ok = Workload.from_dict({"model": {**QWEN["config"], "name": "q"}, "isl": 10, "osl": 5})
    assert ok.benchmark == "q" and ok.parameter_filters() == {}


@pytest.mark.slow
def test_short_form_needs_concurrency_or_shape(kb: str, tmp_path: Path) -> None:
    short = tmp_path / "my-moe.yaml"
    short.write_text("architecture: moe\nparameters: 30B\nactive_parameters: 3B\nprecision: fp8\n")
    base = ["recommend", "--model", str(short), "--isl", "2048", "--osl", "512", "--store", kb]
    refused = runner.invoke(app, base)
    assert isinstance(refused.exception, InvalidInput)
    assert str(refused.exception).startswith("concurrency:")
    got = _json([*base, "--concurrency", "64", "--json", "--top", "2"])
    assert [r["basis"] for r in got["recommendations"]] == ["proxy", "proxy"]
    assert "my-moe" in got["notes"][0]


def test_described_model_is_for_serving_only() -> None:
    from stack_advisor.advisor.proxy.ranking import described_model

    with pytest.raises(InvalidInput, match="serving"):
        described_model({"name": "gpt-oss-120b"}, None, [], "mlperf-training")
    assert described_model("llama2-70b-99", None, ["llama2-70b-99"], "mlperf-inference") is None
    assert described_model(None, "resnet50", [], "mlperf-inference") is None
    spec = described_model(None, "gpt-oss-120b", ["llama2-70b-99"], "mlperf-inference")
    assert spec is not None and spec.moe
