"""predict is as strict as recommend (issue 43): the same feasibility and compatibility verdict
for the same configuration (part, count, stack, the nodes' driver), names resolved the same way,
each query of a batch judged on its own. Over the starter knowledge base."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from stack_advisor.advisor.knowledge.rules import stack_components
from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import SoftwareStack

LLAMA = {"benchmark": "llama2-70b-99", "scenario": "Offline", "metric": "tokens_per_second"}
# what a configuration cannot do (``stack_advisor.advisor.verbs.feasibility.refusal``)
VERDICTS = (
    "driver too old",
    "breaks a compatibility rule",
    "driver does not apply",
    "model does not fit in memory",
    "stack cannot",
)


# the user's own filters, judged before feasibility: such a row has no feasibility verdict
FILTERS = (
    "accelerator not allowed",
    "placement not allowed",
    "CPU-only excluded",
    "not observed",
    "known failure",
    "framework constraint",
)


def _verdict(reason: str | None) -> str | None:
    return reason if reason and reason.startswith(VERDICTS) else None


def test_the_issues_configurations(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    b200, h100_old, bad, good = kb_advisor.predict(
        [
            {
                **LLAMA,
                "accelerator": "B200-SXM-180GB",
                "accelerator_count": 8,
                "components": {"driver": "550.54.15", "cuda": "12.4"},
            },
            {
                **LLAMA,
                "accelerator": "H100",
                "accelerator_count": 8,
                "components": {"driver": "470.82.01", "cuda": "12.8"},
            },
            {**LLAMA, "accelerator": "H100-SXM5-80GB", "accelerator_count": 8, "placement": "vgp"},
            {**LLAMA, "accelerator": "H100", "accelerator_count": 8},
        ]
    )
    assert b200.basis is Basis.UNSUPPORTED and "needs >= 570.26" in (b200.reason or "")
    assert h100_old.basis is Basis.UNSUPPORTED and "the nodes have 470.82.01" in (
        h100_old.reason or ""
    )
    assert bad.basis is Basis.UNSUPPORTED and "did you mean vgpu" in (bad.reason or "")
    assert "placement" in (bad.reason or "") and "'vgp'" in (bad.reason or "")
    assert good.value is not None and good.accelerator == "H100-SXM5-80GB"
    assert "names a family" in good.warnings[0]
    # recommend takes the same name and excludes the same B200 configuration, same reason
    ranked = kb_advisor.recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Offline",
            hardware={"accelerators": ["B200-SXM-180GB"], "count": 8, "driver": "550.54.15"},
        )
    )
    assert not ranked.recommendations
    assert any("needs >= 570.26" in e.reason for e in ranked.excluded_candidates)
    assert kb_advisor.recommend(
        Workload(benchmark="llama2-70b-99", scenario="Offline", hardware={"accelerators": ["H100"]})
    ).recommendations


def _configurations(kb_advisor, benchmark: str, acc: str, count: int, driver: str):  # type: ignore[no-untyped-def]
    """recommend's verdict on each (placement, stack) of ``acc``, and the predict query of it."""
    answer = kb_advisor.recommend(
        Workload(
            benchmark=benchmark,
            scenario="Offline",
            all=True,
            hardware={"accelerators": [acc], "count": count, "driver": driver},
        ),
        top=100,
    )
    stacks = {s.label(): s for s in kb_advisor.table().stacks.values()}
    rows: list[tuple[str, str, SoftwareStack, str | None]] = [
        (
            r.candidate.published_names[0],
            r.candidate.placement.value,
            SoftwareStack.model_validate(r.candidate.stack),
            None,
        )
        for r in answer.recommendations
    ]
    rows += [
        (e.accelerator, e.placement.value, stacks[e.stack_label], _verdict(e.reason))
        for e in answer.excluded_candidates
        if e.stack_label in stacks and not e.reason.startswith(FILTERS)
    ]
    out = []
    for name, placement, stack, verdict in rows:
        comps: dict[str, Any] = {
            k: v for k, v in stack_components(stack).items() if v and k != "driver"
        }
        comps["driver"] = driver
        query = {
            "accelerator": name,
            "accelerator_count": count,
            "placement": placement,
            "benchmark": benchmark,
            "scenario": "Offline",
            "metric": answer.metric,
            "components": comps,
            "framework": stack.framework,
        }
        out.append((verdict, query))
    return out


@pytest.mark.slow
def test_predict_and_recommend_agree_on_every_verdict(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    configs = []
    for benchmark, acc, count, driver in itertools.product(
        ("llama2-70b-99", "resnet50"),
        ("H100-SXM5-80GB", "A100-SXM4-80GB", "B200-SXM-180GB", "L4", "MI300X"),
        (1, 8),
        ("470.82.01", "535.104.05", "570.26"),
    ):
        configs += _configurations(kb_advisor, benchmark, acc, count, driver)
    answers = kb_advisor.predict([q for _, q in configs])
    disagree = [
        (q, want, a.reason)
        for (want, q), a in zip(configs, answers)
        if want != _verdict(a.reason if a.basis is Basis.UNSUPPORTED else None)
    ]
    refused = sum(1 for want, _ in configs if want)
    print(
        f"\npredict/recommend feasibility agreement: {len(configs) - len(disagree)}/"
        f"{len(configs)} configurations ({refused} refused by both)"
    )
    assert len(configs) >= 200 and refused > 0
    assert disagree == []


def test_a_family_none_of_whose_members_ran_is_answered_for_the_edition_submitters_run(
    kb_advisor,
) -> None:  # type: ignore[no-untyped-def]
    """The RTX PRO 4500 Blackwell's two editions were never measured: the published family name
    is answered for the Server Edition, the edition the knowledge base holds results of (the
    RTX PRO 6000's), from the parts of its generation, and says why that member."""
    [answer] = kb_advisor.predict(
        [
            {
                "benchmark": "llama3.1-8b",
                "scenario": "Offline",
                "accelerator": "NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB",
                "accelerator_count": 8,
            }
        ]
    )
    assert answer.basis is Basis.TRANSFERRED, answer.reason
    assert answer.accelerator == "RTX-PRO-4500-Blackwell-Server"
    assert (
        "no member measured: the edition other parts were measured in (Server)"
        in (answer.warnings[0])
    )
    assert "RTX-PRO-6000-Blackwell-Server" in answer.references


def test_a_framework_constraint_refusal_says_what_the_candidate_runs(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """``--framework "vllm>=0.11"`` had excluded every candidate with "framework constraint"
    alone, where the newest vLLM held is older: each exclusion now says what the candidate runs."""
    from stack_advisor.advisor.workload import Workload

    workload = Workload.from_dict(
        {
            "benchmark": "llama2-70b-99",
            "scenario": "Server",
            "frameworks": [{"name": "vllm", "version": ">=99"}],
        },
        where="",
    )
    answer = kb_advisor.recommend(workload, top=5)
    assert not answer.recommendations
    reasons = {e.reason for e in answer.excluded_candidates}
    assert any(
        r.startswith("framework constraint: vllm ") and r.endswith(" is not >=99") for r in reasons
    ), reasons


def test_a_family_is_answered_for_one_member_however_the_benchmark_is_spelt(
    kb_advisor: Any,
) -> None:
    """A probe asked "H100" on resnet50 Offline: ``resnet50`` was answered for the H100 PCIe, and
    ``ResNet50`` / ``ResNet-50 v1.5`` for the SXM (57% apart): the member with the most results on
    the benchmark was counted on the name as typed, which no result is stored under."""
    spellings = ("resnet50", "ResNet50", "ResNet-50 v1.5")
    answers = kb_advisor.predict(
        [
            {"benchmark": b, "scenario": "Offline", "accelerator": "H100", "accelerator_count": 8}
            for b in spellings
        ]
    )
    assert {a.accelerator for a in answers} == {answers[0].accelerator}
    assert {a.value for a in answers} == {answers[0].value}
    assert all("the member with the most results on resnet50" in a.warnings[0] for a in answers)


def test_two_results_of_one_configuration_both_lie_in_its_interval(kb_advisor: Any) -> None:
    """An observed answer over two results of the newest round (two submitters' systems) holds
    both: a probe's 95,000 and 120,000 had been answered 107,500 (104,372..114,244)."""
    index = kb_advisor.evidence()
    table = index.table
    found = 0
    for key, by_acc in index.slices.items():
        if key[0] != "mlperf-inference" or key[4] != "closed":
            continue
        for acc, rows in by_acc.items():
            newest = rows[index.round_no[rows] == index.round_no[rows].max()]
            counts = table.count[newest]
            for n in set(counts.tolist()):
                same = newest[counts == n]
                if len(same) != 2 or len(set(table.placement.codes[same].tolist())) != 1:
                    continue
                values = index.unit[same] * (n if index.higher_is_better(key) else 1)
                if max(values) < 1.1 * min(values):
                    continue  # two results close together: nothing to tell
                [answer] = kb_advisor.predict(
                    [
                        {
                            "family": key[0],
                            "benchmark": key[1],
                            "scenario": key[2],
                            "metric": key[3],
                            "accelerator": index.raw_names.get(acc, acc),
                            "accelerator_count": int(n),
                            "placement": table.placement.vocab[int(table.placement.codes[same[0]])],
                            "as_of": f"v{float(index.round_no[same[0]]):.1f}",  # theirs
                        }
                    ]
                )
                if answer.basis is not Basis.OBSERVED or answer.interval is None:
                    continue
                assert answer.interval.low <= min(values) * (1 + 1e-9)
                assert answer.interval.high >= max(values) * (1 - 1e-9)
                found += 1
                if found >= 5:
                    return
    assert found, "the knowledge base holds no configuration with two results apart"


def test_recommend_answers_a_ranked_stack_as_predict_answers_it(kb_advisor: Any) -> None:
    """A ranked row names a stack; ``predict`` asked for that stack on the row's part and count
    gives the same figure (a probe's GH200 llama2-70b Interactive row labelled TensorRT 10.10 had
    been its TensorRT 10.2 results moved by the round drift, 2,711, where predict carried them
    forward by the upgrade factor, 2,527: the ranking never read the stack's framework)."""
    ranked = kb_advisor.recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Interactive",
            hardware={"accelerators": ["GH200-144GB"], "count": 1},
        )
    )
    rows = [r for r in ranked.recommendations if r.candidate.stack.get("framework_version")]
    assert rows
    for row in rows[:3]:
        stack = row.candidate.stack
        text = f"{stack['framework']} {stack['framework_version']}"
        if stack.get("cuda"):
            text += f", CUDA {stack['cuda']}"
        [answer] = kb_advisor.predict(
            [
                {
                    "benchmark": "llama2-70b-99",
                    "scenario": "Interactive",
                    "accelerator": row.candidate.accelerator,
                    "accelerator_count": row.candidate.accelerator_count,
                    "framework": text,
                }
            ]
        )
        assert answer.value == pytest.approx(row.value, rel=1e-9), text


def test_a_release_named_shorter_matches_the_recorded_one() -> None:
    from stack_advisor.catalog.rounds import same_release

    assert same_release("10.2.0", "10.2") and same_release("10.2.0.19", "10.2")
    assert same_release("12.4", "12.4.1") and same_release("10.2.0.19", "10.2.0")
    assert same_release("vendor", "vendor") and not same_release("reference", "vendor")
    assert not same_release("10.2.0", "10.2.1") and not same_release("10.20", "10.2")
    assert not same_release("10.2.1", "10.2")  # another release of the series, not the named
    assert not same_release("12.4", "12") and same_release("12.0", "12")
    assert not same_release(None, "10.2")


def test_tensorrt_named_by_major_minor_is_its_recorded_result(kb_advisor: Any) -> None:
    """A probe's ``--stack "TensorRT 10.2"`` on 8 H100s matched no recorded stack (10.2.0): it was
    answered from every stack's results forecast a round ahead, 19% above that stack's own
    result; named in full it was that result, as measured."""
    query = {"benchmark": "llama2-70b-99", "scenario": "Offline"}
    query |= {"accelerator": "H100-SXM5-80GB", "accelerator_count": 8}
    short, full = kb_advisor.predict(
        [{**query, "framework": "TensorRT 10.2"}, {**query, "framework": "TensorRT 10.2.0"}]
    )
    assert full.basis is Basis.OBSERVED
    assert (short.basis, short.value, short.round) == (full.basis, full.value, full.round)


def test_accelerator_hours_say_their_unit(kb_advisor: Any) -> None:
    """A probe's predict of Training ``accelerator_hours`` answered with ``unit: null`` where
    recommend labels it accelerator-h."""
    [answer] = kb_advisor.predict(
        [
            {
                "family": "mlperf-training",
                "benchmark": "llama2_70b_lora",
                "accelerator": "H100-SXM5-80GB",
                "accelerator_count": 8,
                "metric": "accelerator_hours",
            }
        ]
    )
    assert answer.value is not None and answer.unit == "accelerator-h"


def test_a_stack_recorded_as_reference_code_ranks_on_its_own_results(kb_advisor: Any) -> None:
    """A probe's L40S llama2-70b Offline: NeuralMagic's vLLM 0.5.2 result, recorded as MLCommons'
    reference implementation, was excluded as "software class" (its own results "borrowed
    across classes") once the ranking read the candidate's framework without its implementation;
    its Server TTFT had doubled by a reference -> optimised factor."""
    ranked = kb_advisor.recommend(
        Workload(
            benchmark="llama2-70b-99",
            scenario="Offline",
            hardware={"accelerators": ["L40S"], "count": 8},
            all_rows=True,
        ),
        top=50,
    )
    vllm = [r for r in ranked.recommendations if r.candidate.stack.get("framework") == "vllm"]
    assert vllm and all(r.basis is Basis.OBSERVED for r in vllm)
    # predict names it as users write it (no implementation): its own result, not refused
    row = vllm[0]
    [answer] = kb_advisor.predict(
        [
            {
                "benchmark": "llama2-70b-99",
                "scenario": "Offline",
                "accelerator": "L40S",
                "accelerator_count": row.candidate.accelerator_count,
                "placement": row.candidate.placement.value,
                "framework": f"vLLM {row.candidate.stack['framework_version']}",
            }
        ]
    )
    assert answer.basis is Basis.OBSERVED
    per_part = row.candidate.accelerator_count if row.per_accelerator else 1
    assert answer.value == pytest.approx(row.value * per_part)
    assert not [
        e for e in ranked.excluded_candidates if "vllm" in e.stack_label and e.accelerator == "L40S"
    ]


def test_an_unknown_placement_reads_its_stacks_own_results_wherever_they_ran(
    kb_advisor: Any,
) -> None:
    """A cluster pool whose nodes say nothing of a hypervisor asks at placement ``unknown``: a
    probe's 8-H100 pool answered a recorded stack (TensorRT 9.3.0, CUDA 12.2) from every stack's
    results forecast a round ahead (3,618/GPU) where the stack's own bare-metal result at 4 GPUs
    answers it as measured (2,533/GPU)."""
    index = kb_advisor.evidence()
    stacks = index.table.stacks
    chosen = next(
        (sid, s)
        for sid, s in sorted(stacks.items())
        if s.framework == "tensorrt" and s.tensorrt == "9.3.0" and s.cuda == "12.2"
    )
    components = {k: v for k, v in chosen[1].components().items() if v}
    query = {"benchmark": "llama2-70b-99", "scenario": "Offline"}
    query |= {"accelerator": "H100-SXM5-80GB", "accelerator_count": 8, "framework": "tensorrt"}
    bare, unknown = kb_advisor.predict(
        [
            {**query, "components": components, "placement": "bare-metal"},
            {**query, "components": components, "placement": "unknown"},
        ]
    )
    assert bare.value is not None and unknown.value == pytest.approx(bare.value)
    assert unknown.round == bare.round == "v4.1"
