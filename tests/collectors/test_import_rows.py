"""Row-level validation: a bad row is skipped and reported (file, row, field, why), the rest
imports; types are strict and results finite, positive and plausible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.collectors.importers.mlperf import read_tree
from stack_advisor.collectors.importers.mlperf_summary import read_summary
from stack_advisor.collectors.importers.row_checks import (
    RowRejected,
    check_plausible,
    name_text,
    result_number,
)
from tests.support.mlperf import SYSTEM, small_tree, write

ROW: dict[str, Any] = {
    "ID": "9.9-0001",
    "Submitter": "Acme",
    "Category": "closed",
    "Platform": "box8",
    "System": "Acme Box",
    "Accelerator": "NVIDIA H100-SXM-80GB",
    "a#": 8,
    "Nodes": 1,
    "Model": "resnet50",
    "Scenario": "Offline",
    "Performance_Result": 90000.5,
    "Performance_Units": "Samples/s",
    "Software": "TensorRT 10.0, CUDA 12.4",
    "Location": "closed/Acme/results/box8/resnet50/Offline",
}
BAD: list[tuple[str, Any, str, str]] = [
    ("Performance_Result", True, "value", "True is not a number"),
    ("Performance_Result", "inf", "value", "not a finite number"),
    ("Performance_Result", 0, "value", "not a positive result"),
    ("Performance_Result", 1e308, "samples_per_second", "beyond the plausible"),
    ("Performance_Result", 5e-324, "samples_per_second", "beyond the plausible"),
    ("Nodes", 0, "nodes", "not a whole number of nodes"),
    ("a#", 1_000_000_000, "accelerators", "beyond the plausible 1,000,000"),
    ("a#", -8, "accelerators_per_node / nodes", "-8"),
    ("a#", 8.5, "accelerators_per_node / nodes", "8.5"),
    ("Submitter", "x" * 100_000, "submitter", "100,000 characters"),
    ("Accelerator", ["x"], "accelerator", "a list"),
    ("Accelerator", {"model": "H100"}, "accelerator", "a dict"),
]


def test_bad_rows_are_skipped_and_reported_the_rest_imports(tmp_path: Path) -> None:
    rows = [ROW] + [{**ROW, "ID": f"bad-{i}", key: value} for i, (key, value, *_) in enumerate(BAD)]
    table = tmp_path / "summary_results_v9.9.json"
    table.write_text(json.dumps([*rows, 7]))
    observations, report = read_summary(table)
    assert [o.value for o in observations] == [90000.5]
    reported = [(r["row"], r["field"], r["why"]) for r in report.to_dict()["bad_rows"]]
    assert len(reported) == len(BAD) + 1
    for i, (_, _, field, why) in enumerate(BAD):
        assert reported[i][:2] == (f"bad-{i}", field) and why in reported[i][2]
    assert reported[-1][1:] == ("row", "a int, not an object")
    assert all(r["file"] == table.name for r in report.bad_rows)


@pytest.mark.parametrize("value", [True, None, [1.0], {"v": 1}, "nan", "-1", "abc"])
def test_result_number_refuses_what_is_not_a_finite_positive_number(value: Any) -> None:
    with pytest.raises(RowRejected) as caught:
        result_number(value, "value")
    assert caught.value.field == "value"


def test_names_are_text_and_bounded() -> None:
    assert name_text("  NVIDIA   H100 ", "accelerator") == "NVIDIA H100"
    for value in (["x"], {"model": "H100"}, True, "y" * 300):
        with pytest.raises(RowRejected, match="accelerator"):
            name_text(value, "accelerator")


def test_plausibility_is_per_accelerator_for_throughput() -> None:
    check_plausible("tokens_per_second", "tokens/s", 8 * 105_165.0, 8)  # v5.1's best, per GPU
    with pytest.raises(RowRejected, match="per accelerator"):
        check_plausible("tokens_per_second", "tokens/s", 1e9, 8)


def test_a_system_whose_accelerator_is_a_list_fails_its_results_only(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    write(
        tree,
        "closed/Acme/systems/listed.json",
        json.dumps({**SYSTEM, "accelerator_model_name": ["x"]}),
    )
    summary = "closed/Acme/results/box8/resnet50/Offline/performance/run_1/mlperf_log_summary.txt"
    write(tree, summary.replace("box8", "listed"), (tree / summary).read_text())
    parsed = read_tree(tree)
    assert [r.system_id for r in parsed.records] == ["box8", "box8"]
    malformed = [i for i in parsed.issues if i.path == "closed/Acme/systems/listed.json"]
    assert "accelerator_model_name: a list" in malformed[0].reason


def test_an_implausible_headline_in_a_tree_is_reported_not_stored(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    summary = "closed/Acme/results/box8/resnet50/Offline/performance/run_1/mlperf_log_summary.txt"
    text = (
        (tree / summary)
        .read_text()
        .replace("Samples per second: 1234.5", "Samples per second: 1e12")
    )
    write(tree, summary, text)
    parsed = read_tree(tree)
    assert [r.scenario for r in parsed.records] == ["SingleStream"]
    issue = next(i for i in parsed.issues if i.category == "implausible-value")
    assert issue.path == summary and "beyond the plausible" in issue.reason
