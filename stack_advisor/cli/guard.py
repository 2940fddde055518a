"""The top-level guard: whatever goes wrong, the user gets one line (`error: ...` on stderr, or
``{"error": {...}}`` on stdout with ``--json``) and an exit status: 1 runtime, 2 usage. A
traceback only with ``ADVISOR_DEBUG=1``."""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from stack_advisor.schema.errors import AdvisorError


class CannotWrite(AdvisorError):
    """An output file or folder the user named cannot be written."""

    code = "cannot_write"


USAGE = 2
RUNTIME = 1
DEBUG_VAR = "ADVISOR_DEBUG"


def package_version() -> str:
    """The installed distribution's version (package metadata), or the checkout's pyproject."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stack-advisor")
    except PackageNotFoundError:  # a source checkout that was never installed
        import re
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        found = (
            re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
            if pyproject.exists()
            else None
        )
        return f"{found.group(1)} (not installed)" if found else "unknown"


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the user asked for JSON (``--json``, ``--format json``, ``--format=json``)."""
    args = list(argv)
    if "--json" in args or "--format=json" in args:
        return True
    return any(a == "--format" and b.lower() == "json" for a, b in pairwise(args))


def describe(exc: BaseException) -> tuple[str, str, int]:
    """(code, message, exit status) for an exception that reached the top."""
    from stack_advisor.cli.render import FormatConflict
    from stack_advisor.schema.errors import InvalidInput

    if isinstance(exc, InvalidInput):
        return exc.code, exc.message, USAGE
    if isinstance(exc, AdvisorError):
        return exc.code, _served_message(exc) or exc.message, RUNTIME
    if isinstance(exc, FormatConflict):
        return "usage", str(exc), USAGE
    if type(exc).__name__ == "ValidationError" and hasattr(exc, "errors"):  # pydantic
        from stack_advisor.store.base import validation_message

        return "invalid_input", validation_message(exc), USAGE  # type: ignore[arg-type]
    if isinstance(exc, OSError):
        return "os_error", os_error_message(exc), RUNTIME
    hint = f" (set {DEBUG_VAR}=1 for the traceback)"
    return "internal_error", f"unexpected {type(exc).__name__}: {exc}{hint}", RUNTIME


def _served_message(exc: Any) -> str | None:
    """For a store locked by `advisor serve`: the exact `advisor --api URL` to use instead."""
    details = exc.details if isinstance(getattr(exc, "details", None), dict) else {}
    if details.get("reason") != "locked" or not details.get("path"):
        return None
    from stack_advisor.cli.served import serving_url

    url = serving_url(details["path"], details.get("pid"))
    if url is None:
        return None
    return (
        f"the embedded store {details['path']} is held by `advisor serve` (process "
        f"{details.get('pid')}); go through it: advisor --api {url} ..."
    )


def os_error_message(exc: OSError) -> str:
    """'cannot write /etc/passwd/x: not a directory' rather than '[Errno 20] ...'."""
    reason = (exc.strerror or str(exc)).lower() if exc.errno else str(exc)
    if exc.errno == errno.EACCES:
        reason = "permission denied"
    where = f" {exc.filename}" if exc.filename else ""
    if exc.filename2:
        where += f" → {exc.filename2}"
    return f"{reason}:{where}" if where else reason


def report(code: str, message: str, as_json: bool, details: Any = None) -> None:
    if as_json:
        body: dict[str, Any] = {"code": code, "message": message}
        if details is not None:
            body["details"] = details
        sys.stdout.write(json.dumps({"error": body}, indent=2, default=str) + "\n")
        sys.stdout.flush()
        return
    from stack_advisor.cli.render import error

    error(message)


def run_guarded(app: Any, argv: Sequence[str], prog_name: str = "advisor") -> int:
    """Run the Typer ``app`` on ``argv``; return the exit status instead of raising."""
    import typer
    import typer.main

    try:
        from typer import _click as click  # recent Typer vendors its own click
    except ImportError:  # pragma: no cover - older Typer uses the click package
        import click  # type: ignore[no-redef]

    as_json = wants_json(argv)
    debug = os.environ.get(DEBUG_VAR, "") not in ("", "0")
    try:
        command = typer.main.get_command(app)
        result = command.main(args=list(argv), prog_name=prog_name, standalone_mode=False)
        return result if isinstance(result, int) else 0
    except typer.Abort:
        report("aborted", "aborted", as_json)
        return RUNTIME
    except click.exceptions.ClickException as exc:
        if as_json:
            report("usage" if exc.exit_code == USAGE else "error", exc.format_message(), True)
        else:
            exc.show()  # plain "Usage: ... Error: ...", like the plain help (no rich box)
        return exc.exit_code
    except Exception as exc:
        if debug:
            traceback.print_exc()
        code, message, status = describe(exc)
        report(code, message, as_json, getattr(exc, "details", None))
        return status
