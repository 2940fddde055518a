"""The ``advisor`` entry point and the thin client of the resident answerer.

A warm ``advisor recommend`` spends most of its time importing modules (numpy, pydantic, Typer,
our models); the answer itself is a fraction of it. As dmypy, the Gradle daemon and Bazel's server
do, the answering verbs (``recommend``, ``predict``, ``compare``: read-only, through the local
advisor) are forwarded to a per-user process that has imported everything already
(``stack_advisor.cli.resident_server``), which runs the same CLI in-process on the forwarded argv,
cwd and environment and sends back its stdout, stderr and exit status, replayed here as they were
written. This module imports only the standard library: it is what every ``advisor`` call pays.

The answerer is keyed by everything that changes an answer (``answerer_key``): the code (package
version and a fingerprint of its files' names, sizes and modification times), the Python
executable, the store the command names, the settings in the environment (``ADVISOR_*``, the XDG
folders, ``HOME``, ``PYTHONPATH``, ``TZ``) and today's date. The first forwardable call with no
answerer for its key starts one, detached, and answers itself in-process; the answerer waits for
that call to end before it warms up, so the first answer is not slowed. Anything unexpected (no
socket, refused, another key, a timeout, a verb or argument it does not take) falls back to the
in-process CLI, silently. ``ADVISOR_RESIDENT=0`` turns all of it off.
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

ENABLE_ENV = "ADVISOR_RESIDENT"
IDLE_ENV = "ADVISOR_RESIDENT_IDLE_S"
TIMEOUT_ENV = "ADVISOR_RESIDENT_TIMEOUT_S"
DEFAULT_IDLE_S = 600.0
DEFAULT_TIMEOUT_S = 120.0  # one request's limit in the answerer; the client waits a little more
CONNECT_TIMEOUT_S = 0.5
MAX_REQUEST_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 256 << 20
SOCKET_PATH_MAX = 100  # AF_UNIX paths hold 107 bytes on Linux, 103 on macOS

# the verbs forwarded: they only read, through the local advisor (``cli.stores.answering_store``)
FORWARDED = frozenset({"recommend", "predict", "compare"})
# arguments the answerer does not take: stdin ("-"), a live cluster (kubeconfig clients keep
# state), a remote API (answered by the API), and subcommands that run or write
REFUSED_TOKENS = frozenset({"-", "--cluster", "--api", "sweep", "--install-completion"})
REMOTE = ("http://", "https://")
# environment that changes an answer beyond the argv: a different value is a different answerer
KEY_PREFIXES = ("ADVISOR_", "XDG_", "NEO4J_")
KEY_NAMES = ("HOME", "PYTHONPATH", "TZ", "PYTHONHASHSEED", "PYTHONUTF8")
# the package's files whose change changes the code that answers
CODE_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".html", ".css", ".js", ".toml")

# frames of a response: kind (1 byte) and length (4 bytes), then the payload
FRAME = struct.Struct(">BI")
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
    if any(key.endswith("_COMPLETE") for key in environ):  # shell completion
        return None
    stores = [environ.get("ADVISOR_STORE") or "", *argv]
    if any(t.removeprefix("--store=").startswith(REMOTE) for t in stores):
        return None  # a served API answers it (``cli.stores.answering``): nothing to keep warm
    verb = argv[0]  # root options (--api, --version) before the verb: in-process
    return verb if verb in FORWARDED else None


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
                st = os.stat(path)
                rel = os.path.relpath(path, root)
                digest.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def _store_argument(argv: list[str], cwd: str) -> str | None:
    """The ``--store`` value of ``argv``, a path made absolute (a relative one names another
    store from another folder)."""
    value = None
    for i, token in enumerate(argv):
        if token == "--store" and i + 1 < len(argv):
            value = argv[i + 1]
        elif token.startswith("--store="):
            value = token.partition("=")[2]
    if value is None or "://" in value:
        return value
    prefix = "embedded:" if value.startswith("embedded:") else ""
    return prefix + os.path.abspath(os.path.join(cwd, value.removeprefix("embedded:")))


def answerer_key(
    argv: list[str], environ: dict[str, str] | os._Environ[str], cwd: str, fingerprint: str
) -> dict[str, Any]:
    """Everything that changes what the answerer answers for this invocation."""
    settings = {
        k: v
        for k, v in environ.items()
        if (k.startswith(KEY_PREFIXES) or k in KEY_NAMES) and k != ENABLE_ENV
    }
    return {
        "version": stack_advisor.__version__,
        "code": fingerprint,
        "package": str(package_root()),
        "python": sys.executable,
        "store": _store_argument(argv, cwd),
        "environment": dict(sorted(settings.items())),
        "today": time.strftime("%Y-%m-%d"),
    }


def key_digest(key: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def cache_folder(environ: dict[str, str] | os._Environ[str]) -> Path:
    """``$XDG_CACHE_HOME/stack-advisor/resident`` (``~/.cache`` by default): the answerers'
    logs, and their sockets where there is no ``$XDG_RUNTIME_DIR``."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".cache"
    )
    return Path(cache) / "stack-advisor" / "resident"


def resident_folder(environ: dict[str, str] | os._Environ[str]) -> Path | None:
    """Where answerers' sockets live: ``$XDG_RUNTIME_DIR/stack-advisor``, else
    ``$XDG_CACHE_HOME/stack-advisor/resident``; a folder of this user's alone (0700), created
    if missing. None: no such folder can be had (then nothing is forwarded)."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "stack-advisor" if runtime else cache_folder(environ)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        try:
            folder.chmod(0o700)
        except OSError:
            return None
        if stat.S_IMODE(folder.stat().st_mode) & 0o077:
            return None
    return folder


def paths(folder: Path, digest: str, logs: Path | None = None) -> dict[str, Path]:
    """The socket and lock (in ``folder``) and the log file (in ``logs``, the cache folder;
    default ``folder``) of the answerer ``digest``."""
    return {
        "socket": folder / f"answerer-{digest}.sock",
        "lock": folder / f"answerer-{digest}.lock",
        "log": (logs or folder) / f"answerer-{digest}.log",
    }


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


def call(sock_path: Path, body: dict[str, Any], timeout: float) -> socket.socket:
    """A connected socket with ``body`` sent (its response to be read)."""
    import socket

    data = json.dumps(body).encode()
    if len(data) > MAX_REQUEST_BYTES:
        raise ValueError(f"request of {len(data)} bytes over {MAX_REQUEST_BYTES}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(str(sock_path))
        sock.settimeout(timeout)
        send_frame(sock, 0, data)
    except BaseException:
        sock.close()
        raise
    return sock


def replay(frames: list[tuple[int, bytes]]) -> None:
    """Write the answerer's output here, in the order it was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    for kind, payload in frames:
        stream: BinaryIO = sys.stdout.buffer if kind == OUT else sys.stderr.buffer
        stream.write(payload)
        stream.flush()


def ask(sock_path: Path, op: str, timeout: float = 5.0) -> dict[str, Any]:
    """An answerer's status (``op``: ``status``, or ``stop``: it stops after replying).

    Raises:
        OSError: no answerer listens there (or it did not reply in time).
    """
    sock = call(sock_path, {"op": op}, timeout)
    with sock:
        kind, length = FRAME.unpack(read_exact(sock, FRAME.size))
        reply = json.loads(read_exact(sock, length))
    if kind != EXIT or not isinstance(reply.get("status"), dict):
        raise ConnectionError(f"{sock_path}: not an answerer's reply")
    return reply["status"]  # type: ignore[no-any-return]


def answerer_sockets(folder: Path) -> list[Path]:
    """The answerers' sockets in ``folder`` (live or stale)."""
    return sorted(folder.glob("answerer-*.sock"))


def timeout_s(environ: dict[str, str] | os._Environ[str]) -> float:
    try:
        return max(1.0, float(environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def forward(argv: list[str]) -> int | None:
    """The exit status of ``argv`` answered by the resident answerer (its output written here),
    or None when it was not: then the caller answers in-process. Starts an answerer for this
    key when none runs."""
    if forwarded_verb(argv, os.environ) is None:
        return None
    folder = resident_folder(os.environ)
    if folder is None:
        return None
    key = answerer_key(argv, os.environ, os.getcwd(), code_fingerprint())
    digest = key_digest(key)
    where = paths(folder, digest, cache_folder(os.environ))
    if len(str(where["socket"])) > SOCKET_PATH_MAX:
        return None
    try:
        sock = call(where["socket"], request_body(argv, digest, key), timeout_s(os.environ) + 5)
    except (OSError, ValueError):
        start_answerer(where, key, digest)
        return None
    try:
        with sock:
            answered = read_frames(sock)
    except (OSError, ValueError, KeyError, struct.error):
        return None
    if answered is None:
        return None
    frames, code = answered
    replay(frames)
    return code


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def is_locked(lock: Path) -> bool:
    """Whether an answerer holds ``lock`` (running or starting)."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return True  # cannot tell: do not start another
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


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


def start_answerer(where: dict[str, Path], key: dict[str, Any], digest: str) -> None:
    """Start the answerer for ``key``, detached (its own session, stdio to its log, no inherited
    descriptors); it waits for this process to end before it warms up. Never raises."""
    import subprocess

    if is_locked(where["lock"]):
        return
    try:
        where["log"].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(where["log"], "ab") as log:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "stack_advisor.cli.resident_server",
                    str(where["socket"].parent),
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
    except OSError:
        return


def main() -> None:
    """``advisor``: through the resident answerer where it can, else the in-process CLI."""
    try:
        code = forward(sys.argv[1:])
    except KeyboardInterrupt:  # as the CLI's guard reports an interrupted command
        sys.stderr.write("error: aborted\n")
        sys.exit(1)
    except BrokenPipeError:  # the reader went away (``advisor ... | head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    from stack_advisor.cli.main import main as in_process

    in_process()


if __name__ == "__main__":
    main()
