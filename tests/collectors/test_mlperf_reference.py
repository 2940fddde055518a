"""The MLPerf importer on the five shared rounds, compared with the reference CSVs.

Same rows, values within 0.5%, same parsed versions and placement. The skipped files are the
copies of SingleStream runs that submitters placed under offline/ or multistream/ (their
summary says ``Scenario : SingleStream``) plus one result nested one directory too deep; the
reference has none of them either. Round v4.1 (LLM benchmarks: tokens/s, some of them LoadGen's
"(inferred)" estimate; sdxl; clouds named by their submitter) imports completely.
"""

from __future__ import annotations

import csv
from collections import Counter
from typing import Any

import pytest

from stack_advisor.catalog import resolve_benchmark
from stack_advisor.collectors.importers.mlperf import (
    MlperfRecord,
    ParsedTree,
    metric_facts,
    to_observations,
)
from stack_advisor.schema.models import PlacementKind
from tests.support.mlperf import (
    REFERENCE_CSVS,
    ROUNDS,
    require_shared_data,
    shared_inference_tree,
)

Key = tuple[str, str, str, str, str, str]


@pytest.fixture(scope="module")
def trees() -> dict[str, ParsedTree]:
    return {r: shared_inference_tree(r) for r in ROUNDS}


@pytest.fixture(scope="module")
def reference() -> dict[Key, dict[str, str]]:
    data = require_shared_data()
    rows = []
    for name in REFERENCE_CSVS:
        with (data / name).open(newline="") as handle:
            rows += list(csv.DictReader(handle))
    assert len(rows) == sum(REFERENCE_CSVS.values())
    return {
        # the importer names benchmarks as the catalogue does (the reference's "sdxl" is
        # stable-diffusion-xl)
        (
            r["round"].removeprefix("inference_"),
            r["division"],
            r["submitter"],
            r["system_id"],
            resolve_benchmark(r["benchmark"]).id,
            r["scenario"],
        ): r
        for r in rows
    }


@pytest.fixture(scope="module")
def ours(trees: dict[str, ParsedTree]) -> dict[Key, MlperfRecord]:
    return {
        (r.round, r.division, r.submitter, r.system_id, r.benchmark, r.scenario): r
        for tree in trees.values()
        for r in tree.records
    }


def test_same_rows(reference: dict[Key, Any], ours: dict[Key, MlperfRecord]) -> None:
    assert len(ours) == 10_938
    assert sum(1 for key in ours if key[0] == "v4.1") == 937
    assert set(ours) - set(reference) == set()
    assert set(reference) - set(ours) == set()


def test_values_within_half_a_percent(
    reference: dict[Key, Any], ours: dict[Key, MlperfRecord]
) -> None:
    off = []
    for key, row in reference.items():
        record = ours[key]
        expected = float(row["value"])
        if record.metric != row["metric"] or abs(record.value - expected) > 0.005 * abs(expected):
            off.append((key, row["metric"], expected, record.metric, record.value))
        assert record.metric_source == row["metric_source"], key
        assert record.valid == (row["valid"] == "true")
    assert off == []


def test_same_parsed_versions(reference: dict[Key, Any], ours: dict[Key, MlperfRecord]) -> None:
    columns = {
        "cuda_version": "cuda",
        "cudnn_version": "cudnn",
        "tensorrt_version": "tensorrt",
        "driver_version": "driver",
    }
    wrong = []
    for key, row in reference.items():
        record = ours[key]
        for column, component in columns.items():
            if record.components.get(component, "") != row[column]:
                wrong.append((key, column, row[column], record.components.get(component)))
        if "; ".join(record.version_conflicts) != row["version_conflicts"]:
            wrong.append(
                (key, "version_conflicts", row["version_conflicts"], record.version_conflicts)
            )
    assert wrong == []


def test_same_system_fields_and_placement(
    reference: dict[Key, Any], ours: dict[Key, MlperfRecord]
) -> None:
    wrong = []
    for key, row in reference.items():
        r = ours[key]
        got = {
            "accelerator": r.accelerator,
            "accelerators_per_node": r.accelerators_per_node,
            "nodes": str(r.nodes),
            "host_cpu": r.host_cpu,
            "framework": r.framework,
            "software_stack": r.software_stack,
            "virtualization": r.placement.value,
            "virtualization_basis": r.placement_basis,
            "hypervisor": r.hypervisor or "",
            "cloud_provider": r.cloud_provider or "",
            "benchmark_raw": r.benchmark_raw,
            "source_path": r.source_path,
        }
        for column, value in got.items():
            if value != row[column]:
                wrong.append((key, column, row[column], value))
    assert wrong == []


def test_counts_by_placement_match_the_readme(ours: dict[Key, MlperfRecord]) -> None:
    counts = Counter(r.placement for r in ours.values())
    assert counts[PlacementKind.VGPU] == 32
    assert counts == {
        PlacementKind.BARE_METAL: 9350 + 875,
        PlacementKind.UNKNOWN: 619 + 62,
        PlacementKind.VGPU: 32,
    }


def test_skipped_files_are_inferred_scenarios_and_one_odd_path(
    trees: dict[str, ParsedTree],
) -> None:
    by_round = {r: Counter(i.category for i in t.issues) for r, t in trees.items()}
    assert by_round == {
        "v1.1": {"inferred-scenario": 316, "unexpected-layout": 1},
        "v2.0": {"inferred-scenario": 1548},
        "v2.1": {"inferred-scenario": 2859},
        "v3.0": {"inferred-scenario": 3686},
        "v4.1": {},
    }
    assert all(i.outcome == "skipped" for t in trees.values() for i in t.issues)


def test_observation_conventions(ours: dict[Key, MlperfRecord]) -> None:
    keys = set()
    for record in ours.values():
        observations = to_observations(record)
        keys |= {o.observation_key for o in observations}
        obs = observations[0]
        assert obs.benchmark.family == "mlperf-inference"
        assert obs.benchmark.name == record.benchmark
        assert obs.benchmark.parameters == {
            "scenario": record.scenario,
            "division": record.division,
        }
        assert (
            obs.source_key
            == f"{record.round}/{record.division}/{record.submitter}/{record.system_id}"
        )
        assert obs.provenance.details["round"] == record.round
        assert (
            obs.provenance.url == f"https://github.com/mlcommons/inference_results_{record.round}"
        )
        assert obs.higher_is_better is metric_facts(obs.metric)[1]
        if record.accelerator:
            assert obs.accelerator.count == record.accelerator_count
        else:
            assert obs.accelerator.vendor == "cpu" and obs.accelerator.model.startswith("CPU ")
    latency = sum(len(r.latency_metrics) for r in ours.values())
    assert latency == 95 * 14
    assert len(keys) == len(ours) + latency, "each published figure is its own observation"


def test_llm_results_carry_tokens_and_token_latencies(ours: dict[Key, MlperfRecord]) -> None:
    v41 = [r for key, r in ours.items() if key[0] == "v4.1"]
    tokens = [r for r in v41 if r.metric == "tokens_per_second"]
    assert len(tokens) == 334
    assert {r.benchmark.split("-9")[0] for r in tokens} >= {"llama2-70b", "gptj", "mixtral-8x7b"}
    with_latency = [r for r in v41 if r.latency_metrics]
    assert len(with_latency) == 95 and all(r.scenario == "Server" for r in with_latency)
    for record in with_latency:
        metrics = {m: v for m, v, _ in record.latency_metrics}
        assert set(metrics) == {
            f"{p}_{s}_ms"
            for p in ("ttft", "tpot")
            for s in ("mean", "p50", "p90", "p95", "p97", "p99", "p99_9")
        }
        assert 0 < metrics["ttft_p50_ms"] <= metrics["ttft_p99_ms"] <= metrics["ttft_p99_9_ms"]
        assert 0 < metrics["tpot_p50_ms"] <= metrics["tpot_p99_ms"]
