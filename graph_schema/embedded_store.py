"""The embedded backend: LadybugDB (the maintained fork of Kùzu), no server needed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph_schema.cypher_store import CypherStore, Run
from graph_schema.ddl import ladybug_statements
from graph_schema.errors import InvalidInput, StoreUnavailable


class EmbeddedStore(CypherStore):
    """One database directory, one process. A lock serialises use of the single connection."""

    def __init__(self, path: str | Path) -> None:
        import ladybug

        self.path = Path(path).expanduser()
        self.uri = f"embedded:{self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = ladybug.Database(str(self.path))
            self._conn = ladybug.Connection(self._db)
        except RuntimeError as exc:
            raise StoreUnavailable(
                f"cannot open the embedded store at {self.path}: {exc} "
                "(is another process using it? an embedded store serves one process at a time)"
            ) from None
        self._lock = threading.RLock()

    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            result = self._conn.execute(query, params)
        except RuntimeError as exc:
            text = str(exc)
            if "Conversion exception" in text or "Binder exception" in text:
                raise InvalidInput(f"the embedded store rejected a value: {text}") from None
            raise
        if isinstance(result, list):  # several statements
            result = result[-1]
        names = result.get_column_names()
        rows = []
        while result.has_next():
            rows.append(dict(zip(names, result.get_next())))
        return rows

    def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            return self._execute(query, params)

    def _write(self, work: Callable[[Run], Any]) -> Any:
        with self._lock:
            self._conn.execute("BEGIN TRANSACTION")
            try:
                out = work(self._execute)
            except BaseException:
                try:
                    self._conn.execute("ROLLBACK")
                except RuntimeError:
                    pass  # the engine already rolled back the failed transaction
                raise
            self._conn.execute("COMMIT")
            return out

    def _apply_ddl(self) -> None:
        with self._lock:
            for statement in ladybug_statements():
                self._conn.execute(statement)

    def close(self) -> None:
        with self._lock:
            conn, db = getattr(self, "_conn", None), getattr(self, "_db", None)
            if conn is not None:
                conn.close()
                self._conn = None
            if db is not None:
                db.close()
                self._db = None
