"""Who may see the pages: the API's own tokens and scopes (``stack_advisor.api.auth``).

A browser cannot add an ``Authorization`` header to a link it follows, so the login form
stores the token in an HttpOnly, SameSite=Strict cookie that stands in for the header; a
request that does carry the header (a script, a proxy) uses it as the API does. Pages need the
``read`` scope, or nothing where reads are open (``ADVISOR_READ_AUTH=open``). The pages only read:
no page writes to the store, so the cookie grants nothing the read scope does not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from urllib.parse import parse_qs, quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from stack_advisor.api.auth import Caller, authorize
from stack_advisor.api.errors import Forbidden, Unauthorized
from stack_advisor.api.settings import Scope
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.web.render import FORMATS, page

COOKIE = "advisor_token"
COOKIE_MAX_AGE_S = 8 * 3600


def guarded(request: Request, fmt: str, build: Callable[[], Response]) -> Response:
    """Authorise, then build. Without a token a browser is sent to the login form (an export
    gets the API's JSON 401); a caller without the read scope gets a page saying so.

    Raises:
        InvalidInput: ``fmt`` is not one of ``stack_advisor.web.render.FORMATS``.
    """
    if fmt not in FORMATS:
        raise InvalidInput(f"format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        page_caller(request)
    except Unauthorized:
        if fmt != "html":
            raise
        return RedirectResponse(login_url(request), status_code=303)
    except Forbidden as exc:
        if fmt != "html":
            raise
        return page(
            request, "message.html", status_code=403, title="Not allowed", error=exc.message
        )
    return build()


def page_caller(request: Request) -> Caller:
    """The caller of a page request.

    Raises:
        Unauthorized: no token where reads need one, or an unknown token.
        Forbidden: a token without the read scope.
    """
    header = request.headers.get("authorization")
    cookie = request.cookies.get(COOKIE)
    if not header and cookie:
        header = f"Bearer {cookie}"
    settings = request.app.state.settings
    return authorize(
        request.app.state.tokens, header, Scope.READ, open_access=settings.read_auth == "open"
    )


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this site only (never ``//host`` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def login_url(request: Request) -> str:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"/login?next={quote(here, safe='')}"


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body as a dict (first value of each field)."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


class LoginThrottle:
    """Failed logins per client address: after ``attempts`` failures within ``window_s`` the
    address gets 429 until the oldest of them leaves the window (guessing a token by the form is
    then as slow as by the API, where nothing answers faster than a 401). Bounded memory: the
    addresses seen least recently are forgotten first."""

    def __init__(self, attempts: int = 10, window_s: float = 60.0, addresses: int = 10_000) -> None:
        self.attempts = attempts
        self.window_s = window_s
        self.addresses = addresses
        self._failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> list[float]:
        kept = [t for t in self._failures.get(address, ()) if now - t < self.window_s]
        if kept:
            self._failures[address] = kept
        else:
            self._failures.pop(address, None)
        return kept

    def wait_s(self, address: str) -> float:
        """Seconds until ``address`` may try again (0: now)."""
        now = time.monotonic()
        with self._lock:
            recent = self._recent(address, now)
            if len(recent) < self.attempts:
                return 0.0
            return max(0.0, self.window_s - (now - recent[0]))

    def failed(self, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._recent(address, now)
            self._failures.setdefault(address, []).append(now)
            self._failures[address] = self._failures.pop(address)  # most recent last
            while len(self._failures) > self.addresses:
                self._failures.pop(next(iter(self._failures)))
