"""`advisor db`: migrate, stats, reset."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import JsonOpt, StoreOpt
from cli.render import info, render
from graph_schema.registry import open_store, resolve_store_uri

db_app = typer.Typer(help="The knowledge-base store: schema migrations and statistics.", no_args_is_help=True)


@db_app.command("migrate")
def migrate(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Create or upgrade the schema (constraints, indexes, tables); idempotent."""
    with open_store(store, migrate=False) as st:
        before = st.schema_version()
        after = st.ensure_schema()
    data = {"store": resolve_store_uri(store), "schema_version_before": before, "schema_version": after}
    render([data], as_json=as_json, json_data=data, title="Schema")


@db_app.command("stats")
def stats(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """What the store holds: nodes per label and observations per source."""
    with open_store(store) as st:
        s = st.stats()
    data = {"store": resolve_store_uri(store), **s.model_dump()}
    if as_json:
        render([], as_json=True, json_data=data)
        return
    info(f"store {data['store']} · schema v{s.schema_version} · generation {s.generation}")
    render([{"label": k, "count": v} for k, v in s.counts.items()], as_json=False, title="Nodes")
    render(
        [{"source": k, "observations": v} for k, v in s.observations_by_source.items()],
        as_json=False,
        title="Observations by source",
        columns=["source", "observations"],
    )


@db_app.command("reset")
def reset(
    store: StoreOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete everything in the store.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete every node and relationship in the store (asks for --yes)."""
    if not yes:
        raise typer.BadParameter("refusing to delete the knowledge base without --yes")
    with open_store(store) as st:
        clear = getattr(st, "clear", None)
        if clear is None:
            raise typer.BadParameter(f"{type(st).__name__} cannot be reset from here")
        clear()
        st.ensure_schema()
    render([], as_json=as_json, json_data={"store": resolve_store_uri(store), "reset": True})


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db", rich_help_panel="Knowledge base")
