"""Dependencies: ``Annotated`` aliases that routes declare, and the auth dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader

from stack_advisor.api.auth import Caller, TokenTable, authorize, needs_scope
from stack_advisor.api.settings import Scope, Settings, get_settings
from stack_advisor.store.base import Store

if TYPE_CHECKING:
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.api.middleware import Metrics
    from stack_advisor.api.resources import Resources
else:
    Advisor = Metrics = Resources = Any

# Documents the scheme in OpenAPI; the header is checked by ``authorize`` (401 vs 403 kept apart).
_bearer = APIKeyHeader(
    name="Authorization",
    auto_error=False,
    scheme_name="bearer",
    description="`Bearer <token>`; scopes read, write, admin (admin ⊇ write ⊇ read).",
)


def get_resources(request: Request) -> Resources:
    return request.app.state.resources  # type: ignore[no-any-return]


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics  # type: ignore[no-any-return]


def get_store(request: Request) -> Store:
    return get_resources(request).store()


def get_advisor(request: Request) -> Advisor:
    return get_resources(request).advisor()


def get_token_table(request: Request) -> TokenTable:
    return request.app.state.tokens  # type: ignore[no-any-return]


StoreDep = Annotated[Store, Depends(get_store)]
ResourcesDep = Annotated[Resources, Depends(get_resources)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
AdvisorDep = Annotated[Advisor, Depends(get_advisor)]
TokenTableDep = Annotated[TokenTable, Depends(get_token_table)]
AuthHeader = Annotated[str | None, Security(_bearer)]


@needs_scope(Scope.READ, open_when=lambda settings: settings.read_auth == "open")
def require_read(header: AuthHeader, settings: SettingsDep, table: TokenTableDep) -> Caller:
    return authorize(table, header, Scope.READ, open_access=settings.read_auth == "open")


@needs_scope(Scope.WRITE)
def require_write(header: AuthHeader, table: TokenTableDep) -> Caller:
    return authorize(table, header, Scope.WRITE, open_access=False)


@needs_scope(Scope.ADMIN)
def require_admin(header: AuthHeader, table: TokenTableDep) -> Caller:
    return authorize(table, header, Scope.ADMIN, open_access=False)


def require_metrics(header: AuthHeader, settings: SettingsDep, table: TokenTableDep) -> Caller:
    return authorize(table, header, Scope.READ, open_access=settings.metrics_auth == "open")


ReadCaller = Annotated[Caller, Depends(require_read)]
WriteCaller = Annotated[Caller, Depends(require_write)]
AdminCaller = Annotated[Caller, Depends(require_admin)]
