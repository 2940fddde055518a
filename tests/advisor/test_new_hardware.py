"""Transfers to hardware never measured on a benchmark (issue 28, new hardware): the catalogue's
figures at the precision a benchmark runs at, cross-vendor transfers, bandwidth-only transfers
for parts whose compute figures are unpublished, each kind calibrated apart; on small synthetic
tables of two rounds built in a real embedded store. Values are synthetic (a roofline law on the
catalogue's real figures), never presented as published results."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import hardware, transfer
from stack_advisor.advisor.estimate.generation_transfer import (
    replay_summary as generation_replay_summary,
)
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.level_transfer import replay_summary
from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.estimate.transfer_replay import (
    FIRST_RESULTS,
    FROM_OTHERS,
    FROM_SIBLINGS,
    drawn_on,
    first_results,
)
from stack_advisor.advisor.estimate.transferred import (
    CROSS_VENDOR,
    kind_quantiles,
    stretch_note,
)
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)

NVIDIA = [
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA H100-SXM5-80GB",
    "NVIDIA T4",
    "NVIDIA A10",
    "NVIDIA A30",
    "NVIDIA L4",
    "NVIDIA L40S",
    "NVIDIA A2",
    "NVIDIA L40",
    "NVIDIA H100-PCIe-80GB",
    "NVIDIA H200-SXM-141GB",
    "NVIDIA A40",
    "NVIDIA A16",
    "NVIDIA H20",
    "NVIDIA RTX 4090",
    "NVIDIA B200-SXM-180GB",
    "NVIDIA RTX 6000 Ada",
    "NVIDIA A100-PCIe-40GB",
    "NVIDIA Jetson AGX Orin",
    "NVIDIA A100-SXM4-40GB",
]
AMD = ["AMD Instinct MI300X"]
ROUNDS = (("v3.1", 0.95), ("v4.0", 1.0), ("v4.1", 1.1))  # the stack's drift between rounds
SLICE = ("mlperf-inference", "resnet50", "Offline", "samples_per_second", "closed")


def _law(name: str) -> float:
    """A synthetic per-accelerator figure: compute-bound at 8 bits."""
    figures = hardware.scaling_figures(name, "8-bit")
    assert figures is not None, name
    return 10.0 * figures[0]


def _obs(name: str, vendor: str, rnd: str, value: float, i: int) -> Observation:
    return Observation(
        benchmark=Benchmark(
            family="mlperf-inference",
            name="resnet50",
            parameters={"scenario": "Offline", "division": "closed"},
        ),
        metric="samples_per_second",
        value=value,
        unit="samples/s",
        higher_is_better=True,
        timestamp=datetime(2024, 1 + i % 12, 1, tzinfo=UTC),
        stack=SoftwareStack(framework="tensorrt", framework_version="10.2.0", cuda="12.4"),
        accelerator=Accelerator(model=name, vendor=vendor, count=1),
        placement=Placement(kind=PlacementKind.BARE_METAL),
        provenance=Provenance(
            kind=SourceKind.PUBLISHED,
            source="mlperf-inference",
            details={"round": rnd, "division": "closed", "submitter": "Acme", "system": f"sys-{i}"},
        ),
        source_key=f"synthetic-{i}",
    )


def _memory_law(name: str) -> float:
    """A synthetic per-accelerator figure: memory-bound (bandwidth in 8-bit operands)."""
    figures = hardware.scaling_figures(name, "8-bit")
    assert figures is not None, name
    return 5.0 * figures[1]


def _index(store, rounds: tuple[tuple[str, float], ...] = ROUNDS, law=_law) -> EvidenceIndex:  # type: ignore[no-untyped-def]
    rows, i = [], 0
    for rnd, drift in rounds:
        for name in NVIDIA:
            rows.append(_obs(name, "nvidia", rnd, law(name) * drift, i))
            i += 1
    for name in AMD:  # AMD's part runs 20% under the law, in both rounds
        for rnd, drift in rounds:
            rows.append(_obs(name, "amd", rnd, 0.8 * law(name) * drift, i))
            i += 1
    store.ingest(IngestBatch(observations=rows))
    return EvidenceIndex(Advisor(store).table())


@pytest.fixture
def index(embedded_store) -> EvidenceIndex:  # type: ignore[no-untyped-def]
    return _index(embedded_store)


def test_kinds_of_transfer_too_rarely_replayed_are_refused_with_the_reason(embedded_store) -> None:  # type: ignore[no-untyped-def]
    # one round of a memory-bound benchmark: 21 cross-vendor replays, none by bandwidth
    one_round = _index(embedded_store, ROUNDS[-1:], law=_memory_law)
    est = one_round.estimate(_query("Intel Gaudi 2"))
    assert est.basis is Basis.UNSUPPORTED
    assert "no intel accelerator ever ran resnet50 Offline" in (est.reason or "")
    assert "too few cross-vendor transfers" in (est.reason or "")
    # a part without a compute figure: bandwidth alone never stands (every blend weighs compute)
    est = one_round.estimate(_query("NVIDIA RTX PRO 6000 Blackwell Server Edition"))
    assert est.basis is Basis.UNSUPPORTED and (est.reason or "").startswith("compute unpublished")


def _query(accelerator: str) -> Query:
    return Query(
        family=SLICE[0],
        benchmark=SLICE[1],
        scenario=SLICE[2],
        metric=SLICE[3],
        division=SLICE[4],
        accelerator=hardware.figures(accelerator).name,
        raw_accelerator=accelerator,
        count=1,
        placement="bare-metal",
        as_of="now",  # the synthetic rounds' newest: no forecast to today's round on top
    )


def test_figures_follow_the_precision_policy_and_leave_unpublished_figures_empty() -> None:
    b200 = hardware.figures("NVIDIA B200-SXM-180GB", "4-bit")
    assert b200.precision == "fp4" and b200.compute == 9000
    assert b200.effective_bandwidth == pytest.approx(8000 * 2)  # half the bytes per operand
    assert hardware.figures("NVIDIA B200-SXM-180GB", "8-bit").precision == "int8"
    h100 = hardware.figures("NVIDIA H100-SXM5-80GB", "4-bit")
    assert h100.precision in ("int8", "fp8")  # no fp4 on Hopper: the ladder's next step
    # the catalogue publishes no compute figure for this edition: bandwidth only, never guessed
    rtx = hardware.figures("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    assert rtx.compute is None and rtx.scaling() is None
    assert hardware.bandwidth_figures("NVIDIA RTX PRO 6000 Blackwell Server Edition") == (
        1.0,
        rtx.bandwidth_gbs,
    )
    # ... but its generation runs fp4 (the Workstation Edition publishes it): at 4 bits it moves
    # twice the operands; a part without fp4 (Hopper) keeps its 8-bit count
    assert hardware.runs_fp4("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    assert hardware.bandwidth_figures("NVIDIA RTX PRO 6000 Blackwell Server Edition", "4-bit") == (
        1.0,
        2 * rtx.bandwidth_gbs,
    )
    assert hardware.runs_fp4("NVIDIA B200-SXM-180GB") and not hardware.runs_fp4(
        "NVIDIA H100-SXM5-80GB"
    )
    assert hardware.bandwidth_figures("NVIDIA H100-SXM5-80GB", "4-bit") == (1.0, 3350)
    with pytest.raises(ValueError, match="precision policy"):
        hardware.figures("NVIDIA T4", "2-bit")


def test_a_matrix_peak_published_at_fewer_bits_is_read_at_the_policys_by_the_bit_ratio() -> None:
    """RTX PRO 6000 Blackwell publishes fp4 2,000 T and the vector units' fp32 125 T: at 8 and
    16 bits it is read off its fp4 (1,000, 500), not its fp32 (an 8x understatement against
    parts read at their matrix peaks); never towards fewer bits; a part with no matrix figure
    keeps its fp32."""
    ws = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    at8, at16 = hardware.figures(ws, "8-bit"), hardware.figures(ws, "16-bit")
    assert (at8.precision, at8.compute, at8.derived_from) == ("int8", 1000, ("fp4", 2000))
    assert (at16.precision, at16.compute) == ("fp16", 500)
    assert at8.effective_bandwidth == 1792  # 8-bit operands
    assert "from its fp4 2000 T" in at8.describe()
    assert hardware.figures(ws, "4-bit").derived_from is None  # its own fp4
    ada = hardware.figures("NVIDIA RTX 4000 Ada Generation", "16-bit")
    assert (ada.precision, ada.compute) == ("fp16", pytest.approx(163.8 / 2))
    assert hardware.figures("NVIDIA RTX 4000 Ada Generation", "4-bit").precision == "fp8"
    b200 = hardware.figures("NVIDIA B200-SXM-180GB", "16-bit")  # published: read as published
    assert (b200.compute, b200.derived_from) == (2250, None)
    a5000 = hardware.figures("NVIDIA RTX A5000", "8-bit")
    assert (a5000.precision, a5000.compute) == ("fp32", 27.8)
    # where the catalogue says a part's figures do not follow the rule (``not_derived``): a
    # GeForce card's 16-bit rate (accumulate mode unstated), a Jetson module's int8 with its DLAs
    assert hardware.figures("NVIDIA GeForce RTX 5090", "8-bit").compute == 838
    assert hardware.figures("NVIDIA GeForce RTX 5090", "16-bit").precision == "fp32"
    assert hardware.figures("NVIDIA Jetson AGX Orin", "16-bit").compute is None
    assert hardware.figures("NVIDIA Jetson Orin Nano", "16-bit").compute == 10  # GPU only


def test_replicas_count_whole_parts_per_copy() -> None:
    assert hardware.replicas_per_node(70, 80, 8) == 8
    assert hardware.replicas_per_node(70, 48, 8) == 4
    assert hardware.replicas_per_node(70, 24, 2) == 0


def test_the_precision_policy_is_learned_where_it_predicts_better() -> None:
    # synthetic figures (a pure-function check): values follow the compute figure of the second
    # policy; under the first, half of the parts have their compute figure off by 2x
    compute = {f"p{i}": 100.0 * 1.5**i for i in range(8)}
    values = {n: 3.0 * c for n, c in compute.items()}
    off = {n: (c * (2.0 if i % 2 else 1.0), 1000.0) for i, (n, c) in enumerate(compute.items())}
    right = {n: (c, 1000.0) for n, c in compute.items()}
    refs = {
        "8-bit": {n: (values[n], off[n], "nvidia") for n in compute},
        "4-bit": {n: (values[n], right[n], "nvidia") for n in compute},
    }
    policy, alpha = transfer.learn_blend(refs, True)
    assert (policy, alpha) == ("4-bit", max(transfer.ALPHAS))  # compute's share, bandwidth kept
    # a tie keeps the first policy
    assert (
        transfer.learn_blend({"8-bit": refs["4-bit"], "4-bit": refs["4-bit"]}, True)[0] == "8-bit"
    )
    model = transfer.fit(refs[policy], True, alpha, "nvidia", precision=policy).model
    assert model.precision == "4-bit" and "at 4-bit" in model.describe()
    assert transfer.TransferModel.from_list(model.as_list()) == model
    # a model persisted before the policy existed reads as the default
    assert (
        transfer.TransferModel.from_list(model.as_list()[:6]).precision == hardware.DEFAULT_POLICY
    )


def test_same_vendor_transfer_shows_its_figures_at_the_newest_rounds_law(
    index: EvidenceIndex,
) -> None:
    est = index.estimate(_query("NVIDIA H100-NVL-94GB"))
    assert est.basis is Basis.TRANSFERRED
    names = [f[0] for f in est.factors]
    assert "reference" in names and "target" in names and "transfer kind" not in names
    # the latest round's law itself: the replays' median (their round's drift, +5% then +10%)
    # does not move a transfer whose references are of the slice's newest round
    assert "efficiency" not in names
    # the newest round's figure of its sibling (H100 PCIe: the one of its design that ran it)
    # through the blend, a quarter on bandwidth (the law itself is compute-only)
    nvl, pcie = (hardware.scaling_figures(n, "8-bit") for n in ("H100 NVL", "H100-PCIe-80GB"))
    assert nvl is not None and pcie is not None
    blend = (nvl[0] / pcie[0]) ** 0.75 * (nvl[1] / pcie[1]) ** 0.25
    assert est.references == ["H100-PCIE-80GB"]
    assert est.value == pytest.approx(1.1 * _law("NVIDIA H100-PCIe-80GB") * blend, rel=0.02)
    assert est.low <= est.value <= est.high


def test_cross_vendor_transfer_is_calibrated_apart_and_says_so(index: EvidenceIndex) -> None:
    # no Intel part ran the slice: transferred from the other vendors, with its own residuals
    est = index.estimate(_query("Intel Gaudi 2"))
    pools = index.residuals_for(SLICE[0])
    cross = pools[(Basis.TRANSFERRED, None, "higher", CROSS_VENDOR)]
    assert len(cross) >= 40
    assert est.basis is Basis.TRANSFERRED
    assert ("transfer kind", CROSS_VENDOR, 1.0) in est.factors
    assert any("no intel accelerator ran this benchmark" in n for n in est.notes)
    # another vendor's transfer answers at its replays' centre (how that vendor's parts compared
    # before), shown as its efficiency factor; a same-vendor one at the scaling itself
    (efficiency,) = [f for f in est.factors if f[0] == "efficiency"]
    assert CROSS_VENDOR in efficiency[1] and abs(math.log(efficiency[2])) > 0.01


def test_cross_vendor_replays_fill_their_pool(index: EvidenceIndex) -> None:
    pools = index.residuals_for(SLICE[0])
    cross = pools[(Basis.TRANSFERRED, "closed", "samples_per_second", CROSS_VENDOR)]
    # MI300X from NVIDIA's parts and NVIDIA's parts from MI300X, in every round: AMD runs under the
    # law by 20%, so some residuals are that far off
    assert len(cross) == len(ROUNDS) * (len(NVIDIA) + len(AMD))
    assert min(cross) < math.log(0.85)


def test_a_part_with_unpublished_compute_is_refused_where_the_benchmark_is_compute_bound(
    index: EvidenceIndex,
) -> None:
    by_acc = index.slices[SLICE]
    assert index.blend(SLICE, by_acc)[1] > 0  # the synthetic law is compute-bound, and learned so
    est = index.estimate(_query("NVIDIA RTX PRO 6000 Blackwell Server Edition"))
    assert est.basis is Basis.UNSUPPORTED and (est.reason or "").startswith("compute unpublished")
    assert "not memory-bound" in (est.reason or "") and "bandwidth alone would not predict it" in (
        est.reason or ""
    )


def test_a_part_with_unpublished_compute_is_refused_even_where_the_benchmark_is_memory_bound(
    embedded_store,
) -> None:  # type: ignore[no-untyped-def]
    # issue 43: a figure moves with both compute and bandwidth; the blend keeps compute's share
    # at its smallest even on a memory-bound law, so a part without a compute figure is refused
    index = _index(embedded_store, law=_memory_law)
    assert index.blend(SLICE, index.slices[SLICE])[1] == min(transfer.ALPHAS)
    est = index.estimate(_query("NVIDIA RTX PRO 6000 Blackwell Server Edition"))
    assert est.basis is Basis.UNSUPPORTED and (est.reason or "").startswith("compute unpublished")


def test_a_mixed_system_is_the_sum_of_its_parts(embedded_store) -> None:  # type: ignore[no-untyped-def]
    from stack_advisor.advisor.snapshot import Knowledge
    from stack_advisor.advisor.verbs.predict import predict

    knowledge = Knowledge.from_table(_index(embedded_store).table)
    base = {"benchmark": "resnet50", "scenario": "Offline", "metric": "samples_per_second"}
    mixed, h100, mi300x = predict(
        knowledge,
        [
            {**base, "accelerator": "mixed: 1x H100-SXM5-80GB + 1x MI300X", "accelerator_count": 2},
            {**base, "accelerator": "NVIDIA H100-SXM5-80GB", "accelerator_count": 1},
            {**base, "accelerator": "AMD Instinct MI300X", "accelerator_count": 1},
        ],
    )  # the table's systems are x1
    assert h100.value is not None and mi300x.value is not None and h100.interval and mi300x.interval
    # a sum of parts measured elsewhere is no measurement of this system: at best interpolated
    assert mixed.basis is Basis.INTERPOLATED and mixed.observed is False
    assert mixed.value == pytest.approx(h100.value + mi300x.value)
    assert mixed.interval is not None
    assert mixed.interval.low == pytest.approx(h100.interval.low + mi300x.interval.low)
    assert [f.name for f in mixed.factors][:2] == ["part", "part"]
    assert mixed.round == h100.round
    assert any("sum of its parts" in w for w in mixed.warnings)
    # a part that cannot be estimated refuses the whole system, with that part's reason
    refused = predict(
        knowledge,
        [{**base, "accelerator": "mixed: 1x H100-SXM5-80GB + 1x B100", "accelerator_count": 2}],
    )[0]
    assert refused.basis is Basis.UNSUPPORTED and refused.value is None
    assert "mixed accelerators" in (refused.reason or "") and "B100" in (refused.reason or "")
    assert "no public specs" in (refused.reason or "")


def test_recommend_ranks_a_catalogue_part_never_measured(embedded_store) -> None:  # type: ignore[no-untyped-def]
    from stack_advisor.advisor.workload import Workload

    _index(embedded_store)
    answer = Advisor(embedded_store).recommend(
        Workload.model_validate(
            {
                "family": "mlperf-inference",
                "benchmark": "resnet50",
                "scenario": "Offline",
                "hardware": {"accelerators": ["NVIDIA H100-NVL-94GB"]},
            }
        )
    )
    assert [r.candidate.accelerator for r in answer.recommendations] == ["H100-NVL-94GB"]
    top = answer.recommendations[0]
    assert top.basis is Basis.TRANSFERRED and top.candidate.published_names == [
        "NVIDIA H100 NVL 94GB"
    ]
    assert any(f.name == "target" for f in top.factors)


def test_cross_vendor_intervals_centre_on_the_target_vendors_replays() -> None:
    # synthetic residuals: parts of vendor a run 40% under what b's parts scale to, b's 40% over
    rng = np.random.default_rng(0)
    to_a, to_b = np.log(0.6) + rng.normal(0, 0.05, 30), np.log(1.6) + rng.normal(0, 0.05, 30)
    level = ("closed", "samples_per_second")
    pools = {
        (Basis.TRANSFERRED, *level, CROSS_VENDOR): np.concatenate([to_a, to_b]),
        (Basis.TRANSFERRED, *level, f"{CROSS_VENDOR} to a"): to_a,
        (Basis.TRANSFERRED, *level, f"{CROSS_VENDOR} to b"): to_b,
    }
    lo, mid, hi = kind_quantiles(pools, SLICE, CROSS_VENDOR, "a", True, 40)
    assert mid == pytest.approx(np.median(to_a)) and lo < mid < hi and hi - lo < 0.3
    # a vendor with too few replays of its own: the whole (wide) pool
    lo, mid, hi = kind_quantiles(pools, SLICE, CROSS_VENDOR, "c", True, 40)
    assert lo < np.log(0.7) and hi > np.log(1.5)
    # too few replays of the kind at every level: NaN (the transfer is refused)
    assert math.isnan(kind_quantiles(pools, SLICE, CROSS_VENDOR, "a", True, 100)[0])


def test_cross_vendor_centre_comes_from_the_level_that_holds_the_target_vendors_replays() -> None:
    # the cell holds 30 replays to vendor b and 5 to a; the family's level 12 to a: a transfer to
    # a is centred on a's own replays there, not on the cell's median (b's direction)
    rng = np.random.default_rng(1)
    to_a, to_b = np.log(0.6) + rng.normal(0, 0.05, 12), np.log(1.6) + rng.normal(0, 0.05, 30)
    cell, family = ("closed", "samples_per_second"), (None, "higher")
    pools = {
        (Basis.TRANSFERRED, *cell, CROSS_VENDOR): np.concatenate([to_a[:5], to_b]),
        (Basis.TRANSFERRED, *cell, f"{CROSS_VENDOR} to a"): to_a[:5],
        (Basis.TRANSFERRED, *cell, f"{CROSS_VENDOR} to b"): to_b,
        (Basis.TRANSFERRED, *family, CROSS_VENDOR): np.concatenate([to_a, to_b]),
        (Basis.TRANSFERRED, *family, f"{CROSS_VENDOR} to a"): to_a,
        (Basis.TRANSFERRED, *family, f"{CROSS_VENDOR} to b"): to_b,
    }
    lo, mid, hi = kind_quantiles(pools, SLICE, CROSS_VENDOR, "a", True, 20)
    assert mid == pytest.approx(np.median(to_a)) and lo < mid < hi
    # b has enough in the cell: its own cell's centre
    assert kind_quantiles(pools, SLICE, CROSS_VENDOR, "b", True, 20)[1] == pytest.approx(
        np.median(to_b)
    )


def _refs(compute: dict[str, float], doubled: set[str]) -> dict[str, transfer.References]:
    """Synthetic references of parts whose value follows their compute figure, under a policy that
    doubles the figures of the parts in ``doubled`` (as 4-bit doubles an fp4 part's) and one that
    does not."""
    values = {n: (3.0 * c, (c, 1000.0), "nvidia") for n, c in compute.items()}
    moved = {
        n: (v, (c * 2, 2000.0) if n in doubled else (c, 1000.0), k)
        for n, (v, (c, _), k) in values.items()
    }
    return {"8-bit": values, "4-bit": moved}


def test_only_parts_whose_figures_move_against_the_others_tell_policies_apart() -> None:
    compute = {f"p{i}": 100.0 * 1.5**i for i in range(6)}
    refs = _refs(compute, {"p5"})
    assert transfer.telling_parts(refs["8-bit"], refs["4-bit"]) == ["p5"]
    # every part's figures doubled: scaling is unchanged, nothing tells
    every = _refs(compute, set(compute))
    assert transfer.telling_parts(every["8-bit"], every["4-bit"]) == []
    # the same figures under both (no part has fp4): nothing tells either
    assert transfer.telling_parts(refs["8-bit"], refs["8-bit"]) == []


def test_a_policy_choice_resting_on_one_part_is_undetermined() -> None:
    compute = {f"p{i}": 100.0 * 1.5**i for i in range(6)}
    one = transfer.choose_policy(_refs(compute, {"p5"}), True)
    assert one.policy == "8-bit" and one.undetermined == ("4-bit",)
    # two parts that move, each predicted across the groups: the evidence decides (values follow
    # the 8-bit figures, so 8-bit is kept and 4-bit is not a candidate)
    two = transfer.choose_policy(_refs(compute, {"p2", "p5"}), True)
    assert two.policy == "8-bit" and two.undetermined == ()
    # identical references: the later policy is undetermined, the first kept
    same = transfer.choose_policy(
        {"8-bit": _refs(compute, set())["8-bit"], "4-bit": _refs(compute, set())["8-bit"]}, True
    )
    assert same.policy == "8-bit" and same.undetermined == ("4-bit",)
    assert (same.policy, same.alpha) == transfer.learn_blend(_refs(compute, set()), True)


def test_an_undetermined_precision_widens_the_interval_to_span_both_policies(
    index: EvidenceIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the spread on its own: at 4 bits the Hopper references are of another device class than
    # the GB200 (``transfer.within_span``), which would leave the fixture's B200 alone to draw on
    monkeypatch.setattr(transfer, "MAX_SPAN", math.inf)
    # the fixture's only fp4 part is the B200: whether resnet50 runs at 4 or 8 bits is not
    # determined; a GB200 (fp4) transferred from the Hopper parts reads 2x its 8-bit figures at 4
    # bits
    choice = index.policy_choice(SLICE, index.slices[SLICE])
    assert choice.policy == "8-bit" and "4-bit" in choice.undetermined
    est = index.estimate(_query("NVIDIA GB200"))
    assert est.basis is Basis.TRANSFERRED and est.value is not None
    precision = [f for f in est.factors if f[0] == "precision"]
    assert len(precision) == 1 and "precision not determined" in precision[0][1]
    assert "at 8-bit (kept) this figure" in precision[0][1] and "at 4-bit" in precision[0][1]
    assert any("precision not determined" in n for n in est.notes)
    assert est.high is not None and est.low is not None
    assert est.low < est.value < est.high and est.high / est.value > 1.5  # spans the 4-bit figure
    # a Hopper part whose nearest references are Hopper parts moves with them: no spread
    h100 = index.estimate(_query("NVIDIA H100-NVL-94GB"))
    assert not [f for f in h100.factors if f[0] == "precision"]


def test_a_transfer_prefers_the_parts_siblings() -> None:
    """The catalogue's siblings (the parts closest in design) are the references where any ran
    the slice (GB200 from B200 alone: a probe's GB200 llama3.1-8b, read with two H200s, came out
    25% under B200's own result), else the nearest by peak figures; a sibling outside the
    target's device class stays out."""
    target = hardware.figures("NVIDIA B300")
    assert hardware.siblings("NVIDIA B300") == ("B200-SXM-180GB", "GB300")
    assert hardware.siblings("no such part") == ()
    names = ["B200-SXM-180GB", "GB300", "GB200", "H200-SXM-141GB", "H100-SXM5-80GB"]
    refs = {n: (1.0, hardware.scaling_figures(n, "4-bit") or (1.0, 1.0), "nvidia") for n in names}
    peaks = hardware.scaling_figures("NVIDIA B300", "4-bit")
    assert peaks is not None and target.name == "B300-SXM-288GB"
    plain = transfer.nearest(refs, peaks)
    preferred = transfer.nearest(refs, peaks, hardware.siblings("NVIDIA B300"))
    assert preferred == ["B200-SXM-180GB", "GB300"] and len(plain) == transfer.NEAREST
    alone = {n: r for n, r in refs.items() if n != "GB300"}
    assert transfer.nearest(alone, peaks, hardware.siblings("NVIDIA B300")) == ["B200-SXM-180GB"]
    no_sibling = {n: r for n, r in refs.items() if n not in ("GB300", "B200-SXM-180GB")}
    # none ran it: the nearest by peak figures, as without siblings
    got = transfer.nearest(no_sibling, peaks, hardware.siblings("NVIDIA B300"))
    assert got == transfer.nearest(no_sibling, peaks) == ["GB200"]  # the one of its class
    # a workstation sibling far outside the accelerator's span is not drawn on
    far = {"tiny": (1.0, (1.0, 1.0), "nvidia"), **refs}
    assert "tiny" not in transfer.nearest(far, peaks, ("tiny",))


def test_a_same_vendor_transfer_is_as_wide_as_parts_first_results_landed(embedded_store) -> None:  # type: ignore[no-untyped-def]
    # the first ten parts run from the first round on the law; the next ten each appear first in
    # a later round, 1.3x or 0.8x what the law scales from their peers: what a transfer answers
    first, later = NVIDIA[:10], NVIDIA[10:19]
    debut = {name: 1 + j % 2 for j, name in enumerate(later)}  # the round each later part joins
    offset = {name: 1.3 if j < 5 else 0.8 for j, name in enumerate(later)}
    rows, i = [], 0
    for r, (rnd, drift) in enumerate(ROUNDS):
        for name in first + [n for n in later if debut[n] <= r]:
            value = _law(name) * drift * (offset[name] if debut.get(name) == r else 1.0)
            for k in range(6):  # six systems each, within 1% of one another
                rows.append(_obs(name, "nvidia", rnd, value * (1 + k / 600), i))
                i += 1
    embedded_store.ingest(IngestBatch(observations=rows))
    index = EvidenceIndex(Advisor(embedded_store).table())
    pool = index.residuals_for(SLICE[0])[
        (Basis.TRANSFERRED, "closed", "samples_per_second", FIRST_RESULTS)
    ]
    assert len(pool) == 6 * len(later)  # each later part's first round, every system
    p10, mid, p90 = np.quantile(pool, (0.1, 0.5, 0.9))
    assert p90 - p10 > math.log(1.3 / 0.8) * 0.8  # the new parts' own offsets, both ways
    est = index.estimate(_query("NVIDIA GH200-96GB"))  # a part that never ran the slice
    assert est.basis is Basis.TRANSFERRED and est.value is not None and est.low is not None
    # the interval reaches below the lower of the answer and the replays' centre as far as the
    # first results fell below their median (its top may be held to what the part's peaks
    # allow); the answer is the scaling itself, the replays' centre not applied to it
    _, centre, _ = index.quantiles(SLICE, Basis.TRANSFERRED)
    assert math.log(est.value / est.low) == pytest.approx(mid - p10 - min(centre, 0.0), abs=0.03)
    assert est.low < est.value


def test_an_answer_outside_its_replayed_range_says_its_interval_was_stretched() -> None:
    assert stretch_note(100.0, 80.0, 130.0) == ""
    below = stretch_note(100.0, 110.0, 150.0)
    assert "lies below" in below and "110-150" in below and "stretched" in below
    assert "lies above" in stretch_note(100.0, 60.0, 90.0)


def _in_systems(parts: tuple[tuple[str, int, float], ...]) -> list[Observation]:
    """Each (part, nodes, factor on the law) in every round, its system's node count published."""
    rows, i = [], 0
    for name, nodes, factor in parts:
        for rnd, drift in ROUNDS:
            obs = _obs(name, "nvidia", rnd, _law(name) * drift * factor, i)
            details = {**obs.provenance.details, "nodes": str(nodes), "accelerators_per_node": "8"}
            rows.append(
                obs.model_copy(
                    update={"provenance": obs.provenance.model_copy(update={"details": details})}
                )
            )
            i += 1
    return rows


def test_a_transfer_reads_references_of_the_querys_system_class(embedded_store) -> None:  # type: ignore[no-untyped-def]
    # H200 ran only in one server (8 per node); H100 only in 9-node racks, at twice the per-GPU
    # figure the law gives: 8 x H100 NVL scale from the H200 alone, 72 from the racks alone
    rows = _in_systems((("NVIDIA H200-SXM-141GB", 1, 1.0), ("NVIDIA H100-SXM5-80GB", 9, 2.0)))
    embedded_store.ingest(IngestBatch(observations=rows))
    index = EvidenceIndex(Advisor(embedded_store).table())
    one_node = index.estimate(_query("NVIDIA H100-NVL-94GB"))
    racks = index.estimate(replace(_query("NVIDIA H100-NVL-94GB"), count=72))
    assert one_node.basis is Basis.TRANSFERRED, one_node.reason
    assert racks.basis is Basis.TRANSFERRED, racks.reason
    assert one_node.references == ["H200-SXM-141GB"] and racks.references == ["H100-SXM5-80GB"]
    assert not any("other system sizes" in n for n in one_node.notes + racks.notes)
    # per accelerator, the racks' doubled figure carries into the 72-GPU answer only
    assert racks.value is not None and one_node.value is not None
    assert racks.value > 1.5 * one_node.value


def test_a_transfer_from_other_system_sizes_says_so(embedded_store) -> None:  # type: ignore[no-untyped-def]
    # every result came from racks: one server's answer scales them, and says it did
    rows = _in_systems((("NVIDIA H200-SXM-141GB", 9, 1.0), ("NVIDIA H100-SXM5-80GB", 9, 1.0)))
    embedded_store.ingest(IngestBatch(observations=rows))
    est = EvidenceIndex(Advisor(embedded_store).table()).estimate(_query("NVIDIA H100-NVL-94GB"))
    assert est.basis is Basis.TRANSFERRED, est.reason
    assert any("no reference part has a single-node result" in n for n in est.notes)


def test_first_results_fall_back_to_every_metric_that_runs_the_same_way() -> None:
    rng = np.random.default_rng(2)
    cell, family = ("closed", "samples_per_second"), (None, "higher")
    narrow, wide = rng.normal(0, 0.05, 10), rng.normal(0, 0.4, 60)
    pools = {
        (Basis.TRANSFERRED, *cell, FIRST_RESULTS): narrow,
        (Basis.TRANSFERRED, *family, FIRST_RESULTS): wide,
    }
    # the cell holds 10, fewer than asked: the family's way of the metric answers
    below, above = first_results(pools, SLICE, True, 40) or (0.0, 0.0)
    assert below < -0.3 and above > 0.3
    below, above = first_results(pools, SLICE, True, 10) or (0.0, 0.0)
    assert -0.2 < below < 0 < above < 0.2
    assert first_results(pools, SLICE, True, 100) is None


def test_first_results_are_read_apart_by_what_their_transfers_drew_on() -> None:
    """A transfer drawn on the part's own siblings reads the spread of first results whose
    transfers did too, one drawn on other parts theirs; either falls back to every first result
    where its own are too few."""
    rng = np.random.default_rng(3)
    cell = ("closed", "samples_per_second")
    close, far = rng.normal(0, 0.05, 30), rng.normal(0, 0.4, 30)
    pools = {
        (Basis.TRANSFERRED, *cell, f"{FIRST_RESULTS} {FROM_SIBLINGS}"): close,
        (Basis.TRANSFERRED, *cell, f"{FIRST_RESULTS} {FROM_OTHERS}"): far,
        (Basis.TRANSFERRED, *cell, FIRST_RESULTS): np.concatenate([close, far]),
    }
    sib = first_results(pools, SLICE, True, 20, FROM_SIBLINGS) or (0.0, 0.0)
    other = first_results(pools, SLICE, True, 20, FROM_OTHERS) or (0.0, 0.0)
    every = first_results(pools, SLICE, True, 20) or (0.0, 0.0)
    assert sib[1] - sib[0] < every[1] - every[0] < other[1] - other[0]
    assert first_results(pools, SLICE, True, 40, FROM_SIBLINGS) == every  # too few: every one
    assert drawn_on("H200-SXM-141GB", ["H100-SXM5-80GB"]) == FROM_SIBLINGS
    assert drawn_on("H200-SXM-141GB", ["B200-SXM-180GB", "L40S"]) == FROM_OTHERS


def test_the_parts_of_one_die_name_each_other() -> None:
    """Hopper, Ampere and Ada parts of one die are each other's siblings (as Blackwell's and
    AMD's already were): a transfer to an H200 draws on the H100 and GH200 that ran the slice,
    not on whichever parts sit nearest by peak figures."""
    assert "H100-SXM5-80GB" in hardware.siblings("NVIDIA H200-SXM-141GB")
    assert "H100-PCIE-80GB" in hardware.siblings("H100 NVL")
    assert "A100-SXM4-40GB" in hardware.siblings("A100-SXM4-80GB")
    assert "L40" in hardware.siblings("L40S")
    parts = load_catalog().accelerators
    for name in ("H100-SXM5-80GB", "A100-PCIE-40GB", "RTX-6000-Ada", "GH200-144GB"):
        siblings = hardware.siblings(name)
        assert siblings and {parts[s].generation for s in siblings} == {parts[name].generation}


def test_a_published_mixed_system_is_answered_from_its_own_results(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A heterogeneous system the knowledge base holds as published (MangoBoost's 16 MI325X + 8
    MI300X) is answered from its own result, in any spelling, at the count its name gives; not
    as the sum of its parts (review finding: 93,061 'observed' beside its published 92,158)."""
    index = kb_advisor.evidence()
    key = ("mlperf-inference", "llama2-70b-99", "Offline", "tokens_per_second", "closed")
    systems = [a for a in index.slices.get(key, {}) if a.startswith("mixed:")]
    if not systems:
        pytest.skip("the starter knowledge base holds no heterogeneous system")
    name = systems[0]
    rows = index.slices[key][name]
    published = float(
        np.median(index.unit[rows[index.round_no[rows] == index.round_no[rows].max()]])
    )
    base = {"benchmark": key[1], "scenario": key[2], "metric": key[3], "as_of": "now"}
    [answer] = kb_advisor.predict([{**base, "accelerator": name}])
    assert answer.basis is Basis.OBSERVED and answer.observed is True
    count = int(index.table.count[rows[0]])
    assert answer.value == pytest.approx(published * count, rel=1e-6)
    assert answer.query.accelerator_count == count


def test_a_device_class_refusal_shows_the_figures_it_compared(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """The refusal names the figures the span was judged on (16-bit where both parts publish
    them), not the transfer's own (review finding: "1,670 vs 1,676 ... more than 8x apart")."""
    from stack_advisor.advisor.estimate.hardware import figures

    base = {"benchmark": "llama2-70b-99", "scenario": "Offline", "metric": "tokens_per_second"}
    [answer] = kb_advisor.predict([{**base, "accelerator": "NVIDIA GB10", "accelerator_count": 8}])
    if answer.basis is not Basis.UNSUPPORTED or "device class" not in (answer.reason or ""):
        pytest.skip("GB10 is not refused for its device class on this knowledge base")
    reason = answer.reason or ""
    nearest = reason.split(" Offline, ")[1].split(",")[0]
    own, ref = figures("GB10", "16-bit"), figures(nearest, "16-bit")
    assert f"({ref.compute:,.4g} vs {own.compute:,.4g} T" in reason
    assert f"({ref.bandwidth_gbs:,.4g} vs {own.bandwidth_gbs:,.4g} GB/s)" in reason


def _on(bench: str, name: str, vendor: str, value: float, i: int) -> Observation:
    obs = _obs(name, vendor, "v4.1", value, i)
    return obs.model_copy(
        update={
            "benchmark": obs.benchmark.model_copy(update={"name": bench}),
            "source_key": f"synthetic-{bench}-{i}",
        }
    )


# each benchmark's synthetic scale, and a deterministic +-5% wobble per result: the level's
# replays then have a spread to calibrate on
BENCHES = {"resnet50": 1.0, "retinanet": 0.02, "3d-unet-99": 0.003}  # all of one kind: vision
RTX_SERVER = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def _wobble(i: int) -> float:
    return 1.0 + 0.05 * ((i * 7) % 5 - 2) / 2


def test_a_part_without_a_compute_figure_is_transferred_by_its_measured_level(
    embedded_store,
) -> None:  # type: ignore[no-untyped-def]
    # the RTX PRO 6000 Server Edition (no compute figure in the catalogue) ran two other
    # benchmarks of the round at 0.4x the H100's figure; asked on resnet50, which it never ran,
    # it is answered from the parts that did, scaled by that measured level
    rows, i = [], 0
    for bench, scale in BENCHES.items():
        for name in NVIDIA:
            rows.append(_on(bench, name, "nvidia", scale * _law(name) * _wobble(i), i))
            i += 1
        if bench != "resnet50":
            level = 0.4 * scale * _law("NVIDIA H100-SXM5-80GB")
            rows.append(_on(bench, RTX_SERVER, "nvidia", level, i))
            i += 1
    # a part with one other benchmark of the kind only: no level to tell, the refusal stands
    rows.append(_on("retinanet", "NVIDIA RTX PRO 4500 Blackwell Server Edition", "nvidia", 9.0, i))
    # nor is one told by benchmarks of another kind (an LLM's): it may not run this kind at all
    for n, bench in enumerate(("llama2-70b-99", "gptj-99")):
        rows.append(
            _on(bench, "NVIDIA RTX PRO 4500 Blackwell Server Edition", "nvidia", 5.0, i + n + 1)
        )
        for m, name in enumerate(NVIDIA[:4]):
            rows.append(_on(bench, name, "nvidia", 0.01 * _law(name), i + 10 * (n + 1) + m))
    embedded_store.ingest(IngestBatch(observations=rows))
    index = EvidenceIndex(Advisor(embedded_store).table())

    est = index.estimate(_query(RTX_SERVER))
    truth = 0.4 * _law("NVIDIA H100-SXM5-80GB")
    assert est.basis is Basis.TRANSFERRED
    assert est.value == pytest.approx(truth, rel=0.1)
    assert est.low is not None and est.high is not None
    assert est.low <= truth <= est.high and est.low < est.high
    reference = next(text for name, text, _ in est.factors if name == "reference")
    assert "measured level" in reference and "on 2 shared slices" in reference
    assert len(est.references) == 3
    assert any("no peak compute figure" in note for note in est.notes)
    # its calibration: every part's figure on every slice replayed from its other slices, closer
    # than the median of the round's other parts on the same rows
    got = replay_summary(index, SLICE[0], SLICE[4])
    assert got["replays"] >= index.min_residuals
    assert got["median_ape"] < 10 < got["baseline_median_ape"]

    est = index.estimate(_query("NVIDIA RTX PRO 4500 Blackwell Server Edition"))
    assert est.basis is Basis.UNSUPPORTED
    assert (est.reason or "").startswith("compute unpublished")


def _bandwidth(name: str) -> float:
    found = hardware.figures(name).bandwidth_gbs
    assert found, name
    return 5.0 * found


def test_a_part_without_compute_figure_or_results_of_its_kind_is_transferred_within_generation(
    embedded_store,
) -> None:  # type: ignore[no-untyped-def]
    # every part runs at a rate proportional to its memory bandwidth (+-5%); the RTX PRO 6000
    # Server Edition ran resnet50 and retinanet, its sibling the RTX PRO 4500 Server Edition
    # (no compute figure, no vision results) ran nothing: asked on resnet50 it is answered from
    # the parts of its generation that did, scaled by bandwidth
    rows, i = [], 0
    for bench, scale in BENCHES.items():
        for name in [*NVIDIA, RTX_SERVER] if bench != "3d-unet-99" else NVIDIA:
            wobble = 1.0 if name == RTX_SERVER else _wobble(i)  # the reference: on the law
            rows.append(_on(bench, name, "nvidia", scale * _bandwidth(name) * wobble, i))
            i += 1
    embedded_store.ingest(IngestBatch(observations=rows))
    index = EvidenceIndex(Advisor(embedded_store).table())
    target = "NVIDIA RTX PRO 4500 Blackwell Server Edition"

    est = index.estimate(_query(target))
    truth = _bandwidth(target)
    assert est.basis is Basis.TRANSFERRED
    assert est.value == pytest.approx(truth, rel=0.1)
    assert est.low is not None and est.high is not None
    assert est.low <= truth <= est.high and est.low < est.high
    assert est.references == ["RTX-PRO-6000-Blackwell-Server"]
    reference = next(text for name, text, _ in est.factors if name == "reference")
    assert "memory bandwidth (800 GB/s over theirs)^1" in reference
    assert any("parts of its generation (blackwell-rtx)" in note for note in est.notes)
    # its calibration: the same transfer replayed within the round, closer than the median of
    # the round's other parts on the same rows
    got = generation_replay_summary(index, SLICE[0], SLICE[4])
    assert got["replays"] >= index.min_residuals and got["exponent"] == 1.0
    assert got["median_ape"] < 10 < got["baseline_median_ape"]
    # where no part of its generation ran the benchmark, the refusal stands
    est = index.estimate(replace(_query(target), benchmark="3d-unet-99"))
    assert est.basis is Basis.UNSUPPORTED
    assert (est.reason or "").startswith("compute unpublished")


def test_a_published_mixed_system_is_ranked_at_its_own_size_only(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A probe's ``recommend --count 8`` listed "mixed: 32x MI300X + 16x MI325X x8": a published
    48-accelerator system of two models scaled to a machine nobody can build. Asked at another
    count it is excluded, saying why; at its own count it is ranked."""
    from stack_advisor.advisor.workload import Workload

    index = kb_advisor.evidence()
    key = ("mlperf-inference", "llama2-70b-99", "Offline", "tokens_per_second", "closed")
    systems = [a for a in index.slices.get(key, {}) if a.startswith("mixed:")]
    if not systems:
        pytest.skip("the starter knowledge base holds no heterogeneous system")
    own = int(index.table.count[index.slices[key][systems[0]][0]])
    asked = {"benchmark": key[1], "scenario": key[2], "all_rows": True}
    at_eight = kb_advisor.recommend(
        Workload.from_dict({**asked, "hardware": {"count": 8}}, where=""), top=200
    )
    ranked = [r.candidate.accelerator for r in at_eight.recommendations]
    assert not any(a.startswith("mixed:") for a in ranked), ranked
    assert any(
        reason.startswith("a system of several accelerator models is ranked at its own size only")
        for reason in at_eight.excluded
    ), at_eight.excluded
    at_own = kb_advisor.recommend(
        Workload.from_dict({**asked, "hardware": {"count": own}}, where=""), top=200
    )
    assert any(r.candidate.accelerator.startswith("mixed:") for r in at_own.recommendations)
