"""advisor collect --api: results go to a real API server, are spooled while it is down, and
--flush re-sends them; the same run id stores nothing twice."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from stack_advisor.cli.collect import EXIT_SPOOLED
from stack_advisor.cli.main import app
from tests.support.servers import ServedAPI, free_port

pytestmark = pytest.mark.slow  # a real `advisor serve` process, stopped and started

SMALL = ["--device", "cpu", "-o", "pis=mem_copy", "-o", "backends=numpy"]


def _observations(api: ServedAPI) -> int:
    body = httpx.get(api.url + "/v1/stats", timeout=10).json()
    return int(body["counts"].get("Observation", 0))


def _invoke(*args: str, code: int = 0) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(app, ["collect", *args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_spooled_while_down_then_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stack_advisor.collectors.spool import pending

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    api = ServedAPI(
        f"embedded:{tmp_path / 'kb'}", tokens, port=free_port(), log=tmp_path / "serve.log"
    )
    auth = ["--api", api.url, "--token", tokens["write"]]

    down = _invoke(*SMALL, "--run-id", "api-1", *auth, code=EXIT_SPOOLED)
    [delivery] = down["delivery"]
    assert delivery["status"] == "spooled" and down["measurements"] == 1
    assert len(pending()) == 1

    alone = CliRunner().invoke(app, ["collect", "--flush", "--no-store"])
    assert alone.exit_code != 0 and "--flush needs --api" in str(alone.exception)

    with api:
        flushed = _invoke("--flush", *auth)["flush"]
        assert (flushed["sent"], flushed["remaining"], flushed["observations_new"]) == (1, 0, 1)
        assert pending() == [] and _observations(api) == 1
        again = _invoke(*SMALL, "--run-id", "api-1", *auth)  # same run id: nothing new
        assert again["delivery"][0]["status"] == "delivered"
        assert again["delivery"][0]["observations_new"] == 0 and _observations(api) == 1
