"""One ordering rule for every objective in every mode (issue 43): a row ranks by its measured
figure, else by the pessimistic end of its 80% interval in the metric's direction (the high end
of a time or latency, the low end of a throughput). Checked on the starter knowledge base for
recommend and for cluster ``--nodes``: no pair of rows whose pessimistic figures are inverted."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from stack_advisor.advisor.cluster.advice import ClusterAdvisor
from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.verbs import ordering
from stack_advisor.advisor.workload import Workload
from tests.support.gfd_nodes import gpu_node

H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-80GB"
NODES = [
    gpu_node("ord-h100-0", H100, "580.95.05"),
    gpu_node("ord-h100-1", H100, "580.95.05"),
    gpu_node("ord-a100-0", A100, "550.54.15"),
    gpu_node("ord-a100-1", A100, "550.54.15"),
    gpu_node("ord-l4", "NVIDIA-L4", "550.54.15", gpus=1),
]

# (objective, workload): a throughput, a latency, a cost and a time to train
CASES: dict[str, dict[str, Any]] = {
    "throughput": {"benchmark": "resnet50", "scenario": "Offline"},
    "latency": {"benchmark": "resnet50", "scenario": "SingleStream", "objective": "latency"},
    "cost": {"benchmark": "resnet50", "scenario": "Offline", "objective": "cost"},
    "time-to-train": {"family": "mlperf-training", "benchmark": "llama2_70b_lora"},
}


def _inversions(rows: list[tuple[float, bool]]) -> list[int]:
    """Positions where a row's figure is worse than the next one's in the metric's direction."""
    return [
        i
        for i, ((a, hib), (b, _)) in enumerate(itertools.pairwise(rows))
        if (a < b if hib else a > b) and a != pytest.approx(b)
    ]


def test_the_score_is_the_pessimistic_end_in_the_metrics_direction() -> None:
    assert ordering.score(10.0, 8.0, 13.0, observed=False, hib=True) == 8.0
    assert ordering.score(10.0, 8.0, 13.0, observed=False, hib=False) == -13.0
    assert ordering.score(10.0, 8.0, 13.0, observed=True, hib=False) == -10.0
    assert ordering.score_unit("min", hib=False) == "-min"
    assert ordering.score_unit("samples/s", hib=True, per=" per accelerator") == (
        "samples/s per accelerator"
    )


@pytest.mark.parametrize("objective", sorted(CASES))
def test_recommend_ranks_every_objective_by_the_pessimistic_end(  # type: ignore[no-untyped-def]
    kb_advisor, objective: str
) -> None:
    answer = kb_advisor.recommend(Workload(**CASES[objective]), top=10)
    recs = answer.recommendations
    assert len(recs) >= 2
    hib = recs[0].higher_is_better
    assert hib is (objective != "latency" and objective != "time-to-train")
    scores = [r.score for r in recs]
    assert scores == sorted(scores, reverse=True)
    if objective != "cost":  # cost divides by each part's price: checked on the figure below
        ends = [
            ordering.pessimistic_end(
                r.value,
                r.interval.low,
                r.interval.high,
                observed=r.basis is Basis.OBSERVED,
                hib=hib,
            )
            for r in recs
        ]
        capped = [bool(any("ranked no higher" in w for w in r.warnings)) for r in recs]
        rows = [(e, hib) for e, c in zip(ends, capped) if not c]
        assert _inversions(rows) == []
        assert "per" not in recs[0].score_unit or hib


@pytest.mark.parametrize("objective", sorted(CASES))
def test_cluster_ranks_every_objective_by_the_pessimistic_end(  # type: ignore[no-untyped-def]
    kb_advisor, objective: str
) -> None:
    pools = group_pools(nodes_from_json(NODES))
    answer = ClusterAdvisor(kb_advisor).recommend(
        CASES[objective], pools, source="test", top=20, image="registry.example.org/x:1"
    )
    recs = answer.recommendations
    assert recs, answer.excluded_pools
    hib = recs[0].higher_is_better
    scores = [r.score for r in recs]
    assert scores == sorted(scores, reverse=True)
    rows = [
        (
            ordering.pessimistic_end(
                r.value,
                r.interval.low,
                r.interval.high,
                observed=r.basis.value in ("measured", "observed"),
                hib=hib,
            ),
            hib,
        )
        for r in recs
    ]
    if objective != "cost":
        assert _inversions(rows) == []
    if not hib:  # a time or latency is not "per unit" of a resource
        assert recs[0].score_unit == f"-{recs[0].unit}"
        assert all(r.score == pytest.approx(-e) for r, (e, _) in zip(recs, rows))
