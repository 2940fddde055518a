"""Pure ASGI middleware: a body-size limit checked before parsing, and Prometheus metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.exceptions import HTTPException

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class _TooLarge(HTTPException):
    """Raised from ``receive``; an HTTPException so FastAPI's body parsing re-raises it as is."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            413,
            f"request body is larger than the limit of {max_bytes} bytes "
            "(ADVISOR_MAX_BODY_BYTES); split the batch into smaller ones",
        )


# The security headers of a JSON answer, on the refusals these middlewares send themselves
# (outside the app's own header middleware): never framed, never sniffed, nothing loaded.
REFUSAL_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
]


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
                *REFUSAL_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class BodySizeLimit:
    """413 for a body over ``max_bytes``: refused from Content-Length before anything is read,
    and counted while streaming for chunked bodies (so nothing oversized is ever parsed)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refusal(self, size: int | None) -> dict[str, Any]:
        got = f"{size} bytes" if size is not None else "more"
        return {
            "error": "payload_too_large",
            "message": f"request body is {got}; the limit is {self.max_bytes} bytes "
            "(ADVISOR_MAX_BODY_BYTES); split the batch into smaller ones",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    size = int(value)
                except ValueError:
                    await _send_json(
                        send,
                        400,
                        {"error": "bad_request", "message": "Content-Length is not a number"},
                    )
                    return
                if size > self.max_bytes:
                    await _send_json(send, 413, self._refusal(size))
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _send_json(send, 413, self._refusal(None))


def _control(text: str) -> str | None:
    """The first control character in ``text`` (as U+XXXX), or None."""
    for char in text:
        if ord(char) < 32 or ord(char) == 127:
            return f"U+{ord(char):04X}"
    return None


class ControlCharacters:
    """422 for a query parameter holding ``%00`` or another control character, before any
    handler, store or page sees it (a NUL reached a query as a 500). The answer names the
    parameter and the character, never echoes the value (it could be someone's token). Path
    segments are the routes' own to check (a cluster name says what is wrong with it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = _control_in(scope)
            if problem:
                name, message = problem
                body = {"error": "invalid_input", "message": message, "details": {"field": name}}
                await _send_json(send, 422, body)
                return
        await self.app(scope, receive, send)


# a form's textarea (the recommend page's pasted model): its line breaks and tabs are text
MULTILINE_PARAMETERS = frozenset({"model_yaml"})


def _control_in(scope: Scope) -> tuple[str, str] | None:
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name in MULTILINE_PARAMETERS:
            value = value.replace("\r\n", "").replace("\n", "").replace("\t", "")
        found = _control(name) or _control(value)
        if found:
            shown = name[:40] if not _control(name) else "(a parameter name)"
            what = (
                "NUL or another control character" if found == "U+0000" else "a control character"
            )
            return shown, f"{shown}: must not contain {what} ({found}); remove it"
    return None


class Metrics:
    """Request counts and latencies per route template (never per raw path: bounded labels)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "advisor_http_requests_total",
            "HTTP requests by method, route and status",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "advisor_http_request_duration_seconds",
            "HTTP request latency by method and route",
            ("method", "route"),
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.store_up = Gauge(
            "advisor_store_up",
            "1 when the store answered the last readiness check",
            registry=self.registry,
        )
        self.observations_ingested = Counter(
            "advisor_observations_ingested_total",
            "observations received by POST /v1/observations and /v1/batches, and how many were new",
            ("new",),
            registry=self.registry,
        )


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    """A fixed set of labels: a made-up method is ``other``, never a new time series."""
    return method if method in KNOWN_METHODS else "other"


def status_label(status: int) -> str:
    return str(status) if 100 <= status <= 599 else "other"


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            # a route template of this app (a fixed set), else one label for everything else
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = method_label(scope.get("method", ""))
            self.metrics.requests.labels(method, template, status_label(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - start)
