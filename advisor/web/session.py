"""Who may see the pages: the API's own tokens and scopes (``advisor.api.auth``).

A browser cannot add an ``Authorization`` header to a link it follows, so the login form
stores the token in an HttpOnly, SameSite=Strict cookie that stands in for the header; a
request that does carry the header (a script, a proxy) uses it as the API does. Pages need the
``read`` scope, or nothing where reads are open (``ADVISOR_READ_AUTH=open``). The pages only read:
no page writes to the store, so the cookie grants nothing the read scope does not.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote

from fastapi import Request

from advisor.api.auth import Caller, authorize
from advisor.api.settings import Scope

COOKIE = "advisor_token"
COOKIE_MAX_AGE_S = 8 * 3600


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
    return authorize(request.app.state.tokens, header, Scope.READ,
                     open_access=settings.read_auth == "open")


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
