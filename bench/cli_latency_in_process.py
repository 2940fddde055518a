"""The in-process figures of ``bench/cli_latency.py``: the observation table read from the store
against its persisted file, the calibration computed against loaded, and the persisted table's
load at a tiled size. Run through ``cli_latency.py``."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any


def in_process(uri: str) -> dict[str, float]:
    """Table from the store vs from its persisted file; calibration, the index's slices and the
    placement overheads computed vs loaded from the calibration file."""
    from stack_advisor.advisor.engine import Advisor, _one_thread
    from stack_advisor.advisor.estimate import analysis, calibration_file
    from stack_advisor.advisor.estimate.index import EvidenceIndex
    from stack_advisor.advisor.estimate.query import group_slices
    from stack_advisor.advisor.knowledge import table_file
    from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
    from stack_advisor.store.registry import open_store

    with open_store(uri) as store:
        generation = Advisor(store).store_generation()
        t0 = time.perf_counter()
        built = table_file.build_table(store, generation)
        build_s = time.perf_counter() - t0
        key = table_file.table_key(store, generation)
        folders = CacheFolders.from_environ(
            os.environ
        )  # a bench is an edge: it reads the environment
        path = table_file.table_path(store.uri, folders.tables)
        assert key is not None and path is not None
        table_file.write_table(path, built, key)
        t0 = time.perf_counter()
        loaded = table_file.read_table(path, key)
        load_s = time.perf_counter() - t0
        assert loaded is not None and loaded.n == built.n
        t0 = time.perf_counter()
        with _one_thread():  # as the advisor calibrates
            calibration = EvidenceIndex(loaded).calibration()
        calibrate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        slices, overheads = group_slices(loaded), analysis.placement_overheads(loaded)
        prepare_s = time.perf_counter() - t0
        calibration_file.save(
            loaded, calibration, slices=slices, overheads=overheads, folder=folders.calibration
        )
        t0 = time.perf_counter()
        prepared = calibration_file.load_prepared(loaded, folder=folders.calibration)
        calibration_load_s = time.perf_counter() - t0
        assert prepared is not None and prepared.slices is not None
    return {
        "n": built.n,
        "build_s": build_s,
        "load_s": load_s,
        "calibrate_s": calibrate_s,
        "prepare_s": prepare_s,
        "calibration_load_s": calibration_load_s,
        "file_mb": path.stat().st_size / 1e6,
    }


def tiled_load(uri: str, rows: int) -> dict[str, float]:
    """Persisted-table load at ``rows`` rows: the store's table tiled (keys made unique) to that
    size, written and read back. It measures the file format, not a store of that size."""
    import dataclasses

    import numpy as np

    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.advisor.knowledge import table_file
    from stack_advisor.advisor.knowledge.columns import Column
    from stack_advisor.store.registry import open_store

    with open_store(uri) as store:
        base = table_file.build_table(store, Advisor(store).store_generation())
    reps = -(-rows // base.n)
    fields: dict[str, Any] = {}
    for name in table_file.NUMERIC:
        fields[name] = np.tile(getattr(base, name), reps)[:rows]
    for name in table_file.COLUMNS:
        col = getattr(base, name)
        fields[name] = Column(
            codes=np.tile(col.codes, reps)[:rows], vocab=col.vocab, index=col.index
        )
    keys = [f"{k}-{r}" for r in range(reps) for k in base.keys][:rows]
    big = dataclasses.replace(base, n=rows, keys=keys, digest="", **fields)
    key = {"bench": "tiled", "rows": rows}
    path = Path(os.environ["XDG_CACHE_HOME"]) / "tiled.npz"
    t0 = time.perf_counter()
    table_file.write_table(path, big, key)
    write_s = time.perf_counter() - t0
    loads = []
    for _ in range(3):
        t0 = time.perf_counter()
        loaded = table_file.read_table(path, key)
        loads.append(time.perf_counter() - t0)
        assert loaded is not None and loaded.n == rows
    return {
        "write_s": write_s,
        "load_s": statistics.median(loads),
        "file_mb": path.stat().st_size / 1e6,
    }


def show_in_process(uri: str) -> None:
    figures = in_process(uri)
    print(
        f"  in-process, {figures['n']:,} rows: table from the store "
        f"{figures['build_s']:.2f} s, "
        f"from the persisted file {figures['load_s'] * 1000:.0f} ms "
        f"({figures['build_s'] / figures['load_s']:.0f}x; file "
        f"{figures['file_mb']:.1f} MB); "
        f"calibration {figures['calibrate_s']:.1f} s, slices + placement overheads "
        f"{figures['prepare_s'] * 1000:.0f} ms; the calibration file with both loaded in "
        f"{figures['calibration_load_s'] * 1000:.0f} ms",
        flush=True,
    )


def show_tiled(uri: str, rows: int) -> None:
    t = tiled_load(uri, rows)
    print(
        f"persisted table at {rows:,} rows (the store's table tiled, keys made unique): "
        f"write {t['write_s']:.2f} s, load {t['load_s']:.2f} s (median of 3), "
        f"file {t['file_mb']:.0f} MB"
    )
