"""The web explorer: server-rendered pages at ``/`` over the same advisor and store as ``/v1``
(see docs/web.md). Every asset ships in this package; nothing is fetched at run time."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles


def install_web(app: FastAPI) -> None:
    from stack_advisor.web.catalogue import router as catalogue_router
    from stack_advisor.web.headers import SecurityHeaders
    from stack_advisor.web.pages import router

    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(packages=[("stack_advisor.web", "static")]), name="web-static")
    app.include_router(router)
    app.include_router(catalogue_router)
