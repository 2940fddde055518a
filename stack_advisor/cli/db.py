"""`advisor db`: migrate, stats, failures, reset, bulk-import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stack_advisor.cli.options import FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.render import OutputFormat, note, output_format, render

db_app = typer.Typer(
    help="The knowledge-base store: schema migrations and statistics.", no_args_is_help=True
)


@db_app.command("migrate")
def migrate(store: StoreOpt = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """Create or upgrade the schema (constraints, indexes, tables); idempotent."""
    chosen = output_format(fmt, as_json)
    from stack_advisor.cli.stores import open_store, resolve_store_uri

    with open_store(store, migrate=False, create=True) as st:
        before = st.schema_version()
        after = st.ensure_schema()
        changed = getattr(st, "migration_report", {})
    data = {
        "store": resolve_store_uri(store),
        "schema_version_before": before,
        "schema_version": after,
        "data_migrations": {str(k): v for k, v in changed.items()},
    }
    render([data], fmt=chosen, json_data=data, title="Schema")


@db_app.command("stats")
def stats(store: StoreOpt = None, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """What the store holds: nodes per label and observations per source."""
    chosen = output_format(fmt, as_json)
    from stack_advisor.cli.stores import open_store, resolve_store_uri

    with open_store(store, create=False) as st:
        s = st.stats()
        accelerators = st.list_entities("accelerators")
    data = {
        "store": resolve_store_uri(store),
        **s.model_dump(),
        "accelerators": [
            {k: a.get(k) for k in ("model", "resolved", "kind", "observations", "aliases_seen")}
            for a in accelerators
        ],
    }
    if chosen is OutputFormat.json:
        render([], fmt=chosen, json_data=data)
        return
    note(f"store {data['store']} · schema v{s.schema_version} · generation {s.generation}")
    rows = [{"what": "nodes", "name": k, "count": v} for k, v in s.counts.items()]
    rows += [
        {"what": "observations from", "name": k, "count": v}
        for k, v in s.observations_by_source.items()
    ]
    render(rows, fmt=chosen, title="What the store holds", columns=["what", "name", "count"])
    render(
        [
            {
                "accelerator": a["model"],
                "kind": a["kind"] if a["resolved"] else "UNRESOLVED",
                "observations": a["observations"],
                "published as": ", ".join(f"{raw} ({n})" for raw, n in a["aliases_seen"].items()),
            }
            for a in accelerators
        ],
        fmt=chosen,
        title="Accelerators (catalogue names; the names they were published under)",
        columns=["accelerator", "kind", "observations", "published as"],
    )


FAILURE_CLASSES = (
    "stack",
    "harness",
    "environment",
    "outcome",
)  # stack_advisor.schema.models.FailureClass, by name


@db_app.command("failures")
def failures(
    store: StoreOpt = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--class",
            help="Only this class: stack (a known-bad stack), harness (a harness "
            "limitation: 'unsupported'), environment (something the node lacked) or outcome "
            "(a run the benchmark's rules expect some of to end unscored: a Training seed that "
            "did not converge).",
        ),
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """The recorded failures with their class (as GET /v1/failures gives them): only stack
    failures make a stack known-bad."""
    chosen = output_format(fmt, as_json)
    from stack_advisor.cli.options import choose
    from stack_advisor.cli.stores import open_store
    from stack_advisor.schema.models import FailureClass

    wanted = choose(only, FAILURE_CLASSES, "--class")
    with open_store(store, create=False) as st:
        items = st.list_entities("failures")
    if wanted is not None:
        items = [f for f in items if f["failure_class"] == FailureClass[wanted.upper()].value]
    items.sort(key=lambda f: str(f.get("timestamp") or ""))
    render(
        items,
        fmt=chosen,
        json_data=items,
        title="Recorded failures",
        columns=[
            "failure_class",
            "stage",
            "error_class",
            "accelerator",
            "stack_id",
            "benchmark_id",
            "timestamp",
        ],
        details=["message"],
    )


@db_app.command("reset")
def reset(
    store: StoreOpt = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Really delete everything in the store.")
    ] = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Delete every node and relationship in the store (asks for --yes)."""
    if not yes:
        raise typer.BadParameter("refusing to delete the knowledge base without --yes")
    from stack_advisor.cli.stores import open_store, resolve_store_uri

    with open_store(store, create=False) as st:
        try:
            st.clear()
        except NotImplementedError as exc:
            raise typer.BadParameter(str(exc)) from None
        st.ensure_schema()
    data = {"store": resolve_store_uri(store), "reset": True}
    render([data], fmt=output_format(fmt, as_json), json_data=data)


# ``bulk_import``'s options
FilesArg = Annotated[
    list[Path],
    typer.Argument(
        help="JSON file(s): result documents (as `advisor import results` reads them) or "
        "ingest "
        'batches ({"observations": [...]}, as POST /v1/batches takes them); a directory means '
        "its *.json."
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Folder for the CSV files (new or empty); kept. Default: a temporary one, "
        "removed after the import. Required without --neo4j-home.",
    ),
]
Neo4jHomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--neo4j-home",
        help="Home of the stopped Neo4j to import into (its conf/neo4j.conf names the "
        "data folder). Without it, only the files are written and the neo4j-admin command "
        "printed.",
    ),
]
DatabaseOpt = Annotated[str, typer.Option(help="Database to create (Community: the default one).")]
Neo4jAdminOpt = Annotated[
    Path | None,
    typer.Option(
        "--neo4j-admin",
        help="A Neo4j installation's bin/neo4j-admin. Default: the Maven-assembled "
        "classpath (deploy/neo4j-local/setup.sh) run with java.",
    ),
]
Neo4jLibOpt = Annotated[
    Path | None,
    typer.Option(
        "--neo4j-lib",
        help="That classpath folder (default: $NEO4J_LOCAL_HOME/lib or "
        "~/.cache/stack-advisor/neo4j-*/lib).",
    ),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace an existing database (its data is lost).")
]


@db_app.command("bulk-import")
def bulk_import(
    files: FilesArg,
    out: OutOpt = None,
    neo4j_home: Neo4jHomeOpt = None,
    database: DatabaseOpt = "neo4j",
    neo4j_admin: Neo4jAdminOpt = None,
    neo4j_lib: Neo4jLibOpt = None,
    overwrite: OverwriteOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """First load of a large knowledge base into a new Neo4j database, offline, with
    `neo4j-admin database import full` (measured at 1M observations: about twice the
    transactional rate and 1.6x per CPU-second; docs/scale.md). Then start Neo4j and run
    `advisor db migrate --store bolt://...`: it creates the constraints and indexes, as for any
    new store."""
    chosen = output_format(fmt, as_json)
    if out is None and neo4j_home is None:
        raise typer.BadParameter("give --neo4j-home (import) or --out (only write the CSV files)")
    from stack_advisor.cli.bulk_import import bulk_import as write_and_import
    from stack_advisor.cli.bulk_import import json_paths, neo4j_admin_command

    admin = neo4j_admin_command(neo4j_home, neo4j_admin, neo4j_lib)
    row = write_and_import(
        json_paths(files),
        out,
        admin=admin,
        neo4j_home=neo4j_home,
        database=database,
        overwrite=overwrite,
    )
    shown = {k: v for k, v in row.items() if k != "neo4j_admin_arguments"}
    render([shown], fmt=chosen, json_data=row, title="Bulk import")
    if admin is None:
        note(
            "run `neo4j-admin "
            + " ".join(row["neo4j_admin_arguments"])
            + "` with the server stopped"
        )
    note(
        "start Neo4j, then `advisor db migrate --store bolt://HOST:7687` creates the constraints "
        "and "
        "indexes (any advisor command that opens the store does it too)"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db", rich_help_panel="Knowledge base")
