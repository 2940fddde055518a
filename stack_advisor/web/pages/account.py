"""Pages outside the knowledge: the known-bad list, logging in and out."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stack_advisor.advisor import service
from stack_advisor.api.deps import AdvisorDep, StoreDep
from stack_advisor.api.errors import Forbidden, Unauthorized
from stack_advisor.web import session
from stack_advisor.web.render import export, page

router = APIRouter(include_in_schema=False)

# ---- known-bad -------------------------------------------------------------------------------


@router.get("/known-bad")
def known_bad_page(
    request: Request, store: StoreDep, advisor: AdvisorDep, q: str = "", format: str = "html"
) -> Response:
    def build() -> Response:
        rows = service.known_bad(advisor, store)
        if q.strip():
            words = q.lower().split()
            rows = [
                r
                for r in rows
                if all(w in " ".join(str(v) for v in r.values()).lower() for w in words)
            ]
        columns = [
            "kind",
            "severity",
            "what",
            "stack",
            "accelerator",
            "placement",
            "benchmark",
            "message",
            "when",
        ]
        if format != "html":
            return export(format, "known-bad", columns, rows, {"query": {"q": q}, "rows": rows})
        return page(
            request,
            "known_bad.html",
            title="Known-bad combinations",
            q=q,
            rows=rows[:500],
            total=len(rows),
            columns=columns,
        )

    return session.guarded(request, format, build)


# ---- login -----------------------------------------------------------------------------------


@router.get("/login")
def login_form(request: Request, next: str = "/") -> Response:
    return page(request, "login.html", title="Log in", next=session.safe_next(next))


@router.post("/login")
async def login(request: Request) -> Response:
    form = await session.form_fields(request)
    target = session.safe_next(form.get("next"))
    token = form.get("token", "").strip()
    from stack_advisor.api.auth import authorize
    from stack_advisor.api.settings import Scope

    throttle = _login_throttle(request)
    address = request.client.host if request.client else "unknown"
    wait = throttle.wait_s(address)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        response = page(
            request,
            "login.html",
            status_code=429,
            title="Log in",
            next=target,
            error=f"too many failed logins from this address; try again in {seconds} s",
        )
        response.headers["Retry-After"] = str(seconds)
        return response
    try:
        authorize(
            request.app.state.tokens,
            f"Bearer {token}" if token else None,
            Scope.READ,
            open_access=False,
        )
    except (Unauthorized, Forbidden) as exc:
        throttle.failed(address)
        return page(
            request,
            "login.html",
            status_code=exc.status_code,
            title="Log in",
            next=target,
            error=exc.message,
        )
    redirect = RedirectResponse(target, status_code=303)
    redirect.set_cookie(
        session.COOKIE,
        token,
        max_age=session.COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return redirect


def _login_throttle(request: Request) -> session.LoginThrottle:
    state = request.app.state
    throttle: session.LoginThrottle | None = getattr(state, "login_throttle", None)
    if throttle is None:
        throttle = state.login_throttle = session.LoginThrottle()
    return throttle


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(session.COOKIE, path="/")
    return response
