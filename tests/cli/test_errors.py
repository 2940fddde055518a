"""No traceback reaches a user: each reproducer gives one `error: ...` line (or a JSON error
object on stdout with --json) and exit 1 (runtime) or 2 (usage). Run through the same guard as
the `advisor` entry point."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer

from stack_advisor.cli.guard import run_guarded
from tests.support.cli import advisor, isolate_cli

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "deploy" / "plans" / "sample-plan.yaml"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path, "KUBECONFIG")
    monkeypatch.setenv("ADVISOR_STORE", f"embedded:{tmp_path / 'missing-kb'}")


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


CASES = [
    (
        ["recommend", "--benchmark", "resnet50", "--framework", "tensorrt>>8"],
        2,
        "--framework 'tensorrt>>8'",
    ),
    (["compare", "placement", "--placement", "vm"], 2, "--placement must be one of bare-metal"),
    (
        ["plot", "throughput", "--out", "t.png", "--placement", "vm"],
        2,
        "--placement must be one of",
    ),
    (["recommend", "--placement", "vgpux"], 2, "did you mean 'vgpu'"),
    (
        ["plan", "render", str(PLAN), "--out", "/etc/passwd/x"],
        1,
        "--out /etc/passwd/x: cannot write there",
    ),
    (
        ["recommend", "--benchmark", "resnet50", "--json", "--format", "csv"],
        2,
        "--json contradicts --format csv",
    ),
    (["predict", "--query", "/nonexistent/q.json"], 2, "--query: cannot read"),
    (["schema", "export", "--out", "/etc/passwd/x"], 1, "--out /etc/passwd/x: cannot write there"),
    # a text file as a price table: the value is shortened and ':x:' stays text (no emoji)
    (
        ["recommend", "--benchmark", "resnet50", "--objective", "cost", "--prices", "/etc/passwd"],
        2,
        "(got 'root:x:0:0:root",
    ),
]


@pytest.mark.parametrize(
    ("args", "status", "message"), CASES, ids=[" ".join(c[0][:2]) for c in CASES]
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], status: int, message: str
) -> None:
    if "--prices" in args:  # read once the store is open: give it one
        assert advisor(capsys, "db", "migrate", "--store", os.environ["ADVISOR_STORE"])[0] == 0
    if "--json" not in args:
        code, out, err = advisor(capsys, *args)
        line = one_error_line(err)
        assert code == status and message in line and out == "" and len(line) < 300
    code, out, err = advisor(capsys, *args, *([] if "--json" in args else ["--json"]))
    body = json.loads(out)["error"]
    assert code == status and message in body["message"] and body["code"]


def test_unwritable_data_home_with_db_stats(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADVISOR_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", "/etc/passwd")  # a file: nothing can be created under it
    code, _, err = advisor(capsys, "db", "stats")
    assert code == 1 and "cannot create the directory of the embedded store" in one_error_line(err)
    code, out, _ = advisor(capsys, "db", "stats", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "store_unavailable"


def test_malformed_kubeconfig_with_nodes_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [\n")
    monkeypatch.setenv("KUBECONFIG", str(bad))
    code, _, err = advisor(capsys, "nodes", "list")
    assert code == 1 and "not valid YAML" in one_error_line(err)
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: 3\n")
    code, _, err = advisor(capsys, "nodes", "list")
    assert code == 1 and "cannot load a Kubernetes configuration" in one_error_line(err)


def test_usage_errors_are_json_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "recommend", "--no-such-flag", "--json")
    assert code == 2 and json.loads(out) == {
        "error": {"code": "usage", "message": "No such option: --no-such-flag"}
    }


def test_unexpected_exception_is_one_line_with_traceback_on_demand(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = typer.Typer()

    @broken.command()
    def boom() -> None:
        raise KeyError("shape")

    assert run_guarded(broken, []) == 1
    _, err = capsys.readouterr()
    assert (
        one_error_line(err)
        == "error: unexpected KeyError: 'shape' (set ADVISOR_DEBUG=1 for the traceback)"
    )
    monkeypatch.setenv("ADVISOR_DEBUG", "1")
    assert run_guarded(broken, []) == 1
    assert "Traceback" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        code, out, _ = advisor(capsys, flag)
        assert code == 0 and out.strip() == f"advisor (stack-advisor) {version('stack-advisor')}"
