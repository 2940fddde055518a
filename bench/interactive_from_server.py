"""How well Interactive throughput follows from Server (stack_advisor/advisor/estimate/scenario.py),
measured on the systems that published both: each system left out in turn, its Interactive result
predicted as its own Server result x the median Interactive/Server ratio of the other systems, with
the split-conformal 80% bounds of those ratios. Prints MAPE and interval coverage per benchmark.

    python bench/interactive_from_server.py --store embedded:PATH   (a store with v5.0+ imported)
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.scenario import conformal_bounds
from stack_advisor.store.registry import open_store


def pairs(index: EvidenceIndex, benchmark: str, metric: str) -> list[tuple[float, float]]:
    """(Interactive, Server) per-accelerator results of each closed system that ran both."""
    t = index.table
    want, have = t.scenario.code("Interactive"), t.scenario.code("Server")
    sel = (
        (t.bench_name.codes == t.bench_name.code(benchmark))
        & (t.metric.codes == t.metric.code(metric))
        & (t.division.codes == t.division.code("closed"))
        & np.isin(t.scenario.codes, [want, have])
        & (t.value > 0)
    )
    cells: dict[tuple[object, ...], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in np.flatnonzero(sel).tolist():
        key = (
            t.submitter.codes[r],
            index.accel[r],
            t.count[r],
            t.round.codes[r],
            t.system.codes[r],
            t.placement.codes[r],
            t.stack.codes[r],
        )
        cells[key][int(t.scenario.codes[r])].append(float(index.unit[r]))
    return [
        (float(np.median(c[want])), float(np.median(c[have])))
        for c in cells.values()
        if c.get(want) and c.get(have)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", required=True, help="embedded:PATH holding Interactive results")
    args = parser.parse_args()
    table = Advisor(open_store(args.store, create=False)).table()
    index = EvidenceIndex(table)
    keys = sorted(
        {(k[1], k[3]) for k in index.slices if k[2] == "Interactive" and k[4] == "closed"}
    )
    for benchmark, metric in keys:
        if not index.higher_is_better(
            next(k for k in index.slices if k[1] == benchmark and k[3] == metric)
        ):
            continue  # latencies are not estimated from Server
        found = pairs(index, benchmark, metric)
        if len(found) < 4:
            print(f"{benchmark} {metric}: {len(found)} systems ran both (too few to leave one out)")
            continue
        logs = np.log([a / s for a, s in found])
        apes, covered = [], []
        for i, (actual, server) in enumerate(found):
            rest = np.delete(logs, i)
            lo, hi = conformal_bounds(rest)
            apes.append(abs(server * math.exp(float(np.median(rest))) - actual) / actual * 100)
            covered.append(server * math.exp(lo) <= actual <= server * math.exp(hi))
        print(
            f"{benchmark} {metric}: {len(found)} systems ran both; Interactive/Server median "
            f"{math.exp(float(np.median(logs))):.3f}; leave-one-system-out MAPE "
            f"{np.mean(apes):.1f}% "
            f"(median {np.median(apes):.1f}%), 80% bounds cover {np.mean(covered) * 100:.0f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
