"""The default view answers "which accelerator?" (issue 43): one row per (accelerator, count,
placement, stack family) with its best evidence and how many results it folds in; ``all``
lists every row. Over the starter knowledge base."""

from __future__ import annotations

from collections import Counter

from stack_advisor.advisor.results import Basis
from stack_advisor.advisor.verbs.default_view import stack_family
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import SoftwareStack

LLAMA_SERVER = {"benchmark": "llama2-70b-99", "scenario": "Server"}


def _choice(r) -> tuple[str, int, str, str]:  # type: ignore[no-untyped-def]
    stack = SoftwareStack.model_validate(r.candidate.stack)
    return (
        r.candidate.accelerator,
        r.candidate.accelerator_count,
        r.candidate.placement.value,
        stack_family(stack),
    )


def test_stack_family_is_the_runtime_whatever_its_version() -> None:
    assert stack_family(SoftwareStack(framework="vLLM", framework_version="0.6.3")) == "vllm"
    assert stack_family(SoftwareStack(tensorrt="10.2.0", cuda="12.4")) == "tensorrt"
    assert stack_family(SoftwareStack(cuda="12.4")) == "unspecified"


def test_a_library_counts_as_the_framework_it_runs_on() -> None:
    # NVIDIA's training submissions name one NeMo container "NVIDIA NeMo Framework Release" or
    # "PyTorch NVIDIA Release": both are PyTorch stacks, one choice for a platform team
    nemo = SoftwareStack(framework="nemo", framework_version="25.09")
    assert stack_family(nemo) == stack_family(SoftwareStack(framework="pytorch")) == "pytorch"
    assert stack_family(SoftwareStack(framework="maxtext")) == "jax"
    assert stack_family(SoftwareStack(framework="tensorrt-llm")) == "tensorrt-llm"
    assert stack_family(SoftwareStack(framework="Some Vendor SDK")) == "some vendor sdk"
    # whatever version the name carries
    assert stack_family(SoftwareStack(framework="NeMo 24.05")) == "pytorch"
    assert stack_family(SoftwareStack(framework="vLLM 0.6.3")) == "vllm"
    assert stack_family(SoftwareStack(framework="Some Vendor SDK 1.2")) == "some vendor sdk"


def test_one_row_per_choice_with_the_rest_folded_in(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    folded = kb_advisor.recommend(Workload(**LLAMA_SERVER), top=200)
    every = kb_advisor.recommend(Workload(**LLAMA_SERVER, all=True), top=200)
    shown = [_choice(r) for r in folded.recommendations]
    assert len(shown) == len(set(shown))  # no choice twice
    assert sum(1 + r.more_results for r in folded.recommendations) == len(every.recommendations)
    assert all(r.more_results == 0 for r in every.recommendations)
    assert any(r.more_results > 0 for r in folded.recommendations)
    assert any("more results folded in" in n for n in folded.notes)
    # each shown row is the best evidence of its choice: no better basis left folded behind it
    order = {Basis.OBSERVED: 0, Basis.INTERPOLATED: 1, Basis.TRANSFERRED: 2}
    best: dict[tuple[str, int, str], int] = {}
    for r in every.recommendations:
        acc, count, _, family = _choice(r)
        key = (acc, count, family)
        best[key] = min(best.get(key, 9), order[r.basis])
    for r in folded.recommendations:
        acc, count, _, family = _choice(r)
        assert order[r.basis] == best[(acc, count, family)]


def test_top_five_names_several_accelerators(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    for fields in (
        LLAMA_SERVER,
        {"benchmark": "stable-diffusion-xl", "scenario": "Offline"},
        {"benchmark": "whisper", "scenario": "Offline"},
        {"benchmark": "resnet50", "scenario": "Offline"},
        # training at every scale: NeMo- and PyTorch-named runs of one part and count are one row
        {"family": "mlperf-training", "benchmark": "llama2_70b_lora", "objective": "latency"},
    ):
        answer = kb_advisor.recommend(Workload(**fields), top=5)
        named = Counter(r.candidate.accelerator for r in answer.recommendations)
        assert len(named) >= 3, (fields, named)


def test_no_prediction_twice_under_a_named_and_an_unknown_placement(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    answer = kb_advisor.recommend(Workload(benchmark="resnet50", scenario="Offline"), top=50)
    predicted = Counter(
        (r.candidate.accelerator, r.candidate.accelerator_count, round(r.value, 6))
        for r in answer.recommendations
        if r.basis is not Basis.OBSERVED
    )
    assert predicted and max(predicted.values()) == 1
