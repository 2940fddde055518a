"""Warm in-process ``Advisor.recommend`` time (answer memo off) for five workloads users ask on
the real knowledge base: LLM Interactive by latency, LLM Server under TTFT/TPOT limits, LLM Server,
vision Offline and an MLPerf Training budget. The median of three calls each, in ms.

    python bench/recommend_workloads.py STORE_FILE [CHECKOUT]

STORE_FILE: an embedded store holding the shared rounds (copied first: it is not written);
CHECKOUT: another checkout's root to time instead (e.g. a git worktree of an older commit), so
two runs on one machine give the ratio.
"""

import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

WORKLOADS: list[dict[str, Any]] = [
    {"benchmark": "llama2-70b-99", "scenario": "Interactive", "objective": "latency"},
    {"benchmark": "llama2-70b-99", "scenario": "Server", "max_ttft_ms": 2000, "max_tpot_ms": 200},
    {"benchmark": "llama3.1-8b", "scenario": "Server"},
    {"benchmark": "resnet50", "scenario": "Offline"},
    {"family": "mlperf-training", "benchmark": "retinanet", "hardware": {"max_count": 32}},
]


def main() -> None:
    if len(sys.argv) > 2:
        sys.path.insert(0, sys.argv[2])
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.store.registry import open_store

    tmp = tempfile.mkdtemp()
    shutil.copy(sys.argv[1], tmp + "/kb")
    with open_store(f"embedded:{tmp}/kb") as store:
        advisor = Advisor(store, memo_answers=False)
        advisor.warm()
        for workload in WORKLOADS:
            advisor.recommend(dict(workload), top=10)  # the first: the slice's caches
            times = []
            for _ in range(3):
                started = time.perf_counter()
                answer = advisor.recommend(dict(workload), top=10)
                times.append(time.perf_counter() - started)
            ms = statistics.median(times) * 1000
            print(
                f"{workload['benchmark']:14} {workload.get('scenario', 'budget'):12} {ms:6.0f} ms "
                f"({len(answer.recommendations)} rows)"
            )
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
