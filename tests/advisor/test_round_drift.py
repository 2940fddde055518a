"""Round drift (issue 41): answers say which round they are for; evidence of an older round is
carried to the benchmark's newest round by the pairs both rounds hold, else by the learned prior;
``as_of: next`` is a forecast with a wider interval. On the starter knowledge base."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from stack_advisor.advisor.estimate.drift import (
    as_of_error,
    benchmark_group,
    next_round,
    round_label,
)
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.query import SliceKey


def _older_accelerator(index: EvidenceIndex) -> tuple[SliceKey, str, float, float]:
    """A closed throughput slice, an accelerator last measured on it before the slice's newest
    round that other parts ran in both rounds: (slice, accelerator, its round, newest)."""
    drift = index.round_drift
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or key[4] != "closed" or not index.higher_is_better(key):
            continue
        held = drift.rounds(key)
        if len(held) < 2:
            continue
        for acc, rows in by_acc.items():
            last = float(index.round_no[rows].max())
            if 0 < last < held[-1] and len(drift.pairs(key, last, held[-1])) >= 2:
                return key, acc, last, held[-1]
    pytest.skip("the starter knowledge base holds no slice with an older accelerator")


def _query(index: EvidenceIndex, key: SliceKey, acc: str, **extra: Any) -> dict[str, Any]:
    rows = index.slices[key][acc]
    return {
        "accelerator": index.raw_names.get(acc, acc),
        "accelerator_count": int(index.table.count[rows[-1]]),
        "family": key[0],
        "benchmark": key[1],
        "scenario": key[2],
        "metric": key[3],
        **extra,
    }


def test_older_evidence_is_carried_to_the_newest_round_by_its_pairs(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, last, now = _older_accelerator(index)
    [answer] = kb_advisor.predict([_query(index, key, acc)])
    assert answer.round == round_label(now)
    [drift] = [f for f in answer.factors if f.name == "round drift"]
    assert f"{round_label(last)} -> {round_label(now)}" in drift.value
    # the factor is the median of the pairs' log ratios, computed here from the table
    pairs = [v for _, v in index.round_drift.pairs(key, last, now)]
    assert drift.effect == pytest.approx(math.exp(float(np.median(pairs))), rel=1e-3)
    assert f"from {len(pairs)} parts in both rounds" in drift.value
    assert answer.interval is not None and answer.value is not None
    assert answer.interval.low < answer.value < answer.interval.high


def test_next_round_is_a_forecast_with_a_wider_interval(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, now = _older_accelerator(index)
    now_answer, next_answer = kb_advisor.predict(
        [_query(index, key, acc), _query(index, key, acc, as_of="next")]
    )
    assert next_answer.round == round_label(next_round(key[0], now))
    [forecast] = [f for f in next_answer.factors if f.name == "forecast"]
    assert "learned prior" in forecast.value and benchmark_group(key[0], key[1]) in forecast.value
    assert any("a forecast for" in w for w in next_answer.warnings)

    def width(p: Any) -> float:
        return float(math.log(p.interval.high / p.interval.low))

    assert width(next_answer) >= width(now_answer) > 0


def test_a_named_round_beyond_the_newest_counts_its_rounds(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, now = _older_accelerator(index)
    one = next_round(key[0], now)
    two = next_round(key[0], one)
    a, b = kb_advisor.predict(
        [
            _query(index, key, acc, as_of=round_label(one)),
            _query(index, key, acc, as_of=round_label(two)),
        ]
    )
    assert (a.round, b.round) == (round_label(one), round_label(two))
    assert b.interval.high / b.interval.low >= a.interval.high / a.interval.low > 1


def test_an_unknown_as_of_is_refused_naming_the_field(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, _ = _older_accelerator(index)
    [answer] = kb_advisor.predict([_query(index, key, acc, as_of="last year")])
    assert answer.value is None
    assert answer.reason is not None and "as_of: 'last year'" in answer.reason


def test_the_prior_band_is_calibrated_on_its_round_ahead_replays(kb_advisor: Any) -> None:
    prior = kb_advisor.evidence().round_drift.prior
    assert prior.scale >= 1.0
    groups = {s[0] for s in prior.steps}
    assert {"llm", "vision", "training"} <= groups
    # every step predicted from the steps before it: the calibrated band covers 80% of them
    inside = total = 0
    for group, age, vendor, new, value in prior.steps:
        mid, lo, hi, pairs, _ = prior.cell(group, age, vendor, until=new)
        if pairs:
            total += 1
            inside += mid - prior.scale * (mid - lo) <= value <= mid + prior.scale * (hi - mid)
    assert total and 0.78 <= inside / total <= 0.9


def test_benchmarks_pool_by_what_they_run() -> None:
    assert benchmark_group("mlperf-inference", "llama2-70b-99") == "llm"
    assert benchmark_group("mlperf-inference", "deepseek-r1") == "llm"
    assert benchmark_group("mlperf-inference", "resnet50") == "vision"
    assert benchmark_group("mlperf-inference", "dlrm-v2-99") == "recommendation"
    assert benchmark_group("mlperf-inference", "whisper") == "speech"
    assert benchmark_group("mlperf-inference", "rgat") == "graph"
    assert benchmark_group("mlperf-training", "rgat") == "training"


def test_rounds_ahead_follow_the_catalogue() -> None:
    assert next_round("mlperf-inference", 5.1) == pytest.approx(6.0)
    assert next_round("mlperf-inference", 4.1) == pytest.approx(5.0)
    assert as_of_error("next") is None and as_of_error("v6.0") is None
    assert "as_of: 'soon'" in (as_of_error("soon") or "")
