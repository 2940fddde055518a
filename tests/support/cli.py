"""The `advisor` command inside a test, as a user runs it (through the entry point's guard), kept
apart from the settings of whoever runs the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack_advisor.cli.guard import run_guarded
from stack_advisor.cli.main import app

# settings a developer's shell may carry that would point the CLI elsewhere
CLI_ENV = ("ADVISOR_API", "ADVISOR_STORE", "ADVISOR_TOKEN", "ADVISOR_DEBUG")


def isolate_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *also: str) -> None:
    """Unset ``CLI_ENV`` (and the ``also`` variables) and put the default embedded store under
    ``tmp_path`` (``XDG_DATA_HOME``)."""
    for var in (*CLI_ENV, *also):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def advisor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``advisor ARGS``: its exit code, stdout and stderr; a traceback fails the test."""
    code = run_guarded(app, list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err
