"""The observation table persisted per store generation, so a fresh process (every CLI call, an
API start) loads it in milliseconds instead of reading every observation from the store.

One file per store (``$ADVISOR_TABLE_CACHE`` or ``$XDG_CACHE_HOME/stack-advisor/tables``,
``ADVISOR_TABLE_CACHE=0`` turns it off), an uncompressed numpy ``.npz``: the numeric columns and
the categorical codes as arrays, vocabularies, benchmarks and stacks as one JSON member, never a
pickle. The file records its key: the store's URI and identity (``Store.cache_identity``: it
changes when a store is emptied and recreated), the data generation, this file format and the
code that shapes the table. A file whose key differs, or that is truncated or corrupt, is
ignored and rewritten; it is written to a temporary file and renamed into place, so concurrent
writers and readers never see half a file. A table is only written when the store's generation
did not move while it was read, so a concurrent write never gets persisted under the old label.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from advisor.table import BenchmarkInfo, Column, ObservationTable
from graph_schema import progress
from graph_schema.models import SoftwareStack, StoredObservation
from graph_schema.store import Store

log = logging.getLogger(__name__)
CACHE_ENV = "ADVISOR_TABLE_CACHE"
FORMAT = 2  # 2: the published system column
KEEP = 16
COLUMNS = ("metric", "unit", "benchmark", "family", "bench_name", "scenario", "division", "round",
           "source", "submitter", "accelerator", "physical", "placement", "stack", "candidate", "system")
TUPLE_COLUMNS = ("candidate", "system")  # vocabularies of tuples (JSON keeps them as lists)
NUMERIC = ("value", "count", "timestamp", "higher_is_better")
# The code that decides what a table holds: a change to any of these files invalidates every
# persisted table (and, through the table's digest, every persisted model).
_SHAPING_CODE = ("advisor", "graph_schema")
_CODE_DIGEST: str | None = None


def configured_cache_dir(env: str, leaf: str) -> Path | None:
    """A cache folder: ``$<env>`` when set (``0``: caching off, None), else
    ``$XDG_CACHE_HOME/stack-advisor/<leaf>``. Shared by persisted tables and models."""
    configured = os.environ.get(env)
    if configured == "0":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stack-advisor" / leaf


def cache_dir() -> Path | None:
    """Where tables are persisted; None when ``ADVISOR_TABLE_CACHE=0``."""
    return configured_cache_dir(CACHE_ENV, "tables")


def code_digest() -> str:
    """A digest of the package's code and data files (names, sizes, modification times): the
    version of the code that built a persisted table or fitted a persisted model."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        root = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256()
        for package in _SHAPING_CODE:
            for folder, dirs, files in sorted(os.walk(root / package)):
                dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "api"))
                for name in sorted(files):
                    if name.endswith((".py", ".yaml", ".json")):
                        st = os.stat(os.path.join(folder, name))
                        digest.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _CODE_DIGEST = digest.hexdigest()[:24]
    return _CODE_DIGEST


def table_key(store: Store, generation: int) -> dict[str, Any] | None:
    """What a persisted table of ``store`` at ``generation`` must record; None: not cacheable."""
    identify = getattr(store, "cache_identity", None)
    identity = identify() if callable(identify) else None
    if identity is None:
        return None
    return {"format": FORMAT, "store": store.uri, "identity": identity, "generation": generation,
            "code": code_digest()}


def table_path(store_uri: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    return folder / f"table-{hashlib.sha256(store_uri.encode()).hexdigest()[:20]}.npz"


def load_table(store: Store, generation: int, read_generation: Callable[[], int]) -> ObservationTable:
    """The table of ``store`` at ``generation``: from its persisted file when that file's key
    matches, else read from the store (with progress) and persisted.

    Args:
        read_generation: reads the store's generation again after the table was read; the table
            is persisted only when it did not move.
    """
    key = table_key(store, generation)
    path = table_path(store.uri) if key is not None else None
    if path is not None:
        table = read_table(path, key)
        if table is not None:
            return table
    table = build_table(store, generation)
    if path is not None and key is not None and read_generation() == generation:
        write_table(path, table, key)
    return table


def build_table(store: Store, generation: int) -> ObservationTable:
    """Read every observation from the store into a table, reporting progress."""
    with progress.phase(f"loading observations from {store.uri}") as update:
        return ObservationTable.from_observations(_counted(store.iter_observations(), update), generation)


def _counted(rows: Iterable[StoredObservation], update: Callable[[int], None]) -> Iterator[StoredObservation]:
    done = 0
    for row in rows:
        yield row
        done += 1
        if done % 2000 == 0:
            update(done)
    update(done)


def content_digest(table: ObservationTable) -> str:
    """A digest of the table's content (observation keys and values): models fitted on equal
    content are interchangeable, whatever store or generation they came from."""
    digest = hashlib.sha256(f"{table.n}:".encode())
    digest.update("\n".join(sorted(table.keys)).encode())
    digest.update(table.value.tobytes())
    return digest.hexdigest()[:32]


def write_table(path: Path, table: ObservationTable, key: dict[str, Any]) -> bool:
    """Persist ``table`` under ``key`` at ``path`` (temporary file, then rename). Returns False
    (logged) when the cache cannot be written; the table is still served."""
    if not table.digest:
        table.digest = content_digest(table)
    meta = {
        "key": key, "n": table.n, "generation": table.generation, "digest": table.digest,
        "vocab": {name: getattr(table, name).vocab for name in COLUMNS},
        "benchmarks": [[b.benchmark_id, b.family, b.name, b.parameters] for b in table.benchmarks.values()],
        "stacks": {sid: stack.model_dump(mode="json") for sid, stack in table.stacks.items()},
    }
    arrays: dict[str, np.ndarray] = {name: getattr(table, name) for name in NUMERIC}
    arrays.update({f"codes_{name}": getattr(table, name).codes for name in COLUMNS})
    arrays["keys"] = np.frombuffer("\n".join(table.keys).encode(), dtype=np.uint8)
    arrays["meta"] = np.frombuffer(json.dumps(meta, separators=(",", ":")).encode(), dtype=np.uint8)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(path.parent)
    except OSError as exc:
        log.warning("could not persist the observation table in %s: %s", path.parent, exc)
        return False
    return True


def _prune(folder: Path) -> None:
    """Keep the ``KEEP`` most recently written tables (one per store; old stores fall out)."""
    files = []
    for p in folder.glob("table-*.npz"):
        try:
            files.append((p.stat().st_mtime, p))
        except FileNotFoundError:
            continue  # pruned by a concurrent writer
    for _, old in sorted(files, reverse=True)[KEEP:]:
        old.unlink(missing_ok=True)


def read_table(path: Path, key: dict[str, Any]) -> ObservationTable | None:
    """The table persisted at ``path`` if its key equals ``key``; None when missing, stale,
    truncated or corrupt (never raises: the caller rebuilds)."""
    start = time.perf_counter()
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("key") != key:
                return None
            table = _from_arrays(meta, {name: data[name] for name in data.files if name != "meta"})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile,
            UnicodeDecodeError, AttributeError) as exc:
        log.warning("ignoring the unreadable persisted table %s (%s: %s); rebuilding it",
                    path, type(exc).__name__, exc)
        return None
    table.load_seconds = time.perf_counter() - start
    return table


def _from_arrays(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> ObservationTable:
    n = int(meta["n"])
    columns: dict[str, Column] = {}
    for name in COLUMNS:
        vocab = meta["vocab"][name]
        if name in TUPLE_COLUMNS:
            vocab = [tuple(v) for v in vocab]
        codes = arrays[f"codes_{name}"].astype(np.int32, copy=False)
        if len(codes) != n or (n and (int(codes.min()) < 0 or int(codes.max()) >= len(vocab))):
            raise ValueError(f"column {name}: codes do not match the vocabulary")
        columns[name] = Column(codes=codes, vocab=vocab, index={v: i for i, v in enumerate(vocab)})
    numeric = {name: arrays[name] for name in NUMERIC}
    if any(len(a) != n for a in numeric.values()):
        raise ValueError("numeric columns do not match the row count")
    text = bytes(arrays["keys"]).decode()
    keys = text.split("\n") if n else []
    if len(keys) != n:
        raise ValueError("observation keys do not match the row count")
    stacks = {sid: SoftwareStack.model_validate(s) for sid, s in meta["stacks"].items()}
    return ObservationTable(
        generation=int(meta["generation"]), n=n, keys=keys,
        benchmarks={b[0]: BenchmarkInfo(b[0], b[1], b[2], dict(b[3])) for b in meta["benchmarks"]},
        stacks=stacks, images={sid: s.image for sid, s in stacks.items() if s.image},
        digest=str(meta["digest"]), **numeric, **columns,
    )
