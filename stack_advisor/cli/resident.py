"""The ``advisor`` entry point and the thin client of the resident answerer.

A warm ``advisor recommend`` spends most of its time importing modules (numpy, pydantic, Typer,
our models); the answer itself is a fraction of it. As dmypy, the Gradle daemon and Bazel's server
do, the answering verbs (``recommend``, ``predict``, ``compare``: read-only, through the local
advisor) are forwarded to a per-user process that has imported everything already
(``stack_advisor.cli.resident_server``), which runs the same CLI in-process on the forwarded argv,
cwd and environment and sends back its stdout, stderr and exit status, replayed here as they were
written. This module imports only the standard library: it is what every ``advisor`` call pays.

The answerer is keyed by what changes the process that answers (``answerer_key``): the code
(package version and a fingerprint of its files' names, sizes and modification times), the Python
executable, the settings in the environment (``ADVISOR_*`` but ``ADVISOR_RESIDENT*``, the XDG
folders, ``HOME``, ``PYTHONPATH``, ``TZ``) and today's date; the store is opened per request from
the argv, cwd and environment sent, so one answerer serves every store. At most
``MAX_ANSWERERS`` run per folder (the least recently used is stopped for a new one). The first
forwardable call with no answerer for its key starts one, detached, and answers itself
in-process; the answerer waits for that call to end before it warms up, so the first answer is
not slowed. Anything unexpected (no socket, refused, another key, a timeout, a verb or argument
it does not take, any error here) falls back to the in-process CLI, silently.
``ADVISOR_RESIDENT=0`` turns all of it off.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import socket

import stack_advisor
from stack_advisor.cli.resident_files import answerer_sockets as answerer_sockets
from stack_advisor.cli.resident_files import cache_folder as cache_folder
from stack_advisor.cli.resident_files import is_locked as is_locked
from stack_advisor.cli.resident_files import paths as paths
from stack_advisor.cli.resident_files import prune
from stack_advisor.cli.resident_files import resident_folder as resident_folder
from stack_advisor.cli.resident_files import running as running

ENABLE_ENV = "ADVISOR_RESIDENT"
IDLE_ENV = "ADVISOR_RESIDENT_IDLE_S"
TIMEOUT_ENV = "ADVISOR_RESIDENT_TIMEOUT_S"
DEFAULT_IDLE_S = 600.0
DEFAULT_TIMEOUT_S = 120.0  # one request's limit in the answerer; the client waits a little more
CONNECT_TIMEOUT_S = 0.5
HANG_UP_WAIT_S = 2.0  # how long an interrupted client waits for the answerer to let go
MAX_REQUEST_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 256 << 20
SOCKET_PATH_MAX = 100  # AF_UNIX paths hold 107 bytes on Linux, 103 on macOS
MAX_ANSWERERS = 3  # live answerers per folder (each holds ~150 MB): the least recently used stops

# the verbs forwarded: they only read, through the local advisor (``cli.stores.answering_store``)
FORWARDED = frozenset({"recommend", "predict", "compare"})
# arguments the answerer does not take: a live cluster (kubeconfig clients keep state), a remote
# API (answered by the API), and subcommands that run or write; and any argument naming what only
# this process can read (``client_bound``: its stdin, a descriptor, a pipe or device)
REFUSED_TOKENS = frozenset({"--cluster", "--api", "sweep", "--install-completion"})
CLIENT_PATHS = ("/dev/", "/proc/")
REMOTE = ("http://", "https://")
# environment that changes an answer beyond the argv: a different value is a different answerer
# (the answerer's own settings, ``ADVISOR_RESIDENT*``, are not: they change no answer)
KEY_PREFIXES = ("ADVISOR_", "XDG_", "NEO4J_")
KEY_NAMES = ("HOME", "PYTHONPATH", "TZ", "PYTHONHASHSEED", "PYTHONUTF8")
# the package's files whose change changes the code that answers
CODE_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".html", ".css", ".js", ".toml")

# frames of a response: kind (1 byte) and length (4 bytes), then the payload
FRAME = struct.Struct(">BI")
PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
OUT, ERR, EXIT, REFUSE = 1, 2, 3, 4


def enabled(environ: dict[str, str] | os._Environ[str]) -> bool:
    """False when ``ADVISOR_RESIDENT`` is ``0`` (or ``false``/``no``/``off``)."""
    return environ.get(ENABLE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def forwarded_verb(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> str | None:
    """The verb when this invocation may go to the answerer, else None."""
    if not enabled(environ) or environ.get("ADVISOR_API") or not argv:
        return None
    if any(t in REFUSED_TOKENS or t.startswith(("--api=", "--cluster=")) for t in argv):
        return None
    if any(client_bound(t) for t in argv):
        return None
    if any(key.endswith("_COMPLETE") for key in environ):  # shell completion
        return None
    stores = [environ.get("ADVISOR_STORE") or "", *argv]
    if any(t.removeprefix("--store=").startswith(REMOTE) for t in stores):
        return None  # a served API answers it (``cli.stores.answering``): nothing to keep warm
    verb = argv[0]  # root options (--api, --version) before the verb: in-process
    return verb if verb in FORWARDED else None


def client_bound(token: str) -> bool:
    """Whether ``token`` (or the value of ``--option=VALUE``) names what only this process can
    read: ``-`` (its stdin), a path under ``/dev/`` or ``/proc/`` (``/dev/stdin``, ``<(cmd)``'s
    ``/dev/fd/63``), or an existing file that is neither a regular file nor a folder (a pipe,
    a device, a socket)."""
    values = [token]
    if token.startswith("--") and "=" in token:
        values.append(token.partition("=")[2])
    for value in values:
        if value == "-" or value.startswith(CLIENT_PATHS):
            return True
        try:
            mode = os.stat(value).st_mode
        except (OSError, ValueError):
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return True
    return False


def package_root() -> Path:
    """The ``stack_advisor`` package folder this code runs from."""
    return Path(stack_advisor.__file__).resolve().parent


def code_fingerprint(root: Path | None = None) -> str:
    """A digest of the package's files (relative names, sizes, modification times)."""
    import hashlib

    root = root or package_root()
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(CODE_SUFFIXES):
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except FileNotFoundError:  # removed while walked: the next walk sees it gone
                    continue
                rel = os.path.relpath(path, root)
                digest.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def answerer_key(environ: dict[str, str] | os._Environ[str], fingerprint: str) -> dict[str, Any]:
    """Everything that changes the process that answers (not the store: each request opens the
    one its argv, cwd and environment name)."""
    settings = {
        k: v
        for k, v in environ.items()
        if (k.startswith(KEY_PREFIXES) or k in KEY_NAMES) and not k.startswith(ENABLE_ENV)
    }
    return {
        "version": stack_advisor.__version__,
        "code": fingerprint,
        "package": str(package_root()),
        "python": sys.executable,
        "environment": dict(sorted(settings.items())),
        "today": time.strftime("%Y-%m-%d"),
    }


def key_digest(key: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def send_frame(sock: socket.socket, kind: int, payload: bytes) -> None:
    sock.sendall(FRAME.pack(kind, len(payload)) + payload)


def read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the answerer closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frames(sock: socket.socket) -> tuple[list[tuple[int, bytes]], int] | None:
    """A response's output frames and exit status; None when the answerer refused."""
    frames: list[tuple[int, bytes]] = []
    total = 0
    while True:
        kind, length = FRAME.unpack(read_exact(sock, FRAME.size))
        total += length
        if total > MAX_RESPONSE_BYTES:
            raise ConnectionError(f"response over {MAX_RESPONSE_BYTES} bytes")
        payload = read_exact(sock, length)
        if kind == EXIT:
            return frames, int(json.loads(payload)["code"])
        if kind == REFUSE:
            return None
        frames.append((kind, payload))


def stream_facts(stream: Any) -> dict[str, Any]:
    """What the answerer's stand-in for ``stream`` must report: a terminal or not, encoding,
    and the block size its buffer takes when it is not a terminal."""
    try:
        tty = bool(stream.isatty())
        blksize = os.fstat(stream.fileno()).st_blksize
    except (AttributeError, ValueError, OSError):
        tty, blksize = False, 0
    return {
        "tty": tty,
        "blksize": blksize if blksize > 1 else 8192,
        "encoding": getattr(stream, "encoding", None) or "utf-8",
        "errors": getattr(stream, "errors", None) or "strict",
    }


def terminal_sizes() -> dict[str, list[int] | None]:
    """``os.get_terminal_size`` of descriptors 0, 1 and 2 (None: not a terminal)."""
    sizes: dict[str, list[int] | None] = {}
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
            sizes[str(fd)] = [size.columns, size.lines]
        except (OSError, ValueError):
            sizes[str(fd)] = None
    return sizes


def request_body(argv: list[str], digest: str, key: dict[str, Any]) -> dict[str, Any]:
    """The request for ``argv``: its cwd, environment, streams and terminal, and the key it
    expects the answerer to hold."""
    umask = os.umask(0o022)  # read it: files the command writes get this process's modes
    os.umask(umask)
    return {
        "op": "run",
        "argv": argv,
        "cwd": os.getcwd(),
        "umask": umask,
        "environ": dict(os.environ),
        "key": key,
        "digest": digest,
        "stdout": stream_facts(sys.stdout),
        "stderr": stream_facts(sys.stderr),
        "terminal": terminal_sizes(),
    }


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of ``sock`` (None: the platform does not
    say; the 0700 folder still keeps other users out)."""
    import socket

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, PEERCRED.size)
    return int(PEERCRED.unpack(creds)[1])


def call(sock_path: Path, body: dict[str, Any], timeout: float) -> socket.socket:
    """A connected socket with ``body`` sent (its response to be read).

    Raises:
        PermissionError: another user's process listens there.
    """
    import socket

    data = json.dumps(body).encode()
    if len(data) > MAX_REQUEST_BYTES:
        raise ValueError(f"request of {len(data)} bytes over {MAX_REQUEST_BYTES}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(str(sock_path))
        uid = peer_uid(sock)
        if uid is not None and uid != os.getuid():
            raise PermissionError(f"{sock_path}: held by user {uid}, not {os.getuid()}")
        sock.settimeout(timeout)
        send_frame(sock, 0, data)
    except BaseException:
        sock.close()
        raise
    return sock


def replay(frames: list[tuple[int, bytes]], code: int) -> int:
    """Write the answerer's output here, in the order it was written; its exit status, or the
    CLI's for an output that cannot be written (``error: no space left on device``)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        for kind, payload in frames:
            stream: BinaryIO = sys.stdout.buffer if kind == OUT else sys.stderr.buffer
            stream.write(payload)
            stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        from stack_advisor.cli.guard import describe, report

        problem, message, status = describe(exc)
        report(problem, message, as_json=False)
        return status
    return code


def ask(sock_path: Path, op: str, timeout: float = 5.0) -> dict[str, Any]:
    """An answerer's status (``op``: ``status``, or ``stop``: it stops after replying).

    Raises:
        OSError: no answerer listens there (or it did not reply in time).
    """
    sock = call(sock_path, {"op": op}, timeout)
    with sock:
        kind, length = FRAME.unpack(read_exact(sock, FRAME.size))
        reply = json.loads(read_exact(sock, length))
    if kind != EXIT or not isinstance(reply, dict) or not isinstance(reply.get("status"), dict):
        raise ConnectionError(f"{sock_path}: not an answerer's reply")
    return reply["status"]  # type: ignore[no-any-return]


def timeout_s(environ: dict[str, str] | os._Environ[str]) -> float:
    try:
        return max(1.0, float(environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def exchange(argv: list[str]) -> tuple[list[tuple[int, bytes]], int] | None:
    """The answerer's output frames and exit status for ``argv``, or None when it did not
    answer (then the caller answers in-process). Starts an answerer for this key when none
    runs."""
    if forwarded_verb(argv, os.environ) is None or sys.stdout is None or sys.stderr is None:
        return None
    folder = resident_folder(os.environ)
    if folder is None:
        return None
    key = answerer_key(os.environ, code_fingerprint())
    digest = key_digest(key)
    where = paths(folder, digest, cache_folder(os.environ))
    if len(str(where["socket"])) > SOCKET_PATH_MAX:
        return None
    try:
        sock = call(where["socket"], request_body(argv, digest, key), timeout_s(os.environ) + 5)
    except PermissionError:
        return None
    except (OSError, ValueError):
        start_answerer(where, key, digest)
        return None
    with sock:
        try:
            return read_frames(sock)
        except KeyboardInterrupt:
            hang_up(sock)
            raise


def hang_up(sock: socket.socket) -> None:
    """Tell the answerer this client is gone (Ctrl-C) and wait, at most ``HANG_UP_WAIT_S``,
    for it to close its end: its request interrupted, the store it opened closed, as the
    in-process CLI closes it before it exits."""
    import socket

    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(HANG_UP_WAIT_S)
        while sock.recv(1 << 16):
            pass
    except OSError:
        return


def forward(argv: list[str]) -> int | None:
    """The exit status of ``argv`` answered by the resident answerer (its output written here),
    or None when it was not: then the caller answers in-process."""
    try:
        answered = exchange(argv)
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception:  # anything unexpected here (a vanished cwd or file): answer in-process
        return None
    if answered is None:
        return None
    frames, code = answered
    return replay(frames, code)


def answerer_environ(key: dict[str, Any]) -> dict[str, str]:
    """The answerer's environment: this one, its key, and this package first on its path (it
    runs from ``/``, where a checkout's package is not found by the current folder)."""
    found = os.environ.get("PYTHONPATH")
    first = str(package_root().parent)
    return {
        **os.environ,
        "ADVISOR_RESIDENT_KEY": json.dumps(key),
        "PYTHONPATH": first + os.pathsep + found if found else first,
    }


def make_room(folder: Path, limit: int = MAX_ANSWERERS) -> None:
    """Stop the least recently used answerers of ``folder`` until fewer than ``limit`` run
    (one busy answering does not reply in time and is left alone)."""
    live = []
    for sock in answerer_sockets(folder):
        try:
            live.append((sock, ask(sock, "status", timeout=CONNECT_TIMEOUT_S)))
        except (OSError, ValueError):
            continue
    live.sort(key=lambda found: -float(found[1].get("idle_s") or 0))
    for sock, _ in live[: max(0, len(live) - limit + 1)]:
        try:
            ask(sock, "stop", timeout=CONNECT_TIMEOUT_S)
        except (OSError, ValueError):
            continue


def start_answerer(where: dict[str, Path], key: dict[str, Any], digest: str) -> None:
    """Start the answerer for ``key``, detached (its own session, stdio to its log, no inherited
    descriptors), after removing what ended answerers left and stopping the least recently used
    when ``MAX_ANSWERERS`` run; it waits for this process to end before it warms up."""
    import subprocess

    if is_locked(where["lock"]):
        return
    folder = where["socket"].parent
    prune(folder, where["log"].parent)
    make_room(folder)
    where["log"].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(where["log"], "ab") as log:
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stack_advisor.cli.resident_server",
                str(folder),
                digest,
                str(os.getpid()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            close_fds=True,
            start_new_session=True,
            cwd="/",
            env=answerer_environ(key),
        )


def main() -> None:
    """``advisor``: through the resident answerer where it can, else the in-process CLI."""
    try:
        code = forward(sys.argv[1:])
    except KeyboardInterrupt:  # as the in-process CLI ends on Ctrl-C: status 130, no message
        sys.exit(130)
    except BrokenPipeError:  # the reader went away (``advisor ... | head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    from stack_advisor.cli.main import main as in_process

    in_process()


if __name__ == "__main__":
    main()
