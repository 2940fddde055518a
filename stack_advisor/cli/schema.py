"""`advisor schema`: the JSON Schema of the collector result document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

schema_app = typer.Typer(
    help="Schemas of the documents stack-advisor reads and writes.", no_args_is_help=True
)


@schema_app.command("export")
def export(
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Accepted for uniformity: the output is JSON.")
    ] = False,
) -> None:
    """Write the JSON Schema of the collector result document (JSON either way)."""
    from stack_advisor.schema.models import ResultDocument

    text = json.dumps(ResultDocument.model_json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        try:
            out.write_text(text)
        except OSError as exc:
            from stack_advisor.cli.guard import CannotWrite, os_error_message

            raise CannotWrite(f"--out {out}: cannot write there: {os_error_message(exc)}") from None


def register(app: typer.Typer) -> None:
    app.add_typer(schema_app, name="schema", rich_help_panel="Knowledge base")
