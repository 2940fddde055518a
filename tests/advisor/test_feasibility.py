"""Feasibility before ranking (issue 31): every row ``recommend --top 50`` gives for the LLM
benchmarks on the starter knowledge base can run the workload — its model fits the memory one copy
can use, its stack's runtime runs the model family, its CUDA is a released toolkit that compiles
for the accelerator, and its driver is not below the generation's first (or the row says so).
Each check reads the catalogue independently of ``stack_advisor.advisor.verbs.feasibility``."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from stack_advisor.advisor.estimate.facts import accelerator_spec
from stack_advisor.advisor.knowledge.rules import parse_version
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.stack_facts import (
    cuda_toolkit,
    first_cuda,
    mig_profile_memory,
    ngc_image,
    ngc_release_of,
    runtime_too_old,
)
from stack_advisor.schema.models import SoftwareStack

LLM_BENCHMARKS = ("llama2-70b-99", "llama2-70b-99.9", "mixtral-8x7b", "llama3.1-405b")
_MIG = re.compile(r"\((\d+)x(\d+g\.\d+gb) MIG\)")


def row_problems(benchmark: str, rec: Any) -> list[str]:
    """What the catalogue says this answer row cannot do (empty: feasible)."""
    c = rec.candidate
    stack = SoftwareStack.model_validate(c.stack)
    spec = accelerator_spec(c.accelerator).spec
    problems = []
    match = resolve_benchmark(benchmark)
    entry = load_catalog().benchmark(match.family or "mlperf-inference", match.id)
    if entry is not None and entry.params_b and spec is not None:
        bits = 4 if spec.peak_tflops.fp4 else 8
        need = entry.params_b * bits / 8
        mig = _MIG.search(c.accelerator)
        found = mig_profile_memory(spec.id, mig.group(2)) if mig else None
        have = found[0] if found else (spec.memory_gb or 0) * c.accelerator_count
        if spec.memory_gb and have < need:
            problems.append(f"memory {have:g} GB < {need:g} GB")
    comps = {k.lower(): str(v) for k, v in stack.components().items()}
    if runtime_too_old(entry.model if entry else None, comps):
        problems.append("runtime too old for the model")
    toolkit = cuda_toolkit(stack.cuda)
    if isinstance(toolkit, str):
        problems.append(f"CUDA {stack.cuda} never released")
    arch = first_cuda(getattr(spec, "generation", None))
    if (
        toolkit is not None
        and not isinstance(toolkit, str)
        and arch is not None
        and parse_version(toolkit.id) < parse_version(arch.first_cuda)
    ):  # type: ignore[operator]
        problems.append(f"CUDA {stack.cuda} predates {arch.id}")
    floor = load_catalog().min_driver(spec.id) if spec is not None else None
    below = (
        floor and stack.driver and (parse_version(stack.driver) or 0) < (parse_version(floor) or 0)
    )  # type: ignore[operator]
    if below and not any(w.startswith(f"recorded driver {stack.driver}") for w in rec.warnings):
        problems.append(f"driver {stack.driver} below {floor} without a warning")
    return problems


def walk(advisor: Any) -> tuple[int, list[str]]:
    """(rows checked, problems) over every scenario of the LLM benchmarks the KB records."""
    checked, problems = 0, []
    for benchmark in LLM_BENCHMARKS:
        scenarios = advisor.knowledge().index.scenarios("mlperf-inference", benchmark)
        for scenario in scenarios:
            answer = advisor.recommend({"benchmark": benchmark, "scenario": scenario}, top=50)
            for rec in answer.recommendations:
                checked += 1
                problems.extend(
                    f"{benchmark} {scenario} #{rec.rank} {rec.candidate.accelerator} "
                    f"[{rec.candidate.stack_label}]: {p}"
                    for p in row_problems(benchmark, rec)
                )
    return checked, problems


def test_no_infeasible_row_for_the_llm_benchmarks(kb_advisor: Any) -> None:
    checked, problems = walk(kb_advisor)
    assert checked >= 200, checked  # the starter KB answers every one of them
    assert problems == []


def recommend(advisor: Any, **workload: Any) -> Any:
    return advisor.recommend(
        {"benchmark": "llama2-70b-99", "scenario": "Server", **workload}, top=50
    )


def test_a_mig_slice_has_its_profile_memory_not_a_share_of_the_board(kb_advisor: Any) -> None:
    out = recommend(kb_advisor)
    assert not any("MIG" in r.candidate.accelerator for r in out.recommendations)
    mig = [e for e in out.excluded_candidates if "1g.10gb MIG" in e.accelerator]
    assert mig and all("one 1g.10gb instance (10 GB" in e.reason for e in mig), [
        e.reason for e in mig
    ]


def test_stacks_that_cannot_run_the_model_are_excluded_with_the_reason(kb_advisor: Any) -> None:
    out = recommend(kb_advisor)
    labels = [r.candidate.stack_label for r in out.recommendations]
    assert not any(re.search(r"tensorrt [78]\.", label) for label in labels)
    assert not any("cuda 12.7" in label for label in labels)
    reasons = [e.reason for e in out.excluded_candidates]
    assert any(
        r.startswith("stack cannot run the model: tensorrt 8.") and "needs tensorrt >=9.1" in r
        for r in reasons
    ), reasons
    assert any("CUDA 12.7 was never released as a toolkit" in r for r in reasons), reasons


def test_the_accelerator_asked_about_comes_first_in_excluded(kb_advisor: Any) -> None:
    out = recommend(kb_advisor, hardware={"accelerators": ["T4"]})
    assert out.recommendations == []
    first = out.excluded_candidates[0]
    assert first.accelerator == "T4" and first.reason.startswith("model does not fit in memory")
    assert any(n.startswith("no candidate passed: T4: model does not fit") for n in out.notes), (
        out.notes
    )


def test_an_nvidia_driver_does_not_rank_other_vendors_parts(kb_advisor: Any) -> None:
    out = kb_advisor.recommend(
        {"benchmark": "resnet50", "scenario": "Offline", "hardware": {"driver": "400"}}, top=20
    )
    for rec in out.recommendations:  # only CPU-only systems need no GPU driver
        assert rec.candidate.accelerator.startswith("CPU "), rec.candidate.accelerator
    assert out.excluded.get("driver does not apply", 0) > 0


def test_observed_figures_lie_inside_their_own_range_and_interval(kb_advisor: Any) -> None:
    out = recommend(kb_advisor)
    for rec in out.recommendations:
        if rec.basis.value == "observed":
            assert rec.interval.low <= rec.value <= rec.interval.high, rec.rank
            # the range is what was measured; a value of an older round is carried to the
            # benchmark's newest by the round drift it names, and on to today's round by the
            # forecast it names (issue 41)
            carried = math.prod(
                f.effect for f in rec.factors if f.name in ("round drift", "forecast")
            )
            measured = rec.value / carried
            low, high = rec.observed_range.low, rec.observed_range.high
            assert low * (1 - 1e-4) <= measured <= high * (1 + 1e-4), rec.rank  # effect: 4 places


def test_rows_that_differ_only_by_triton_say_so(kb_advisor: Any) -> None:
    out = recommend(kb_advisor, all=True)  # every row: the default view folds twins into one
    twins = [
        w
        for r in out.recommendations
        for w in r.warnings
        if w.startswith("same accelerator, count")
    ]
    assert any("triton" in w for w in twins), twins


def test_a_user_image_of_another_release_is_a_warning(kb_advisor: Any) -> None:
    out = recommend(kb_advisor, image="nvcr.io/nvidia/tensorrt:23.04-py3")
    top = out.recommendations[0]
    assert (
        top.snippet["metadata"]["annotations"]["stack-advisor/image-stack"]
        == "cuda 12.1, tensorrt 8.6"
    )
    assert any("ships cuda 12.1" in w and "tensorrt 8.6" in w for w in top.warnings), top.warnings


def test_counts_beyond_any_published_system_are_refused(kb_advisor: Any) -> None:
    from stack_advisor.schema.errors import InvalidInput

    with pytest.raises(InvalidInput, match="beyond any published system"):
        kb_advisor.recommend({"benchmark": "resnet50", "hardware": {"count": 100000}})
    [p] = kb_advisor.predict(
        [
            {
                "benchmark": "resnet50",
                "scenario": "Offline",
                "metric": "samples_per_second",
                "accelerator": "A100-SXM4-80GB",
                "accelerator_count": 1_000_000,
            }
        ]
    )
    assert p.value is None and "beyond any published system" in (p.reason or "")


@pytest.mark.parametrize(
    ("image", "release", "cuda"),
    [
        ("nvcr.io/nvidia/tensorrt:23.04-py3", "23.04", "12.1"),
        ("nvcr.io/nvidia/pytorch:23.09-py3", "23.09", "12.2"),
        ("nvidia/tritonserver:24.07-trtllm-python-py3", "24.07", "12.5"),
    ],
)
def test_ngc_images_are_read_as_their_release(image: str, release: str, cuda: str) -> None:
    parsed = ngc_image(image)
    assert (
        parsed is not None
        and parsed[1] == release
        and parsed[2] is not None
        and parsed[2].cuda == cuda
    )


def test_ngc_tags_are_tags_not_framework_versions() -> None:
    assert ngc_release_of("23.09") == "23.09" and ngc_release_of("2.1.0") is None
    assert (
        SoftwareStack(framework="pytorch", framework_version="23.09").label()
        == "pytorch 2.1 (NGC 23.09)"
    )
    assert SoftwareStack(framework="pytorch", framework_version="2.1.0").label() == "pytorch 2.1.0"


def test_cuda_versions_that_never_shipped_are_named() -> None:
    assert isinstance(cuda_toolkit("12.7"), str) and "12.6, then 12.8" in str(cuda_toolkit("12.7"))
    assert not isinstance(cuda_toolkit("12.8.1"), str) and cuda_toolkit("99.1") is None


def test_rule_messages_keep_the_published_driver() -> None:
    from stack_advisor.advisor.knowledge.rules import load_rules

    messages = [
        v.message for v in load_rules().check_components({"cuda": "12.0", "driver": "515.65.01"})
    ]
    assert messages and all("driver 515.65.01 " in m for m in messages), messages


def test_a_driver_that_is_not_an_nvidia_version_is_flagged() -> None:
    from stack_advisor.advisor.verbs.explain import plausible_driver

    assert plausible_driver("550.90.07") and plausible_driver("570.26") and plausible_driver("565")
    assert not plausible_driver("5252.85.12")


def test_a_framework_constraint_reads_an_ngc_tag_as_its_release() -> None:
    from stack_advisor.advisor.verbs.candidates import shipped_version

    assert (
        shipped_version("pytorch", "23.09") == "2.1"
    )  # not version 23.9, which ">=2.0" would pass
    assert shipped_version("pytorch", "22.04") is None  # a release the catalogue does not list
    assert shipped_version("pytorch", "2.1.0") == "2.1.0"


def test_an_image_of_another_serving_engine_is_a_warning(kb_advisor: Any) -> None:
    """A vLLM image on another engine's row would run another engine than the one ranked: a
    probe's cluster rows checked only CUDA and TensorRT versions."""
    from stack_advisor.advisor.manifests.image_check import image_engines

    image = "vllm/vllm-openai:v0.9.1"
    out = recommend(kb_advisor, image=image)
    by_framework = {r.candidate.stack["framework"]: r for r in reversed(out.recommendations)}
    assert {"vllm", "llmboost", "tensorrt"} <= set(by_framework), set(by_framework)
    warned = [w for w in by_framework["llmboost"].warnings if "serving engine" in w]
    assert warned == [
        f"image {image} is named after vllm; the row's stack runs llmboost: the snippet would "
        "run another serving engine than the one ranked; pick an image of llmboost"
    ]
    assert not [w for w in by_framework["vllm"].warnings if "serving engine" in w]
    # a TensorRT row whose published text names no engine is judged by its release alone
    assert not [w for w in by_framework["tensorrt"].warnings if "serving engine" in w]
    # one whose text names TensorRT-LLM runs it
    from stack_advisor.advisor.manifests.image_check import engine_mismatch, stack_engines
    from stack_advisor.schema.models import SoftwareStack

    trtllm = SoftwareStack(
        framework="tensorrt",
        framework_version="10.2",
        raw="framework: TensorRT-LLM 0.12, CUDA 12.4",
    )
    assert stack_engines(trtllm) == {"tensorrt-llm"}
    assert "runs tensorrt-llm" in (engine_mismatch(image, trtllm) or "")
    # the engines are read from the catalogue's spellings; a serving layer named alone may run
    # any engine it serves through, and an image naming none is not judged
    assert image_engines("nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3") == {"tensorrt-llm"}
    assert image_engines("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0") == {"dynamo", "vllm"}
    assert {"vllm", "tensorrt-llm", "sglang"} <= image_engines("nvcr.io/nvidia/dynamo:1.0")
    assert image_engines("nvcr.io/nvidia/pytorch:25.01-py3") == frozenset()


def test_a_runtime_of_another_vendors_gpus_is_refused_on_a_part(kb_advisor: Any) -> None:
    """TensorRT and CUDA run on NVIDIA GPUs only, ROCm on AMD ones: asked on the other vendor's
    part, refused saying so (a probe got 34,320 tokens/s for "TensorRT 10.2, CUDA 12.4" on an
    MI325X); the vendor's own runtime on its part is still answered."""
    asked = {"benchmark": "llama2-70b-99", "scenario": "Offline", "accelerator_count": 8}
    nvidia_on_amd, rocm_on_nvidia, rocm_on_amd = kb_advisor.predict(
        [
            {
                **asked,
                "accelerator": "AMD Instinct MI300X",
                "framework": "TensorRT 10.2, CUDA 12.4",
            },
            {**asked, "accelerator": "NVIDIA H100-SXM5-80GB", "framework": "vLLM 0.9, ROCm 6.4.1"},
            {**asked, "accelerator": "AMD Instinct MI300X", "framework": "vLLM 0.9, ROCm 6.4.1"},
        ]
    )
    assert nvidia_on_amd.basis.value == "unsupported"
    assert "CUDA runs on NVIDIA GPUs only and MI300X is AMD's" in (nvidia_on_amd.reason or "")
    assert rocm_on_nvidia.basis.value == "unsupported"
    assert "ROCm runs on AMD GPUs only" in (rocm_on_nvidia.reason or "")
    assert rocm_on_amd.basis.value != "unsupported" and rocm_on_amd.value


def test_a_catalogue_part_is_not_refused_for_the_stack_it_borrowed(kb_advisor: Any) -> None:
    """A part no result of its vendor ran the benchmark with is ranked on a stack borrowed from
    the parts that did (NVIDIA's): a placeholder for the transfer, not a stack to refuse the
    part for (a review found MI250X on bert-99 excluded as "CUDA runs on NVIDIA GPUs only")."""
    out = kb_advisor.recommend(
        {"benchmark": "bert-99", "scenario": "Offline", "hardware": {"accelerators": ["MI250X"]}},
        top=3,
    )
    assert [r.candidate.accelerator for r in out.recommendations] == ["MI250X"]
    assert not any("runs on NVIDIA GPUs only" in k for k in out.excluded)


def test_training_a_model_needs_its_weights_gradients_and_optimizer_states(
    kb_advisor: Any,
) -> None:
    """Pre-training llama3.1-405b keeps 16 bytes per parameter (6,480 GB): 8 or 64 H100s cannot,
    though the inference rule (its weights at 8 bits) let a probe's 8 get 14,264 minutes; 128
    can. A LoRA fine-tune keeps its frozen weights only, so 4 H100s (320 GB) run llama2-70b's as
    published. No published Training system is refused: they hold 65+ bytes per parameter."""
    ask = {
        "family": "mlperf-training",
        "benchmark": "llama31_405b",
        "accelerator": "H100-SXM5-80GB",
    }
    eight, sixty_four, many = kb_advisor.predict(
        [{**ask, "accelerator_count": n} for n in (8, 64, 128)]
    )
    for refused in (eight, sixty_four):
        assert refused.basis.value == "unsupported", refused
        assert refused.reason.startswith(
            "model does not fit in memory to train: llama31_405b keeps >= 6,480 GB"
        )
    assert many.value is not None
    (lora,) = kb_advisor.predict(
        [
            {
                **ask,
                "benchmark": "llama2_70b_lora",
                "accelerator": "H100-SXM5-80GB",
                "accelerator_count": 4,
            }
        ]
    )
    assert lora.value is not None, lora.reason
    out = kb_advisor.recommend(
        {"family": "mlperf-training", "benchmark": "llama31_405b", "hardware": {"max_count": 8}}
    )
    assert not [r for r in out.recommendations if r.candidate.accelerator_count <= 8]
