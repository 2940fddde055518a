#!/usr/bin/env python
"""Time a fresh install's first answer: an empty XDG_DATA_HOME, so the default store is created
and seeded from the shipped starter snapshot, then one recommendation.

    python bench/first_answer.py [--repeat N] [-- advisor args...]

Prints the snapshot's size and counts, then per attempt the wall time of the first command
(create + seed + answer) and of a second one on the now-seeded store. Goal: first answer <= 20 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline", "--top", "5", "--json"]


def run(args: list[str], home: Path) -> float:
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(home),
           "XDG_DATA_HOME": str(home / "xdg-data"), "XDG_CACHE_HOME": str(home / "xdg-cache"),
           "XDG_STATE_HOME": str(home / "xdg-state")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("command", nargs="*", help="advisor arguments (default: a resnet50 recommendation)")
    args = parser.parse_args(argv)
    from graph_schema import starter

    path = starter.snapshot_path()
    counts = starter.manifest()["counts"]
    print(f"snapshot {path.name}: {path.stat().st_size / 1e6:.2f} MB, {counts['observations']} observations "
          f"{json.dumps(counts['observations_by_source'])}, {counts['runs']} runs, {counts['failures']} failures")
    command = args.command or DEFAULT
    firsts, seconds = [], []
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
            first = run(command, Path(tmp))
            second = run(command, Path(tmp))
        firsts.append(first)
        seconds.append(second)
        print(f"#{attempt + 1}: first answer {first:6.2f} s (fresh XDG home: create, seed, answer); "
              f"next answer {second:6.2f} s")
    print(f"first answer median {statistics.median(firsts):.2f} s over {len(firsts)}; goal <= 20 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
