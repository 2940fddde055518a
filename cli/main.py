"""The `advisor` command: one Typer sub-app or command group per noun, composed here."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Annotated, Optional

import typer

app = typer.Typer(
    name="advisor",
    help="stack-advisor: which GPU software stack and node placement run your workload best.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

# Each module exposes ``register(app)``; the order here is the order in --help.
COMMAND_MODULES = (
    "cli.recommend",
    "cli.collect",
    "cli.imports",
    "cli.db",
    "cli.schema",
    "cli.plan",
    "cli.nodes",
    "cli.serve",
    "cli.plot",
)

def _version(value: bool) -> None:
    if value:
        from cli.guard import package_version

        typer.echo(f"advisor (stack-advisor) {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    api: Annotated[
        Optional[str],
        typer.Option(
            "--api",
            envvar="ADVISOR_API",
            help="Be a client of a remote stack-advisor API at this URL: every command that "
            "reads or writes the knowledge base goes through it (token: ADVISOR_TOKEN).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_version,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    if api:
        os.environ["ADVISOR_API"] = api


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from cli.guard import run_guarded
    from cli.progress import install

    install()  # seeding, reading the store, fitting: progress on stderr

    sys.exit(run_guarded(app, sys.argv[1:]))


if __name__ == "__main__":
    main()
