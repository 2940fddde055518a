"""First loads of millions of observations into Neo4j, offline, with ``neo4j-admin database
import full``.

``BulkFiles`` turns ingest batches into node and relationship CSV files of exactly the graph a
transactional ingest writes (the same rows, built by the same ``BatchRows`` after the same pydantic
validation and catalogue resolution, the same labels, keys, properties and relationship types,
and the same duplicate rules: within a batch the last observation with a key wins, across
batches the first; accelerators, hosts and runs keep the last known value of each property).
``run_import`` loads them into a database that does not exist yet (the server stopped). The
constraints, indexes and the ``SchemaInfo`` node are not in the files: the store's own schema
setup creates them when the server is up, as for an empty store (``advisor db migrate``, or any
store opened with migration on), so a bulk-loaded store is indistinguishable from a
transactionally loaded one except for its data generation, which starts at 0: the imported
observations and contexts carry no generation stamp, like data written before schema v6, so the
first transactional batch after the load is generation 1 and ``Store.observations_since(0)``
returns what it wrote, not the bulk-loaded data again.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from stack_advisor.runtime.gc_pause import gc_paused
from stack_advisor.schema.errors import AdvisorError, Conflict, InvalidInput, StoreUnavailable
from stack_advisor.schema.graph import NODE_BY_LABEL, RELATIONSHIPS, PropType
from stack_advisor.schema.models import IngestBatch, IngestResult
from stack_advisor.store.base import checked_batch
from stack_advisor.store.batch_rows import MUTABLE, BatchRows
from stack_advisor.store.queries import CONTEXT_LINKS, FAILURE_LINKS, OBSERVATION_LINKS

# What neo4j-admin's CSV header calls our property types (a column without a type is a string).
_CSV_TYPE = {
    PropType.STRING: "",
    PropType.INT: ":long",
    PropType.FLOAT: ":double",
    PropType.BOOL: ":boolean",
}
# Labels written as they arrive (content-keyed, never changed by a later batch) and those merged
# in memory and written at the end (a later batch fills in what an earlier one lacked).
_STREAMED = (
    "Stack",
    "Component",
    "Placement",
    "Benchmark",
    "Submission",
    "Context",
    "Observation",
    "Failure",
)
_REL_ENDS = {r.type: (r.source, r.target) for r in RELATIONSHIPS}
# What the Neo4j launcher gives its JVMs (conf/neo4j.conf's server.jvm.additional): without the
# --add-opens the kernel falls back to slower memory and I/O paths.
NEO4J_JVM_FLAGS = (
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.util=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
)
ADMIN_MAIN = "org.neo4j.cli.AdminTool"


class _Null:
    """An absent value: written as an unquoted empty field, which neo4j-admin reads as no
    property (a quoted ``""`` is an empty string). ``csv.QUOTE_NONNUMERIC`` leaves numbers
    unquoted, and this counts as one."""

    __slots__ = ()

    def __int__(self) -> int:
        return 0

    def __str__(self) -> str:
        return ""


NULL = _Null()


class _Bool(_Null):
    """A boolean as neo4j-admin reads one (``true``; Python writes ``True``, read as false)."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text


TRUE, FALSE = _Bool("true"), _Bool("false")


@dataclass
class CsvFile:
    """One file of the import: a node label's or a relationship type's rows."""

    kind: str  # "nodes" | "relationships"
    name: str  # the label or relationship type
    path: Path
    rows: int = 0
    multiline: bool = False  # a value holds a line break (neo4j-admin must be told)


@dataclass
class BulkPlan:
    """The files written, what they hold, and what the batches held."""

    directory: Path
    files: list[CsvFile]
    result: IngestResult
    seconds: float

    @property
    def nodes(self) -> int:
        return sum(f.rows for f in self.files if f.kind == "nodes")

    @property
    def relationships(self) -> int:
        return sum(f.rows for f in self.files if f.kind == "relationships")

    def counts(self) -> dict[str, int]:
        return {f.name: f.rows for f in self.files}


class _Writer:
    def __init__(self, csv_file: CsvFile, header: list[str]) -> None:
        self.file = csv_file
        self._stream: IO[str] = csv_file.path.open("w", encoding="utf-8", newline="")
        self._buffer = io.StringIO()
        self._csv = csv.writer(self._buffer, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        self._csv.writerow(header)
        self._flush(1)

    def _flush(self, rows: int) -> None:
        text = self._buffer.getvalue()
        # a value with a line break: more lines than rows (counted over the text, not per value)
        if not self.file.multiline and (text.count("\n") != rows or "\r" in text):
            self.file.multiline = True
        self._stream.write(text)
        self._buffer.seek(0)
        self._buffer.truncate()

    def rows(self, rows: list[list[Any]]) -> None:
        if not rows:
            return
        self._csv.writerows(rows)
        self._flush(len(rows))
        self.file.rows += len(rows)

    def close(self) -> None:
        self._stream.close()


class BulkFiles:
    """Writes ingest batches as neo4j-admin CSV files under ``directory`` (created; must be
    empty). Use ``add`` per batch, then ``finish``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory).resolve()  # neo4j-admin runs in it (see run_import)
        self.directory.mkdir(parents=True, exist_ok=True)
        if any(self.directory.iterdir()):
            raise InvalidInput(
                f"{self.directory} is not empty; bulk-import CSV files need an empty folder"
            )
        self._started = time.perf_counter()
        self._writers: dict[str, _Writer] = {}
        self._columns: dict[str, list[str]] = {}
        self._booleans: dict[str, list[int]] = {}
        self._seen: dict[str, set[str]] = {label: set() for label in _STREAMED}
        self._merged: dict[str, dict[str, dict[str, Any]]] = {label: {} for label in MUTABLE}
        self._counts = {
            "observations_received": 0,
            "observations_new": 0,
            "failures_received": 0,
            "failures_new": 0,
        }

    # ---- files ---------------------------------------------------------------------------
    def _node_writer(self, label: str) -> _Writer:
        writer = self._writers.get(label)
        if writer is None:
            spec = NODE_BY_LABEL[label]
            columns = list(spec.properties)
            header = [
                f"{p}:ID({label})" if p == spec.key else f"{p}{_CSV_TYPE[t]}"
                for p, t in spec.properties.items()
            ]
            self._columns[label] = columns
            self._booleans[label] = [
                i for i, t in enumerate(spec.properties.values()) if t is PropType.BOOL
            ]
            path = self.directory / f"nodes_{label}.csv"
            writer = self._writers[label] = _Writer(CsvFile("nodes", label, path), header)
        return writer

    def _rel_writer(self, rel: str) -> _Writer:
        writer = self._writers.get(rel)
        if writer is None:
            source, target = _REL_ENDS[rel]
            path = self.directory / f"relationships_{rel}.csv"
            writer = self._writers[rel] = _Writer(
                CsvFile("relationships", rel, path), [f":START_ID({source})", f":END_ID({target})"]
            )
        return writer

    def _nodes(self, label: str, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        writer = self._node_writer(label)
        columns = self._columns[label]
        cells = [[NULL if (v := r.get(p)) is None else v for p in columns] for r in rows]
        for i in self._booleans[label]:
            for row in cells:
                if row[i] is not NULL:
                    row[i] = TRUE if row[i] else FALSE
        writer.rows(cells)

    def _links(self, label: str, rows: list[dict[str, Any]], links: tuple[Any, ...]) -> None:
        key = NODE_BY_LABEL[label].key
        for rel, _target, column in links:
            pairs = [[r[key], r[column]] for r in rows if r.get(column)]
            if pairs:
                self._rel_writer(rel).rows(pairs)

    # ---- batches -------------------------------------------------------------------------
    @gc_paused()
    def add(self, batch: IngestBatch | dict[str, Any]) -> IngestResult:
        """Write one batch's new rows (validated and resolved as ``Store.ingest`` does).

        Returns:
            What the batch held and how much of it was new to the files.
        Raises:
            InvalidInput: a malformed field; the message names it.
        """
        batch = checked_batch(batch)
        rows = BatchRows.from_batch(batch)
        for label in ("Stack", "Component", "Placement", "Benchmark", "Submission", "Context"):
            fresh = self._fresh(label, rows.nodes[label])
            self._nodes(label, fresh)
            if label == "Stack":
                self._rel_writer("HAS_COMPONENT").rows(
                    [
                        [r["stack_id"], c]
                        for r in fresh
                        for c in rows.stack_components[r["stack_id"]]
                    ]
                )
            if label == "Context":
                self._links(label, fresh, CONTEXT_LINKS)
        for label in MUTABLE:
            merged = self._merged[label]
            for key, row in rows.nodes[label].items():
                old = merged.get(key)
                if old is None:
                    merged[key] = dict(row)
                else:  # a later batch's known values replace, its unknowns never erase
                    old.update((p, v) for p, v in row.items() if v is not None)
        observations = self._fresh("Observation", rows.observations)
        self._nodes("Observation", observations)
        self._links("Observation", observations, OBSERVATION_LINKS)
        failures = self._fresh("Failure", rows.failures)
        self._nodes("Failure", failures)
        self._links("Failure", failures, FAILURE_LINKS)
        result = IngestResult(
            observations_received=len(batch.observations),
            observations_new=len(observations),
            failures_received=len(batch.failures),
            failures_new=len(failures),
        )
        for name, value in result.model_dump().items():
            self._counts[name] += value
        return result

    def _fresh(self, label: str, items: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        seen = self._seen[label]
        fresh = [row for key, row in items.items() if key not in seen]
        seen.update(items)
        return fresh

    def finish(self) -> BulkPlan:
        """Write the merged nodes, close every file; the plan for ``run_import``."""
        for label in MUTABLE:
            self._nodes(label, list(self._merged[label].values()))
        for writer in self._writers.values():
            writer.close()
        return BulkPlan(
            self.directory,
            [w.file for w in self._writers.values()],
            IngestResult(**self._counts),
            time.perf_counter() - self._started,
        )


# ---- neo4j-admin -------------------------------------------------------------------------


def import_arguments(
    plan: BulkPlan,
    database: str = "neo4j",
    *,
    overwrite: bool = False,
    threads: int | None = None,
    max_off_heap: str | None = None,
) -> list[str]:
    """The arguments after ``neo4j-admin`` that import ``plan`` into ``database``."""
    args = ["database", "import", "full"]
    for f in plan.files:
        if f.rows:
            args.append(f"--{f.kind}={f.name}={f.path}")
    multiline = [str(f.path) for f in plan.files if f.rows and f.multiline]
    if multiline:
        args += ["--multiline-fields-format=v2", f"--multiline-fields={','.join(multiline)}"]
    if overwrite:
        args.append("--overwrite-destination=true")
    if threads:
        args.append(f"--threads={threads}")
    if max_off_heap:
        args.append(f"--max-off-heap-memory={max_off_heap}")
    args += [f"--report-file={plan.directory / 'import.report'}", database]
    return args


def default_neo4j_lib() -> Path | None:
    """The Maven-assembled Neo4j classpath of this machine (``deploy/neo4j-local/setup.sh``):
    ``$NEO4J_LOCAL_HOME/lib``, else the newest complete ``~/.cache/stack-advisor/neo4j-*/lib``."""
    home = os.environ.get("NEO4J_LOCAL_HOME")
    if home:
        return Path(home) / "lib"
    libs = sorted((Path.home() / ".cache" / "stack-advisor").glob("neo4j-*/lib/.complete"))
    return libs[-1].parent if libs else None


def admin_from_lib(lib: str | Path, heap: str = "1g") -> list[str]:
    """``neo4j-admin`` from a bare Neo4j classpath (the Maven-assembled one the tests and the
    local deployment use): its entry point with the launcher's JVM flags."""
    if shutil.which("java") is None:
        raise StoreUnavailable("java is not installed (OpenJDK 17+ runs neo4j-admin)")
    if not any(Path(lib).glob("neo4j-import-tool-*.jar")):
        raise InvalidInput(f"{lib} holds no neo4j-import-tool jar: not a Neo4j lib folder")
    return ["java", f"-Xmx{heap}", *NEO4J_JVM_FLAGS, "-cp", f"{Path(lib).resolve()}/*", ADMIN_MAIN]


@dataclass
class ImportReport:
    nodes: int
    relationships: int
    properties: int
    seconds: float
    command: list[str] = field(default_factory=list)
    output_tail: str = ""


_DONE = re.compile(r"IMPORT DONE.*?(\d+) nodes\s+(\d+) relationships\s+(\d+) properties", re.DOTALL)


def run_import(
    plan: BulkPlan,
    admin: Sequence[str],
    neo4j_home: str | Path,
    *,
    database: str = "neo4j",
    overwrite: bool = False,
    threads: int | None = None,
    max_off_heap: str | None = None,
) -> ImportReport:
    """Run ``neo4j-admin database import full`` for ``plan`` against the Neo4j whose home (with
    its ``conf/neo4j.conf``) is ``neo4j_home``; the server must be stopped, the database new
    (or ``overwrite``: replaced). Checks that every node and relationship written was imported.

    Raises:
        Conflict: neo4j-admin refused: the database exists or the server holds it.
        AdvisorError: neo4j-admin failed otherwise (its message), or imported other counts
            than the files hold.
        InvalidInput: ``admin`` cannot be run.
    """
    home = Path(neo4j_home).resolve()
    env = dict(os.environ, NEO4J_HOME=str(home))
    if (home / "conf").is_dir():
        env["NEO4J_CONF"] = str(home / "conf")
    command = [
        *admin,
        *import_arguments(
            plan, database, overwrite=overwrite, threads=threads, max_off_heap=max_off_heap
        ),
    ]
    started = time.perf_counter()
    try:
        # in the files' folder: whatever the tool writes beside them (a report) goes there too
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, check=False, cwd=plan.directory
        )
    except OSError as exc:
        raise InvalidInput(f"cannot run neo4j-admin ({command[0]}): {exc}") from None
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    tail = output[-3000:]
    match = _DONE.search(output)
    if done.returncode or match is None:
        raise _import_failure(output, done.returncode, database, home)
    nodes, rels, props = (int(g) for g in match.groups())
    if (nodes, rels) != (plan.nodes, plan.relationships):
        raise AdvisorError(
            f"neo4j-admin imported {nodes} nodes and {rels} relationships, the files hold "
            f"{plan.nodes} and {plan.relationships}; do not use database {database!r}"
        )
    return ImportReport(nodes, rels, props, seconds, command, tail)


def _import_failure(output: str, returncode: int, database: str, home: Path) -> AdvisorError:
    """What a failed neo4j-admin import means: a database that exists or a server that holds it
    (the usual reasons: Conflict), else its message (the partial files are unusable)."""
    tail = output[-3000:]
    if re.search(r"already exist|in use|lock", output, re.IGNORECASE):
        return Conflict(
            f"neo4j-admin database import into {database!r} at {home} refused (exit "
            f"{returncode}); nothing was imported (stop the server; a database that "
            f"exists is only replaced with --overwrite). Its output ends:\n{tail}"
        )
    target = re.search(r"Importing the contents of these files into (.+):", output)
    where = target.group(1) if target else f"the {database!r} database folder under {home}"
    return AdvisorError(
        f"neo4j-admin database import into {database!r} at {home} failed (exit "
        f"{returncode}); the partial store files in {where} are unusable: delete them "
        f"or import again with --overwrite. Its output ends:\n{tail}"
    )
