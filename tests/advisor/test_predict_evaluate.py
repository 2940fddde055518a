"""predict (observed vs predicted labels), evaluate (MAPE, regret), compare/overhead/regressions,
and staleness: a model is never served for an older generation of the knowledge base."""

from __future__ import annotations

import re

import numpy as np
import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import Observation
from stack_advisor.store.starter import load_snapshot


def _subset(names: set[str], limit: int | None = None) -> list[Observation]:
    out = [
        o
        for o in load_snapshot().observations
        if o.benchmark.name in names and o.provenance.details.get("division") == "closed"
    ]
    return out[:limit] if limit else out


def test_predict_labels_observed_and_predicted(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    known = {
        "accelerator": "NVIDIA H100-SXM-80GB",
        "accelerator_count": 8,
        "placement": "bare-metal",
        "components": {"tensorrt": "8.6.0", "cuda": "12.0"},
        "benchmark": "bert-99",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    unseen = {
        "accelerator": "NVIDIA L4",
        "accelerator_count": 2,
        "placement": "vgpu",
        # a stack the compatibility rules accept (TensorRT 8.6 supports CUDA 12.0-12.1)
        "components": {"cuda": "12.1", "driver": "535.54.03", "tensorrt": "8.6.1"},
        "benchmark": "bert-99",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    observed, predicted = kb_advisor.predict([known, unseen])
    assert observed.observed and observed.basis is Basis.OBSERVED and observed.evidence.count >= 1
    assert observed.evidence.rounds == ["v3.0"]
    assert (
        not predicted.observed and predicted.basis is Basis.INTERPOLATED
    )  # L4 ran bert-99, other stacks
    assert predicted.factors
    for p in (observed, predicted):
        assert p.interval.low <= p.value <= p.interval.high
        assert p.value > 0


def test_predict_rejects_bad_queries_naming_the_field(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A malformed query is refused on its own, naming its field; the rest of the batch answers
    (issue 43: each query of a batch judged on its own)."""
    bad, good = kb_advisor.predict(
        [
            {
                "accelerator": "NVIDIA A30",
                "accelerator_count": 0,
                "benchmark": "resnet50",
                "metric": "samples_per_second",
            },
            {
                "accelerator": "NVIDIA A30",
                "benchmark": "resnet50",
                "scenario": "Offline",
                "metric": "samples_per_second",
            },
        ]
    )
    assert bad.basis is Basis.UNSUPPORTED and bad.value is None
    assert bad.reason and re.search(r"queries\.0\.accelerator_count", bad.reason)
    assert good.value is not None and good.value > 0


def test_evaluate_by_round_through_predict_beside_the_lookup(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    report = kb_advisor.evaluate("by-round", train_until="v2.1", test_round="v3.0")
    assert report.holdout_count > 300 and report.train_count > 1000
    assert report.overall.predictions + report.overall.refused == report.holdout_count
    assert report.overall.mape is not None and report.overall.top1_regret is not None
    assert report.overall.lookup_rows > 0 and report.overall.lookup_mape is not None
    assert set(report.by_basis) <= {"observed", "interpolated", "transferred", "unsupported"}
    assert report.unseen_benchmark_refused == report.unseen_benchmark_queries


def test_evaluate_rejects_bad_protocols_and_rounds(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput, match="protocol"):
        kb_advisor.evaluate("random")
    with pytest.raises(InvalidInput, match="test round"):
        kb_advisor.evaluate("by-round", test_round="v9.9")


def test_placement_overhead_and_compare_on_real_pairs(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    overheads = kb_advisor.placement_overhead("NVIDIA A100-SXM-80GB")
    vgpu = [o for o in overheads if o.placement.value == "vgpu"]
    assert vgpu and vgpu[0].pairs >= 1 and 0.5 < vgpu[0].ratio < 1.5
    result = kb_advisor.compare("driver=510.39.01", "driver=510.47.03", benchmark="bert-99")
    assert result.pairs >= 1 and result.ratio is not None and result.p_value is not None
    assert result.verdict
    with pytest.raises(NotFound):
        kb_advisor.compare("driver=1.2.3", "driver=510.47.03", benchmark="bert-99")
    with pytest.raises(InvalidInput, match="component=version"):
        kb_advisor.compare("nonsense", "driver=510.47.03", benchmark="bert-99")
    # one stack on both sides had paired every result with itself: "no significant difference"
    with pytest.raises(InvalidInput, match="name the same stack"):
        kb_advisor.compare("driver=510.39.01", "DRIVER=510.39.01 ", benchmark="bert-99")


def test_regressions_need_statistical_support(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    found = kb_advisor.regressions("cudnn")
    for r in found:
        assert r.change < 1 and r.p_value < 0.05
        assert r.older_count >= 3 and r.newer_count >= 3
        assert r.submitter  # within one submitter's systems, named
    assert kb_advisor.regressions("cudnn", alpha=1e-12) == []
    # across submitters a version changes with the whole system: University-of-Florida's
    # slower B200 retinanet had read as a driver, CUDA and PyTorch regression of others'
    for component in ("driver", "cuda", "framework_version"):
        assert not [
            r
            for r in kb_advisor.regressions(component, accelerator="B200-SXM-180GB")
            if r.benchmark == "retinanet" and r.change < 0.5
        ]


def test_stale_evidence_is_never_served(embedded_store) -> None:  # type: ignore[no-untyped-def]
    embedded_store.ingest_observations(_subset({"resnet50"}, 300))
    advisor = Advisor(embedded_store)
    first = advisor.recommend(Workload(benchmark="resnet50", scenario="Offline"))
    index_before = advisor.evidence()
    assert index_before.table.generation == first.generation
    embedded_store.ingest_observations(_subset({"bert-99"}, 200))
    second = advisor.recommend(Workload(benchmark="bert-99", scenario="Offline"))
    assert second.generation != first.generation
    assert advisor.evidence().table.generation == second.generation
    assert advisor.evidence() is not index_before


def test_recommend_on_each_backend(store) -> None:  # type: ignore[no-untyped-def]
    store.ingest_observations(_subset({"resnet50", "bert-99"}, 600))
    result = Advisor(store).recommend(
        Workload(
            benchmark="resnet50", scenario="Offline", image="nvcr.io/nvidia/tensorrt:23.04-py3"
        ),
        top=3,
    )
    assert result.recommendations
    assert result.recommendations[0].evidence.count >= 1
    assert result.recommendations[0].snippet["kind"] == "Pod"


def test_an_unseen_faster_accelerator_is_predicted_faster(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """Without any H100 PCIe result, a transfer through public specs must still place it above the
    A100 PCIe on BERT Offline, as v3.0 then measured."""
    from stack_advisor.advisor.estimate.facts import canonical_accelerator
    from stack_advisor.advisor.estimate.index import EvidenceIndex
    from stack_advisor.advisor.estimate.query import Query
    from stack_advisor.advisor.verbs.evaluate import subset

    table = kb_advisor.table()
    keep = np.array(
        [
            canonical_accelerator(table.accelerator.vocab[c])
            != canonical_accelerator("NVIDIA H100-PCIe-80GB")
            for c in table.accelerator.codes
        ]
    )
    index = EvidenceIndex(subset(table, np.flatnonzero(keep)))
    h100, a100 = (
        index.estimate(
            Query(
                "mlperf-inference",
                "bert-99",
                "Offline",
                "samples_per_second",
                "closed",
                canonical_accelerator(n),
                1,
                "bare-metal",
                raw_accelerator=n,
            )
        )
        for n in ("NVIDIA H100-PCIe-80GB", "NVIDIA A100-PCIe-80GB")
    )
    assert h100.basis is Basis.TRANSFERRED and a100.basis is not Basis.TRANSFERRED
    assert h100.value > a100.value
