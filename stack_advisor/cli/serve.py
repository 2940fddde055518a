"""``advisor serve``: run the HTTP API with uvicorn."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.cli.options import JsonOpt, StoreOpt

if TYPE_CHECKING:
    from pathlib import Path

    import uvicorn

    from stack_advisor.api.settings import Settings


def _announce(
    server: uvicorn.Server, settings: Settings, host: str, port: int, as_json: bool
) -> Path | None:
    """Once the server listens: the marker that lets local commands find it (an embedded store
    only; returned, to withdraw at shutdown) and the URL, store and read access printed."""
    from stack_advisor.cli import served
    from stack_advisor.cli.render import info, print_json
    from stack_advisor.store.registry import resolve_store_uri
    from stack_advisor.store.uris import redact_uri

    bound = port
    for srv in getattr(server, "servers", []) or []:
        for sock in srv.sockets:
            bound = sock.getsockname()[1]
    url = f"http://{host}:{bound}"
    served_marker = None
    store_file = served.embedded_path(resolve_store_uri(None, settings.store_settings()))
    if store_file is not None:
        reach = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        served_marker = served.announce(store_file, f"http://{reach}:{bound}")
    if as_json:
        print_json(
            {"url": url, "store": redact_uri(settings.store), "read_auth": settings.read_auth}
        )
    else:
        info(
            f"stack-advisor API on {url}  (docs: {url}/docs, store: "
            f"{redact_uri(settings.store)}, reads: {settings.read_auth})"
        )
    return served_marker


def serve(
    host: Annotated[
        str, typer.Option(help="Interface to bind; 0.0.0.0 for every interface.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0 = any free port).")
    ] = 8080,
    store: StoreOpt = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    as_json: JsonOpt = False,
) -> None:
    """Serve the API (auth, tokens and limits come from ADVISOR_* variables; see docs/api.md)."""
    import uvicorn

    from stack_advisor.api.settings import get_settings
    from stack_advisor.server import create_app

    settings = get_settings().model_copy(update={"store": store} if store else {})
    app = create_app(settings)
    logging.getLogger("advisor").setLevel(log_level.upper())
    config = uvicorn_config(app, settings, host=host, port=port, log_level=log_level)
    server = uvicorn.Server(config)

    announced = False
    served_marker = None

    def announce() -> None:
        nonlocal announced, served_marker
        if announced or not server.started:
            return
        announced = True
        served_marker = _announce(server, settings, host, port, as_json)

    original_startup = server.startup

    async def startup(sockets: object = None) -> None:
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        announce()

    original_shutdown = server.shutdown

    async def shutdown(sockets: object = None) -> None:
        # Here rather than after run(): uvicorn re-raises SIGTERM once it has shut down.
        from stack_advisor.cli import served

        served.withdraw(served_marker)
        await original_shutdown(sockets=sockets)  # type: ignore[arg-type]

    server.startup = startup  # type: ignore[method-assign]
    server.shutdown = shutdown  # type: ignore[method-assign]
    try:
        server.run()
    finally:
        from stack_advisor.cli import served

        served.withdraw(served_marker)


def register(app: typer.Typer) -> None:
    app.command("serve", rich_help_panel="Service")(serve)


def uvicorn_config(
    app: Any, settings: Settings, *, host: str, port: int, log_level: str
) -> uvicorn.Config:
    """uvicorn's settings for the app: X-Forwarded-For and -Proto believed only from the proxies
    in ADVISOR_TRUSTED_PROXIES (uvicorn's own default trusts loopback, so a client on the same
    host could choose the address the login limiter counts); a request uvicorn cannot parse is
    refused in JSON (``stack_advisor.api.http_refusal``)."""
    import uvicorn

    from stack_advisor.api.http_refusal import JsonRefusingProtocol

    trusted = settings.trusted_proxies.strip()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        http=JsonRefusingProtocol,  # a request it cannot parse is refused in the API's JSON
    )
