"""Bounded work per request: caps on what one request may ask for, a time budget per answer,
work stopped when the client has gone, and a limit on anonymous requests in flight.

Each refusal names the cap and the setting that sets it, so a client knows what to split.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from stack_advisor.advisor.budget import AnswerBudget, ClientGone, check_cap
from stack_advisor.api.middleware import REFUSAL_HEADERS

T = TypeVar("T")
R = TypeVar("R")

# Paths that never do work worth limiting (probes, docs, assets).
UNLIMITED_PATHS = (
    "/healthz",
    "/readyz",
    "/metrics",
    "/static/",
    "/docs",
    "/redoc",
    "/openapi.json",
    "/login",
    "/logout",
)


GIL_SWITCH_INTERVAL_S = 0.0005
DISCONNECT_POLL_S = 0.25  # how often an answer in progress looks whether its client is there
__all__ = ["AnswerBudget", "ClientGone", "answer_budget", "check_cap", "in_chunks"]


async def in_chunks(
    request: Request,
    items: Sequence[T],
    work: Callable[[list[T]], list[R]],
    *,
    chunk: int,
    budget_s: float,
) -> list[R]:
    """``work`` over ``items`` a chunk at a time in the thread pool, checking between chunks
    that the client is still there and the answer is within its time budget.

    Raises:
        OverBudget: the budget ran out (503 naming ``ADVISOR_ANSWER_BUDGET_S``).
        ClientGone: the client disconnected (nothing more is computed).
    """
    budget = AnswerBudget(budget_s)
    out: list[R] = []
    for start in range(0, len(items), chunk):
        if start and await request.is_disconnected():
            budget.cancel()
        if start:
            budget.check(f"the answer, after {start} of {len(items)} items,")
        out.extend(await run_in_threadpool(work, list(items[start : start + chunk])))
    return out


async def answer_budget(request: Request) -> AsyncIterator[AnswerBudget]:
    """A dependency: the request's answer gets ``ADVISOR_ANSWER_BUDGET_S``, checked by the
    work's own checkpoints (``stack_advisor.advisor.budget.checkpoint``) in the worker thread, and
    is stopped at the next checkpoint once the client has gone (looked at every
    ``DISCONNECT_POLL_S``). Async, so the budget is set in the request's context, which the
    endpoint's worker thread copies."""
    budget = AnswerBudget(request.app.state.settings.answer_budget_s)
    watcher = asyncio.create_task(_watch_client(request, budget))
    try:
        with budget.applied():
            yield budget
    finally:
        watcher.cancel()


async def _watch_client(request: Request, budget: AnswerBudget) -> None:
    while not await request.is_disconnected():
        await asyncio.sleep(DISCONNECT_POLL_S)
    budget.cancel()


Scope = dict[str, Any]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class AnonymousLimit:
    """Pure ASGI middleware: at most ``limit`` requests without a verified token in flight at
    once; more get 503 with Retry-After at once, so a flood of anonymous reads cannot take every
    worker from token holders and probes. A request counts as authenticated only when the token
    it carries (``Authorization: Bearer``, or the session cookie) is one ``verify`` accepts: a
    made-up cookie or header is as anonymous as none."""

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        *,
        limit: int,
        retry_after_s: int,
        cookie: str | None,
        verify: Callable[[str], bool],
    ) -> None:
        self.app = app
        self.limit = limit
        self.retry_after = str(retry_after_s).encode()
        self.cookie = cookie
        self.verify = verify
        self.in_flight = 0

    def _anonymous(self, scope: Scope) -> bool:
        if scope.get("path", "").startswith(UNLIMITED_PATHS):
            return False
        for name, value in scope.get("headers", ()):
            token = None
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                token = token.strip() if scheme.lower() == "bearer" else None
            elif name == b"cookie" and self.cookie is not None:
                token = _cookie_value(value.decode("latin-1"), self.cookie)
            if token and self.verify(token):
                return False
        return True

    async def __call__(self, scope: Scope, receive: Any, send: Send) -> None:
        if scope["type"] != "http" or not self._anonymous(scope):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            await _refuse(send, self.limit, self.retry_after)
            return
        self.in_flight += 1  # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def _cookie_value(header: str, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header, or None."""
    for part in header.split(";"):
        key, eq, value = part.strip().partition("=")
        if eq and key == name:
            return value.strip().strip('"')
    return None


async def _refuse(send: Send, limit: int, retry_after: bytes) -> None:
    """503 and close: the server does not read (and parse) the body of a refused request."""
    body = json.dumps(
        {
            "error": "too_many_anonymous_requests",
            "message": f"{limit} requests without a token are in flight already "
            "(ADVISOR_MAX_ANONYMOUS_CONCURRENCY); retry later, or send a read token",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", retry_after),
                (b"connection", b"close"),
                *REFUSAL_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def install_limits(
    app: Any, settings: Any, cookie: str | None, verify: Callable[[str], bool]
) -> None:
    """The anonymous limit (inside the metrics middleware, so its 503s are counted) and the
    handler for a client that went away (499, nginx's code; nobody reads it)."""
    from fastapi.responses import Response

    # Answer work is CPU-bound Python in worker threads. The event loop (probes, refusals, every
    # request's I/O) gives up the GIL at each socket wait and must wait up to the switch interval
    # to get it back from a busy worker; at CPython's 5 ms a /healthz took ~45 ms (median)
    # under bench/flood.py. 0.5 ms bounds that wait at a small cost in throughput.
    sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL_S))

    async def gone(_request: Request, _exc: Exception) -> Response:
        return Response(status_code=499)

    app.add_exception_handler(ClientGone, gone)
    app.add_middleware(
        AnonymousLimit,
        limit=settings.max_anonymous_concurrency,
        retry_after_s=settings.retry_after_s,
        cookie=cookie,
        verify=verify,
    )
