"""``advisor resident status | stop``: the resident answerers of this user
(``stack_advisor.cli.resident``) and how to stop them."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import typer

from stack_advisor.cli import resident
from stack_advisor.cli.options import FormatOpt, JsonOpt
from stack_advisor.cli.resident_files import cache_folder, prune

resident_app = typer.Typer(
    name="resident",
    help="The resident answerer that keeps `recommend`, `predict` and `compare` warm.",
    no_args_is_help=True,
)

COLUMNS = ["pid", "requests", "idle_s", "idle_limit_s", "code", "socket"]
STOP_WAIT_S = 10.0


def _folder() -> Path | None:
    return resident.resident_folder(os.environ)


def answerers(folder: Path) -> list[dict[str, Any]]:
    """Each live answerer's status; what ended ones left (sockets, locks, old logs) removed."""
    found = []
    for sock in resident.answerer_sockets(folder):
        with contextlib.suppress(OSError, ValueError):
            found.append(resident.ask(sock, "status"))
    prune(folder, cache_folder(os.environ))
    return found


def ended(pid: int, limit_s: float) -> bool:
    """Whether process ``pid`` ended within ``limit_s`` seconds."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if not resident.running(pid):
            return True
        time.sleep(0.05)
    return False


@resident_app.command("status")
def status(as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """The answerers running for this user: requests served, idle time, code digest.

    ADVISOR_RESIDENT=0 keeps the CLI from starting one."""
    from stack_advisor.cli.render import output_format, render

    chosen = output_format(fmt, as_json)
    folder = _folder()
    rows = answerers(folder) if folder is not None else []
    if not rows and chosen.value != "json":
        state = "off (ADVISOR_RESIDENT=0)" if not resident.enabled(os.environ) else "on"
        typer.echo(f"no resident answerer runs (in {folder}); starting them is {state}", err=True)
        return
    render(rows, fmt=chosen, title="resident answerers", columns=COLUMNS, json_data=rows)


@resident_app.command("stop")
def stop(as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """Stop every answerer of this user (each ends after its request in progress)."""
    from stack_advisor.cli.render import output_format, render
    from stack_advisor.schema.errors import AdvisorError

    chosen = output_format(fmt, as_json)
    folder = _folder()
    rows = []
    for sock in resident.answerer_sockets(folder) if folder is not None else []:
        try:
            info = resident.ask(sock, "stop")
        except (OSError, ValueError):
            continue
        info["stopped"] = ended(int(info["pid"]), STOP_WAIT_S)
        rows.append(info)
    if folder is not None:
        answerers(folder)  # removes what ended answerers left
    render(rows, fmt=chosen, title="stopped", columns=["pid", "stopped", "socket"], json_data=rows)
    still = [str(r["pid"]) for r in rows if not r["stopped"]]
    if still:
        raise AdvisorError(
            f"answerer(s) {', '.join(still)} still running {STOP_WAIT_S:g} s after stop"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(resident_app, name="resident", rich_help_panel="Knowledge base")
