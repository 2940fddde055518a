"""An LLM serving round for the advisor's latency-limit tests: three Server results of
llama2-70b-99 with their p99 first-token and per-token latencies, one Offline-only system, all
on a stack that can run the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stack_advisor.collectors.importers.mlperf import import_mlperf
from tests.support.mlperf import SYSTEM, result_path, write

LLM_SERVER = """Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 8.5
Completed tokens per second: {tokens}
Result is : VALID
================================================
Additional Stats
================================================
99.00 percentile first token latency (ns)   : {ttft_ns}
99.00 percentile time to output token (ns)   : {tpot_ns}
"""


# a stack that can run Llama 2 70B on every part below (TensorRT-LLM's TensorRT >= 9.1; CUDA 12.8
# for Blackwell): the shared SYSTEM's TensorRT 8.6 / CUDA 12.0 cannot, and feasibility would exclude
# it
LLM_STACK = {
    "framework": "TensorRT 10.8.0, CUDA 12.8",
    "other_software_stack": "TensorRT 10.8.0, CUDA 12.8, cuDNN 9.7.0, Driver 570.86.15",
}


def serving_kb(store: Any, root: Path) -> None:
    """A small LLM serving round (inference_v9.9 under ``root``) imported into ``store``: three
    Server results with their first-token and per-token p99s, and one Offline-only system."""
    tree = root / "inference_v9.9"
    for name, model, tokens, ttft_ms, tpot_ms in (
        ("fast-but-slow-first-token", "H200-SXM-141GB", 30000, 2600, 150),
        ("steady", "H100-SXM5-80GB", 20000, 900, 120),
        ("slow-tokens", "AMD Instinct MI300X", 25000, 800, 260),
    ):
        write(
            tree,
            f"closed/Acme/systems/{name}.json",
            json.dumps(dict(SYSTEM, **LLM_STACK, accelerator_model_name=model)),
        )
        write(
            tree,
            result_path(name, "llama2-70b-99", "Server"),
            LLM_SERVER.format(tokens=tokens, ttft_ns=ttft_ms * 10**6, tpot_ns=tpot_ms * 10**6),
        )
    write(
        tree,
        "closed/Acme/systems/offline-only.json",
        json.dumps(dict(SYSTEM, **LLM_STACK, accelerator_model_name="B200-SXM-180GB")),
    )
    write(
        tree,
        result_path("offline-only", "llama2-70b-99", "Offline"),
        "Scenario : Offline\nTokens per second: 90000\nResult is : VALID\n",
    )
    summary = import_mlperf(tree, store)
    assert summary.failed == 0
