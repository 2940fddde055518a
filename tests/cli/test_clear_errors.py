"""Inputs a new user tries that used to get a misleading or silent answer (issue 43, item 8):
a binary or empty file, a catalogue filter with a typo, a catalogued benchmark without results,
metric names as the docs write them, Training rounds, Training seeds that did not converge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.names import canonical_query
from stack_advisor.advisor.results import PredictQuery
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import (
    FailureClass,
    FailureIn,
    IngestBatch,
    Observation,
    failure_class,
)
from stack_advisor.store.base import Store
from tests.support.cli import advisor, isolate_cli


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)
    monkeypatch.setenv("ADVISOR_STORE", f"embedded:{tmp_path / 'missing-kb'}")


def _error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("content", "wanted"),
    [(b"\x89\xac\x00\xffPNG", "is not text (byte 0x89 at offset 0"), (b"", "is empty")],
    ids=["binary", "empty"],
)
@pytest.mark.parametrize("option", ["--workload", "--query"])
def test_binary_or_empty_file_names_the_file_and_what_is_wrong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, wanted: str, option: str
) -> None:
    path = tmp_path / "bin.dat"
    path.write_bytes(content)
    verb = "recommend" if option == "--workload" else "predict"
    code, out, err = advisor(capsys, verb, option, str(path))
    line = _error(err)
    assert code == 2 and out == "" and str(path) in line and wanted in line
    code, out, _ = advisor(capsys, verb, option, str(path), "--json")
    assert code == 2 and wanted in json.loads(out)["error"]["message"]


def test_catalogue_list_takes_the_kind_as_written_in_the_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = advisor(capsys, "catalogue", "list", "benchmarks", "--json")
    ids = {row["id"] for row in json.loads(out)}
    assert code == 0 and {"resnet50", "gpt-oss-120b"} <= ids
    code, out, _ = advisor(capsys, "catalogue", "list", "--kind", "benchmarks", "--json")
    assert code == 0 and {row["id"] for row in json.loads(out)} == ids
    code, _, err = advisor(capsys, "catalogue", "list", "benchmarks", "--kind", "accelerators")
    assert code == 2 and "disagree" in _error(err)


@pytest.mark.parametrize(
    ("option", "typo", "hint"),
    [("--vendor", "nvidiaa", "did you mean 'nvidia'"), ("--family", "H10", "did you mean 'H100'")],
)
def test_a_catalogue_filter_with_a_typo_is_a_usage_error_not_an_empty_table(
    capsys: pytest.CaptureFixture[str], option: str, typo: str, hint: str
) -> None:
    code, out, err = advisor(capsys, "catalogue", "list", option, typo)
    line = _error(err)
    assert code == 2 and out == "" and typo in line and hint in line
    code, out, _ = advisor(capsys, "catalogue", "list", "--vendor", "NVIDIA", "--json")
    assert code == 0 and {row["vendor"] for row in json.loads(out)} == {"nvidia"}


def test_metric_names_as_the_docs_write_them_resolve_to_the_p99() -> None:
    workload = Workload(benchmark="llama2-70b-99", scenario="Server", metric="ttft_ms")
    assert workload.metric == "ttft_p99_ms"
    assert Workload(benchmark="pi", family="pi", metric="gflops_own").metric == "gflops_own"
    query = PredictQuery(
        accelerator="H100-SXM5-80GB", benchmark="llama2-70b-99", scenario="Server", metric="tpot_ms"
    )
    resolved, problems = canonical_query(query, set())
    assert resolved.metric == "tpot_p99_ms" and not problems


@pytest.mark.parametrize(
    ("typed", "metric"),
    [
        ("ttft", "ttft_p99_ms"),
        ("TTFT p99", "ttft_p99_ms"),
        ("time to first token", "ttft_p99_ms"),
        ("tpot", "tpot_p99_ms"),
        ("tokens/s", "tokens_per_second"),
        ("samples/s", "samples_per_second"),
        ("time to train", "time_to_train_min"),
    ],
)
def test_metric_names_as_users_type_them_resolve_everywhere(typed: str, metric: str) -> None:
    """A probe's ``ttft``, ``TTFT p99`` and ``tokens/s`` (the unit recommend prints) were refused
    by predict, recommend, compare and plot alike."""
    from stack_advisor.advisor.verbs.compare_requests import (
        StackComparisonRequest,
        StackRankingRequest,
    )

    assert Workload(benchmark="llama2-70b-99", scenario="Server", metric=typed).metric == metric
    query = PredictQuery(
        accelerator="H100-SXM5-80GB", benchmark="llama2-70b-99", scenario="Server", metric=typed
    )
    assert canonical_query(query, set())[0].metric == metric
    asked = {"benchmark": "llama2-70b-99", "metric": typed}
    assert StackComparisonRequest(stack_a="a", stack_b="b", **asked).metric == metric
    assert StackRankingRequest(accelerator="H100", **asked).metric == metric


def _obs(family: str, name: str, rnd: str, **params: Any) -> Observation:
    return Observation.model_validate(
        {
            "benchmark": {"family": family, "name": name, "parameters": params},
            "metric": "samples_per_second",
            "value": 100.0,
            "unit": "samples/s",
            "higher_is_better": True,
            "stack": {"framework": "tensorrt", "framework_version": "10.2.0", "cuda": "12.4"},
            "accelerator": {"model": "NVIDIA H100-SXM-80GB", "count": 8},
            "placement": {"kind": "bare-metal"},
            "host": {"name": f"sys-{family}-{rnd}"},
            "provenance": {"kind": "published", "source": family, "details": {"round": rnd}},
        }
    )


def test_training_rows_are_compared_with_training_rounds() -> None:
    """Inference's v5.1 is newer than Training's v5.0, yet v5.0 is Training's latest."""
    table = ObservationTable.from_observations(
        [
            _obs("mlperf-inference", "resnet50", "v5.1", scenario="Offline"),
            _obs("mlperf-training", "bert", "v5.0"),
            _obs("mlperf-training", "bert", "v4.1"),
        ]
    )
    assert table.latest_round() == "v5.1"
    assert table.latest_round("mlperf-training") == "v5.0"
    assert table.latest_round("mlperf-inference") == "v5.1"
    assert table.latest_round("no-such-family") == ""


def test_a_catalogued_benchmark_without_results_says_so(embedded_store: Store) -> None:
    embedded_store.ingest(
        IngestBatch(
            observations=[
                _obs("mlperf-inference", "resnet50", "v5.1", scenario="Offline", division="closed")
            ]
        )
    )
    adv = Advisor(embedded_store)
    with pytest.raises(NotFound, match="no results yet for gpt-oss-120b") as caught:
        adv.recommend(Workload(benchmark="gpt-oss-120b"))
    assert "similar" not in str(caught.value)
    with pytest.raises(NotFound, match="similar: resnet50"):  # not in the catalogue: a typo
        adv.recommend(Workload(benchmark="resnet5x"))
    # compare says the same (it had read 'no observations of mlperf-inference/resnet5x', and a
    # stack ranking 'scenario: name one (the scenarios resnet5x ran: )')
    typo = r"'resnet5x' is not in the knowledge base.*similar: resnet50"
    with pytest.raises(NotFound, match=typo):
        adv.compare("tensorrt=9", "tensorrt=10", benchmark="resnet5x")
    with pytest.raises(NotFound, match=typo):
        adv.rank_stacks(benchmark="resnet5x", accelerator="H100")
    with pytest.raises(NotFound, match="no results yet for gpt-oss-120b"):
        adv.rank_stacks(benchmark="gpt-oss-120b", accelerator="H100", scenario="Offline")
    # predict says the same, where to go (its model by proxy where the proxy knows the model),
    # and never lists the known benchmarks as if the name were a typo
    llm, vision_language = adv.predict(
        [
            {"accelerator": "H200", "benchmark": name, "scenario": "Offline"}
            for name in ("gpt-oss-120b", "qwen3-vl-235b-a22b")
        ]
    )
    assert llm.reason is not None and vision_language.reason is not None
    assert llm.reason.startswith("no results yet for gpt-oss-120b in mlperf-inference, new in v6.0")
    assert '"model": "gpt-oss-120b"' in llm.reason and "known:" not in llm.reason
    assert vision_language.reason.startswith("no results yet for qwen3-vl-235b-a22b")
    assert "proxy" not in vision_language.reason  # the proxy has no architecture for it


def test_a_training_seed_that_did_not_converge_is_a_run_outcome_not_a_stack_failure() -> None:
    assert failure_class("run", "training-aborted") is FailureClass.OUTCOME
    assert failure_class("run", "training-no-run_stop") is FailureClass.OUTCOME
    assert failure_class("run", "RuntimeError") is FailureClass.STACK
    kept = FailureIn(stage="run", error_class="training-aborted", message="result_4.txt: aborted")
    assert kept.stage == "run" and kept.failure_class is FailureClass.OUTCOME


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (("--max-ttft-ms", "0"), "error: --max-ttft-ms: Input should be greater than 0 (got 0.0)"),
        (("--scenario", "Ofline"), "error: --scenario: unknown scenario 'Ofline'; did you mean"),
        (("--min-count", "16", "--max-count", "8"), "error: min_count 16 is above max_count 8"),
        (("--framework", "tensorrt>>8"), "error: --framework 'tensorrt>>8': not a PEP 440"),
    ],
    ids=["limit", "scenario", "counts", "framework"],
)
def test_a_bad_option_is_named_as_typed(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], wanted: str
) -> None:
    """A recommend option's bad value is named by the option the user typed, not by the
    workload field behind it (a probe got "flags: max_ttft_ms: ..." and "Value error, ...")."""
    code, _, err = advisor(capsys, "recommend", "--benchmark", "resnet50", *args)
    line = _error(err)
    assert code == 2 and line.startswith(wanted), line
    assert "Value error" not in line and "flags" not in line


def test_a_query_list_with_no_configuration_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``[]`` answered nothing and exited 0, where the help says a run that answers nothing
    exits non-zero: nothing was asked, so it is the input that is wrong."""
    path = tmp_path / "none.json"
    path.write_text("[]", encoding="utf-8")
    code, out, err = advisor(capsys, "predict", "--query", str(path))
    assert code == 2 and out == ""
    assert "holds no configuration" in _error(err)


def test_empty_stack_selectors_are_refused_not_compared_with_themselves() -> None:
    """``--a "" --b ""`` had matched every stack on both sides: each result compared with itself
    ("11 pairs, 1.000x")."""
    from pydantic import ValidationError

    from stack_advisor.advisor.verbs.compare_requests import StackComparisonRequest

    for a, b in (("", "vllm=0.9.0.2"), ("vllm=0.6.5", "  "), ({}, "vllm=0.9.0.2")):
        with pytest.raises(ValidationError, match="name a stack"):
            StackComparisonRequest(stack_a=a, stack_b=b, benchmark="llama2-70b-99")
    StackComparisonRequest(stack_a="vllm=0.6.5", stack_b="vllm=0.9.0.2", benchmark="llama2-70b-99")
    from stack_advisor.advisor.verbs.compare import selector_components

    with pytest.raises(InvalidInput, match="names no component=version pair"):
        selector_components(" , ")


def test_workload_options_beside_a_workload_file_are_named_as_not_applied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A probe's ``--workload w.yaml --count 2`` ranked x8 rows without a word about --count."""
    path = tmp_path / "w.yaml"
    path.write_text("benchmark: resnet50\nscenario: Offline\n", encoding="utf-8")
    _, _, err = advisor(capsys, "recommend", "--workload", str(path), "--count", "2")
    assert "--count not applied (put them in the file)" in err


def test_an_empty_benchmark_is_named_as_empty_not_matched_to_arbitrary_names() -> None:
    """``--benchmark ""`` had been answered with a "similar:" list of whatever came first."""
    from stack_advisor.advisor.verbs.candidates import unheld_benchmark

    names = ["bert-99", "bert-99.9_minilm", "resnet50"]
    why = unheld_benchmark("  ", "mlperf-inference", names)
    assert why.startswith("benchmark: empty; name one (bert-99, resnet50, ...")
    assert "similar" not in why
