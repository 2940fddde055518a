"""Helpers shared by the MLPerf importer tests: where the shared data is, small trees to break."""

from __future__ import annotations

import json
import os
import tarfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from stack_advisor.collectors.importers.mlperf import ParsedTree
    from stack_advisor.collectors.importers.mlperf_training import TrainingTree

REPO = Path(__file__).resolve().parents[2]
MLPERF_DIR = Path(os.environ.get("ADVISOR_MLPERF_DATA", REPO.parent / "shared" / "data" / "mlperf"))
ROUNDS = ("v1.1", "v2.0", "v2.1", "v3.0", "v4.1")
REFERENCE_CSV = MLPERF_DIR / "observations_v1.1-v3.0.csv"
# Reference tabulations of the shared rounds (same columns), and how many rows each holds.
REFERENCE_CSVS = {"observations_v1.1-v3.0.csv": 10_001, "observations_v4.1.csv": 937}


TRAINING_DIR = MLPERF_DIR.parent / "mlperf-training"
TRAINING_ARCHIVE = TRAINING_DIR / "training_v4.1.tar.gz"


def require_training_data() -> Path:
    """The shared MLPerf Training archive; skipped where absent, except under CI."""
    if not TRAINING_ARCHIVE.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"shared MLPerf Training data missing at {TRAINING_DIR}")
        pytest.skip(f"shared MLPerf Training data not found at {TRAINING_DIR}")
    return TRAINING_ARCHIVE


def require_shared_data() -> Path:
    """The shared MLPerf directory; skipped where it is absent, except under CI where it must be."""
    if not REFERENCE_CSV.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"shared MLPerf data missing at {MLPERF_DIR} (CI has it beside the clone)")
        pytest.skip(f"shared MLPerf data not found at {MLPERF_DIR}")
    return MLPERF_DIR


# Each shared round parsed once per test session (seconds each; the importer tests, the snapshot's
# provenance test and the reference comparisons read the same archives). Read them only: the
# trees are shared by every test that asks.


@cache
def shared_inference_tree(round_name: str) -> ParsedTree:
    """The shared inference round ``round_name`` (``inference_<round>.tar.gz``), parsed."""
    from stack_advisor.collectors.importers.mlperf import read_tree

    return read_tree(require_shared_data() / f"inference_{round_name}.tar.gz")


@cache
def shared_training_tree(round_name: str) -> TrainingTree:
    """The shared training round ``round_name`` (``training_<round>.tar.gz``), parsed."""
    from stack_advisor.collectors.importers.mlperf_training import read_training_tree

    archive = require_training_data().with_name(f"training_{round_name}.tar.gz")
    if not archive.exists():
        pytest.skip(f"{archive} not found")
    return read_training_tree(archive)


SUMMARY_OFFLINE = """================================================
MLPerf Results Summary
================================================
SUT name : LWIS_Server
Scenario : Offline
Mode     : PerformanceOnly
Samples per second: 1234.5
Result is : VALID
  Min duration satisfied : Yes
  Min queries satisfied : Yes

================================================
Additional Stats
================================================
Min latency (ns)                : 1000
"""

SUMMARY_SINGLESTREAM = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : SingleStream
Mode     : PerformanceOnly
90th percentile latency (ns) : 12525681
Result is : VALID
Early Stopping Result:
 * Processed at least 64 queries (48934).
 * Early stopping 90th percentile estimate: 12529764
 * Early stopping 99th percentile estimate: 12873341

================================================
Additional Stats
================================================
QPS w/ loadgen overhead         : 81.55
"""

SYSTEM = {
    "accelerator_model_name": "NVIDIA A100-SXM-80GB",
    "accelerators_per_node": 8,
    "number_of_nodes": 1,
    "host_processor_model_name": "AMD EPYC 7742",
    "host_processors_per_node": 2,
    "framework": "TensorRT 8.6.0, CUDA 12.0",
    "other_software_stack": "TensorRT 8.6.0, CUDA 12.0, cuDNN 8.8.0, Driver 525.85.12, DALI 1.17.0",
    "operating_system": "Ubuntu 20.04.4",
    "system_name": "Test DGX A100 (8x A100-SXM-80GB, TensorRT)",
    "system_type": "datacenter",
}


def system_json(
    accelerator: str, count: int, stack: tuple[str, str], cpu: str = "AMD EPYC 7742"
) -> str:
    """A published system description: ``count`` x ``accelerator`` on one node, ``stack`` as
    (framework, other software) free text."""
    return json.dumps(
        {
            "accelerator_model_name": accelerator,
            "accelerators_per_node": count,
            "number_of_nodes": 1,
            "host_processor_model_name": cpu,
            "host_processors_per_node": 2,
            "framework": stack[0],
            "other_software_stack": stack[1],
            "operating_system": "Ubuntu 22.04",
            "system_name": f"{count}x {accelerator}",
            "system_type": "datacenter",
        }
    )


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def result_path(
    system: str, benchmark: str, scenario: str, division: str = "closed", submitter: str = "Acme"
) -> str:
    return (
        f"{division}/{submitter}/results/{system}/{benchmark}/{scenario}"
        "/performance/run_1/mlperf_log_summary.txt"
    )


def small_tree(root: Path) -> Path:
    """A round directory with two good results and a compliance, an accuracy and a ranging run."""
    tree = root / "inference_v9.9"
    write(tree, "closed/Acme/systems/box8.json", json.dumps(SYSTEM))
    write(tree, result_path("box8", "resnet50", "Offline"), SUMMARY_OFFLINE)
    write(tree, result_path("box8", "resnet50", "SingleStream"), SUMMARY_SINGLESTREAM)
    write(
        tree,
        "closed/Acme/compliance/box8/resnet50/Offline/TEST01/performance/run_1/mlperf_log_summary.txt",
        SUMMARY_OFFLINE,
    )
    write(
        tree,
        "closed/Acme/results/box8/resnet50/Offline/accuracy/mlperf_log_summary.txt",
        SUMMARY_OFFLINE,
    )
    write(
        tree,
        "closed/Acme/results/box8/resnet50/Offline/performance/ranging/mlperf_log_summary.txt",
        SUMMARY_OFFLINE,
    )
    return tree


def tar_gz(tree: Path, out: Path, fmt: int = tarfile.GNU_FORMAT) -> Path:
    with tarfile.open(out, "w:gz", format=fmt) as archive:
        archive.add(tree, arcname=tree.name)
    return out


TRAINING_SYSTEM = {
    "submitter": "Acme",
    "division": "closed",
    "system_name": "Acme 2x8 H100",
    "number_of_nodes": "2",
    "accelerators_per_node": "8",
    "accelerator_model_name": "NVIDIA H100-SXM5-80GB",
    "accelerator_interconnect": "NVLINK Gen4 900 GB/s",
    "host_networking": "8x ConnectX-7 IB NDR 400Gb/s",
    "host_processor_model_name": "Intel Xeon 8480",
    "framework": "PyTorch NVIDIA Release 24.09",
    "other_software_stack": {"cuda_version": "12.6", "cuda_driver_version": "560.35.03"},
    "a_key_from_a_later_round": [1, 2],
}


def mllog(start_ms: int, minutes: float, status: str | None = "success", batch: int = 768) -> str:
    """MLLOG lines of one run as result files hold them: rank prefixes, noise, a broken line."""

    def line(key: str, t: int, value: Any = None, **metadata: Any) -> str:
        event = {
            "namespace": "",
            "time_ms": t,
            "event_type": "POINT_IN_TIME",
            "key": key,
            "value": value,
            "metadata": {"file": "train.py", **metadata},
        }
        return ":::MLLOG " + json.dumps(event)

    stop = start_ms + int(minutes * 60_000)
    lines = [
        "some launcher output",
        " 0: " + line("submission_benchmark", start_ms - 10, "bert"),
        " 0: " + line("global_batch_size", start_ms - 5, batch),
        line("a_key_nobody_knows", start_ms - 4, {"x": 1}),
        " 1: " + line("run_start", start_ms),
        ":::MLLOG {not json",
        line("eval_accuracy", stop - 1, 0.72),
    ]
    if status is not None:
        lines.append(" 0: " + line("run_stop", stop, status=status))
    return "\n".join(lines) + "\n"


def small_training_tree(root: Path) -> Path:
    """A Training round directory: one 2-node system, five good bert runs, an aborted one, an
    unfinished one, a file without MLLOG and a run of a system with no description."""
    tree = root / "training_v9.9"
    write(tree, "Acme/systems/h100x16.json", json.dumps(TRAINING_SYSTEM))
    for i, minutes in enumerate([10.0, 12.0, 11.0, 30.0, 9.0]):
        write(
            tree,
            f"Acme/results/h100x16/bert/result_{i}.txt",
            mllog(1_700_000_000_000 + i * 10**7, minutes),
        )
    write(
        tree,
        "Acme/results/h100x16/bert/result_5.txt",
        mllog(1_700_100_000_000, 50.0, status="aborted"),
    )
    write(
        tree, "Acme/results/h100x16/bert/result_6.txt", mllog(1_700_200_000_000, 5.0, status=None)
    )
    write(tree, "Acme/results/h100x16/bert/result_7.txt", "no mllog here\n")
    write(tree, "Acme/results/ghost/bert/result_0.txt", mllog(1_700_000_000_000, 3.0))
    return tree
