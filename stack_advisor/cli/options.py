"""Options shared by commands."""

from __future__ import annotations

from typing import Annotated

import typer

from stack_advisor.cli.render import OutputFormat

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="ADVISOR_STORE",
        help="Store URI: embedded:PATH or a path, bolt:// neo4j:// neo4j+s://, http(s):// (our "
        "API). "
        "Default: the embedded store under the XDG data directory.",
    ),
]
ApiOpt = Annotated[
    str | None,
    typer.Option("--api", envvar="ADVISOR_API", help="Use a remote stack-advisor API at this URL."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (snake_case keys) to stdout.")]
FormatOpt = Annotated[
    OutputFormat | None,
    typer.Option(
        "--format",
        case_sensitive=False,
        help="Output layout: table (fits the terminal), plain (one line per row; the default when "
        "piped), csv, markdown or json (same as --json).",
    ),
]

PLACEMENTS = ("bare-metal", "passthrough", "vgpu", "unknown")


def choose(value: str | None, choices: tuple[str, ...], option: str) -> str | None:
    """``value`` if it is one of ``choices`` (case-insensitive), else InvalidInput naming the
    option, the valid values and the closest one."""
    if value is None:
        return None
    from difflib import get_close_matches

    from stack_advisor.schema.errors import InvalidInput

    folded = {c.lower(): c for c in choices}
    if value.lower() in folded:
        return folded[value.lower()]
    close = get_close_matches(value.lower(), list(folded), n=1, cutoff=0.5)
    hint = f"; did you mean {folded[close[0]]!r}?" if close else ""
    raise InvalidInput(f"{option} must be one of {', '.join(choices)}, got {value!r}{hint}")
