"""Issue 28 items 1 and 2: the software stack's effect, learned from pairs. Small MLPerf rounds
written as published trees, imported through the real importer into a real embedded store, and
asked through ``Advisor.predict`` / ``compare`` as users ask: a factor is applied only where
pairs support it and always shown; a result is borrowed across software classes only through a
factor learned from pairs (and a wider interval), else refused with the reason."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import stack_adjust
from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.estimate.stack_effect import MIN_PAIRS, effects_of, fit_factor
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import FrameworkEntry, software_class
from stack_advisor.collectors.importers.mlperf import import_mlperf
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import IngestBatch, SoftwareStack
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.mlperf import result_path, write
from tests.support.samples import make_obs

TRT8 = ("TensorRT 8.6.0, CUDA 12.0", "TensorRT 8.6.0, CUDA 12.0, cuDNN 8.8.0")
TRT10 = ("TensorRT 10.2.0, CUDA 12.4", "TensorRT 10.2.0, CUDA 12.4, cuDNN 9.1.0")
ORT = ("onnxruntime 1.14.0", "Python: 3.10.6, CUDA: 11.8")
GPUS = {
    "a100": "NVIDIA A100-SXM-80GB",
    "h100": "NVIDIA H100-SXM-80GB",
    "l4": "NVIDIA L4",
    "t4": "NVIDIA T4",
}
BASE = {"a100": 40000.0, "h100": 80000.0, "l4": 12000.0, "t4": 5800.0}
UPGRADE = (
    1.10,
    1.12,
    1.08,
    1.11,
)  # TensorRT 8.6 (v4.0) -> 10.2 (v4.1), consecutive rounds, per accelerator in GPUS order


def _offline(value: float) -> str:
    return (
        f"MLPerf Results Summary\nSUT name : S\nScenario : Offline\nMode     : PerformanceOnly\n"
        f"Samples per second: {value}\nResult is : VALID\n"
    )


def _round(root: Path, name: str, systems: list[tuple[str, str, tuple[str, str], float]]) -> Path:
    """A round's tree: (system id, accelerator, stack, resnet50 Offline samples/s on one
    accelerator)."""
    tree = root / f"inference_{name}"
    for system_id, accelerator, stack, value in systems:
        write(
            tree,
            f"closed/Acme/systems/{system_id}.json",
            json.dumps(
                {
                    "accelerator_model_name": accelerator,
                    "accelerators_per_node": 1,
                    "number_of_nodes": 1,
                    "host_processor_model_name": "AMD EPYC 7742",
                    "host_processors_per_node": 2,
                    "framework": stack[0],
                    "other_software_stack": stack[1],
                    "operating_system": "Ubuntu 22.04",
                    "system_name": system_id,
                    "system_type": "datacenter",
                }
            ),
        )
        write(tree, result_path(system_id, "resnet50", "Offline"), _offline(value))
    return tree


def _store(
    tmp_path: Path, rounds: dict[str, list[tuple[str, str, tuple[str, str], float]]]
) -> Store:
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    for name, systems in rounds.items():
        import_mlperf(_round(tmp_path, name, systems), store)
    return store


def _two_rounds() -> dict[str, list[tuple[str, str, tuple[str, str], float]]]:
    return {
        "v4.0": [(f"{k}-trt8", acc, TRT8, BASE[k]) for k, acc in GPUS.items()],
        "v4.1": [
            (f"{k}-trt10", acc, TRT10, BASE[k] * up) for (k, acc), up in zip(GPUS.items(), UPGRADE)
        ],
    }


@pytest.fixture()
def upgraded(tmp_path: Path) -> Iterator[Advisor]:
    store = _store(tmp_path, _two_rounds())
    yield Advisor(store)
    store.close()


def _ask(advisor: Advisor, accelerator: str, framework: str | None):  # type: ignore[no-untyped-def]
    query = {
        "accelerator": accelerator,
        "accelerator_count": 1,
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
    if framework:
        query["framework"] = framework
    return advisor.predict([query])[0]


# ---- no factor without pairs -------------------------------------------------------------------


def test_no_factor_is_fitted_from_fewer_than_the_minimum_pairs() -> None:
    assert fit_factor("few", np.log(np.array([1.5] * (MIN_PAIRS - 1)))) is None
    factor = fit_factor("enough", np.log(np.array([1.08, 1.10, 1.12])))
    assert factor is not None and factor.pairs == 3
    assert factor.low <= factor.ratio <= factor.high and factor.ratio == pytest.approx(1.10)


def test_pairs_of_one_change_are_resampled_together() -> None:
    """One submission's upgrade seen in many benchmarks is one change, not many: the interval of
    the median is resampled by clusters, and from under MIN_CLUSTERS changes it is the pairs' own
    spread (a change seen once is known no better than one pair)."""
    one = np.log(np.array([1.10, 1.11, 1.12, 1.13, 1.30, 0.95]))
    naive = fit_factor("pairs", one)
    single = fit_factor("one change", one, clusters=["a"] * len(one))
    assert naive is not None and single is not None
    assert (single.low, single.high) == pytest.approx((single.spread_low, single.spread_high))
    assert single.high - single.low > naive.high - naive.low
    # many clusters whose own medians disagree: wider than treating every pair as independent
    ratios = np.log(np.array([1.20] * 5 + [0.90] * 5 + [1.05] * 5 + [1.15] * 5))
    labels = [c for c in "abcd" for _ in range(5)]
    independent, clustered = (
        fit_factor("pairs", ratios),
        fit_factor("changes", ratios, clusters=labels),
    )
    assert independent is not None and clustered is not None
    assert clustered.high - clustered.low > independent.high - independent.low


def test_a_change_seen_in_many_benchmarks_counts_once_in_the_factor() -> None:
    """One accelerator's big step seen in eight benchmark slices does not outvote two others'
    small steps: the factor is the median of the changes' medians, not of the pairs."""
    ratios = np.log(np.array([1.49] * 8 + [1.11] * 4 + [1.05] * 2))
    labels = ["h100"] * 8 + ["h200"] * 4 + ["h200-moe"] * 2
    by_pair, by_change = fit_factor("pairs", ratios), fit_factor("changes", ratios, clusters=labels)
    assert by_pair is not None and by_change is not None
    assert by_pair.ratio == pytest.approx(1.49) and by_change.ratio == pytest.approx(1.11)
    assert by_change.low <= by_change.ratio <= by_change.high and by_change.pairs == 14


def test_without_pairs_an_older_stack_is_used_as_is_and_the_answer_says_so(tmp_path: Path) -> None:
    store = _store(tmp_path, {"v4.0": _two_rounds()["v4.0"]})
    try:
        pred = _ask(Advisor(store), "NVIDIA H100-SXM-80GB", "TensorRT 10.8, CUDA 12.8")
    finally:
        store.close()
    assert pred.basis is Basis.INTERPOLATED
    assert pred.value == pytest.approx(BASE["h100"])  # not moved
    assert not [f for f in pred.factors if f.name == "stack"]
    assert any("no pairs to carry tensorrt 8.6 forward to 10.8" in w for w in pred.warnings), (
        pred.warnings
    )


# ---- carrying a result forward -------------------------------------------------------------------


def test_an_older_result_is_carried_to_a_newer_stack_by_the_learned_factor_shown(
    upgraded: Advisor,
) -> None:
    plain = _ask(upgraded, "NVIDIA H100-SXM-80GB", None)
    pred = _ask(upgraded, "NVIDIA H100-SXM-80GB", "TensorRT 10.8, CUDA 12.8")
    assert pred.basis is Basis.INTERPOLATED
    (stack,) = [f for f in pred.factors if f.name == "stack"]
    median_step = float(np.median(UPGRADE))
    assert stack.effect == pytest.approx(median_step, rel=1e-3)
    assert (
        "tensorrt 10.2 carried forward to 10.8" in stack.value
        and "median of 4 stack change(s), 4 pairs" in stack.value
    )
    assert pred.value == pytest.approx(plain.value * median_step, rel=1e-3)
    assert pred.interval is not None and pred.interval.low < pred.value < pred.interval.high


def test_a_version_past_every_release_held_is_answered_saying_so(upgraded: Advisor) -> None:
    """TensorRT 99.0 beside a knowledge base whose newest TensorRT is 10.2, CUDA 99.9 beside the
    catalogue's newest toolkit: a release not out yet or a typo, said; the figure stays one
    round's step past what was measured, as for 10.8. A version one major ahead is no typo."""
    typo = _ask(upgraded, "NVIDIA H100-SXM-80GB", "TensorRT 99.0, CUDA 99.9")
    near = _ask(upgraded, "NVIDIA H100-SXM-80GB", "TensorRT 11.0, CUDA 12.8")
    assert typo.value == pytest.approx(near.value)
    said = " ".join(typo.warnings)
    assert "tensorrt 99.0 is 89 major releases past the newest any result ran (10.2)" in said
    assert "CUDA 99.9 is" in said and "past the newest toolkit the catalogue lists" in said
    assert not any("major releases past" in w for w in near.warnings), near.warnings


def test_the_upgrade_pairs_are_the_same_accelerator_across_rounds(upgraded: Advisor) -> None:
    effects = effects_of(upgraded.evidence())
    ratios = sorted(round(math.exp(p.log_ratio), 3) for p in effects.upgrade_pairs)
    assert ratios == sorted(UPGRADE)
    assert {(p.old, p.new) for p in effects.upgrade_pairs} == {("8.6", "10.2")}


def test_a_factor_counts_per_round_its_pairs_span(tmp_path: Path) -> None:
    """v3.0 -> v4.1 spans three published rounds (v3.1, v4.0, v4.1): the factor carried to the
    next round is the per-round rate, and says so; the held-out check raises it to each pair's
    span."""
    rounds = _two_rounds()
    store = _store(tmp_path, {"v3.0": rounds["v4.0"], "v4.1": rounds["v4.1"]})
    try:
        advisor = Advisor(store)
        effects = effects_of(advisor.evidence())
        pred = _ask(advisor, "NVIDIA H100-SXM-80GB", "TensorRT 10.8, CUDA 12.8")
    finally:
        store.close()
    assert {p.rounds for p in effects.upgrade_pairs} == {3}
    (stack,) = [f for f in pred.factors if f.name == "stack"]
    assert stack.effect == pytest.approx(float(np.median(UPGRADE)) ** (1 / 3), rel=1e-3)
    assert "per round, pairs spanning 3-3 rounds" in stack.value


# ---- software class --------------------------------------------------------------------------


def test_the_catalogue_gives_frameworks_a_class_with_a_source() -> None:
    for name, cls in (
        ("onnxruntime", "reference"),
        ("Pytorch", "reference"),
        ("TensorRT", "optimised"),
        ("trt-llm", "optimised"),
        ("vLLM", "optimised"),
        ("MIGraphX", "optimised"),
    ):
        found = software_class(name)
        assert (
            found is not None
            and found.software_class == cls
            and found.source.startswith("https://")
        ), name
    assert software_class("cuda") is None  # a component has no class
    assert software_class("no such runtime") is None
    with pytest.raises(ValidationError, match="needs a class_source"):
        FrameworkEntry(
            id="x", kind="framework", software_class="reference", source="https://example.org/"
        )
    with pytest.raises(ValidationError, match="for frameworks"):
        FrameworkEntry(
            id="y",
            kind="component",
            software_class="optimised",
            class_source="https://example.org/",
            source="https://example.org/",
        )


def test_a_reference_implementation_is_refused_when_no_pairs_of_both_classes_exist(
    upgraded: Advisor,
) -> None:
    for accelerator in (
        "NVIDIA L4",
        "NVIDIA A10",
    ):  # interpolated and transferred from TensorRT results
        pred = _ask(upgraded, accelerator, "onnxruntime")
        assert pred.basis is Basis.UNSUPPORTED and pred.value is None, accelerator
        assert "software class" in (pred.reason or "") and "reference" in (pred.reason or "")
        assert "tensorrt" in (pred.reason or "") and "pairs" in (pred.reason or "")
    assert _ask(upgraded, "NVIDIA L4", "TensorRT 10.2.0, CUDA 12.4").basis is Basis.OBSERVED


def test_mlcommons_reference_code_is_the_reference_class_whatever_its_framework(
    tmp_path: Path,
) -> None:
    """A results folder <system>-reference-<device>-<framework>-<config> (MLCommons' automation) ran
    the reference implementation: vLLM there is no optimised runtime. Its result and a query that
    says so are of the reference class; borrowing TensorRT results for it needs a learned factor."""
    vllm = ("vllm", "vllm 0.9.0, CUDA 12.8")
    rounds = _two_rounds()
    rounds["v4.1"] += [
        ("l4x1-reference-gpu-vllm-default_config", GPUS["l4"], vllm, 600.0),
        ("l4x1-nvidia-gpu-vllm-default_config", GPUS["l4"], vllm, 9000.0),
    ]
    (tmp_path / "mixed").mkdir()
    store = _store(tmp_path / "mixed", rounds)
    try:
        advisor = Advisor(store)
        effects = effects_of(advisor.evidence())
        table = advisor.table()
        classes = {
            (table.value[r], effects.row_stack(r).software_class)
            for r in range(table.n)
            if effects.row_stack(r).framework == "vllm"
        }
    finally:
        store.close()
    assert classes == {(600.0, "reference"), (9000.0, "optimised")}
    store = _store(tmp_path, _two_rounds())
    try:
        query = {
            "accelerator": "NVIDIA A10",
            "accelerator_count": 1,
            "benchmark": "resnet50",
            "scenario": "Offline",
            "metric": "samples_per_second",
            "framework": "vllm",
        }
        optimised, reference = Advisor(store).predict(
            [query, {**query, "components": {"implementation": "reference"}}]
        )
    finally:
        store.close()
    assert (
        optimised.basis is Basis.TRANSFERRED
    )  # vLLM as an optimised runtime: from the TensorRT peers
    assert reference.basis is Basis.UNSUPPORTED and (reference.reason or "").startswith(
        "software class"
    )
    assert "MLCommons reference implementation" in (reference.reason or "")


def test_across_classes_only_through_a_learned_factor_with_a_wider_interval(tmp_path: Path) -> None:
    rounds = _two_rounds()
    # three accelerators ran the reference code beside TensorRT in v4.1: about a tenth of the speed
    up = dict(zip(GPUS, UPGRADE))
    rounds["v4.1"] += [
        (f"{k}-ort", GPUS[k], ORT, BASE[k] * up[k] * r)
        for k, r in (("a100", 0.09), ("h100", 0.10), ("t4", 0.12))
    ]
    store = _store(tmp_path, rounds)
    try:
        advisor = Advisor(store)
        optimised = _ask(advisor, "NVIDIA L4", "TensorRT 10.8")
        pred = _ask(advisor, "NVIDIA L4", "onnxruntime")
        own = _ask(advisor, "NVIDIA H100-SXM-80GB", "onnxruntime 1.15")
        observed_ort = _ask(advisor, "NVIDIA H100-SXM-80GB", "onnxruntime")
        # a scenario derived from this estimate (Interactive from Server) takes it as made: the
        # class factor once, not again on the derived figure
        index = advisor.evidence()
        query = Query(
            "mlperf-inference",
            "resnet50",
            "Offline",
            "samples_per_second",
            "closed",
            "L4",
            1,
            "bare-metal",
            raw_accelerator="NVIDIA L4",
            framework="onnxruntime",
        )
        crossed = index.estimate(query)
        derived = replace(
            crossed,
            derived_from=crossed.basis,
            factors=[*crossed.factors, ("scenario", "derived", 1.0)],
        )
        again = stack_adjust.adjust(index, query, derived)
    finally:
        store.close()
    assert [f[0] for f in crossed.factors].count("software class") == 1
    assert again.value == crossed.value and again.factors == derived.factors
    assert pred.basis is Basis.INTERPOLATED
    (cls,) = [f for f in pred.factors if f.name == "software class"]
    assert cls.effect == pytest.approx(0.10, rel=0.05) and "3 pairs" in cls.value
    assert pred.value == pytest.approx(BASE["l4"] * UPGRADE[2] * 0.10, rel=0.05)
    assert pred.interval is not None and optimised.interval is not None
    width = math.log(pred.interval.high / pred.interval.low)
    assert width > math.log(optimised.interval.high / optimised.interval.low)
    assert any("software class" in w for w in pred.warnings)
    # an observation of the framework named is its own results, not another's at the same count
    assert observed_ort.basis is Basis.OBSERVED
    assert observed_ort.value == pytest.approx(BASE["h100"] * up["h100"] * 0.10, rel=1e-3)
    # where the accelerator ran the reference code itself, those results answer, not the class
    # factor (1.14 carried to 1.15 by the vendor's pooled version step, shown)
    assert not [f for f in own.factors if f.name == "software class" and f.effect != 1.0]
    (step,) = [f for f in own.factors if f.name == "stack"]
    assert (
        "onnxruntime 1.14 carried forward to 1.15" in step.value
        and "nvidia * throughput" in step.value
    )
    assert own.value == pytest.approx(BASE["h100"] * up["h100"] * 0.10 * step.effect, rel=1e-3)


# ---- compare ---------------------------------------------------------------------------------


def test_compare_says_what_upgrading_was_worth_and_from_how_many_pairs(upgraded: Advisor) -> None:
    result = upgraded.compare(
        "tensorrt=8.6.0", "tensorrt=10.2.0", benchmark="resnet50", accelerator="H100"
    )
    assert result.stack_effect is not None
    assert result.stack_effect.startswith(
        "upgrading tensorrt 8.6.0 to 10.2.0 on H100 for resnet50:"
    )
    # one pair on H100 alone: too few for an interval, so the vendor's pooled step is said as such
    assert "1 pair(s) (+12%)" in result.stack_effect and "from 4 pairs" in result.stack_effect
    everywhere = upgraded.compare("tensorrt=8.6.0", "tensorrt=10.2.0", benchmark="resnet50")
    assert (
        everywhere.stack_effect is not None
        and "throughput speed, from 4 pairs" in everywhere.stack_effect
    )
    assert "+10%" in everywhere.stack_effect
    # as users write it: a major.minor selector, another spelling of the component and benchmark
    short = upgraded.compare(
        "trt=8.6", "tensorrt=10.2", benchmark="ResNet-50", scenario="offline", accelerator="H100"
    )
    assert (short.a_count, short.b_count, short.benchmark) == (
        result.a_count,
        result.b_count,
        "resnet50",
    )
    with pytest.raises(
        InvalidInput, match="unknown framework or component 'tensort'; did you mean 'tensorrt'"
    ):
        upgraded.compare("tensort=8.6", "tensorrt=10.2", benchmark="resnet50")


def test_compare_medians_are_per_accelerator_across_system_sizes(tmp_path: Path) -> None:
    """A's 8-GPU system beside B's 1-GPU one: the medians are each system's figure over its
    count (a probe read A's 8-GPU total as 7x faster than B)."""
    tree = _round(tmp_path, "v4.1", [("h100-trt10", GPUS["h100"], TRT10, 1100.0)])
    system = json.loads((tree / "closed/Acme/systems/h100-trt10.json").read_text())
    write(
        tree,
        "closed/Acme/systems/h100x8-trt8.json",
        json.dumps(
            {
                **system,
                "accelerators_per_node": 8,
                "system_name": "h100x8-trt8",
                "framework": TRT8[0],
                "other_software_stack": TRT8[1],
            }
        ),
    )
    write(tree, result_path("h100x8-trt8", "resnet50", "Offline"), _offline(8 * 1000.0))
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    try:
        import_mlperf(tree, store)
        result = Advisor(store).compare(
            "tensorrt=8.6.0", "tensorrt=10.2.0", benchmark="resnet50", accelerator="H100"
        )
    finally:
        store.close()
    assert (result.a_count, result.b_count) == (1, 1)
    assert result.a_median == pytest.approx(1000.0) and result.b_median == pytest.approx(1100.0)


def test_compare_says_so_where_there_are_no_pairs(tmp_path: Path) -> None:
    store = _store(
        tmp_path, {"v4.0": _two_rounds()["v4.0"] + [("h100-trt10", GPUS["h100"], TRT10, 90000.0)]}
    )
    try:
        result = Advisor(store).compare(
            "tensorrt=8.6.0", "tensorrt=10.2.0", benchmark="resnet50", accelerator="H100"
        )
    finally:
        store.close()
    assert result.stack_effect is not None and "no pairs" in result.stack_effect
    assert "no estimate" in result.stack_effect


def test_rank_stacks_orders_one_accelerators_stacks_and_shows_the_carry(upgraded: Advisor) -> None:
    rows = upgraded.rank_stacks(
        benchmark="resnet50",
        scenario="Offline",
        metric="samples_per_second",
        accelerator="H100-SXM-80GB",
    )
    assert [(r["framework"], r["version"]) for r in rows] == [
        ("tensorrt", "10.2"),
        ("tensorrt", "8.6"),
    ]
    newest, older = rows
    assert newest["factor"] is None and newest["carried_forward"] == newest["value"]
    assert older["carried_forward"] == pytest.approx(
        older["value"] * float(np.median(UPGRADE)), rel=1e-3
    )
    assert "4 pairs" in str(older["factor"])


def test_rank_stacks_reads_names_as_users_write_them(upgraded: Advisor) -> None:
    """Any catalogue spelling of the benchmark and scenario; no metric: the slice's throughput."""
    exact = upgraded.rank_stacks(
        benchmark="resnet50",
        scenario="Offline",
        metric="samples_per_second",
        accelerator="H100-SXM-80GB",
    )
    assert (
        upgraded.rank_stacks(
            benchmark="ResNet-50", scenario="offline", accelerator="NVIDIA H100 SXM"
        )
        == exact
    )
    with pytest.raises(InvalidInput, match="scenario: name one"):
        upgraded.rank_stacks(benchmark="resnet50", accelerator="H100-SXM-80GB")
    with pytest.raises(InvalidInput, match=r"unknown scenario 'Ofline'.*did you mean 'Offline'"):
        upgraded.rank_stacks(benchmark="resnet50", scenario="Ofline", accelerator="H100-SXM-80GB")


def test_rank_stacks_carries_no_stack_run_in_the_same_round_as_the_newest(tmp_path: Path) -> None:
    """Two versions in one published round are two submitters, not an upgrade: as measured."""
    trt100 = ("TensorRT 10.0.0, CUDA 12.4", "TensorRT 10.0.0, CUDA 12.4, cuDNN 9.0.0")
    rounds = _two_rounds()
    rounds["v4.1"] = [*rounds["v4.1"], ("h100-other", GPUS["h100"], trt100, 70000.0)]
    store = _store(tmp_path, rounds)
    try:
        rows = Advisor(store).rank_stacks(
            benchmark="resnet50",
            scenario="Offline",
            metric="samples_per_second",
            accelerator="H100-SXM-80GB",
        )
    finally:
        store.close()
    by_version = {r["version"]: r for r in rows}
    assert (
        by_version["10.0"]["carried_forward"]
        == by_version["10.0"]["value"]
        == pytest.approx(70000.0)
    )
    assert "same round" in str(by_version["10.0"]["factor"])
    assert by_version["8.6"]["carried_forward"] > by_version["8.6"]["value"]


def test_our_own_sweeps_pair_versions_measured_on_one_host(tmp_path: Path) -> None:
    """Our measurements carry no round: versions measured side by side (``advisor sweep``) pair."""
    old, new = (
        SoftwareStack(framework="pytorch", framework_version=v, cuda="12.4")
        for v in ("2.3.0", "2.4.0")
    )
    rows = []
    for i, (acc, base) in enumerate(
        (("H100-SXM5-80GB", 400.0), ("A100-SXM4-80GB", 200.0), ("L4", 60.0))
    ):
        for j, (stack, value) in enumerate(((old, base), (new, base * 1.2))):
            obs = make_obs(
                8 * i + 4 * j, stack=stack, acc=acc, host=f"node-{i}"
            )  # one GEMM size: one identity
            rows.append(
                obs.model_copy(update={"value": value, "p10": value * 0.99, "p90": value * 1.01})
            )
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    try:
        store.ingest(IngestBatch(observations=rows))
        advisor = Advisor(store)
        effects = effects_of(advisor.evidence())
        pred = advisor.predict(
            [
                {
                    "accelerator": "H100-SXM5-80GB",
                    "accelerator_count": 1,
                    "family": "pi",
                    "benchmark": "gemm",
                    "metric": "tflops",
                    "framework": "pytorch 2.5.1",
                }
            ]
        )[0]
    finally:
        store.close()
    assert sorted(round(math.exp(p.log_ratio), 3) for p in effects.upgrade_pairs) == [1.2, 1.2, 1.2]
    assert pred.basis is Basis.INTERPOLATED
    (step,) = [f for f in pred.factors if f.name == "stack"]
    assert "pytorch 2.4 carried forward to 2.5" in step.value and step.effect == pytest.approx(1.2)
    assert pred.value == pytest.approx(400.0 * 1.2 * 1.2)


def test_the_held_out_check_scores_the_latest_rounds_upgrades_with_factors_learned_before(
    tmp_path: Path,
) -> None:
    from stack_advisor.advisor.estimate.stack_check import held_out_check

    trt108 = ("TensorRT 10.8.0, CUDA 12.8", "TensorRT 10.8.0, CUDA 12.8, cuDNN 9.7.0")
    later = (1.20, 1.25, 1.15, 1.30)  # TensorRT 10.2 (v4.1) -> 10.8 (v5.0), measured
    rounds = {
        **_two_rounds(),
        "v5.0": [
            (f"{k}-trt108", acc, trt108, BASE[k] * up * more)
            for (k, acc), up, more in zip(GPUS.items(), UPGRADE, later, strict=True)
        ],
    }
    store = _store(tmp_path, rounds)
    try:
        (row,) = held_out_check(Advisor(store).table())
    finally:
        store.close()
    assert (
        row["held_out"] == 4 and row["scored"] == 4
    )  # v4.1 -> v5.0 pairs, factor from v4.0 -> v4.1
    carried = float(np.median(UPGRADE))  # the factor learned before the latest round
    expected = float(np.mean([abs(carried / m - 1) for m in later])) * 100
    assert row["mape"] == pytest.approx(expected, rel=1e-3)
    assert row["mape_unchanged"] == pytest.approx(
        float(np.mean([abs(1 / m - 1) for m in later])) * 100, rel=1e-3
    )
    assert 0.0 <= row["coverage"] <= 1.0


def test_a_sweep_pairs_each_benchmark_identity_apart(tmp_path: Path) -> None:
    """Real data: the H100 sweep of 2026-11-26 (data/results), CuPy 13.6.0 and 14.2.0 on one node.
    A PI slice holds several parameter sets (GEMM at fp16 and fp32): each is its own pair, so
    the fp16 GEMM's 3x (CuPy 14's fp16 path) is not a median across dtypes."""
    from stack_advisor.advisor.estimate.stack_compare import span_pairs
    from stack_advisor.advisor.verbs.sweep import sweep_report
    from stack_advisor.schema.models import ResultDocument

    root = Path(__file__).resolve().parents[2] / "data" / "results"
    with open_store(f"embedded:{tmp_path}/kb") as kb:
        for path in sorted(root.glob("h100-20261126-sweep-stacks-*.json")):
            for doc in json.loads(path.read_text()):
                kb.ingest_document(ResultDocument.model_validate(doc))
        effects = effects_of(Advisor(kb).evidence())
        pairs = span_pairs(effects, "pi", "cupy", "13.6", "14.2", benchmark="gemm")
        direct = {
            r.parameters: r.ratio
            for r in sweep_report(kb, "h100-stacks", baseline="cupy-13").ratios
            if r.benchmark == "pi/gemm" and r.cell == "cupy-14"
        }
    assert len(pairs) == len(direct) == 2  # fp16 and fp32
    by_dtype = {("fp16" if "dtype=fp16" in p else "fp32"): r for p, r in direct.items()}
    assert sorted(math.exp(p.log_ratio) for p in pairs) == pytest.approx(
        sorted(by_dtype.values()), rel=0.02
    )
    assert by_dtype["fp16"] > 2.5 > 1.3 > by_dtype["fp32"]


def test_a_framework_name_alone_does_not_make_a_result_reference_code(tmp_path: Path) -> None:
    """ "pytorch" is MLCommons' reference code and vendors' optimised stacks alike: a result named
    only by it is classed by its level beside the optimised results of its part and round, and a
    query naming it takes the class its results showed (said in a warning), not the name's."""
    torch = ("PyTorch 2.5.0, CUDA 12.4", "PyTorch 2.5.0, CUDA 12.4")  # NVIDIA parts: not ROCm
    rounds = _two_rounds()
    rounds["v4.1"] += [
        ("h100-torch-fast", GPUS["h100"], torch, BASE["h100"] * UPGRADE[1] * 0.95),
        ("a100-torch-slow", GPUS["a100"], torch, BASE["a100"] * UPGRADE[0] * 0.08),
    ]
    store = _store(tmp_path, rounds)
    try:
        advisor = Advisor(store)
        effects = effects_of(advisor.evidence())
        table = advisor.table()
        classes = {
            effects.row_stack(r).software_class
            for r in range(table.n)
            if effects.row_stack(r).framework == "pytorch"
            and table.accelerator.vocab[int(table.accelerator.codes[r])].startswith("H100")
        }
        on_l4 = _ask(advisor, "NVIDIA L4", "PyTorch 2.5.0, CUDA 12.4")
    finally:
        store.close()
    assert classes == {"optimised"}
    levelled = [effects.row_stack(r).software_class for r in effects.leveled_rows("pytorch")]
    assert sorted(levelled) == ["optimised", "reference"]
    # one of two pytorch results ran at optimised level: no majority for reference code, so the
    # L4 query (TensorRT evidence only) is answered, not refused for a class crossing
    assert on_l4.basis is not Basis.UNSUPPORTED, on_l4.reason


def test_a_version_too_long_to_be_a_release_is_none() -> None:
    """Python refuses int() of more than 4300 digits: the compare route had answered a 500."""
    from stack_advisor.advisor.estimate.stack_compare import version_matches
    from stack_advisor.catalog.rounds import release_of

    huge = "9" * 5000
    assert release_of(huge) is None and release_of("10.2.1") == (10, 2, 1)
    assert not version_matches("10.2", huge) and not version_matches(huge, "10")


def test_a_stack_ranking_names_its_unit_and_the_sizes_behind_each_figure(kb_advisor: Any) -> None:
    """A probe read TensorRT 10.8's 3,820 (two- and four-node systems) ranked above 8-GPU
    stacks with no unit, count or node field to tell them apart."""
    rows = kb_advisor.rank_stacks(
        benchmark="llama2-70b-99", scenario="Server", accelerator="NVIDIA H100-SXM-80GB"
    )
    assert rows and {r["unit"] for r in rows} == {"tokens/s per accelerator"}
    assert all(r["counts"] and all(n >= 1 for n in r["counts"]) for r in rows)
    assert any(max(r["counts"]) > 8 for r in rows)  # a multi-node system's figure says so


def test_an_upgrade_factor_moves_toward_the_round_drift_of_the_slices_own_parts() -> None:
    """Evidence of a round older than the slice's newest held is carried by the framework's
    upgrade factor moved toward the drift the parts measured in both rounds show on this very
    benchmark (their log moves weighted n : PRIOR_WEIGHT_PAIRS); evidence of the newest round,
    or a slice with no such pairs, keeps the factor as learned."""
    from stack_advisor.advisor.estimate.drift_prior import PRIOR_WEIGHT_PAIRS
    from stack_advisor.advisor.estimate.stack_effect import StackFactor

    class Drift:
        def rounds(self, key: Any) -> list[float]:
            return [4.1, 5.1]

        def slice_target(self, key: Any, as_of: str) -> float:
            return 6.0  # a forecast beyond: the pairs are read up to the newest held

        def pairs(self, key: Any, old: float, new: float) -> list[tuple[str, float]]:
            return [(f"p{i}", math.log(2.0)) for i in range(4)] if (old, new) == (4.1, 5.1) else []

    class Index:
        round_drift = Drift()
        round_no = np.array([4.1, 4.1, 5.1])

        def higher_is_better(self, key: Any) -> bool:
            return True

    query = Query("mlperf-inference", "x", "Offline", "tokens_per_second", "closed", "B200", 8, "")
    factor = StackFactor("nvidia tensorrt throughput/llm", 1.2, 1.1, 1.3, 1.0, 1.5, 12)
    index: Any = Index()
    moved, text = stack_adjust._toward_round_drift(index, query, np.array([0, 1]), factor)
    w = 4 / (4 + PRIOR_WEIGHT_PAIRS)
    assert moved.ratio == pytest.approx(math.exp(w * math.log(2.0) + (1 - w) * math.log(1.2)))
    assert moved.low / moved.ratio == pytest.approx(factor.low / factor.ratio)
    assert "4 parts in both rounds" in text and "v4.1 -> v5.1" in text and "2.000x" in text
    # evidence of the newest held round: nothing between to read
    assert stack_adjust._toward_round_drift(index, query, np.array([2]), factor) == (factor, "")
