"""The fitted efficiencies and the performance indicators that move them (issue 42, item 4)."""

from __future__ import annotations

import pytest

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.answer import proxy_answers
from stack_advisor.advisor.proxy.efficiency import Efficiency, Point, fit_efficiency
from stack_advisor.advisor.proxy.indicators import indicators, pi_factors
from stack_advisor.advisor.proxy.model import from_catalogue
from stack_advisor.store.starter import load_snapshot


def _point(eff: Efficiency, flop_s: float, byte_s: float) -> Point:
    return Point(flop_s, byte_s, 1.0 / eff.seconds(flop_s, byte_s))


def test_fit_recovers_both_efficiencies_from_compute_and_memory_bound_points() -> None:
    true = Efficiency(compute=0.45, memory=0.3)
    points = [_point(true, 1e-4, 1e-6), _point(true, 1e-6, 1e-4), _point(true, 5e-5, 5e-5)]
    got = fit_efficiency(points)
    # the grid is 0.05 decade apart: within 6% of each
    assert got.compute == pytest.approx(0.45, rel=0.06)
    assert got.memory == pytest.approx(0.3, rel=0.06)


def test_one_reference_keeps_the_prior_balance_and_moves_its_level() -> None:
    prior = Efficiency(compute=0.5, memory=0.5)
    lone = [_point(Efficiency(0.25, 0.25), 1e-5, 1e-5)]  # 8e-5 s a token
    held = fit_efficiency(lone, prior, strength=0.001)
    assert held.compute / held.memory == pytest.approx(1.0, rel=0.15)
    assert held.seconds(1e-5, 1e-5) == pytest.approx(8e-5, rel=0.15)
    # a strong prior holds the part near it whatever its one reference says
    firm = fit_efficiency(lone, prior, strength=100.0)
    assert firm.compute == pytest.approx(0.5, rel=0.15)
    with pytest.raises(ValueError, match="no points"):
        fit_efficiency([])


@pytest.fixture(scope="module")
def table() -> ObservationTable:
    return ObservationTable.from_observations(load_snapshot().observations)


def test_indicators_from_the_recorded_h100_and_h200_runs(table: ObservationTable) -> None:
    """data/results/h100-pi-full-torch.json and h200-pi-full-torch.json: FP8 GEMM at LLM shapes
    (1,244..1,323 TFLOPS measured on the H100) and the 256 MiB copies (about 2,970 GB/s)."""
    h100 = indicators(table, "H100-SXM5-80GB", "fp8", "vllm")
    assert h100 is not None and h100.framework == "pytorch"
    assert 1244 <= h100.gemm_tflops <= 1324
    assert 0.6 < h100.gemm_share < 0.7 and 0.8 < h100.bandwidth_share < 0.95
    assert "H100-SXM5-80GB (pytorch" in h100.text
    (compute, memory), h200 = pi_factors(table, "H200-SXM-141GB", "fp8")
    assert h200 is not None and compute != 1.0 and memory != 1.0
    assert pi_factors(table, "B200-SXM-180GB", "fp4") == ((1.0, 1.0), None)


@pytest.mark.slow
def test_answers_say_whether_indicators_moved_the_efficiency(table: ObservationTable) -> None:
    answers = proxy_answers(
        table,
        from_catalogue("gpt-oss-120b"),
        isl=2048,
        osl=512,
        concurrency=64,
        accelerators=["H100-SXM5-80GB", "B200-SXM-180GB"],
    )
    by_part = {a.accelerator: {name: (v, e) for name, v, e in a.factors} for a in answers}
    moved = by_part["H100-SXM5-80GB"]["performance indicators (prior efficiency moved)"]
    # H100 and H200 reach nearly the same shares, and four published models on the H100 outweigh
    # the prior: the indicators move this figure by a few percent at most
    assert "GEMM 1,311 TFLOPS fp8" in moved[0] and 0.95 <= moved[1] <= 1.05
    none = by_part["B200-SXM-180GB"]["performance indicators"]
    assert none[0].startswith("none in the knowledge base for B200-SXM-180GB") and none[1] == 1.0
    assert "efficiency on this part (fitted): compute, memory" in by_part["B200-SXM-180GB"]
