"""The server trusts an observed data generation for ``ADVISOR_GENERATION_TTL_S``: a write
through it is seen at once, a write by another process within the TTL."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from stack_advisor.server import create_app
from tests.support.api import auth, document, make_settings

WORKLOAD = {
    "workload": {"family": "cnn", "benchmark": "resnet50-train", "parameters": {"batch_size": 64}},
    "top": 5,
}


def _accelerators(client: TestClient) -> set[str]:
    r = client.post("/v1/recommendations", json=WORKLOAD)
    assert r.status_code == 200, r.text
    return {rec["candidate"]["accelerator"] for rec in r.json()["recommendations"]}


def test_writes_through_the_server_show_at_once_others_within_the_ttl(
    embedded_store, tokens
) -> None:  # type: ignore[no-untyped-def]
    # a TTL well above one answer's time on a loaded machine (an incremental table update of a
    # few rows took 0.56 s under CI load: a 0.5 s TTL had run out before the next request)
    settings = make_settings(tokens, generation_ttl_s=5.0)
    app = create_app(settings, store=embedded_store)
    with TestClient(app) as client:
        r = client.post(
            "/v1/observations",
            json=[document("r-a100", accelerator="NVIDIA A100-SXM4-80GB", n=3)],
            headers=auth(tokens["write"]),
        )
        assert r.status_code == 200, r.text
        assert _accelerators(client) == {
            "A100-SXM4-80GB"
        }  # through the server: at once (catalogue names)
        r = client.post(
            "/v1/observations",
            json=[document("r-l4", accelerator="NVIDIA L4", n=3)],
            headers=auth(tokens["write"]),
        )
        assert _accelerators(client) == {"A100-SXM4-80GB", "L4"}
        # another process writes straight into the store: not seen before the TTL runs out...
        from stack_advisor.schema.models import ResultDocument

        embedded_store.ingest_document(
            ResultDocument.model_validate(document("r-t4", accelerator="NVIDIA T4", n=3))
        )
        assert "T4" not in _accelerators(client)
        time.sleep(5.1)  # ...and seen after it
        assert "T4" in _accelerators(client)
