"""The `advisor` command: one Typer sub-app or command group per noun, composed here."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from typing import Annotated, Any

# pydantic looks for plugins by scanning every installed distribution's entry points when the first
# model is built (~30 ms of each command); the project uses none. A user's own setting wins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer

app = typer.Typer(
    name="advisor",
    help="stack-advisor: which GPU software stack and node placement run your workload best.",
    no_args_is_help=True,
    # Plain click help: it fits 80 columns, pipes cleanly, and skips importing rich's help renderer
    # (about 0.4 s, most of `advisor --help`; bench/cli_startup.py measures it).
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

# Each module exposes ``register(app)``; the order here is the order in --help.
COMMAND_MODULES = (
    "stack_advisor.cli.recommend",
    "stack_advisor.cli.collect",
    "stack_advisor.cli.imports",
    "stack_advisor.cli.db",
    "stack_advisor.cli.schema",
    "stack_advisor.cli.catalogue",
    "stack_advisor.cli.plan",
    "stack_advisor.cli.nodes",
    "stack_advisor.cli.serve",
    "stack_advisor.cli.plot",
    "stack_advisor.cli.sweep",
    "stack_advisor.cli.resident_commands",
)


def _version(value: bool) -> None:
    if value:
        from stack_advisor.cli.guard import package_version

        typer.echo(f"advisor (stack-advisor) {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    api: Annotated[
        str | None,
        typer.Option(
            "--api",
            envvar="ADVISOR_API",
            help="Be a client of a remote stack-advisor API at this URL: every command that "
            "reads or writes the knowledge base goes through it (token: ADVISOR_TOKEN).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    from stack_advisor.advisor.knowledge.cache_folders import configured_folder
    from stack_advisor.catalog.parsed_cache import CATALOGUE_CACHE_ENV, use_folder
    from stack_advisor.cli.stores import use_api

    use_api(
        api
    )  # for this invocation's commands (stack_advisor.cli.stores), not written into the environment
    # the parsed catalogue kept between runs: $ADVISOR_CATALOG_CACHE (0: off), else the user's cache
    use_folder(configured_folder(os.environ, CATALOGUE_CACHE_ENV, "catalogue"))


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


# Root options that take a value: the token after them is not a command name.
_ROOT_VALUE_OPTIONS = frozenset({"--api"})


def _invoked_name(argv: list[str]) -> str | None:
    """The command or group this invocation names (the first token that is not a root option)."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _ROOT_VALUE_OPTIONS:
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def _command_name(info: typer.models.CommandInfo) -> str:
    callback_name = info.callback.__name__ if info.callback is not None else ""
    return info.name or typer.main.get_command_name(callback_name)


def _group_name(info: typer.models.TyperInfo) -> str | None:
    name = info.name
    if isinstance(name, typer.models.DefaultPlaceholder) or name is None:
        name = info.typer_instance.info.name if info.typer_instance else None
    return None if isinstance(name, typer.models.DefaultPlaceholder) else name


def _listing_only() -> None:
    """Stands in for a command that this invocation does not run (its name and help only)."""


def invocation_app(argv: list[str], full: typer.Typer = app) -> typer.Typer:
    """The app with only the command this invocation runs built in full.

    Typer builds every command's options from its signature before parsing (about 0.3 s for ~40
    commands); the others are only names and one-line help in `advisor --help` and in "did you
    mean" messages, so they are listed through parameterless stand-ins with the same help.
    Shell completion needs the whole tree and gets it.
    """
    if any(key.endswith("_COMPLETE") for key in os.environ):
        return full
    wanted = _invoked_name(argv)
    slim = typer.Typer(
        name=full.info.name,
        help=full.info.help,
        no_args_is_help=full.info.no_args_is_help,
        rich_markup_mode=full.rich_markup_mode,
        pretty_exceptions_enable=full.pretty_exceptions_enable,
    )
    slim.registered_callback = full.registered_callback
    for info in full.registered_commands:
        name = _command_name(info)
        if name == wanted:
            slim.registered_commands.append(info)
        else:
            help_text = info.help or inspect.getdoc(info.callback) or ""
            slim.command(name, help=help_text, short_help=info.short_help, hidden=info.hidden)(
                _listing_only
            )
    for group in full.registered_groups:
        group_name = _group_name(group)
        if group_name == wanted:
            slim.registered_groups.append(group)
        else:
            # typer keeps an unset option as a DefaultPlaceholder whatever its annotation says
            hidden: Any = group.hidden
            if isinstance(hidden, typer.models.DefaultPlaceholder):
                hidden = hidden.value
            slim.command(
                group_name, help=typer.main.solve_typer_info_help(group), hidden=bool(hidden)
            )(_listing_only)
    return slim


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.progress import install

    install()  # seeding, reading the store, fitting: progress on stderr

    argv = sys.argv[1:]
    sys.exit(run_guarded(invocation_app(argv), argv))


if __name__ == "__main__":
    main()
