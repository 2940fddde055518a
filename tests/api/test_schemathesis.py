"""Property-based tests generated from our own OpenAPI document (schemathesis), bounded for CI
(about 500 cases in all); ``bench/fuzz_api.py`` runs the large number. Reads open with a write
token, and reads token-only with a read token and with none: never a 5xx, and every response
as documented."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from stack_advisor.api.deps import get_store
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from tests.support.api import auth, document, make_settings
from tests.support.fuzz import fuzz, summary


def _seeded(app: FastAPI, tokens: dict[str, str]) -> None:
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        r = client.post(
            "/v1/observations", json=document("run-fuzz", n=5), headers=auth(tokens["write"])
        )
        assert r.status_code == 200
        client.get("/v1/stacks", headers=auth(tokens["read"]))


@pytest.mark.slow
def test_reads_open_with_a_write_token(app: FastAPI, tokens: dict[str, str]) -> None:
    _seeded(app, tokens)
    result = fuzz(app, auth(tokens["write"]), positive=6, negative=3)
    assert result.operations >= 15
    assert result.cases >= 150, summary(result)
    assert result.server_errors == 0 and not result.failures, "\n".join(result.failures)


@pytest.mark.slow
def test_reads_token_only(embedded_store: Store, tokens: dict[str, str]) -> None:
    app = create_app(
        make_settings(tokens, read_auth="token", metrics_auth="token"), store=embedded_store
    )
    app.dependency_overrides[get_store] = lambda: embedded_store
    _seeded(app, tokens)
    cases = 0
    for headers, positive, negative in ((auth(tokens["read"]), 3, 2), ({}, 2, 1)):
        result = fuzz(app, headers, positive=positive, negative=negative)
        cases += result.cases
        assert result.server_errors == 0 and not result.failures, "\n".join(result.failures)
    assert cases >= 100
