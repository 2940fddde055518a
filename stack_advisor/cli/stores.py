"""The command's edge to the stores: the one place it reads the environment for them.

``advisor --api URL`` is kept here for the invocation (the root callback sets it on every run,
so in-process runs do not leak one into the next; it is never written into the environment);
every command opens its store through ``open_store`` here, which passes the settings in
(``stack_advisor.store.settings.StoreSettings``). ``--api`` with a command's ``--store`` is a usage
error (two places to read from). ``answering`` picks who answers the advisor's verbs: over a
served API, the API's own answer endpoints (``advisor.remote``), else the engine over the store.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stack_advisor.store.settings import StoreSettings

if TYPE_CHECKING:
    from pathlib import Path

    from stack_advisor.advisor.answerer import Answerer
    from stack_advisor.store.base import Store

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
    """``stack_advisor.store.registry.open_store`` with the command's settings.

    Raises:
        InvalidInput: ``uri`` (a command's ``--store``) given with the root ``--api``.
    """
    from stack_advisor.store.registry import open_store as open_with  # lazy: --help stays fast

    return open_with(_one_source(uri), settings=store_settings(), **kwargs)


def resolve_store_uri(uri: str | None = None) -> str:
    """The URI ``open_store(uri)`` opens."""
    from stack_advisor.store.registry import resolve_store_uri as resolve

    return resolve(_one_source(uri), store_settings())


def _one_source(uri: str | None) -> str | None:
    api = root_api()
    if uri and api and uri != api:
        from stack_advisor.schema.errors import InvalidInput
        from stack_advisor.store.uris import redact_uri

        raise InvalidInput(
            f"--store {redact_uri(uri)} and --api {redact_uri(api)} name two knowledge "
            "bases: give --store for a local store or --api for a served one, not both"
        )
    return uri


def answering(store: Store, *, prices: Path | None = None, rules: Path | None = None) -> Answerer:
    """Who answers the advisor's verbs over ``store``: for a served API (``--api URL`` or an
    ``http(s)://`` store) its answer endpoints, one request each, instead of reading every
    observation and fitting again here; else the engine over the store.

    Raises:
        InvalidInput: ``--prices`` or ``--rules`` with a served API (it answers with its own).
    """
    # a RestStore exists only once the registry imported its module (lazily): a local answer
    # does not pay for importing the HTTP client
    rest = sys.modules.get("stack_advisor.store.rest_store")
    if rest is not None and isinstance(store, rest.RestStore):
        given = [
            flag for flag, value in (("--prices", prices), ("--rules", rules)) if value is not None
        ]
        if given:
            from stack_advisor.schema.errors import InvalidInput

            raise InvalidInput(
                f"{' and '.join(given)}: a served API answers with its own price table and "
                "rules; drop them, or use a local --store"
            )
        from stack_advisor.advisor.remote import RemoteAdvisor

        return RemoteAdvisor(store)
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
    from stack_advisor.advisor.results import this_node

    caches = CacheFolders.from_environ(os.environ)
    node = this_node(os.environ)
    kept = _kept_advisor(store, caches, node) if prices is None and rules is None else None
    if kept is not None:
        return kept
    return Advisor(store, prices=prices, rules=rules, caches=caches, node=node)


# The resident answerer (``stack_advisor.cli.resident_server``) keeps one advisor per store
# between requests (its table, calibration and answers, each per store generation, which the
# advisor reads on every answer); the store itself is opened and closed per request, as here.
_kept: dict[tuple[Any, ...], Any] | None = None
KEPT_ADVISORS = 4


def keep_advisors(on: bool) -> None:
    """Keep advisors between commands of this process (the resident answerer), or stop."""
    global _kept
    _kept = {} if on else None


def _kept_advisor(store: Store, caches: Any, node: str) -> Answerer | None:
    """The kept advisor of ``store`` (made now if none), bound to this ``store`` object; None
    when advisors are not kept or the store has no identity to key them by."""
    if _kept is None:
        return None
    from stack_advisor.advisor.engine import Advisor

    identity = store.cache_identity()
    if identity is None:
        return None
    key = (store.uri, identity, repr(caches), node)
    advisor = _kept.get(key)
    if advisor is None:
        if len(_kept) >= KEPT_ADVISORS:
            _kept.clear()
        advisor = _kept[key] = Advisor(store, caches=caches, node=node)
    advisor.store = store
    return advisor


@contextmanager
def answering_store(
    store_uri: str | None, prices: Path | None = None, rules: Path | None = None
) -> Iterator[Answerer]:
    """``answering`` over the store ``store_uri`` names, closed afterwards."""
    store = open_store(store_uri, create=False)
    try:
        yield answering(store, prices=prices, rules=rules)
    finally:
        store.close()
