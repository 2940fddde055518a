"""Bearer tokens with scopes. Tokens are compared in constant time and never logged."""

from __future__ import annotations

import hmac
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.exceptions import HTTPException

from stack_advisor.api.errors import Forbidden, Unauthorized
from stack_advisor.api.settings import Scope, Settings, TokenEntry

log = logging.getLogger("stack_advisor.api.auth")

REALM = 'Bearer realm="stack-advisor"'
# where ``needs_scope`` marks an authorization dependency with the scope it checks
SCOPE_MARK = "advisor_needed_scope"
F = TypeVar("F", bound=Callable[..., Any])


class TokenTable:
    """The configured tokens. Re-reads the tokens file when it changes (a rotated Kubernetes
    Secret), so rotation needs no restart. A tokens file that then fails to parse, holds a
    refused token, or disappears revokes every token it granted (fail closed): only the tokens
    of ``ADVISOR_TOKENS`` stay, the error is logged, and ``problem`` (shown by ``/readyz``) says
    why until the file is usable again."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._file_mtime = self._mtime()
        self._entries = settings.check()
        self.problem: str | None = None
        names = ", ".join(
            f"{e.name}({'/'.join(sorted(s.value for s in e.scopes))})" for e in self._entries
        )
        log.info("auth: %d token(s) configured: %s", len(self._entries), names or "none")

    def _mtime(self) -> tuple[int, int, int] | None:
        """What tells a rewritten file apart (a Secret's update swaps a symlink: a new inode)."""
        path = self._settings.tokens_file
        try:
            st = os.stat(path) if path is not None else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino) if st is not None else None

    def entries(self) -> list[TokenEntry]:
        mtime = self._mtime()
        if mtime != self._file_mtime:
            with self._lock:
                try:
                    self._entries = self._settings.check()
                    self.problem = None
                    log.info("auth: tokens file changed; %d token(s) now", len(self._entries))
                except Exception as exc:
                    self._entries = self._settings.env_token_entries()
                    self.problem = (
                        f"the tokens file changed and cannot be used, so every token "
                        f"it granted is revoked: {exc}"
                    )
                    log.error("auth: %s", self.problem)
                self._file_mtime = mtime
        return self._entries

    def lookup(self, presented: str) -> TokenEntry | None:
        """The entry whose secret equals ``presented``; every entry is compared, in constant
        time, so timing reveals neither which token matched nor how much of it."""
        wanted = presented.encode()
        found: TokenEntry | None = None
        for entry in self.entries():
            if hmac.compare_digest(wanted, entry.secret.encode()):
                found = entry
        return found


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token's name and scopes, or anonymous (open reads)."""

    name: str
    scopes: frozenset[Scope]


ANONYMOUS = Caller("anonymous", frozenset({Scope.READ}))


def authorize(
    table: TokenTable, authorization: str | None, needed: Scope, *, open_access: bool
) -> Caller:
    """Check an ``Authorization`` header for ``needed``.

    Raises:
        Unauthorized (401): no token where one is needed, a malformed header or an unknown token.
        Forbidden (403): a known token without the needed scope.
    """
    if not authorization:
        if open_access:
            return ANONYMOUS
        raise _unauthorized(f"this endpoint needs a bearer token with the {needed.value!r} scope")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        raise _unauthorized("the Authorization header must be 'Bearer <token>'")
    entry = table.lookup(credentials.strip())
    if entry is None:
        raise _unauthorized("unknown token", error="invalid_token")
    if needed not in entry.scopes:
        exc = Forbidden(
            f"token {entry.name!r} lacks the {needed.value!r} scope this endpoint needs",
            details={
                "needed_scope": needed.value,
                "token_scopes": sorted(s.value for s in entry.scopes),
            },
        )
        exc.www_authenticate = f'{REALM}, error="insufficient_scope", scope="{needed.value}"'
        raise exc
    return Caller(entry.name, entry.scopes)


def needs_scope(
    scope: Scope, *, open_when: Callable[[Settings], bool] | None = None
) -> Callable[[F], F]:
    """Mark an authorization dependency with the scope it checks (None where ``open_when`` holds
    for the server's settings), so ``AuthBeforeBody`` applies the same check before the body is
    read: the gate and the route cannot disagree."""

    def mark(dependency: F) -> F:
        setattr(dependency, SCOPE_MARK, (scope, open_when))
        return dependency

    return mark


def _unauthorized(message: str, error: str | None = None) -> Unauthorized:
    exc = Unauthorized(message)
    exc.www_authenticate = REALM + (f', error="{error}"' if error else "")
    return exc


class _RefusedBeforeBody(HTTPException):
    """Raised from ``receive``: an HTTPException, so FastAPI's body reading re-raises it as is
    and the app's handler renders ``advisor_error``."""

    def __init__(self, error: Unauthorized | Forbidden) -> None:
        super().__init__(error.status_code, error.message)
        self.advisor_error = error


def _needed_scope(dependant: Any, settings: Settings) -> Scope | None:
    """The scope a route's dependencies ask for (None: no check, or open reads): the first
    dependency marked by ``needs_scope``."""
    for dep in dependant.dependencies:
        mark = getattr(dep.call, SCOPE_MARK, None)
        if mark is not None:
            scope, open_when = mark
            return None if open_when is not None and open_when(settings) else scope
        found = _needed_scope(dep, settings)
        if found is not None:
            return found
    return None


class AuthBeforeBody:
    """Pure ASGI middleware: a request's token is checked before its body is read or parsed,
    so a caller without a token gets 401 (not a 422 about its JSON) and an unauthenticated
    multi-megabyte body is never parsed.

    The check runs when the route first asks for the body (routing has chosen the route by
    then), with the scope the route's own dependencies need (``require_write`` ...), so the
    gate and the route cannot disagree; the route's dependency still runs, cheaply.
    """

    def __init__(self, app: Any, *, tokens: TokenTable, settings: Settings) -> None:
        self.app = app
        self.tokens = tokens
        self.settings = settings

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        checked = False

        async def gated_receive() -> dict[str, Any]:
            nonlocal checked
            if not checked:
                checked = True
                dependant = getattr(scope.get("route"), "dependant", None)
                needed = _needed_scope(dependant, self.settings) if dependant else None
                if needed is not None:
                    header = None
                    for name, value in scope.get("headers", ()):
                        if name == b"authorization":
                            header = value.decode("latin-1")
                    try:
                        authorize(self.tokens, header, needed, open_access=False)
                    except (Unauthorized, Forbidden) as exc:
                        raise _RefusedBeforeBody(exc) from None
            return await receive()  # type: ignore[no-any-return]

        await self.app(scope, gated_receive, send)
