"""The starter knowledge base: a compact, versioned snapshot shipped in the package.

``stack_advisor/store/data/starter-kb-v<N>.json.gz`` is gzip'd JSON shaped like an ``IngestBatch``
(``observations``, ``failures``, ``runs``) plus a ``manifest`` (version, build date, counts,
sources with their files and checksums, attribution). It is built only from real data by
``scripts/build_starter_kb.py``: MLPerf Inference published results (MLCommons, attributed per
their results-use guidelines) and the project's own measured result documents.

The registry calls ``seed_default_store`` when it creates the default embedded store for the
first time, so a fresh install answers at once, unless its settings say not to
(``StoreSettings.seed_starter``; ``ADVISOR_STARTER=0`` at the edge).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from stack_advisor.runtime import progress
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import IngestBatch, Observation
from stack_advisor.store.base import Store

log = logging.getLogger(__name__)

STARTER_VERSION = 1
SNAPSHOT_NAME = f"starter-kb-v{STARTER_VERSION}.json.gz"
BATCH_SIZE = 5000


def snapshot_path() -> Path:
    """Where the shipped snapshot lives (inside the installed package)."""
    return Path(str(resources.files("stack_advisor.store") / "data" / SNAPSHOT_NAME))


def read_snapshot(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The snapshot's raw JSON (manifest + batch fields).

    Raises:
        InvalidInput: missing or unreadable file, or not a starter snapshot.
    """
    file = Path(path) if path is not None else snapshot_path()
    try:
        with gzip.open(file, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise InvalidInput(
            f"starter snapshot not found at {str(file)!r}; rebuild it with "
            "scripts/build_starter_kb.py"
        ) from None
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInput(f"starter snapshot {str(file)!r} is unreadable: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("manifest"), dict):
        raise InvalidInput(f"starter snapshot {str(file)!r} has no manifest")
    return data


def manifest(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The snapshot's manifest: version, build date, counts, sources, attribution."""
    return dict(read_snapshot(path)["manifest"])


@lru_cache(maxsize=2)
def _load_batch(path: str) -> IngestBatch:
    data = read_snapshot(path)
    return IngestBatch.model_validate(
        {key: data.get(key, []) for key in ("observations", "failures", "runs")}
    )


def load_snapshot(path: str | os.PathLike[str] | None = None) -> IngestBatch:
    """The snapshot as one validated ``IngestBatch`` (cached per path)."""
    return _load_batch(str(Path(path) if path is not None else snapshot_path()))


def seed_store(
    store: Store,
    path: str | os.PathLike[str] | None = None,
    *,
    batch_size: int = BATCH_SIZE,
    on_batch: Callable[[int, int], None] | None = None,
) -> int:
    """Load the snapshot into ``store`` in batches (one transaction each); idempotent.

    Args:
        on_batch: called with (observations written so far, total) after each batch.
    Returns:
        How many observations were new.
    """
    batch = load_snapshot(path)
    new = 0
    observations: list[Observation] = batch.observations
    parts = (
        IngestBatch(
            observations=observations[start : start + batch_size],
            runs=batch.runs if start == 0 else [],
        )
        for start in range(0, len(observations), batch_size)
    )
    written = 0
    for result in store.ingest_many(parts):
        new += result.observations_new
        written += result.observations_received
        if on_batch is not None:
            on_batch(written, len(observations))
    if batch.failures:
        store.ingest(IngestBatch(failures=batch.failures, runs=[] if observations else batch.runs))
    return new


def seed_default_store(store: Store) -> int:
    """Seed a newly created default store from the shipped snapshot. A missing snapshot is
    logged, not fatal: the store stays empty.

    Returns:
        How many observations were loaded.
    """
    try:
        with progress.phase(
            "first use: seeding the default store with the starter knowledge base (once)"
        ) as update:
            count = seed_store(store, on_batch=update)
    except InvalidInput as exc:
        log.warning("starter knowledge base not loaded: %s", exc)
        return 0
    log.info("loaded %d observations from the starter knowledge base", count)
    return count
