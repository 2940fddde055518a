"""Heavy answers away from the event loop: a small pool of worker processes for predictions, and
admission control in front of it for anonymous clients.

Why processes: answer work is CPU-bound Python. In a worker thread it holds the server's
interpreter lock, and the event loop (``/healthz``, refusals, every request's I/O) and the token
holders' short answers wait for it (under ``bench/flood.py`` a /healthz p99 of ~110 ms on two
cores). A worker process has its own lock and runs at a lower CPU priority
(``ADVISOR_ANSWER_WORKER_NICE``), so the server's own work comes first.

The workers answer from the advisor's current ``Knowledge`` snapshot, which the server pickles to
a private file once per store generation (the embedded store serves one process, so a worker
cannot open the store itself), in a temp folder named after the server's pid. The workers end
with the server, even one killed with SIGKILL, and remove that folder on their way out
(``answer_worker.end_with_parent``); a folder whose server is gone all the same is removed when
the next pool makes its own (``sweep_stale_snapshots``). Each request gets a slot in a shared
byte array: the server raises its flag when the client disconnects and the worker stops at its
next chunk of queries.

Admission (``Admission``): anonymous heavy answers run at most ``ADVISOR_ANSWER_WORKERS`` at once
with at most ``ADVISOR_ANSWER_QUEUE`` waiting; beyond that 503 with Retry-After at once, and 429
when one client (by address) already holds ``ADVISOR_ANSWER_CLIENT_SHARE`` of them. Requests
with a token are not admitted through it: they go to the pool directly.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import shutil
import stat
import tempfile
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.concurrency import run_in_threadpool

from stack_advisor.advisor.budget import ClientGone
from stack_advisor.api import answer_worker
from stack_advisor.schema.errors import AdvisorError

if TYPE_CHECKING:
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.advisor.snapshot import Knowledge

log = logging.getLogger("stack_advisor.api")

PREDICT_CHUNK = 100  # queries between two looks at the deadline and the client
DISCONNECT_POLL_S = 0.25
MAX_REQUESTS = 256  # requests in the pool at once (each holds a cancel flag)
PICKLE_TRIES = 3  # a snapshot's memo may change while it is pickled: try again
SNAPSHOT_PREFIX = "advisor-answers-"  # then the server's pid, "-", mkdtemp's random part


class Busy(AdvisorError):
    """Every answer slot and queue place is taken (503 with Retry-After)."""

    status_code = 503
    code = "busy"
    quiet = True  # expected under load: not logged per request


class OverShare(AdvisorError):
    """One client holds its share of the answer slots already (429 with Retry-After)."""

    status_code = 429
    code = "too_many_requests"
    quiet = True


class Admission:
    """At most ``slots`` running, at most ``queue`` waiting (first come, first served), at most
    ``share`` of both held by one client. Lives on one event loop: no locks."""

    def __init__(self, slots: int, queue: int, share: int) -> None:
        self.slots, self.queue, self.share = slots, queue, share
        self.running = 0
        self.held: Counter[str] = Counter()
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def enter(self, client: str) -> None:
        """Take a slot, waiting in the queue if need be.

        Raises:
            OverShare: ``client`` holds ``share`` running or waiting answers already.
            Busy: every slot is running and the queue is full.
        """
        if self.held[client] >= self.share:
            raise OverShare(
                f"this client has {self.held[client]} heavy answers running or waiting already, "
                f"its share (ADVISOR_ANSWER_CLIENT_SHARE={self.share}); wait for them, or send "
                "a read token",
                details={"limit": self.share, "setting": "ADVISOR_ANSWER_CLIENT_SHARE"},
            )
        if self.running < self.slots and not self._waiting:
            self.running += 1
            self.held[client] += 1
            return
        if len(self._waiting) >= self.queue:
            raise Busy(
                f"{self.running} heavy answers are running and {len(self._waiting)} waiting, the "
                f"limits (ADVISOR_ANSWER_WORKERS={self.slots}, ADVISOR_ANSWER_QUEUE={self.queue});"
                " retry later, or send a read token",
                details={"running": self.running, "waiting": len(self._waiting)},
            )
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        self.held[client] += 1
        try:
            await turn
        except asyncio.CancelledError:
            self.held[client] -= 1
            if turn in self._waiting:
                self._waiting.remove(turn)
            else:  # the slot was handed over as the wait was cancelled: pass it on
                self._release()
            raise

    def leave(self, client: str) -> None:
        self.held[client] -= 1
        if self.held[client] <= 0:
            del self.held[client]
        self._release()

    def _release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes to the next in line
                return
        self.running -= 1

    @asynccontextmanager
    async def admitted(self, client: str) -> AsyncIterator[None]:
        await self.enter(client)
        try:
            yield
        finally:
            self.leave(client)


class AnswerPool:
    """``workers`` processes (started on first use or by ``warm``) at ``nice`` priority."""

    def __init__(self, *, workers: int, nice: int) -> None:
        self.workers = workers
        self.nice = nice
        self._context = multiprocessing.get_context("spawn")  # no fork of a threaded server
        self._flags: Any = self._context.RawArray("b", MAX_REQUESTS)
        self._free = list(range(MAX_REQUESTS))
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._folder: Path | None = None
        # the files written, newest last, two kept (weakly: an old snapshot is not held alive)
        self._published: list[tuple[weakref.ref[Knowledge], str]] = []

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    self.workers,
                    mp_context=self._context,
                    initializer=answer_worker.start,
                    initargs=(self._flags, self.nice, os.getpid(), str(self._snapshots())),
                )
            return self._executor

    def _snapshots(self) -> Path:
        """The folder of this server's snapshot files, made on first use (under the lock);
        folders that servers now gone left behind are removed first."""
        if self._folder is None:
            sweep_stale_snapshots()
            self._folder = Path(tempfile.mkdtemp(prefix=f"{SNAPSHOT_PREFIX}{os.getpid()}-"))
        return self._folder

    def worker_pids(self) -> list[int]:
        """The worker processes running now (none before the first use)."""
        with self._lock:
            processes = getattr(self._executor, "_processes", None) or {}
            return [p.pid for p in processes.values() if p.pid is not None]

    def publish(self, knowledge: Knowledge) -> str:
        """The file the workers load ``knowledge`` from, written once per snapshot (0600, in a
        folder of its own); the one before is kept for a worker still loading it."""
        with self._lock:
            for held, written in self._published:
                if held() is knowledge:
                    return written
            name = f"knowledge-{knowledge.generation}-{time.monotonic_ns()}.pickle"
            path = self._snapshots() / name
            data = _pickled(knowledge)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            self._published.append((weakref.ref(knowledge), str(path)))
            while len(self._published) > 2:
                Path(self._published.pop(0)[1]).unlink(missing_ok=True)
            return str(path)

    def warm(self, advisor: Advisor) -> None:
        """Start the workers and have them load the current snapshot (from a thread)."""
        self._pool().submit(answer_worker.load, self.publish(advisor.knowledge()))

    async def predict(
        self, request: Request, advisor: Advisor, raw: bytes, *, budget_s: float, max_queries: int
    ) -> bytes:
        """The JSON answer to the prediction request ``raw``, computed by a worker within
        ``budget_s`` of work (not counted: building a new generation's snapshot, done once for
        every answer after it; the wait for admission; a worker's start and snapshot load).

        Raises:
            RequestValidationError: a malformed body (422, fields named ``body.queries.N...``).
            ClientGone: the client went away (the worker stopped).
            Busy: every cancel flag is taken, or the worker died (the pool is started afresh).
            AdvisorError: what the work raised (OverBudget, PayloadTooLarge, ...).
        """
        path = await run_in_threadpool(lambda: self.publish(advisor.knowledge()))
        if not self._free:
            raise Busy(f"{MAX_REQUESTS} answers are in the worker pool already; retry later")
        slot = self._free.pop()
        watcher = asyncio.create_task(self._watch(request, slot))
        try:
            future = self._pool().submit(
                answer_worker.predict_request, path, raw, slot, budget_s, max_queries, PREDICT_CHUNK
            )
            outcome = await asyncio.wrap_future(future)
        except BrokenProcessPool:
            self._restart()
            raise Busy(
                "the answer worker stopped; it is being started again, retry later"
            ) from None
        finally:
            watcher.cancel()
            self._flags[slot] = 0
            self._free.append(slot)
        return _unpacked(outcome)

    async def _watch(self, request: Request, slot: int) -> None:
        while not await request.is_disconnected():
            await asyncio.sleep(DISCONNECT_POLL_S)
        self._flags[slot] = 1

    def _restart(self) -> None:
        with self._lock:
            broken, self._executor = self._executor, None
        if broken is not None:
            log.error("an answer worker died; starting the pool again")
            broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            folder, self._folder = self._folder, None
            self._published.clear()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def sweep_stale_snapshots(root: Path | None = None) -> list[Path]:
    """Remove the snapshot folders in ``root`` (the temp folder) that this user's servers left
    when they ended without their clean-up (SIGKILL, a crash) and their workers could not
    remove either: those named after a pid that no longer runs. Folders of running servers,
    of other users and of other names stay. Returns the folders removed."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(f"{SNAPSHOT_PREFIX}*-*"):
        pid = folder.name.removeprefix(SNAPSHOT_PREFIX).split("-", 1)[0]
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not pid.isdigit() or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
            log.info("removed %s, left by server process %s that is gone", folder, pid)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _pickled(knowledge: Knowledge) -> bytes:
    for attempt in range(PICKLE_TRIES):
        try:
            return pickle.dumps(knowledge, protocol=pickle.HIGHEST_PROTOCOL)
        except RuntimeError:  # a memo changed size under another request's answer
            if attempt == PICKLE_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def _unpacked(outcome: tuple[Any, ...]) -> bytes:
    kind = outcome[0]
    if kind == "ok":
        return bytes(outcome[1])
    if kind == "invalid":
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in outcome[1]])
    if kind == "gone":
        raise ClientGone
    error_class, message, details = outcome[1:]
    raise error_class(message, details=details)
