"""What a refused query says names what is wrong (a probe of issue 41 found a garbled one):
a metric the benchmark never recorded lists those it did; a scenario asked of MLPerf Training,
which has none, says so. On the starter knowledge base."""

from __future__ import annotations

from typing import Any

TRAINING = {
    "family": "mlperf-training",
    "accelerator": "NVIDIA H100-SXM5-80GB",
    "accelerator_count": 8,
    "benchmark": "bert",
}


def test_a_metric_the_benchmark_never_recorded_lists_the_recorded_ones(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict([{**TRAINING, "metric": "samples_per_second"}])
    assert answer.basis.value == "unsupported"
    assert answer.reason.startswith("unknown metric: 'samples_per_second' never recorded for bert")
    assert "time_to_train_min" in answer.reason


def test_a_scenario_asked_of_training_is_refused_saying_it_has_none(kb_advisor: Any) -> None:
    [answer] = kb_advisor.predict(
        [{**TRAINING, "metric": "time_to_train_min", "scenario": "Offline"}]
    )
    assert answer.basis.value == "unsupported"
    assert "has no scenarios ('Offline'); leave it out" in answer.reason
