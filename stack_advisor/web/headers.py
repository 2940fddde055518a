"""Security headers on every answer: pages get a strict Content-Security-Policy (scripts, styles
and images from this origin only, no inline script, no framing), everything gets ``nosniff`` and
a Referrer-Policy. The API docs (Swagger UI, ReDoc start themselves with an inline script) get
the framing rules only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
DOCS_POLICY = "frame-ancestors 'none'"
DOCS_PATHS = ("/docs", "/redoc")

COMMON = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class SecurityHeaders:
    """Pure ASGI middleware adding the headers above to each response start."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        docs = scope.get("path", "").startswith(DOCS_PATHS)
        policy = (DOCS_POLICY if docs else PAGE_POLICY).encode()

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", ())
                    if k.lower() not in {h for h, _ in COMMON}
                ]
                headers.extend(COMMON)
                headers.append((b"content-security-policy", policy))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
