"""A benchmark's accuracy variants (one model, one dataset, two accuracy targets) learn one
roofline blend over the parts of both; each keeps its own precision policy. On the starter
knowledge base."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.estimate.variants import variant_slices

KEY_99 = ("mlperf-inference", "llama2-70b-99", "Offline", "tokens_per_second", "closed")
KEY_999 = ("mlperf-inference", "llama2-70b-99.9", "Offline", "tokens_per_second", "closed")


def test_variants_are_the_same_model_and_dataset_in_the_same_slice_shape(
    kb_advisor: Any,
) -> None:
    index = kb_advisor.evidence()
    assert variant_slices(index.slices, KEY_99) == [KEY_999]
    assert variant_slices(index.slices, KEY_999) == [KEY_99]
    server = ("mlperf-inference", "llama2-70b-99", "Server", "tokens_per_second", "closed")
    assert KEY_999 not in variant_slices(index.slices, server)  # another scenario
    other = ("mlperf-inference", "llama3.1-405b", "Offline", "tokens_per_second", "closed")
    assert variant_slices(index.slices, other) == []  # no variant of its own


def test_variants_transfer_by_one_blend(kb_advisor: Any) -> None:
    """Learned apart, llama2-70b-99 read compute-bound and -99.9 memory-bound: B300's two
    transfers differed by 19% though every part that ran both ran them alike."""
    index = kb_advisor.evidence()
    assert (
        index.blend(KEY_99, index.slices[KEY_99])[1]
        == index.blend(KEY_999, index.slices[KEY_999])[1]
    )
    query = {
        "accelerator": "NVIDIA B300-SXM-288GB",
        "accelerator_count": 8,
        "as_of": "now",
        "metric": "tokens_per_second",
    }
    low, high = kb_advisor.predict(
        [
            {**query, "benchmark": "llama2-70b-99", "scenario": "Offline"},
            {**query, "benchmark": "llama2-70b-99.9", "scenario": "Offline"},
        ]
    )
    assert low.basis.value == high.basis.value == "transferred"
    assert abs(low.value / high.value - 1) < 0.05
