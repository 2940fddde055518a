"""Ingest and query through the API, over every store backend."""

from __future__ import annotations

from fastapi.testclient import TestClient

from stack_advisor.schema.graph import SCHEMA_VERSION
from tests.support.api import auth, document


def test_ingest_is_idempotent_and_counts_are_exact(
    client: TestClient, tokens: dict[str, str]
) -> None:
    doc = document("run-a", n=3)
    first = client.post("/v1/observations", json=doc, headers=auth(tokens["write"]))
    assert first.status_code == 200, first.text
    assert first.json() == {
        "documents": 1,
        "observations_received": 3,
        "observations_new": 3,
        "failures_received": 0,
        "failures_new": 0,
    }
    again = client.post("/v1/observations", json=[doc, doc], headers=auth(tokens["write"]))
    assert again.status_code == 200
    assert again.json()["observations_new"] == 0
    page = client.get("/v1/observations", params={"limit": 100}).json()
    assert len(page["items"]) == 3
    assert page["next_offset"] is None


def test_a_list_is_one_transaction(client: TestClient, tokens: dict[str, str]) -> None:
    good = document("run-good", n=2)
    bad = document("run-bad")
    bad["measurements"][0]["value"] = "fast"
    r = client.post("/v1/observations", json=[good, bad], headers=auth(tokens["write"]))
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "invalid_input"
    assert "body.1.measurements.0.value" in body["message"] and "'fast'" in body["message"]
    assert [d["field"] for d in body["details"]] == ["body.1.measurements.0.value"]
    # nothing of the batch was written
    assert client.get("/v1/observations").json()["items"] == []


def test_filters_and_pagination(client: TestClient, tokens: dict[str, str]) -> None:
    client.post(
        "/v1/observations",
        headers=auth(tokens["write"]),
        json=[
            document("run-1", accelerator="NVIDIA A100-SXM4-80GB", n=4),
            document("run-2", accelerator="NVIDIA L4", placement="passthrough", n=3),
        ],
    )
    l4 = client.get("/v1/observations", params={"accelerator": "NVIDIA L4"}).json()["items"]
    assert len(l4) == 3 and {o["accelerator"]["model"] for o in l4} == {
        "L4"
    }  # stored in catalogue names
    assert {o["provenance"]["details"]["accelerator_raw"] for o in l4} == {"NVIDIA L4"}
    vm = client.get("/v1/observations", params={"placement": "passthrough"}).json()["items"]
    assert {o["key"] for o in vm} == {o["key"] for o in l4}

    keys: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = client.get("/v1/observations", params={"limit": 3, "offset": offset}).json()
        keys += [o["key"] for o in page["items"]]
        offset = page["next_offset"]
    assert len(keys) == 7 and len(set(keys)) == 7 and keys == sorted(keys)

    one = client.get(f"/v1/observations/{keys[0]}")
    assert one.status_code == 200 and one.json()["key"] == keys[0]
    missing = client.get("/v1/observations/obs-does-not-exist")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_bad_query_parameters_name_the_field(client: TestClient) -> None:
    r = client.get("/v1/observations", params={"limit": 0})
    assert r.status_code == 422 and r.json()["details"][0]["field"] == "query.limit"
    r = client.get("/v1/observations", params={"placement": "cloud"})
    assert r.status_code == 422 and "'cloud'" in r.json()["message"]
    r = client.get("/v1/observations", params={"acclerator": "L4"})
    assert r.status_code == 422 and "query.acclerator" in r.json()["message"]
    r = client.get("/v1/observations", params={"limit": 50_000})
    assert r.status_code == 422 and "at most 10000" in r.json()["message"]


def test_catalog_failures_stats_and_schema(client: TestClient, tokens: dict[str, str]) -> None:
    doc = document("run-cat", n=2)
    failure = {k: doc[k] for k in ("stack", "accelerator", "placement", "provenance")}
    failure.update(run_id="run-cat", stage="run", error_class="OOM", message="out of memory")
    r = client.post("/v1/observations", json=doc, headers=auth(tokens["write"]))
    assert r.status_code == 200
    r = client.post("/v1/failures", json=failure, headers=auth(tokens["write"]))
    assert r.status_code == 200 and r.json()["failures_new"] == 1
    r = client.post("/v1/failures", json=[failure], headers=auth(tokens["write"]))
    assert r.json()["failures_new"] == 0

    stacks = client.get("/v1/stacks").json()
    assert stacks["total"] == 1 and stacks["items"][0]["framework"] == "pytorch"
    accels = client.get("/v1/accelerators").json()
    assert [a["model"] for a in accels["items"]] == ["A100-SXM4-80GB"]
    assert (
        list(accels["items"][0]["aliases_seen"]) == ["NVIDIA A100-SXM4-80GB"]
        and accels["items"][0]["resolved"]
    )
    assert client.get("/v1/benchmarks").json()["total"] == 2
    assert client.get("/v1/placements").json()["items"][0]["kind"] == "bare-metal"
    assert client.get("/v1/failures").json()["total"] == 1

    stats = client.get("/v1/stats").json()
    assert stats["schema_version"] == SCHEMA_VERSION
    assert stats["observations_by_source"] == {"stack-advisor-collector": 2}
    assert client.get("/v1/schema").json() == {
        "schema_version": SCHEMA_VERSION,
        "code_schema_version": SCHEMA_VERSION,
    }
    r = client.post("/v1/schema", headers=auth(tokens["admin"]))
    assert r.status_code == 200 and r.json()["schema_version"] == SCHEMA_VERSION


def test_health_ready_and_metrics(client: TestClient, tokens: dict[str, str]) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    client.post("/v1/observations", json=document("run-m", n=2), headers=auth(tokens["write"]))
    text = client.get("/metrics").text
    assert (
        'advisor_http_requests_total{method="POST",route="/v1/observations",status="200"} 1.0'
        in text
    )
    assert 'advisor_observations_ingested_total{new="true"} 2.0' in text
    assert "advisor_store_up 1.0" in text


def test_observations_since_a_generation_pass_through_the_rest_store(
    client: TestClient, tokens: dict[str, str]
) -> None:
    from stack_advisor.store.rest_store import RestStore

    client.post("/v1/observations", json=document("run-a", n=3), headers=auth(tokens["write"]))
    first = client.get("/v1/stats").json()["generation"]
    client.post("/v1/observations", json=document("run-b", n=2), headers=auth(tokens["write"]))
    second = client.get("/v1/stats").json()["generation"]
    page = client.get("/v1/observations", params={"since_generation": first}).json()
    assert [o["run_id"] for o in page["items"]] == ["run-b", "run-b"]
    assert {o["generation"] for o in page["items"]} == {second}
    bad = client.get(
        "/v1/observations", params={"since_generation": second, "until_generation": first}
    )
    assert bad.status_code == 422 and "until_generation" in bad.text
    for name in ("since_generation", "until_generation"):  # past INT64 was a 500 (fuzz_api)
        past = client.get("/v1/observations", params={"since_generation": 0, name: 2**63})
        assert past.status_code == 422 and name in past.text
    # the REST store asks the same (the CLI's and a replica's incremental table over --api)
    remote = RestStore(str(client.base_url), tokens["read"], transport=client._transport)
    assert [o.run_id for o in remote.observations_since(first)] == ["run-b", "run-b"]
    assert [o.run_id for o in remote.observations_since(0, until=first)] == ["run-a"] * 3


def test_failures_carry_their_class(client: TestClient, tokens: dict[str, str]) -> None:
    """GET /v1/failures says whose fault each failure is (stack_advisor.schema.models.FailureClass):
    a
    harness limitation sent the old way (stage "run", NotSupported) is classed on the way in."""
    doc = document("run-classes", n=1)
    base = {k: doc[k] for k in ("stack", "accelerator", "placement", "provenance")} | {
        "run_id": "run-classes"
    }
    sent = [
        base | {"stage": "run", "error_class": "OOM", "message": "out of memory"},
        base | {"stage": "run", "error_class": "NotSupported", "message": "numpy has no bf16 GEMM"},
        base
        | {
            "stage": "environment",
            "error_class": "MissingEnvironment",
            "message": "no torch extra",
        },
    ]
    r = client.post("/v1/failures", json=sent, headers=auth(tokens["write"]))
    assert r.status_code == 200 and r.json()["failures_new"] == 3
    items = client.get("/v1/failures").json()["items"]
    assert {(f["error_class"], f["stage"], f["failure_class"]) for f in items} == {
        ("OOM", "run", "stack failure"),
        ("NotSupported", "unsupported", "harness limitation"),
        ("MissingEnvironment", "environment", "environment"),
    }
