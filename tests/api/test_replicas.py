"""Several API replicas on one Neo4j (docs/scale.md): two API processes (uvicorn, this
checkout's code), each with its own driver, table and model kept per store data generation; a
write through one shows in the other's answers once it reads the moved generation (within
``ADVISOR_GENERATION_TTL_S``). Nothing is shared between them but the database."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import httpx
import pytest

from tests.support.api import document
from tests.support.api_process import Api

WORKLOAD = {
    "workload": {"family": "cnn", "benchmark": "resnet50-train", "parameters": {"batch_size": 64}},
    "top": 5,
}
TTL_S = 0.5


def _accelerators(api: Api) -> set[str]:
    r = httpx.post(api.url + "/v1/recommendations", json=WORKLOAD, timeout=60)
    assert r.status_code == 200, r.text
    return {rec["candidate"]["accelerator"] for rec in r.json()["recommendations"]}


def _write(api: Api, token: str, run_id: str, accelerator: str) -> None:
    r = httpx.post(
        api.url + "/v1/observations",
        json=[document(run_id, accelerator=accelerator, n=3)],
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert r.status_code == 200, r.text


def _generation(api: Api) -> int:
    return int(httpx.get(api.url + "/v1/stats", timeout=30).json()["generation"])


@pytest.mark.neo4j
def test_a_write_through_one_replica_is_answered_by_the_other(
    neo4j_store, neo4j_uri, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    tokens = {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}
    env = {"ADVISOR_READ_AUTH": "open", "ADVISOR_GENERATION_TTL_S": str(TTL_S)}
    a = Api(neo4j_uri, tokens, tmp_path / "a.log", **env)
    b = Api(neo4j_uri, tokens, tmp_path / "b.log", **env)
    try:
        a.start()
        b.start()
        _write(a, tokens["write"], "r-a100", "NVIDIA A100-SXM4-80GB")
        assert _accelerators(a) == {"A100-SXM4-80GB"}
        time.sleep(TTL_S + 0.2)
        assert _accelerators(b) == {"A100-SXM4-80GB"}
        before = _generation(b)
        _write(a, tokens["write"], "r-l4", "NVIDIA L4")
        assert _accelerators(a) == {"A100-SXM4-80GB", "L4"}  # the writer: at once
        time.sleep(TTL_S + 0.2)
        assert _generation(b) > before
        assert _accelerators(b) == {"A100-SXM4-80GB", "L4"}  # the other: once the TTL ran out
        _write(b, tokens["write"], "r-t4", "NVIDIA T4")  # and the other way round
        time.sleep(TTL_S + 0.2)
        assert _accelerators(a) == {"A100-SXM4-80GB", "L4", "T4"}
    finally:
        a.stop()
        b.stop()
