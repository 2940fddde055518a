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


def test_tensor_parallel_link_time_is_counted_not_fitted() -> None:
    from stack_advisor.advisor.proxy.estimate import point_work
    from stack_advisor.advisor.proxy.work import Traffic, link_bytes

    model = from_catalogue("llama3.1-405b")
    # 126 layers x 16,384 wide: two bf16 all-reduces a layer, (1,000/100 + 1) tokens an output
    # token, a ring sends 2 x 7/8 of the message from each of 8 ranks
    expected = 11 * 2 * 126 * 16384 * 2.0 * 2 * 7 / 8
    assert link_bytes(model, Traffic(isl=1000, osl=100, batch=8), 8) == pytest.approx(expected)
    assert link_bytes(model, Traffic(isl=1000, osl=100, batch=8), 1) == 0.0
    # on H100 SXM (NVLink 4, 900 GB/s both ways) the link's time rides beside the fitted terms
    work = point_work(model, "H100-SXM5-80GB", 1000, 100, 8)
    assert work is not None and work.tp > 1 and work.link_seconds > 0
    eff = Efficiency(0.5, 0.5)
    assert work.seconds(eff) == pytest.approx(
        eff.seconds(work.flop_seconds, work.byte_seconds) + work.link_seconds
    )
    offset = Point(1e-5, 1e-5, 1.0 / (eff.seconds(1e-5, 1e-5) + 1e-5), link_seconds=1e-5)
    got = fit_efficiency([offset, _point(eff, 1e-4, 1e-6), _point(eff, 1e-6, 1e-4)])
    assert got.compute == pytest.approx(0.5, rel=0.06) and got.memory == pytest.approx(
        0.5, rel=0.06
    )


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
