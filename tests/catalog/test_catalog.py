"""The catalogue of names and its resolver: the issue's reproducers, and every name in the
shared MLPerf data (every inference and training round there) resolving."""

from __future__ import annotations

import re

import pytest

from stack_advisor.catalog import (
    cudnn_version,
    load_catalog,
    named_scenario,
    resolve_accelerator,
    resolve_benchmark,
    resolve_cpu,
    resolve_framework,
    resolve_framework_name,
    resolve_metric,
    resolve_scenario,
)
from stack_advisor.catalog.coverage import TreeNames, merge, scan_names, scan_reference_csv
from stack_advisor.catalog.rounds import round_date
from stack_advisor.catalog.stack_text import parse_framework
from stack_advisor.schema.errors import InvalidInput
from tests.support.mlperf import MLPERF_DIR


def shared_data_names() -> TreeNames | None:
    """Inference from the reference tabulations (every result's names, seconds to
    read; bench/catalog_coverage.py reads the archives themselves), every Training round from its
    archive (system descriptions and result directories)."""
    tables = sorted(MLPERF_DIR.glob("observations_*.csv"))
    training = sorted((MLPERF_DIR.parent / "mlperf-training").glob("training_v*.tar.gz"))
    if not tables or not training:
        return None
    return merge(scan_reference_csv(tables), scan_names(training))


def test_every_entry_cites_a_public_source_and_generation() -> None:
    cat = load_catalog()
    for acc in cat.accelerators.values():
        assert acc.source.startswith("https://"), acc.id
        assert acc.generation in cat.generations
    for entries in (cat.benchmarks, cat.scenarios, cat.metrics, cat.frameworks):
        for entry in entries.values():
            assert entry.source.startswith(("https://", "project:")), entry.id


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("H100-SXM-80GB-02", "H100-SXM5-80GB"),
        ("NVIDIA H100-SXM-80GB-02", "H100-SXM5-80GB"),
        ("A100-SXM4-80GB CTS", "A100-SXM4-80GB"),
        ("Tesla T4", "T4"),
        ("NVIDIA T4", "T4"),
        ("A100-PCIe-40GB", "A100-PCIE-40GB"),
        ("A100-PCIE-40GB", "A100-PCIE-40GB"),
        ("A100_PCIe_80GB", "A100-PCIE-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"),  # NVML
        ("NVIDIA-H100-80GB-HBM3", "H100-SXM5-80GB"),  # GFD nvidia.com/gpu.product
        ("AMD Instinct MI300X-NPS1-SPX", "MI300X"),
        ("AMD Instinct MI300X-NPS1-SPX-192GB-750W", "MI300X"),
        ("AMD Instinct MI300X 192GB HBM3", "MI300X"),
        ("NVIDIA A100-SXM-80GB (1x1g.10gb MIG)", "A100-SXM4-80GB (1x1g.10gb MIG)"),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB (1x1g.5gb MIG)"),
        ("TPU-trillium", "TPU-v6e"),
    ],
)
def test_spellings_of_one_part_resolve_to_one_entity(text: str, key: str) -> None:
    match = resolve_accelerator(text)
    assert match.resolved and match.kind == "accelerator"
    assert match.key == key


def test_vgpu_profiles_and_mig_slices_are_fractions_of_their_board() -> None:
    half = resolve_accelerator("H100XM-40C")
    assert half.entry is not None and half.entry.id == "H100-SXM5-80GB"
    assert half.fraction == 0.5 and half.placement == "vgpu" and half.vgpu_profile == "H100XM-40C"
    whole = resolve_accelerator("NVIDIA A100-SXM-80C")
    assert whole.key == "A100-SXM4-80GB" and whole.fraction == 1.0 and whole.placement == "vgpu"
    assert resolve_accelerator("NVIDIA H100-80C").key == "H100-PCIE-80GB"
    slice_ = resolve_accelerator("NVIDIA A100-SXM-80GB (1x1g.10gb MIG)")
    assert slice_.fraction == pytest.approx(1 / 7)
    assert slice_.figure("fp16") == pytest.approx(312 / 7)
    assert resolve_accelerator("NVIDIA A30 (4x1g.6gb MIG)").fraction == 1.0


def test_virtualized_names_resolve_with_a_vm_placement_hint() -> None:
    match = resolve_accelerator("Virtualized NVIDIA H200-SXM-141GB")
    assert match.key == "H200-SXM-141GB" and match.placement == "vm"


def test_multi_accelerator_strings_are_parsed_into_parts_not_an_accelerator() -> None:
    match = resolve_accelerator("1 Node: NVIDIA A100-SXM-80GBx8, 2 Nodes: NVIDIA A30x4")
    assert match.kind == "mixed" and match.resolved and match.entry is None
    assert [(p.nodes, p.per_node, p.accelerator.key) for p in match.parts] == [
        (1, 8, "A100-SXM4-80GB"),
        (2, 4, "A30"),
    ]


def test_unknown_and_misspelt_accelerators_stay_unresolved_with_suggestions() -> None:
    typo = resolve_accelerator("NVIDIA A100-SXM-80G")
    assert not typo.resolved and typo.key == "NVIDIA A100-SXM-80G"
    assert typo.suggestions[0] == "NVIDIA A100-SXM-80GB"
    assert "did you mean 'NVIDIA A100-SXM-80GB'" in typo.message()
    foo = resolve_accelerator("Foo GPU 9000")
    assert not foo.resolved and foo.entry is None and foo.figure("fp16") is None


def test_generation_minimum_drivers() -> None:
    cat = load_catalog()
    assert cat.min_driver("H100-SXM5-80GB") == "525.60.13"
    assert cat.min_driver("H200-SXM-141GB") == "525.60.13"
    assert cat.min_driver("B200-SXM-180GB") == "570.26"
    assert cat.min_driver("A100-SXM4-80GB") == "450.51.06"
    assert cat.min_driver("MI300X") is None


def test_cpus_resolve_by_model() -> None:
    assert (
        resolve_cpu("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz").id == "Intel Xeon Platinum 8380"
    )
    assert resolve_cpu("Intel(R) Xeon(R) Platium 8380").id == "Intel Xeon Platinum 8380"
    assert resolve_cpu("AMD EPYC 74F3 24-Core Processor").id == "AMD EPYC 74F3"
    assert resolve_accelerator("CPU AMD EPYC 9654 96-Core Processor").key == "CPU AMD EPYC 9654"


def test_scenarios_are_case_blind_and_typos_get_suggestions() -> None:
    assert resolve_scenario("offline").id == "Offline"
    assert resolve_scenario("single-stream").id == "SingleStream"
    assert resolve_scenario("Interactive").id == "Interactive"
    typo = resolve_scenario("Ofline")
    assert not typo.resolved and typo.suggestions == ("Offline",)
    with pytest.raises(
        InvalidInput, match=r"scenario: unknown scenario 'Ofline'; did you mean 'Offline'\?"
    ):
        typo.require()


def test_benchmark_aliases_and_open_division_variants() -> None:
    assert resolve_benchmark("sdxl").id == "stable-diffusion-xl"
    assert resolve_benchmark("resnet").id == "resnet50"
    assert (
        resolve_benchmark("llama2-70b-lora").id == "llama2_70b_lora"
    )  # MLPerf Training's own name


@pytest.mark.parametrize(
    ("text", "family", "expected"),
    [
        # one id per benchmark within its family; the same word may name another family's benchmark
        ("llama2-70b-lora", "mlperf-training", "llama2_70b_lora"),
        ("dlrm-dcnv2", "mlperf-training", "dlrm_dcnv2"),
        ("gnn", "mlperf-training", "rgat"),  # v4.1's directory name of v5.0's rgat
        ("ssd", "mlperf-training", "retinanet"),  # v4.1's name of the RetinaNet benchmark
        ("llama3.1-405b", "mlperf-training", "llama31_405b"),
        ("flux.1", "mlperf-training", "flux1"),
        ("rgat", "mlperf-inference", "rgat"),
        ("llama3_1-405b", "mlperf-inference", "llama3.1-405b"),  # v5.1's second spelling
        ("llama3_1-8b-edge", "mlperf-inference", "llama3.1-8b-edge"),
        ("deepseek-r1", None, "deepseek-r1"),
        ("whisper", None, "whisper"),
        ("pointpainting", None, "pointpainting"),
    ],
)
def test_benchmark_ids_by_family(text: str, family: str | None, expected: str) -> None:
    match = resolve_benchmark(text, family)
    assert match.resolved and match.id == expected
    assert match.family == (family or "mlperf-inference")
    assert load_catalog().benchmark(match.family, match.id) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llama2-70b-interactive-99", "llama2-70b-99"),
        ("llama2-70b-interactive-99.9", "llama2-70b-99.9"),
        ("llama3.1-405b-interactive", "llama3.1-405b"),
        ("llama3.1-8b-interactive", "llama3.1-8b"),
        ("deepseek-r1_interactive", "deepseek-r1"),
        ("Interactive llama2-70b-99", "llama2-70b-99"),
    ],
)
def test_a_scenario_in_a_benchmark_name_is_that_benchmarks_scenario(
    text: str, expected: str
) -> None:
    """MLPerf's names for the Interactive scenario (a LoadGen Server run) before it had a
    directory."""
    match = resolve_benchmark(text)
    assert (match.resolved, match.id, match.scenario, match.base) == (
        True,
        expected,
        "Interactive",
        None,
    )
    assert (
        named_scenario(match, "Server") == "Interactive"
        and named_scenario(match, "Offline") == "Offline"
    )
    plain = resolve_benchmark(expected)
    assert plain.scenario is None and named_scenario(plain, "Server") == "Server"
    # a scenario LoadGen runs as itself is no name part; an unknown rest is no benchmark
    assert resolve_benchmark("resnet50-offline").scenario is None
    assert not resolve_benchmark("no-such-model-interactive").resolved


# The MLPerf rounds after the data we hold (Inference v6.0/v6.1, Training v6.0/v6.1): each
# benchmark as the submission checker names it and as users write it.
_NEXT_ROUNDS = [
    ("gpt-oss-120b", None, "gpt-oss-120b"),
    ("GPT-OSS 120B", None, "gpt-oss-120b"),
    ("gpt_oss_120b", None, "gpt-oss-120b"),
    ("openai/gpt-oss-120b", None, "gpt-oss-120b"),
    ("qwen3-vl-235b-a22b", None, "qwen3-vl-235b-a22b"),
    ("Qwen3-VL-235B-A22B", None, "qwen3-vl-235b-a22b"),
    ("Qwen/Qwen3-VL-235B-A22B-Instruct", None, "qwen3-vl-235b-a22b"),
    ("dlrm-v3", None, "dlrm-v3"),
    ("DLRMv3", None, "dlrm-v3"),
    ("dlrm_v3", None, "dlrm-v3"),
    ("wan-2.2-t2v-a14b", None, "wan-2.2-t2v-a14b"),
    ("Wan2.2-T2V-A14B", None, "wan-2.2-t2v-a14b"),
    ("Wan 2.2 T2V A14B", None, "wan-2.2-t2v-a14b"),
    ("yolo-95", None, "yolo-95"),
    ("YOLO_99", None, "yolo-99"),
    ("qwen3.6-27b", None, "qwen3.6-27b"),
    ("Qwen/Qwen3.6-27B", None, "qwen3.6-27b"),
    ("e2e-rag-qna", None, "e2e-rag-qna"),
    ("E2E-RAG", None, "e2e-rag-qna"),
    ("e2e-rag-db", None, "e2e-rag-db"),
    ("gpt_oss_20b", "mlperf-training", "gpt_oss_20b"),
    ("gpt-oss-20b", "mlperf-training", "gpt_oss_20b"),
    ("deepseekv3", "mlperf-training", "deepseekv3"),
    ("DeepSeek-V3", "mlperf-training", "deepseekv3"),
    ("qwen35_397b_grpo", "mlperf-training", "qwen35_397b_grpo"),
    # Training v5.1's own spellings (no new benchmark in that round)
    ("llama3.1_8b", "mlperf-training", "llama31_8b"),
    ("llama3.1_405b", "mlperf-training", "llama31_405b"),
    ("flux.1", "mlperf-training", "flux1"),
]


@pytest.mark.parametrize(("text", "family", "expected"), _NEXT_ROUNDS)
def test_the_next_rounds_benchmarks_resolve_as_written(
    text: str, family: str | None, expected: str
) -> None:
    match = resolve_benchmark(text, family)
    assert (match.resolved, match.id, match.base, match.family) == (
        True,
        expected,
        None,
        family or "mlperf-inference",
    )


@pytest.mark.parametrize(
    ("text", "suggested"),
    [
        ("gpt-oss-12b", "gpt-oss-120b"),
        ("qwen3-vl-253b", "qwen3-vl-235b-a22b"),
        ("dlrm-v4", "dlrm-v3"),
        ("wan-2.1-t2v-a14b", "wan-2.2-t2v-a14b"),
        ("yolo-90", "yolo-99"),
        ("yolo-99.9", "yolo-99"),
        ("qwen3.5-27b", "qwen3.6-27b"),
        ("e2e-rag-kv", "e2e-rag-qna"),
    ],
)
def test_near_misses_of_the_next_rounds_names_are_refused_with_did_you_mean(
    text: str, suggested: str
) -> None:
    """A name never seen is no other benchmark (yolo-<number> was an open-division zoo variant)."""
    match = resolve_benchmark(text)
    assert not match.resolved and match.base is None and suggested in match.suggestions
    with pytest.raises(
        InvalidInput, match=rf"unknown benchmark '{re.escape(text)}'; did you mean .*'{suggested}'"
    ):
        match.require()


def test_yolo_open_variants_keep_their_base() -> None:
    assert resolve_benchmark("yolo-95-int8").base == "yolo-95"
    assert resolve_benchmark("yolo-v3-coco").base == "object-detection-zoo"  # v2.1's open division


def test_the_next_rounds_entries_carry_their_sources_and_published_facts() -> None:
    cat = load_catalog()
    inference = (
        "gpt-oss-120b",
        "qwen3-vl-235b-a22b",
        "dlrm-v3",
        "wan-2.2-t2v-a14b",
        "yolo-95",
        "yolo-99",
        "qwen3.6-27b",
        "e2e-rag-qna",
        "e2e-rag-db",
    )
    for bid in inference:
        entry = cat.benchmark("mlperf-inference", bid)
        assert entry.source.startswith("https://github.com/mlcommons/inference_policies/blob/"), bid
        assert entry.reference.startswith("https://github.com/mlcommons/inference/tree/"), bid
        assert entry.dataset and entry.model, bid
    for bid in ("gpt_oss_20b", "deepseekv3", "qwen35_397b_grpo"):
        entry = cat.benchmark("mlperf-training", bid)
        assert entry.source.startswith("https://github.com/mlcommons/training/blob/"), bid
        assert entry.reference.startswith("https://github.com/mlcommons/training/tree/"), bid
    gpt = cat.benchmark("mlperf-inference", "gpt-oss-120b")
    assert (
        gpt.params_b,
        gpt.active_params_b,
        gpt.max_seq_len,
        gpt.max_output_tokens,
        gpt.tokens,
    ) == (117, 5.1, 15330, 10000, True)
    assert gpt.precision is None and gpt.model_source  # the rules name no precision for it
    qwen = cat.benchmark("mlperf-inference", "qwen3-vl-235b-a22b")
    assert (qwen.params_b, qwen.active_params_b, qwen.precision, qwen.tokens) == (
        235,
        22,
        "bf16",
        False,
    )
    wan = cat.benchmark("mlperf-inference", "wan-2.2-t2v-a14b")
    assert (wan.params_b, wan.active_params_b, wan.precision) == (27, 14, "bf16")
    dlrm = cat.benchmark("mlperf-inference", "dlrm-v3")
    assert (dlrm.params_b, dlrm.precision) == (None, "fp32")  # no parameter count published


def test_the_next_rounds_latency_limits_and_publication_date() -> None:
    cat = load_catalog()
    server, interactive = cat.scenarios["Server"], cat.scenarios["Interactive"]
    assert server.limits_for("gpt-oss-120b", "v5.1") is None  # new in v6.0
    gpt = server.limits_for("gpt-oss-120b", "v6.0")
    assert (gpt.ttft_ms, gpt.tpot_ms) == (3000, 80)
    gpt_i = interactive.limits_for("gpt-oss-120b", "v6.0")
    assert (gpt_i.ttft_ms, gpt_i.tpot_ms) == (2000, 20)
    assert server.limits_for("qwen3-vl-235b-a22b").latency_ms == 12000
    assert server.limits_for("dlrm-v3").latency_ms == 80
    assert interactive.limits_for("qwen3-vl-235b-a22b", "v6.0") is None
    assert interactive.limits_for("qwen3-vl-235b-a22b", "v6.1").latency_ms == 1500
    assert round_date("v6.0") is not None and round_date("v6.0").date().isoformat() == "2026-04-01"
    assert round_date("v6.1") is None  # no publication read: rows are aged by their own timestamps


def test_unknown_benchmark_in_a_family_suggests_that_familys_names() -> None:
    match = resolve_benchmark("llama2_70b_lorra", "mlperf-training")
    assert not match.resolved and match.suggestions[0] == "llama2_70b_lora"


def test_moe_and_llm_facts_are_published_ones() -> None:
    cat = load_catalog()
    deepseek = cat.benchmark("mlperf-inference", "deepseek-r1")
    assert (deepseek.params_b, deepseek.active_params_b, deepseek.max_seq_len) == (671, 37, 3136)
    mixtral = cat.benchmark("mlperf-inference", "mixtral-8x7b")
    assert (mixtral.params_b, mixtral.active_params_b, mixtral.precision) == (46.7, 12.9, "fp16")
    for entry in cat.benchmarks.values():
        if entry.family.startswith("mlperf"):
            assert entry.source.startswith("https://github.com/mlcommons/"), entry.id
        if entry.active_params_b is not None:
            assert entry.params_b is not None and entry.active_params_b < entry.params_b


def test_interactive_latency_limits_per_benchmark_and_round() -> None:
    interactive = load_catalog().scenarios["Interactive"]
    assert interactive.loadgen_mode == "Server"
    llama = interactive.limits_for("llama2-70b-99", "v5.1")
    assert (llama.ttft_ms, llama.tpot_ms, llama.since) == (450, 40, "v5.0")
    assert interactive.limits_for("llama3.1-405b", "v5.0") is None  # added in v5.1
    assert interactive.limits_for("llama3.1-405b", "v5.1").ttft_ms == 4500
    server = load_catalog().scenarios["Server"].limits_for("llama2-70b-99")
    assert (server.ttft_ms, server.tpot_ms) == (2000, 200)
    variant = resolve_benchmark("mobilenet-v1-precision_uint8-0.5-160")
    assert variant.resolved and variant.id == "mobilenet-v1-precision_uint8-0.5-160"
    assert variant.base == "mobilenet"
    unknown = resolve_benchmark("resnet5")
    assert not unknown.resolved and "resnet50" in unknown.suggestions


def test_metrics_pair_our_loadgen_names_with_mlperfs() -> None:
    assert resolve_metric("completed_samples_per_second").id == "queries_per_second"
    assert load_catalog().metrics["p90_latency_ms"].higher_is_better is False


def test_frameworks_and_cudnn_integers() -> None:
    trt = resolve_framework("TensorRT 8.6.0")
    assert trt.name.id == "tensorrt" and trt.version == "8.6.0"
    assert resolve_framework("torch").name.id == "pytorch"
    assert not resolve_framework("tensorflw").resolved
    assert cudnn_version(91900) == "9.19.0"
    assert cudnn_version("8902") == "8.9.2"
    assert cudnn_version("8.9.7") == "8.9.7"


def test_every_name_in_the_shared_data_resolves() -> None:
    """Every accelerator, CPU-only host and benchmark name in ../shared/data (every Inference
    and Training round); the list of those that do not is printed and must stay empty."""
    names = shared_data_names()
    if names is None:
        pytest.skip("the shared MLPerf data (../shared/data) is not on this machine")
    unresolved_acc = sorted(a for a in names.accelerators if not resolve_accelerator(a).resolved)
    unresolved_cpu = sorted(c for c in names.cpu_only_hosts if not resolve_cpu(c).resolved)
    unresolved_bench = sorted(b for b in names.benchmarks if not resolve_benchmark(b).resolved)
    unresolved_scen = sorted(s for s in names.scenarios if not resolve_scenario(s).resolved)
    parsed = {f: parse_framework(f)[0] for f in names.frameworks}
    unresolved_fw = sorted(
        f for f, name in parsed.items() if name and not resolve_framework_name(name).resolved
    )
    print("unresolved accelerators:", unresolved_acc)
    print("unresolved CPU-only hosts:", unresolved_cpu)
    print("unresolved benchmarks:", unresolved_bench)
    print("unresolved scenarios:", unresolved_scen)
    print("unresolved frameworks:", unresolved_fw)
    assert len(names.accelerators) > 80 and len(names.benchmarks) > 200
    assert unresolved_acc == []
    # a canonical name resolves to itself (stored names survive re-resolution: db migrate)
    keys = {resolve_accelerator(a).key for a in names.accelerators}
    keys |= {resolve_accelerator("CPU " + c).key for c in names.cpu_only_hosts}
    assert (
        sorted(
            k
            for k in keys
            if resolve_accelerator(k).key != k or not resolve_accelerator(k).resolved
        )
        == []
    )
    assert unresolved_cpu == []
    assert unresolved_bench == []
    assert unresolved_scen == []
    assert unresolved_fw == []


def test_every_cpu_model_figure_has_a_source_and_derived_ones_their_formula() -> None:
    from stack_advisor.catalog.cpu_models import PUBLISHED, cpu_figures, load_cpu_models

    cat = load_cpu_models()
    assert {"Intel Xeon 6787P", "Intel Xeon 6980P", "AMD EPYC 9654", "AWS Graviton4"} <= set(
        cat.models
    )
    for model_id, model in cat.models.items():
        assert model.source.startswith("https://"), model_id
        assert resolve_cpu(model_id).id == model_id
        figures = cpu_figures(model_id)
        assert figures is not None
        for figure in [
            *figures.peaks.values(),
            *([figures.bandwidth] if figures.bandwidth else []),
        ]:
            assert figure.sources and all(s.startswith("https://") for s in figure.sources), (
                model_id
            )
            assert figure.how == PUBLISHED or (
                figure.how.startswith("derived: ") and " x " in figure.how
            ), figure
    gnr = cpu_figures("Intel Xeon 6787P")
    assert gnr is not None and gnr.peak("int8") == pytest.approx(86 * 2.0 * 2048 / 1000)
    assert gnr.bandwidth is not None and gnr.bandwidth.value == pytest.approx(8 * 6400 * 8 / 1000)
    assert "86 cores x 2 GHz base x 2048 int8 ops/cycle (granite-rapids)" in gnr.peaks["int8"].how
    sierra = cpu_figures("Intel Xeon 6780E")  # no documented per-cycle rate: no peak, never guessed
    assert sierra is not None and sierra.peaks == {}
    assert (
        cpu_figures("Intel Xeon Platinum 9999") is None
    )  # a model not in the catalogue has no figures


def test_a_library_runs_on_a_framework_of_its_own() -> None:
    """``runs_on`` is one hop to a framework that runs on none (the loader refuses anything else):
    the stack family a ranking folds a library's results into is that framework's id."""
    frameworks = load_catalog().frameworks
    libraries = {f.id: f.runs_on for f in frameworks.values() if f.runs_on}
    assert libraries["nemo"] == "pytorch"
    for name, base in libraries.items():
        assert base in frameworks and base != name and frameworks[base].runs_on is None
