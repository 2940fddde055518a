"""`advisor` builds only the command an invocation runs: the rest are listed from stand-ins with the
same name and help. What a user sees must not change (bench/cli_latency.py measures the speed)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import _invoked_name, app, invocation_app

runner = CliRunner()


def _both(args: list[str]) -> tuple[str, str, int, int]:
    full = runner.invoke(app, args, terminal_width=100)
    slim = runner.invoke(invocation_app(args), args, terminal_width=100)
    return full.output, slim.output, full.exit_code, slim.exit_code


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],
        ["recommend", "--help"],
        ["db", "stats", "--help"],
        ["import", "--help"],
        ["compare", "--help"],
        ["--api", "http://127.0.0.1:9", "plot", "--help"],
        ["recmend"],  # did you mean
        ["db", "stat"],
    ],
)
def test_the_slim_app_shows_what_the_full_one_shows(args: list[str]) -> None:
    full, slim, full_code, slim_code = _both(args)
    assert slim == full
    assert slim_code == full_code


def test_the_top_level_help_lists_every_command_and_group() -> None:
    out = runner.invoke(invocation_app(["--help"]), ["--help"], terminal_width=120).output
    for name in (
        "recommend",
        "predict",
        "evaluate",
        "collect",
        "serve",
        "compare",
        "import",
        "db",
        "schema",
        "plan",
        "nodes",
        "plot",
    ):
        assert f"  {name} " in out
    assert (
        "Did you mean 'recommend'" in runner.invoke(invocation_app(["recmend"]), ["recmend"]).output
    )


def test_the_invoked_name_skips_root_options_and_their_values() -> None:
    assert _invoked_name(["--api", "http://x", "db", "stats"]) == "db"
    assert _invoked_name(["-V"]) is None
    assert _invoked_name(["--help"]) is None
    assert _invoked_name(["recommend", "--benchmark", "x"]) == "recommend"
