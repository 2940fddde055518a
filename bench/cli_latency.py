"""Wall time of the `advisor` command as a user meets it: `--version`, `--help`, and `recommend`
cold (the first call after a write: the store is read, the evidence calibrated, both persisted) and
warm (the persisted table and calibration loaded), plus a typo'd benchmark, each in a fresh process;
warm `recommend` over `--version` as a ratio (issue 43: at most 3x), and the warm run's CPU by
phase (imports, opening the store, the answer and the round drift within it). Then, through the
`advisor` entry point (``bench/cli_latency_resident.py``): `--version`, warm `recommend` answered
by the resident answerer and answered in-process (``ADVISOR_RESIDENT=0``), in turn, with both
ratios to `--version`. Commands compared
with each other run in turn (a, b, a, b, ...: ``interleaved``), so a shared machine's changing load
moves both alike.

Ratios against the previous behaviour in the same run:
- the table reread from the store on every call (``ADVISOR_TABLE_CACHE=0``) against the table
  loaded from its persisted file, in the CLI and in-process;
- with ``--baseline-rev REV`` (e.g. the commit before the persisted table), that revision's code,
  extracted with ``git archive`` and run on the same store, for every figure.

The store is a temporary embedded store seeded with the starter knowledge base (10,001 MLPerf and
own observations); ``--sizes 10000,100000`` adds synthetic observations (bench/api_latency.py's
generator, source ``bench-synthetic``) to reach each size. Median, p10 and p90 of ``--repeat``
runs; CPU seconds (user+sys of the child) beside wall time, since the machine may be shared.

    python bench/cli_latency.py
    python bench/cli_latency.py --sizes 10000,100000 --baseline-rev 8ab47c8
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli_latency_in_process import show_in_process, show_tiled  # noqa: E402 (beside this file)
from cli_latency_resident import resident_figures  # noqa: E402 (beside this file)

RECOMMEND = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline"]
TYPO = ["recommend", "--benchmark", "resnet5O", "--scenario", "Offline"]


def run_cli(
    args: list[str], env: dict[str, str], code_root: Path, module: str = "stack_advisor.cli.main"
) -> tuple[float, float, int]:
    """(wall s, cpu s, exit code) of one `advisor ARGS` in a fresh process (``module``: the
    in-process CLI, or ``stack_advisor.cli.resident``, the entry point with the answerer)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=code_root,
        env={**env, "PYTHONPATH": str(code_root)},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(
            f"advisor {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}"
        )
    return wall, cpu, done.returncode


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def q(p: float) -> float:
        pos = p * (len(ordered) - 1)
        i = int(pos)
        return (
            ordered[i]
            if i + 1 >= len(ordered)
            else ordered[i] + (ordered[i + 1] - ordered[i]) * (pos - i)
        )

    return {"median": statistics.median(ordered), "p10": q(0.1), "p90": q(0.9)}


def timed(args: list[str], env: dict[str, str], code_root: Path, repeat: int) -> dict[str, Any]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu, _ = run_cli(args, env, code_root)
        walls.append(wall)
        cpus.append(cpu)
    return {"wall": summary(walls), "cpu": summary(cpus)}


def show(
    label: str, figure: dict[str, Any], against: dict[str, Any] | None = None, what: str = ""
) -> None:
    w, c = figure["wall"], figure["cpu"]
    text = (
        f"  {label:44s} wall {w['median']:6.2f} s (p10 {w['p10']:.2f}, p90 {w['p90']:.2f})"
        f"  cpu {c['median']:6.2f} s (p10 {c['p10']:.2f}, p90 {c['p90']:.2f})"
    )
    if against is not None:
        text += (
            f"   {against['wall']['median'] / w['median']:.1f}x faster than {what}"
            f" (wall; cpu {against['cpu']['median'] / c['median']:.1f}x)"
        )
    print(text, flush=True)


def ratio(warm: dict[str, Any], version: dict[str, Any]) -> None:
    """Warm `recommend` against `advisor --version` measured in the same run (issue 43's goal:
    at most 3x, wall), on wall and CPU medians."""
    wall = warm["wall"]["median"] / version["wall"]["median"]
    cpu = warm["cpu"]["median"] / version["cpu"]["median"]
    print(
        f"  warm recommend / --version: {wall:.1f}x wall ({warm['wall']['median']:.2f} s / "
        f"{version['wall']['median']:.2f} s), {cpu:.1f}x cpu ({warm['cpu']['median']:.2f} s / "
        f"{version['cpu']['median']:.2f} s); goal <= 3x",
        flush=True,
    )


# One warm `advisor recommend` in a child process with its phases timed (CPU seconds of the
# process, the machine being shared): imports, opening the store, the answer, and within the
# answer the round drift (``advisor.estimate.drift.carry``, which another module owns: its share
# is printed so it can be cached there).
PHASES = """
import contextlib, functools, io, json, sys, time
t0 = time.process_time()
import stack_advisor.cli.main as cli
import stack_advisor.advisor.engine as engine
from stack_advisor.advisor.estimate import index
from stack_advisor.store import registry
imported = time.process_time() - t0
spent = {"store": 0.0, "answer": 0.0, "drift": 0.0}
def timed(owner, name, key):
    f = getattr(owner, name)
    @functools.wraps(f)
    def run(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[key] += time.process_time() - t
    setattr(owner, name, run)
timed(registry, "open_store", "store")
timed(engine.Advisor, "recommend", "answer")
if hasattr(index, "carry"):  # where the estimate applies the round drift today
    timed(index, "carry", "drift")
sys.argv = ["advisor", *json.loads(sys.argv[1])]
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
    cli.main()
print(json.dumps({"imports": imported, **spent, "total": time.process_time()}))
"""


def phases(args: list[str], env: dict[str, str], code_root: Path) -> dict[str, float]:
    """CPU seconds of one warm ``advisor ARGS`` by phase (``PHASES``)."""
    done = subprocess.run(
        [sys.executable, "-c", PHASES, json.dumps(args)],
        cwd=code_root,
        env={**env, "PYTHONPATH": str(code_root)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def show_phases(args: list[str], env: dict[str, str], code_root: Path, repeat: int) -> None:
    runs = [phases(args, env, code_root) for _ in range(repeat)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"  warm recommend by phase (cpu, median of {repeat}): total {med['total']:.2f} s = "
        f"imports {med['imports']:.2f} s + store open {med['store']:.2f} s + answer "
        f"{med['answer']:.2f} s (of which round drift, estimate.drift.carry: {med['drift']:.2f} s, "
        f"{med['drift'] / med['answer']:.0%} of the answer, {med['drift'] / med['total']:.0%} of "
        f"the run) + the rest {med['total'] - med['imports'] - med['store'] - med['answer']:.2f} s",
        flush=True,
    )


def _synthetic(n: int) -> list[Any]:
    spec = importlib.util.spec_from_file_location("api_latency", ROOT / "bench" / "api_latency.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic(n)  # type: ignore[no-any-return]


def fill(uri: str, size: int) -> int:
    """Seed (first time) and top up the store to ``size`` observations; returns the count."""
    from stack_advisor.schema.models import IngestBatch
    from stack_advisor.store.registry import open_store
    from stack_advisor.store.starter import seed_store

    with open_store(uri) as store:
        count = store.stats().counts.get("Observation", 0)
        if count == 0:
            seed_store(store)
            count = store.stats().counts.get("Observation", 0)
        if count < size:
            extra = _synthetic(size - count)
            for i in range(0, len(extra), 5000):
                store.ingest(IngestBatch(observations=extra[i : i + 5000]))
        return int(store.stats().counts.get("Observation", 0))


def write_one(uri: str, tag: int) -> None:
    """A small write (one new observation): the next call is a cold one."""
    from stack_advisor.schema.models import IngestBatch
    from stack_advisor.store.registry import open_store

    obs = _synthetic(1)[0].model_copy(update={"run_id": f"bench-cold-{tag}"})
    with open_store(uri) as store:
        store.ingest(IngestBatch(observations=[obs]))


def snapshot(into: Path) -> Path:
    """The package as it is now, copied: edits made while the bench runs (a shared checkout)
    neither mix code versions nor invalidate the persisted table and calibration, whose keys
    hold a digest of the code's files."""
    shutil.copytree(
        ROOT / "stack_advisor", into / "stack_advisor", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", into / "pyproject.toml")
    compileall.compile_dir(into / "stack_advisor", quiet=1)  # as pip leaves an install
    return into


def extract(rev: str, into: Path) -> Path:
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


EXISTING = [
    "recommend",
    "--family",
    "cnn",
    "--benchmark",
    "resnet50",
    "--batch-size",
    "32",
    "--precision",
    "fp16",
]


def existing(uri: str, cache: Path | None, repeat: int) -> None:
    """The warm CLI answer on an existing store: the first call primes the persisted table and
    calibration when ``cache`` holds none (timed apart), then ``repeat`` warm calls."""
    folder = cache or Path(tempfile.mkdtemp(prefix="cli-latency-cache-"))
    env = {
        **os.environ,
        "ADVISOR_TABLE_CACHE": str(folder / "tables"),
        "ADVISOR_CALIBRATION_CACHE": str(folder / "calibration"),
    }
    for name in ("ADVISOR_STORE", "ADVISOR_API", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    args = [*EXISTING, "--store", uri]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    wall, cpu, code = run_cli(args, env, ROOT)
    print(f"advisor {' '.join(args)}; load avg {load}", flush=True)
    print(
        f"  first call (primes the caches when empty): wall {wall:.2f} s, cpu {cpu:.2f} "
        f"s, exit {code}"
    )
    show("warm, persisted table + calibration", timed(args, env, ROOT, repeat))
    print(f"  load avg at end {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)


def interleaved(runs: dict[str, tuple[Any, ...]], repeat: int) -> dict[str, dict[str, Any]]:
    """Each named ``advisor ARGS`` (env, code root[, entry module]) ``repeat`` times, in turn
    (a, b, c, a, b, c, ...): a shared machine's load then moves all of them alike, so their
    ratios hold even where their times do not."""
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (args, env, root, *module) in runs.items():
            wall, cpu, _ = run_cli(args, env, root, *module)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: {"wall": summary(walls[name]), "cpu": summary(cpus[name])} for name in runs}


def recommend_figures(
    uri: str, size: int, env: dict[str, str], code: Path, repeat: int
) -> dict[str, Any]:
    """Cold, warm, table reread and typo'd ``recommend`` on the store at ``uri``; warm over
    ``--version`` measured in turn with it (``interleaved``), and the warm run's phases."""
    store_args = [*RECOMMEND, "--store", uri]
    colds = []
    for i in range(max(2, repeat // 2)):
        write_one(uri, size + i)
        colds.append(run_cli(store_args, env, code)[:2])
    cold = {"wall": summary([w for w, _ in colds]), "cpu": summary([c for _, c in colds])}
    show("cold: first call after a write (read+calibrate)", cold)
    runs = {
        "version": (["--version"], env, code),
        "warm": (store_args, env, code),
        "reread": (store_args, {**env, "ADVISOR_TABLE_CACHE": "0"}, code),
        "typo": ([*TYPO, "--store", uri], env, code),
    }
    fig = interleaved(runs, repeat)
    show("warm, table reread from the store", fig["reread"])
    show("warm, persisted table + calibration", fig["warm"], fig["reread"], "rereading the table")
    show("--version, in turn with them", fig["version"])
    ratio(fig["warm"], fig["version"])
    show_phases(store_args, env, code, repeat)
    show("typo'd benchmark, warm", fig["typo"])
    return fig


def against_baseline(
    uri: str,
    now: tuple[dict[str, str], Path],
    base: tuple[dict[str, str], Path],
    args: argparse.Namespace,
) -> None:
    """Warm and typo'd ``recommend`` of this code and of ``--baseline-rev``'s, run in turn."""
    store_args = [*RECOMMEND, "--store", uri]
    typo_args = [*TYPO, "--store", uri]
    run_cli(store_args, *base)  # the baseline fills its caches once
    fig = interleaved(
        {
            "warm": (store_args, *now),
            "base_warm": (store_args, *base),
            "typo": (typo_args, *now),
            "base_typo": (typo_args, *base),
        },
        args.repeat,
    )
    show(f"baseline {args.baseline_rev}: warm (in turn with now)", fig["base_warm"])
    show(f"baseline {args.baseline_rev}: typo'd benchmark", fig["base_typo"])
    show("now: warm", fig["warm"], fig["base_warm"], "the baseline")
    show("now: typo'd benchmark", fig["typo"], fig["base_typo"], "the baseline")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="10000", help="comma-separated observation counts (min 10,001)"
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--tile",
        type=int,
        default=1_000_000,
        help="also time the persisted-table load at this many rows (tiled); 0: skip",
    )
    parser.add_argument(
        "--baseline-rev", help="a git revision whose CLI is timed on the same store"
    )
    parser.add_argument(
        "--existing",
        metavar="URI",
        help="time only the warm answer on this existing "
        "store (e.g. a million observations filled by bench/api_latency.py's "
        "generator), its persisted table and calibration kept in --cache",
    )
    parser.add_argument(
        "--cache", type=Path, help="with --existing: the cache folder (tables/, calibration/)"
    )
    return parser.parse_args()


def bench_env(root: Path) -> dict[str, str]:
    """The commands' environment: data and caches under ``root``, as installed (bytecode cached:
    pip compiles it at install), whatever this shell says."""
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CACHE_HOME": str(root / "cache"),
        "XDG_RUNTIME_DIR": str(root / "run"),  # the resident answerer's socket: this run's own
        "ADVISOR_STARTER": "0",
    }
    (root / "run").mkdir(mode=0o700, exist_ok=True)
    for name in (
        "ADVISOR_STORE",
        "ADVISOR_API",
        "ADVISOR_RESIDENT",
        "ADVISOR_TABLE_CACHE",
        "ADVISOR_CALIBRATION_CACHE",
        "PYTHONDONTWRITEBYTECODE",
    ):
        env.pop(name, None)
    return env


def main() -> None:
    args = arguments()
    if args.existing:
        existing(args.existing, args.cache, args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as tmp:
        root = Path(tmp)
        env = bench_env(root)
        os.environ.update({k: env[k] for k in ("XDG_CACHE_HOME",)})
        baseline = extract(args.baseline_rev, root / "baseline") if args.baseline_rev else None
        code = snapshot(root / "now")
        base_env = {**env, "XDG_CACHE_HOME": str(root / "baseline-cache")}
        print(
            f"cli_latency: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
            f"python {sys.version.split()[0]}; repeat {args.repeat}",
            flush=True,
        )
        print("advisor --version")
        show("now", timed(["--version"], env, code, args.repeat))
        print("advisor --help")
        help_now = timed(["--help"], env, code, args.repeat)
        if baseline is not None:
            help_base = timed(["--help"], base_env, baseline, args.repeat)
            show(f"baseline {args.baseline_rev}", help_base)
            show("now", help_now, help_base, "the baseline")
        else:
            show("now", help_now)
        uri = f"embedded:{root / 'kb'}"
        for size in (int(s) for s in args.sizes.split(",")):
            n = fill(uri, size)
            print(
                f"advisor recommend --benchmark resnet50 --scenario Offline, {n:,} observations "
                f"(embedded store)"
            )
            recommend_figures(uri, size, env, code, args.repeat)
            resident_figures(uri, env, code, args.repeat)
            if baseline is not None:
                against_baseline(uri, (env, code), (base_env, baseline), args)
            show_in_process(uri)
        if args.tile:
            show_tiled(uri, args.tile)
        print(json.dumps({"load_average_end": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
