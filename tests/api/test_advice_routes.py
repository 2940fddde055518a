"""The advice routes over both stores: POST /v1/recommendations, POST /v1/predictions,
GET /v1/compare (+ /placement, /regressions), against real published MLPerf results (a slice of
the starter knowledge base: every resnet50 and bert-99 result, v1.1-v3.0)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.api.settings import Settings
from stack_advisor.schema.models import IngestBatch
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from stack_advisor.store.starter import load_snapshot
from tests.support.api import auth
from tests.support.stores import GRAPH_BACKENDS, make_creator

BENCHMARKS = {"resnet50", "bert-99"}


@pytest.fixture(scope="module", params=GRAPH_BACKENDS)
def advice_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """The slice in one store per backend for the whole module (ingested once: the advice routes
    only read)."""
    creator = make_creator(request, tmp_path_factory.mktemp("advice"))
    store = creator.create()
    rows = [o for o in load_snapshot().observations if o.benchmark.name in BENCHMARKS]
    store.ingest(IngestBatch(observations=rows))
    yield store
    creator.teardown()


@pytest.fixture
def advice(advice_store: Store, settings: Settings, tokens: dict[str, str]) -> Iterator[TestClient]:
    app = create_app(settings, store=advice_store)
    app.dependency_overrides[get_store] = lambda: advice_store
    with TestClient(app, raise_server_exceptions=False, headers=auth(tokens["read"])) as client:
        yield client


def _recommend(client: TestClient, workload: dict[str, Any], top: int = 5) -> Any:
    response = client.post("/v1/recommendations", json={"workload": workload, "top": top})
    assert response.status_code == 200, response.text
    return response.json()


def test_recommendations_are_ranked_labelled_and_placeable(advice: TestClient) -> None:
    body = _recommend(
        advice,
        {
            "benchmark": "resnet50",
            "scenario": "Offline",
            "image": "nvcr.io/nvidia/tensorrt:23.04-py3",
        },
    )
    recs = body["recommendations"]
    assert [r["rank"] for r in recs] == list(range(1, len(recs) + 1)) and len(recs) == 5
    scores = [r["score"] for r in recs]
    assert scores == sorted(scores, reverse=True)
    assert body["metric"] == "samples_per_second"
    for r in recs:
        assert r["basis"] in ("observed", "interpolated", "transferred")
        assert r["basis"] != "observed" or r["evidence"]["count"] > 0
        assert r["score"] is not None and 0 <= r["confidence"] <= 1
        assert r["interval"]["low"] <= r["value"] <= r["interval"]["high"]
        pod = yaml.safe_load(r["snippet_yaml"])
        assert pod == r["snippet"] and pod["kind"] == "Pod"
    observed = [r for r in recs if r["basis"] == "observed"]
    assert observed and all("mlperf-inference" in r["evidence"]["sources"] for r in observed)


def test_constraints_are_applied(advice: TestClient) -> None:
    body = _recommend(
        advice,
        {
            "benchmark": "bert-99",
            "scenario": "Server",
            "hardware": {"accelerators": ["A100"], "count": 8},
        },
    )
    assert body["recommendations"]
    for r in body["recommendations"]:
        assert "A100" in r["candidate"]["accelerator"] and r["candidate"]["accelerator_count"] == 8


def test_bad_workloads_are_clear_errors(advice: TestClient) -> None:
    r = advice.post(
        "/v1/recommendations", json={"workload": {"benchmark": "resnet50", "objective": "fast"}}
    )
    assert r.status_code == 422 and "objective" in r.json()["message"]
    r = advice.post("/v1/recommendations", json={"workload": {"benchmark": "resnet50"}, "top": 0})
    assert r.status_code == 422 and "top" in r.json()["message"]
    # a body cut short: the parser's reason and where, not "body.24: JSON decode error (got dict)"
    r = advice.post(
        "/v1/recommendations",
        content=b'{"workload": {"benchmark"',
        headers={"content-type": "application/json"},
    )
    message = r.json()["message"]
    assert r.status_code == 422 and message.startswith("body: not valid JSON: "), message
    assert "(at character " in message and "got" not in message
    r = advice.post("/v1/recommendations", json={"workload": {"benchmark": "no-such-benchmark"}})
    assert r.status_code == 404 and "no-such-benchmark" in r.json()["message"]


def test_predictions_label_observed_and_predicted(advice: TestClient) -> None:
    best = _recommend(advice, {"benchmark": "resnet50", "scenario": "Offline"}, top=1)
    cand = best["recommendations"][0]["candidate"]
    stack = cand["stack"]
    components = {k: stack[k] for k in ("driver", "cuda", "cudnn", "tensorrt") if stack.get(k)}
    query = {
        "accelerator": cand["accelerator"],
        "accelerator_count": cand["accelerator_count"],
        "placement": cand["placement"],
        "components": components,
        "framework": stack.get("framework"),
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    unseen = {**query, "accelerator": "NVIDIA L40", "accelerator_count": 3}
    r = advice.post("/v1/predictions", json={"queries": [query, unseen]})
    assert r.status_code == 200, r.text
    seen_p, unseen_p = r.json()
    assert (
        seen_p["observed"] is True
        and seen_p["basis"] == "observed"
        and seen_p["evidence"]["count"] >= 1
    )
    assert unseen_p["observed"] is False and unseen_p["basis"] in ("interpolated", "transferred")
    assert 0 < unseen_p["interval"]["low"] <= unseen_p["value"] <= unseen_p["interval"]["high"]
    r = advice.post("/v1/predictions", json={"queries": [{"accelerator": "x"}]})
    [refused] = r.json()
    assert r.status_code == 200 and refused["basis"] == "unsupported"
    assert "queries.0.benchmark: Field required" in refused["reason"]
    assert "(got" not in refused["reason"]  # a missing field has no value to show
    assert "queries.0.metric" not in refused["reason"]  # none named: the slice's throughput


def test_compare_routes(advice: TestClient) -> None:
    r = advice.get(
        "/v1/compare",
        params={
            "a": "tensorrt=8.5.0",
            "b": "tensorrt=8.6.0",
            "benchmark": "resnet50",
            "scenario": "Offline",
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["a_count"] > 0 and body["b_count"] > 0 and body["verdict"]
    r = advice.get(
        "/v1/compare", params={"a": "nonsense", "b": "tensorrt=8.6.0", "benchmark": "resnet50"}
    )
    assert r.status_code == 422 and "nonsense" in r.json()["message"]
    # a version past int()'s 4300 digits had been a 500; the query's text is bounded now, and a
    # number too long to be a release matches no stack (a 404 that echoes it cut)
    long = {"a": "tensorrt=" + "9" * 5000, "b": "tensorrt=8.6.0", "benchmark": "resnet50"}
    r = advice.get("/v1/compare", params=long)
    assert r.status_code == 422 and "4096" in r.text, r.text
    r = advice.get("/v1/compare", params={**long, "a": "tensorrt=" + "9" * 4000})
    assert r.status_code == 404 and "(4000 characters)" in r.json()["message"], r.text
    assert len(r.text) < 1000
    r = advice.get("/v1/compare/placement")
    assert r.status_code == 200
    for item in r.json():
        assert (
            item["pairs"] >= 1
            and item["placement"] in ("vgpu", "passthrough")
            and item["ratio"] > 0
        )
    r = advice.get("/v1/compare/regressions", params={"component": "tensorrt"})
    assert r.status_code == 200 and isinstance(r.json(), list)


def test_rank_stacks_route_answers_as_the_cli_does(advice: TestClient, advice_store: Store) -> None:
    """``GET /v1/compare/rank-stacks`` is ``advisor compare rank-stacks``: the same rows as
    ``Advisor.rank_stacks`` on the same store, names as users write them, errors naming what is
    wrong."""
    from stack_advisor.advisor.engine import Advisor

    asked = {"benchmark": "resnet50", "scenario": "offline", "accelerator": "NVIDIA H100-SXM-80GB"}
    r = advice.get("/v1/compare/rank-stacks", params=asked)
    assert r.status_code == 200, r.text
    rows = r.json()
    local = Advisor(advice_store).rank_stacks(**asked)
    assert rows == json.loads(json.dumps(local)) and len(rows) >= 2
    carried = [row["carried_forward"] for row in rows]
    assert carried == sorted(carried, reverse=True)
    assert all(row["framework"] and row["round"] and row["results"] >= 1 for row in rows)
    r = advice.get("/v1/compare/rank-stacks", params={**asked, "as_of": "yesterday"})
    assert r.status_code == 422 and "as_of: 'yesterday'" in r.json()["message"], r.text
    r = advice.get("/v1/compare/rank-stacks", params={**asked, "accelerator": "NVIDIA B300"})
    assert r.status_code == 404 and "resnet50" in r.json()["message"], r.text
    r = advice.get("/v1/compare/rank-stacks", params={"benchmark": "resnet50"})
    assert r.status_code == 422 and "accelerator" in r.text, r.text
    # a value that names nothing held is the request's fault (422), naming what is held
    for field, value, held in (
        ("division", "weird", "closed"),
        ("metric", "bogus", "samples_per_second"),
        ("family", "bogus", "mlperf-inference"),
    ):
        r = advice.get("/v1/compare/rank-stacks", params={**asked, field: value})
        message = r.json()["message"]
        assert r.status_code == 422 and message.startswith(f"{field}: {value!r}"), r.text
        assert held in message, message


def test_unknown_names_are_422_naming_the_field_with_suggestions(advice: TestClient) -> None:
    r = advice.post(
        "/v1/recommendations", json={"workload": {"benchmark": "resnet50", "scenario": "Ofline"}}
    )
    assert r.status_code == 422
    assert "scenario" in r.json()["message"] and "did you mean 'Offline'" in r.json()["message"]
    r = advice.post(
        "/v1/recommendations",
        json={
            "workload": {
                "benchmark": "resnet50",
                "hardware": {"accelerators": ["NVIDIA A100-SXM-80G"]},
            }
        },
    )
    assert r.status_code == 422 and "did you mean 'NVIDIA A100-SXM-80GB'" in r.json()["message"]
    body = _recommend(advice, {"benchmark": "resnet50", "scenario": "offline"}, top=1)
    assert body["recommendations"][0]["basis"] == "observed"


def test_an_unknown_accelerator_refuses_its_query_not_the_batch(advice: TestClient) -> None:
    good = {
        "accelerator": "NVIDIA A100-SXM-80GB",
        "accelerator_count": 8,
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    r = advice.post(
        "/v1/predictions", json={"queries": [good, {**good, "accelerator": "Foo GPU 9000"}]}
    )
    assert r.status_code == 200, r.text
    answered, refused = r.json()
    assert (
        answered["basis"] in ("observed", "interpolated", "transferred") and answered["value"] > 0
    )
    assert refused["basis"] == "unsupported" and refused["value"] is None
    assert "Foo GPU 9000" in refused["warnings"][0]
