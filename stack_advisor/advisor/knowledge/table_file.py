"""The observation table persisted per store generation, so a fresh process (every CLI call, an
API start) loads it in milliseconds instead of reading every observation from the store.

One file per store, in the folder the caller passes in
(``stack_advisor.advisor.knowledge.cache_folders``: ``$ADVISOR_TABLE_CACHE`` or
``$XDG_CACHE_HOME/stack-advisor/tables`` at the CLI and API edge; None turns it off), in a flat
columnar layout read in one call: a magic, a JSON header (the key, vocabularies, benchmarks, stacks,
and where each array lies), then the numeric columns, the categorical codes and the observation keys
(one UTF-8 blob plus offsets) as raw little-endian arrays, each 64-byte aligned. Loading reads the
file into one buffer and points numpy at it: no parsing per array, and the keys are split into
strings only when used (format 2 was an ``.npz``, whose zip reader copied and checksummed every
member and split a million keys into strings: see ``bench/table_load.py`` for both at 100k and 1M).
Never a pickle. The file records its key: the store's URI and identity (``Store.cache_identity``: it
changes when a store is emptied and recreated), the data generation, this file format and the code
that shapes the table. A file whose key differs, or that is truncated or corrupt, is ignored and
rewritten; it is written to a temporary file and renamed into place, so concurrent writers and
readers never see half a file. A table is only written when the store's generation did not move
while it was read, so a concurrent write never gets persisted under the old label.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from stack_advisor.advisor.knowledge.cache_folders import TABLE_CACHE_ENV
from stack_advisor.advisor.knowledge.columns import Column, KeyList
from stack_advisor.advisor.knowledge.heap import return_free_heap
from stack_advisor.advisor.knowledge.table import (
    CATEGORICAL,
    NUMERIC,
    ObservationTable,
    content_digest,
)
from stack_advisor.advisor.knowledge.table_rows import BenchmarkInfo
from stack_advisor.runtime import progress
from stack_advisor.schema.models import SoftwareStack, StoredObservation
from stack_advisor.store.base import Store

log = logging.getLogger(__name__)
CACHE_ENV = TABLE_CACHE_ENV
FORMAT = 3  # 2: the published system column; 3: memory-mapped columnar file
MAGIC = b"SATABLE3"
ALIGN = 64
KEEP = 16
# Observations per page of a full read: keyset pages cost the same at any depth, and a smaller
# page stays well inside the store's read timeout on a loaded machine (20k rows from Neo4j
# took over 30 s with the client at a sixth of a core)
READ_PAGE = 5000
COLUMNS = CATEGORICAL
TUPLE_COLUMNS = ("candidate", "system")  # vocabularies of tuples (JSON keeps them as lists)
# The code that decides what a table holds: a change to any of these files invalidates every
# persisted table (and, through the table's digest, every persisted model).
_SHAPING_CODE = ("advisor", "catalog", "schema", "store", "runtime")
_CODE_DIGEST: str | None = None


def code_digest() -> str:
    """A digest of the package's code and data files (names, sizes, modification times): the
    version of the code that built a persisted table or fitted a persisted model."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        root = Path(__file__).resolve().parents[2]  # the stack_advisor package
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
    return {
        "format": FORMAT,
        "store": store.uri,
        "identity": identity,
        "generation": generation,
        "code": code_digest(),
    }


def table_path(store_uri: str, folder: Path | None) -> Path | None:
    """The persisted table of the store at ``store_uri`` in ``folder`` (None: not persisted)."""
    if folder is None:
        return None
    return folder / f"table-{hashlib.sha256(store_uri.encode()).hexdigest()[:20]}.tbl"


def lineage(key: dict[str, Any]) -> dict[str, Any]:
    """A table key less its generation: tables of one lineage differ only by added
    observations (``Store.observations_since``)."""
    return {k: v for k, v in key.items() if k != "generation"}


def load_table(
    store: Store,
    generation: int,
    read_generation: Callable[[], int],
    previous: ObservationTable | None = None,
    *,
    folder: Path | None = None,
) -> ObservationTable:
    """The table of ``store`` at ``generation``: the table held in memory (``previous``) when it
    is of an earlier generation of the same lineage, with what was written since appended
    (cheaper than reading the file another replica may have written meanwhile); else the
    persisted file when its key matches; else the persisted table of an earlier generation with
    what was written since appended; else read from the store (with progress). Persisted unless
    the file already holds it.

    Args:
        read_generation: reads the store's generation again after a full read; that table is
            persisted only when it did not move (an appended one is exact by construction).
        previous: the table the caller holds, if any.
        folder: where tables are persisted (None: not persisted).
    """
    key = table_key(store, generation)
    if key is None:
        return build_table(store, generation)
    path = table_path(store.uri, folder)
    base = previous if _older_of(previous, key) else None
    theirs: Any = None
    if path is not None:
        meta = read_header(path)
        theirs = meta.get("key") if isinstance(meta, dict) else None
        if theirs == key and base is None:
            table = read_table(path, key)
            if table is not None:
                return table
        elif (
            isinstance(theirs, dict)
            and lineage(theirs) == lineage(key)
            and isinstance(theirs.get("generation"), int)
            and theirs["generation"] < generation
            and base is None
        ):
            base = read_table(path, theirs) or base
    if base is not None:
        table = append_since(store, base, generation)
        if table is not None:
            if path is not None and not _holds_as_much(theirs, key):
                write_table(path, table, key)
            return table
    table = build_table(store, generation)
    table.lineage = lineage(key)
    if path is not None and read_generation() == generation:
        write_table(path, table, key)
    return table


def _holds_as_much(theirs: Any, key: dict[str, Any]) -> bool:
    """Whether the persisted file's key is ``key`` or a later generation of its lineage (another
    process got there first: not overwritten)."""
    return (
        isinstance(theirs, dict)
        and lineage(theirs) == lineage(key)
        and isinstance(theirs.get("generation"), int)
        and theirs["generation"] >= key["generation"]
    )


def _older_of(table: ObservationTable | None, key: dict[str, Any]) -> bool:
    return (
        table is not None
        and table.lineage is not None
        and table.lineage == lineage(key)
        and table.generation < key["generation"]
    )


def append_since(store: Store, base: ObservationTable, generation: int) -> ObservationTable | None:
    """``base`` with what the store's batches after ``base.generation`` up to ``generation``
    wrote; None when the store cannot say (a backend or server without generation stamps: the
    caller reads everything)."""
    start = time.perf_counter()
    added: list[StoredObservation] = []
    try:
        for obs in store.observations_since(base.generation, until=generation):
            if obs.generation is None or not base.generation < obs.generation <= generation:
                log.warning(
                    "the store returned observation %s of generation %s for generations "
                    "%d..%d; reading every observation instead",
                    obs.key,
                    obs.generation,
                    base.generation + 1,
                    generation,
                )
                return None
            added.append(obs)
    except NotImplementedError:
        return None
    table = base.appended(added, generation)
    table.load_seconds = time.perf_counter() - start
    log.info(
        "added %d observations (generations %d..%d) to the table of %d in %.2fs",
        len(added),
        base.generation + 1,
        generation,
        base.n,
        table.load_seconds,
    )
    return table


def build_table(store: Store, generation: int) -> ObservationTable:
    """Read every observation from the store into a table, reporting progress: by the store's
    flat read when it has one (``Store.flat_observations``: an order of magnitude cheaper, see
    docs/scale.md), else page by page as models. The read's rows are freed once the table is
    built, and the heap's free pages handed back to the system (a long-lived process would
    otherwise keep the read's peak)."""
    with progress.phase(f"loading observations from {store.uri}") as update:
        flat = store.flat_observations(update)
        if flat is not None:
            table = ObservationTable.from_flat(flat, generation)
            del flat
            return_free_heap()
            return table
        return ObservationTable.from_observations(
            _counted(store.iter_observations(page=READ_PAGE), update), generation
        )


def _counted(
    rows: Iterable[StoredObservation], update: Callable[[int], None]
) -> Iterator[StoredObservation]:
    done = 0
    for row in rows:
        yield row
        done += 1
        if done % 2000 == 0:
            update(done)
    update(done)


def write_table(path: Path, table: ObservationTable, key: dict[str, Any]) -> bool:
    """Persist ``table`` under ``key`` at ``path`` (temporary file, then rename). Returns False
    (logged) when the cache cannot be written; the table is still served."""
    if not table.digest:
        table.digest = content_digest(table)
    meta = {
        "key": key,
        "n": table.n,
        "generation": table.generation,
        "digest": table.digest,
        "vocab": {name: getattr(table, name).vocab for name in COLUMNS},
        "benchmarks": [
            [b.benchmark_id, b.family, b.name, b.parameters] for b in table.benchmarks.values()
        ],
        "stacks": {sid: stack.model_dump(mode="json") for sid, stack in table.stacks.items()},
    }
    arrays: dict[str, np.ndarray] = {name: getattr(table, name) for name in NUMERIC}
    arrays.update({f"codes_{name}": getattr(table, name).codes for name in COLUMNS})
    keys = KeyList.of(table.keys)  # a loaded or appended table's keys are never split
    arrays["keys_offsets"] = keys.offsets
    arrays["keys_blob"] = keys.blob
    try:
        write_atomically(path, lambda handle: write_arrays(handle, meta, arrays))
        _prune(path.parent)
    except OSError as exc:
        log.warning("could not persist the observation table in %s: %s", path.parent, exc)
        return False
    return True


def write_atomically(path: Path, write: Callable[[Any], None]) -> None:
    """``write(handle)`` into a temporary file beside ``path``, then renamed onto it: a reader
    (another process, a replica sharing the folder) sees the old file or the whole new one.

    Raises:
        OSError: the folder or the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_arrays(handle: Any, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """The file layout: MAGIC, the header's length (8 bytes, little-endian), the JSON header
    (``meta`` and each array's dtype, length and offset), the arrays at aligned offsets."""
    layout: dict[str, list[Any]] = {}
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        layout[name] = [array.dtype.newbyteorder("<").str, int(array.size), offset]
        offset += -(-array.nbytes // ALIGN) * ALIGN
    header = json.dumps({"meta": meta, "arrays": layout}, separators=(",", ":")).encode()
    start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN
    handle.write(MAGIC + struct.pack("<Q", len(header)) + header)
    handle.write(b"\0" * (start - len(MAGIC) - 8 - len(header)))
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).astype(layout[name][0], copy=False).tobytes()
        handle.write(data + b"\0" * (-(-len(data) // ALIGN) * ALIGN - len(data)))


def read_header(path: Path) -> dict[str, Any] | None:
    """The ``meta`` of the file at ``path`` without reading its arrays; None when missing or
    not a table file of this format."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                return None
            (length,) = struct.unpack_from("<Q", head, len(MAGIC))
            header = json.loads(handle.read(length).decode())
    except (OSError, ValueError, struct.error):
        return None
    meta = header.get("meta") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else None


def read_arrays(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header's ``meta`` and the arrays of a file ``write_arrays`` wrote, as numpy views of
    one buffer the file is read into in one call. Raises ValueError when it is not such a file.

    Read, not memory-mapped: a mapped file that something truncates in place kills the process
    with SIGBUS; reading 140 MB (1M rows) from the page cache costs a few ten milliseconds."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < len(MAGIC) + 8:
            raise ValueError("too short for a table file")
        mapped = bytearray(size)
        if handle.readinto(mapped) != size:
            raise ValueError("the file changed while it was read")
    if mapped[: len(MAGIC)] != MAGIC:
        raise ValueError("not a table file of this format")
    (length,) = struct.unpack_from("<Q", mapped, len(MAGIC))
    if len(MAGIC) + 8 + length > size:
        raise ValueError("header runs past the end of the file")
    header = json.loads(bytes(mapped[len(MAGIC) + 8 : len(MAGIC) + 8 + length]).decode())
    start = -(-(len(MAGIC) + 8 + length) // ALIGN) * ALIGN
    arrays = {}
    for name, (dtype, count, offset) in header["arrays"].items():
        dt = np.dtype(dtype)
        if start + offset + dt.itemsize * count > size:
            raise ValueError(f"array {name} runs past the end of the file")
        arrays[name] = np.frombuffer(mapped, dtype=dt, count=count, offset=start + offset)
    return header["meta"], arrays


def _prune(folder: Path) -> None:
    """Keep the ``KEEP`` most recently written tables (one per store; old stores fall out)."""
    files = []
    for p in [*folder.glob("table-*.tbl"), *folder.glob("table-*.npz")]:  # .npz: format 2
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
        meta, arrays = read_arrays(path)
        if meta.get("key") != key:
            return None
        table = _from_arrays(meta, arrays)
        table.lineage = lineage(key)
    except FileNotFoundError:
        return None
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        EOFError,
        struct.error,
        UnicodeDecodeError,
        AttributeError,
    ) as exc:
        log.warning(
            "ignoring the unreadable persisted table %s (%s: %s); rebuilding it",
            path,
            type(exc).__name__,
            exc,
        )
        return None
    table.load_seconds = time.perf_counter() - start
    return table


def _from_arrays(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> ObservationTable:
    n = int(meta["n"])
    columns: dict[str, Any] = {}
    for name in COLUMNS:
        vocab = meta["vocab"][name]
        if name in TUPLE_COLUMNS:
            vocab = [tuple(v) for v in vocab]
        codes = arrays[f"codes_{name}"].astype(np.int32, copy=False)
        if len(codes) != n or (n and (int(codes.min()) < 0 or int(codes.max()) >= len(vocab))):
            raise ValueError(f"column {name}: codes do not match the vocabulary")
        columns[name] = Column(codes=codes, vocab=vocab, index={v: i for i, v in enumerate(vocab)})
    numeric: dict[str, Any] = {name: arrays[name] for name in NUMERIC}
    if any(len(a) != n for a in numeric.values()):
        raise ValueError("numeric columns do not match the row count")
    offsets, blob = arrays["keys_offsets"], arrays["keys_blob"]
    if (
        len(offsets) != n + 1
        or int(offsets[0]) != 0
        or int(offsets[-1]) != len(blob)
        or (n and int(np.diff(offsets).min()) < 0)
    ):
        raise ValueError("observation keys do not match the row count")
    keys = KeyList(blob, offsets)
    stacks = {sid: SoftwareStack.model_validate(s) for sid, s in meta["stacks"].items()}
    return ObservationTable(
        generation=int(meta["generation"]),
        n=n,
        keys=keys,
        benchmarks={b[0]: BenchmarkInfo(b[0], b[1], b[2], dict(b[3])) for b in meta["benchmarks"]},
        stacks=stacks,
        images={sid: s.image for sid, s in stacks.items() if s.image},
        digest=str(meta["digest"]),
        **numeric,
        **columns,
    )
