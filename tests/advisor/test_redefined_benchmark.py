"""A benchmark whose name stands for another workload since a round (the catalogue's
``redefined``: 3d-unet ran BraTS 2019 until v1.1, KiTS 2019 from v2.0): results of earlier rounds
are no evidence for it, through the public path (``Advisor.predict``) on rounds written as
published trees and imported by the real importer."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog.loading import load_catalog
from stack_advisor.collectors.importers.mlperf import import_mlperf
from stack_advisor.schema.errors import NotFound
from stack_advisor.schema.models import Benchmark, IngestBatch
from stack_advisor.store.registry import open_store
from tests.support.mlperf import result_path, system_json, write
from tests.support.samples import make_obs

TRT = ("TensorRT 8.2.0, CUDA 11.4", "TensorRT 8.2.0, CUDA 11.4, cuDNN 8.2.4, Driver 470.57.02")


def _offline(value: float) -> str:
    return (
        "MLPerf Results Summary\nSUT name : S\nScenario : Offline\nMode     : PerformanceOnly\n"
        f"Samples per second: {value}\nResult is : VALID\n"
    )


def _round(root: Path, name: str, systems: dict[str, tuple[str, float]]) -> Path:
    tree = root / f"inference_{name}"
    for system_id, (accelerator, value) in systems.items():
        write(tree, f"closed/Acme/systems/{system_id}.json", system_json(accelerator, 1, TRT))
        write(tree, result_path(system_id, "3d-unet-99", "Offline"), _offline(value))
    return tree


QUERY = {
    "accelerator": "NVIDIA A100-SXM-80GB",
    "accelerator_count": 1,
    "benchmark": "3d-unet-99",
    "scenario": "Offline",
    "metric": "samples_per_second",
    "as_of": "now",
}


def test_the_catalogue_says_when_3d_unet_was_redefined() -> None:
    entry = load_catalog().benchmark("mlperf-inference", "3d-unet-99")
    assert entry is not None and entry.redefined is not None
    assert entry.redefined.round == "v2.0" and "KiTS 2019" in entry.redefined.note


def test_results_before_the_redefinition_are_no_evidence(tmp_path: Path) -> None:
    old = {"a100": ("NVIDIA A100-SXM-80GB", 200.0), "a30": ("NVIDIA A30", 170.0)}
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        import_mlperf(_round(tmp_path, "v1.1", old), store)
        (refused,) = Advisor(store).predict([QUERY])
        assert refused.basis is Basis.UNSUPPORTED and refused.value is None
        assert "redefined" in (refused.reason or "") and "v2.0" in (refused.reason or "")

        new = {"a30n": ("NVIDIA A30", 10.0), "t4n": ("NVIDIA T4", 3.0)}
        import_mlperf(_round(tmp_path, "v2.0", new), store)
        (answer,) = Advisor(store).predict([QUERY])
        # the A100's own 200 samples/s measured BraTS: an observation of another workload
        assert answer.basis is not Basis.OBSERVED
        assert answer.value is None or answer.value < 100.0
        assert all("v1.1" not in r for r in answer.evidence.rounds)


def test_the_former_workload_is_not_offered_and_nothing_held_is_plainly_unknown(
    tmp_path: Path,
) -> None:
    with open_store(f"embedded:{tmp_path / 'empty'}") as store:
        (unknown,) = Advisor(store).predict([QUERY])
        assert "redefined" not in (unknown.reason or "")
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        old = {"a100": ("NVIDIA A100-SXM-80GB", 200.0)}
        import_mlperf(_round(tmp_path, "v1.1", old), store)
        advisor = Advisor(store)
        former = "3d-unet-99 (before v2.0)"
        assert former not in advisor.knowledge().index.benchmarks("mlperf-inference")
        (asked,) = advisor.predict([{**QUERY, "benchmark": former}])
        assert asked.basis is Basis.UNSUPPORTED and asked.value is None
        # the stacks an accelerator ran the benchmark with: none since it was redefined, said so
        with pytest.raises(NotFound, match=r"redefined, KiTS 2019 since v2\.0"):
            advisor.rank_stacks(
                benchmark="3d-unet-99", scenario="Offline", accelerator="NVIDIA A100-SXM-80GB"
            )


def test_a_result_with_no_round_is_of_todays_workload(tmp_path: Path) -> None:
    # a local run records no MLPerf round: it measured the benchmark as it is now
    local = make_obs(0, acc="NVIDIA A100-SXM-80GB", metric="samples_per_second")
    local = local.model_copy(
        update={
            "benchmark": Benchmark(
                family="mlperf-inference",
                name="3d-unet-99",
                parameters={"scenario": "Offline", "division": "closed"},
            ),
            "value": 50.0,
            "unit": "samples/s",
            "p10": None,
            "p90": None,
            "source_key": "local-3d-unet",
        }
    )
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        import_mlperf(_round(tmp_path, "v1.1", {"a100": ("NVIDIA A100-SXM-80GB", 200.0)}), store)
        store.ingest(IngestBatch(observations=[local]))
        (answer,) = Advisor(store).predict([QUERY])
        assert answer.basis is Basis.OBSERVED and answer.value == 50.0
