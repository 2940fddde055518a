"""A scenario no system ran beside its base scenario on a benchmark (deepseek-r1's Interactive,
first published in v6.0) takes the Interactive/Server ratio of the other LLM benchmarks, one per
model, and says so; a benchmark the rules give no such scenario is refused (issue 41: the next
round's known benchmarks answered). Results written as published trees, imported by the real
importer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.results import Basis
from stack_advisor.collectors.importers.mlperf import import_mlperf
from stack_advisor.schema.errors import NotFound
from stack_advisor.store.registry import open_store
from tests.support.mlperf import result_path, system_json, write

TRT10 = ("TensorRT 10.2.0, CUDA 12.4", "TensorRT 10.2.0, CUDA 12.4, cuDNN 9.1.0, Driver 550.54.15")
TRT108 = ("TensorRT 10.8.0, CUDA 12.8", "TensorRT 10.8.0, CUDA 12.8, cuDNN 9.7.0, Driver 570.86.15")
B200 = "NVIDIA B200-SXM-180GB"


def _server_summary(value: float) -> str:
    return (
        "MLPerf Results Summary\nSUT name : S\nScenario : Server\nMode     : PerformanceOnly\n"
        f"Completed tokens per second : {value}\nResult is : VALID\n"
    )


def _round(root: Path, systems: list[tuple[str, str, str, dict[str, float]]]) -> Path:
    """A v5.1 tree: (system id, accelerator, benchmark, scenario -> tokens/s) on 8 parts each;
    an Interactive run is a Server run (its summary says Server, its directory Interactive).
    A system id ending in -cuda128 runs a CUDA 12.8 stack (Blackwell's first)."""
    tree = root / "inference_v5.1"
    for system_id, accelerator, benchmark, results in systems:
        stack = TRT108 if system_id.endswith("-cuda128") else TRT10
        write(tree, f"closed/Acme/systems/{system_id}.json", system_json(accelerator, 8, stack))
        for scenario, value in results.items():
            write(tree, result_path(system_id, benchmark, scenario), _server_summary(value))
    return tree


def _both(
    benchmark: str, ratios: tuple[float, ...]
) -> list[tuple[str, str, str, dict[str, float]]]:
    parts = ("NVIDIA H100-SXM-80GB", "NVIDIA H200-SXM-141GB", B200)
    return [
        (
            f"{benchmark}-{i}",
            acc,
            benchmark,
            {"Server": 1000.0 * (i + 1), "Interactive": r * 1000.0 * (i + 1)},
        )
        for i, (acc, r) in enumerate(zip(parts, ratios))
    ]


def _query(benchmark: str, as_of: str) -> dict[str, object]:
    return {
        "accelerator": B200,
        "accelerator_count": 8,
        "benchmark": benchmark,
        "scenario": "Interactive",
        "metric": "tokens_per_second",
        "as_of": as_of,
    }


def _ask(advisor: Advisor, benchmark: str, as_of: str = "v6.0") -> object:
    return advisor.predict([_query(benchmark, as_of)])[0]


def test_a_benchmark_no_system_ran_both_on_takes_the_other_benchmarks_ratio(
    tmp_path: Path,
) -> None:
    server_only = [
        ("ds", B200, "deepseek-r1", {"Server": 15000.0}),
        ("mx", B200, "mixtral-8x7b", {"Server": 30000.0}),
    ]
    llama70 = _both("llama2-70b-99", (0.60, 0.64, 0.65))
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        import_mlperf(_round(tmp_path / "one", server_only + llama70), store)
        alone = _ask(Advisor(store), "deepseek-r1")  # one other benchmark: not enough
        assert alone.basis is Basis.UNSUPPORTED and alone.value is None
        assert "fewer than 2 other Interactive benchmarks hold 3" in (alone.reason or "")

        import_mlperf(_round(tmp_path / "two", _both("llama3.1-8b", (0.80, 0.82, 0.85))), store)
        advisor = Advisor(store)
        derived = _ask(advisor, "deepseek-r1")  # for v6.0, the round that added it
        assert derived.basis is Basis.TRANSFERRED and not derived.observed
        (factor,) = [f for f in derived.factors if f.name == "scenario"]
        # the median of the two benchmarks' medians (0.64, 0.82): their geometric mean; bounds:
        # each benchmark's pairs predicted from the other's median
        assert factor.effect == pytest.approx(math.sqrt(0.64 * 0.82), rel=0.01)
        assert "llama2-70b-99, llama3.1-8b" in factor.value
        assert "none ran both on deepseek-r1; bounds 0.530..0.962" in factor.value
        server = [f for f in derived.factors if f.name != "scenario"]
        assert derived.interval.low < derived.value < derived.interval.high and server

        # as of v5.1 (the newest round held) deepseek-r1 had no Interactive scenario
        before = _ask(advisor, "deepseek-r1", as_of="now")
        assert before.basis is Basis.UNSUPPORTED and before.value is None
        assert (
            "the answer is for v5.1, before the rules set Interactive for deepseek-r1 (v6.0)"
            in (before.reason or "")
        )

        # recommend ranks the parts as for Server, each by the same derived estimate (the
        # fixture's B200 stack, CUDA 12.4, cannot run there: H200 is ranked); never as observed
        workload = {"benchmark": "deepseek-r1", "scenario": "Interactive", "as_of": "v6.0"}
        ranked = advisor.recommend(workload)
        (top,) = ranked.recommendations
        assert top.candidate.accelerator == "H200-SXM-141GB" and top.basis is Basis.TRANSFERRED
        asked = advisor.predict(
            [{**_query("deepseek-r1", "v6.0"), "accelerator": "NVIDIA H200-SXM-141GB"}]
        )[0]
        assert top.value * 8 == pytest.approx(asked.value)  # ranked per accelerator
        assert top.observed_range is None  # its Server results are no Interactive range
        assert any("no Interactive results of deepseek-r1 are held" in n for n in ranked.notes)
        observed_only = advisor.recommend({**workload, "include_predicted": False})
        assert not observed_only.recommendations
        # a stack ranking reads measured results only, and says where the estimate is
        with pytest.raises(NotFound, match=r"its Server results are held .*estimate its Inter"):
            advisor.rank_stacks(benchmark="deepseek-r1", scenario="Interactive", accelerator=B200)
        # what holds for every part is said once: as of v5.1 the scenario did not exist
        with pytest.raises(NotFound, match=r"for v5\.1, before the rules set Interactive"):
            advisor.recommend({**workload, "as_of": "now"})
        # a benchmark the rules give no Interactive: the slice is missing, as before
        for ask in (
            lambda: advisor.recommend({**workload, "benchmark": "mixtral-8x7b"}),
            lambda: advisor.rank_stacks(
                benchmark="mixtral-8x7b", scenario="Interactive", accelerator=B200
            ),
        ):
            with pytest.raises(NotFound) as missing:
                ask()
            assert "estimate" not in str(missing.value)

        # mixtral-8x7b has no Interactive scenario in the rules: no other benchmark's ratio
        refused = _ask(advisor, "mixtral-8x7b")
        assert refused.basis is Basis.UNSUPPORTED and refused.value is None
        assert "the rules set it no Interactive" in (refused.reason or "")


def test_a_derived_ranking_caps_an_extrapolation_at_the_best_part_derived_from_its_own_run(
    tmp_path: Path,
) -> None:
    """No part ran Interactive: a part transferred beyond every one measured on the benchmark's
    Server (B200 from H200) ranks no higher than the best one derived from its own Server run."""
    blackwell = [
        (f"{s}-cuda128", a, b, r) if a == B200 else (s, a, b, r)
        for s, a, b, r in _both("llama2-70b-99", (0.60, 0.64, 0.65))
        + _both("llama3.1-8b", (0.80, 0.82, 0.85))
    ]
    h200 = ("ds", "NVIDIA H200-SXM-141GB", "deepseek-r1", {"Server": 5000.0})
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        import_mlperf(_round(tmp_path, [*blackwell, h200]), store)
        ranked = Advisor(store).recommend(
            {"benchmark": "deepseek-r1", "scenario": "Interactive", "as_of": "v6.0"}, top=10
        )
    first, second = ranked.recommendations
    assert first.candidate.accelerator == "H200-SXM-141GB"
    assert second.candidate.accelerator == "B200-SXM-180GB" and second.value > first.value
    assert second.score == first.score  # its own pessimistic end was higher: capped
    assert any(
        "ranked no higher than the best candidate derived from its own Server measurement" in w
        for w in second.warnings
    )


def test_a_part_no_reference_of_its_class_ran_interactive_for_is_derived_from_its_server_estimate(
    tmp_path: Path,
) -> None:
    """Only parts of another device class ran Interactive (H100, H200, B200 beside an L40S):
    the L40S is answered from its Server estimate (transferred from the L40, of its class) times
    the Interactive/Server ratio of the systems that ran both, instead of refused."""
    l40 = ("l40", "NVIDIA L40", "llama3.1-8b", {"Server": 900.0})
    runs = [*_both("llama3.1-8b", (0.80, 0.82, 0.85)), l40]
    with open_store(f"embedded:{tmp_path / 'kb'}") as store:
        import_mlperf(_round(tmp_path, runs), store)
        query = {**_query("llama3.1-8b", "now"), "accelerator": "NVIDIA L40S"}
        advisor = Advisor(store)
        derived, server = advisor.predict([query, {**query, "scenario": "Server"}])
    assert server.basis is Basis.TRANSFERRED and server.value is not None
    assert derived.basis is Basis.TRANSFERRED, derived.reason
    (factor,) = [f for f in derived.factors if f.name == "scenario"]
    assert "3 systems that ran both on llama3.1-8b" in factor.value
    assert derived.value == pytest.approx(server.value * factor.effect, rel=1e-6)
    assert derived.interval.low < derived.value < derived.interval.high


def test_an_interactive_interval_reaches_no_higher_than_its_server_estimate(
    tmp_path: Path,
) -> None:
    """An Interactive answer below the same configuration's Server estimate keeps its value, but
    its interval's top is held to the Server estimate's, saying so (a probe saw GB300 x72's
    deepseek-r1 Interactive interval reach 775k tokens/s over its observed 557k Server result);
    one above it is held to the Server estimate itself, as before."""
    from dataclasses import replace

    from stack_advisor.advisor.estimate.query import Estimate, Query

    server_only = [(f"srv-{i}", B200, "deepseek-r1", {"Server": 1000.0 + 50 * i}) for i in range(3)]
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    try:
        store.ensure_schema()
        import_mlperf(_round(tmp_path / "tree", server_only), store)
        index = Advisor(store).knowledge().index
    finally:
        store.close()
    q = Query(
        family="mlperf-inference",
        benchmark="deepseek-r1",
        scenario="Interactive",
        metric="tokens_per_second",
        division="closed",
        accelerator="B200-SXM-180GB",
        raw_accelerator=B200,
        count=8,
        placement="bare-metal",
        as_of="now",
    )
    server = index.estimate(replace(q, scenario="Server"))
    assert server.value is not None and server.high is not None
    below = Estimate(Basis.TRANSFERRED, server.value / 2, server.value / 3, server.high * 3)
    held = index._within_looser(q, below)
    assert (held.value, held.low, held.high) == (below.value, below.low, server.high)
    assert any("interval's top is held to its Server estimate's" in n for n in held.notes)
    above = Estimate(Basis.TRANSFERRED, server.value * 2, server.value, server.high * 3)
    assert index._within_looser(q, above).value == server.value
