"""The command's edge to the stores: the one place it reads the environment for them.

``advisor --api URL`` is kept here for the invocation (the root callback sets it on every run,
so in-process runs do not leak one into the next; it is never written into the environment);
every command opens its store through ``open_store`` here, which passes the settings in
(``graph_schema.settings.StoreSettings``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from graph_schema.settings import StoreSettings

if TYPE_CHECKING:
    from graph_schema.store import Store

_invocation: dict[str, str | None] = {"api": None}


def use_api(api: str | None) -> None:
    """Called by the root command with its ``--api`` (None: not given)."""
    _invocation["api"] = api or None


def root_api() -> str | None:
    """The ``--api`` URL the root command was given in this invocation, if any."""
    return _invocation["api"]


def store_settings() -> StoreSettings:
    """The environment's store settings, with this invocation's ``--api``."""
    settings = StoreSettings.from_environ(os.environ)
    api = root_api()
    return settings.with_(api=api) if api else settings


def open_store(uri: str | None = None, **kwargs: Any) -> Store:
    """``graph_schema.registry.open_store`` with the command's settings.

    Raises:
        typer.BadParameter: ``advisor --api URL`` and a command's ``--store`` both given (which one
            is meant cannot be told; ``ADVISOR_STORE`` from the environment yields to ``--api``).
    """
    from graph_schema.registry import open_store as open_with  # lazy: --help stays fast

    if uri and root_api() and uri != os.environ.get("ADVISOR_STORE"):
        import typer

        raise typer.BadParameter(
            f"--store {uri!r} and advisor --api {root_api()!r} name two knowledge bases; "
            "give one of them")

    return open_with(uri, settings=store_settings(), **kwargs)


def resolve_store_uri(uri: str | None = None) -> str:
    """The URI ``open_store(uri)`` opens."""
    from graph_schema.registry import resolve_store_uri as resolve

    return resolve(uri, store_settings())
