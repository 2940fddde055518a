"""The parsed catalogue kept on disk between runs, so a command does not re-read and re-validate
the catalogue's YAML files each time (about 0.2 s of a warm ``advisor recommend``).

One pickle per loaded thing (the whole ``Catalog``, each ``load_entries`` list), in a folder the
edge sets with ``use_folder`` (the command line: ``$ADVISOR_CATALOG_CACHE``, ``0`` for off, else
``$XDG_CACHE_HOME/stack-advisor/catalogue``); library code never reads the environment, and with
no folder set nothing is cached. A file's name holds a digest of what it was derived from: the
package version, the Python version, and the name, size and modification time of every file in
the catalogue's folder (its YAML data and the modules that define and build the entries), so an
edited catalogue file or an upgraded package is a miss, never a stale answer. A file that cannot
be read back (truncated, written by another Python, not ours) is a miss too: the catalogue is
loaded from its files and the cache rewritten; a folder that cannot be written is no cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import stack_advisor

log = logging.getLogger(__name__)

CATALOGUE_CACHE_ENV = "ADVISOR_CATALOG_CACHE"
FORMAT = 1  # bump when what is pickled changes shape in a way file stamps would not show
T = TypeVar("T")

_settings: dict[str, Path | None] = {"folder": None}


def use_folder(folder: Path | None) -> None:
    """Where parsed catalogues are kept (None: nowhere). Called once by the edge."""
    _settings["folder"] = folder


def cache_folder() -> Path | None:
    """The folder ``use_folder`` set, or None."""
    return _settings["folder"]


def fingerprint(sources: Iterable[Path]) -> str:
    """A digest of the format, the package and Python versions, and each source file's name,
    size and modification time (nanoseconds)."""
    parts = [str(FORMAT), stack_advisor.__version__, sys.version]
    for path in sorted(sources):
        try:
            stat = path.stat()
        except OSError:
            parts.append(f"{path.name}:missing")
            continue
        parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def cached(name: str, sources: Iterable[Path], build: Callable[[], T]) -> T:
    """``build()``, or what an earlier ``build()`` over the same ``sources`` left in the cache
    folder. ``name`` tells the things cached apart (letters, digits, '-', '.', '_')."""
    folder = cache_folder()
    if folder is None:
        return build()
    stamp = fingerprint(sources)
    path = folder / f"{name}-{stamp}.pickle"
    hit = _read(path)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    value = build()
    _write(folder, name, path, value)
    return value


def _read(path: Path) -> Any:
    """The unpickled value at ``path``, or None where there is none usable. Only a file this
    user owns is read (the folder is the user's own cache, created private)."""
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_uid != os.getuid():
                return None
            return pickle.load(handle)
    except FileNotFoundError:
        return None
    except Exception as exc:
        log.debug("parsed catalogue %s unreadable (%s): reloading the catalogue", path, exc)
        return None


def _write(folder: Path, name: str, path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` atomically and drop this name's files of other stamps."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        for old in folder.glob(f"{name}-*.pickle"):
            if old != path and len(old.name) == len(path.name):
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError) as exc:
        log.debug("parsed catalogue not cached in %s: %s", folder, exc)
