"""Persisted observation table: write and load time and file size at 100k and 1M rows, this
format against the format of a previous git revision (default: format 2, the ``.npz``), in the
same run.

The table is built from synthetic fleet observations (``bench/fleet.py``, 10k of them) and tiled
to each size with unique keys: it measures the file format, not a store of that size. Files go
to a temporary folder.

    python bench/table_load.py [--sizes 100000 1000000] [--against a7b895a]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "bench"))

import fleet
import numpy as np

from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.columns import Column
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.schema.models import StoredObservation

ROOT = Path(__file__).resolve().parents[1]


def base_table(n: int = 10_000) -> ObservationTable:
    stored = [
        StoredObservation.model_validate({**o.model_dump(), "key": o.observation_key})
        for part in fleet.batches(n, n)
        for o in part
    ]
    return ObservationTable.from_observations(iter(stored), 1)


def tiled(base: ObservationTable, rows: int) -> ObservationTable:
    reps = -(-rows // base.n)
    fields: dict[str, Any] = {
        name: np.tile(getattr(base, name), reps)[:rows] for name in table_file.NUMERIC
    }
    for name in table_file.COLUMNS:
        col = getattr(base, name)
        fields[name] = Column(
            codes=np.tile(col.codes, reps)[:rows], vocab=col.vocab, index=col.index
        )
    keys = [f"{k}-{r}" for r in range(reps) for k in base.keys][:rows]
    return dataclasses.replace(base, n=rows, keys=keys, digest="", **fields)


def old_module(rev: str, folder: Path) -> Any:
    # the module's path at that revision (it moved into stack_advisor/advisor/knowledge/ after
    # 7c8cd85)
    for where in ("stack_advisor/advisor/knowledge/table_file.py", "advisor/table_file.py"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{where}"], capture_output=True, text=True
        )
        if shown.returncode == 0:
            break
    shown.check_returncode()
    text = shown.stdout
    path = folder / "table_file_old.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("table_file_old", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(module: Any, table: ObservationTable, path: Path) -> dict[str, float]:
    key = {"bench": "tiled", "rows": table.n}
    table.digest = ""
    start = time.perf_counter()
    assert module.write_table(path, table, key)
    write_s = time.perf_counter() - start
    loads, first = [], []
    for _ in range(3):
        start = time.perf_counter()
        loaded = module.read_table(path, key)
        loads.append(time.perf_counter() - start)
        assert loaded is not None and loaded.n == table.n
        start = time.perf_counter()
        assert loaded.keys[-1] == table.keys[-1]  # what using the keys costs on top
        first.append(time.perf_counter() - start)
    return {
        "write_s": write_s,
        "load_s": statistics.median(loads),
        "keys_s": statistics.median(first),
        "mb": path.stat().st_size / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--against", default="a7b895a", metavar="REV")
    args = parser.parse_args()
    base = base_table()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = old_module(args.against, folder)
        print(
            f"format {table_file.FORMAT} vs {args.against} (format {old.FORMAT}); table tiled from "
            f"{base.n} fleet observations",
            flush=True,
        )
        for rows in args.sizes:
            table = tiled(base, rows)
            new = timed(table_file, table, folder / "new.tbl")
            was = timed(old, table, folder / "old.npz")
            print(
                f"n={rows:>8d}  load {new['load_s']:6.3f} s (keys when used "
                f"+{new['keys_s']:.3f} s)  "
                f"write {new['write_s']:5.2f} s  {new['mb']:6.1f} MB   |  format "
                f"{old.FORMAT}: load "
                f"{was['load_s']:6.3f} s  write {was['write_s']:5.2f} s  {was['mb']:6.1f} MB   "
                f"-> load x{was['load_s'] / new['load_s']:.1f} faster",
                flush=True,
            )


if __name__ == "__main__":
    main()
