"""Training workloads (time to train, accelerator-hours, gang snippets) and LLM serving limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.workload import Workload
from stack_advisor.collectors.importers.mlperf_training import import_mlperf_training
from stack_advisor.schema.errors import InvalidInput
from tests.support.mlperf import (
    TRAINING_SYSTEM,
    mllog,
    small_training_tree,
    write,
)
from tests.support.serving import serving_kb

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"


def _training_kb(store: Any, root: Path) -> None:
    tree = small_training_tree(root)
    # a faster but bigger system: 4 nodes x 8, so more accelerator-hours for less time
    big = dict(
        TRAINING_SYSTEM,
        number_of_nodes="4",
        system_name="Acme 4x8 H100",
        other_software_stack={"cuda_version": "12.4", "cuda_driver_version": "550.54.15"},
    )
    write(tree, "Acme/systems/h100x32.json", json.dumps(big))
    for i, minutes in enumerate([6.0, 6.5, 7.0]):
        write(
            tree,
            f"Acme/results/h100x32/bert/result_{i}.txt",
            mllog(1_700_000_000_000 + i * 10**7, minutes),
        )
    import_mlperf_training(tree, store)


def test_training_ranks_by_time_to_train_then_by_accelerator_hours(
    embedded_store: Any, tmp_path: Path
) -> None:
    _training_kb(embedded_store, tmp_path)
    advisor = Advisor(embedded_store)
    fastest = advisor.recommend(
        Workload(family="mlperf-training", benchmark="bert", include_predicted=False, image=IMAGE),
        top=2,
    )
    assert fastest.metric == "time_to_train_min"
    assert [r.candidate.accelerator_count for r in fastest.recommendations] == [32, 16]
    first, second = fastest.recommendations
    assert first.value == pytest.approx(6.5) and second.value == pytest.approx(11.0)
    assert first.higher_is_better is False and first.score > second.score
    assert first.system == {
        "nodes": "4",
        "accelerators_per_node": "8",
        "interconnect": "NVLINK Gen4 900 GB/s",
    }
    assert any("RCP" in note for note in fastest.notes)
    job = first.snippet
    assert (job["kind"], job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"]) == (
        "PyTorchJob",
        4,
    )
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 3)
    container = replicas["Worker"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert container["image"] == IMAGE
    # no image known and none given: no gang either, and the reason says how to get one
    bare = advisor.recommend(
        Workload(family="mlperf-training", benchmark="bert", include_predicted=False), top=1
    )
    assert bare.recommendations[0].snippet is None and "--image" in (
        bare.recommendations[0].snippet_missing or ""
    )

    cheapest = advisor.recommend(
        Workload(
            family="mlperf-training", benchmark="bert", objective="cost", include_predicted=False
        ),
        top=2,
    )
    assert cheapest.metric == "accelerator_hours"
    assert [r.candidate.accelerator_count for r in cheapest.recommendations] == [16, 32]
    assert cheapest.recommendations[0].value == pytest.approx(11.0 / 60 * 16)


def test_training_cli_json(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app
    from stack_advisor.store.registry import open_store

    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        _training_kb(store, tmp_path / "src")
    result = CliRunner().invoke(
        app,
        [
            "recommend",
            "--family",
            "mlperf-training",
            "--benchmark",
            "bert",
            "--observed-only",
            "--image",
            IMAGE,
            "--store",
            uri,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["metric"] == "time_to_train_min"
    assert data["recommendations"][0]["system"]["nodes"] == "4"
    assert "PyTorchJob" in data["recommendations"][0]["snippet_yaml"]


def test_latency_limits_exclude_candidates_that_break_them(
    embedded_store: Any, tmp_path: Path
) -> None:
    serving_kb(embedded_store, tmp_path)
    advisor = Advisor(embedded_store)
    unlimited = advisor.recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Server",
            include_predicted=False,
            per_accelerator=False,
        ),
        top=5,
    )
    assert unlimited.recommendations[0].candidate.accelerator == "H200-SXM-141GB"
    limited = advisor.recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Server",
            include_predicted=False,
            per_accelerator=False,
            max_ttft_ms=2000,
            max_tpot_ms=200,
        ),
        top=5,
    )
    assert [r.candidate.accelerator for r in limited.recommendations] == ["H100-SXM5-80GB"]
    assert limited.excluded["observed time to first token p99 above max_ttft_ms=2000 ms"] == 1
    assert limited.excluded["observed time per output token p99 above max_tpot_ms=200 ms"] == 1
    kept = limited.recommendations[0]
    assert kept.metric == "tokens_per_second"
    assert (
        kept.system["limit_0"] == "time to first token p99 900 ms <= max_ttft_ms=2000 ms (observed)"
    )


def test_latency_limits_unchecked_are_warned_not_hidden(
    embedded_store: Any, tmp_path: Path
) -> None:
    serving_kb(embedded_store, tmp_path)
    result = Advisor(embedded_store).recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Offline",
            include_predicted=False,
            per_accelerator=False,
            max_ttft_ms=2000,
        ),
        top=5,
    )
    offline = next(r for r in result.recommendations if r.candidate.accelerator == "B200-SXM-180GB")
    assert (
        "max_ttft_ms not checked: no observed time to first token for this configuration"
        in offline.warnings
    )
    # no Offline result records a TTFT: the limit cannot apply, said once
    assert (
        "--max-ttft-ms not applied: no llama2-70b-99 Offline result records a p99 time to first "
        "token (LLM Server and Interactive results do)" in result.notes
    )
    assert not any(n.startswith("latency limits are checked") for n in result.notes)


def test_a_latency_limit_checked_on_other_scenarios_is_not_said_unapplied(
    embedded_store: Any, tmp_path: Path
) -> None:
    """No scenario named: the limit is checked on the benchmark's Server results (a candidate
    excluded by it), so no note says it was not applied (a review found both at once)."""
    serving_kb(embedded_store, tmp_path)
    result = Advisor(embedded_store).recommend(
        Workload(benchmark="llama2-70b-99", include_predicted=False, max_ttft_ms=1000), top=5
    )
    assert any(k.startswith("observed time to first token p99 above") for k in result.excluded)
    assert not any(n.startswith("--max-ttft-ms not applied") for n in result.notes)


def test_latency_limits_must_be_positive() -> None:
    with pytest.raises(InvalidInput, match="max_ttft_ms"):
        Workload.from_dict({"benchmark": "llama2-70b-99", "max_ttft_ms": -1})


def test_latency_limit_cli_flags(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app
    from stack_advisor.store.registry import open_store

    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        serving_kb(store, tmp_path / "src")
    result = CliRunner().invoke(
        app,
        [
            "recommend",
            "--benchmark",
            "llama2-70b-99",
            "--scenario",
            "Server",
            "--max-ttft-ms",
            "2000",
            "--max-tpot-ms",
            "200",
            "--observed-only",
            "--store",
            uri,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["candidate"]["accelerator"] for r in data["recommendations"]] == ["H100-SXM5-80GB"]
    assert sum(v for k, v in data["excluded"].items() if "p99 above" in k) == 2


def test_a_throughput_whose_latency_cannot_meet_the_limits_says_so(kb_advisor: Any) -> None:
    """deepseek-r1 Server on 16 H100: predict's p99 TPOT lies wholly above the 80 ms limit, and
    the throughput answer for the same configuration had said nothing (a probe, on 8 H200, whose
    TPOT interval now reaches below the limit: its lower end carries the headroom transfers have
    shown beyond their references' peak bound)."""
    base = {
        "accelerator": "H100-SXM5-80GB",
        "accelerator_count": 16,
        "benchmark": "deepseek-r1",
        "scenario": "Server",
    }
    tput, tpot = kb_advisor.predict(
        [{**base, "metric": "tokens_per_second"}, {**base, "metric": "tpot_p99_ms"}]
    )
    assert tput.basis.value != "observed" and tpot.interval is not None
    assert tpot.interval.low > 80, tpot.interval  # the case: its TPOT cannot meet the limit
    said = [w for w in tput.warnings if "wholly above the published Server limit of 80 ms" in w]
    assert len(said) == 1 and "time per output token" in said[0]
    ranked = kb_advisor.recommend(
        {
            **{k: base[k] for k in ("benchmark", "scenario")},
            "hardware": {"accelerators": ["H100"], "count": 16},
        }
    )
    assert any("wholly above" in w for r in ranked.recommendations for w in r.warnings), (
        ranked.recommendations[0].warnings
    )


def test_an_interactive_throughput_is_at_most_the_same_configuration_s_server_one(
    kb_advisor: Any,
) -> None:
    """Interactive is a Server run under tighter latency limits: every system that published
    both ran Interactive at or below its Server figure. A probe read MI300X x8 llama3.1-8b at
    57,775 Interactive beside 54,412 Server tokens/s (two transfers from different parts)."""
    base = {"accelerator": "MI300X", "accelerator_count": 8, "metric": "tokens_per_second"}
    for benchmark in ("llama3.1-8b", "llama2-70b-99"):
        server, interactive = kb_advisor.predict(
            [
                {**base, "benchmark": benchmark, "scenario": "Server"},
                {**base, "benchmark": benchmark, "scenario": "Interactive"},
            ]
        )
        assert server.value is not None and interactive.value is not None
        assert interactive.value <= server.value * (1 + 1e-9), benchmark
        bound = [f for f in interactive.factors if f.name == "Server bound"]
        if interactive.value == pytest.approx(server.value):
            assert bound and "tighter" in bound[0].value


def test_a_scenario_derived_from_another_is_for_the_round_asked(kb_advisor: Any) -> None:
    """deepseek-r1 has no Interactive results held: its Interactive rows, derived from the
    stacks' own v5.1 Server results, had said round v5.1 (a round that had no deepseek-r1
    Interactive) as if measured then."""
    ranked = kb_advisor.recommend(
        {"benchmark": "deepseek-r1", "scenario": "Interactive", "as_of": "v6.0"}, top=3
    )
    assert ranked.recommendations
    for r in ranked.recommendations:
        assert r.basis.value == "transferred" and r.round == "v6.0", (r.round, r.warnings)
        assert any(w.startswith("estimated from Server") for w in r.warnings)


def test_a_latency_ranking_reads_the_bound_p99_and_refuses_a_throughput(kb_advisor: Any) -> None:
    """A probe: ``--objective latency`` on llama2-70b Server ranked the mean TTFT (one of a dozen
    statistics as common as the p99 the limits bind), and with ``--metric tokens_per_second``
    ranked per-system totals under a footer promising the interval's pessimistic end."""
    from stack_advisor.schema.errors import InvalidInput

    workload = {"benchmark": "llama2-70b-99", "scenario": "Server", "objective": "latency"}
    assert kb_advisor.recommend(workload, top=1).metric == "ttft_p99_ms"
    # a scenario that publishes a latency of its own is ranked on it (SingleStream: its p90)
    single = {"benchmark": "resnet50", "scenario": "SingleStream", "objective": "latency"}
    assert kb_advisor.recommend(single, top=1).metric == "p90_latency_ms"
    with pytest.raises(InvalidInput, match=r"'latency' ranks a latency .* is a throughput"):
        kb_advisor.recommend({**workload, "metric": "tokens/s"}, top=1)
