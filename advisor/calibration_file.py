"""The evidence index's calibration persisted with the table it was computed on, so a fresh
process (every CLI call, an API start) does not replay the knowledge base's history again (1–4 s
per process at the starter knowledge base's size).

The calibration (``advisor.estimate.Calibration``: residual pools per basis and cell, the learned
roofline blends, each slice's fitted transfer models as plain floats, so answering never imports
scikit-learn) is a function of the table's content, of the transfer method and of the code that
computes it, and nothing else. A file is keyed by both: the table's content digest (observation keys and values,
``table_file.content_digest``) and ``table_file.code_digest`` (the same rule that invalidates
persisted tables and models), plus this file's format. Files live in ``$ADVISOR_CALIBRATION_CACHE``
or ``$XDG_CACHE_HOME/stack-advisor/calibration`` (``ADVISOR_CALIBRATION_CACHE=0``: off), are
uncompressed ``.npz`` read without pickles, written to a temporary file and renamed, and only the
newest ``KEEP`` are kept. A missing, truncated or corrupt file is ignored (and computed over).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from advisor.estimate import Calibration, PoolKey
from advisor.results import Basis
from advisor.table import ObservationTable
from advisor.table_file import code_digest, configured_cache_dir, content_digest, write_atomically
from advisor.transfer import TransferModel

log = logging.getLogger(__name__)
CACHE_ENV = "ADVISOR_CALIBRATION_CACHE"
FORMAT = 4  # 2: per-slice transfer pools; 3: the fitted transfer models; 4: all pools in one array
KEEP = 8


def cache_dir() -> Path | None:
    """Where calibrations are persisted; None when ``ADVISOR_CALIBRATION_CACHE=0``."""
    return configured_cache_dir(CACHE_ENV, "calibration")


def calibration_key(table: ObservationTable, transfer_method: str = "roofline") -> str:
    """The file's key: format, the code's digest, the table's content digest, the transfer method."""
    if not table.digest:
        table.digest = content_digest(table)
    text = f"calibration-v{FORMAT}:{code_digest()}:{table.digest}:{transfer_method}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"calibration-{key}.npz"


def load(table: ObservationTable, transfer_method: str = "roofline") -> Calibration | None:
    """The persisted calibration of ``table`` (with that transfer method's fitted models), or
    None (none yet, caching off, unreadable)."""
    key = calibration_key(table, transfer_method)
    path = _path(key)
    if path is None:
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("key") != key:
                return None
            values = np.asarray(data["values"])
            residuals: dict[str, dict[PoolKey, np.ndarray]] = {}
            for (family, basis, *cell), start, end in zip(meta["pools"], meta["starts"], meta["ends"], strict=True):
                residuals.setdefault(family, {})[(Basis(basis), *cell)] = values[start:end]
            alphas = {tuple(k): float(a) for *k, a in meta["alphas"]}
            transfers = {tuple(k): TransferModel.from_list(v) for k, v in meta["transfers"]}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        log.warning("ignoring the unreadable calibration %s (%s)", path, type(exc).__name__)
        return None
    return Calibration(residuals=residuals, alphas=alphas, transfers=transfers)  # type: ignore[arg-type]


def save(table: ObservationTable, calibration: Calibration, transfer_method: str = "roofline") -> Path | None:
    """Persist ``calibration`` as the one of ``table``; the file's path (None when off or the
    folder cannot be written: the calibration is then computed again next time)."""
    key = calibration_key(table, transfer_method)
    path = _path(key)
    if path is None:
        return None
    pools: list[list[Any]] = []
    chunks: list[np.ndarray] = []
    starts: list[int] = []
    ends: list[int] = []
    end = 0
    for family, cells in sorted(calibration.residuals.items()):
        for (basis, *cell), values in cells.items():
            chunk = np.asarray(values, dtype=np.float64).reshape(-1)
            pools.append([family, basis.value, *cell])
            starts.append(end)
            end += len(chunk)
            ends.append(end)
            chunks.append(chunk)
    meta = {"key": key, "pools": pools, "starts": starts, "ends": ends,
            "alphas": [[*k, a] for k, a in sorted(calibration.alphas.items())],
            "transfers": [[list(k), m.as_list()] for k, m in sorted(calibration.transfers.items())]}
    arrays = {"values": np.concatenate(chunks) if chunks else np.zeros(0),
              "meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
    try:
        write_atomically(path, lambda handle: np.savez(handle, **arrays))
        _prune(path.parent)
    except OSError as exc:
        log.warning("could not persist the calibration in %s: %s", path.parent, exc)
        return None
    return path


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("calibration-*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)
