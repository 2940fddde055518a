"""Real data: the sweep our collector ran on a lent H100 on 2026-11-26 (data/results), four
framework builds measured as installed. ``advisor compare sweep`` compares the same work through
each cell's framework (the PI backend is the stack under test, not the work), as a user asks
"is JAX's or PyTorch's GEMM faster on this node"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import advisor, isolate_cli

RESULTS = Path(__file__).resolve().parents[2] / "data" / "results"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def test_compare_sweep_sets_each_framework_build_against_the_baseline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = f"embedded:{tmp_path}/kb"
    files = [str(p) for p in sorted(RESULTS.glob("h100-20261126-sweep-stacks-*.json"))]
    assert len(files) == 2
    code, _out, err = advisor(capsys, "import", "results", *files, "--store", store)
    assert code == 0, err
    code, out, err = advisor(capsys, "compare", "sweep", "h100-stacks", "--store", store, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["baseline"] == "torch-installed" and report["host"]
    fp16 = {
        r["cell"]: r
        for r in report["ratios"]
        if r["benchmark"] == "pi/gemm" and "dtype=fp16," in r["parameters"]
    }
    assert set(fp16) == {"jax-installed", "cupy-14", "cupy-13"}  # the same GEMM through each build
    assert all("backend=" not in r["parameters"] for r in fp16.values())
    assert all(r["repeats"] == r["baseline_repeats"] == 4 for r in fp16.values())
    assert (
        fp16["cupy-13"]["ratio"] < 0.5 and fp16["cupy-13"]["verdict"] == "slower"
    )  # CuPy 13's fp16 GEMM
    assert fp16["cupy-14"]["low"] <= 1.0 <= fp16["cupy-14"]["high"]  # CuPy 14 matches PyTorch's
    # LoadGen and the CNN benchmark ran in the PyTorch cell only: nothing to set against it
    assert not [r for r in report["ratios"] if not r["benchmark"].startswith("pi/")]
