"""How many names in the shared MLPerf data the catalogue resolves.

Reads the archives themselves (every system description, every result directory; compliance
runs skipped): every inference_v*.tar.gz and training_v*.tar.gz there is (v1.1–v5.1, training
v4.1/v5.0), plus the published summary tables (summary_results_v*.json.gz: their Accelerator,
Processor, Model and Scenario fields). Prints, per kind (accelerators, hosts of CPU-only systems,
benchmarks, scenarios), the distinct raw names, how many canonical entities they resolve to and
which stay unresolved (goal: none); then the catalogue's size and its figures' coverage;
``--json`` for the full report.

    python bench/catalog_coverage.py [MLPERF_DIR] [--training DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.catalog import PRECISIONS, load_catalog, resolve_framework_name
from stack_advisor.catalog.coverage import coverage_report, merge, scan_names, scan_summary
from stack_advisor.catalog.stack_text import parse_framework

ROOT = Path(__file__).resolve().parents[1]


def catalogue_figures() -> dict[str, object]:
    """How many catalogue entries carry each figure (the rest are not published, left empty)."""
    accs = list(load_catalog().accelerators.values())
    with_figure = {p: sum(getattr(a.peak_tflops, p) is not None for a in accs) for p in PRECISIONS}
    for name in (
        "memory_gb",
        "memory_bw_gbs",
        "tdp_w",
        "interconnect_gbs",
        "launch_year",
        "counted_as",
    ):
        with_figure[name] = sum(getattr(a, name) is not None for a in accs)
    return {
        "accelerators": len(accs),
        "families": len({a.family for a in accs}),
        "vendors": len({a.vendor for a in accs}),
        "with_figure": with_figure,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "mlperf_dir", nargs="?", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf"
    )
    parser.add_argument(
        "--training", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf-training"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    archives = sorted(args.mlperf_dir.glob("inference_v*.tar.gz")) + sorted(
        args.training.glob("training_v*.tar.gz")
    )
    if not archives:
        print(
            f"no inference_v*.tar.gz / training_v*.tar.gz under {args.mlperf_dir} or "
            f"{args.training}",
            file=sys.stderr,
        )
        return 1
    summaries = sorted(args.mlperf_dir.glob("summary_results_v*.json*"))
    started = time.perf_counter()
    names = merge(scan_names(archives), scan_summary(summaries))
    report = coverage_report(names)
    parsed = {
        f: parse_framework(f)[0]
        for f in names.frameworks
        if f.lower() not in ("n/a", "na", "none", "-")
    }
    report["frameworks"] = {
        "raw_names": len(parsed),
        "canonical": len(
            {
                resolve_framework_name(n).id
                for n in parsed.values()
                if n and resolve_framework_name(n).resolved
            }
        ),
        "unresolved": sorted(
            f for f, n in parsed.items() if n and not resolve_framework_name(n).resolved
        ),
    }
    report["catalogue"] = catalogue_figures()
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("archives:", ", ".join(Path(s).name for s in report["sources"]))
    acc = report["accelerators"]
    print(
        f"accelerators: {acc['raw_names']} distinct raw names -> {acc['canonical']} "
        "canonical accelerators "
        f"({acc['boards']} boards; MIG/vGPU slices kept apart), "
        f"{len(acc['mixed_systems'])} mixed systems "
        f"parsed into parts, {len(acc['unresolved'])} unresolved {acc['unresolved']}"
    )
    for kind in ("cpu_only_hosts", "benchmarks", "scenarios", "frameworks"):
        part = report[kind]
        print(
            f"{kind.replace('_', ' ')}: {part['raw_names']} distinct raw names -> "
            f"{part['canonical']} canonical, "
            f"{len(part['unresolved'])} unresolved {part['unresolved']}"
        )
    cat = report["catalogue"]
    print(
        f"catalogue: {cat['accelerators']} accelerators ({cat['families']} families, "
        f"{cat['vendors']} vendors); "
        "entries with a figure: " + ", ".join(f"{k} {v}" for k, v in cat["with_figure"].items())
    )
    print(f"({report['seconds']} s)")
    return (
        0
        if not any(
            report[k]["unresolved"]
            for k in ("accelerators", "cpu_only_hosts", "benchmarks", "scenarios", "frameworks")
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
