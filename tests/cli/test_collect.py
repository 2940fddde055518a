"""`advisor collect` on the command line: a real quick PI run (numpy GEMM), what it prints and
how it exits."""

from __future__ import annotations

import importlib.util
import json
import secrets
from pathlib import Path

import pytest

from stack_advisor.cli.collect import EXIT_SPOOLED
from tests.support.cli import advisor, isolate_cli
from tests.support.servers import ServedAPI, free_port

SMALL = ["--profile", "quick", "--device", "cpu", "-o", "pis=gemm", "-o", "backends=numpy"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("COLUMNS", "80")


def test_quick_pi_run_reads_well(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = tmp_path / "run.json"
    code, out, err = advisor(
        capsys, "collect", *SMALL, "--no-store", "--out", str(docs), "--format", "table"
    )
    assert code == 0, err
    measurements = [m for d in json.loads(docs.read_text()) for m in d["measurements"]]
    failures = [f for d in json.loads(docs.read_text()) for f in d["failures"]]
    assert measurements and all(m["unit"] == "TFLOP/s" for m in measurements)
    # numpy has no bf16 GEMM: stored as unsupported, not counted as a failure
    assert failures and {f["stage"] for f in failures} == {"unsupported"}
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    if all(m["value"] < 1 for m in measurements):
        assert "GFLOP/s" in out and "TFLOP/s" not in out
    summary = {
        line.split("  ")[0]: line.split()[-1] for line in lines[lines.index("summary") + 3 :]
    }
    assert summary["failures"] == "0" and summary["unsupported"] == str(len(failures))
    assert summary["measurements"] == str(len(measurements)) and "{" not in out
    noisy = [m for m in measurements if m["cv"] is not None and m["cv"] > 0.1]
    assert ("measurements are noisy (CV > 0.1" in " ".join(err.split())) == bool(noisy)
    assert len([line for line in err.splitlines() if line.startswith("warning:")]) == (
        1 if noisy else 0
    )


def test_json_counts_unsupported_apart(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "collect", *SMALL, "--no-store", "--json")
    body = json.loads(out)
    assert (
        code == 0
        and body["failures"] == 0
        and body["unsupported"] >= 1
        and body["measurements"] >= 1
    )


def test_missing_extra_is_named_and_nothing_measured_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def without_loadgen(name: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        return None if name == "mlperf_loadgen" else real(name, *args, **kwargs)  # type: ignore[arg-type]

    # mlcommons-loadgen is installed by the test script; make it look absent for this run
    monkeypatch.setattr(importlib.util, "find_spec", without_loadgen)
    code, _, err = advisor(
        capsys, "collect", "--benchmark", "loadgen", "--profile", "quick", "--no-store"
    )
    text = " ".join(err.split())
    assert code == 1
    assert "mlcommons-loadgen is not installed: pip install 'stack-advisor[loadgen]'" in text
    assert text.count("mlcommons-loadgen is not installed") == 1  # printed once
    assert "nothing was measured" in text


@pytest.mark.slow
def test_flush_fails_while_documents_stay_spooled(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from stack_advisor.collectors.spool import pending

    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    api = ServedAPI(
        f"embedded:{tmp_path / 'kb'}", tokens, port=free_port(), log=tmp_path / "serve.log"
    )
    code, out, _ = advisor(
        capsys, "collect", *SMALL, "--api", api.url, "--token", tokens["write"], "--json"
    )
    assert (
        code == EXIT_SPOOLED  # measured; delivery deferred: the distinct status a Job acts on
        and json.loads(out)["delivery"][0]["status"] == "spooled"
        and len(pending()) == 1
    )
    with api:
        code, out, err = advisor(
            capsys, "collect", "--flush", "--api", api.url, "--token", tokens["read"]
        )
        assert code == 1 and "1 document(s) still spooled" in " ".join(err.split())
        assert len(pending()) == 1
        code, out, _ = advisor(
            capsys, "collect", "--flush", "--api", api.url, "--token", tokens["write"], "--json"
        )
        assert code == 0 and json.loads(out)["flush"]["sent"] == 1 and pending() == []
        # a token without write scope is a refusal, not a delay: the run fails with the reason
        code, out, err = advisor(
            capsys, "collect", *SMALL, "--api", api.url, "--token", tokens["read"], "--json"
        )
        assert code == 1 and "delivery refused" in err and "HTTP 403" in err, err
