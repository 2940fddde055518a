"""Fitted models persisted on disk, keyed by the content of the table they were fitted on, so a
fresh process does not refit (8 s at 100k observations) and, once compiled, does not import
scikit-learn either.

A model is stored with its regressor compiled to numpy arrays (``advisor.forest``) when the
compiled forest reproduces the regressor's predictions; loading it then needs numpy only. Files
live in ``$ADVISOR_MODEL_CACHE`` or ``$XDG_CACHE_HOME/stack-advisor/models``
(``ADVISOR_MODEL_CACHE=0``: off), are written to a temporary file and renamed, and only the
newest ``KEEP`` are kept. An unreadable file is ignored (and refitted over).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from advisor import predictor
from advisor.table import ObservationTable
from advisor.table_file import code_digest, configured_cache_dir, content_digest

log = logging.getLogger(__name__)
CACHE_ENV = "ADVISOR_MODEL_CACHE"
KEEP = 8
COMPILE_CHECK_ROWS = 2000


def cache_dir() -> Path | None:
    """Where fitted models are persisted; None when ``ADVISOR_MODEL_CACHE=0``."""
    return configured_cache_dir(CACHE_ENV, "models")


def fingerprint(table: ObservationTable, model_version: int) -> str:
    """The model's cache key: model version, the code that fits it, the table's content."""
    if not table.digest:
        table.digest = content_digest(table)
    text = f"v{model_version}:{code_digest()}:{table.digest}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(key: str) -> predictor.FittedModel | None:
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"model-{key}.pkl"
    try:
        with path.open("rb") as handle:
            model = pickle.load(handle)
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - any unreadable cache file is refitted over
        log.warning("ignoring the unreadable cached model %s (%s)", path, type(exc).__name__)
        return None
    return model if isinstance(model, predictor.FittedModel) else None


def save(key: str, model: predictor.FittedModel) -> None:
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(model, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, folder / f"model-{key}.pkl")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(folder)
    except OSError as exc:
        log.warning("could not cache the fitted model in %s: %s", folder, exc)


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("model-*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)


def compact(model: predictor.FittedModel, table: ObservationTable) -> predictor.FittedModel:
    """``model`` with its regressor compiled to numpy (checked on up to ``COMPILE_CHECK_ROWS``
    training rows); unchanged when it cannot be compiled faithfully."""
    from advisor.features import table_frames
    from advisor.forest import compile_regressor

    regressor: Any = model.model
    if not hasattr(regressor, "_predictors"):
        return model  # already compiled, or not a scikit-learn forest
    rows = np.flatnonzero(table.value > 0)[:COMPILE_CHECK_ROWS]
    sample = model.encoder.matrix(table_frames(table, rows))
    compiled = compile_regressor(regressor, sample)
    if compiled is None:
        return model
    model.model = compiled  # type: ignore[assignment]
    return model
