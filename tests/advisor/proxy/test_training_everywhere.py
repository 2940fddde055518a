"""A described training run (and a vision model's refusal) everywhere an LLM description goes
(issue 42 item 6): ``advisor predict --model``, the API's workload ``model`` object, the cluster
mode (``--nodes``) and the web recommend form, each through its public path over one embedded
store of the starter knowledge base's described models' results."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.store.registry import open_store
from tests.support.api import auth, make_app
from tests.support.gfd_pools import POOL_NODES, h100_nodes
from tests.support.starter_kb import llm_tokens_per_second, snapshot_store, vision_and_training

runner = CliRunner()
RUN = {"parameters": 8e9, "train_tokens": 1.0e9}
CNN = {"architecture": "cnn", "parameters": 25e6, "flops_per_sample": 4.1e9}
BAND = "fold band at 80%"  # the vision refusal (sample_answer.MAX_SPREAD)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    return snapshot_store(tmp_path_factory.mktemp("everywhere-kb"), vision_and_training)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("described")
    out = {"run": folder / "run.yaml", "cnn": folder / "cnn.yaml"}
    out["run"].write_text(json.dumps(RUN))  # JSON is YAML
    out["cnn"].write_text(json.dumps(CNN))
    nodes = folder / "nodes.json"
    nodes.write_text(json.dumps({"items": [*POOL_NODES, *h100_nodes(2)]}))
    out["nodes"] = nodes
    return out


def _cli(*args: str, code: int = 0) -> Any:
    """The JSON answer; ``code`` 1 where nothing is answered (the refusals are printed)."""
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _recommended(kb: str, run: Path) -> list[dict[str, Any]]:
    args = ["recommend", "--model", str(run), "--family", "mlperf-training", "--top", "50"]
    recs: list[dict[str, Any]] = _cli(*args, "--store", kb)["recommendations"]
    return recs


def _on(r: dict[str, Any]) -> str:
    return str(r["candidate"]["accelerator"])


def _proxy_figure(r: dict[str, Any], at: str) -> None:
    """A proxy figure with its interval and provenance: published results on ``at``."""
    assert r["basis"] == "proxy"
    assert r["interval"]["low"] < r["value"] < r["interval"]["high"]
    sources = r["evidence"]["sources"]
    assert sources and all(f" on {at} (" in s for s in sources), sources
    factors = r.get("factors", [])  # a pool's row carries its figure's sources, not factors
    assert "based_on" in r or any(f["name"].startswith("efficiency on this") for f in factors)


def test_predict_a_training_run_per_asked_accelerator(kb: str, files: dict[str, Path]) -> None:
    got = _cli(
        "predict",
        *("--model", str(files["run"]), "--family", "mlperf-training"),
        *("--accelerator", "H100-SXM5-80GB", "--accelerator", "T4", "--count", "8"),
        *("--store", kb),
    )
    assert [p["query"]["accelerator"] for p in got] == ["H100-SXM5-80GB", "T4"]
    h100, t4 = got
    _proxy_figure(h100, "H100-SXM5-80GB")
    assert h100["query"]["metric"] == "accelerator_hours"
    assert h100["query"]["family"] == "mlperf-training"
    assert h100["query"]["accelerator_count"] == 8
    # accelerator-hours are the run's on any count: recommend's best H100 row, unscaled
    rec = next(r for r in _recommended(kb, files["run"]) if _on(r) == "H100-SXM5-80GB")
    assert h100["value"] == pytest.approx(rec["value"])
    assert any(f"{rec['value'] / 8:.3g} h to train on 8" in w for w in h100["warnings"])
    assert t4["basis"] == "unsupported" and t4["value"] is None
    assert "'T4'" in t4["reason"] and "no result of a described model" in t4["reason"]


def test_predict_refuses_a_vision_model_with_the_band(kb: str, files: dict[str, Path]) -> None:
    args = ["predict", "--model", str(files["cnn"]), "--store", kb]
    got = _cli(*args, "--accelerator", "H100-SXM5-80GB", code=1)
    assert len(got) == 1 and got[0]["basis"] == "unsupported" and got[0]["value"] is None
    assert BAND in got[0]["reason"] and got[0]["query"]["metric"] == "samples_per_second"
    alone = runner.invoke(app, args)  # no accelerator asked: the error, as recommend's
    assert alone.exit_code == 1 and BAND in f"{alone.output} {alone.exception}"


@pytest.fixture(scope="module")
def client(kb: str) -> Iterator[tuple[TestClient, str]]:
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write")}
    with open_store(kb) as store, TestClient(make_app(store, tokens)) as c:
        yield c, tokens["read"]


def test_api_model_object_is_the_cli_answer(
    kb: str, files: dict[str, Path], client: tuple[TestClient, str]
) -> None:
    c, token = client
    workload = {"family": "mlperf-training", "model": {"name": "run", **RUN}}
    r = c.post("/v1/recommendations", json={"workload": workload, "top": 50}, headers=auth(token))
    assert r.status_code == 200, r.text
    api = r.json()["recommendations"]
    cli = _recommended(kb, files["run"])
    assert [(_on(x), x["value"]) for x in api] == [(_on(x), x["value"]) for x in cli]
    assert {x["metric"] for x in api} == {"accelerator_hours"}
    _proxy_figure(api[0], _on(api[0]))
    vision = {"model": {"name": "cnn", **CNN}}
    r = c.post("/v1/recommendations", json={"workload": vision}, headers=auth(token))
    assert r.status_code == 404 and BAND in r.text


def test_cluster_mode_ranks_pools_by_the_training_figure(
    kb: str, files: dict[str, Path], client: tuple[TestClient, str]
) -> None:
    args = ["recommend", "--model", str(files["run"]), "--family", "mlperf-training"]
    got = _cli(*args, "--nodes", str(files["nodes"]), "--gpus", "8", "--store", kb)
    recs = got["recommendations"]
    assert recs and {r["pool"] for r in recs} == {"h100-train"}
    for r in recs:
        _proxy_figure(r, "H100-SXM5-80GB")
        assert r["metric"] == "accelerator_hours" and r["based_on"]["basis"] == "proxy"
        assert r["score"] == pytest.approx(-r["interval"]["high"])  # the pessimistic end
        assert any(
            f"{r['value'] / 8:.3g} h to train on the job's 8 units" in w for w in r["warnings"]
        )
    assert [r["score"] for r in recs] == sorted((r["score"] for r in recs), reverse=True)
    assert got["excluded_pools"]["a100-bm"].startswith("no proxy estimate")
    # the same through the API
    c, token = client
    body = {
        "workload": {"family": "mlperf-training", "model": {"name": "run", **RUN}},
        "nodes": [*POOL_NODES, *h100_nodes(2)],
        "gpus": 8,
    }
    api = c.post("/v1/recommendations", json=body, headers=auth(token))
    assert api.status_code == 200, api.text
    assert [r["value"] for r in api.json()["recommendations"]] == [r["value"] for r in recs]
    vision = runner.invoke(
        app,
        ["recommend", "--model", str(files["cnn"]), "--nodes", str(files["nodes"]), "--store", kb],
    )
    assert vision.exit_code == 1 and BAND in f"{vision.output} {vision.exception}"


def test_web_form_takes_a_training_description(client: tuple[TestClient, str]) -> None:
    c, token = client
    login = c.post("/login", data={"token": token, "next": "/"}, follow_redirects=False)
    assert login.status_code == 303, login.text
    form = {"family": "mlperf-training", "model": "run", "model_yaml": json.dumps(RUN), "top": "3"}
    doc = c.get("/recommend?" + urlencode({**form, "format": "json"})).json()
    api = c.post(
        "/v1/recommendations",
        json={"workload": {"family": "mlperf-training", "model": {"name": "run", **RUN}}, "top": 3},
        headers=auth(token),
    ).json()
    assert [r["basis"] for r in doc["recommendations"]] == ["proxy"] * 3
    assert [r["value"] for r in doc["recommendations"]] == [
        r["value"] for r in api["recommendations"]
    ]
    _proxy_figure(doc["recommendations"][0], _on(doc["recommendations"][0]))
    page = c.get("/recommend?" + urlencode(form))
    assert page.status_code == 200 and "basis proxy: run" in page.text
    cnn = c.get("/recommend?" + urlencode({"model": "cnn", "model_yaml": json.dumps(CNN)}))
    assert cnn.status_code == 200 and BAND in cnn.text


@pytest.mark.slow
def test_predict_count_for_an_llm_is_replicas_of_what_memory_needs(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``--count`` on a described LLM: the figure of the replicas of the count memory asks for
    that the count holds; fewer than one replica is refused naming the count."""
    folder = tmp_path_factory.mktemp("llm-count")
    uri = snapshot_store(folder, llm_tokens_per_second)
    config = folder / "big.yaml"  # 810 GB of BF16 weights: more than one H100 by far
    config.write_text("architecture: dense\nparameters: 405B\nprecision: bf16\n")
    base = ["predict", "--model", str(config), "--isl", "2048", "--osl", "512"]
    base += ["--concurrency", "64", "--accelerator", "H100-SXM5-80GB", "--store", uri]
    own = _cli(*base)[0]
    need = own["query"]["accelerator_count"]
    assert need > 1, own
    count = 2 * need + 1  # two replicas, one accelerator left idle
    replicas = 2
    more = _cli(*base, "--count", str(count))[0]
    assert more["basis"] == "proxy" and more["query"]["accelerator_count"] == count
    assert more["value"] == pytest.approx(replicas * own["value"])
    assert more["interval"]["low"] == pytest.approx(replicas * own["interval"]["low"])
    assert any("2 replica(s)" in w for w in more["warnings"])
    fewer = _cli(*base, "--count", str(need - 1), code=1)[0]
    assert fewer["basis"] == "unsupported" and f"accelerator_count: {need - 1}" in fewer["reason"]
