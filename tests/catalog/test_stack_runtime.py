"""Stack text per benchmark and software class from evidence (issue 41 items 5 and 6): the runtime
that ran a benchmark out of a multi-runtime framework field, versions never read from branch
tags or round names, and "reference implementation" decided by the result's division and
submitter, not by the word "pytorch"."""

from __future__ import annotations

import csv
import gzip
import json
import re

import pytest

from stack_advisor.catalog import resolve_benchmark, resolve_framework_name, stack_class
from stack_advisor.catalog.stack_runtime import attribute, version_after
from stack_advisor.catalog.stack_text import (
    FRAMEWORK_ORDER,
    benchmark_stack,
    implementation_evidence,
    parse_framework,
)
from stack_advisor.schema.models import SoftwareStack
from tests.support.mlperf import MLPERF_DIR

# NVIDIA's GB300 systems of the round after v5.1, as the issue quotes the published field
NEXT_ROUND = (
    "TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo "
    "mlperf-v6.0-dynamo-v0.8.0, vLLM CentML:mlperf-inf-mm-q3vl-v6.0"
)
# a v5.1 system (inference_results_v5.1) that names a PyTorch build per benchmark
PER_BENCHMARK = (
    "PyTorch: Retinanet: 1.12.0a0+gitb278502, Whisper: 2.7.0+cpu, dlrmv2: 2.1.1+cpu, "
    "rgat: 2.7.0+cpu, llama3.1-8b: 2.8.0.dev20250627+cpu"
)


@pytest.mark.parametrize(
    ("benchmark", "expected"),
    [
        ("gpt-oss-120b", ("tensorrt-llm", None)),  # the LLM engine; its branch is no version
        ("deepseek-r1", ("tensorrt-llm", None)),
        ("qwen3-vl-235b-a22b", ("vllm", None)),  # the vLLM tag names q3vl
        ("resnet50", ("tensorrt", "10.14")),  # not generative: not an LLM engine
    ],
)
def test_a_multi_runtime_field_is_attributed_per_benchmark(
    benchmark: str, expected: tuple[str, str | None]
) -> None:
    assert parse_framework(NEXT_ROUND, benchmark) == expected
    found = attribute(NEXT_ROUND, benchmark, FRAMEWORK_ORDER)
    assert found is not None and found.raw == NEXT_ROUND and found.basis


def test_branch_tags_and_round_names_are_never_versions() -> None:
    assert parse_framework(NEXT_ROUND)[1] is None  # was "vllm 6.0"
    assert version_after(["feat/1.2-mlpinf"]) == (None, "feat/1.2-mlpinf")
    assert version_after(["mlperf-v6.0-dynamo-v0.8.0"])[0] is None
    assert version_after(["CentML:mlperf-inf-mm-q3vl-v6.0"])[0] is None
    assert version_after(["0.6.5.dev964+mlperf50"]) == ("0.6.5", None)
    assert version_after(["v0.8-dev"]) == ("0.8", None)
    found = attribute(NEXT_ROUND, "gpt-oss-120b", FRAMEWORK_ORDER)
    assert found is not None and found.ref == "feat/1.2-mlpinf" and "not a version" in found.basis


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("vLLM v5.1-mlperf, ROCm 7.2.2", None),  # a probe's: stored as "vllm 5.1" in round v6.0
        ("vLLM v6.0 submission", None),
        ("TensorRT-LLM v6.0-mlperf", None),
        ("vLLM v0.10.1 mlperf", "0.10.1"),  # three parts: a release, not a round
        ("TensorRT 8.6 (MLPerf build)", "8.6"),  # no 'v': as written
        ("vLLM-v6.0", "6.0"),  # nothing says submission: read as written (a typo's warning)
        # releases of one digit each side beside the word mlperf stay releases (a review's)
        ("vLLM v0.9 mlperf", "0.9"),
        ("TensorRT-LLM v0.9 feat/1.2-mlpinf", "0.9"),
        ("vLLM v0.8 (MLPerf build)", "0.8"),
        ("TensorRT v8.6 MLPerf", "8.6"),
        ("ROCm v6.1 mlperf", "6.1"),
        ("vLLM v7.0-mlperf", None),  # a round of the next major release, not listed yet
    ],
)
def test_a_round_named_beside_a_submission_is_no_version_whatever_its_round(
    text: str, version: str | None
) -> None:
    """A round's name written with submission words is the round submitted in, not a release,
    in any round's text and in a query's (``--stack "vLLM v6.0 submission"`` had been vllm 6.0)."""
    assert parse_framework(text)[1] == version
    assert parse_framework(text, "llama3.1-8b")[1] == version


@pytest.mark.parametrize(
    ("text", "round_name", "version"),
    [
        ("TensorRT-LLM v6.0", "v6.0", None),  # the round's name, not TensorRT-LLM 6.0
        ("vLLM v6.0, ROCm 7.1", "v6.0", None),
        ("vLLM v6.0", "v5.1", "6.0"),  # not this result's round: read as written
        ("vLLM 0.6.0", "v6.0", "0.6.0"),
        ("TensorRT-LLM 1.2, v6.0 submission", "v6.0", "1.2"),
    ],
)
def test_a_version_written_as_the_results_round_is_no_version(
    text: str, round_name: str, version: str | None
) -> None:
    """A probe's "TensorRT-LLM v6.0" in round v6.0 read as version 6.0."""
    stack = benchmark_stack(SoftwareStack(), text, "llama2-70b-99", round_name=round_name)
    assert stack.framework_version == version


@pytest.mark.parametrize(
    ("benchmark", "version"),
    [
        ("whisper", "2.7.0"),
        ("retinanet", "1.12.0"),
        ("dlrm-v2-99.9", "2.1.1"),  # "dlrmv2" names both accuracy targets
        ("llama3.1-8b", "2.8.0"),
        ("resnet50", None),  # every part is another benchmark's
    ],
)
def test_a_field_written_per_benchmark_gives_each_its_own_version(
    benchmark: str, version: str | None
) -> None:
    assert parse_framework(PER_BENCHMARK, benchmark) == ("pytorch", version)


def _published_pairs() -> set[tuple[str, str]]:
    """(framework field, benchmark) of every result in the shared rounds' tabulations and the
    v5.1 summary table."""
    pairs: set[tuple[str, str]] = set()
    for name in ("observations_v1.1-v3.0.csv", "observations_v4.1.csv", "observations_v5.1.csv"):
        with (MLPERF_DIR / name).open(encoding="utf-8") as fh:
            pairs |= {(r["framework"], r["benchmark"]) for r in csv.DictReader(fh)}
    with gzip.open(MLPERF_DIR / "summary_results_v5.1.json.gz", "rt", encoding="utf-8") as fh:
        pairs |= {(str(e.get("Software") or ""), str(e.get("Model") or "")) for e in json.load(fh)}
    return pairs


def test_every_published_framework_field_attributes_without_reading_tags() -> None:
    """The real framework strings of every shared round, each with each benchmark it ran:
    a runtime for every non-empty field, and a version only where a version-shaped word is
    written (never inside a tag or a round name)."""
    if not (MLPERF_DIR / "observations_v5.1.csv").exists():
        pytest.skip("the shared MLPerf data (../shared/data) is not on this machine")
    pairs = _published_pairs()
    attributed = versioned = 0
    for text, bench in sorted(pairs):
        match = resolve_benchmark(bench, "mlperf-inference")
        name, version = parse_framework(text, match.base or match.id)
        attributed += name is not None
        if not text.strip():
            continue
        assert name is not None, text
        if version is not None:
            versioned += 1
            word = re.compile(rf"(?:^|[\s:(-])v?{re.escape(version)}(?![\d])")
            assert word.search(text), (text, version)
            assert not re.search(rf"mlperf[-_]?v?{re.escape(version)}", text, re.I), text
    print(
        f"{len(pairs)} (field, benchmark) pairs: {attributed} to a runtime, {versioned} versioned"
    )
    assert len(pairs) > 1500 and versioned > 0.8 * len(pairs)


def test_vendor_closed_division_pytorch_is_not_reference_code() -> None:
    amd = implementation_evidence("pytorch", "closed", "AMD", "amd")
    assert amd == "vendor"
    cls = stack_class("pytorch", amd)
    assert cls is not None and cls.software_class == "optimised"
    # the word alone still reads as the framework's class; other submitters, open division and
    # optimised runtimes gain nothing
    assert stack_class("pytorch", None).software_class == "reference"  # type: ignore[union-attr]
    assert implementation_evidence("pytorch", "closed", "Dell", "amd") is None
    assert implementation_evidence("pytorch", "open", "AMD", "amd") is None
    assert implementation_evidence("vllm", "closed", "AMD", "amd") is None
    ref = stack_class("pytorch", "reference")
    assert ref is not None and ref.software_class == "reference"


def test_benchmark_stack_keeps_the_shared_stack_when_nothing_changes() -> None:
    stack = SoftwareStack(framework="tensorrt", framework_version="10.14")
    assert benchmark_stack(stack, NEXT_ROUND, "resnet50", division="closed") is stack
    llm = benchmark_stack(stack, NEXT_ROUND, "gpt-oss-120b", division="closed")
    assert (llm.framework, llm.framework_version) == ("tensorrt-llm", None)
    amd = SoftwareStack(framework="pytorch", framework_version="2.10.0")
    text = "PyTorch 2.10.0+git1a2b3c, ROCm 7.2.2"
    mine = benchmark_stack(
        amd, text, "llama2-70b-99", division="closed", submitter="AMD", vendor="amd"
    )
    assert mine.extra == {"implementation": "vendor"}
    assert (
        benchmark_stack(
            amd, text, "llama2-70b-99", division="closed", submitter="GATEOverflow", vendor="amd"
        )
        is amd
    )


def test_vendor_containers_resolve_to_the_framework_they_ship() -> None:
    for text in ("nemo-framework-nvidia-release", "NeMo Framework NVIDIA Release"):
        match = resolve_framework_name(text)
        assert match.resolved and match.id == "nemo" and match.matched_by == "container"
    assert not resolve_framework_name("nvidia release").resolved


def test_nvidia_dynamo_is_a_serving_framework_under_the_engines() -> None:
    """NVIDIA Dynamo (v6.0's "NVIDIA Dynamo mlperf-v6.0-dynamo-v0.8.0") was refused as an
    unknown framework named by its whole tag; alone it is the framework (no version read from
    its tag), beside an engine the engine ran the model."""
    assert parse_framework("NVIDIA Dynamo mlperf-v6.0-dynamo-v0.8.0") == ("dynamo", None)
    assert parse_framework("Dynamo 0.4.1, TensorRT-LLM 1.0") == ("tensorrt-llm", "1.0")
    assert resolve_framework_name("NVIDIA Dynamo").id == "dynamo"
    stack = benchmark_stack(SoftwareStack(), NEXT_ROUND, "deepseek-r1")
    assert stack.framework == "tensorrt-llm"


@pytest.mark.parametrize(
    ("text", "rocm"),
    [
        ("vLLM 0.9.0.2.dev108+g71faa1880.d20250730.rocm641, Pytorch 2.7.0, ROCm 6.4.1", "6.4.1"),
        ("vLLM 0.4.3+rocm614, PyTorch 2.3.0, ROCm 6.1.2", "6.1.2"),
        ("2.3.0+rocm5.7", "5.7"),  # only a build tag names it, dotted: read from the tag
        ("vllm-0.9.0.2.dev108+g71faa1880.d20250717.rocm641", None),  # 6.4.1 or 6.41: unread
        ('{"rocm_version": "6.4.0", "kernel_version": "5.14.0"}', "6.4.0"),
    ],
)
def test_rocm_is_read_from_its_name_not_a_build_tag(text: str, rocm: str | None) -> None:
    """The shared rounds' AMD stacks had ROCm "641" and "614" from vLLM's build tags."""
    from stack_advisor.catalog.stack_text import parse_components

    assert parse_components(text).get("rocm") == rocm
