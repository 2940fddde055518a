"""The starter knowledge base shipped also as a ready embedded store, so a fresh install's first
answer copies a database instead of ingesting 18,000 observations (most of a first answer).

``starter-kb-v<N>.kb.gz`` is the embedded store that seeding an empty store from the shipped
snapshot (``stack_advisor.store.starter``) leaves, gzip'd; ``starter-kb-v<N>.kb.json`` is its stamp:
the snapshot's SHA-256, the embedded engine's version and the schema version it was built with.
Both are derived from the snapshot by ``scripts/build_starter_kb.py`` (never edited by hand). A
store whose stamp does not match this install (another snapshot, another engine version, another
schema) is not used: the default store is then seeded from the snapshot as before.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from stack_advisor.store.starter import SNAPSHOT_NAME, STARTER_VERSION, seed_store, snapshot_path

log = logging.getLogger(__name__)

STORE_NAME = f"starter-kb-v{STARTER_VERSION}.kb.gz"
STAMP_NAME = f"starter-kb-v{STARTER_VERSION}.kb.json"
FORMAT = 1


def shipped_file(name: str) -> Path:
    """A file of the package's data folder (beside the snapshot)."""
    return Path(str(resources.files("stack_advisor.store") / "data" / name))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stamp(snapshot: Path | None = None) -> dict[str, Any]:
    """What a prebuilt store must have been built from to stand for seeding this install."""
    import ladybug

    from stack_advisor.schema.graph import SCHEMA_VERSION

    return {
        "format": FORMAT,
        "snapshot": SNAPSHOT_NAME,
        "snapshot_sha256": _sha256(snapshot or snapshot_path()),
        "engine": f"ladybug {ladybug.__version__}",
        "schema_version": SCHEMA_VERSION,
    }


def restore(target: Path) -> bool:
    """Write the shipped prebuilt store to ``target`` (a path where no store is yet) when its
    stamp matches this install; False (nothing written) otherwise."""
    store, stamp_file = shipped_file(STORE_NAME), shipped_file(STAMP_NAME)
    try:
        shipped = json.loads(stamp_file.read_text(encoding="utf-8"))
        wanted = stamp()
    except (OSError, ValueError) as exc:
        log.debug("no prebuilt starter store (%s): seeding from the snapshot", exc)
        return False
    if shipped != wanted:
        log.info("prebuilt starter store built for %s, not %s: seeding instead", shipped, wanted)
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(store, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError) as exc:
        target.unlink(missing_ok=True)
        log.warning("prebuilt starter store %s unreadable (%s): seeding instead", store, exc)
        return False
    return True


def build(folder: Path, snapshot: Path | None = None) -> Path:
    """Seed a new embedded store from ``snapshot`` (default: the shipped one) exactly as a
    first run does, and write it gzip'd with its stamp into ``folder``; returns the store file.

    Raises:
        RuntimeError: the engine left files beside the store (it must be one file when closed).
    """
    import tempfile

    from stack_advisor.store.embedded_store import EmbeddedStore

    with tempfile.TemporaryDirectory(prefix="starter-kb-") as tmp:
        path = Path(tmp) / "kb"
        store = EmbeddedStore(path, query_timeout_s=3600.0)
        try:
            store.ensure_schema()
            seed_store(store, snapshot)
        finally:
            store.close()
        extra = [p.name for p in Path(tmp).iterdir() if p != path]
        if extra:
            raise RuntimeError(f"the closed embedded store left {extra} beside it")
        out = folder / STORE_NAME
        with (
            path.open("rb") as src,
            out.open("wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 20)
    (folder / STAMP_NAME).write_text(json.dumps(stamp(snapshot), indent=2) + "\n")
    return out
