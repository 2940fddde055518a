"""Round drift (issue 41): answers say which round they are for; evidence of an older round is
carried to the benchmark's newest round by the pairs both rounds hold, else by the learned prior;
``as_of: next`` is a forecast with a wider interval; the default, ``today``, is the newest round
published by today's date (a forecast where the knowledge base lacks it). On the starter knowledge
base."""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any, cast

import numpy as np
import pytest

from stack_advisor.advisor.estimate.drift import (
    as_of_error,
    benchmark_group,
    metric_kind,
    next_round,
    round_at,
    round_label,
)
from stack_advisor.advisor.estimate.drift_prior import (
    MIN_PRIOR_PAIRS,
    DriftPrior,
    PriorState,
    introduced_round,
)
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.query import SliceKey, model_name
from stack_advisor.advisor.estimate.stack_effect import rounds_between
from stack_advisor.advisor.knowledge.table import round_number
from stack_advisor.advisor.workload import Workload
from stack_advisor.catalog.rounds import load_rounds, rounds_after
from stack_advisor.schema.errors import InvalidInput, NotFound


def _older_accelerator(index: EvidenceIndex) -> tuple[SliceKey, str, float, float]:
    """A closed throughput slice, an accelerator last measured on it before the slice's newest
    round that other parts ran in both rounds: (slice, accelerator, its round, newest)."""
    drift = index.round_drift
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or key[4] != "closed" or not index.higher_is_better(key):
            continue
        held = drift.rounds(key)
        if len(held) < 2:
            continue
        for acc, rows in by_acc.items():
            last = float(index.round_no[rows].max())
            if 0 < last < held[-1] and len(drift.pairs(key, last, held[-1])) >= 2:
                return key, acc, last, held[-1]
    pytest.skip("the starter knowledge base holds no slice with an older accelerator")


def _query(index: EvidenceIndex, key: SliceKey, acc: str, **extra: Any) -> dict[str, Any]:
    rows = index.slices[key][acc]
    return {
        "accelerator": index.raw_names.get(acc, acc),
        "accelerator_count": int(index.table.count[rows[-1]]),
        "family": key[0],
        "benchmark": key[1],
        "scenario": key[2],
        "metric": key[3],
        **extra,
    }


def test_older_evidence_is_carried_to_the_newest_round_by_its_pairs(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, last, now = _older_accelerator(index)
    [answer] = kb_advisor.predict([_query(index, key, acc, as_of="now")])
    assert answer.round == round_label(now)
    [drift] = [f for f in answer.factors if f.name == "round drift"]
    assert f"{round_label(last)} -> {round_label(now)}" in drift.value
    # the factor is the median of the pairs' log ratios, computed here from the table
    pairs = [v for _, v in index.round_drift.pairs(key, last, now)]
    assert drift.effect == pytest.approx(math.exp(float(np.median(pairs))), rel=1e-3)
    assert f"from {len(pairs)} parts in both rounds" in drift.value
    assert answer.interval is not None and answer.value is not None
    assert answer.interval.low < answer.value < answer.interval.high


def test_next_round_is_a_forecast_with_a_wider_interval(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, now = _older_accelerator(index)
    now_answer, next_answer = kb_advisor.predict(
        [_query(index, key, acc, as_of="now"), _query(index, key, acc, as_of="next")]
    )
    assert next_answer.round == round_label(next_round(key[0], now))
    [forecast] = [f for f in next_answer.factors if f.name == "forecast"]
    assert "learned prior" in forecast.value and benchmark_group(key[0], key[1]) in forecast.value
    assert any("a forecast for" in w for w in next_answer.warnings)

    def width(p: Any) -> float:
        return float(math.log(p.interval.high / p.interval.low))

    assert width(next_answer) >= width(now_answer) > 0


def test_a_named_round_beyond_the_newest_counts_its_rounds(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, now = _older_accelerator(index)
    one = next_round(key[0], now)
    two = next_round(key[0], one)
    a, b = kb_advisor.predict(
        [
            _query(index, key, acc, as_of=round_label(one)),
            _query(index, key, acc, as_of=round_label(two)),
        ]
    )
    assert (a.round, b.round) == (round_label(one), round_label(two))
    assert b.interval.high / b.interval.low >= a.interval.high / a.interval.low > 1


def test_a_measured_figure_carried_to_another_round_is_not_observed(kb_advisor: Any) -> None:
    """Basis observed says what the figure was made from; ``observed`` says the number is as
    measured: a forecast of an observed configuration is not (issue 41's review: forecast rows
    said ``observed: true``)."""
    index = kb_advisor.evidence()
    key, _, _, now = _older_accelerator(index)
    newest = [a for a, rows in index.slices[key].items() if index.round_no[rows].max() == now]
    as_measured, ahead = kb_advisor.predict(
        [_query(index, key, newest[0], as_of="now"), _query(index, key, newest[0], as_of="next")]
    )
    assert as_measured.basis.value == "observed" and as_measured.observed is True
    assert not [f for f in as_measured.factors if f.name in ("forecast", "round drift")]
    assert ahead.basis.value == "observed" and ahead.observed is False
    assert [f for f in ahead.factors if f.name == "forecast"]


def test_an_unknown_as_of_is_refused_naming_the_field(kb_advisor: Any) -> None:
    index = kb_advisor.evidence()
    key, acc, _, _ = _older_accelerator(index)
    [answer] = kb_advisor.predict([_query(index, key, acc, as_of="last year")])
    assert answer.value is None
    assert answer.reason is not None and "as_of: 'last year'" in answer.reason
    # a probe had these answered: no such round, too far ahead, an empty text; each query is
    # refused alone, the batch's others answered
    asked = ["v6.5", "v99.0", "v5.1.1", "v-1.0", "", "v6.1"]
    answers = kb_advisor.predict([_query(index, key, acc, as_of=a) for a in asked])
    why = dict(zip(asked, (a.reason or "" for a in answers)))
    assert "is no round of mlperf-inference" in why["v6.5"]
    assert "forecasts reach 2 rounds ahead" in why["v99.0"]
    for malformed in ("v5.1.1", "v-1.0", ""):
        assert why[malformed].startswith(f"as_of: {malformed!r} is not 'today'"), why[malformed]
    assert answers[-1].basis.value != "unsupported" and answers[-1].round == "v6.1"


def test_the_prior_band_is_calibrated_on_its_round_ahead_replays(kb_advisor: Any) -> None:
    prior = kb_advisor.evidence().round_drift.prior
    assert all(pad >= 0.0 for pad in prior.pad.values())  # widened, never narrowed
    groups = {s[1] for s in prior.steps}
    assert {"llm", "vision", "training"} <= groups
    # every step predicted from the steps before it: the calibrated band covers 80% of them
    inside = total = 0
    for kind, group, age, vendor, new, value in prior.steps:
        _, lo, hi, pairs, _ = prior.cell(kind, group, age, vendor, until=new)
        if pairs:
            pad = prior.pad_for(group)
            total += 1
            inside += lo - pad <= value <= hi + pad
    assert total and 0.78 <= inside / total <= 0.9


def test_a_step_far_beyond_a_narrow_band_widens_bands_by_its_distance_not_a_ratio() -> None:
    """A pad is added to each side of every cell's band (log units): a step that landed far
    outside a narrow band (young LLMs moving 2-4x after rounds of 1.05x) widens a wide cell by
    that distance, not by the ratio of distance to narrow width (a multiplied scale had made an
    80% band of 0.13-395x)."""
    from stack_advisor.advisor.estimate.drift_prior import DriftPrior, PriorState

    steps = [
        ("throughput", "llm", "2+", "nvidia", float(r), 0.05 + 0.001 * i)
        for r in (1, 2, 3)
        for i in range(10)
    ]
    steps += [("throughput", "llm", "2+", "nvidia", 4.0, 1.1)] * 10  # one round moved 3x
    prior = DriftPrior(None, PriorState(tuple(steps), {}))  # type: ignore[arg-type]
    pads = prior._calibrate()
    mid, _, hi, _, _ = prior.cell("throughput", "llm", "2+", "nvidia", until=4.0)
    assert hi - mid < 0.01  # the narrow band the far step landed outside
    assert 0.5 < pads["llm"] <= 1.1 - hi  # widened by the distance, not x100


def test_the_prior_learns_throughput_apart_from_latency_and_closed_only(kb_advisor: Any) -> None:
    """A p99 TTFT that grew while throughput grew is no throughput loss: each kind of figure has
    its own prior, in improvements (a lower-is-better figure moves by their inverse); an open
    division (its model changes with the round) teaches no drift."""
    index = kb_advisor.evidence()
    prior = index.round_drift.prior
    kinds = {s[0] for s in prior.steps}
    assert {"throughput", "latency", "serving latency", "time to train"} <= kinds
    closed = {
        (metric_kind(k, index.higher_is_better(k)), benchmark_group(k[0], k[1]))
        for k in index.slices
        if k[4] in ("closed", "")
    }
    assert {(s[0], s[1]) for s in prior.steps} <= closed
    mid, *_, name = prior.cell("throughput", "llm", "0", "nvidia")
    assert name.endswith("; throughput") and "latency" not in name
    # the pairs behind the cell are throughputs only: recomputed from the table here
    thr = [s[5] for s in prior.steps if s[0] == "throughput" and s[1] == "llm"]
    assert thr and min(thr) <= mid <= max(thr)


def test_a_serving_latency_is_not_carried_by_single_stream_latencies() -> None:
    """An LLM's TTFT and TPOT under a Server load are where the submitter's load put them below
    the limit: their prior is learned from serving latencies alone, never from the single-stream
    latencies that fell with newer software (on the shared rounds, v4.1 -> v5.1, their drift had
    moved TTFT answers down while TTFT rose 1.26x); with none held, none is applied."""
    from stack_advisor.advisor.estimate.drift_prior import DriftPrior, PriorState

    ttft = ("mlperf-inference", "llama2-70b-99", "Server", "ttft_p99_ms", "closed")
    single = ("mlperf-inference", "resnet50", "SingleStream", "p90_latency_ms", "closed")
    assert metric_kind(ttft, False) == "serving latency"
    assert metric_kind((*ttft[:3], "tpot_mean_ms", "closed"), False) == "serving latency"
    assert metric_kind(single, False) == "latency"
    assert metric_kind((*ttft[:2], "SingleStream", *ttft[3:]), False) == "latency"  # one query
    assert metric_kind((*ttft[:3], "tokens_per_second", "closed"), True) == "throughput"
    steps = [("latency", "vision", "2+", "nvidia", float(r), 0.2) for r in (1, 2, 3) * 10]
    prior = DriftPrior(None, PriorState(tuple(steps), {"": 0.0}))  # type: ignore[arg-type]
    assert prior.cell("latency", "llm", "2+", "nvidia")[3] == 30  # a headline latency borrows
    assert prior.cell("serving latency", "llm", "2+", "nvidia")[3] == 0  # a serving one: none
    served = steps + [("serving latency", "llm", "1", "nvidia", 3.0, -0.1)] * 10
    prior = DriftPrior(None, PriorState(tuple(served), {"": 0.0}))  # type: ignore[arg-type]
    mid, _, _, pairs, name = prior.cell("serving latency", "llm", "2+", "nvidia")
    assert (mid, pairs) == (-0.1, 10) and name.endswith("; serving latency")


def test_today_is_the_newest_round_published_by_the_date(
    kb_advisor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default ``as_of`` reads the catalogue's round dates: a day after a round the
    knowledge base lacks was published gives a forecast for it, saying so; a day before it, the
    newest round held; an explicit date does the same."""
    index = kb_advisor.evidence()
    key, acc, _, now = _older_accelerator(index)
    newest = max((r for r in load_rounds() if r.family == key[0]), key=lambda r: r.published)
    if round_number(newest.id) <= now:
        pytest.skip("the catalogue lists no round newer than the knowledge base's")
    after = (newest.published + timedelta(days=1)).isoformat()
    before = (newest.published - timedelta(days=1)).isoformat()
    monkeypatch.setenv("ADVISOR_TODAY", after)
    today, dated, held = kb_advisor.predict(
        [
            _query(index, key, acc),
            _query(index, key, acc, as_of=before),
            _query(index, key, acc, as_of="now"),
        ]
    )
    assert today.round == newest.id
    assert any("a forecast for" in w and "not imported" in w for w in today.warnings)
    assert [f.name for f in today.factors if f.name in ("forecast", "round drift")]
    # the day before: the newest round published by then (this slice's own newest, or a newer
    # round of the family the benchmark did not run in: software moved on all the same)
    by_then = max(
        (
            round_number(r.id)
            for r in load_rounds()
            if r.family == key[0] and r.published.isoformat() <= before
        ),
        default=now,
    )
    assert held.round == round_label(now)
    assert dated.round == round_label(max(by_then, now))
    monkeypatch.setenv("ADVISOR_TODAY", before)
    [same] = kb_advisor.predict([_query(index, key, acc)])
    assert same.round == dated.round and same.value == pytest.approx(dated.value)
    monkeypatch.setenv("ADVISOR_TODAY", "yesterday")
    with pytest.raises(InvalidInput, match="ADVISOR_TODAY: 'yesterday' is not a date"):
        kb_advisor.predict([_query(index, key, acc)])


def test_benchmarks_pool_by_what_they_run() -> None:
    assert benchmark_group("mlperf-inference", "llama2-70b-99") == "llm"
    assert benchmark_group("mlperf-inference", "deepseek-r1") == "llm"
    assert benchmark_group("mlperf-inference", "resnet50") == "vision"
    assert benchmark_group("mlperf-inference", "dlrm-v2-99") == "recommendation"
    assert benchmark_group("mlperf-inference", "whisper") == "speech"
    assert benchmark_group("mlperf-inference", "rgat") == "graph"
    assert benchmark_group("mlperf-training", "rgat") == "training"


def test_rounds_ahead_follow_the_catalogue() -> None:
    assert next_round("mlperf-inference", 5.1) == pytest.approx(6.0)
    assert next_round("mlperf-inference", 4.1) == pytest.approx(5.0)
    # beyond the catalogue's rounds, MLPerf's naming: X.0, X.1, then (X+1).0 (never v5.2)
    assert next_round("mlperf-inference", 20.1) == pytest.approx(21.0)
    assert next_round("mlperf-training", 20.0) == pytest.approx(20.1)
    assert as_of_error("next") is None and as_of_error("v6.0") is None
    assert as_of_error("today") is None and as_of_error("2026-05-01") is None
    assert "as_of: 'soon'" in (as_of_error("soon") or "")
    assert "as_of: '2026-13-01'" in (as_of_error("2026-13-01") or "")
    assert round_at("mlperf-inference", date(2025, 10, 1), 4.1) == pytest.approx(5.1)
    assert round_at("mlperf-inference", date(2025, 10, 1), 5.1) == pytest.approx(5.1)


def test_recommend_answers_for_the_round_its_workload_names(
    kb_advisor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recommend (and the cluster mode, through the same scoring) takes ``as_of`` as predict
    does: today's round by default, the newest round held with "now"; a bad one is refused
    naming the field. A candidate's stack measured on its part is answered as measured (the
    rounds' drift is newer software than that stack), saying so; a part never measured is
    forecast to the round."""
    newest = max(
        (r for r in load_rounds() if r.family == "mlperf-inference"), key=lambda r: r.published
    )
    monkeypatch.setenv("ADVISOR_TODAY", (newest.published + timedelta(days=1)).isoformat())
    asked = {"benchmark": "llama2-70b-99", "scenario": "Offline"}
    today = kb_advisor.recommend(Workload.from_dict(asked, where="test"), top=3)
    held = kb_advisor.recommend(Workload.from_dict({**asked, "as_of": "now"}, where="test"), top=3)

    def key(r: Any) -> tuple[str, int, str, str]:
        c = r.candidate
        return c.accelerator, c.accelerator_count, c.stack_id, c.placement.value

    by_key = {key(r): r for r in held.recommendations}
    compared = 0
    for rec in today.recommendations:
        same = by_key.get(key(rec))
        if same is None or same.value is None or rec.value is None:
            continue
        forecast = [f for f in rec.factors if f.name == "forecast"]
        assert not [f for f in same.factors if f.name == "forecast"]
        if rec.basis.value == "transferred":
            assert forecast and f"-> {newest.id}" in forecast[0].value
            assert rec.value == pytest.approx(same.value * forecast[0].effect, rel=1e-3)
            assert rec.round == newest.id  # every row names its round
        else:
            assert not forecast and rec.value == pytest.approx(same.value, rel=1e-9)
            assert rec.round == same.round and rec.round in {r.id for r in load_rounds()}
            assert any("as measured with this stack in" in w for w in rec.warnings), rec.warnings
        compared += 1
    assert compared >= 2
    assert {r.basis.value for r in today.recommendations} >= {"observed", "transferred"}
    with pytest.raises(InvalidInput, match="as_of"):
        Workload.from_dict({**asked, "as_of": "someday"}, where="test")


def test_rounds_beyond_the_catalogue_follow_the_cadence() -> None:
    assert rounds_between("mlperf-inference", 5.1, 9.0) == 7  # v6.0 .. v9.0, two a year
    assert rounds_between("mlperf-inference", 3.0, 4.1) == 3


def test_age_counts_published_rounds_since_the_catalogue_introduced_it(kb_advisor: Any) -> None:
    """A benchmark's age is its published rounds since the round whose results first hold it
    (the catalogue's ``introduced``), not its rounds held here: llama2-70b's first held round
    (v4.1) is its second published one (v4.0 introduced it); Training's undated rounds follow
    the x.0 / x.1 cadence."""
    assert introduced_round("mlperf-inference", "llama2-70b-99") == pytest.approx(4.0)
    assert introduced_round("mlperf-inference", "deepseek-r1") == pytest.approx(5.1)
    # a name both families use is looked up in the slice's own: Training's rgat is v4.0's
    assert introduced_round("mlperf-training", "rgat") == pytest.approx(4.0)
    assert introduced_round("mlperf-training", "retinanet") == pytest.approx(2.0)
    assert rounds_after("mlperf-inference", 4.0, 4.1) == 1
    assert rounds_after("mlperf-inference", 0.7, 1.1) == 2  # v1.0, v1.1
    assert rounds_after("mlperf-training", 4.0, 5.0) == 2  # v4.1, v5.0
    assert rounds_after("mlperf-inference", 5.1, 5.1) == 0
    index = kb_advisor.evidence()
    drift = index.round_drift
    llama = [k for k in index.slices if k[0] == "mlperf-inference" and k[1] == "llama2-70b-99"]
    assert llama and min(r for k in llama for r in drift.rounds(k)) == pytest.approx(4.1)
    assert drift.age_count(llama[0], 4.1) == 1 and drift.age(llama[0], 4.1) == "1"
    assert drift.age(llama[0], 5.1) == "2+"
    # Training's undated rounds count as Inference's dated ones do (one counter for both)
    assert rounds_between("mlperf-training", 4.1, 6.0) == 3
    # no held result predates the round the catalogue says introduced its benchmark
    for key in index.slices:
        first = introduced_round(key[0], model_name(key[1]))
        held = drift.rounds(key)
        if first is not None and held:
            assert held[0] >= first - 1e-9, (key, held[0], first)


def test_a_group_with_few_young_steps_learns_from_every_group_at_that_age() -> None:
    """Where a group holds fewer than ``MIN_PRIOR_PAIRS`` steps of a benchmark's age, the prior
    takes every group's steps at that age before its own of every age: a young benchmark moves
    as young benchmarks have, not as its group's mature ones."""
    young_vision = [("throughput", "vision", "0", "nvidia", 3.0, math.log(1.3))] * MIN_PRIOR_PAIRS
    young_llm = [("throughput", "llm", "0", "nvidia", 5.1, math.log(1.02))] * 2
    mature_llm = [("throughput", "llm", "2+", "nvidia", 5.1, math.log(1.01))] * 20
    state = PriorState(tuple(young_vision + young_llm + mature_llm), {"": 1.0})
    prior = DriftPrior(cast(Any, None), state)
    mid, lo, hi, pairs, name = prior.cell("throughput", "llm", "0", "nvidia")
    assert name == "every group, age 0; throughput"
    assert pairs == MIN_PRIOR_PAIRS + 2 and lo <= mid <= hi
    assert math.exp(mid) == pytest.approx(1.3)
    # with enough steps of its own at that age, the group's own cell answers
    own = [("throughput", "llm", "0", "nvidia", 5.1, math.log(1.05))] * MIN_PRIOR_PAIRS
    prior = DriftPrior(cast(Any, None), PriorState(tuple(young_vision + own), {"": 1.0}))
    assert prior.cell("throughput", "llm", "0", "nvidia")[4] == "llm, age 0, nvidia; throughput"


H200 = "NVIDIA H200-SXM-141GB"
LLAMA = {
    "benchmark": "llama2-70b-99",
    "scenario": "Offline",
    "accelerator": H200,
    "metric": "tokens_per_second",
}


def _published(round_id: str) -> list[float]:
    """The closed-division H200 x8 llama2-70b-99 Offline results of a round, as published."""
    import csv

    from tests.support.mlperf import require_shared_data

    path = require_shared_data() / f"observations_{round_id}.csv"
    with path.open() as handle:
        return [
            float(r["value"])
            for r in csv.DictReader(handle)
            if r["division"] == "closed"
            and r["benchmark"] == "llama2-70b-99"
            and r["scenario"] == "Offline"
            and r["accelerator"] == H200
            and r["accelerators_per_node"] == "8"
        ]


def test_a_named_stack_is_answered_as_it_measured_not_carried(kb_advisor: Any) -> None:
    """A query naming the stack a result ran gets that stack's own result and its round, not
    the rounds' drift (newer software): an H200's TensorRT 10.2.0 of v4.1 is not carried past
    its own TensorRT 10.11 of v5.1, in predict, recommend or compare."""
    old = kb_advisor.predict(
        [{**LLAMA, "accelerator_count": 8, "framework": "TensorRT 10.2.0, CUDA 12.4"}]
    )[0]
    assert old.basis.value == "observed" and old.round == "v4.1"
    assert not [f for f in old.factors if f.name in ("round drift", "forecast")]
    assert any("as measured with this stack in v4.1" in w for w in old.warnings)
    assert min(_published("v4.1")) <= old.value <= max(_published("v4.1"))
    ranked = kb_advisor.recommend(
        Workload.from_dict(
            {
                "benchmark": "llama2-70b-99",
                "scenario": "Offline",
                "hardware": {"accelerators": [H200], "count": 8},
            },
            where="test",
        ),
        top=1,
    ).recommendations[0]
    assert ranked.value > old.value and "v5.1" in str(ranked.evidence.rounds)
    stacks = kb_advisor.rank_stacks(benchmark="llama2-70b-99", scenario="Offline", accelerator=H200)
    assert [r["value"] for r in stacks] == sorted((r["value"] for r in stacks), reverse=True)
    assert stacks[0]["round"] == "v5.1"


def test_a_held_round_is_answered_from_its_own_results(kb_advisor: Any) -> None:
    """``as_of`` an older round the knowledge base holds answers from that round's results (not
    the newest carried back); a round before the benchmark's first held one, or a date before
    every dated round, is refused, saying so."""
    v41 = kb_advisor.predict([{**LLAMA, "accelerator_count": 8, "as_of": "v4.1"}])[0]
    assert v41.basis.value == "observed" and v41.round == "v4.1"
    assert not [f for f in v41.factors if f.name in ("round drift", "forecast")]
    assert v41.value == pytest.approx(float(np.median(_published("v4.1"))), rel=0.02)
    assert v41.evidence.rounds == ["v4.1"]
    early, dawn = kb_advisor.predict(
        [
            {**LLAMA, "accelerator_count": 8, "as_of": "v3.0"},
            {**LLAMA, "accelerator_count": 8, "as_of": "1999-01-01"},
        ]
    )
    assert early.basis.value == "unsupported" and "before llama2-70b-99 Offline's first" in str(
        early.reason
    )
    assert dawn.basis.value == "unsupported" and "no round of mlperf-inference" in str(dawn.reason)


def test_a_named_framework_is_read_as_written_and_never_observed_from_another(
    kb_advisor: Any,
) -> None:
    """``tensorrt==10.2.0`` (a workload constraint's spelling) names that version; ``vllm``,
    which never ran llama2-70b on an H200 in the shared rounds, gets no observation of
    TensorRT's results: an interpolation saying whose figure it is, with a version too."""
    pinned, vllm, versioned = kb_advisor.predict(
        [
            {**LLAMA, "accelerator_count": 8, "framework": "tensorrt==10.2.0", "as_of": "now"},
            {**LLAMA, "accelerator_count": 8, "framework": "vllm", "as_of": "now"},
            {**LLAMA, "accelerator_count": 8, "framework": "vLLM 0.9.0", "as_of": "now"},
        ]
    )
    assert pinned.query.components == {"tensorrt": "10.2.0"} and pinned.round == "v4.1"
    assert min(_published("v4.1")) <= pinned.value <= max(_published("v4.1"))
    assert vllm.basis.value == "interpolated" and not vllm.observed
    assert any("no result of vllm on this configuration" in w for w in vllm.warnings)
    assert any("tensorrt" in w for w in vllm.warnings if "no result of vllm" in w)
    # with a version, no stack matches at all: an interpolation that says so too
    assert versioned.basis.value == "interpolated"
    assert any(
        w.startswith("no result of vllm on this accelerator: the figure is of") and "tensorrt" in w
        for w in versioned.warnings
    )


def test_stacks_are_ranked_as_of_a_held_round(kb_advisor: Any) -> None:
    """``compare rank-stacks --as-of`` reads the results up to that round (the stacks a user had
    then); before the accelerator's first result there is nothing to rank, said so."""
    every = kb_advisor.rank_stacks(benchmark="llama2-70b-99", scenario="Offline", accelerator=H200)
    then = kb_advisor.rank_stacks(
        benchmark="llama2-70b-99", scenario="Offline", accelerator=H200, as_of="v4.1"
    )
    assert {r["round"] for r in then} == {"v4.1"} and len(then) < len(every)
    assert all(r["carried_forward"] == r["value"] for r in then)  # nothing newer to carry to
    ahead = kb_advisor.rank_stacks(
        benchmark="llama2-70b-99", scenario="Offline", accelerator=H200, as_of="next"
    )
    assert ahead == every  # a stack's figure does not move with the rounds
    with pytest.raises(NotFound, match=r"first ran llama2-70b-99 Offline in v4\.1"):
        kb_advisor.rank_stacks(
            benchmark="llama2-70b-99", scenario="Offline", accelerator=H200, as_of="v3.0"
        )
    with pytest.raises(InvalidInput, match="as_of"):
        kb_advisor.rank_stacks(
            benchmark="llama2-70b-99", scenario="Offline", accelerator=H200, as_of="someday"
        )


def test_a_held_round_reads_the_parts_results_of_then_over_a_later_exact_one(
    kb_advisor: Any,
) -> None:
    """As of a held round, a part measured then at other counts is interpolated from those,
    not answered by its later result at the asked count carried back (review finding: H100 x4
    resnet50 as of v3.0 came from v4.1 x 1.011 though v3.0 held its x1 and x8)."""
    index = kb_advisor.evidence()
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or key[4] != "closed" or not index.higher_is_better(key):
            continue
        for acc, rows in by_acc.items():
            first = float(index.round_no[rows].min())
            counts = index.table.count[rows]
            later = {int(c) for c in counts[index.round_no[rows] > first].tolist()}
            then = {int(c) for c in counts[index.round_no[rows] == first].tolist()}
            if first > 0 and later - then:
                count = min(later - then)
                asked = {**_query(index, key, acc), "accelerator_count": count}
                [answer] = kb_advisor.predict([{**asked, "as_of": round_label(first)}])
                assert answer.basis.value == "interpolated", answer
                assert answer.round == round_label(first)
                assert not [f for f in answer.factors if f.name in ("round drift", "forecast")]
                assert answer.evidence.rounds == [round_label(first)]
                return
    pytest.skip("no part ran a count only after its first round")


def test_a_round_held_without_the_benchmark_is_not_called_not_imported(kb_advisor: Any) -> None:
    """A benchmark missing from a round the knowledge base holds (retired, or not run by anyone
    that round) is forecast to it, saying the round is held without it, not that the round was
    never imported (review finding: Training bert "v5.1 ... not imported")."""
    index = kb_advisor.evidence()
    drift = index.round_drift
    for key, by_acc in index.slices.items():
        if key[4] != "closed" or not by_acc:
            continue
        newest = max(drift.family_rounds(key[0]))
        held = drift.rounds(key)
        if held and held[-1] < newest:
            acc = next(iter(by_acc))
            [answer] = kb_advisor.predict([_query(index, key, acc, as_of=round_label(newest))])
            if answer.basis.value == "unsupported":
                continue
            [note] = [w for w in answer.warnings if w.startswith("a forecast for")]
            assert "the knowledge base holds it, without" in note and "not imported" not in note
            return
    pytest.skip("every slice holds its family's newest round")


def test_recommend_as_of_a_held_round_ranks_what_was_measured_by_then(kb_advisor: Any) -> None:
    """As of a held round, a candidate whose every result came later (the stack, or the part,
    was not published by then) is left out, saying so (a probe found GB200 of v5.1 ranked first
    as of v4.1); a round before the benchmark's first, or a date before every round, ranks
    nothing and says why."""
    asked = {"benchmark": "llama2-70b-99", "scenario": "Offline", "as_of": "v4.1"}
    then = kb_advisor.recommend(Workload.from_dict(asked, where="test"), top=20)
    assert then.recommendations
    for rec in then.recommendations:
        if rec.basis.value == "observed":
            assert rec.evidence.rounds and max(rec.evidence.rounds) <= "v4.1", rec.evidence
    assert any("after the round asked (v4.1)" in e.reason for e in then.excluded_candidates)
    # a part first measured (GB300, v5.1) or launched after the round is no candidate of v4.1
    assert not [r for r in then.recommendations if r.candidate.accelerator in ("GB300", "B300")]
    # a result of the round asked is not stale as of that round (a probe read "stale data ...
    # the knowledge base has v5.1" on every v4.1 row); one older than the round asked is
    stale = {
        r.evidence.rounds[-1]: [w for w in r.warnings if w.startswith("stale data")]
        for r in then.recommendations
        if r.basis.value == "observed"
    }
    assert stale.get("v4.1", []) == []
    for last, said in stale.items():
        if last != "v4.1":
            assert said == [f"stale data: last seen in round {last}, before the round asked (v4.1)"]
    for early, why in (
        ("v3.0", "before llama2-70b-99 Offline's first round"),
        ("2019-01-01", "no round"),
    ):
        with pytest.raises(NotFound, match=why):
            kb_advisor.recommend(Workload.from_dict({**asked, "as_of": early}, where="test"), top=3)


def test_a_derived_scenario_is_answered_for_its_benchmarks_round(kb_advisor: Any) -> None:
    """A scenario no result ran (Interactive, derived from Server) is "now" its benchmark's newest
    round, so "next" is the round after it (a probe read round "v0.5": next after nothing)."""
    asked = {
        "accelerator": "NVIDIA B200-SXM-180GB",
        "accelerator_count": 8,
        "benchmark": "deepseek-r1",
        "metric": "tokens_per_second",
    }
    server, interactive = kb_advisor.predict(
        [{**asked, "scenario": s, "as_of": "next"} for s in ("Server", "Interactive")]
    )
    assert server.basis.value == "observed"
    assert any(f.name == "scenario" for f in interactive.factors)  # from Server's figure
    assert interactive.round == server.round == "v6.0"
    (held,) = kb_advisor.predict([{**asked, "scenario": "Interactive", "as_of": "now"}])
    assert held.basis.value == "unsupported"  # v5.1's rules had no Interactive for it
    assert "the answer is for v5.1, before the rules set Interactive" in (held.reason or "")


def test_a_round_the_cadence_never_names_is_refused_for_training_too(kb_advisor: Any) -> None:
    """Training lists rounds up to v5.1: v6.5 had been answered as a forecast (Inference's v6.5
    was refused), as v6.0 and v6.1 are."""
    query = {
        "family": "mlperf-training",
        "benchmark": "llama2_70b_lora",
        "accelerator": "GB300",
        "accelerator_count": 8,
        "metric": "time_to_train_min",
    }
    no_round, ahead = kb_advisor.predict([{**query, "as_of": "v6.5"}, {**query, "as_of": "v6.1"}])
    assert no_round.value is None and "is no round of mlperf-training" in (no_round.reason or "")
    assert ahead.value is not None and ahead.round == "v6.1"


def test_a_date_before_the_first_dated_round_names_the_undated_rounds_held(
    kb_advisor: Any,
) -> None:
    """The catalogue dates Training from v5.0 on; v4.1 is held. A probe's ``as_of 2025-01-01``
    was told "no round of mlperf-training was published by then": it was (v4.1)."""
    query = {
        "family": "mlperf-training",
        "benchmark": "llama2_70b_lora",
        "accelerator": "H100-SXM5-80GB",
        "accelerator_count": 8,
        "metric": "time_to_train_min",
    }
    early, named = kb_advisor.predict(
        [{**query, "as_of": "2025-01-01"}, {**query, "as_of": "v4.1"}]
    )
    reason = early.reason or ""
    assert early.value is None and "was published by then" not in reason
    assert "dates no round of mlperf-training before v5.0" in reason
    assert "holds v4.1, undated: name the round (as_of: v4.1)" in reason
    assert named.value is not None and named.round == "v4.1"


def test_a_round_that_does_not_exist_is_refused_below_the_newest_held_too(
    kb_advisor: Any,
) -> None:
    """v5.7 and v3.4 name no round (neither listed, held nor of the cadence) however far below
    the newest round held they are."""
    index = kb_advisor.evidence()
    key, acc, _, _ = _older_accelerator(index)
    asked = ["v5.7", "v3.4", "v0.3", "v3.0"]
    answers = kb_advisor.predict([_query(index, key, acc, as_of=a) for a in asked])
    why = dict(zip(asked, (a.reason or "" for a in answers)))
    for missing in ("v5.7", "v3.4", "v0.3"):
        assert "is no round of mlperf-inference" in why[missing], why[missing]
    assert "is no round" not in why["v3.0"]  # a round of the catalogue: answered or refused else


def test_a_configuration_first_measured_after_the_round_asked_says_it_was_carried_back(
    kb_advisor: Any,
) -> None:
    """GB200 first ran llama2-70b in v5.1: asked as of v4.1, its v5.1 result carried back by the
    drift says that configuration had no result by then (``recommend`` leaves such out)."""
    (early,) = kb_advisor.predict(
        [
            {
                "benchmark": "llama2-70b-99",
                "scenario": "Offline",
                "accelerator": "NVIDIA GB200",
                "accelerator_count": 4,
                "as_of": "v4.1",
            }
        ]
    )
    assert early.round == "v4.1" and early.value
    assert (
        "carried back to v4.1 from results of v5.1 on: this configuration had no result by the "
        "round asked" in early.warnings
    )


def test_a_date_well_past_the_newest_dated_round_says_a_later_one_may_be_out(
    kb_advisor: Any,
) -> None:
    """as_of 2027-06-01 is answered for the newest round the catalogue dates, saying a later
    one may have been published by then that nothing here holds (a probe got v6.0 unsaid); a
    date within a round's spacing of it says nothing of the kind."""
    late, near, measured = kb_advisor.predict(
        [
            {**LLAMA, "accelerator_count": 8, "as_of": "2027-06-01"},
            {**LLAMA, "accelerator_count": 8, "as_of": "2026-05-01"},
            # a named stack is answered as measured (v4.1): the date names v5.1, just published
            {
                **LLAMA,
                "accelerator_count": 8,
                "framework": "tensorrt==10.2.0",
                "as_of": "2025-10-01",
            },
        ]
    )
    assert late.round == near.round
    (said,) = [w for w in late.warnings if w.startswith("as_of 2027-06-01:")]
    assert f"answered for {late.round}" in said and "a later one may be out" in said
    assert not [w for w in near.warnings if w.startswith("as_of ")]
    assert measured.round == "v4.1" and not [w for w in measured.warnings if "a later one" in w]


def test_a_carry_to_a_held_round_learns_nothing_from_later_rounds(kb_advisor: Any) -> None:
    """A carry between held rounds reads the prior of the steps known by then: importing a later
    round must not move an answer for an earlier one (a probe's next round had moved GH200's
    resnet50 answer for v5.1 by 28%, its own step weighed in as the newest)."""
    from stack_advisor.advisor.estimate.query import Query
    from stack_advisor.advisor.verbs.evaluate import subset

    full = kb_advisor.evidence()
    table = full.table
    upto = np.flatnonzero(full.round_no <= round_number("v4.1"))
    cut = EvidenceIndex(subset(table, upto))
    checked = 0
    for key in cut.slices:
        held = cut.round_drift.rounds(key)
        if key[4] != "closed" or len(held) < 2 or held[-1] != round_number("v4.1"):
            continue
        if cut.round_drift.pairs(key, held[-2], held[-1]):
            continue  # the slice's own pairs: the prior only stands beside them
        acc = next(iter(cut.slices[key]))
        q = Query(*key, acc, 1, "bare-metal", raw_accelerator=acc)
        a = cut.round_drift.between(q, held[-2], held[-1])
        b = full.round_drift.between(q, held[-2], held[-1])
        assert a is not None and b is not None
        assert (a.log_mid, a.log_lo, a.log_hi) == pytest.approx((b.log_mid, b.log_lo, b.log_hi))
        checked += 1
        if checked >= 5:
            break
    assert checked, "no slice carried by the prior between held rounds"
