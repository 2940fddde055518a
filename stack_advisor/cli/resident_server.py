"""The resident answerer: a per-user process that answers ``advisor recommend | predict |
compare`` for the thin client (``stack_advisor.cli.resident``), one request at a time.

Started detached by the first forwardable call (``python -m stack_advisor.cli.resident_server
FOLDER DIGEST PARENT_PID``, its key in ``ADVISOR_RESIDENT_KEY``), it holds the key's lock for its
whole life (never two answerers for one key), waits for the call that started it to end, imports
the CLI, and listens on ``FOLDER/answerer-DIGEST.sock`` (0600, in a 0700 folder). Each request runs
the same CLI in-process (``cli.main.invocation_app`` under ``cli.guard.run_guarded``) in the
client's cwd and environment, with stand-ins for stdout and stderr that report the client's
terminal facts and record what is written, in order. The store is opened and closed per request
(the embedded store admits one writer or readers: another process may write between two
requests); the advisor kept between requests (``cli.stores.keep_advisors``) reads the store's
generation on every answer, so a write is seen by the next one.

A request whose client hung up (Ctrl-C, ``timeout``, a client that gave up waiting) is not run,
or is interrupted where it runs (``ClientGone``), so the store it opened is closed at once: the
next writer or in-process call finds it free. Only this user's processes are answered
(``SO_PEERCRED``), and a client that stops reading is given ``SEND_TIMEOUT_S``.

It exits after ``ADVISOR_RESIDENT_IDLE_S`` (600) seconds without a request, when its code's
fingerprint no longer matches its key, on ``advisor resident stop``, and after a request that ran
past ``ADVISOR_RESIDENT_TIMEOUT_S`` (120; that request is refused: the client answers it itself).
Ending cleanly, it removes its socket, lock and log.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from stack_advisor.cli import resident as client
from stack_advisor.cli import resident_files as files

log = logging.getLogger("stack_advisor.resident")
CHECK_S = 2.0  # how often an idle answerer checks its idle time and its code
START_WAIT_S = 60.0  # the longest it waits for the starting call to end before warming up
READ_TIMEOUT_S = 5.0  # a client has this long to send its request
SEND_TIMEOUT_S = 15.0  # and this long to take each frame of the response
WATCH_MS = 100  # how often a running request's connection is checked for a hung-up client


class RequestTimeout(BaseException):
    """A request ran past its limit (a BaseException: the CLI's guard must not report it)."""


class ClientGone(BaseException):
    """The client of the request in progress hung up (a BaseException: the CLI's guard must not
    report it; the stores it opened close as it unwinds)."""


class Window:
    """Whether the command of a request runs now: the only place ``RequestTimeout`` and
    ``ClientGone`` are raised. One signalled before it opens is raised as it opens; one after it
    closed, while the process is restored, is ignored."""

    open = False
    pending: type[BaseException] | None = None
    raised: type[BaseException] | None = None  # Python may wrap it (``__set_name__``) or drop it

    @classmethod
    @contextlib.contextmanager
    def opened(cls) -> Any:
        if cls.pending is not None:
            raise cls.pending
        cls.open = True
        try:
            yield
        finally:
            cls.open = False

    @classmethod
    def signalled(cls, exc: type[BaseException]) -> None:
        if cls.open:
            cls.raised = exc
            raise exc
        cls.pending = exc


def _expired(signum: int, frame: Any) -> None:
    Window.signalled(RequestTimeout)


def _hung_up(signum: int, frame: Any) -> None:
    Window.signalled(ClientGone)


class Terminated(BaseException):
    """SIGTERM: end now, the socket removed (a BaseException: the CLI's guard must not report
    it, nor the request runner take it for the command's exit)."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


class Recorder(io.RawIOBase):
    """The raw end of a stand-in stream: records each write as (kind, bytes), in order."""

    def __init__(self, kind: int, record: list[tuple[int, bytes]], tty: bool) -> None:
        super().__init__()
        self.kind, self.record, self.tty = kind, record, tty

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.record.append((self.kind, bytes(data)))
        return len(data)

    def isatty(self) -> bool:
        return self.tty


def stand_in(kind: int, record: list[tuple[int, bytes]], facts: dict[str, Any]) -> io.TextIOWrapper:
    """A text stream buffered as the client's would be: stderr and a terminal line by line,
    a pipe or file in blocks."""
    raw = Recorder(kind, record, bool(facts.get("tty")))
    line = kind == client.ERR or raw.tty
    buffered = io.BufferedWriter(raw, buffer_size=int(facts.get("blksize") or 8192))
    return io.TextIOWrapper(
        buffered,
        encoding=str(facts.get("encoding") or "utf-8"),
        errors=str(facts.get("errors") or "strict"),
        line_buffering=line,
    )


def terminal_sizes(sizes: dict[str, Any]) -> Any:
    """``os.get_terminal_size`` as the client's descriptors 0, 1 and 2 answer it."""

    def get_terminal_size(fd: int = 1) -> os.terminal_size:
        size = sizes.get(str(fd))
        if not size:
            raise OSError(25, "Inappropriate ioctl for device")
        return os.terminal_size((int(size[0]), int(size[1])))

    return get_terminal_size


@contextlib.contextmanager
def client_context(body: dict[str, Any], record: list[tuple[int, bytes]]) -> Any:
    """The process as the client's: environment, cwd, umask, streams, terminal; restored
    after."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_umask = os.umask(int(body.get("umask", 0o022)) & 0o777)
    saved = (sys.stdout, sys.stderr, sys.stdin, os.get_terminal_size)
    out = stand_in(client.OUT, record, body.get("stdout") or {})
    err = stand_in(client.ERR, record, body.get("stderr") or {})
    caught = warnings.catch_warnings()  # "once" and "default" warnings print again
    caught.__enter__()
    getattr(warnings, "onceregistry", {}).clear()
    try:
        os.environ.clear()
        os.environ.update(body["environ"])
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as cli.main sets it
        os.chdir(body["cwd"])
        sys.stdout, sys.stderr, sys.stdin = out, err, io.StringIO("")
        os.get_terminal_size = terminal_sizes(body.get("terminal") or {})
        yield
    finally:
        for stream in (out, err):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr, sys.stdin, os.get_terminal_size = saved
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        os.umask(saved_umask)
        caught.__exit__(None, None, None)


def run_request(body: dict[str, Any]) -> tuple[list[tuple[int, bytes]], int]:
    """The CLI on the request's argv: what it wrote (in order) and its exit status."""
    from stack_advisor.cli import progress, render
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import invocation_app

    argv = [str(a) for a in body["argv"]]
    record: list[tuple[int, bytes]] = []
    with client_context(body, record):
        for name in ("stdout", "stderr"):  # Rich consoles read the terminal when built
            vars(render).pop(name, None)
        progress.install()
        handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
        previous = [h.setStream(sys.stderr) for h in handlers]
        try:
            with Window.opened():
                code = run_guarded(invocation_app(argv), argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            for handler, stream in zip(handlers, previous, strict=True):
                handler.setStream(stream)
    return record, code


class Answerer:
    """The listening answerer of one key."""

    def __init__(self, folder: Path, digest: str, key: dict[str, Any]) -> None:
        self.where = files.paths(folder, digest, files.cache_folder(os.environ))
        self.digest, self.key = digest, key
        self.idle_s = _seconds(os.environ, client.IDLE_ENV, client.DEFAULT_IDLE_S)
        self.started = time.time()
        self.last = time.monotonic()
        self.served = 0
        self.stopping = ""
        self.server: socket.socket | None = None

    def listen(self) -> None:
        path = self.where["socket"]
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the lock, so no answerer listens on it
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            server.bind(str(path))
        finally:
            os.umask(old)
        server.listen(16)
        self.server = server

    def serve(self) -> str:
        """Answer until a reason to stop; returns it."""
        assert self.server is not None
        while not self.stopping:
            ready, _, _ = select.select([self.server], [], [], CHECK_S)
            if ready:
                conn, _ = self.server.accept()
                with conn:
                    self.handle(conn)
            elif time.monotonic() - self.last > self.idle_s:
                self.stopping = f"idle for {self.idle_s:g} s"
            elif client.code_fingerprint() != self.key["code"]:
                self.stopping = "its code changed"
        return self.stopping

    def close(self) -> None:
        """Remove the socket (ours: the lock is held until the process ends)."""
        if self.server is not None:
            self.server.close()
        with contextlib.suppress(FileNotFoundError):
            self.where["socket"].unlink()

    def handle(self, conn: socket.socket) -> None:
        """Read one request and answer it; whatever goes wrong drops it (logged), never the
        answerer."""
        try:
            uid = client.peer_uid(conn)
            if uid is not None and uid != os.getuid():
                log.warning("request dropped: from user %d, not %d", uid, os.getuid())
                return
            conn.settimeout(READ_TIMEOUT_S)
            _, length = client.FRAME.unpack(client.read_exact(conn, client.FRAME.size))
            if length > client.MAX_REQUEST_BYTES:
                client.send_frame(conn, client.REFUSE, b"request too large")
                return
            body = json.loads(client.read_exact(conn, length))
            conn.settimeout(SEND_TIMEOUT_S)  # each frame sent: a client that stops reading
            if not isinstance(body, dict):
                client.send_frame(conn, client.REFUSE, b"not a request")
                return
            self.respond(conn, body)
        except Exception as exc:
            log.warning("request dropped: %s: %s", type(exc).__name__, exc)

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "socket": str(self.where["socket"]),
            "digest": self.digest,
            "code": self.key.get("code"),
            "version": self.key.get("version"),
            "today": self.key.get("today"),
            "started": self.started,
            "idle_s": round(time.monotonic() - self.last, 1),
            "idle_limit_s": self.idle_s,
            "requests": self.served,
        }

    def respond(self, conn: socket.socket, body: dict[str, Any]) -> None:
        op = body.get("op")
        if op in ("status", "stop"):
            if op == "stop":
                self.stopping = "asked to stop"
            reply = {"code": 0, "status": self.status()}
            client.send_frame(conn, client.EXIT, json.dumps(reply).encode())
            return
        if body.get("key") != self.key or client.code_fingerprint() != self.key["code"]:
            client.send_frame(conn, client.REFUSE, b"another key")
            if client.code_fingerprint() != self.key["code"]:
                self.stopping = "its code changed"
            return
        self.last = time.monotonic()  # a status or stop request does not keep it alive
        if hung_up(conn):
            log.warning("request dropped: its client hung up before it ran")
            return
        limit_s = _seconds(body.get("environ") or {}, client.TIMEOUT_ENV, client.DEFAULT_TIMEOUT_S)
        try:
            record, code = timed(conn, body, limit_s)
        except RequestTimeout:
            client.send_frame(conn, client.REFUSE, b"timed out")
            self.stopping = f"a request ran past {limit_s:g} s"
            return
        except ClientGone:  # its stores closed as it unwound; what it had built is dropped
            from stack_advisor.cli.stores import keep_advisors

            keep_advisors(True)
            # a store interrupted while it opened is closed by its collection: collected now,
            # before the client is told (by the connection's close) that the store is free
            gc.collect()
            log.warning("request interrupted: its client hung up")
            return
        self.served += 1
        self.last = time.monotonic()
        for kind, payload in record:
            client.send_frame(conn, kind, payload)
        client.send_frame(conn, client.EXIT, json.dumps({"code": code}).encode())


def hung_up(conn: socket.socket, wait_ms: int = 0) -> bool:
    """Whether the client of ``conn`` closed its end (it sends nothing after its request)."""
    poller = select.poll()
    rdhup = getattr(select, "POLLRDHUP", 0)
    poller.register(conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR | rdhup)
    events = sum(e for _, e in poller.poll(wait_ms))
    if events & (select.POLLHUP | select.POLLERR | rdhup):
        return True
    if events & select.POLLIN:
        try:
            return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
    return False


def watch(conn: socket.socket, done: threading.Event, main: int) -> None:
    """Until ``done``: when the client of ``conn`` hangs up, interrupt the main thread."""
    while not done.is_set():
        if hung_up(conn, WATCH_MS):
            if not done.is_set():
                signal.pthread_kill(main, signal.SIGUSR1)
            return


def timed(
    conn: socket.socket, body: dict[str, Any], limit_s: float
) -> tuple[list[tuple[int, bytes]], int]:
    """``run_request`` ended by ``RequestTimeout`` past ``limit_s`` and by ``ClientGone`` when
    the client hangs up."""
    done = threading.Event()
    watcher = threading.Thread(
        target=watch, args=(conn, done, threading.main_thread().ident), daemon=True
    )
    Window.pending = Window.raised = None
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    watcher.start()
    try:
        answered = run_request(body)
        if Window.raised is not None:  # caught as another error, or swallowed: not an answer
            raise Window.raised
        return answered
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        done.set()
        watcher.join()
        Window.pending = None


def _seconds(environ: Any, name: str, default: float) -> float:
    try:
        return max(0.1, float(environ.get(name, default)))
    except (TypeError, ValueError, AttributeError):
        return default


def wait_for(pid: int, limit_s: float) -> None:
    """Until process ``pid`` has ended (the call that started us), at most ``limit_s``."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end and client.running(pid):
        time.sleep(0.05)


def warm_up() -> None:
    """Import what every answer needs, and keep advisors between requests."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import stack_advisor.advisor.engine
    import stack_advisor.cli.guard
    import stack_advisor.cli.main  # noqa: F401
    from stack_advisor.cli.stores import keep_advisors

    keep_advisors(True)


def own_log() -> None:
    """The answerer's own messages: to its log file (its stderr), with a time."""
    handler = logging.StreamHandler(sys.__stderr__)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.propagate = False


def main(argv: list[str]) -> int:
    own_log()
    folder, digest, parent = Path(argv[0]), argv[1], int(argv[2])
    key = json.loads(os.environ.pop("ADVISOR_RESIDENT_KEY", "{}"))
    if (
        client.key_digest(key) != digest
        or key.get("package") != str(client.package_root())
        or key.get("python") != sys.executable
    ):
        log.error("answerer %s: its key does not describe this process; not started", digest)
        return 1
    if files.take_lock(files.paths(folder, digest)["lock"]) is None:
        return 0  # another answerer holds this key
    wait_for(parent, START_WAIT_S)
    warm_up()
    answerer = Answerer(folder, digest, key)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGALRM, _expired)
    signal.signal(signal.SIGUSR1, _hung_up)
    answerer.listen()
    log.warning("answerer %s (pid %d) on %s", digest, os.getpid(), answerer.where["socket"])
    try:
        reason = answerer.serve()
    except Terminated:  # a request in progress is dropped: its client answers it itself
        reason = "terminated (SIGTERM)"
    finally:
        answerer.close()
    log.warning("answerer %s: stopped after %d requests: %s", digest, answerer.served, reason)
    if not reason.startswith("a request ran past"):  # a clean end: nothing left behind
        files.remove_own(answerer.where)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
