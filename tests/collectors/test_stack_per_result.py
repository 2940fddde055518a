"""The summary importer reads a system's framework field per result (issue 41 items 5 and 6):
real v5.1 rows carrying the framework fields the next round publishes, imported as a user's
table would be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.catalog import stack_class
from stack_advisor.collectors.importers.mlperf_summary import load_rows, read_summary
from tests.support.mlperf import require_shared_data

NEXT_ROUND = (
    "TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo "
    "mlperf-v6.0-dynamo-v0.8.0, vLLM CentML:mlperf-inf-mm-q3vl-v6.0"
)
AMD_PYTORCH = "PyTorch 2.10.0+git1f2e3d4, ROCm 7.2.2"


@pytest.fixture(scope="module")
def v51_rows() -> list[dict[str, Any]]:
    return load_rows(require_shared_data() / "summary_results_v5.1.json.gz")


def _import(tmp_path: Path, rows: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / "summary_results_v5.1.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    observations, report = read_summary(path)
    assert report.results == len(rows)
    return observations


def test_each_result_gets_the_runtime_that_ran_its_benchmark(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    nvidia = [
        {**r, "Software": NEXT_ROUND}
        for r in v51_rows
        if r["Submitter"] == "NVIDIA" and not r["inferred"] and r["Category"] == "closed"
    ]
    picked = [r for r in nvidia if r["Model"] == "llama2-70b-99"][:2]
    picked += [r for r in nvidia if r["Model"] in ("rgat", "stable-diffusion-xl")][:2]
    assert len(picked) == 4
    stacks = {
        (o.benchmark.name, o.stack.framework, o.stack.framework_version)
        for o in _import(tmp_path, picked)
    }
    assert ("llama2-70b-99", "tensorrt-llm", None) in stacks  # the branch is no version
    assert {s[1:] for s in stacks if s[0] != "llama2-70b-99"} == {("tensorrt", "10.14")}
    assert all(o.stack.raw == f"framework: {NEXT_ROUND}" for o in _import(tmp_path, picked))


def test_the_vendors_own_pytorch_stack_is_not_reference_code(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    amd = [
        {**r, "Software": AMD_PYTORCH}
        for r in v51_rows
        if r["Submitter"] == "AMD" and not r["inferred"] and r["Category"] == "closed"
    ][:2]
    partner = [{**r, "Submitter": "MangoBoost"} for r in amd]
    assert amd
    mine = _import(tmp_path, amd)
    assert {(o.stack.framework, o.stack.framework_version) for o in mine} == {("pytorch", "2.10.0")}
    assert all(o.stack.extra.get("implementation") == "vendor" for o in mine)
    cls = stack_class(mine[0].stack.framework, mine[0].stack.extra.get("implementation"))
    assert cls is not None and cls.software_class == "optimised"
    # the same text from another submitter is read by its framework alone
    assert all("implementation" not in o.stack.extra for o in _import(tmp_path, partner))
