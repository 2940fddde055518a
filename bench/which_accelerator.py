"""Does the default view answer "which accelerator?" (issue 43)? For every (family, benchmark,
scenario) of the knowledge base, ``recommend`` with default settings: how many distinct
accelerators its top 5 names, against how many the knowledge base holds observed on that slice
(capped at 3). Prints each slice that misses and the share that meets the goal: top 5 names
>= 3 distinct accelerators wherever the slice holds >= 3.

    python bench/which_accelerator.py [--store URI] [--top 5] [--all]

Without --store: the default store (seeded with the starter knowledge base on first use).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import AdvisorError
from stack_advisor.store.registry import open_store

GOAL = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default=None)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="every row (the view before folding)")
    args = parser.parse_args()
    advisor = Advisor(open_store(args.store))
    index = advisor.knowledge().index
    prefixes = sorted({k[:3] for k in index.slices})
    met = asked = 0
    start = time.perf_counter()
    for family, benchmark, scenario in prefixes:
        held = {
            a
            for k, by in index.slices.items()
            if k[:3] == (family, benchmark, scenario)
            for a in by
        }
        keys = [k for k in index.slices if k[:3] == (family, benchmark, scenario)]
        hib = any(index.higher_is_better(k) for k in keys)
        fields = {"family": family, "benchmark": benchmark, "all": args.all}
        fields["objective"] = "throughput" if hib else "latency"
        if family == "mlperf-inference":
            fields["scenario"] = scenario
        try:
            answer = advisor.recommend(Workload.from_dict(fields), top=args.top)
        except AdvisorError as exc:
            print(f"{family}/{benchmark}/{scenario}: refused: {exc}")
            continue
        named = [r.candidate.accelerator for r in answer.recommendations]
        distinct = len(set(named))
        want = min(GOAL, len(held))
        asked += 1
        met += distinct >= want
        if distinct < want:
            print(
                f"MISS {family}/{benchmark}/{scenario}: {distinct} distinct of {len(held)} held: "
                f"{', '.join(named)}"
            )
    elapsed = time.perf_counter() - start
    print(
        f"slices meeting the goal (top {args.top} names >= min({GOAL}, held) accelerators): "
        f"{met}/{asked} ({elapsed:.1f} s)"
    )
    return 0 if met == asked else 1


if __name__ == "__main__":
    sys.exit(main())
