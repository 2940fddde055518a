#!/usr/bin/env python
"""Print issue 27's goals, measured through the public paths.

1. Unresolved names: every MLPerf round in ../shared/data (Inference trees, the v5.1 summary
   table, Training trees) imported into a fresh embedded store with `advisor import ...`, then
   `advisor db stats --json`: accelerators still UNRESOLVED and their observations (CPU-only
   systems are not accelerators and are counted apart).
2. Summary vs raw: the v5.1 summary table and the v5.1 results tree read by their importers:
   results missing from the table, extra in it, the largest relative difference of a value.
3. By round: `advisor evaluate --protocol by-round --train-until v4.1 --test-round v5.1 --json`
   on that store, which asks `Advisor.predict` (queries written as users write them) for the
   v5.1 closed-division throughput results of benchmarks seen up to v4.1: % answered, and why
   the rest were refused.

    python bench/catalog_goals.py [--data ../shared/data] [--store embedded:PATH] [--skip-import]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def advisor(*args: str) -> Any:
    """Run the `advisor` CLI (this checkout first on the path); its JSON output."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "ADVISOR_STARTER": "0"}
    done = subprocess.run([sys.executable, "-m", "cli.main", *args, "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"advisor {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def import_everything(data: Path, store: str) -> dict[str, Any]:
    inference = sorted((data / "mlperf").glob("inference_v*.tar.gz"))
    training = sorted((data / "mlperf-training").glob("training_v*.tar.gz"))
    summaries = sorted((data / "mlperf").glob("summary_results_v*.json*"))
    out: dict[str, Any] = {}
    started = time.perf_counter()
    for path in inference:
        out[path.name] = advisor("import", "mlperf", str(path), "--store", store)["imported"]
    for path in training:
        out[path.name] = advisor("import", "mlperf-training", str(path), "--store", store)["imported"]
    for path in summaries:  # after its tree: adds nothing
        out[path.name] = advisor("import", "mlperf-summary", str(path), "--store", store)["imported"]
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def unresolved(store: str) -> dict[str, Any]:
    stats = advisor("db", "stats", "--store", store)
    bad = [a for a in stats["accelerators"] if not a["resolved"]]
    cpu = [a for a in bad if str(a["model"]).startswith("CPU ")]
    acc = [a for a in bad if not str(a["model"]).startswith("CPU ")]
    return {
        "observations": sum(stats["observations_by_source"].values()),
        "unresolved_accelerators": len(acc),
        "unresolved_accelerator_observations": sum(a["observations"] for a in acc),
        "unresolved_cpu_only_hosts": len(cpu),
        "names": sorted(((a["model"], a["observations"]) for a in acc), key=lambda x: -x[1]),
    }


def summary_vs_raw(data: Path) -> dict[str, Any]:
    from collectors.importers.mlperf import read_tree, to_observations
    from collectors.importers.mlperf_summary import read_summary
    from graph_schema.catalog.canonical import canonical_observation

    memo: dict[int, Any] = {}
    tree = read_tree(data / "mlperf" / "inference_v5.1.tar.gz")
    raw = {o.observation_key: o for o in (canonical_observation(to_observations(r)[0], memo) for r in tree.records)}
    observations, report = read_summary(data / "mlperf" / "summary_results_v5.1.json.gz")
    table = {o.observation_key: o for o in (canonical_observation(o, memo) for o in observations)}
    both = set(raw) & set(table)
    worst = max((abs(table[k].value - raw[k].value) / raw[k].value for k in both), default=0.0)
    return {"raw_results": len(raw), "table_results": len(table), "missing": len(set(raw) - set(table)),
            "extra": len(set(table) - set(raw)), "max_relative_difference": worst,
            "skipped_by_reason": dict(report.skipped_by_reason)}


def by_round(store: str) -> dict[str, Any]:
    report = advisor("evaluate", "--protocol", "by-round", "--train-until", "v4.1", "--test-round", "v5.1",
                     "--store", store)
    overall = report["overall"]
    asked = overall["predictions"] + overall["refused"]
    return {"asked": asked, "answered": overall["predictions"], "refused": overall["refused"],
            "answered_pct": 100.0 * overall["predictions"] / asked if asked else 0.0,
            "refused_reasons": report["refused_reasons"], "mape": overall.get("mape"),
            "unseen_benchmark_queries": report.get("unseen_benchmark_queries"),
            "unseen_benchmark_refused": report.get("unseen_benchmark_refused")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--store", help="embedded:PATH to import into (default: a fresh temporary one)")
    parser.add_argument("--skip-import", action="store_true", help="use --store as it is")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or f"embedded:{Path(tmp) / 'kb'}"
        if not args.skip_import:
            imported = import_everything(args.data, store)
            print("imported (new observations per source):", json.dumps(imported))
        names = unresolved(store)
        print(f"1. unresolved after importing all shared data: {names['unresolved_accelerators']} accelerators, "
              f"{names['unresolved_accelerator_observations']} of {names['observations']} observations "
              f"(CPU-only hosts unresolved: {names['unresolved_cpu_only_hosts']})")
        for model, count in names["names"]:
            print(f"   UNRESOLVED {model}: {count}")
        eq = summary_vs_raw(args.data)
        print(f"2. v5.1 summary table vs results tree: {eq['table_results']} vs {eq['raw_results']} results, "
              f"missing {eq['missing']}, extra {eq['extra']}, max relative difference "
              f"{eq['max_relative_difference'] * 100:.3f}%; table rows skipped: {eq['skipped_by_reason']}")
        rnd = by_round(store)
        print(f"3. by round (train <= v4.1, test v5.1 closed-division throughput of known benchmarks, "
              f"advisor evaluate -> predict): {rnd['answered']}/{rnd['asked']} answered "
              f"({rnd['answered_pct']:.1f}%), {rnd['refused']} refused; MAPE of the answered: "
              + ("n/a" if rnd["mape"] is None else f"{rnd['mape']:.1f}%"))
        for reason, count in sorted(rnd["refused_reasons"].items(), key=lambda x: -x[1]):
            print(f"   refused {count}: {reason}")
        print(f"   results of benchmarks never seen up to v4.1: {rnd['unseen_benchmark_queries']} asked, "
              f"{rnd['unseen_benchmark_refused']} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
