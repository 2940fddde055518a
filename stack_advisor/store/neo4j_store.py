"""The Neo4j backend: one driver per store, managed transactions with retries, parameters only."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from stack_advisor.schema.ddl import neo4j_statements
from stack_advisor.schema.errors import Conflict, InvalidInput, StoreUnavailable
from stack_advisor.store.batch_rows import Run
from stack_advisor.store.cypher_store import CypherStore
from stack_advisor.store.uris import redact_uri, refuse_password_in_uri, scrub

CONSTRAINT_RETRIES = 5
DEADLOCK_RETRIES = 30
# Every call is bounded in time, so that an outage gives a quick 503 instead of requests piling
# up (the driver's defaults wait 30 s to connect, 60 s for a pooled connection and retry a
# transaction for 30 s).
CONNECT_TIMEOUT_S = 3.0
ACQUIRE_TIMEOUT_S = 5.0
RETRY_TIME_S = 5.0
READ_TIMEOUT_S = 30.0
# one keyset page of the flat read (50k rows: a few seconds unloaded; a loaded server, or a client
# at a fraction of a core, may take many times that)
FLAT_PAGE_TIMEOUT_S = 600.0
WRITE_TIMEOUT_S = 120.0
T = TypeVar("T")


def server_error(exc: BaseException) -> BaseException:
    """The server's error behind the driver's ResultFailedError, else ``exc`` itself.

    When a managed transaction's function fails on a server error (a deadlock among concurrent
    writers), the driver closes the transaction; where the session's connection has meanwhile
    gone back to the pool and out to another thread, closing it touches the failed result again
    and raises ResultFailedError (from the deadlock) in its place: an error that names no server
    code, which the driver never retries. Read through it, the deadlock is the transient error
    it is (CI's eight concurrent writers failed on it as "Neo4j is unavailable").
    """
    from neo4j.exceptions import Neo4jError, ResultFailedError

    if isinstance(exc, ResultFailedError) and isinstance(exc.__cause__, Neo4jError):
        return exc.__cause__
    return exc


class Neo4jStore(CypherStore):
    """A Neo4j database behind ``uri``.

    Args:
        user, password: credentials (both, or neither: a server with authentication off).
        database: the database every session names.
    """

    links_by_position = True  # saves the server ~4 µs per observation (docs/scale.md)

    def __init__(
        self,
        uri: str,
        *,
        user: str | None = None,
        password: str | None = None,
        database: str = "neo4j",
    ) -> None:
        import neo4j
        from neo4j.exceptions import AuthError, ServiceUnavailable

        refusal = refuse_password_in_uri(uri, user_var="NEO4J_USER", password_var="NEO4J_PASSWORD")
        if refusal:
            raise InvalidInput(refusal)
        self.uri = redact_uri(uri)  # what messages show; the URI itself carries no password
        self._neo4j = neo4j
        self.database = database
        self._password = password  # scrubbed from driver messages
        # a password without a user: Neo4j's default user
        auth = (user or "neo4j", password) if password else None
        self._driver = neo4j.GraphDatabase.driver(
            uri,
            auth=auth,
            notifications_min_severity="OFF",
            connection_timeout=CONNECT_TIMEOUT_S,
            connection_acquisition_timeout=ACQUIRE_TIMEOUT_S,
            max_transaction_retry_time=RETRY_TIME_S,
        )
        # transactions the driver ran again after a transient error (deadlocks among them); counted
        # for the concurrent-writer tests and benches
        self.transient_retries = 0
        try:
            self._driver.verify_connectivity()
        except (ServiceUnavailable, AuthError, OSError, ValueError) as exc:
            self._driver.close()
            raise StoreUnavailable(
                f"cannot reach Neo4j at {self.uri}: {self._clean(exc)}"
            ) from None

    def _clean(self, error: object) -> str:
        """A driver's message without any URI credentials or the password itself."""
        text = scrub(str(error))
        return text.replace(self._password, "***") if self._password else text

    def _wrap(self, fn: Callable[[], T]) -> T:
        from neo4j.exceptions import (
            ClientError,
            ConstraintError,
            DriverError,
            ServiceUnavailable,
            SessionExpired,
            TransientError,
        )

        try:
            try:
                return fn()
            except DriverError as exc:
                cause = server_error(exc)
                if cause is exc:
                    raise
                raise cause from None  # the server's error, answered below as what it is
        except (ServiceUnavailable, SessionExpired, DriverError, OSError) as exc:
            # DriverError covers a pool that hands out no connection in time
            raise StoreUnavailable(
                f"Neo4j at {self.uri} is unavailable: {self._clean(exc)}"
            ) from None
        except TransientError as exc:
            raise StoreUnavailable(
                f"Neo4j at {self.uri} kept failing transiently after retries: "
                f"{self._clean(exc.message)}"
            ) from None
        except ConstraintError as exc:
            raise Conflict(
                f"concurrent writers kept creating the same keys in Neo4j; retry the batch "
                f"({exc.message})"
            ) from None
        except ClientError as exc:
            if exc.code and ".Schema." in exc.code:
                raise
            if exc.code and (
                ".Transaction.TransactionTimedOut" in exc.code
                or ".Transaction.Terminated" in exc.code
            ):
                raise StoreUnavailable(
                    f"a Neo4j transaction ran past its time limit and was stopped; retry later "
                    f"({exc.message})"
                ) from None
            raise InvalidInput(f"Neo4j rejected the request: {exc.message}") from None

    def ping(self) -> None:
        # an auto-commit query is tried once (a managed transaction would retry for
        # RETRY_TIME_S with backoff, holding the probe for seconds while Neo4j is down)
        def go() -> None:
            with self._driver.session(
                database=self.database, default_access_mode=self._neo4j.READ_ACCESS
            ) as session:
                session.run("RETURN 1").consume()

        self._wrap(go)

    def _read(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        @self._neo4j.unit_of_work(timeout=READ_TIMEOUT_S)
        def tx(t: Any) -> list[dict[str, Any]]:
            return [r.data() for r in t.run(query, params)]

        def go() -> list[dict[str, Any]]:
            with self._driver.session(database=self.database) as session:
                return session.execute_read(tx)

        return self._wrap(go)

    def _read_values(self, query: str, params: dict[str, Any]) -> list[Sequence[Any]]:
        @self._neo4j.unit_of_work(timeout=FLAT_PAGE_TIMEOUT_S)
        def tx(t: Any) -> list[Sequence[Any]]:
            return [r.values() for r in t.run(query, params)]

        def go() -> list[Sequence[Any]]:
            with self._driver.session(database=self.database) as session:
                return session.execute_read(tx)

        return self._wrap(go)

    def _write(self, work: Callable[[Run], T]) -> T:
        from neo4j.exceptions import ConstraintError, ResultFailedError, TransientError

        attempts = 0

        @self._neo4j.unit_of_work(timeout=WRITE_TIMEOUT_S)
        def tx(t: Any) -> T:
            nonlocal attempts
            attempts += 1  # the driver calls this again after a transient error (a deadlock)
            return work(lambda q, p: [r.data() for r in t.run(q, p)])

        def go() -> T:
            # A concurrent writer may create the same key between our existence check and our
            # CREATE; the uniqueness constraint then refuses ours. The transaction function is
            # idempotent, so running it again sees the other writer's nodes and creates the rest.
            # Deadlocks between writers are TransientErrors: the driver retries them only within
            # max_transaction_retry_time (kept short so an outage answers quickly), so they get
            # their own, longer, jittered loop here.
            nonlocal attempts
            constraint_failures = deadlocks = 0
            while True:
                attempts = 0
                try:
                    with self._driver.session(database=self.database) as session:
                        done: T = session.execute_write(tx)
                        return done
                except (ConstraintError, TransientError, ResultFailedError) as caught:
                    exc = server_error(caught)  # the server's error under a failed result
                    if isinstance(exc, ConstraintError):
                        constraint_failures += 1
                        if constraint_failures > CONSTRAINT_RETRIES:
                            raise exc from None
                        continue
                    # Neo.TransientError.Transaction.DeadlockDetected and other lock contention;
                    # not a database that is down (that is an outage: answer it quickly)
                    if not isinstance(exc, TransientError):
                        raise
                    deadlocks += 1
                    if deadlocks > DEADLOCK_RETRIES or ".Transaction." not in (exc.code or ""):
                        raise exc from None
                    self.transient_retries += 1
                    time.sleep(random.uniform(0.05, 0.25) * min(deadlocks, 8))
                finally:
                    self.transient_retries += max(0, attempts - 1)

        return self._wrap(go)

    def _apply_ddl(self) -> None:
        def go() -> None:
            with self._driver.session(database=self.database) as session:
                for statement in neo4j_statements():
                    session.run(statement).consume()

        self._wrap(go)

    def close(self) -> None:
        self._driver.close()
