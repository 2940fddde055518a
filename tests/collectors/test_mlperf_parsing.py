"""MLPerf importer: LoadGen summaries, stack text, placement, and trees that do not fit."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from stack_advisor.catalog.stack_text import (
    classify_placement,
    implementation_of,
    merge_stack_texts,
    parse_framework,
)
from stack_advisor.collectors.importers.loadgen_summary import (
    parse_summary,
    published_headline,
    token_latency_metrics,
)
from stack_advisor.collectors.importers.mlperf import read_tree, to_observation, to_observations
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind, SourceKind
from tests.support.mlperf import (
    SUMMARY_OFFLINE,
    SUMMARY_SINGLESTREAM,
    SYSTEM,
    result_path,
    small_tree,
    tar_gz,
    write,
)

# ---- LoadGen summary formats -------------------------------------------------------------------


def test_singlestream_prefers_the_early_stopping_estimate() -> None:
    head = published_headline(parse_summary(SUMMARY_SINGLESTREAM))
    assert (head.metric, head.source_line, head.valid) == (
        "p90_latency_ms",
        "Early stopping 90th percentile estimate",
        True,
    )
    assert head.value == pytest.approx(12.529764)


def test_singlestream_without_early_stopping_uses_the_90th_percentile() -> None:
    text = (
        "Scenario : SingleStream\nMode : PerformanceOnly\n90th percentile latency (ns) : "
        "286313\nResult is : VALID\n"
    )
    head = published_headline(parse_summary(text))
    assert head.source_line == "90th percentile latency (ns)"
    assert head.value == pytest.approx(0.286313)


def test_later_loadgen_names_90_0th_percentile_and_completed_samples() -> None:
    single = (
        "Scenario : SingleStream\n90.0th percentile latency (ns) : 5000000\nResult is : VALID\n"
    )
    assert published_headline(parse_summary(single)).value == pytest.approx(5.0)
    server = (
        "Scenario : Server\nMode : PerformanceOnly\nCompleted samples per second : "
        "1337.82\nResult is : VALID\n"
        "=====\nAdditional Stats\n=====\nScheduled samples per second : 1339.5\n"
    )
    head = published_headline(parse_summary(server))
    assert (head.metric, head.value, head.source_line) == (
        "queries_per_second",
        1337.82,
        "Completed samples per second",
    )


def test_interactive_scenario_reads_like_server() -> None:
    text = "Scenario : Interactive\nCompleted tokens per second : 2100.5\nResult is : VALID\n"
    head = published_headline(parse_summary(text))
    assert (head.metric, head.value) == ("tokens_per_second", 2100.5)


def test_older_server_result_is_scheduled_samples() -> None:
    server = "Scenario : Server\nScheduled samples per second : 25993.5\nResult is : INVALID\n"
    head = published_headline(parse_summary(server))
    assert (head.metric, head.value, head.valid) == ("queries_per_second", 25993.5, False)


def test_llm_offline_reports_tokens_per_second() -> None:
    text = (
        "Scenario : Offline\nSamples per second: 10.5\nTokens per second: 2950.1\nResult "
        "is : VALID\n"
    )
    head = published_headline(parse_summary(text))
    assert (head.metric, head.value) == ("tokens_per_second", 2950.1)


def test_multistream_uses_the_99th_percentile_estimate() -> None:
    text = (
        "Scenario : MultiStream\n99th percentile latency (ns) : 9000000\nResult is : VALID\n"
        " * Early stopping 99th percentile estimate: 9100000\n"
    )
    head = published_headline(parse_summary(text))
    assert (head.metric, head.value) == ("p99_latency_ms", pytest.approx(9.1))


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("garbage without any lines", "no 'Scenario :' line"),
        ("Scenario : Warp\n", "unknown scenario 'Warp'"),
        (
            "Scenario : Offline\nResult is : VALID\n",
            "none of the result figures 'tokens_per_second', 'samples_per_second'",
        ),
        ("Scenario : Offline\nSamples per second: lots\n", "'lots' is not a number"),
    ],
)
def test_malformed_summaries_say_why(text: str, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        published_headline(parse_summary(text))


# ---- stack text --------------------------------------------------------------------------------


def test_stack_text_versions_kept_as_published() -> None:
    parsed = merge_stack_texts(
        "TensorRT 8.6, CUDA 12.0",
        "TensorRT 8.6.0, CUDA 12.0, cuDNN 8.8.0, Driver 5252.85.12, DALI 1.17.0",
    )
    assert parsed.components["tensorrt"] == "8.6.0"  # the detailed field wins; 8.6 is no conflict
    assert parsed.components["driver"] == "5252.85.12"  # typo kept
    assert parsed.components["dali"] == "1.17.0"
    assert parsed.conflicts == []


def test_stack_text_conflict_is_noted() -> None:
    parsed = merge_stack_texts(
        "TensorRT 8.4.0, CUDA 11.6", "TensorRT 8.4.0, CUDA 11.7, Driver 515.48.07"
    )
    assert parsed.components["cuda"] == "11.7"
    assert parsed.conflicts == ["cuda: framework=11.6 stack=11.7"]


def test_stack_text_json_list_and_colon_forms() -> None:
    parsed = merge_stack_texts(
        "NGC MLPerf v3.0.2", '[{"cuda_version": "12.0", "cuda_driver_version": "525.85.12"}]'
    )
    assert (parsed.components["cuda"], parsed.components["driver"]) == ("12.0", "525.85.12")
    parsed = merge_stack_texts(
        "TensorRT v8.5.2.2", {"note": "Python: 3.10.6, GCC-11.3.0, CUDA: 11.8, cuDNN: 8.6.0"}
    )
    assert parsed.components == {
        "tensorrt": "8.5.2.2",
        "cuda": "11.8",
        "cudnn": "8.6.0",
        "python": "3.10.6",
        "gcc": "11.3.0",
    }


def test_stack_text_does_not_read_versions_into_lookalike_words() -> None:
    parsed = merge_stack_texts(
        "22.08 Jetson CUDA-X AI Developer Preview, TFLite v2.7.1 (ruy)",
        "GCC 9.4.0; Python 3.8.10; OpenCL driver OpenCL 2.1 v1.g6p0-01eac0",
    )
    assert "driver" not in parsed.components and "cuda" not in parsed.components


@pytest.mark.parametrize(
    "text, expected",
    [
        ("TensorRT 8.0.1.6, CUDA 11.3", ("tensorrt", "8.0.1.6")),
        ("Onnxruntime v1.14.0 with GPU support", ("onnxruntime", "1.14.0")),
        ("ONNX runtime v1.12 with GPU support", ("onnxruntime", "1.12")),
        ("Pytorch v1.13.1 with GPU support", ("pytorch", "1.13.1")),
        ("Triton 2.30.0 , CUDA 12.0", ("triton", "2.30.0")),
        ("TFLite vmaster (xnnpack)", ("tflite", None)),
        ("Qualcomm Cloud AI SDK v1.7.1", ("qualcomm-cloud-ai-sdk", "1.7.1")),
        ("SAPEON SDK v0.52", ("sapeon-sdk", "0.52")),
        ("", (None, None)),
    ],
)
def test_framework_name_and_version(text: str, expected: tuple[str | None, str | None]) -> None:
    assert parse_framework(text) == expected


# ---- placement ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, kind, basis",
    [
        (
            {"system_name": "Dell PowerEdge R750xa, VMware vSphere 8.0.1 (2x H100-80C, TensorRT)"},
            "vgpu",
            "explicit",
        ),
        (
            {"accelerator_model_name": "NVIDIA A10-24Q", "system_name": "NV72ads_A10_v5 on Azure"},
            "vgpu",
            "explicit",
        ),
        (
            {"system_name": "R7525 (3x GRID A100-40C)", "sw_notes": "VMware Submission"},
            "vgpu",
            "explicit",
        ),
        ({"sw_notes": "GPUs passed through with VMware DirectPath I/O"}, "passthrough", "explicit"),
        ({"operating_system": "Ubuntu 22.04 on VMware ESXi 8.0"}, "unknown", "hypervisor-unstated"),
        ({"system_name": "Azure NC96ads_A100_v4"}, "unknown", "cloud-unstated"),
        (
            {"hw_notes": "QuantaGrid D54Q-2U", "system_name": "Cloud-ready server"},
            "bare-metal",
            "default-no-mention",
        ),
        ({"system_name": "NVIDIA DGX A100 (8x A100-SXM-80GB)"}, "bare-metal", "default-no-mention"),
    ],
)
def test_placement_from_evidence(fields: dict[str, str], kind: str, basis: str) -> None:
    result = classify_placement(fields)
    assert (result.kind.value, result.basis) == (kind, basis)
    if kind != "bare-metal":
        assert result.evidence, "the evidence must be recorded"


def test_vgpu_placement_names_profile_and_hypervisor() -> None:
    result = classify_placement(
        {"system_name": "Dell PowerEdge XE8545, VMware vSphere 8.0.1 (4x A100-SXM-80C, TensorRT)"}
    )
    assert (result.vgpu_profile, result.hypervisor) == ("A100-SXM-80C", "VMware vSphere 8.0.1")


# ---- trees -------------------------------------------------------------------------------------


def test_small_tree_two_results_compliance_and_accuracy_ignored(tmp_path: Path) -> None:
    tree = read_tree(small_tree(tmp_path))
    assert tree.round == "v9.9"
    assert sorted((r.benchmark, r.scenario, r.metric) for r in tree.records) == [
        ("resnet50", "Offline", "samples_per_second"),
        ("resnet50", "SingleStream", "p90_latency_ms"),
    ]
    assert tree.issues == []
    assert tree.ignored == 3
    obs = to_observation(next(r for r in tree.records if r.scenario == "Offline"))
    assert obs.benchmark.family == "mlperf-inference"
    assert obs.benchmark.parameters == {"scenario": "Offline", "division": "closed"}
    assert obs.source_key == "v9.9/closed/Acme/box8"
    assert obs.provenance.kind is SourceKind.PUBLISHED
    assert obs.provenance.source == "mlperf-inference"
    assert obs.provenance.details["round"] == "v9.9"
    assert obs.provenance.details["file"] == result_path("box8", "resnet50", "Offline")
    # the catalogue's name; the published one is kept as provenance
    assert (obs.accelerator.model, obs.accelerator.count, obs.accelerator.vendor) == (
        "A100-SXM4-80GB",
        8,
        "nvidia",
    )
    assert obs.provenance.details["accelerator_raw"] == "NVIDIA A100-SXM-80GB"
    assert (obs.stack.cuda, obs.stack.cudnn, obs.stack.tensorrt, obs.stack.driver) == (
        "12.0",
        "8.8.0",
        "8.6.0",
        "525.85.12",
    )
    assert obs.stack.raw and "DALI 1.17.0" in obs.stack.raw
    assert (
        obs.host is not None
        and obs.host.name == "mlperf:Acme/box8"
        and obs.host.cpu_model == "AMD EPYC 7742"
    )
    assert obs.placement.kind is PlacementKind.BARE_METAL
    latency = to_observation(next(r for r in tree.records if r.scenario == "SingleStream"))
    assert latency.higher_is_better is False and latency.unit == "ms"


def test_tarball_with_long_names_reads_like_the_directory(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "src")
    long_system = "box8-" + "x" * 120  # forces GNU long-name / pax records in the archive
    write(root, f"closed/Acme/systems/{long_system}.json", json.dumps(SYSTEM))
    write(
        root,
        result_path(long_system, "bert-99", "Server"),
        "Scenario : Server\nMode : PerformanceOnly\nScheduled samples per second : "
        "77.5\nResult is : VALID\n",
    )
    from_dir = read_tree(root)
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        archive = tar_gz(root, tmp_path / f"inference_v9.9_{fmt}.tar.gz", fmt)
        from_tar = read_tree(archive)
        assert [(r.system_id, r.benchmark, r.scenario, r.value) for r in from_tar.records] == [
            (r.system_id, r.benchmark, r.scenario, r.value) for r in from_dir.records
        ]
    assert any(r.system_id == long_system for r in from_dir.records)


def test_cpu_only_system_convention(tmp_path: Path) -> None:
    tree = tmp_path / "inference_v9.9"
    system = dict(
        SYSTEM,
        accelerator_model_name="N/A",
        accelerators_per_node="0",
        host_processor_model_name="Intel(R) Xeon(R) Platinum 8380",
        host_processors_per_node=2,
        framework="OpenVINO 2022.1",
        other_software_stack="Python 3.8",
    )
    write(tree, "closed/Acme/systems/cpu.json", json.dumps(system))
    write(tree, result_path("cpu", "resnet50", "Offline"), SUMMARY_OFFLINE)
    obs = to_observation(read_tree(tree).records[0])
    assert obs.accelerator.model == "CPU Intel Xeon Platinum 8380"
    assert obs.provenance.details["accelerator_raw"] == "CPU Intel(R) Xeon(R) Platinum 8380"
    assert (obs.accelerator.vendor, obs.accelerator.count) == ("cpu", 2)
    assert (obs.stack.framework, obs.stack.framework_version, obs.stack.python) == (
        "openvino",
        "2022.1",
        "3.8",
    )


def test_heterogeneous_multi_node_accelerator_count(tmp_path: Path) -> None:
    tree = tmp_path / "inference_v9.9"
    system = dict(
        SYSTEM,
        accelerator_model_name="2 Nodes: NVIDIA A100-SXM-80GBx8, 4 Nodes: NVIDIA A30x4",
        accelerators_per_node="(8,4)",
        number_of_nodes=6,
    )
    write(tree, "network/Acme/systems/mix.json", json.dumps(system))
    write(tree, result_path("mix", "resnet50", "Offline", division="network"), SUMMARY_OFFLINE)
    record = read_tree(tree).records[0]
    assert (record.accelerator_count, record.nodes) == (32, 6)
    assert to_observation(record).provenance.details["accelerators_per_node"] == "(8,4)"


def test_broken_files_are_reported_skipped_and_the_import_goes_on(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    write(tree, "closed/Acme/systems/badjson.json", "{not json")
    write(tree, result_path("badjson", "resnet50", "Offline"), SUMMARY_OFFLINE)
    write(
        tree, result_path("box8", "bert-99", "Offline"), "Scenario : Offline\nResult is : VALID\n"
    )
    write(tree, result_path("box8", "rnnt", "Offline"), b"\xff\xfe\x00garbage")
    write(tree, result_path("ghost", "resnet50", "Offline"), SUMMARY_OFFLINE)
    write(tree, result_path("box8", "retinanet", "offline"), SUMMARY_SINGLESTREAM)  # inferred copy
    write(
        tree,
        "closed/Acme/results/box8/resnet50/Server/Server/performance/run_1/mlperf_log_summary.txt",
        SUMMARY_OFFLINE,
    )
    write(tree, "closed/Acme/systems/list.json", "[1, 2]")

    parsed = read_tree(tree)
    assert len(parsed.records) == 2  # the good ones survive
    got = {(i.path, i.outcome, i.category) for i in parsed.issues}
    assert got == {
        ("closed/Acme/systems/badjson.json", "failed", "malformed-system"),
        ("closed/Acme/systems/list.json", "failed", "malformed-system"),
        (result_path("badjson", "resnet50", "Offline"), "failed", "malformed-system"),
        (result_path("box8", "bert-99", "Offline"), "failed", "malformed-summary"),
        (result_path("box8", "rnnt", "Offline"), "failed", "malformed-summary"),
        (result_path("ghost", "resnet50", "Offline"), "failed", "missing-system"),
        (result_path("box8", "retinanet", "offline"), "skipped", "inferred-scenario"),
        (
            "closed/Acme/results/box8/resnet50/Server/Server/performance/run_1/mlperf_log_summary.txt",
            "skipped",
            "unexpected-layout",
        ),
    }
    reasons = {i.path: i.reason for i in parsed.issues}
    assert "none of the result figures" in reasons[result_path("box8", "bert-99", "Offline")]
    assert (
        "no system description closed/Acme/systems/ghost.json"
        in reasons[result_path("ghost", "resnet50", "Offline")]
    )
    assert (
        "summary says Scenario SingleStream but the directory says offline"
        in reasons[result_path("box8", "retinanet", "offline")]
    )
    assert "top level is a list" in reasons["closed/Acme/systems/list.json"]


def test_bad_counts_in_a_system_fail_its_results_only(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    write(
        tree,
        "closed/Acme/systems/odd.json",
        json.dumps(dict(SYSTEM, accelerators_per_node="eight")),
    )
    write(tree, result_path("odd", "resnet50", "Offline"), SUMMARY_OFFLINE)
    parsed = read_tree(tree)
    assert len(parsed.records) == 2
    assert any(
        "accelerators_per_node is not a count (a whole number, 0 or more): 'eight'" in i.reason
        for i in parsed.failed
    )


def test_unknown_round_needs_the_flag(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    renamed = tree.rename(tmp_path / "results")
    with pytest.raises(InvalidInput, match="--round"):
        read_tree(renamed)
    assert read_tree(renamed, round_name="v4.0").round == "v4.0"
    with pytest.raises(InvalidInput, match=r"--round: .2024. is not a round name such as v6\.0"):
        read_tree(renamed, round_name="2024")


def test_missing_path_and_non_archive_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such results tree"):
        read_tree(tmp_path / "nope")
    junk = write(tmp_path, "inference_v1.0.tar.gz", b"this is not an archive")
    with pytest.raises(InvalidInput, match="cannot read"):
        read_tree(junk)
    empty = tmp_path / "inference_v1.0"
    empty.mkdir()
    with pytest.raises(InvalidInput, match="no readable files"):
        read_tree(empty)


def test_truncated_archive_keeps_what_came_before(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "src")
    for i in range(40):  # enough members that a cut lands well inside the archive
        write(root, result_path(f"box{i:02d}", "resnet50", "Offline"), SUMMARY_OFFLINE + "#" * 4000)
    full = tar_gz(root, tmp_path / "inference_v9.9.tar.gz").read_bytes()
    cut = tmp_path / "cut" / "inference_v9.9.tar.gz"
    cut.parent.mkdir()
    cut.write_bytes(full[: len(full) // 2])
    parsed = read_tree(cut)
    truncated = [i for i in parsed.failed if i.category == "truncated-archive"]
    assert len(truncated) == 1 and "truncated or corrupt" in truncated[0].reason
    assert truncated[0].path == str(cut)
    assert parsed.files_seen > 0


# ---- format drift: newer LoadGen and system descriptions ---------------------------------------

LLM_SERVER = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 8.59
Completed tokens per second: 2520.27
Result is : INVALID
  Performance constraints satisfied : No
  Some constraint a later LoadGen adds : Yes
TTFT Early Stopping Result:
 * Run successful.

================================================
Additional Stats
================================================
Scheduled samples per second : 8.62
50.00 percentile latency (ns)   : 39200445037
Completed tokens per second                 : 2520.27
Mean First Token latency (ns)               : 401873796
99.00 percentile first token latency (ns)   : 785265884
Mean Time to Output Token (ns)                : 153377770
99.90 percentile time to output token (ns)   : 199326664
A line no LoadGen wrote yet (ns)   : 42
"""


def test_interactive_directory_with_a_server_summary_is_a_result_of_its_own(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    write(
        tree,
        "closed/Acme/systems/box8.json",
        json.dumps(dict(SYSTEM, a_key_from_a_later_round={"x": [1]})),
    )
    write(
        tree, result_path("box8", "llama2-70b-99", "Server"), LLM_SERVER.replace("INVALID", "VALID")
    )
    write(tree, result_path("box8", "llama2-70b-99", "Interactive"), LLM_SERVER)
    parsed = read_tree(tree)
    assert parsed.issues == []  # unknown summary lines and system keys are not errors
    by_scenario = {r.scenario: r for r in parsed.records if r.benchmark == "llama2-70b-99"}
    assert set(by_scenario) == {"Server", "Interactive"}
    interactive = by_scenario["Interactive"]
    assert (interactive.metric, interactive.value, interactive.valid) == (
        "tokens_per_second",
        2520.27,
        False,
    )
    observations = to_observations(interactive)
    head = observations[0]
    assert head.valid is False and head.note == "LoadGen reported the run INVALID"
    assert head.benchmark.parameters["scenario"] == "Interactive"
    latency = {o.metric: (o.value, o.provenance.details["metric_source"]) for o in observations[1:]}
    assert latency == {
        "ttft_mean_ms": (pytest.approx(401.873796), "Mean First Token latency (ns)"),
        "ttft_p99_ms": (pytest.approx(785.265884), "99.00 percentile first token latency (ns)"),
        "tpot_mean_ms": (pytest.approx(153.37777), "Mean Time to Output Token (ns)"),
        "tpot_p99_9_ms": (pytest.approx(199.326664), "99.90 percentile time to output token (ns)"),
    }
    assert all(o.unit == "ms" and o.higher_is_better is False for o in observations[1:])
    assert len({o.observation_key for o in observations}) == len(observations)


def test_a_benchmark_named_with_its_scenario_is_that_scenario(tmp_path: Path) -> None:
    """MLPerf v5.0 wrote the Interactive scenario as a benchmark of its own run as Server
    (``llama2-70b-interactive-99/Server``); v5.1 as a directory (``llama2-70b-99/Interactive``):
    both are llama2-70b-99's Interactive result, under one key."""
    keys = []
    for name, benchmark, scenario in (
        ("v50", "llama2-70b-interactive-99", "Server"),
        ("v51", "llama2-70b-99", "Interactive"),
    ):
        tree = small_tree(tmp_path / name)
        write(tree, "closed/Acme/systems/box8.json", json.dumps(SYSTEM))
        write(
            tree, result_path("box8", benchmark, scenario), LLM_SERVER.replace("INVALID", "VALID")
        )
        parsed = read_tree(tree)
        (record,) = [r for r in parsed.records if r.benchmark_raw == benchmark]
        assert (record.benchmark, record.scenario, record.benchmark_raw) == (
            "llama2-70b-99",
            "Interactive",
            benchmark,
        )
        keys.append(to_observations(record)[0].observation_key)
    assert keys[0] == keys[1]


@pytest.mark.parametrize(
    ("system_id", "implementation"),
    [
        ("GATEOverflow_Intel_SPR_i9-reference-gpu-vllm-default_config", "reference"),
        ("RTX4090x1-reference-gpu-pytorch_v2.7.1-cu126", "reference"),
        ("rtx4090x2-nvidia-gpu-TensorRT-default_config", None),
        ("GATEOverflow_AMD_AM5-mlcommons_cpp-gpu-onnxruntime-cu126", None),
        ("reference_system_8xH100", None),
        ("1-node-2S-GNR_128C-PyTorch-INT8", None),
    ],
)
def test_mlcommons_automation_folders_name_their_implementation(
    system_id: str, implementation: str | None
) -> None:
    assert implementation_of(system_id) == implementation


def test_token_latency_metrics_of_a_summary_without_them_is_empty() -> None:
    assert token_latency_metrics(parse_summary(SUMMARY_OFFLINE)) == []


def test_inferred_tokens_line_is_the_llm_headline() -> None:
    text = (
        "Scenario : Offline\nSamples per second: 101.239\nTokens per second (inferred): "
        "6985.51\nResult is : VALID\n"
    )
    head = published_headline(parse_summary(text))
    assert (head.metric, head.value, head.source_line) == (
        "tokens_per_second",
        6985.51,
        "Tokens per second (inferred)",
    )


def test_unknown_scenario_directory_is_reported_with_its_path(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    write(tree, result_path("box8", "resnet50", "Batch"), SUMMARY_OFFLINE)
    parsed = read_tree(tree)
    assert [(i.path, i.outcome, i.category) for i in parsed.issues] == [
        (result_path("box8", "resnet50", "Batch"), "failed", "unknown-scenario")
    ]
    assert "'Batch' is not a known scenario" in parsed.issues[0].reason


def test_virtualized_accelerator_name_is_placement_evidence(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    system = dict(
        SYSTEM, accelerator_model_name="Virtualized NVIDIA H200-SXM-141GB", accelerators_per_node=8
    )
    write(tree, "closed/Acme/systems/vm8.json", json.dumps(system))
    write(tree, result_path("vm8", "resnet50", "Offline"), SUMMARY_OFFLINE)
    record = next(r for r in read_tree(tree).records if r.system_id == "vm8")
    assert (record.placement, record.placement_basis) == (
        PlacementKind.UNKNOWN,
        "virtualized-unstated",
    )
    assert (
        record.accelerator == "Virtualized NVIDIA H200-SXM-141GB"
    )  # as published; the catalogue resolves it
    assert any("Virtualized" in e for e in record.placement_evidence)
