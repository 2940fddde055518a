"""Issue 18's reproducers: no request crashes or stalls the service, bad input is a 422 naming the
field, authorization comes before the body, and probes answer whatever the store does."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.server import create_app
from stack_advisor.store.base import MAX_OFFSET, Store
from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import auth, document, make_settings


def _client(store: Store, tokens: dict[str, str], **overrides: Any) -> TestClient:
    app = create_app(make_settings(tokens, **overrides), store=store)
    app.dependency_overrides[get_store] = lambda: store
    return TestClient(app, raise_server_exceptions=False)


def _seed(client: TestClient, tokens: dict[str, str], n: int = 26) -> None:
    r = client.post(
        "/v1/observations", json=document("run-seed", n=n), headers=auth(tokens["write"])
    )
    assert r.status_code == 200, r.text
    assert r.json()["observations_new"] == n


# ---- paging: no SKIP can crash or stall the engine -----------------------------------------


@pytest.mark.parametrize("offset", [2**31, 182378316, 2**63 - 1, 2**63, 2**64 + 7, 10**30])
def test_huge_offsets_are_a_422_naming_offset(
    client: TestClient, tokens: dict[str, str], offset: int
) -> None:
    _seed(client, tokens)
    r = client.get(f"/v1/observations?limit=3&offset={offset}")
    assert r.status_code == 422, r.text
    assert r.json()["details"][0]["field"] == "query.offset"
    assert "after" in r.json()["details"][0]["message"] or "100000" in r.text
    assert client.get("/healthz").status_code == 200  # the process is still there


@pytest.mark.parametrize("offset", [25, 26, 60_000, MAX_OFFSET])
def test_deep_offsets_within_the_bound_answer(
    client: TestClient, tokens: dict[str, str], offset: int
) -> None:
    # On a 26-row table the embedded engine died with SIGSEGV from SKIP 60000 on (and at random
    # from ~30000); the offset is now turned into a key, so no SKIP reaches the engine.
    _seed(client, tokens)
    r = client.get(f"/v1/observations?limit=3&offset={offset}")
    assert r.status_code == 200, r.text
    assert len(r.json()["items"]) == (1 if offset == 25 else 0)


def test_keyset_cursor_walks_every_row_once(client: TestClient, tokens: dict[str, str]) -> None:
    _seed(client, tokens)
    keys: list[str] = []
    after = None
    while True:
        params: dict[str, Any] = {"limit": 5} | ({"after": after} if after else {})
        page = client.get("/v1/observations", params=params).json()
        keys += [item["key"] for item in page["items"]]
        after = page["next_after"]
        if after is None:
            break
    assert len(keys) == 26 and keys == sorted(set(keys))
    by_offset = client.get("/v1/observations", params={"limit": 5, "offset": 10}).json()
    assert [i["key"] for i in by_offset["items"]] == keys[10:15]


def test_openapi_limit_maximum_is_the_servers_cap(store: Store, tokens: dict[str, str]) -> None:
    with _client(store, tokens, max_page=500) as client:
        spec = client.get("/openapi.json").json()
        limits = [
            p["schema"]["maximum"]
            for item in spec["paths"].values()
            for op in item.values()
            for p in op.get("parameters", [])
            if p["name"] == "limit"
        ]
        assert limits and set(limits) == {500}
        assert client.get("/v1/observations?limit=501").status_code == 422
        assert client.get("/v1/observations?limit=500").status_code == 200


# ---- validation: 422 naming the field -------------------------------------------------------


def _bad(mutate: Any) -> dict[str, Any]:
    doc = document("run-bad", n=1)
    mutate(doc)
    return doc


BAD_DOCUMENTS = {
    "p10 > p90": (lambda d: d["measurements"][0].update(p10=9.0, p90=1.0), "p10"),
    "negative value": (lambda d: d["measurements"][0].update(value=-5.0), "value"),
    "count 0": (lambda d: d["accelerator"].update(count=0), "accelerator.count"),
    "NUL in accelerator": (
        lambda d: d["accelerator"].update(model="A100\x00x"),
        "accelerator.model",
    ),
    "NUL in benchmark name": (
        lambda d: d["measurements"][0]["benchmark"].update(name="r\x00n"),
        "benchmark.name",
    ),
    "year 9999": (
        lambda d: d["measurements"][0].update(timestamp="9999-01-01T00:00:00Z"),
        "timestamp",
    ),
    "zone-less": (
        lambda d: d["measurements"][0].update(timestamp="2026-01-01T00:00:00"),
        "timestamp",
    ),
    "zone-less run": (lambda d: d["run"].update(started_at="2026-01-01T00:00:00"), "started_at"),
}


@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_bad_values_are_a_422_naming_the_field(
    client: TestClient, tokens: dict[str, str], case: str
) -> None:
    mutate, field = BAD_DOCUMENTS[case]
    r = client.post("/v1/observations", json=_bad(mutate), headers=auth(tokens["write"]))
    assert r.status_code == 422, r.text
    assert field in r.json()["message"], r.json()["message"]
    assert client.get("/v1/observations").json()["items"] == []  # nothing half-written


def test_cluster_names_with_a_slash_are_a_422(client: TestClient, tokens: dict[str, str]) -> None:
    for path in ("/v1/inventory/a%2Fb", "/v1/inventory/a/b", "/v1/inventory/a/"):
        r = client.put(path, json={"nodes": []}, headers=auth(tokens["write"]))
        assert r.status_code == 422, (path, r.status_code, r.text)
        assert "cluster" in r.json()["message"]
    assert (
        client.put(
            "/v1/inventory/prod-1", json={"nodes": []}, headers=auth(tokens["write"])
        ).status_code
        == 200
    )


def test_a_name_the_client_resolves_into_another_path_gets_a_documented_status(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """'a/..' and 'a/../..' never reach the route (the client removes dot segments): 405 and
    404, both documented on syncInventory (fuzz_api found the 404 undocumented)."""
    documented = client.get("/openapi.json").json()["paths"]["/v1/inventory/{cluster}"]["put"]
    for name, status in (("a/..", 405), ("a/../..", 404)):
        r = client.put(f"/v1/inventory/{name}", json={"nodes": []}, headers=auth(tokens["write"]))
        assert r.status_code == status and str(status) in documented["responses"]
    assert client.get("/v1/inventory").json()["items"] == []


def test_a_sweep_host_no_store_can_hold_is_a_422(client: TestClient) -> None:
    """fuzz_api: host=NUL was a 500 (the filter's own validation escaped the route)."""
    r = client.get("/v1/compare/sweep", params={"sweep": "s", "host": "\x00"})
    assert r.status_code == 422 and r.json()["message"].startswith("host: must not contain NUL")


# Names a client or proxy turns into another path ('.', '..': an undocumented 404 or 405 before),
# non-printing characters, and bytes that are not UTF-8 (the server decodes them as U+FFFD).
UNUSABLE_CLUSTER_PATHS = {
    "%2E": "path steps",
    "%2E%2E": "path steps",
    "%2e%2e": "path steps",
    "%C2%85": "U+0085",
    "%E2%80%A8": "U+2028",
    "a%00b": "U+0000",
    "%1B%5B31m": "U+001B",
    "%ff": "not UTF-8",
    "%C0%80": "not UTF-8",
    "%ED%A0%80": "not UTF-8",
    "%20%20": "blank",
    "x" * 254: "at most 253",
}


@pytest.mark.parametrize("path", sorted(UNUSABLE_CLUSTER_PATHS))
def test_unusable_cluster_names_are_a_422_naming_the_field(
    client: TestClient, tokens: dict[str, str], path: str
) -> None:
    r = client.put(f"/v1/inventory/{path}", json={"nodes": []}, headers=auth(tokens["write"]))
    assert r.status_code == 422, (path, r.status_code, r.text)
    detail = r.json()["details"][0]
    assert detail["field"] == "path.cluster" and UNUSABLE_CLUSTER_PATHS[path] in detail["message"]
    assert client.get("/v1/inventory").json()["items"] == []


@pytest.mark.parametrize(
    "name",
    [
        "é-prod",
        "日本-gpu",
        "\U0001f680 rocket",
        "a..b",
        "...",
        "%",
        "?#;",
        "\u200b zero width",
        "\ufeffbom",
        "ünïcødé \u202e rtl",
    ],
)
def test_any_printable_unicode_names_an_inventory(
    client: TestClient, tokens: dict[str, str], name: str
) -> None:
    from urllib.parse import quote

    r = client.put(
        f"/v1/inventory/{quote(name, safe='')}",
        json={"nodes": [{"name": "n1"}]},
        headers=auth(tokens["write"]),
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"cluster": name, "nodes": 1}
    listed = client.get("/v1/inventory", params={"cluster": name}).json()
    assert listed["items"] == [{"name": "n1"}]


@pytest.mark.parametrize("name", [".", "..", "a/b", "\x85", "bad\ufffd", "\t"])
def test_every_store_refuses_unusable_cluster_names_before_writing(store: Store, name: str) -> None:
    """The same rule in the store interface: the REST store refuses before sending (a '..'
    would otherwise reach another endpoint), the others before their transaction."""
    from stack_advisor.schema.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"^cluster: .* cannot name an inventory"):
        store.sync_inventory(name, [{"name": "n1"}])
    assert store.list_inventory() == []


def test_the_rest_store_refuses_before_sending_and_quotes_what_it_sends() -> None:
    import httpx

    from stack_advisor.schema.errors import InvalidInput
    from stack_advisor.store.rest_store import RestStore

    sent: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.raw_path)
        return httpx.Response(200, json={"cluster": "x", "nodes": 1})

    store = RestStore("http://api.invalid", token="t" * 20, transport=httpx.MockTransport(answer))
    for name in ("..", ".", "a/b"):
        with pytest.raises(InvalidInput, match="cannot name an inventory"):
            store.sync_inventory(name, [{"name": "n1"}])
    assert sent == []
    store.sync_inventory("日本 a..b?#", [{"name": "n1"}])
    assert sent == [b"/v1/inventory/%E6%97%A5%E6%9C%AC%20a..b%3F%23"]


def test_ingest_requests_are_bounded(store: Store, tokens: dict[str, str]) -> None:
    with _client(store, tokens, max_batch_items=10) as client:
        # 10 measurements and the document's run: 11 items (issue 32: runs count too)
        r = client.post(
            "/v1/observations", json=document("run-big", n=10), headers=auth(tokens["write"])
        )
        assert r.status_code == 413 and "ADVISOR_MAX_BATCH_ITEMS" in r.json()["message"]
        ok = client.post(
            "/v1/observations", json=document("run-ok", n=9), headers=auth(tokens["write"])
        )
        assert ok.status_code == 200


# ---- authorization before the body ---------------------------------------------------------


def test_malformed_json_without_a_token_is_a_401(client: TestClient) -> None:
    for path in ("/v1/observations", "/v1/batches", "/v1/failures"):
        r = client.post(path, content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 401, (path, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_malformed_json_with_a_read_token_is_a_403(
    client: TestClient, tokens: dict[str, str]
) -> None:
    r = client.post(
        "/v1/observations",
        content=b"{not json",
        headers={"content-type": "application/json", **auth(tokens["read"])},
    )
    assert r.status_code == 403


def test_an_unauthenticated_body_is_never_read(app: Any) -> None:
    """Driven at the ASGI level: the app answers 401 without once calling ``receive``."""
    calls = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"type": "http.request", "body": b"x" * (8 << 20), "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/observations",
        "raw_path": b"",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 1),
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"14000000")],
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 401
    assert calls == 0


# ---- probes and a busy store ----------------------------------------------------------------


@pytest.fixture
def busy_store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    """An embedded store whose connection another thread holds (a long write, a slow query)."""
    store = EmbeddedStore(tmp_path / "kb", lock_wait_s=0.2)
    store.ensure_schema()
    release = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with store._locked():
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(5)
    yield store
    release.set()
    holder.join(5)
    store.close()


def test_probes_and_store_routes_while_the_store_is_busy(
    busy_store: EmbeddedStore, tokens: dict[str, str]
) -> None:
    with _client(busy_store, tokens, ready_timeout_s=0.5) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["status"] == "store_unavailable"
        assert "Retry-After" in ready.headers
        r = client.get("/v1/observations")
        assert r.status_code == 503 and r.json()["error"] == "store_unavailable"
        assert int(r.headers["Retry-After"]) >= 1


def test_a_second_document_waits_at_most_the_lock_wait(
    busy_store: EmbeddedStore, tokens: dict[str, str]
) -> None:
    with _client(busy_store, tokens) as client:
        r = client.post(
            "/v1/observations",
            json=copy.deepcopy(document("run-w", n=2)),
            headers=auth(tokens["write"]),
        )
        assert r.status_code == 503 and "busy" in r.json()["message"]
