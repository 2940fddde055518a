"""Wall time of the `advisor` command as a user meets it: `--version`, `--help`, and `recommend`
cold (the first call after a write: the store is read, the evidence calibrated, both persisted) and
warm (the persisted table and calibration loaded), plus a typo'd benchmark, each in a fresh process;
warm `recommend` over `--version` as a ratio (issue 43: at most 3x), and the warm run's CPU by
phase (imports, opening the store, the answer and the round drift within it).

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

RECOMMEND = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline"]
TYPO = ["recommend", "--benchmark", "resnet5O", "--scenario", "Offline"]


def run_cli(args: list[str], env: dict[str, str], code_root: Path) -> tuple[float, float, int]:
    """(wall s, cpu s, exit code) of one `advisor ARGS` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "stack_advisor.cli.main", *args],
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
cli.QUICK_EXIT = frozenset()  # the phases are printed after the command: no os._exit at its end
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


def main() -> None:
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
    args = parser.parse_args()
    if args.existing:
        existing(args.existing, args.cache, args.repeat)
        return

    with tempfile.TemporaryDirectory(prefix="cli-latency-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "ADVISOR_STARTER": "0",
        }
        # as installed: bytecode cached (pip compiles it at install), whatever this shell says
        for name in (
            "ADVISOR_STORE",
            "ADVISOR_API",
            "ADVISOR_TABLE_CACHE",
            "ADVISOR_CALIBRATION_CACHE",
            "PYTHONDONTWRITEBYTECODE",
        ):
            env.pop(name, None)
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
        version_now = timed(["--version"], env, code, args.repeat)
        show("now", version_now)
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
            store_args = [*RECOMMEND, "--store", uri]
            typo_args = [*TYPO, "--store", uri]
            colds = []
            for i in range(max(2, args.repeat // 2)):
                write_one(uri, size + i)
                colds.append(run_cli(store_args, env, code)[:2])
            cold = {"wall": summary([w for w, _ in colds]), "cpu": summary([c for _, c in colds])}
            show("cold: first call after a write (read+calibrate)", cold)
            warm = timed(store_args, env, code, args.repeat)
            reread = timed(store_args, {**env, "ADVISOR_TABLE_CACHE": "0"}, code, args.repeat)
            show("warm, table reread from the store", reread)
            show("warm, persisted table + calibration", warm, reread, "rereading the table")
            ratio(warm, version_now)
            show_phases(store_args, env, code, args.repeat)
            typo = timed(typo_args, env, code, args.repeat)
            show("typo'd benchmark, warm", typo)
            if baseline is not None:
                run_cli(store_args, base_env, baseline)  # the baseline fills its caches once
                base_warm = timed(store_args, base_env, baseline, args.repeat)
                base_typo = timed(typo_args, base_env, baseline, args.repeat)
                show(f"baseline {args.baseline_rev}: warm", base_warm)
                show(f"baseline {args.baseline_rev}: typo'd benchmark", base_typo)
                show("now: warm", warm, base_warm, "the baseline")
                show("now: typo'd benchmark", typo, base_typo, "the baseline")
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
        if args.tile:
            t = tiled_load(uri, args.tile)
            print(
                f"persisted table at {args.tile:,} rows (the store's table tiled, keys "
                "made unique): "
                f"write {t['write_s']:.2f} s, load {t['load_s']:.2f} s (median of 3), "
                f"file {t['file_mb']:.0f} MB"
            )
        print(json.dumps({"load_average_end": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
