"""What a sweep cell costs beyond its benchmark: environment creation cold (nothing downloaded,
empty uv cache) and cached (wheels in uv's cache, a new environment) and reused (the environment
exists), the per-cell overhead of the run (interpreter start, imports, fingerprint, delivery),
and disk per cell (apparent size, and what it adds beyond uv's cache, which it hard-links).

Runs a real two-cell CPU sweep (numpy builds, PI suite mem_triad, quick profile) into a scratch
embedded store; "cold" downloads from PyPI.

    python bench/sweep_cells.py [--versions 1.26.4 2.1.3] [--no-cold]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.collectors.sinks import StoreSink
from stack_advisor.collectors.sweep.env import EnvCache
from stack_advisor.collectors.sweep.matrix import parse_matrix
from stack_advisor.collectors.sweep.run import Sweep
from stack_advisor.store.registry import open_store


def _du(path: Path) -> int:
    """Bytes on disk, hard links counted once (``du -s --block-size=1``)."""
    out = subprocess.run(
        ["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[0])


def _matrix(versions: list[str]) -> dict:
    return {
        "name": "bench-sweep",
        "device": "cpu",
        "repeats": 1,
        "benchmarks": [
            {
                "runner": "pi",
                "profile": "quick",
                "options": {"backends": "numpy", "pis": "mem_triad"},
            }
        ],
        "cells": [{"framework": "numpy", "version": v} for v in versions],
    }


def _sweep(root: Path, uv_cache: Path, versions: list[str], store: Path, force: bool) -> list:
    os.environ["ADVISOR_SWEEP_UV_CACHE"] = str(uv_cache)
    matrix = parse_matrix(_matrix(versions))
    with open_store(f"embedded:{store}") as kb:
        return Sweep(matrix, EnvCache(root), StoreSink(kb, str(store)), force=force).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", default=["1.26.4", "2.1.3"])
    parser.add_argument("--no-cold", action="store_true", help="skip the cold pass (no downloads)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        tmp_path = Path(tmp)
        shared_uv = Path.home() / ".cache/stack-advisor/sweep/uv"
        passes = []
        if not args.no_cold:
            passes.append(("cold (empty uv cache)", tmp_path / "cold-uv", tmp_path / "cold", False))
        passes += [
            ("cached (wheels in uv cache, new env)", shared_uv, tmp_path / "warm", False),
            ("reused (env exists, --force)", shared_uv, tmp_path / "warm", True),
        ]
        print(
            f"cells: numpy {', '.join(args.versions)}; PI suite numpy mem_triad, quick profile, CPU"
        )
        print(
            f"{'pass':40s} {'env s':>8s} {'overhead s':>11s} {'bench s':>8s} "
            f"{'cell s':>8s}   overhead: "
            "process start+imports+fingerprint / deliver / other"
        )
        for label, uv_cache, root, force in passes:
            if label.startswith("cached"):
                _sweep(
                    tmp_path / "prime", shared_uv, args.versions, tmp_path / "kb-prime", False
                )  # fill uv cache
                shutil.rmtree(tmp_path / "prime")
            outcomes = _sweep(
                root, uv_cache, args.versions, tmp_path / f"kb-{root.name}-{force}", force
            )
            for o in outcomes:
                assert o.status == "measured", (o.cell, o.stage, o.reason)
            env_s = statistics.mean(o.env_seconds for o in outcomes)
            over = statistics.mean(o.overhead_seconds for o in outcomes)
            bench = statistics.mean(o.benchmark_seconds for o in outcomes)
            cell = statistics.mean(o.cell_seconds for o in outcomes)
            proc = statistics.mean(o.process_seconds - o.benchmark_seconds for o in outcomes)
            deliver = statistics.mean(o.deliver_seconds for o in outcomes)
            print(
                f"{label:40s} {env_s:8.2f} {over:11.2f} {bench:8.2f} {cell:8.2f}   "
                f"{proc:.2f} / {deliver:.2f} / {over - proc - deliver:.2f}"
            )
        envs = EnvCache(tmp_path / "warm")
        sizes = envs.sizes()
        apparent = statistics.mean(sizes.values()) / 2**20
        together = _du(shared_uv) if shared_uv.exists() else 0
        with_envs = int(
            subprocess.run(
                ["du", "-s", "--block-size=1", str(shared_uv), str(envs.envs)],
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.splitlines()[-1]
            .split()[0]
        )
        print(
            f"disk per cell: {apparent:.1f} MiB apparent; {with_envs / len(sizes) / 2**20:.2f} MiB "
            f"beyond uv's cache (hard links); uv cache {together / 2**20:.0f} MiB"
        )
        print(
            "overhead = cell wall time - environment - benchmark: interpreter start, imports, "
            "fingerprint inside the cell, parsing and storing the documents"
        )


if __name__ == "__main__":
    main()
