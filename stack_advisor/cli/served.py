"""Where `advisor serve` says it is serving an embedded store: a small JSON file next to the
store (``<store>.serve.json``: url, pid), so that a local command that finds the store locked can
name the exact ``advisor --api URL`` to use instead."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SUFFIX = ".serve.json"


def embedded_path(uri: str) -> Path | None:
    """The file of an embedded store URI (``embedded:PATH`` or a path), else None."""
    if uri.startswith("embedded:"):
        return Path(uri[len("embedded:") :]).expanduser()
    if "://" in uri:
        return None
    return Path(uri).expanduser()


def marker(store: Path) -> Path:
    return store.with_name(store.name + SUFFIX)


def announce(store: Path, url: str) -> Path | None:
    """Write the marker (best effort: serving works without it)."""
    path = marker(store)
    try:
        path.write_text(json.dumps({"url": url, "pid": os.getpid()}))
    except OSError:
        return None
    return path


def withdraw(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def serving_url(store: str | Path, pid: int | None = None) -> str | None:
    """The URL `advisor serve` announced for this store, if that process still runs."""
    try:
        data: dict[str, Any] = json.loads(marker(Path(store)).read_text())
        owner = int(data["pid"])
        url = str(data["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid is not None and owner != pid:
        return None
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, someone else's
        pass
    return url
