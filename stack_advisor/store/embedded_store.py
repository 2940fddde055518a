"""The embedded backend: LadybugDB (the maintained fork of Kùzu), no server needed."""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from stack_advisor.schema.ddl import ladybug_statements
from stack_advisor.schema.errors import AdvisorError, InvalidInput, StoreUnavailable
from stack_advisor.store import queries as Q
from stack_advisor.store.base import FlatRow
from stack_advisor.store.batch_rows import Run
from stack_advisor.store.cypher_store import CypherStore
from stack_advisor.store.flat_read import RowReader

if TYPE_CHECKING:
    import ladybug

T = TypeVar("T")

log = logging.getLogger(__name__)


def _os_reason(exc: OSError) -> str:
    reason = (
        "permission denied" if exc.errno == errno.EACCES else (exc.strerror or str(exc)).lower()
    )
    return f"{reason}: {exc.filename}" if exc.filename else reason


def open_error(path: Path, text: str) -> AdvisorError:
    """What the engine's open error means, in words: locked (by which process), not a store,
    a directory, permission denied."""
    lowered = text.lower()
    if "lock" in lowered:
        pid = re.search(r"held by PID (\d+)", text)
        who = f"process {pid.group(1)}" if pid else "another process"
        return StoreUnavailable(
            f"the embedded store {path} is in use by {who}; an embedded store serves one process "
            "at a time: wait for it, stop it, or reach its data through `advisor serve` and "
            "`advisor --api URL`",
            details={
                "reason": "locked",
                "path": str(path),
                "pid": int(pid.group(1)) if pid else None,
            },
        )
    if "not a valid" in lowered:
        return InvalidInput(
            f"{path} is not an embedded stack-advisor store (an existing file of another kind); "
            "give a new path or the path of a store",
            details={"reason": "not_a_store", "path": str(path)},
        )
    if "cannot be a directory" in lowered:
        return InvalidInput(
            f"{path} is a directory; an embedded store is one file: give a path inside it, e.g. "
            f"{path / 'kb'}",
            details={"reason": "directory", "path": str(path)},
        )
    if "permission" in lowered:
        return StoreUnavailable(
            f"cannot open the embedded store {path}: permission denied",
            details={"reason": "permission", "path": str(path)},
        )
    return StoreUnavailable(
        f"cannot open the embedded store {path}: {text}",
        details={"reason": "engine", "path": str(path)},
    )


QUERY_TIMEOUT_S = 30.0
LOCK_WAIT_S = 10.0
FLAT_TIMEOUT_S = 1800.0  # the flat read's one statement (a million observations: ~10 s unloaded)
FLAT_CHUNK = 20_000  # rows taken from the engine's result at a time


MAX_DB_BYTES = 1 << 40
"""The address space each open database reserves (1 TiB; the engine's default is 8 TiB). A
process's 128 TiB of address space then holds 128 open stores instead of 15: a server, a test
session or a bench that opens many stores failed at the 16th with "Mmap ... failed"
(``tests/store/test_embedded_many.py``). One store can still grow to 1 TiB."""


class EmbeddedStore(CypherStore):
    """One database directory, one process. A lock serialises use of the single connection.

    Every call is bounded in time: a statement is interrupted after ``query_timeout_s``, and a
    call that cannot get the connection within ``lock_wait_s`` (another request holds it) is
    refused with ``StoreUnavailable`` (503 with Retry-After through the API) instead of queueing.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        query_timeout_s: float = QUERY_TIMEOUT_S,
        lock_wait_s: float = LOCK_WAIT_S,
    ) -> None:
        self.path = Path(path).expanduser()
        self.uri = f"embedded:{self.path}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the directory of the embedded store {self.path}: "
                f"{_os_reason(exc)}; choose another --store path (or XDG_DATA_HOME)",
                details={"reason": "unwritable", "path": str(self.path)},
            ) from None
        if self.path.exists() and not os.access(self.path, os.R_OK | os.W_OK):
            raise StoreUnavailable(
                f"cannot open the embedded store {self.path}: permission denied (it needs read "
                "and write access)",
                details={"reason": "permission", "path": str(self.path)},
            )
        self._query_timeout_s = query_timeout_s
        self._lock_wait_s = lock_wait_s
        self._lock = threading.RLock()
        self._closed = False
        self._db: ladybug.Database | None = None
        self._conn: ladybug.Connection | None = None
        self._open()

    def _open(self) -> None:
        """The engine on ``self.path``: the database and its one connection, bounded by the
        query timeout."""
        import ladybug

        try:
            db = ladybug.Database(str(self.path), max_db_size=MAX_DB_BYTES)
            conn = ladybug.Connection(db)
        except RuntimeError as exc:
            self._conn = self._db = None
            raise open_error(self.path, str(exc)) from None
        conn.set_query_timeout(int(self._query_timeout_s * 1000))
        self._db, self._conn = db, conn

    @property
    def _live(self) -> ladybug.Connection:
        """The connection, where it is open (inside ``_locked``, after ``_ensure_open``)."""
        if self._conn is None:
            raise StoreUnavailable(
                f"the embedded store at {self.path} is not open",
                details={"reason": "closed", "path": str(self.path)},
            )
        return self._conn

    def _shut(self) -> None:
        conn, db = self._conn, self._db
        self._conn = self._db = None
        if conn is not None:
            conn.close()
        if db is not None:
            db.close()

    def _reopen(self) -> None:
        """Close the engine and open it again (the lock held): a full scan leaves the engine's
        buffer pool holding the pages it read (~0.9 GB at a million observations), and only
        closing the database gives them back to the system. Nothing outside this object holds
        the connection, so nothing else sees the swap. Closing and opening a store of a
        million observations takes ~0.1 s (docs/scale.md). Should the open fail, the next call
        tries again (``_ensure_open``) and reports why."""
        self._shut()
        try:
            self._open()
        except AdvisorError as exc:
            log.warning(
                "reopening the embedded store %s failed (%s); the next call tries again",
                self.path,
                exc,
            )

    def _ensure_open(self) -> None:
        """Open the engine when the reopen after a full scan failed (the lock held).

        Raises:
            StoreUnavailable: the store was closed, or cannot be opened now.
        """
        if self._conn is None:
            if self._closed:
                raise StoreUnavailable(
                    f"the embedded store at {self.path} is closed",
                    details={"reason": "closed", "path": str(self.path)},
                )
            self._open()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if not self._lock.acquire(timeout=self._lock_wait_s):
            raise StoreUnavailable(
                f"the embedded store at {self.path} stayed busy with another request for "
                f"{self._lock_wait_s:g} s; retry later"
            )
        try:
            self._ensure_open()
            yield
        finally:
            self._lock.release()

    def _result(self, query: str, params: dict[str, Any]) -> Any:
        """The engine's result of ``query``, its errors in our terms."""
        try:
            result = self._live.execute(query, params)
        except RuntimeError as exc:
            text = str(exc)
            if "Conversion exception" in text or "Binder exception" in text:
                raise InvalidInput(f"the embedded store rejected a value: {text}") from None
            if text.startswith("Interrupted"):
                raise StoreUnavailable(
                    f"a query on the embedded store ran longer than {self._query_timeout_s:g} s "
                    "and was stopped; retry later, or ask for less (filters, a smaller page)"
                ) from None
            raise
        return result[-1] if isinstance(result, list) else result  # a list: several statements

    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        result = self._result(query, params)
        names = result.get_column_names()
        rows = []
        while result.has_next():
            rows.append(dict(zip(names, result.get_next())))
        return rows

    def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._locked():
            return self._execute(query, params)

    def _flat_rows(self, reader: RowReader, progress: Callable[[int], None]) -> list[FlatRow]:
        """One statement streamed (keyset pages would each scan the joins again) and sorted
        here, allowed ``FLAT_TIMEOUT_S``: at a million observations it may outlast the usual
        query timeout on a loaded machine. The engine is reopened afterwards (``_reopen``),
        which also restores the usual timeout, so the pages the scan read do not stay with the
        process."""
        out: list[FlatRow] = []
        with self._locked():
            usual = self._query_timeout_s
            self._live.set_query_timeout(int(FLAT_TIMEOUT_S * 1000))
            self._query_timeout_s = FLAT_TIMEOUT_S
            try:
                result = self._result(Q.FLAT_OBSERVATIONS, {})
                while result.has_next():
                    for values in result.get_n(FLAT_CHUNK):
                        row = reader(values)
                        if row is not None:
                            out.append(row)
                    progress(len(out))
                result.close()
            finally:
                self._query_timeout_s = usual
                self._reopen()
        out.sort(key=attrgetter("key"))  # code point order: the engine's, for UTF-8 text
        return out

    def _write(self, work: Callable[[Run], T]) -> T:
        with self._locked():
            self._live.execute("BEGIN TRANSACTION")
            try:
                out = work(self._execute)
            except BaseException:
                try:
                    self._live.execute("ROLLBACK")
                except RuntimeError:
                    pass  # the engine already rolled back the failed transaction
                raise
            self._live.execute("COMMIT")
            return out

    def _apply_ddl(self) -> None:
        with self._lock:
            self._ensure_open()
            for statement in ladybug_statements():
                self._live.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._shut()
