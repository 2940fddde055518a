"""The evidence index's calibration persisted with the table it was computed on, so a fresh
process (every CLI call, an API start) does not replay the knowledge base's history again (1–4 s
per process at the starter knowledge base's size).

The calibration (``stack_advisor.advisor.estimate.query.Calibration``: residual pools per basis and
cell, the learned roofline blends, each slice's fitted transfer models as plain floats, so answering
never imports scikit-learn) is a function of the table's content, of the transfer method and of the
code that computes it, and nothing else. A file is keyed by both: the table's content digest
(observation keys and values, ``table_file.content_digest``) and ``table_file.code_digest`` (the
same rule that invalidates persisted tables and models), plus this file's format. Files live in the
folder the caller passes in (``stack_advisor.advisor.knowledge.cache_folders``:
``$ADVISOR_CALIBRATION_CACHE`` or
``$XDG_CACHE_HOME/stack-advisor/calibration`` at the CLI and API edge; None: off), are
uncompressed ``.npz`` read without pickles, written to a temporary file and renamed, and only the
newest ``KEEP`` are kept. A missing, truncated or corrupt file is ignored (and computed over).

Beside the calibration the file keeps what every answer would otherwise recompute from the table
(``Prepared``): the evidence index's grouping of rows by slice and accelerator, and the placement
overheads. Those name rows by position, so they are trusted only for a table whose row-aligned
inputs (the columns they read, in row order: ``layout_digest``) are the ones they were computed
from; another table of the same content (rows in another order) reuses the calibration and
recomputes them.

The round drift's learned prior (``drift_prior.PriorState``: its steps in the order collected and
its band's pads) is kept in a file of its own beside it (``PriorFile``), learned on the first
answer that carries evidence between rounds: its steps follow the slices' order and the system
column, so its key holds those (``prior_digest``) as well as the table's content and the code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.drift_prior import PriorState
from stack_advisor.advisor.estimate.query import Calibration, PoolKey, SliceKey
from stack_advisor.advisor.estimate.transfer import TransferModel
from stack_advisor.advisor.knowledge.cache_folders import CALIBRATION_CACHE_ENV
from stack_advisor.advisor.knowledge.table import ObservationTable, content_digest
from stack_advisor.advisor.knowledge.table_file import code_digest, write_atomically
from stack_advisor.advisor.results import Basis, PlacementOverhead

log = logging.getLogger(__name__)
CACHE_ENV = CALIBRATION_CACHE_ENV
# 2: per-slice transfer pools; 3: the fitted transfer models; 4: all pools in one array;
# 5: the index's slices and the placement overheads beside the calibration; 6: precision policies
FORMAT = 6
KEEP = 8
# What the slices and the overheads read, row by row (``analysis.placement_overheads``,
# ``estimate.group_slices``): codes and vocabularies of these columns, and these numbers.
LAYOUT_COLUMNS = (
    "family",
    "bench_name",
    "scenario",
    "metric",
    "division",
    "accelerator",
    "placement",
    "round",
    "benchmark",
    "physical",
)
LAYOUT_NUMBERS = ("value", "count", "higher_is_better")


@dataclass
class Prepared:
    """What a persisted file holds for one table: the calibration, and, when the table's rows
    are the very ones they were computed from, the index's slices and the placement overheads
    (else None: the caller computes them)."""

    calibration: Calibration
    slices: dict[SliceKey, dict[str, np.ndarray]] | None = None
    overheads: dict[tuple[str, str], PlacementOverhead] | None = None


def calibration_key(table: ObservationTable, transfer_method: str = "roofline") -> str:
    """The file's key: format, the code's digest, the table's content digest, the transfer
    method."""
    if not table.digest:
        table.digest = content_digest(table)
    text = f"calibration-v{FORMAT}:{code_digest()}:{table.digest}:{transfer_method}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def layout_digest(table: ObservationTable) -> str:
    """A digest of the table's row-aligned inputs to the slices and the overheads, in row order
    (the content digest sorts the keys: equal content in another row order has the same one)."""
    digest = hashlib.sha256(f"layout:{table.n}:".encode())
    for name in LAYOUT_COLUMNS:
        column = getattr(table, name)
        digest.update(json.dumps(column.vocab, default=str).encode())
        digest.update(np.ascontiguousarray(column.codes, dtype=np.int32).tobytes())
    for name in LAYOUT_NUMBERS:
        digest.update(np.ascontiguousarray(getattr(table, name)).tobytes())
    return digest.hexdigest()[:32]


def _path(key: str, folder: Path | None) -> Path | None:
    return None if folder is None else folder / f"calibration-{key}.npz"


def load(
    table: ObservationTable, transfer_method: str = "roofline", *, folder: Path | None = None
) -> Calibration | None:
    """The persisted calibration of ``table`` (with that transfer method's fitted models), or
    None (none yet, caching off, unreadable)."""
    prepared = load_prepared(table, transfer_method, folder=folder)
    return None if prepared is None else prepared.calibration


def load_prepared(
    table: ObservationTable, transfer_method: str = "roofline", *, folder: Path | None = None
) -> Prepared | None:
    """What is persisted for ``table``: None when there is no calibration (none yet, caching
    off, unreadable); its slices and overheads None when its rows differ from the table's."""
    key = calibration_key(table, transfer_method)
    path = _path(key, folder)
    if path is None:
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("key") != key:
                return None
            values = np.asarray(data["values"])
            residuals: dict[str, dict[PoolKey, np.ndarray]] = {}
            for (family, basis, *cell), start, end in zip(
                meta["pools"], meta["starts"], meta["ends"], strict=True
            ):
                residuals.setdefault(family, {})[(Basis(basis), *cell)] = values[start:end]
            alphas = {tuple(k): float(a) for *k, a in meta["alphas"]}
            transfers = {tuple(k): TransferModel.from_list(v) for k, v in meta["transfers"]}
            precisions = {tuple(k): str(p) for *k, p in meta["precisions"]}
            prepared = Prepared(
                Calibration(
                    residuals=residuals, alphas=alphas, transfers=transfers, precisions=precisions
                )
            )
            if meta.get("layout") == layout_digest(table):
                prepared.slices = _slices(meta["slices"], np.asarray(data["slice_rows"]), table.n)
                prepared.overheads = {
                    (o["accelerator"], o["placement"]): PlacementOverhead.model_validate(o)
                    for o in meta["overheads"]
                }
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile) as exc:
        log.warning("ignoring the unreadable calibration %s (%s)", path, type(exc).__name__)
        return None
    return prepared


def _slices(listing: list[Any], rows: np.ndarray, n: int) -> dict[SliceKey, dict[str, np.ndarray]]:
    """The slices as ``save`` listed them: per slice its key, then (accelerator, row count)
    pairs, the rows of each consecutive in ``rows``. Raises ValueError when they do not fit."""
    if (
        rows.dtype != np.int64
        or rows.ndim != 1
        or (len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= n))
    ):
        raise ValueError("slice rows out of the table's range")
    rows.flags.writeable = False  # shared views: never changed in place
    out: dict[SliceKey, dict[str, np.ndarray]] = {}
    end = 0
    for key, *members in listing:
        by_acc = out.setdefault(tuple(key), {})
        for acc, count in members:
            start, end = end, end + int(count)
            by_acc[str(acc)] = rows[start:end]
    if end != len(rows):
        raise ValueError("slice rows do not match their listing")
    return out


def save(
    table: ObservationTable,
    calibration: Calibration,
    transfer_method: str = "roofline",
    *,
    slices: dict[SliceKey, dict[str, np.ndarray]] | None = None,
    overheads: dict[tuple[str, str], PlacementOverhead] | None = None,
    folder: Path | None = None,
) -> Path | None:
    """Persist ``calibration`` as the one of ``table``, with the index's ``slices`` and the
    placement ``overheads`` computed over it (both or neither); the file's path (None when off
    or the folder cannot be written: the calibration is then computed again next time)."""
    key = calibration_key(table, transfer_method)
    path = _path(key, folder)
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
    meta: dict[str, Any] = {
        "key": key,
        "pools": pools,
        "starts": starts,
        "ends": ends,
        "alphas": [[*k, a] for k, a in sorted(calibration.alphas.items())],
        "transfers": [[list(k), m.as_list()] for k, m in sorted(calibration.transfers.items())],
        "precisions": [[*k, p] for k, p in sorted(calibration.precisions.items())],
    }
    arrays = {"values": np.concatenate(chunks) if chunks else np.zeros(0)}
    if slices is not None and overheads is not None:
        listing: list[Any] = []
        parts: list[np.ndarray] = []
        for slice_key, by_acc in slices.items():
            listing.append([list(slice_key), *([acc, len(rows)] for acc, rows in by_acc.items())])
            parts.extend(np.asarray(rows, dtype=np.int64) for rows in by_acc.values())
        meta.update(
            layout=layout_digest(table),
            slices=listing,
            overheads=[o.model_dump(mode="json") for o in overheads.values()],
        )
        arrays["slice_rows"] = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        # numpy's stub types savez's **kwds with its allow_pickle: bool, which a **dict also matches
        write_atomically(path, lambda handle: np.savez(handle, **arrays))  # type: ignore[arg-type]
        _prune(path.parent)
    except OSError as exc:
        log.warning("could not persist the calibration in %s: %s", path.parent, exc)
        return None
    return path


def _prune(folder: Path) -> None:
    files = sorted(folder.glob("calibration-*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)


PRIOR_FORMAT = 1


def prior_digest(table: ObservationTable) -> str:
    """The drift prior's key: format, the code's digest, the table's content and row layout
    (``layout_digest``), and its system column (a step pairs parts of one system class)."""
    if not table.digest:
        table.digest = content_digest(table)
    digest = hashlib.sha256(
        f"drift-prior-v{PRIOR_FORMAT}:{code_digest()}:{table.digest}:{layout_digest(table)}".encode()
    )
    digest.update(json.dumps(table.system.vocab, default=str).encode())
    digest.update(np.ascontiguousarray(table.system.codes, dtype=np.int32).tobytes())
    return digest.hexdigest()[:32]


@dataclass
class PriorFile:
    """The round drift's prior of ``table`` kept in ``folder`` (``drift_prior.PriorShelf``):
    JSON (floats as Python writes them back exactly), written to a temporary file and renamed,
    the newest ``KEEP`` kept; a missing, foreign or unreadable file is learned over."""

    table: ObservationTable
    folder: Path | None

    @cached_property
    def path(self) -> Path | None:
        return (
            None
            if self.folder is None
            else self.folder / f"drift-prior-{prior_digest(self.table)}.json"
        )

    def load(self) -> PriorState | None:
        path = self.path
        if path is None:
            return None
        try:
            data = json.loads(path.read_bytes())
            if data.get("key") != path.stem:
                return None
            steps = tuple(
                (str(k), str(g), str(a), str(v), float(new), float(value))
                for k, g, a, v, new, value in data["steps"]
            )
            return PriorState(steps, {str(g): float(x) for g, x in data["pad"].items()})
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("ignoring the unreadable drift prior %s (%s)", path, type(exc).__name__)
            return None

    def save(self, state: PriorState) -> None:
        path = self.path
        if path is None:
            return
        text = json.dumps({"key": path.stem, "steps": state.steps, "pad": state.pad})
        try:
            write_atomically(path, lambda handle: handle.write(text.encode()))
            files = sorted(path.parent.glob("drift-prior-*.json"), key=lambda p: p.stat().st_mtime)
            for old in files[:-KEEP]:
                old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("could not persist the drift prior in %s: %s", path.parent, exc)
