"""LoadGen mlperf_log_summary.txt parser on real summaries (see tests/data/loadgen/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack_advisor.collectors.importers.loadgen_summary import parse_summary, primary_result
from stack_advisor.schema.errors import InvalidInput

DATA = Path(__file__).parents[1] / "data" / "loadgen"


def load(name: str) -> dict:
    return parse_summary((DATA / name).read_text())


def test_singlestream_90_0th_and_early_stopping() -> None:
    s = load("measured_singlestream_invalid_min_duration.txt")
    assert s["scenario"] == "SingleStream" and s["sut_name"] == "PySUT"
    assert s["p90_latency_ns"] == 3701867
    assert s["result"] == "INVALID" and s["valid"] is False
    assert s["constraints"] == {
        "min_duration_satisfied": False,
        "min_queries_satisfied": True,
        "early_stopping_satisfied": True,
    }
    assert s["early_stopping"]["p90_estimate_ns"] == 5249642
    assert any("662 total queries" in n for n in s["early_stopping"]["notes"])
    assert s["recommendations"] == [
        "Decrease the expected latency so the loadgen pre-generates more queries."
    ]
    assert s["latency_ns"]["p99.9"] == 8987968 and s["qps_without_loadgen_overhead"] == 639.54
    assert s["test_parameters"]["min_duration (ms)"] == 500 and s["errors"] == 1 and s["complete"]
    assert primary_result(s) == ("p90_latency_ms", 3.701867, "ms", False)


def test_singlestream_old_90th_format() -> None:
    s = load("published_gptj_singlestream_90th_excerpt.txt")
    assert s["p90_latency_ns"] == 4751920830 and s["valid"] is True
    assert s["early_stopping"]["p90_estimate_ns"] == 5387449249
    assert s["complete"] is False  # excerpt: no closing lines


def test_server_completed_and_scheduled() -> None:
    s = load("published_v4.1_nvidia_h200x8_resnet50_server.txt")
    assert s["completed_samples_per_second"] == 632229.06
    assert s["scheduled_samples_per_second"] == 632241.20
    assert s["valid"] and s["constraints"]["performance_constraints_satisfied"] is True
    assert s["test_parameters"]["target_latency (ns)"] == 15000000 and s["warnings"] == 9
    assert primary_result(s) == ("completed_samples_per_second", 632229.06, "samples/s", True)


def test_server_scheduled_only_is_the_result_for_old_loadgen() -> None:
    text = (DATA / "published_v4.1_nvidia_h200x8_resnet50_server.txt").read_text()
    old = text.replace(
        "Completed samples per second    : 632229.06\n",
        "Scheduled samples per second : 632241.20\n",
    )
    s = parse_summary(old)
    assert "completed_samples_per_second" not in s
    assert primary_result(s) == ("scheduled_samples_per_second", 632241.20, "samples/s", True)


def test_offline() -> None:
    s = load("published_v4.1_nvidia_h200x8_resnet50_offline.txt")
    assert s["samples_per_second"] == 756960 and s["valid"]
    assert s["test_parameters"]["samples_per_query"] == 475200000


def test_tokens_and_token_latencies() -> None:
    s = load("published_v4.1_nvidia_h200x8_llama2-70b_server_tokens.txt")
    assert (
        s["completed_tokens_per_second"] == 29228.22 and s["completed_samples_per_second"] == 100.35
    )
    assert s["first_token_latency_ns"]["p99"] == 452744202
    assert s["time_per_output_token_ns"]["mean"] == 123263268
    assert s["latency_ns"]["p90"] == 65052046419  # not overwritten by the token stats
    assert s["test_parameters"]["ttft_latency (ns)"] == 2000000000


def test_measured_server_and_offline_invalid() -> None:
    server = load("measured_server_invalid_early_stopping.txt")
    assert server["valid"] is False and server["constraints"]["early_stopping_satisfied"] is False
    assert any("434 more queries" in n for n in server["early_stopping"]["notes"])
    offline = load("measured_offline_invalid_min_duration.txt")
    assert offline["samples_per_second"] == 416.071 and offline["valid"] is False


def test_truncated_summary_keeps_what_it_has() -> None:
    s = load("truncated_server_mid_file.txt")
    assert s["completed_samples_per_second"] == 46.97 and s["complete"] is False
    assert "latency_ns" not in s


def test_malformed_and_foreign_text_raise_naming_the_line() -> None:
    with pytest.raises(InvalidInput, match="MAYBE"):
        load("malformed_summary.txt")
    with pytest.raises(InvalidInput, match="Scenario"):
        parse_summary("hello\nworld\n")
    with pytest.raises(InvalidInput, match="'fast' is not a number"):
        parse_summary("Scenario : SingleStream\n90th percentile latency (ns) : fast\n")
    with pytest.raises(InvalidInput, match="Banana"):
        parse_summary("Scenario : Banana\n")
