"""Recovery of a real ``advisor serve`` after its Neo4j is killed with SIGKILL and started again,
under steady traffic (issue 46): what ``bench/neo4j_restart_recovery.py`` prints and
``tests/api/test_neo4j_restart_recovery.py`` asserts.

A client with a read token sends ``rate`` reads a second, round robin over routes a user calls
(the recommend page, the leaderboard, the observations list, the recommend API), each with its
own time limit (a user who gives up counts as a failure). A watcher asks the database
``RETURN 1`` on a fresh connection every 0.1 s from the kill on: the first answer is the moment
the database is back. Figures: the seconds from that moment to the first 200, and the share of
200s among the reads sent after that first 200.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.neo4j_store import Neo4jStore
from stack_advisor.store.starter import load_snapshot
from tests.support.neo4j_server import LocalNeo4j

FIRST_200_WAIT_S = 120.0  # how long the traffic waits for a first 200 after the database is back
SEED_BENCHMARKS = ("resnet50", "bert-99")  # ~2,300 published results of the starter KB
READS: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("GET", "/recommend?benchmark=resnet50&format=json", None),
    ("GET", "/leaderboard?benchmark=resnet50&format=json", None),
    ("GET", "/v1/observations?limit=50", None),
    ("POST", "/v1/recommendations", {"workload": {"benchmark": "bert-99"}}),
)


def seed_small_kb(store: Store) -> int:
    """The starter knowledge base's results for ``SEED_BENCHMARKS``; how many were written."""
    batch = load_snapshot()
    chosen = [o for o in batch.observations if o.benchmark.name in SEED_BENCHMARKS]
    store.ingest(IngestBatch(observations=chosen, runs=batch.runs))
    return len(chosen)


@dataclass
class Read:
    sent: float
    answered: float
    status: int  # 0: no answer within the client's time limit, or the connection failed
    code: str = ""  # a failure's error code (``store_unavailable``, ``busy``, ...)


@dataclass
class Recovery:
    killed: float = 0.0  # monotonic clock
    restarted: float = 0.0  # the new Neo4j process started
    database_back: float = 0.0  # RETURN 1 first answered on a fresh connection
    database_read: float = 0.0  # then the observations page, asked directly, answered
    reads: list[Read] = field(default_factory=list)

    def _first_200(self) -> Read | None:
        after = [r for r in self.reads if r.status == 200 and r.answered > self.database_back]
        return min(after, key=lambda r: r.answered) if after else None

    @property
    def first_200_s(self) -> float | None:
        """Seconds from the database answering to the API's first 200 after it."""
        first = self._first_200()
        return None if first is None else first.answered - self.database_back

    def after_first_200(self) -> list[Read]:
        first = self._first_200()
        return [] if first is None else [r for r in self.reads if r.sent > first.answered]

    @property
    def share_200_after(self) -> float:
        later = self.after_first_200()
        return sum(r.status == 200 for r in later) / len(later) if later else 0.0

    def timeline(self) -> list[str]:
        """Per second from the kill: the statuses of the reads sent in it."""
        out = []
        for second in range(int(self.reads[-1].sent - self.killed) + 1 if self.reads else 0):
            start = self.killed + second
            sent = [r for r in self.reads if start <= r.sent < start + 1]
            mark = " <- database answers" if start <= self.database_back < start + 1 else ""
            out.append(f"  +{second:3d} s  {_statuses(sent)}{mark}")
        out.append(
            "reads sent from 3 s before the database answered to 6 s after (sent, answered):"
        )
        back = self.database_back
        out += [
            f"  {r.sent - back:+6.2f} s -> {r.answered - back:+6.2f} s  {r.status} {r.code}"
            for r in self.reads
            if back - 3 <= r.sent <= back + 6
        ]
        return out

    def lines(self) -> list[str]:
        """The figures as text, one per line."""
        before = [r for r in self.reads if r.sent < self.killed]
        down = [r for r in self.reads if self.killed <= r.sent < self.database_back]
        later = self.after_first_200()
        first = self.first_200_s
        return [
            f"reads before the kill: {len(before)}, {_statuses(before)}",
            f"kill -9 to restart {self.restarted - self.killed:.1f} s; restart to database "
            f"answering RETURN 1: {self.database_back - self.restarted:.1f} s",
            f"reads sent while down or starting: {len(down)}, {_statuses(down)}, "
            f"latency {_latency(down)}",
            "first 200 after the database answered: "
            + ("none" if first is None else f"{first:.2f} s"),
            "(the database itself, asked directly for the observations page right after RETURN 1 "
            f"answered: {self.database_read - self.database_back:.2f} s)",
            f"reads sent after that first 200: {len(later)}, 200s {self.share_200_after:.1%}, "
            f"{_statuses(later)}, latency {_latency(later)}",
        ]


def _statuses(reads: list[Read]) -> str:
    counts: dict[str, int] = {}
    for r in reads:
        kind = f"{r.status} {r.code}".strip()
        counts[kind] = counts.get(kind, 0) + 1
    return "statuses " + (", ".join(f"{s} ×{n}" for s, n in sorted(counts.items())) or "none")


def _latency(reads: list[Read]) -> str:
    if not reads:
        return "n/a"
    seconds = sorted(r.answered - r.sent for r in reads)
    p99 = seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))]
    return f"p50 {statistics.median(seconds) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"


class Traffic:
    """``rate`` reads a second against ``url`` from a pool of client threads, until stopped."""

    def __init__(self, url: str, rate: float, timeout_s: float, token: str | None) -> None:
        self.url, self.rate, self.timeout_s = url, rate, timeout_s
        self.reads: list[Read] = []
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max(4, int(rate * timeout_s) + 2), "reader")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)
        self._thread = threading.Thread(target=self._schedule, name="traffic", daemon=True)

    def start(self) -> Traffic:
        self._thread.start()
        return self

    def _schedule(self) -> None:
        n, start = 0, time.monotonic()
        while not self._stop.is_set():
            self._pool.submit(self._read, READS[n % len(READS)])
            n += 1
            self._stop.wait(max(0.0, start + n / self.rate - time.monotonic()))

    def _read(self, read: tuple[str, str, dict[str, Any] | None]) -> None:
        method, path, body = read
        sent = time.monotonic()
        try:
            answer = self._client.request(method, self.url + path, json=body)
            status, code = answer.status_code, "" if answer.status_code == 200 else _code(answer)
        except httpx.HTTPError as exc:
            status, code = 0, type(exc).__name__
        self.reads.append(Read(sent, time.monotonic(), status, code))

    def stop(self) -> list[Read]:
        self._stop.set()
        self._thread.join()
        self._pool.shutdown(wait=True)
        self._client.close()
        return sorted(self.reads, key=lambda r: r.sent)


def warm_up(url: str, token: str | None, timeout: float = 300.0) -> None:
    """Wait until every read answers 200 (the server loads its advisor in the background)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=timeout, headers=headers) as client:
        for method, path, body in READS:
            while client.request(method, url + path, json=body).status_code != 200:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{method} {path} did not answer 200 in {timeout:.0f} s")
                time.sleep(0.5)


def _code(answer: httpx.Response) -> str:
    try:
        return str(answer.json().get("error", ""))
    except ValueError:
        return ""


def first_answer(uri: str, since: float, timeout: float = 300.0) -> float:
    """When ``RETURN 1`` first answers on a fresh connection, asked every 0.1 s."""
    import neo4j

    deadline = since + timeout
    while time.monotonic() < deadline:
        try:
            # one attempt (execute_query would retry with a backoff of seconds, late to notice)
            with (
                neo4j.GraphDatabase.driver(uri, connection_timeout=1) as driver,
                driver.session(database="neo4j") as session,
            ):
                session.run("RETURN 1").consume()
            return time.monotonic()
        except Exception:  # refused, not online yet, timed out: ask again
            time.sleep(0.1)
    raise AssertionError(f"Neo4j at {uri} did not answer RETURN 1 within {timeout:.0f} s")


def measure(
    neo4j: LocalNeo4j,
    url: str,
    *,
    token: str | None = None,
    rate: float = 10.0,
    timeout_s: float = 10.0,
    steady_s: float = 5.0,
    down_s: float = 3.0,
    after_s: float = 30.0,
    log: Callable[[str], None] = lambda _: None,
) -> Recovery:
    """Traffic for ``steady_s``, kill -9 of Neo4j, ``down_s`` later its restart, and traffic
    until ``after_s`` past the first 200 after the database answered again (or past
    ``FIRST_200_WAIT_S`` without one). ``token``: the readers' (without one they are anonymous
    clients, held to the anonymous limits as well)."""
    recovery = Recovery()
    warm_up(url, token)
    traffic = Traffic(url, rate, timeout_s, token).start()
    try:
        time.sleep(steady_s)
        log("kill -9 of Neo4j")
        recovery.killed = time.monotonic()
        neo4j.kill()
        time.sleep(down_s)
        _restart(neo4j, recovery, log)
        deadline = recovery.database_back + FIRST_200_WAIT_S
        while time.monotonic() < deadline and not _answered_since(traffic, recovery.database_back):
            time.sleep(0.1)
        time.sleep(after_s)
    finally:
        recovery.reads = traffic.stop()
    return recovery


def _answered_since(traffic: Traffic, moment: float) -> bool:
    return any(r.status == 200 and r.answered > moment for r in list(traffic.reads))


def _restart(neo4j: LocalNeo4j, recovery: Recovery, log: Callable[[str], None]) -> None:
    """Start Neo4j again, noting when ``RETURN 1`` first answers, then when the observations
    page asked directly on a fresh connection does."""
    back: list[float] = []

    def watch() -> None:
        back.append(first_answer(neo4j.uri, time.monotonic()))
        direct = Neo4jStore(neo4j.uri)
        try:
            direct.query_observations(limit=50)
            back.append(time.monotonic())
        finally:
            direct.close()

    watcher = threading.Thread(target=watch, daemon=True)
    recovery.restarted = time.monotonic()
    watcher.start()
    log("Neo4j restarting")
    neo4j.start()
    watcher.join(300)
    if not back:
        raise AssertionError(f"Neo4j at {neo4j.uri} did not answer RETURN 1 after its restart")
    recovery.database_back = back[0]
    recovery.database_read = back[1] if len(back) > 1 else float("nan")  # the read failed
    log(f"database answered {recovery.database_back - recovery.restarted:.1f} s after restart")
