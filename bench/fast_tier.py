"""CPU-minutes and wall time of the fast test tier (issue 45: at most 5 CPU-minutes).

Runs the tier as `scripts/test.sh --fast` does (without its lint step; no .pytest_cache) in a child
process and prints its CPU time (user + sys of pytest and every process it waited for, from
``getrusage(RUSAGE_CHILDREN)``) beside the wall time, since the machine may be shared: CPU time
moves less than wall time under another process's load (on the shared 2-core machine, single runs
of the same tree still spread by ~0.5 CPU-minutes: compare runs made in turn). The last line of
pytest's summary (passed, failed, skipped) is printed with it, so a faster run that tests less
shows.

``--env KEY=VALUE`` (repeatable) sets a variable for the run, ``--unset KEY`` removes one;
``--repeat N`` runs the tier N times in turn. tests/__init__.py sets ``OMP_NUM_THREADS=1`` where
it is unset: ``--env OMP_NUM_THREADS=<cores>`` runs the tier as it ran before that (OpenBLAS's
default is one thread per core), to compare the two in turn. Further arguments after ``--`` go
to pytest (e.g. ``-- --durations=40`` or a folder).

    python bench/fast_tier.py
    python bench/fast_tier.py --repeat 2 -- --durations=40
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = "not neo4j and not kube and not browser and not containers and not gpu and not slow"
GOAL_CPU_MINUTES = 5.0


def run_tier(env: dict[str, str], extra: list[str]) -> tuple[float, float, int, str, float]:
    """(CPU s, wall s, exit code, pytest's summary line, peak RSS in MiB of the largest process
    run so far: pytest itself, or a child it waited for) of one fast-tier run."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", FAST]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [*command, *extra], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.splitlines()
    summary = next((line for line in reversed(lines) if re.search(r" in [0-9.]+s", line)), "")
    if "--durations" in " ".join(extra):
        start_at = next((i for i, line in enumerate(lines) if "slowest" in line), len(lines))
        print("\n".join(lines[start_at:]))
    if done.returncode != 0:  # the failures' tracebacks (head), then pytest's own summary
        failures = done.stdout.partition("= FAILURES =")[2] or done.stdout[-4000:]
        print(failures[:8000], done.stderr[-2000:], sep="\n", file=sys.stderr)
    return cpu, wall, done.returncode, summary.strip("= "), after.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--unset", action="append", default=[], metavar="KEY")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in args.unset}
    for pair in args.env:
        key, sep, value = pair.partition("=")
        if not sep:
            parser.error(f"--env {pair!r}: expected KEY=VALUE")
        env[key] = value
    worst = 0
    for run in range(1, args.repeat + 1):
        cpu, wall, code, summary, rss = run_tier(env, args.pytest_args)
        verdict = "meets" if cpu / 60 <= GOAL_CPU_MINUTES else "misses"
        print(
            f"run {run}: {cpu / 60:.2f} CPU-minutes ({verdict} the {GOAL_CPU_MINUTES:g} goal), "
            f"wall {wall / 60:.2f} min, peak RSS {rss:,.0f} MiB, exit {code}: {summary}",
            flush=True,
        )
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main())
