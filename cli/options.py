"""Options shared by commands."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

StoreOpt = Annotated[
    Optional[str],
    typer.Option(
        "--store",
        envvar="ADVISOR_STORE",
        help="Store URI: embedded:PATH or a path, bolt:// neo4j:// neo4j+s://, http(s):// (our API). "
        "Default: the embedded store under the XDG data directory.",
    ),
]
ApiOpt = Annotated[
    Optional[str],
    typer.Option("--api", envvar="ADVISOR_API", help="Use a remote stack-advisor API at this URL."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (snake_case keys) to stdout.")]
