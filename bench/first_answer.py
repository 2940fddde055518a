#!/usr/bin/env python
"""Time a fresh install's first answer: an empty XDG_DATA_HOME, so the default store is created
and seeded from the shipped starter snapshot, then one recommendation.

    python bench/first_answer.py [--repeat N] [-- advisor args...]

Prints the snapshot's size and counts, then per attempt the wall time of the first command
(create + seed + read the table + calibrate + answer) and of a second one on the now-seeded store
(persisted table and calibration), each with the CPU seconds it used (user + sys of the child:
the machine may be shared, and wall time then says more about the neighbours than the code).
Goal: first answer <= 15 s (issue 43).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline", "--top", "5", "--json"]


def run(args: list[str], home: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``advisor`` command in the XDG home ``home``."""
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "xdg-data"),
        "XDG_CACHE_HOME": str(home / "xdg-cache"),
        "XDG_STATE_HOME": str(home / "xdg-state"),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "stack_advisor.cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"advisor {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}"
        )
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "command", nargs="*", help="advisor arguments (default: a resnet50 recommendation)"
    )
    args = parser.parse_args(argv)
    from stack_advisor.store import starter

    path = starter.snapshot_path()
    counts = starter.manifest()["counts"]
    print(
        f"snapshot {path.name}: {path.stat().st_size / 1e6:.2f} MB, "
        f"{counts['observations']} observations "
        f"{json.dumps(counts['observations_by_source'])}, {counts['runs']} runs, "
        f"{counts['failures']} failures"
    )
    command = args.command or DEFAULT
    firsts: list[tuple[float, float]] = []
    seconds: list[tuple[float, float]] = []
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
            first = run(command, Path(tmp))
            second = run(command, Path(tmp))
        firsts.append(first)
        seconds.append(second)
        print(
            f"#{attempt + 1}: first answer {first[0]:6.2f} s wall, {first[1]:5.2f} s CPU "
            "(fresh XDG home: "
            f"create, seed, answer); next answer {second[0]:6.2f} s wall, {second[1]:5.2f} s CPU"
        )
    print(
        f"first answer median {statistics.median(f[0] for f in firsts):.2f} s wall, "
        f"{statistics.median(f[1] for f in firsts):.2f} s CPU over {len(firsts)}; goal <= 15 s; "
        f"next answer median {statistics.median(s[0] for s in seconds):.2f} s wall, "
        f"{statistics.median(s[1] for s in seconds):.2f} s CPU; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
