"""The served application: the HTTP API (``stack_advisor.api``) with the web explorer
(``stack_advisor.web``) mounted beside it, over the same store, advisor and tokens. The one place
that knows both faces: the API never imports the pages, the pages use the API's auth and the
advisor's services."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from stack_advisor.api.app import create_api
from stack_advisor.api.settings import Settings
from stack_advisor.store.base import Store
from stack_advisor.web import install_web
from stack_advisor.web.session import COOKIE


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    store_opener: Callable[[str | None], Store] | None = None,
) -> FastAPI:
    """The API and the web explorer at ``/`` (arguments: ``stack_advisor.api.app.create_api``)."""
    return create_api(
        settings, store=store, store_opener=store_opener, pages=install_web, session_cookie=COOKIE
    )


def app_from_environment() -> FastAPI:
    """Factory for ``uvicorn --factory stack_advisor.server:app_from_environment``."""
    return create_app()
