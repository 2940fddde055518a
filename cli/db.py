"""`advisor db`: migrate, stats, reset."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import FormatOpt, JsonOpt, StoreOpt
from cli.render import OutputFormat, note, output_format, render

db_app = typer.Typer(help="The knowledge-base store: schema migrations and statistics.", no_args_is_help=True)


@db_app.command("migrate")
def migrate(store: StoreOpt = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """Create or upgrade the schema (constraints, indexes, tables); idempotent."""
    chosen = output_format(fmt, as_json)
    from graph_schema.registry import open_store, resolve_store_uri  # lazy: --help stays fast

    with open_store(store, migrate=False, create=True) as st:
        before = st.schema_version()
        after = st.ensure_schema()
        changed = getattr(st, "migration_report", {})
    data = {"store": resolve_store_uri(store), "schema_version_before": before, "schema_version": after,
            "data_migrations": {str(k): v for k, v in changed.items()}}
    render([data], fmt=chosen, json_data=data, title="Schema")


@db_app.command("stats")
def stats(store: StoreOpt = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """What the store holds: nodes per label and observations per source."""
    chosen = output_format(fmt, as_json)
    from graph_schema.registry import open_store, resolve_store_uri  # lazy: --help stays fast

    with open_store(store, create=False) as st:
        s = st.stats()
        accelerators = st.list_entities("accelerators")
    data = {"store": resolve_store_uri(store), **s.model_dump(),
            "accelerators": [{k: a.get(k) for k in ("model", "resolved", "kind", "observations", "aliases_seen")}
                             for a in accelerators]}
    if chosen is OutputFormat.json:
        render([], fmt=chosen, json_data=data)
        return
    note(f"store {data['store']} · schema v{s.schema_version} · generation {s.generation}")
    rows = [{"what": "nodes", "name": k, "count": v} for k, v in s.counts.items()]
    rows += [{"what": "observations from", "name": k, "count": v}
             for k, v in s.observations_by_source.items()]
    render(rows, fmt=chosen, title="What the store holds", columns=["what", "name", "count"])
    render(
        [{"accelerator": a["model"], "kind": a["kind"] if a["resolved"] else "UNRESOLVED",
          "observations": a["observations"],
          "published as": ", ".join(f"{raw} ({n})" for raw, n in a["aliases_seen"].items())}
         for a in accelerators],
        fmt=chosen,
        title="Accelerators (catalogue names; the names they were published under)",
        columns=["accelerator", "kind", "observations", "published as"],
    )


@db_app.command("reset")
def reset(
    store: StoreOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete everything in the store.")] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Delete every node and relationship in the store (asks for --yes)."""
    if not yes:
        raise typer.BadParameter("refusing to delete the knowledge base without --yes")
    from graph_schema.registry import open_store, resolve_store_uri  # lazy: --help stays fast

    with open_store(store, create=False) as st:
        clear = getattr(st, "clear", None)
        if clear is None:
            raise typer.BadParameter(f"{type(st).__name__} cannot be reset from here")
        clear()
        st.ensure_schema()
    data = {"store": resolve_store_uri(store), "reset": True}
    render([data], fmt=output_format(fmt, as_json), json_data=data)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db", rich_help_panel="Knowledge base")
