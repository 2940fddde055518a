"""Time to train for unobserved (accelerator, count) pairs: the count scaling, the bases, the
budget (``--gpus N``) and its refusals, and the Training by-round evaluation on real rounds."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate.training import CountScaling, budget_count, budget_refusal
from stack_advisor.advisor.workload import Workload
from stack_advisor.collectors.importers.mlperf_training import import_mlperf_training
from tests.support.mlperf import (
    TRAINING_DIR,
    TRAINING_SYSTEM,
    mllog,
    require_training_data,
    small_training_tree,
    write,
)


def _kb(store: Any, root: Path) -> None:
    """bert on H100 at 16 (2x8, ~10.5 min) and 32 (4x8, ~6.5 min)."""
    tree = small_training_tree(root)
    big = dict(TRAINING_SYSTEM, number_of_nodes="4", system_name="Acme 4x8 H100")
    write(tree, "Acme/systems/h100x32.json", json.dumps(big))
    for i, minutes in enumerate([6.0, 6.5, 7.0]):
        write(
            tree,
            f"Acme/results/h100x32/bert/result_{i}.txt",
            mllog(1_700_000_000_000 + i * 10**7, minutes),
        )
    import_mlperf_training(tree, store)


def _query(accelerator: str, count: int) -> dict[str, Any]:
    return {
        "family": "mlperf-training",
        "benchmark": "bert",
        "metric": "time_to_train_min",
        "accelerator": accelerator,
        "accelerator_count": count,
    }


def test_count_scaling_integrates_its_slope_and_never_leaves_the_seen_range() -> None:
    linear = CountScaling(c0=-1.0, c1=0.0, low=-1.0, high=0.0, pairs=3, source="test")
    assert linear.log_ratio(8, 64) == pytest.approx(-math.log(8))
    assert linear.log_ratio(64, 8) == pytest.approx(math.log(8))
    # a slope that would turn positive at large counts is clipped at the highest one seen
    bending = CountScaling(c0=-0.9, c1=0.3, low=-1.0, high=-0.2, pairs=3, source="test")
    assert bending.slope(np.array([math.log(1e6)]))[0] == pytest.approx(-0.2)
    assert bending.log_ratio(8, 1024) < 0


def test_budget_takes_whole_nodes_and_refuses_beyond_any_published_system() -> None:
    assert budget_count(64, [8, 16]) == 64
    assert budget_count(100, [8, 64]) == 96
    assert budget_count(4, [8]) == 4
    assert budget_refusal(64, [8, 16, 3472], "bert") is None
    reason = budget_refusal(100_000, [8, 3472], "bert")
    assert reason is not None and "3472" in reason and "6944" in reason


def test_an_unpublished_count_is_interpolated_along_the_count_scaling(
    embedded_store: Any, tmp_path: Path
) -> None:
    _kb(embedded_store, tmp_path)
    # x24 lies between the published x16 and x32 (a count beyond every published system is refused:
    # stack_advisor.advisor.verbs.bounds)
    [at24, at16] = Advisor(embedded_store).predict(
        [_query("H100-SXM5-80GB", 24), _query("H100-SXM5-80GB", 16)]
    )
    assert at16.basis.value == "observed"
    assert at24.basis.value == "interpolated"
    assert at24.value is not None and at24.interval is not None
    assert 6.0 < at24.value < 10.5  # faster than the 16-GPU system, slower than the 32-GPU one
    assert at24.interval.low <= at24.value <= at24.interval.high
    scaling = next(f for f in at24.factors if f.name == "count scaling")
    assert "→ x24" in scaling.value and "pairs of published sizes" in scaling.value
    assert any(f.name == "interval" for f in at24.factors)


def test_another_accelerator_is_transferred_or_refused_with_the_reason(
    embedded_store: Any, tmp_path: Path
) -> None:
    _kb(embedded_store, tmp_path)
    h200, tpu = Advisor(embedded_store).predict(
        [_query("H200-SXM-141GB", 16), _query("TPU-v5p", 16)]
    )
    assert h200.basis.value == "transferred" and h200.references == ["H100-SXM5-80GB"]
    assert (
        h200.value is not None
        and h200.interval is not None
        and h200.interval.low < h200.value < h200.interval.high
    )
    assert h200.value < 11.0  # more peak compute and bandwidth than the H100 it is scaled from
    assert tpu.basis.value == "unsupported" and "no google accelerator" in (tpu.reason or "")


def test_recommend_under_a_budget_ranks_what_fits_with_accelerator_hours(
    embedded_store: Any, tmp_path: Path
) -> None:
    _kb(embedded_store, tmp_path)
    answer = Advisor(embedded_store).recommend(
        Workload(family="mlperf-training", benchmark="bert", hardware={"max_count": 24}), top=5
    )
    assert answer.recommendations
    for r in answer.recommendations:
        assert r.candidate.accelerator_count <= 24
        assert r.accelerator_hours is not None
        assert r.accelerator_hours.low == pytest.approx(
            r.interval.low * r.candidate.accelerator_count / 60
        )


def test_an_unpublished_count_says_where_its_time_comes_from(
    embedded_store: Any, tmp_path: Path
) -> None:
    """A time to train at a count no system published is the part's nearest published time
    moved by the count scaling, whichever stack ran it: the row says so, not "per-accelerator
    figure of this stack's other counts" (a time is a whole system's)."""
    _kb(embedded_store, tmp_path)
    answer = Advisor(embedded_store).recommend(
        Workload(family="mlperf-training", benchmark="bert", hardware={"count": 24}), top=5
    )
    (row,) = answer.recommendations
    assert row.basis.value == "interpolated" and row.candidate.accelerator_count == 24
    assert row.warnings[0].startswith("no result of this stack at x24: the part's published time")
    assert not [w for w in row.warnings if "per-accelerator" in w]
    assert [f for f in row.factors if f.name == "count scaling"]


def _cli(store_uri: str, *args: str) -> Any:
    from stack_advisor.cli.main import app

    return CliRunner().invoke(
        app,
        [
            "recommend",
            "--family",
            "mlperf-training",
            "--benchmark",
            "bert",
            "--store",
            store_uri,
            *args,
        ],
    )


@pytest.fixture
def training_uri(tmp_path: Path) -> str:
    from stack_advisor.store.registry import open_store

    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        _kb(store, tmp_path / "src")
    return uri


def test_cli_gpus_is_the_budget_for_training(training_uri: str) -> None:
    result = _cli(training_uri, "--gpus", "16", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["recommendations"]
    assert rows and all(r["candidate"]["accelerator_count"] <= 16 for r in rows)
    assert all(r["accelerator_hours"] is not None for r in rows)
    table = _cli(training_uri, "--gpus", "16")
    assert table.exit_code == 0 and "acc-hours" in table.stdout


def test_cli_refuses_a_budget_no_system_offers(
    training_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app

    status = run_guarded(
        app,
        [
            "recommend",
            "--family",
            "mlperf-training",
            "--benchmark",
            "bert",
            "--store",
            training_uri,
            "--gpus",
            "100000",
        ],
    )
    out, err = capsys.readouterr()
    assert status == 2 and not out
    assert "beyond every published bert system (the largest ran 32)" in err and "None ()" not in err


def test_cli_training_with_a_scenario_is_a_usage_error(training_uri: str) -> None:
    result = _cli(training_uri, "--scenario", "Offline")
    assert result.exit_code == 2
    assert "MLPerf Training has no scenarios" in result.output and "--scenario" in result.output


def test_workload_refuses_a_training_scenario() -> None:
    with pytest.raises(ValueError, match="MLPerf Training has no scenarios"):
        Workload(family="mlperf-training", benchmark="bert", scenario="Offline")


@pytest.mark.slow  # ~22 s: every published training round imported and evaluated
def test_training_by_round_on_the_published_rounds(embedded_store: Any) -> None:
    """v4.1 → v5.0 through ``predict``: most results answered, every benchmark v4.1 never ran
    (llama3.1-405b) refused, and the answered figures near the truth."""
    require_training_data()
    newer = TRAINING_DIR / "training_v5.0.tar.gz"
    if not newer.exists():
        pytest.skip(f"{newer} not found")
    for archive in (TRAINING_DIR / "training_v4.1.tar.gz", newer):
        import_mlperf_training(archive, embedded_store)
    report = Advisor(embedded_store).evaluate("training")
    assert report.description.startswith("train rounds <= v4.1, test v5.0")
    o = report.overall
    assert o.predictions / (o.predictions + o.refused) >= 0.9
    assert o.mape is not None and o.mape <= 15
    assert (
        report.unseen_benchmark_queries > 0
        and report.unseen_benchmark_refused == report.unseen_benchmark_queries
    )
    assert set(report.by_basis) >= {"observed", "interpolated", "transferred"}


def test_a_latency_limit_is_checked_against_an_estimate_when_nothing_was_observed() -> None:
    from stack_advisor.advisor.estimate.latency import limit_verdict
    from stack_advisor.advisor.estimate.query import Estimate
    from stack_advisor.advisor.results import Basis

    def est(value: float, low: float, high: float) -> Estimate:
        return Estimate(Basis.TRANSFERRED, value, low, high)

    excluded, text = limit_verdict(
        2000, "max_ttft_ms", "time to first token", est(2600, 2100, 3400)
    )
    assert excluded is not None and excluded.startswith(
        "estimated time to first token p99 above max_ttft_ms=2000 ms"
    )
    assert "80% 2100..3400, transferred" in text
    kept, straddles = limit_verdict(
        2000, "max_ttft_ms", "time to first token", est(1500, 900, 2400)
    )
    assert kept is None and straddles.endswith("may exceed max_ttft_ms=2000 ms")
    fine, below = limit_verdict(2000, "max_ttft_ms", "time to first token", est(900, 700, 1200))
    assert fine is None and below.endswith("<= max_ttft_ms=2000 ms")


def test_recommend_applies_latency_limits_to_unobserved_candidates(
    embedded_store: Any, tmp_path: Path
) -> None:
    """B200 ran llama2-70b Offline only: its Server TTFT is transferred from the H100 and H200
    Server runs, and the limit is checked against that estimate, shown with its basis."""
    from tests.support.serving import serving_kb

    serving_kb(embedded_store, tmp_path)
    answer = Advisor(embedded_store).recommend(
        Workload(
            benchmark="llama2-70b-99", scenario="Server", per_accelerator=False, max_ttft_ms=2000
        ),
        top=10,
    )
    b200 = [r for r in answer.recommendations if r.candidate.accelerator == "B200-SXM-180GB"]
    excluded = [e for e in answer.excluded_candidates if e.accelerator == "B200-SXM-180GB"]
    assert b200 or excluded
    if b200:
        said = [*b200[0].system.values(), *b200[0].warnings]
        assert any("time to first token p99 estimated" in s and "transferred" in s for s in said), (
            said
        )
    else:
        assert excluded[0].reason.startswith(
            "estimated time to first token p99 above max_ttft_ms=2000 ms"
        )


def test_latency_protocol_scores_ttft_and_tpot_by_round(
    embedded_store: Any, tmp_path: Path
) -> None:
    """Two rounds of LLM Server results: the later one's p99 TTFT/TPOT asked through ``predict``
    from the earlier one, scored per metric."""
    from stack_advisor.collectors.importers.mlperf import import_mlperf
    from tests.support.mlperf import SYSTEM, result_path
    from tests.support.serving import LLM_SERVER

    for rnd, rows in (
        # rounds as MLCommons names them (an x.0 and an x.1 a year: a v9.9 is no round)
        ("v9.0", (("a", "H100-SXM5-80GB", 900, 120), ("b", "H200-SXM-141GB", 2600, 150))),
        ("v9.1", (("c", "H100-SXM5-80GB", 1000, 125), ("d", "H200-SXM-141GB", 2300, 140))),
    ):
        tree = tmp_path / f"inference_{rnd}"
        for name, model, ttft, tpot in rows:
            write(
                tree,
                f"closed/Acme/systems/{name}.json",
                json.dumps(
                    dict(
                        SYSTEM,
                        accelerator_model_name=model,
                        # a stack that runs an LLM on both parts (H200 needs a 535+ driver)
                        framework="TensorRT-LLM 0.12.0, TensorRT 10.2.0, CUDA 12.4",
                        other_software_stack="TensorRT 10.2.0, CUDA 12.4, cuDNN 9.1.0, "
                        "Driver 550.54.15",
                    )
                ),
            )
            write(
                tree,
                result_path(name, "llama2-70b-99", "Server"),
                LLM_SERVER.format(tokens=20000, ttft_ns=ttft * 10**6, tpot_ns=tpot * 10**6),
            )
        assert import_mlperf(tree, embedded_store).failed == 0
    report = Advisor(embedded_store).evaluate("latency")
    assert report.description == "train rounds <= v9.0, test v9.1 closed-division LLM p99 TTFT/TPOT"
    assert set(report.by_metric) == {"ttft_p99_ms", "tpot_p99_ms"}
    ttft = report.by_metric["ttft_p99_ms"]
    assert ttft.predictions == 2 and ttft.mape == pytest.approx((100 / 1000 + 300 / 2300) / 2 * 100)


def test_cluster_gpus_beyond_every_pool_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: ``--gpus 100000`` on a cluster is refused with each pool's reason, never an empty
    table under a "None ()" header with exit 0."""
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app
    from stack_advisor.store.registry import open_store
    from tests.support.gfd_pools import POOL_NODES
    from tests.support.serving import serving_kb

    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        serving_kb(store, tmp_path / "src")
    nodes = tmp_path / "nodes.json"
    nodes.write_text(
        POOL_NODES if isinstance(POOL_NODES, str) else json.dumps(POOL_NODES), encoding="utf-8"
    )
    status = run_guarded(
        app,
        [
            "recommend",
            "--benchmark",
            "llama2-70b-99",
            "--scenario",
            "Server",
            "--store",
            uri,
            "--nodes",
            str(nodes),
            "--gpus",
            "100000",
        ],
    )
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert "--gpus 100000: no pool offers that many" in err and "needs 12500 nodes of 8" in err
    assert "None ()" not in out + err


def test_transfer_replays_ask_a_part_new_to_a_round_from_the_rounds_before() -> None:
    """The replay a transfer is calibrated on: a part in its first round of the benchmark, asked
    from its same-class peers as the earlier rounds knew them (each peer's latest earlier round),
    never from its own round's results."""
    from types import SimpleNamespace

    from stack_advisor.advisor.estimate.training import TrainingEstimator

    # (round, accelerator, count, minutes)
    results = [
        (1.0, "H100-SXM5-80GB", 8, 30.0),
        (2.0, "H100-SXM5-80GB", 8, 27.0),
        (2.0, "B200-SXM-180GB", 8, 15.0),
        (3.0, "B200-SXM-180GB", 8, 14.0),
    ]
    table = SimpleNamespace(
        count=np.array([r[2] for r in results]), value=np.array([r[3] for r in results])
    )
    index = SimpleNamespace(
        table=table,
        round_no=np.array([r[0] for r in results]),
        accel=np.array([r[1] for r in results]),
        raw_names={},
    )
    by_acc = {
        "H100-SXM5-80GB": np.array([0, 1]),
        "B200-SXM-180GB": np.array([2, 3]),
    }
    estimator = TrainingEstimator(index)
    replays = list(estimator._next_round_peers(("mlperf-training", "bert", "", "t"), by_acc))
    assert replays == [((2.0, "B200-SXM-180GB"), {8: 15.0}, {"H100-SXM5-80GB": {8: 30.0}})]


def test_an_observed_row_under_a_budget_describes_the_results_it_read(
    tmp_path: Path,
) -> None:
    """A 4x8 system whose stack file names no CUDA or driver, asked under --gpus 16, is answered
    from the 2x8 system's result at 16 (the stack it names is the same framework): the row's
    counts, evidence and system are that result's, not the 4x8 system's it was ranked as."""
    from stack_advisor.store.registry import open_store

    tree = small_training_tree(tmp_path / "src")
    big = dict(
        TRAINING_SYSTEM,
        number_of_nodes="4",
        system_name="Acme 4x8 H100",
        other_software_stack="Linux 5.15",
    )
    write(tree, "Acme/systems/h100x32.json", json.dumps(big))
    for i, minutes in enumerate([6.0, 6.5, 7.0]):
        write(tree, f"Acme/results/h100x32/bert/result_{i}.txt", mllog(1_700_000_000_000, minutes))
    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        import_mlperf_training(tree, store)
    result = _cli(uri, "--gpus", "16", "--json", "--all")
    assert result.exit_code == 0, result.output
    observed = [r for r in json.loads(result.stdout)["recommendations"] if r["basis"] == "observed"]
    assert len(observed) == 2  # each stack's row at 16
    for r in observed:
        assert r["observed_counts"] == [16] == [r["candidate"]["accelerator_count"]]
        assert (r["system"]["nodes"], r["system"]["accelerators_per_node"]) == ("2", "8")


def test_a_training_result_is_dated_by_training_s_calendar(kb_advisor: Any) -> None:
    """Training v5.1 was published on 2025-11-12, Inference v5.1 on 2025-09-09: a probe's
    Training answers read the Inference date (the round name alone was looked up)."""
    from stack_advisor.catalog.rounds import round_date

    (p,) = kb_advisor.predict([{**_query("GB300", 8), "benchmark": "llama2_70b_lora"}])
    assert p.basis.value == "observed", p.reason
    newest = max(p.evidence.rounds)
    assert p.evidence.last_seen == round_date(newest, "mlperf-training")
    assert round_date("v5.1", "mlperf-training") != round_date("v5.1")


def test_a_catalogued_training_benchmark_without_results_names_its_importer(
    kb_advisor: Any,
) -> None:
    from stack_advisor.schema.errors import NotFound

    with pytest.raises(NotFound, match="advisor import mlperf-training") as refused:
        kb_advisor.recommend({"family": "mlperf-training", "benchmark": "gpt_oss_20b"})
    assert "mlperf-summary" not in str(refused.value)


def test_a_stack_naming_no_version_is_ranked_at_its_own_results(kb_advisor: Any) -> None:
    """Two MI355X systems publish their stack as "PyTorch" alone: their query names no component,
    so it had matched every MI355X x8 result and each row showed the median of all four (and,
    after a later round's import, that round's result as its observed figure)."""
    ranked = kb_advisor.recommend(
        {
            "family": "mlperf-training",
            "benchmark": "llama2_70b_lora",
            "hardware": {"accelerators": ["MI355X"]},
            "all_rows": True,
            "as_of": "now",
        },
        top=30,
    )
    bare = [r for r in ranked.recommendations if r.candidate.stack_label == "pytorch ?"]
    assert len(bare) >= 2
    for r in bare:
        assert r.basis.value == "observed" and r.evidence.count == 1
        assert r.observed_range is not None
        assert r.observed_range.low == r.observed_range.high == pytest.approx(r.value)
    assert len({round(r.value, 6) for r in bare}) == len(bare)  # each its own


def test_a_held_training_round_asked_is_answered_from_its_own_results(kb_advisor: Any) -> None:
    """A probe imported a next Training round and asked ``--as-of v5.1``: the answer was the new
    round's result carried back by the drift, not v5.1's own (as Inference answers it)."""
    query = {**_query("B200-SXM-180GB", 8), "benchmark": "llama2_70b_lora"}
    then, latest = kb_advisor.predict([{**query, "as_of": "v5.0"}, {**query, "as_of": "now"}])
    assert (then.basis.value, then.round, latest.round) == ("observed", "v5.0", "v5.1")
    assert "v5.1" not in then.evidence.rounds and then.observed is True
    assert not [f for f in then.factors if f.name in ("round drift", "forecast")]
    assert then.value != latest.value


def test_a_training_ranking_without_a_count_shows_each_published_size(kb_advisor: Any) -> None:
    """A stack published at x8, x72 and x512 had been one row at its most common size: the
    fastest (x512) and the cheapest in accelerator-hours (x8) never showed (a probe)."""
    workload = {"family": "mlperf-training", "benchmark": "llama2_70b_lora", "all_rows": True}
    ranked = kb_advisor.recommend(workload, top=100)
    counts = {
        r.candidate.accelerator_count
        for r in ranked.recommendations
        if r.candidate.accelerator == "GB300"
    }
    assert {8, 72, 512} <= counts, counts
    budget = kb_advisor.recommend({**workload, "hardware": {"max_count": 64}}, top=100)
    assert {r.candidate.accelerator_count for r in budget.recommendations} <= set(range(1, 65))


def test_a_stack_naming_no_version_is_as_measured_as_a_named_one(kb_advisor: Any) -> None:
    """Asked by its id, a version-less stack's own result is the stack's as measured, like a
    named stack's: not moved by the rounds' drift (a review found "pytorch ?" rows forecast to
    the next round above "pytorch 2.8.0" left as measured)."""
    ranked = kb_advisor.recommend(
        {
            "family": "mlperf-training",
            "benchmark": "llama2_70b_lora",
            "hardware": {"accelerators": ["MI355X"], "count": 8},
            "all_rows": True,
            "as_of": "next",
        },
        top=30,
    )
    rows = {r.candidate.stack_label: r for r in ranked.recommendations}
    assert "pytorch ?" in rows and "pytorch 2.8.0" in rows
    for label in ("pytorch ?", "pytorch 2.8.0"):
        r = rows[label]
        assert not [f for f in r.factors if f.name in ("forecast", "round drift")], label
        assert r.round == "v5.1", (label, r.round)


def test_predict_holds_a_training_count_to_the_bound_a_budget_is_held_to(kb_advisor: Any) -> None:
    """A probe: predict answered llama2_70b_lora at x11,616 (the largest system of any Training
    benchmark), extrapolated from x8..x512, where recommend --gpus refused past twice the
    benchmark's own largest."""
    base = {**_query("GB300", 8), "benchmark": "llama2_70b_lora"}
    inside, beyond = kb_advisor.predict(
        [{**base, "accelerator_count": 2048}, {**base, "accelerator_count": 11616}]
    )
    assert inside.value is not None
    assert beyond.value is None and "not extrapolated past twice that" in (beyond.reason or "")
    assert "a count of 11616 accelerators" in (beyond.reason or "")


def test_a_budget_offers_a_smaller_published_size_that_trains_faster(kb_advisor: Any) -> None:
    """Under 32 accelerators a B200 retinanet stack is ranked at the size within the budget that
    trains fastest: its 16 (12.6 min as published), not 32, where the only B200 32-GPU system is
    one university's 27.7 min (a probe's ranking had offered that alone)."""
    answer = kb_advisor.recommend(
        Workload(family="mlperf-training", benchmark="retinanet", hardware={"max_count": 32}),
        top=40,
    )
    b200 = [r for r in answer.recommendations if r.candidate.accelerator == "B200-SXM-180GB"]
    assert b200 and all(r.candidate.accelerator_count <= 32 for r in b200)
    best = min(b200, key=lambda r: r.value)
    assert best.candidate.accelerator_count == 16 and best.value < 13, best


def test_a_published_training_run_is_answered_whatever_the_memory_rule_says(
    embedded_store: Any, tmp_path: Path
) -> None:
    """16 bytes per parameter would refuse llama3.1-405b on 16 H100s (1,280 GB of 6,480); a
    published run there is proof it fit: answered as observed. 8 are still refused."""
    tree = small_training_tree(tmp_path / "src")
    for i, minutes in enumerate([600.0, 610.0, 620.0]):
        run = mllog(1_700_000_000_000 + i * 10**8, minutes)
        write(tree, f"Acme/results/h100x16/llama31_405b/result_{i}.txt", run)
    import_mlperf_training(tree, embedded_store)
    ask = {**_query("NVIDIA H100-SXM5-80GB", 16), "benchmark": "llama31_405b"}
    published, eight = Advisor(embedded_store).predict([ask, {**ask, "accelerator_count": 8}])
    assert published.basis.value == "observed" and published.value == pytest.approx(610.0)
    assert eight.basis.value == "unsupported" and "to train" in (eight.reason or ""), eight


def test_a_benchmark_kind_is_read_from_the_catalogue_s_task() -> None:
    from stack_advisor.advisor.estimate.training import scale_kind

    assert scale_kind("llama2_70b_lora") == "llm"
    assert scale_kind("llama31_405b") == "llm"
    assert scale_kind("retinanet") == "other"
    assert scale_kind("dlrm_dcnv2") == "other"
    assert scale_kind("no-such-benchmark") == ""


def test_the_peak_scaling_is_chosen_for_the_benchmark_s_kind_where_its_replays_suffice(
    kb_advisor: Any,
) -> None:
    """An LLM's scaling is picked on LLM replays, a small model's on the others', each where
    it has ``MIN_KIND_REPLAYS`` of them, else both on every benchmark's; an uncatalogued
    benchmark takes every benchmark's. Each choice is what its own replays score best."""
    from stack_advisor.advisor.estimate import training

    estimator = kb_advisor.evidence().training
    metric = "time_to_train_min"
    pooled = estimator.alpha(metric)
    assert estimator.alpha(metric, "no-such-benchmark") == pooled
    chosen = estimator._alpha[metric]
    assert set(chosen) <= {"", "llm", "other"} and "" in chosen
    for benchmark, kind in (("llama2_70b_lora", "llm"), ("retinanet", "other")):
        assert estimator.alpha(metric, benchmark) == chosen.get(kind, pooled)
    # the choice for a kind scores no worse on that kind's replays than the pooled choice
    for kind in set(chosen) - {""}:
        errors: dict[tuple[float, float, int], list[float]] = {chosen[kind]: [], pooled: []}
        for key, by_acc in estimator.index.slices.items():
            if key[0] != training.FAMILY or key[3] != metric or training.scale_kind(key[1]) != kind:
                continue
            for _, ((_rnd, acc), by_count, refs) in estimator._replays(key, by_acc):
                for how in errors:
                    for n, v in by_count.items():
                        got = estimator._transfer(key, acc, n, refs, how)
                        if got is not None:
                            errors[how].append(abs(math.log(v / got[0])))
        assert len(errors[pooled]) >= training.MIN_KIND_REPLAYS
        # (the choice compares scores rounded to 4 places)
        assert np.median(errors[chosen[kind]]) <= np.median(errors[pooled]) + 5e-5
    # an answer scales by its kind's choice and says which replays it was learned on
    [p] = kb_advisor.predict(
        [
            {
                "family": "mlperf-training",
                "benchmark": "llama2_70b_lora",
                "metric": metric,
                "accelerator": "H20",
                "accelerator_count": 8,
            }
        ]
    )
    assert p.basis.value == "transferred"
    a, g, _ = estimator.alpha(metric, "llama2_70b_lora")
    reference = next(f.value for f in p.factors if f.name == "reference")
    assert f"(peak compute^{a:g} x bandwidth^{1 - a:g})^{g:g}" in reference
    learned = "the LLM benchmarks'" if "llm" in chosen else "every benchmark's"
    assert f"on {learned} replays" in reference


def test_a_count_between_two_published_sizes_reads_both(
    embedded_store: Any, tmp_path: Path
) -> None:
    """x24 between the published x16 and x32: moved from each along the count scaling and
    weighted by closeness in log count, so the estimate meets each published figure at its
    count and moves steadily between them (x20 and x28 are no longer read off one side)."""
    _kb(embedded_store, tmp_path)
    counts = [16, 20, 24, 28, 32]
    answers = Advisor(embedded_store).predict([_query("H100-SXM5-80GB", n) for n in counts])
    values = [a.value for a in answers]
    assert all(v is not None for v in values)
    assert values == sorted(values, reverse=True)  # fewer minutes as the count grows
    scaling = next(f.value for f in answers[2].factors if f.name == "count scaling")
    assert "x16 and x32 → x24" in scaling and "weighted 0.42 / 0.58" in scaling  # x32 nearer
    estimator = Advisor(embedded_store).evidence().training
    key = next(k for k in estimator.index.slices if k[1] == "bert" and k[3] == "time_to_train_min")
    by_count = {16: 10.5, 32: 6.5}
    curve = estimator.scaling(key)
    at16, _ = estimator._from_counts(key, by_count, 16)
    assert at16 == pytest.approx(10.5)
    at24, near = estimator._from_counts(key, by_count, 24)
    w = math.log(32 / 24) / math.log(32 / 16)
    expected = math.exp(
        w * (math.log(10.5) + curve.log_ratio(16, 24))
        + (1 - w) * (math.log(6.5) + curve.log_ratio(32, 24))
    )
    assert at24 == pytest.approx(expected) and near == 32


def test_a_warmed_advisor_answers_training_without_replaying_its_history(
    mlperf_store: Any,
) -> None:
    """A probe's first MLPerf Training answer on a warm server took 4 s (its intervals' replays,
    computed on first use); ``warm`` (the server's start-up) now computes them, and the answer
    workers load them with the snapshot."""
    from stack_advisor.advisor.engine import Advisor

    advisor = Advisor(mlperf_store, memo_answers=False)
    advisor.warm()
    training = advisor.evidence().training
    assert training._residuals is not None and training._drift is not None
