"""The auth matrix: every endpoint × (no token, unknown token, each scope), plus token sources."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.settings import Settings
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from tests.support.api import auth, document, make_settings

DOC = document("run-auth")
FAILURE = {
    **{k: DOC[k] for k in ("stack", "accelerator", "placement", "provenance")},
    "stage": "run",
    "error_class": "OOM",
}

# (method, path, json body, scope needed; None = open by default)
ENDPOINTS: list[tuple[str, str, Any, str | None]] = [
    ("GET", "/v1/observations", None, "read"),
    ("GET", "/v1/stacks", None, "read"),
    ("GET", "/v1/accelerators", None, "read"),
    ("GET", "/v1/placements", None, "read"),
    ("GET", "/v1/benchmarks", None, "read"),
    ("GET", "/v1/hosts", None, "read"),
    ("GET", "/v1/runs", None, "read"),
    ("GET", "/v1/failures", None, "read"),
    ("GET", "/v1/stats", None, "read"),
    ("GET", "/v1/schema", None, "read"),
    ("POST", "/v1/observations", DOC, "write"),
    ("POST", "/v1/batches", {"observations": [], "failures": [], "runs": []}, "write"),
    ("POST", "/v1/failures", FAILURE, "write"),
    ("POST", "/v1/schema", None, "admin"),
]
RANK = {"read": 0, "write": 1, "admin": 2}


def _call(client: TestClient, method: str, path: str, body: Any, headers: dict[str, str]) -> int:
    return client.request(method, path, json=body, headers=headers).status_code


@pytest.fixture(params=["open", "token"])
def read_auth(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def matrix_client(store: Store, tokens: dict[str, str], read_auth: str) -> Any:
    app = create_app(make_settings(tokens, read_auth=read_auth), store=store)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(
    ("method", "path", "body", "needed"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS]
)
def test_auth_matrix(
    matrix_client: TestClient,
    tokens: dict[str, str],
    read_auth: str,
    method: str,
    path: str,
    body: Any,
    needed: str,
) -> None:
    open_read = needed == "read" and read_auth == "open"
    # no token: 401 with WWW-Authenticate, unless reads are open
    r = matrix_client.request(method, path, json=body)
    if open_read:
        assert r.status_code == 200, r.text
    else:
        assert r.status_code == 401, r.text
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert r.json()["error"] == "unauthorized"
    # unknown token and malformed header: always 401, even on open reads
    assert _call(matrix_client, method, path, body, auth("not-a-known-token")) == 401
    assert _call(matrix_client, method, path, body, {"Authorization": tokens["admin"]}) == 401
    # each scope: 403 below the needed scope, 2xx at or above
    for scope, token in tokens.items():
        r = matrix_client.request(method, path, json=body, headers=auth(token))
        if RANK[scope] >= RANK[needed]:
            assert r.status_code == 200, (scope, r.text)
        else:
            assert r.status_code == 403, (scope, r.text)
            assert r.json()["details"]["needed_scope"] == needed
            assert f'scope="{needed}"' in r.headers["WWW-Authenticate"]


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/openapi.json"])
def test_probes_are_open(matrix_client: TestClient, path: str) -> None:
    assert matrix_client.get(path).status_code == 200


def test_metrics_can_require_a_token(store: Store, tokens: dict[str, str]) -> None:
    app = create_app(make_settings(tokens, metrics_auth="token"), store=store)
    with TestClient(app) as c:
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers=auth(tokens["read"])).status_code == 200


def test_placeholder_and_short_tokens_are_refused_outside_development() -> None:
    for weak in ("changeme", "short-token", "a" * 32):
        with pytest.raises(InvalidInput, match="refusing to start"):
            create_app(Settings(environment="production", tokens=f"{weak}:write"))
    # development accepts them (local tinkering)
    assert create_app(Settings(environment="development", tokens="changeme:write"))


def test_malformed_token_settings_name_the_problem() -> None:
    with pytest.raises(InvalidInput, match="unknown scope 'wrte'"):
        Settings(tokens=f"{secrets.token_urlsafe(20)}:wrte").check()
    with pytest.raises(InvalidInput, match="without ':'"):
        Settings(tokens="just-a-token").check()


def test_tokens_file_from_a_mounted_secret_and_rotation(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    secret_file = tmp_path / "tokens"
    secret_file.write_text(f"# mounted from a Kubernetes Secret\n{first} read,write collector\n")
    caplog.set_level(logging.DEBUG)
    app = create_app(Settings(environment="production", tokens_file=secret_file), store=store)
    with TestClient(app) as c:
        ok = c.post("/v1/observations", json=document("run-file"), headers=auth(first))
        assert ok.status_code == 200
        # rotate: the old token stops working, the new one works, no restart
        secret_file.write_text(f"{second} write collector\n")
        import os

        os.utime(secret_file, (1, 1))
        assert c.post("/v1/observations", json=DOC, headers=auth(first)).status_code == 401
        assert c.post("/v1/observations", json=DOC, headers=auth(second)).status_code == 200
    text = caplog.text
    assert "collector" in text  # the token's name is logged ...
    assert first not in text and second not in text  # ... the token never is
