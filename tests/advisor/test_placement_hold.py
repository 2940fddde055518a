"""No virtualised answer above bare metal without evidence (issue 43): a passthrough or vGPU
figure is held to the same configuration's bare-metal figure, moved by the placement effect
learned from pairs where there are any. Over the starter knowledge base."""

from __future__ import annotations

import itertools

from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.workload import Workload

SLICES = [
    ("llama2-70b-99", "Server", "tokens_per_second", 8),
    ("llama2-70b-99", "Offline", "tokens_per_second", 8),
    ("resnet50", "Offline", "samples_per_second", 1),
]


def test_the_issues_h100_vm_answers_are_not_above_bare_metal(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    for scenario in ("Server", "Offline"):
        base = {
            "accelerator": "H100-SXM5-80GB",
            "accelerator_count": 8,
            "benchmark": "llama2-70b-99",
            "scenario": scenario,
            "metric": "tokens_per_second",
        }
        vgpu, passthrough, bare = kb_advisor.predict(
            [{**base, "placement": p} for p in ("vgpu", "passthrough", "bare-metal")]
        )
        assert bare.value is not None
        for vm in (vgpu, passthrough):
            assert vm.value is not None and vm.value <= bare.value * (1 + 1e-9), (scenario, vm)


def test_no_vm_answer_above_bare_metal_without_paired_evidence(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    index = kb_advisor.knowledge().index
    queries = []
    for benchmark, scenario, metric, count in SLICES:
        key = next(k for k in index.slices if k[1:4] == (benchmark, scenario, metric))
        parts = [index.raw_names.get(a, a) for a in list(index.slices[key])[:8]]
        for part, placement in itertools.product(parts, ("bare-metal", "passthrough", "vgpu")):
            queries.append(
                {
                    "accelerator": part,
                    "accelerator_count": count,
                    "benchmark": benchmark,
                    "scenario": scenario,
                    "metric": metric,
                    "placement": placement,
                }
            )
    answers = kb_advisor.predict(queries)
    by_config: dict[tuple[str, ...], dict[str, float]] = {}
    gained = 0
    for q, a in zip(queries, answers):
        if a.value is None or (a.basis is Basis.OBSERVED and q["placement"] != "bare-metal"):
            continue  # a measured VM result is evidence in itself
        config = (str(q["accelerator"]), str(q["benchmark"]), str(q["scenario"]))
        by_config.setdefault(config, {})[str(q["placement"])] = a.value
    above = []
    for config, figures in by_config.items():
        bare = figures.get("bare-metal")
        for placement in ("passthrough", "vgpu"):
            vm = figures.get(placement)
            if bare is None or vm is None:
                continue
            overhead = index.overheads.get((config[0], placement))
            if overhead is not None and overhead.ratio > 1:
                gained += 1  # paired evidence of a gain: allowed
            elif vm > bare * (1 + 1e-9):
                above.append((config, placement, vm, bare))
    assert len(by_config) >= 10
    assert above == [], (above, gained)


def test_recommend_holds_vm_rows_too(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for benchmark in ("resnet50", "bert-99"):
        answer = kb_advisor.recommend(
            Workload(benchmark=benchmark, scenario="Offline", all=True), top=300
        )
        bare: dict[tuple[str, int], float] = {}  # the best bare-metal figure of a part and count
        for r in answer.recommendations:
            if r.candidate.placement.value == "bare-metal":
                key = (r.candidate.accelerator, r.candidate.accelerator_count)
                bare[key] = max(bare.get(key, 0.0), r.value)
        for r in answer.recommendations:
            c = r.candidate
            if c.placement.value in ("passthrough", "vgpu") and r.basis is not Basis.OBSERVED:
                twin = bare.get((c.accelerator, c.accelerator_count))
                if twin is not None:
                    checked += 1
                    assert r.value <= twin * (1 + 1e-9), r
    assert checked
