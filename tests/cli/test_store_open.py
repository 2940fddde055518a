"""Store-open errors say what is actually wrong, read commands do not create a store at a
mistyped path, and a store held by `advisor serve` names the `advisor --api URL` to use."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack_advisor.cli.served import marker
from tests.support.cli import advisor as run
from tests.support.cli import isolate_cli
from tests.support.servers import ServedAPI

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def advisor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code, out, err = run(capsys, *args)
    return code, out + err


@pytest.mark.parametrize("kind", ["text file", "/etc/passwd", "directory"])
def test_not_a_store(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str) -> None:
    path = {
        "text file": tmp_path / "notes.txt",
        "/etc/passwd": Path("/etc/passwd"),
        "directory": tmp_path,
    }[kind]
    if kind == "text file":
        path.write_text("hello\n")
    before = path.read_bytes() if path.is_file() else None
    code, text = advisor(capsys, "db", "stats", "--store", str(path))
    expected = (
        "is a directory; an embedded store is one file"
        if kind == "directory"
        else "is not an embedded stack-advisor store"
    )
    assert code == 2 and expected in text and "another process" not in text
    if before is not None:
        assert path.read_bytes() == before  # untouched


def test_missing_path_is_an_error_for_reads_and_created_by_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    typo = tmp_path / "kbb"
    for args in (
        ["db", "stats"],
        ["recommend", "--benchmark", "resnet50"],
        ["compare", "placement"],
    ):
        code, text = advisor(capsys, *args, "--store", str(typo))
        assert code == 1 and f"no store at {typo}" in text and "advisor db migrate" in text
        assert not typo.exists()
    code, out = advisor(capsys, "db", "migrate", "--store", str(typo), "--json")
    assert code == 0 and json.loads(out)["schema_version"] >= 1 and typo.exists()
    code, out = advisor(capsys, "db", "stats", "--store", str(typo), "--json")
    assert code == 0 and json.loads(out)["counts"]["Observation"] == 0


HOLDER = """
import sys, time, ladybug
db = ladybug.Database(sys.argv[1]); conn = ladybug.Connection(db)
if len(sys.argv) > 2:
    from stack_advisor.cli.served import announce
    from pathlib import Path
    announce(Path(sys.argv[1]), sys.argv[2])
print("holding", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[callable]:  # type: ignore[valid-type]
    procs: list[subprocess.Popen[str]] = []

    def hold(path: Path, url: str | None = None) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), *([url] if url else [])],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        return proc

    yield hold
    for proc in procs:
        proc.kill()
        proc.wait()


def test_lock_held_by_another_process_names_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, holder
) -> None:  # type: ignore[no-untyped-def]
    kb = tmp_path / "kb"
    assert advisor(capsys, "db", "migrate", "--store", str(kb))[0] == 0
    proc = holder(kb)
    code, text = advisor(capsys, "db", "stats", "--store", str(kb))
    assert code == 1 and f"in use by process {proc.pid}" in text and "advisor --api URL" in text
    code, out = advisor(capsys, "db", "stats", "--store", str(kb), "--json")
    error = json.loads(out)["error"]
    assert error["code"] == "store_unavailable" and error["details"]["pid"] == proc.pid


def test_lock_held_by_serve_names_its_url(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, holder
) -> None:  # type: ignore[no-untyped-def]
    kb = tmp_path / "kb"
    assert advisor(capsys, "db", "migrate", "--store", str(kb))[0] == 0
    holder(kb, "http://127.0.0.1:8123")
    code, text = advisor(capsys, "db", "stats", "--store", str(kb))
    assert (
        code == 1
        and "held by `advisor serve`" in text
        and "advisor --api http://127.0.0.1:8123" in text
    )


@pytest.mark.slow
def test_real_serve_leaves_its_url_and_takes_it_away(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    kb = tmp_path / "kb"
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    with ServedAPI(
        f"embedded:{kb}", tokens, log=tmp_path / "serve.log", PYTHONPATH=str(REPO)
    ) as api:
        assert json.loads(marker(kb).read_text())["url"] == api.url
        code, text = advisor(capsys, "db", "stats", "--store", str(kb))
        assert code == 1 and f"advisor --api {api.url}" in text
    deadline = time.monotonic() + 10
    while marker(kb).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not marker(kb).exists()
