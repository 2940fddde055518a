"""The API's workload takes a ``model`` object: POST /v1/recommendations answers it by proxy, and
a bad field is a 422 naming it (a real embedded store of the starter KB's LLM tokens/s results)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.schema.models import IngestBatch
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from stack_advisor.store.starter import load_snapshot
from tests.support.api import auth, make_settings
from tests.support.starter_kb import llm_tokens_per_second

QWEN = yaml.safe_load((Path(__file__).parent / "data" / "published.yaml").read_text())["models"][3]


@pytest.fixture
def client(embedded_store: Store) -> Iterator[TestClient]:
    rows = [o for o in load_snapshot().observations if llm_tokens_per_second(o)]
    embedded_store.ingest(IngestBatch(observations=rows))
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    app = create_app(make_settings(tokens), store=embedded_store)
    app.dependency_overrides[get_store] = lambda: embedded_store
    with TestClient(app, raise_server_exceptions=False, headers=auth(tokens["read"])) as c:
        yield c


@pytest.mark.slow
def test_model_object_is_answered_by_proxy(client: TestClient) -> None:
    model = {"name": "Qwen3-30B-A3B", **QWEN["config"]}
    workload = {"model": model, "isl": 2048, "osl": 512, "concurrency": 64}
    r = client.post("/v1/recommendations", json={"workload": workload, "top": 2})
    assert r.status_code == 200, r.text
    recs = r.json()["recommendations"]
    assert [x["basis"] for x in recs] == ["proxy", "proxy"]
    assert all(x["interval"]["low"] < x["value"] < x["interval"]["high"] for x in recs)
    bad = {**workload, "model": {**model, "num_hidden_layers": 0}}
    r = client.post("/v1/recommendations", json={"workload": bad})
    assert r.status_code == 422 and "num_hidden_layers" in r.text


@pytest.mark.slow
def test_cluster_request_with_a_model_is_answered_by_proxy_per_pool(client: TestClient) -> None:
    from tests.support.gfd_pools import POOL_NODES, h100_nodes

    model = {"name": "Qwen3-30B-A3B", **QWEN["config"]}
    workload = {"model": model, "isl": 2048, "osl": 512, "concurrency": 64}
    body = {"workload": workload, "nodes": [*POOL_NODES, *h100_nodes(1)], "top": 3}
    r = client.post("/v1/recommendations", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["recommendations"], answer["excluded_pools"]
    assert {x["pool"] for x in answer["recommendations"]} == {"h100-train"}
    assert {x["basis"] for x in answer["recommendations"]} == {"proxy"}
    assert answer["excluded_pools"]["t4-pool"].startswith("no proxy estimate")
