"""Issue 46's API reproducers: a made-up token is anonymous to the anonymous limit, refusals
carry the security headers, and control characters in a query are a 400, not a 500."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.api.limits import AnonymousLimit
from stack_advisor.server import create_app
from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import auth, make_settings

SECURITY = ("x-content-type-options", "x-frame-options", "content-security-policy")


@pytest.fixture
def api(tmp_path: Path, tokens: dict[str, str]) -> Iterator[TestClient]:
    store = EmbeddedStore(tmp_path / "kb")
    app = create_app(make_settings(tokens, read_auth="open", max_body_bytes=4096), store=store)
    app.dependency_overrides[get_store] = lambda: store
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_only_a_verified_token_escapes_the_anonymous_limit(
    api: TestClient, tokens: dict[str, str]
) -> None:
    table = api.app.state.tokens  # type: ignore[attr-defined]
    limited = AnonymousLimit(
        _ok,
        limit=0,  # every anonymous request is over the limit
        retry_after_s=1,
        cookie="advisor_token",
        verify=lambda token: table.lookup(token) is not None,
    )
    client = TestClient(limited)
    statuses = {
        "none": client.get("/v1/x").status_code,
        "made-up cookie": client.get("/v1/x", headers={"Cookie": "advisor_token=not-a-token"}),
        "made-up bearer": client.get("/v1/x", headers=auth("not-a-token")),
        "real cookie": client.get(
            "/v1/x", headers={"Cookie": f"a=b; advisor_token={tokens['read']}"}
        ),
        "real bearer": client.get("/v1/x", headers=auth(tokens["read"])),
    }
    codes = {k: v if isinstance(v, int) else v.status_code for k, v in statuses.items()}
    assert codes == {
        "none": 503,
        "made-up cookie": 503,
        "made-up bearer": 503,
        "real cookie": 200,
        "real bearer": 200,
    }
    refused = client.get("/v1/x")
    assert all(refused.headers.get(h) for h in SECURITY)


def test_a_413_carries_the_security_headers(api: TestClient, tokens: dict[str, str]) -> None:
    answer = api.post("/v1/observations", headers=auth(tokens["write"]), content=b"x" * 10_000)
    assert answer.status_code == 413
    assert all(answer.headers.get(h) for h in SECURITY), answer.headers


@pytest.mark.parametrize(
    "query", ["benchmark=%00", "benchmark=res%0Anet", "%01=x", "benchmark=%7F"]
)
def test_control_characters_in_a_query_are_a_422_naming_the_parameter(
    api: TestClient, query: str
) -> None:
    for path in ("/leaderboard", "/v1/observations"):
        answer = api.get(f"{path}?{query}")
        assert answer.status_code == 422, (path, answer.status_code, answer.text)
        assert "control character" in answer.json()["message"]
        assert all(answer.headers.get(h) for h in SECURITY)
    nul = api.get("/v1/observations?benchmark=%00").json()
    assert nul["message"].startswith("benchmark: must not contain NUL")
    assert nul["details"] == {"field": "benchmark"}
    for path in ("/leaderboard", "/v1/observations"):  # the same without: not this refusal
        plain = api.get(f"{path}?benchmark=resnet50")
        assert plain.status_code != 500 and "control character" not in plain.text


@pytest.mark.parametrize("weak", ["Password2024Password2024!", "deadbeefdeadbeefcafebabecafebabe1"])
def test_production_refuses_tokens_built_from_known_weak_pieces(weak: str) -> None:
    from stack_advisor.api.settings import Settings
    from stack_advisor.schema.errors import InvalidInput

    with pytest.raises(InvalidInput, match="common words and patterns") as caught:
        Settings(environment="production", tokens=f"{weak}:read").check()
    assert weak not in str(caught.value)


def test_a_tokens_file_with_swapped_columns_never_echoes_the_token(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    from stack_advisor.api.settings import parse_tokens_file
    from stack_advisor.schema.errors import InvalidInput

    file = tmp_path / "tokens"
    file.write_text(f"read {tokens['read']}\n")
    with pytest.raises(InvalidInput, match="swapped") as caught:
        parse_tokens_file(file)
    assert tokens["read"] not in str(caught.value)


def test_forwarded_headers_are_believed_only_from_configured_proxies() -> None:
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from stack_advisor.api.settings import Settings
    from stack_advisor.cli.serve import uvicorn_config

    def built(trusted: str) -> object:
        config = uvicorn_config(
            _ok, Settings(trusted_proxies=trusted), host="127.0.0.1", port=0, log_level="error"
        )
        config.load()
        return config.loaded_app

    assert not _wraps(built(""), ProxyHeadersMiddleware)  # loopback not trusted by default
    assert _wraps(built("10.0.0.1"), ProxyHeadersMiddleware)


def _wraps(app: object, kind: type) -> bool:
    while app is not None:
        if isinstance(app, kind):
            return True
        app = getattr(app, "app", None)
    return False


def test_a_hung_probe_is_replaced_so_recovery_does_not_wait_for_it(tmp_path: Path) -> None:
    """A probe stuck on a dead connection (Neo4j after kill -9) must not hold every request at
    503 until it ends: past ``probe_stale_s`` the next request probes again, and that answer
    closes the breaker."""
    import threading

    from stack_advisor.api.resources import Resources
    from stack_advisor.schema.errors import StoreUnavailable

    store = EmbeddedStore(tmp_path / "kb", lock_wait_s=30)
    store.ensure_schema()
    resources = Resources(None, opener=lambda _uri: store)
    resources.failure_hold_s = 0.2
    resources.open()
    release, held = threading.Event(), threading.Event()

    def hold_connection() -> None:
        with store._locked():
            held.set()
            release.wait(30)

    try:
        resources.store_failed(StoreUnavailable("the store went away"))
        threading.Thread(target=hold_connection, daemon=True).start()
        held.wait(5)
        time.sleep(0.3)
        with pytest.raises(StoreUnavailable, match="did not answer a probe"):
            resources.store()  # the first probe hangs on the held connection
        with pytest.raises(StoreUnavailable, match="failed in the last"):
            resources.store()  # one probe at a time, while it is fresh
        time.sleep(resources.probe_stale_s + 0.1)
        with pytest.raises(StoreUnavailable, match="did not answer a probe"):
            resources.store()  # past probe_stale_s: a fresh probe was started and waited for
        release.set()
        deadline = time.monotonic() + 5
        while resources.breaker_state != "closed":
            assert time.monotonic() < deadline, "no probe closed the breaker"
            time.sleep(0.01)
        assert resources.store() is store
    finally:
        release.set()
        store.close()
