"""Round v5.1 through the results-tree importer: the reference tabulation's 912 results with the
same values, the Interactive scenario as a result of its own with its TTFT/TPOT figures, the
latency results (PointPainting's p99.9, an LLM's SingleStream query latency), and the
catalogue's published latency limits equal to the ones the runs were made under."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from stack_advisor.catalog import load_catalog, resolve_benchmark, resolve_scenario
from stack_advisor.collectors.importers.loadgen_summary import parse_summary
from stack_advisor.collectors.importers.mlperf import MlperfRecord
from stack_advisor.collectors.importers.tar_reader import iter_archive
from tests.support.mlperf import require_shared_data, shared_inference_tree

ARCHIVE = "inference_v5.1.tar.gz"


def _bench_key(name: str) -> str:
    """A benchmark compared as written, punctuation aside (the reference writes the open
    variant ``llama3_1-405b_pruned`` as ``llama3.1-405b_pruned``)."""
    match = resolve_benchmark(name, "mlperf-inference")
    return re.sub(r"[^a-z0-9]", "", match.id.lower())


@pytest.fixture(scope="module")
def records() -> dict[tuple[str, ...], MlperfRecord]:
    tree = shared_inference_tree("v5.1")
    assert tree.round == "v5.1" and Counter(i.category for i in tree.issues) == {
        "inferred-scenario": 537
    }
    return {
        (r.division, r.submitter, r.system_id, _bench_key(r.benchmark), r.scenario): r
        for r in tree.records
    }


@pytest.mark.slow
def test_the_reference_tabulation_with_the_same_values(
    records: dict[tuple[str, ...], MlperfRecord],
) -> None:
    with (require_shared_data() / "observations_v5.1.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    reference = {
        (
            r["division"],
            r["submitter"],
            r["system_id"],
            _bench_key(r["benchmark"]),
            r["scenario"],
        ): r
        for r in rows
    }
    assert len(reference) == len(records) == 912
    assert set(reference) == set(records)
    off = []
    for key, row in reference.items():
        ours, expected = records[key], float(row["value"])
        metric = row["metric"].replace(
            "p999_", "p99_9_"
        )  # the reference's name of the p99.9 latency
        if ours.metric != metric or abs(ours.value - expected) > 0.005 * expected:
            off.append((key, row["metric"], expected, ours.metric, ours.value))
    assert off == []


@pytest.mark.slow
def test_interactive_is_a_scenario_of_its_own_with_token_latencies(
    records: dict[tuple[str, ...], MlperfRecord],
) -> None:
    interactive = [r for r in records.values() if r.scenario == "Interactive"]
    assert len(interactive) == 68 and {r.metric for r in interactive} == {"tokens_per_second"}
    for record in interactive:
        figures = {m: v for m, v, _ in record.latency_metrics}
        assert {"ttft_p99_ms", "tpot_p99_ms"} <= set(figures)
        assert 0 < figures["ttft_p50_ms"] <= figures["ttft_p99_ms"]
    servers = {(k[:4]) for k, r in records.items() if r.scenario == "Server"}
    assert any(
        k[:4] in servers for k, r in records.items() if r.scenario == "Interactive"
    )  # both kept


@pytest.mark.slow
def test_latency_results_are_the_published_percentile(
    records: dict[tuple[str, ...], MlperfRecord],
) -> None:
    pointpainting = [r for r in records.values() if r.benchmark == "pointpainting"]
    assert pointpainting and {r.metric for r in pointpainting} == {"p99_9_latency_ms"}
    assert {r.metric_source for r in pointpainting} == {"Early stopping 99.9th percentile estimate"}
    edge = [
        r
        for r in records.values()
        if r.benchmark == "llama3.1-8b-edge" and r.scenario == "SingleStream"
    ]
    # the query latency the result line reports, not the TPOT early-stopping estimate beside it
    assert edge and all(
        r.value > 1000 and r.metric_source.endswith("percentile latency (ns)") for r in edge
    )


@pytest.mark.slow
def test_catalogue_latency_limits_are_the_ones_the_runs_were_made_under() -> None:
    scenarios = load_catalog().scenarios
    checked: Counter[str] = Counter()
    for name, content, _ in iter_archive(require_shared_data() / ARCHIVE):
        parts = Path(name).parts
        if (
            "closed" not in parts
            or not name.endswith("run_1/mlperf_log_summary.txt")
            or "performance" not in parts
        ):
            continue
        benchmark, scenario = (
            parts[-5],
            (lambda m: m.id if m.resolved else None)(resolve_scenario(parts[-4])),
        )
        if scenario not in ("Server", "Interactive"):
            continue
        params = parse_summary(content.decode("utf-8"))["test_parameters"]
        if "ttft_latency (ns)" not in params:
            continue
        limit = scenarios[scenario].limits_for(
            resolve_benchmark(benchmark, "mlperf-inference").id, "v5.1"
        )
        assert limit is not None, (benchmark, scenario)
        assert (limit.ttft_ms, limit.tpot_ms) == (
            params["ttft_latency (ns)"] / 1e6,
            params["tpot_latency (ns)"] / 1e6,
        ), name
        checked[scenario] += 1
    assert checked["Interactive"] >= 60 and checked["Server"] >= 100
