"""The steps of ``advisor db bulk-import``: find neo4j-admin, list the JSON files, write the CSV
files and run the import (leaving nothing half-written behind), and report."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stack_advisor.store.bulk_import import BulkFiles


def neo4j_admin_command(
    neo4j_home: Path | None, neo4j_admin: Path | None, neo4j_lib: Path | None
) -> list[str] | None:
    """The neo4j-admin command to run (None: only write the files, without --neo4j-home); checked
    before minutes of CSV writing.

    Raises:
        InvalidInput: no neo4j-admin is given or assembled.
    """
    from stack_advisor.schema.errors import InvalidInput
    from stack_advisor.store.bulk_import import admin_from_lib, default_neo4j_lib

    if neo4j_home is None:
        return None
    if neo4j_admin is not None:
        # a path (not a bare command on PATH) made absolute: neo4j-admin runs in the files' folder
        return [str(neo4j_admin.resolve()) if len(neo4j_admin.parts) > 1 else str(neo4j_admin)]
    lib = neo4j_lib or default_neo4j_lib()
    if lib is None:
        raise InvalidInput(
            "no neo4j-admin: pass --neo4j-admin PATH or --neo4j-lib DIR (or run "
            "deploy/neo4j-local/setup.sh to assemble the classpath)"
        )
    return admin_from_lib(lib)


def json_paths(files: list[Path]) -> list[Path]:
    """The files given, a directory standing for its *.json.

    Raises:
        InvalidInput: none at all.
    """
    from stack_advisor.schema.errors import InvalidInput

    paths = [
        p for given in files for p in (sorted(given.glob("*.json")) if given.is_dir() else [given])
    ]
    if not paths:
        raise InvalidInput(f"no JSON files in {', '.join(map(str, files))}")
    return paths


def bulk_import(
    paths: list[Path],
    out: Path | None,
    *,
    admin: list[str] | None,
    neo4j_home: Path | None,
    database: str,
    overwrite: bool,
) -> dict[str, Any]:
    """Write the CSV files to ``out`` (None: a temporary folder, removed afterwards) and, with
    ``admin``, import them into the stopped Neo4j at ``neo4j_home``; the report's row. A failed
    run leaves no file of its own behind."""
    from stack_advisor.store.bulk_import import BulkFiles

    folder = out if out is not None else Path(tempfile.mkdtemp(prefix="advisor-bulk-"))
    created = out is None or not out.exists()
    # refuses a folder that holds anything (before the cleanup below can touch it): only our
    # files are ever removed
    writer = BulkFiles(folder)
    try:
        row = _write_and_import(
            paths,
            writer,
            folder,
            admin=admin,
            neo4j_home=neo4j_home,
            database=database,
            overwrite=overwrite,
            kept=out is not None,
        )
    except BaseException:  # nothing half-written left behind: the files of a failed run go
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        else:  # an empty folder the caller made: empty again
            for child in folder.iterdir():
                child.unlink()
        raise
    if out is None:
        shutil.rmtree(folder, ignore_errors=True)
    return row


def _write_and_import(
    paths: list[Path],
    writer: BulkFiles,
    folder: Path,
    *,
    admin: list[str] | None,
    neo4j_home: Path | None,
    database: str,
    overwrite: bool,
    kept: bool,
) -> dict[str, Any]:
    from stack_advisor.collectors.importers.results import load_batch_file
    from stack_advisor.schema.errors import InvalidInput
    from stack_advisor.store.bulk_import import import_arguments, run_import

    for path in paths:
        writer.add(load_batch_file(path))
    plan = writer.finish()
    if not plan.nodes:
        raise InvalidInput(
            f"nothing to import: {len(paths)} file(s) without observations or failures"
        )
    row: dict[str, Any] = {
        "files": len(paths),
        **plan.result.model_dump(),
        "nodes": plan.nodes,
        "relationships": plan.relationships,
        "csv_seconds": round(plan.seconds, 1),
        "csv_folder": str(folder) if kept else None,
        "database": database,
    }
    if admin is None:
        row["neo4j_admin_arguments"] = import_arguments(plan, database, overwrite=overwrite)
        return row
    assert neo4j_home is not None  # admin is only found for a home
    report = run_import(plan, admin, neo4j_home, database=database, overwrite=overwrite)
    seconds = plan.seconds + report.seconds
    row.update(
        import_seconds=round(report.seconds, 1),
        observations_per_s=round(plan.result.observations_new / seconds),
    )
    return row
