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
   v5.1 closed-division throughput results of benchmarks seen up to v4.1: % answered over all of
   them (the goal's figure), then the same split by what a row asks (accelerator systems, CPU-only
   systems, scenarios never recorded for the benchmark in training: counted apart, not dropped),
   MAPE and 80%-interval coverage per basis of the answered rows, and why the rest were refused;
   the answered share is printed over all of them and over those whose (benchmark, scenario) was
   seen in training (Interactive never was up to v4.1). Per kind of transfer and leave one
   accelerator out: ``bench/transfer_goals.py``.

    python bench/catalog_goals.py [--data ../shared/data] [--store embedded:PATH] [--skip-import]
                                   [--train-until v4.1]
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
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "ADVISOR_STARTER": "0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "stack_advisor.cli.main", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"advisor {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}"
        )
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
        out[path.name] = advisor("import", "mlperf-training", str(path), "--store", store)[
            "imported"
        ]
    for path in summaries:  # after its tree: adds nothing
        out[path.name] = advisor("import", "mlperf-summary", str(path), "--store", store)[
            "imported"
        ]
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
    from stack_advisor.catalog.canonical import canonical_observation
    from stack_advisor.collectors.importers.mlperf import read_tree, to_observations
    from stack_advisor.collectors.importers.mlperf_summary import read_summary

    memo: dict[int, Any] = {}
    tree = read_tree(data / "mlperf" / "inference_v5.1.tar.gz")
    raw = {
        o.observation_key: o
        for o in (canonical_observation(to_observations(r)[0], memo) for r in tree.records)
    }
    observations, report = read_summary(data / "mlperf" / "summary_results_v5.1.json.gz")
    table = {o.observation_key: o for o in (canonical_observation(o, memo) for o in observations)}
    both = set(raw) & set(table)
    worst = max((abs(table[k].value - raw[k].value) / raw[k].value for k in both), default=0.0)
    return {
        "raw_results": len(raw),
        "table_results": len(table),
        "missing": len(set(raw) - set(table)),
        "extra": len(set(table) - set(raw)),
        "max_relative_difference": worst,
        "skipped_by_reason": dict(report.skipped_by_reason),
    }


def by_round(store: str, train_until: str = "v4.1") -> dict[str, Any]:
    report = advisor(
        "evaluate",
        "--protocol",
        "by-round",
        "--train-until",
        train_until,
        "--test-round",
        "v5.1",
        "--store",
        store,
    )
    overall = report["overall"]
    asked = overall["predictions"] + overall["refused"]

    def part(s: dict[str, Any]) -> dict[str, Any]:
        n = s["predictions"] + s["refused"]
        return {
            "asked": n,
            "answered": s["predictions"],
            "answered_pct": 100.0 * s["predictions"] / n if n else 0.0,
            "mape": s.get("mape"),
            "interval_coverage": s.get("interval_coverage"),
        }

    return {
        "asked": asked,
        "answered": overall["predictions"],
        "refused": overall["refused"],
        "answered_pct": 100.0 * overall["predictions"] / asked if asked else 0.0,
        "refused_reasons": report["refused_reasons"],
        "mape": overall.get("mape"),
        "interval_coverage": overall.get("interval_coverage"),
        "by_kind": {k: part(v) for k, v in report.get("by_kind", {}).items()},
        "by_basis": {k: part(v) for k, v in report["by_basis"].items() if k != "unsupported"},
        "unseen_benchmark_queries": report.get("unseen_benchmark_queries"),
        "unseen_benchmark_refused": report.get("unseen_benchmark_refused"),
    }


def _pct(v: float | None, scale: float = 1.0) -> str:
    return "n/a" if v is None else f"{v * scale:.1f}%"


def print_by_round(rnd: dict[str, Any], train_until: str) -> None:
    print(
        f"3. by round (train <= {train_until}, test v5.1 closed-division throughput of "
        "known benchmarks, "
        f"advisor evaluate -> predict): {rnd['answered']}/{rnd['asked']} answered "
        f"({rnd['answered_pct']:.1f}%), {rnd['refused']} refused; MAPE of the answered "
        f"{_pct(rnd['mape'])}, "
        f"80% interval coverage {_pct(rnd['interval_coverage'], 100)}"
    )
    never = rnd["by_kind"].get("scenario never seen in training", {"asked": 0, "answered": 0})
    seen_asked, seen_answered = rnd["asked"] - never["asked"], rnd["answered"] - never["answered"]
    print(
        "   over results whose (benchmark, scenario) was seen in training: "
        f"{seen_answered}/{seen_asked} answered "
        f"({100.0 * seen_answered / seen_asked if seen_asked else 0.0:.1f}%); the other "
        f"{never['asked']} ask a "
        "scenario never recorded for their benchmark up to the training round (nothing "
        "to learn a factor from)"
    )
    for kind, p in sorted(rnd["by_kind"].items()):
        print(
            f"   {kind}: {p['answered']}/{p['asked']} answered ({p['answered_pct']:.1f}%), "
            f"MAPE {_pct(p['mape'])}, 80% interval coverage {_pct(p['interval_coverage'], 100)}"
        )
    for basis, p in sorted(rnd["by_basis"].items()):
        print(
            f"   answered {basis}: {p['answered']}, MAPE {_pct(p['mape'])}, "
            f"80% interval coverage {_pct(p['interval_coverage'], 100)}"
        )
    for reason, count in sorted(rnd["refused_reasons"].items(), key=lambda x: -x[1]):
        print(f"   refused {count}: {reason}")
    print(
        f"   results of benchmarks never seen up to {train_until} (not in the count above): "
        f"{rnd['unseen_benchmark_queries']} asked, {rnd['unseen_benchmark_refused']} refused"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--store", help="embedded:PATH to import into (default: a fresh temporary one)"
    )
    parser.add_argument("--skip-import", action="store_true", help="use --store as it is")
    parser.add_argument(
        "--train-until",
        action="append",
        default=None,
        help="last training round of goal 3 (repeatable; default v4.1)",
    )
    args = parser.parse_args()
    args.train_until = args.train_until or ["v4.1"]
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or f"embedded:{Path(tmp) / 'kb'}"
        if not args.skip_import:
            imported = import_everything(args.data, store)
            print("imported (new observations per source):", json.dumps(imported))
        names = unresolved(store)
        print(
            "1. unresolved after importing all shared data: "
            f"{names['unresolved_accelerators']} accelerators, "
            f"{names['unresolved_accelerator_observations']} of {names['observations']} "
            "observations "
            f"(CPU-only hosts unresolved: {names['unresolved_cpu_only_hosts']})"
        )
        for model, count in names["names"]:
            print(f"   UNRESOLVED {model}: {count}")
        eq = summary_vs_raw(args.data)
        print(
            f"2. v5.1 summary table vs results tree: {eq['table_results']} vs "
            f"{eq['raw_results']} results, "
            f"missing {eq['missing']}, extra {eq['extra']}, max relative difference "
            f"{eq['max_relative_difference'] * 100:.3f}%; table rows skipped: "
            f"{eq['skipped_by_reason']}"
        )
        for train_until in args.train_until:
            print_by_round(by_round(store, train_until), train_until)
    return 0


if __name__ == "__main__":
    sys.exit(main())
