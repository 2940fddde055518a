"""Failures are classed at the source (issue 31): a stack failure (the stack is broken: known-bad)
against a harness limitation (the benchmark cannot run on this backend: "unsupported") and the
environment (a pip extra, a script or a device the node lacks). Only the first rules a stack out."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from stack_advisor.advisor.snapshot import known_failures
from stack_advisor.collectors.collect import collect
from stack_advisor.collectors.importers.results import documents_batch, load_documents
from stack_advisor.schema.models import FailureClass, FailureIn, failure_class
from stack_advisor.store.registry import open_store

LEGACY = Path(__file__).resolve().parents[2] / "data" / "results" / "h100-pi-full-cupy.json"


@pytest.mark.skipif(
    importlib.util.find_spec("cupy") is not None,
    reason="CuPy is installed here (a GPU node's image): it is not the missing backend",
)
def test_a_missing_backend_is_the_environment_not_the_stack() -> None:
    outcome = collect(["pi"], profile="quick", options={"backends": "cupy", "pis": ["gemm"]})
    (failure,) = [f for d in outcome.documents for f in d.failures]
    assert (failure.stage, failure.failure_class) == ("environment", FailureClass.ENVIRONMENT)
    assert "cupy" in failure.message and "not installed" in failure.message


def test_no_kernel_on_this_backend_is_a_harness_limitation() -> None:
    outcome = collect(["pi"], profile="quick", options={"backends": "numpy", "pis": ["conv2d"]})
    fails = [f for d in outcome.documents for f in d.failures]
    assert fails and all(
        f.failure_class is FailureClass.HARNESS and f.stage == "unsupported" for f in fails
    )
    assert all("numpy has no convolution primitive" in f.message for f in fails)


def test_documents_from_before_the_classes_are_classed_on_import(tmp_path: Path) -> None:
    raw = json.loads(LEGACY.read_text())
    legacy = [f for d in raw for f in d["failures"]]
    assert legacy  # the cupy run whose 36 "no convolution primitive" were stored as stack failures
    written = tmp_path / "legacy.json"
    written.write_text(
        json.dumps([{**d, "failures": [{**f, "stage": "run"} for f in d["failures"]]} for d in raw])
    )
    batch = documents_batch(load_documents(written))
    assert {f.stage for f in batch.failures} == {"unsupported"}
    with open_store(f"embedded:{tmp_path / 'kb'}") as kb:
        kb.ingest(batch)
        stored = kb.list_entities("failures")
    assert len(stored) == len(legacy)
    assert known_failures(stored) == frozenset()  # none rules a stack out
    # rows an older store holds (stage "run", exception class Unsupported) are classed when read
    assert failure_class("run", "Unsupported") is FailureClass.HARNESS
    assert failure_class("run", "RuntimeError") is FailureClass.STACK
    assert known_failures([{**stored[0], "stage": "run"}]) == frozenset()


def test_a_crash_stays_a_stack_failure() -> None:
    crash = FailureIn(
        stage="run", error_class="RuntimeError", message="CUDA error: illegal memory access"
    )
    assert crash.failure_class is FailureClass.STACK
    row = {
        "stage": "run",
        "error_class": "RuntimeError",
        "stack_id": "stk-1",
        "accelerator": "H100",
        "placement_id": "bare-metal|x|",
        "benchmark_id": "pi/gemm/1",
    }
    assert known_failures([row]) == frozenset({("stk-1", "H100", "bare-metal", "pi/gemm/1")})
