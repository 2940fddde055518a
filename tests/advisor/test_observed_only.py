"""``--observed-only`` (``include_predicted: false``) ranks figures measured as asked: a part and
stack measured only at another count (GB200 at 4 on llama2-70b, asked at 8) is an estimate, so
it is excluded, saying why (on the starter knowledge base)."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.workload import Workload


def test_observed_only_keeps_figures_measured_at_the_count_asked(kb_advisor: Any) -> None:
    asked = {"benchmark": "llama2-70b-99", "scenario": "Offline", "hardware": {"count": 8}}
    every = kb_advisor.recommend(Workload.from_dict(asked, where="test"), top=50)
    estimated = [r for r in every.recommendations if r.basis is Basis.INTERPOLATED]
    assert estimated  # parts measured at other counts are ranked by default
    measured = kb_advisor.recommend(
        Workload.from_dict({**asked, "include_predicted": False}, where="test"), top=50
    )
    assert measured.recommendations
    assert all(r.basis is Basis.OBSERVED for r in measured.recommendations)
    assert all(r.candidate.accelerator_count == 8 for r in measured.recommendations)
    assert measured.excluded.get("not observed as asked (--observed-only)")
