"""The Neo4j backend: one driver per store, managed transactions with retries, parameters only."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from graph_schema.cypher_store import CypherStore, Run
from graph_schema.ddl import neo4j_statements
from graph_schema.errors import Conflict, InvalidInput, StoreUnavailable

CONSTRAINT_RETRIES = 5


class Neo4jStore(CypherStore):
    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
    ) -> None:
        import neo4j
        from neo4j.exceptions import AuthError, ServiceUnavailable

        self.uri = uri
        self._neo4j = neo4j
        self.database = database or os.environ.get("NEO4J_DATABASE", "neo4j")
        user = user or os.environ.get("NEO4J_USER")
        password = password or os.environ.get("NEO4J_PASSWORD")
        auth = (user, password) if user and password else None
        self._driver = neo4j.GraphDatabase.driver(
            uri, auth=auth, notifications_min_severity="OFF"
        )
        try:
            self._driver.verify_connectivity()
        except (ServiceUnavailable, AuthError, OSError, ValueError) as exc:
            self._driver.close()
            raise StoreUnavailable(f"cannot reach Neo4j at {uri}: {exc}") from None

    def _wrap(self, fn: Callable[[], Any]) -> Any:
        from neo4j.exceptions import (
            ClientError,
            ConstraintError,
            ServiceUnavailable,
            SessionExpired,
        )

        try:
            return fn()
        except (ServiceUnavailable, SessionExpired) as exc:
            raise StoreUnavailable(f"Neo4j at {self.uri} is unavailable: {exc}") from None
        except ConstraintError as exc:
            raise Conflict(
                f"concurrent writers kept creating the same keys in Neo4j; retry the batch "
                f"({exc.message})"
            ) from None
        except ClientError as exc:
            if exc.code and ".Schema." in exc.code:
                raise
            raise InvalidInput(f"Neo4j rejected the request: {exc.message}") from None

    def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        def tx(t: Any) -> list[dict[str, Any]]:
            return [r.data() for r in t.run(query, params)]

        def go() -> list[dict[str, Any]]:
            with self._driver.session(database=self.database) as session:
                return session.execute_read(tx)

        return self._wrap(go)

    def _write(self, work: Callable[[Run], Any]) -> Any:
        from neo4j.exceptions import ConstraintError

        def tx(t: Any) -> Any:
            return work(lambda q, p: [r.data() for r in t.run(q, p)])

        def go() -> Any:
            # A concurrent writer may create the same key between our existence check and our
            # CREATE; the uniqueness constraint then refuses ours. The transaction function is
            # idempotent, so running it again sees the other writer's nodes and creates the rest.
            for attempt in range(CONSTRAINT_RETRIES + 1):
                try:
                    with self._driver.session(database=self.database) as session:
                        return session.execute_write(tx)
                except ConstraintError:
                    if attempt == CONSTRAINT_RETRIES:
                        raise
            raise AssertionError("unreachable")

        return self._wrap(go)

    def _apply_ddl(self) -> None:
        def go() -> None:
            with self._driver.session(database=self.database) as session:
                for statement in neo4j_statements():
                    session.run(statement).consume()

        self._wrap(go)

    def close(self) -> None:
        self._driver.close()
