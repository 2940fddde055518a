"""What lives as long as the app: the store and the advisor engine, created once.

If the store cannot be reached at start-up (Neo4j still starting, the network down) the app still
starts: requests get 503 with Retry-After, and the store is opened again on a later request (at most
every ``store_retry_interval_s``). Store errors during requests are the backend's to recover from
(the Neo4j driver reconnects by itself), so the service heals without a restart.

A circuit breaker keeps an outage cheap: when a request finds the store unavailable the breaker
opens for a fixed ``failure_hold_s``, during which requests get their 503 at once (instead of each
waiting out the driver's timeouts). When the hold ends, the next request starts the half-open probe:
one ping of the store (``Store.ping``: one cheap read, no retries) in a thread of its own, while
the others still get 503; if the store answers, the breaker closes, else it opens again for one
hold. The request that started the probe waits for it at most ``probe_wait_s`` (the hold, at
least half a second): a server that accepts connections but does not answer yet (Neo4j
recovering its database after a crash holds a query for many seconds) costs that request a 503,
not a hang, and the probe still closes the breaker the moment the store answers. The 503s the
breaker itself produces (``CircuitOpen``) never feed it, and its message is the cause seen last,
never a message about a message, so steady traffic cannot keep it open.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.schema.errors import AdvisorError, StoreUnavailable
from stack_advisor.store.base import Store
from stack_advisor.store.settings import StoreSettings
from stack_advisor.store.uris import redact_uri, scrub

if TYPE_CHECKING:
    from stack_advisor.advisor.engine import Advisor

log = logging.getLogger("stack_advisor.api")
PROBE_WAIT_MIN_S = 0.5  # the least a request waits for the probe it started


class CircuitOpen(StoreUnavailable):
    """A 503 the breaker (or the resources' own retry interval) produced without asking the
    store: it says nothing new about the store and must not hold the breaker open."""


def store_opener_for(settings: StoreSettings) -> Callable[[str | None], Store]:
    """Opens a store from a URI with ``settings`` (credentials, the default store's place)."""

    def opener(uri: str | None) -> Store:
        from stack_advisor.store.registry import open_store

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
        caches: CacheFolders | None = None,
        node: str | None = None,
    ) -> None:
        self.store_uri = store_uri
        self.caches = caches
        self.node = node  # the node that answers (``stack_advisor.advisor.results.this_node``)
        self.retry_interval_s = retry_interval_s
        self.generation_ttl_s = generation_ttl_s
        self._opener = opener
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._advisor: Any = None
        self._last_attempt = float("-inf")
        self._last_error = "the store has not been opened yet"
        self.failure_hold_s = 0.0
        self._open_until = float("-inf")  # the breaker: open while monotonic() < this
        self._probing = threading.Lock()  # guards starting the one half-open probe
        self._probe: Future[None] | None = None  # the probe in flight, or the last one
        self._probe_started = float("-inf")
        self.breaker_opened = 0  # how often the breaker opened (tests, /metrics)

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
            self._last_error = scrub(exc.message)
            log.warning("store %s not available: %s", redact_uri(self.store_uri), self._last_error)
            return
        except Exception as exc:
            self._last_error = scrub(f"{type(exc).__name__}: {exc}")
            log.warning("store %s not available: %s", redact_uri(self.store_uri), self._last_error)
            return
        self._store = store
        self._advisor = None

    def store_failed(self, exc: StoreUnavailable) -> None:
        """A request found the store unavailable: open the breaker for ``failure_hold_s``
        (a fixed time: failures while it is open do not extend it). The breaker's own 503s
        (``CircuitOpen``) are ignored."""
        if isinstance(exc, CircuitOpen):
            return
        now = time.monotonic()
        self._last_error = scrub(exc.message)
        if self.failure_hold_s <= 0:
            log.warning("store unavailable: %s", self._last_error)
            return
        if now >= self._open_until:
            self._open_until = now + self.failure_hold_s
            self.breaker_opened += 1
            log.warning(
                "store unavailable, answering 503 for %g s: %s",
                self.failure_hold_s,
                self._last_error,
            )

    def store_answered(self) -> None:
        """The store answered (a readiness check): close the breaker."""
        self._open_until = float("-inf")

    @property
    def breaker_open(self) -> bool:
        return time.monotonic() < self._open_until

    @property
    def breaker_state(self) -> str:
        """``closed``, ``open`` (within the hold) or ``half-open`` (the hold is over: the next
        request, or the probe in flight, decides)."""
        if self._open_until == float("-inf"):
            return "closed"
        return "open" if self.breaker_open else "half-open"

    def _refuse(self) -> CircuitOpen:
        cause = self._last_error.removesuffix("; retry later")
        return CircuitOpen(
            f"the store failed in the last {self.failure_hold_s:g} s ({cause}); retry later"
        )

    @property
    def probe_stale_s(self) -> float:
        """How long a probe may hang before the next request starts another one."""
        return 2 * self.probe_wait_s

    @property
    def probe_wait_s(self) -> float:
        """How long the request that starts a half-open probe waits for its answer."""
        return max(self.failure_hold_s, PROBE_WAIT_MIN_S)

    def _half_open_probe(self, store: Store) -> None:
        """The breaker's hold is over: one probe asks the store (the others get 503 until it
        has the answer); an answer closes the breaker, a failure opens it for another hold.
        The request that started the probe waits for it at most ``probe_wait_s``."""
        with self._probing:
            if time.monotonic() < self._open_until:
                raise self._refuse()  # another probe just failed
            if self._open_until == float("-inf"):
                return  # another probe just closed it
            in_flight = self._probe is not None and not self._probe.done()
            if in_flight and time.monotonic() - self._probe_started < self.probe_stale_s:
                raise self._refuse()  # one probe at a time
            # none, or one hung past probe_stale_s (a dead connection the driver still waits
            # on): a fresh probe, whose answer alone counts from now on
            self._probe_started = time.monotonic()
            probe = self._probe = self._start_probe(store)
        try:
            probe.result(timeout=self.probe_wait_s)
        except FutureTimeout:
            cause = self._last_error.removesuffix("; retry later")
            raise CircuitOpen(
                f"the store did not answer a probe within {self.probe_wait_s:g} s "
                f"(before: {cause}); retry later"
            ) from None

    def _start_probe(self, store: Store) -> Future[None]:
        """``store.ping()`` in a daemon thread: it closes or re-opens the breaker when the
        store answers or fails, however long that takes after the request stopped waiting."""
        done: Future[None] = Future()

        def ping() -> None:
            try:
                store.ping()  # one attempt, no retries
            except StoreUnavailable as exc:
                if self._probe is done:  # a probe given up on (hung) decides nothing
                    self._open_until = float("-inf")
                    self.store_failed(exc)  # a fresh hold from now
                done.set_exception(exc)
            except BaseException as exc:
                done.set_exception(exc)
            else:
                self.store_answered()
                done.set_result(None)

        self._probe = done  # before it runs: its answer is checked against this
        threading.Thread(target=ping, name="store-probe", daemon=True).start()
        return done

    def store(self, *, probe: bool = False) -> Store:
        """The store, opening it if a previous attempt failed.

        Args:
            probe: a readiness check: tries the store even while the breaker is open.
        Raises:
            StoreUnavailable: it still cannot be opened, or failed within the hold
                (``CircuitOpen``).
        """
        if not probe and time.monotonic() < self._open_until:
            raise self._refuse()
        store = self._store
        if store is None:
            store = self._opened()
        if not probe and self._open_until != float("-inf"):
            self._half_open_probe(store)
        return store

    def _opened(self) -> Store:
        with self._lock:
            if self._store is None and (
                time.monotonic() - self._last_attempt >= self.retry_interval_s
            ):
                self._open_locked()
            if self._store is None:
                cause = self._last_error.removesuffix("; retry later")
                raise CircuitOpen(f"the store is not reachable ({cause}); retry later")
            return self._store

    def advisor(self) -> Advisor:
        """The advisor engine over the store, built once (it keeps its own caches)."""
        store = self.store()
        if self._advisor is None:
            with self._lock:
                if self._advisor is None:
                    from stack_advisor.advisor.engine import Advisor

                    self._advisor = Advisor(
                        store,
                        generation_ttl=self.generation_ttl_s,
                        caches=self.caches,
                        node=self.node,
                    )
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
