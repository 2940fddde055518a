"""What lives as long as the app: the store and the advisor engine, created once.

If the store cannot be reached at start-up (Neo4j still starting, the network down) the app still
starts: requests get 503 with Retry-After, and the store is opened again on a later request (at most
every ``store_retry_interval_s``). Store errors during requests are the backend's to recover from
(the Neo4j driver reconnects by itself), so the service heals without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from graph_schema.errors import AdvisorError, StoreUnavailable
from graph_schema.settings import StoreSettings
from graph_schema.store import Store

if TYPE_CHECKING:
    from advisor.engine import Advisor

log = logging.getLogger("advisor.api")


def store_opener_for(settings: StoreSettings) -> Callable[[str | None], Store]:
    """Opens a store from a URI with ``settings`` (credentials, the default store's place)."""

    def opener(uri: str | None) -> Store:
        from graph_schema.registry import open_store

        return open_store(uri, settings=settings)

    return opener


_default_opener = store_opener_for(StoreSettings())


class Resources:
    def __init__(
        self,
        store_uri: str | None,
        *,
        retry_interval_s: float = 2.0,
        opener: Callable[[str | None], Store] = _default_opener,
        generation_ttl_s: float = 0.0,
    ) -> None:
        self.store_uri = store_uri
        self.retry_interval_s = retry_interval_s
        self.generation_ttl_s = generation_ttl_s
        self._opener = opener
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._advisor: Any = None
        self._last_attempt = float("-inf")
        self._last_error = "the store has not been opened yet"
        self.failure_hold_s = 0.0
        self._failed_until = float("-inf")

    def open(self) -> None:
        """Try once to open the store; on failure remember why (requests will retry)."""
        with self._lock:
            self._open_locked()

    def _open_locked(self) -> None:
        self._last_attempt = time.monotonic()
        try:
            store = self._opener(self.store_uri)
            store.ensure_schema()
        except AdvisorError as exc:
            self._last_error = exc.message
            log.warning("store %s not available: %s", self.store_uri or "(default)", exc.message)
            return
        except Exception as exc:  # noqa: BLE001 - a driver error the backend did not wrap
            self._last_error = f"{type(exc).__name__}: {exc}"
            log.warning("store %s not available: %s", self.store_uri or "(default)", exc)
            return
        self._store = store
        self._advisor = None

    def store_failed(self, message: str) -> None:
        """A request found the store unavailable: for ``failure_hold_s`` the next ones get
        their 503 at once instead of each waiting out the driver's timeouts (during an outage
        the requests would otherwise pile up in the thread pool). Readiness checks still try."""
        if self.failure_hold_s > 0:
            self._last_error = message
            self._failed_until = time.monotonic() + self.failure_hold_s

    def store_answered(self) -> None:
        self._failed_until = float("-inf")

    def store(self, *, probe: bool = False) -> Store:
        """The store, opening it if a previous attempt failed.

        Args:
            probe: a readiness check: tries the store even right after a failure.
        Raises:
            StoreUnavailable: it still cannot be opened, or failed moments ago.
        """
        if not probe and time.monotonic() < self._failed_until:
            raise StoreUnavailable(
                f"the store failed moments ago ({self._last_error}); retry later"
            )
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None and (
                time.monotonic() - self._last_attempt >= self.retry_interval_s
            ):
                self._open_locked()
            if self._store is None:
                raise StoreUnavailable(
                    f"the store is not reachable ({self._last_error}); retry later"
                )
            return self._store

    def advisor(self) -> Advisor:
        """The advisor engine over the store, built once (it keeps its own caches)."""
        store = self.store()
        if self._advisor is None:
            with self._lock:
                if self._advisor is None:
                    from advisor.engine import Advisor

                    self._advisor = Advisor(store, generation_ttl=self.generation_ttl_s)
        return self._advisor  # type: ignore[no-any-return]

    def written(self) -> None:
        """Called after a write through the API: the next answer reads the generation again."""
        advisor = self._advisor
        if advisor is not None:
            advisor.forget_generation()

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                try:
                    self._store.close()
                finally:
                    self._store = None
                    self._advisor = None
