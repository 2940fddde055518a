"""The collector image posts to the API image, which stores in the real Neo4j; `advisor recommend`
then shows the figure as measured. With the API down the collector spools to its volume and the
next run re-sends; a wrong token is a clear error in the container's log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.collect import EXIT_SPOOLED
from stack_advisor.cli.main import app
from tests.support.containers import Api, Images, free_port, run_collector

pytestmark = [pytest.mark.containers, pytest.mark.neo4j, pytest.mark.slow]
# One PI keeps the delivery tests short; the first test runs the whole quick suite.
ONE_PI = ["--option", "pis=mem_triad"]


def _collect(api_url: str, token: str, *extra: str) -> list[str]:
    return [
        "advisor",
        "collect",
        "--profile",
        "quick",
        "--api",
        api_url,
        "--token",
        token,
        "--json",
        *extra,
    ]


def _summary(logs: str) -> dict:
    start = logs.index("{")  # the JSON summary on stdout; progress and notes went to stderr
    return json.JSONDecoder().raw_decode(logs[start:])[0]


def _recommend(api: Api, *args: str) -> dict:
    result = CliRunner().invoke(
        app,
        ["--api", api.url, "recommend", "--family", "pi", *args, "--json"],
        env={"ADVISOR_TOKEN": api.read_token},
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_collector_image_measures_and_the_api_image_stores_it(
    images: Images, api: Api, tmp_path: Path
) -> None:
    run = run_collector(images, _collect(api.url, api.write_token), spool=tmp_path / "spool")
    assert run.code == 0, run.logs
    summary = _summary(run.logs)
    assert summary["measurements"] > 0 and summary["runner_errors"] == [], summary
    assert {d["status"] for d in summary["delivery"]} == {"delivered"}, summary["delivery"]
    assert sum(d["observations_new"] for d in summary["delivery"]) == summary["measurements"]

    answer = _recommend(api, "--benchmark", "mem_triad")
    rows = answer["recommendations"]
    assert rows, answer
    assert {r["basis"] for r in rows} == {"observed"}, rows
    assert all(r["basis_note"].startswith("measured on") for r in rows), rows
    assert {r["candidate"]["stack"]["framework"] for r in rows} == {"numpy"}


def test_api_down_spools_to_the_volume_and_the_next_run_resends(
    images: Images, api: Api, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    first = run_collector(
        images, _collect(down, api.write_token, *ONE_PI, "--run-id", "spool-test"), spool=spool
    )
    assert first.code == EXIT_SPOOLED, first.logs  # measured; delivery deferred, not failed
    assert {d["status"] for d in _summary(first.logs)["delivery"]} == {"spooled"}
    waiting = sorted((spool / "stack-advisor" / "spool").glob("*.json"))
    assert waiting, f"nothing spooled in the volume: {list(spool.rglob('*'))}"

    flushed = run_collector(
        images,
        ["advisor", "collect", "--flush", "--api", api.url, "--token", api.write_token, "--json"],
        spool=spool,
    )
    assert flushed.code == 0, flushed.logs
    report = _summary(flushed.logs)["flush"]
    assert report["sent"] == len(waiting) and report["remaining"] == 0, report
    assert report["observations_new"] > 0, report
    assert not list((spool / "stack-advisor" / "spool").glob("*.json"))


def test_wrong_token_is_a_clear_error_in_the_log(images: Images, api: Api, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    run = run_collector(images, _collect(api.url, "not-a-token-of-this-api", *ONE_PI), spool=spool)
    delivery = _summary(run.logs)["delivery"]
    assert {d["http_status"] for d in delivery} == {401}, delivery
    assert "HTTP 401" in run.logs and "spooled to /var/spool-state" in run.logs, run.logs
    # kept for a re-send once the token is fixed, never lost
    assert list((spool / "stack-advisor" / "spool").glob("*.json"))
    fixed = run_collector(
        images,
        ["advisor", "collect", "--flush", "--api", api.url, "--token", api.write_token, "--json"],
        spool=spool,
    )
    assert fixed.code == 0 and _summary(fixed.logs)["flush"]["remaining"] == 0, fixed.logs
