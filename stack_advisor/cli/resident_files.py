"""The resident answerers' files: the folder of their sockets and locks (this user's alone),
their logs, the locks that keep one answerer per key, and the pruning of what ended answerers
left. Standard library only: the thin client (``stack_advisor.cli.resident``) imports it."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

LOG_KEEP_S = 24 * 3600.0  # a log left by an answerer that did not end cleanly: kept a day


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
    if missing. None: no such folder can be had (then nothing is forwarded), among them a folder
    another user owns (never changed here, even where this user may)."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "stack-advisor" if runtime else cache_folder(environ)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or not stat.S_ISDIR(st.st_mode):
        return None
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            folder.chmod(0o700)
            if stat.S_IMODE(folder.lstat().st_mode) & 0o077:
                return None
        except OSError:
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


def answerer_sockets(folder: Path) -> list[Path]:
    """The answerers' sockets in ``folder`` (live or stale)."""
    return sorted(folder.glob("answerer-*.sock"))


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
    """Whether an answerer holds ``lock`` (running or starting); a missing lock is not held."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: do not start another
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def take_lock(lock: Path) -> int | None:
    """The descriptor of ``lock`` held by this process, or None when another holds it. A lock
    file removed (pruned) between its opening and its locking is opened again: the lock held is
    always the one at ``lock``."""
    import fcntl

    for _ in range(5):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            on_disk = os.stat(lock)
        except FileNotFoundError:
            on_disk = None
        held = os.fstat(fd)
        if on_disk is not None and (on_disk.st_ino, on_disk.st_dev) == (held.st_ino, held.st_dev):
            return fd
        os.close(fd)
    return None


def remove_own(where: dict[str, Path]) -> None:
    """An answerer ending cleanly: its socket, log and lock removed (the lock last, held)."""
    for name in ("socket", "log", "lock"):
        with contextlib.suppress(OSError):
            where[name].unlink()


def prune(folder: Path, logs: Path) -> None:
    """Remove what ended answerers left: locks no answerer holds, with their sockets, and logs
    of answerers that are gone, older than a day (an answerer that ends cleanly removes its
    own)."""
    for lock in folder.glob("answerer-*.lock"):
        if not is_locked(lock):
            for path in (lock.with_suffix(".sock"), lock):
                with contextlib.suppress(OSError):
                    path.unlink()
    old = time.time() - LOG_KEEP_S
    for log in logs.glob("answerer-*.log") if logs.is_dir() else []:
        with contextlib.suppress(OSError):
            if log.stat().st_mtime < old and not is_locked(folder / log.with_suffix(".lock").name):
                log.unlink()
