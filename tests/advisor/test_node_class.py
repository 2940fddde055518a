"""An interpolation reads the part's results of the query's system class (one node, or several)
and moves a figure of the other class by a learned factor, said in the answer (issue 41: never a
multi-node result scaled to one node without a factor). On the starter knowledge base."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from stack_advisor.advisor.estimate.node_scaling import class_factor
from stack_advisor.advisor.estimate.query import SliceKey
from stack_advisor.advisor.estimate.references_class import spans_nodes


def _parts(index: Any, *, both: bool) -> tuple[SliceKey, str, np.ndarray]:
    """A closed inference throughput slice and a GPU whose rows span nodes only (``both``:
    single-node rows beside multi-node ones)."""
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or key[4] != "closed" or not index.higher_is_better(key):
            continue
        for acc, rows in by_acc.items():
            if acc.startswith(("mixed", "CPU")):
                continue
            spans = spans_nodes(index, rows)
            if (spans.any() and not spans.all()) if both else spans.all():
                return key, acc, rows
    pytest.skip("the starter knowledge base holds no such part")


def _ask(advisor: Any, key: SliceKey, acc: str, count: int) -> Any:
    [answer] = advisor.predict(
        [
            {
                "accelerator": acc,
                "accelerator_count": count,
                "family": key[0],
                "benchmark": key[1],
                "scenario": key[2],
                "metric": key[3],
                "as_of": "now",
            }
        ]
    )
    return answer


def test_a_part_that_ran_only_multi_node_is_moved_to_one_node_by_a_factor(
    kb_advisor: Any,
) -> None:
    index = kb_advisor.evidence()
    key, acc, rows = _parts(index, both=False)
    answer = _ask(kb_advisor, key, acc, 4)
    assert answer.basis.value == "interpolated"
    learned = class_factor(index, key[0])
    latest = rows[index.round_no[rows] == index.round_no[rows].max()]
    as_published = float(np.median(index.unit[latest])) * 4
    if learned is None:
        assert any("all of multi-node systems" in w for w in answer.warnings)
        assert answer.value == pytest.approx(as_published)
        return
    [factor] = [f for f in answer.factors if f.name == "system class"]
    assert "multi-node" in factor.value and f"{learned.pairs} parts" in factor.value
    assert factor.effect == pytest.approx(math.exp(-learned.log_mid), rel=1e-3)
    assert answer.value == pytest.approx(as_published * math.exp(-learned.log_mid), rel=1e-6)
    assert answer.interval.low < answer.value < answer.interval.high


def test_a_single_node_query_reads_the_parts_single_node_results(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, rows = _parts(index, both=True)
    answer = _ask(kb_advisor, key, acc, 3)  # no published system of three: interpolated
    assert answer.basis.value == "interpolated"
    assert not [f for f in answer.factors if f.name == "system class"]
    [reference] = [f for f in answer.factors if f.name == "reference"]
    counts = reference.value.split("counts [")[1].split("]")[0]
    single = rows[~spans_nodes(index, rows)]
    assert {int(c) for c in counts.split(", ")} <= set(index.table.count[single].tolist())


def test_a_transfer_prefers_the_same_design_of_the_other_class_moved_by_the_factor(
    kb_advisor: Any,
) -> None:
    """A multi-node query for a part whose siblings (the catalogue's: GB300's are B300 and GB200)
    ran the benchmark only in single-node systems reads the siblings, moved by the learned system
    class factor, not an older design that ran at that size (H200 and H100 scaled to GB300's
    peaks had answered GB300 x72 at 1.35x its own x4 figure per accelerator)."""
    asked = {"accelerator": "GB300", "benchmark": "llama2-70b-99.9", "scenario": "Server"}
    rack, tray = kb_advisor.predict(
        [{**asked, "accelerator_count": 72}, {**asked, "accelerator_count": 4}]
    )
    if rack.basis.value != "transferred" or tray.basis.value != "transferred":
        pytest.skip("GB300 ran llama2-70b-99.9 Server in this knowledge base")
    assert set(rack.references) <= {"GB200", "B300-SXM-288GB", "B200-SXM-180GB"}
    [moved] = [f for f in rack.factors if f.name == "system class"]
    found = class_factor(kb_advisor.evidence(), "mlperf-inference")
    assert found is not None and moved.effect == pytest.approx(found.ratio(True), abs=1e-4)
    per_rack, per_tray = rack.value / 72, tray.value / 4
    assert per_rack <= per_tray * 1.05  # never more per accelerator in a rack than in a tray


def test_recommend_ranks_each_multi_node_size_as_a_row_of_its_own(kb_advisor: Any) -> None:
    """A stack's system spanning nodes (H100 x16 and x32, GB200 x72) is a deployment of its size:
    its own row, never folded into the stack's one-node row (a probe found an NVL72 result
    inside an x8 row, its per-GPU figure only in the row's observed range)."""
    from stack_advisor.advisor.workload import Workload

    answer = kb_advisor.recommend(
        Workload.from_dict(
            {"benchmark": "llama2-70b-99", "scenario": "Offline", "all_rows": True}, where="test"
        ),
        top=500,
    )
    observed = [r for r in answer.recommendations if r.basis.value == "observed"]
    multi = [r for r in observed if int(r.system.get("nodes") or 1) > 1]
    assert multi, "the starter knowledge base holds multi-node llama2-70b systems"
    for r in multi:
        assert r.observed_counts == [r.candidate.accelerator_count], r.candidate
    sizes = {(r.candidate.accelerator, r.candidate.accelerator_count) for r in multi}
    assert len(sizes) >= 2
