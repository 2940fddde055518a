"""The accelerator catalogue's line-up (issue 27): tricky spellings resolve to the right part,
near misses are refused with "did you mean", never mapped to a neighbour, and malformed entries
are refused at load."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from stack_advisor.catalog import AcceleratorEntry, Generation, load_catalog, resolve_accelerator


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("MI325X", "MI325X"),
        ("AMD Instinct MI325X 256GB HBM3e", "MI325X"),
        ("AMD Instinct MI325X 256GB HBM3E DLC", "MI325X"),
        ("AMD Instinct MI355X 288GB HBM3e", "MI355X"),
        ("mi350x", "MI350X"),
        ("MI250", "MI250"),
        ("MI250X", "MI250X"),
        ("B300", "B300-SXM-288GB"),
        ("NVIDIA B300", "B300-SXM-288GB"),
        ("B200", "B200-SXM-180GB"),
        ("GB200", "GB200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA Blackwell GPU (GB200)", "GB200"),
        ("NVIDIA GB300", "GB300"),
        ("H200 NVL", "H200-NVL-141GB"),
        ("NVIDIA H200-NVL-141GB", "H200-NVL-141GB"),
        ("NVIDIA H200 NVL", "H200-NVL-141GB"),  # NVML
        ("NVIDIA-H200-NVL", "H200-NVL-141GB"),  # GFD
        ("NVIDIA H200", "H200-SXM-141GB"),  # NVML's name for the SXM board
        ("H20", "H20"),
        ("NVIDIA H20", "H20"),
        ("Gaudi 3", "Gaudi3"),
        ("Intel Gaudi3", "Gaudi3"),
        ("HL-325L", "Gaudi3"),
        ("Intel Gaudi 3 PCIe", "Gaudi3-PCIe"),
        ("Habana Gaudi2", "Gaudi2"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell-Server"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-Blackwell-WS"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-Blackwell-MaxQ"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000-Blackwell-Server"),
        ("RTX PRO 4500 Blackwell", "RTX-PRO-4500-Blackwell-WS"),
        ("NVIDIA RTX PRO 4500 Blackwell Server Edition", "RTX-PRO-4500-Blackwell-Server"),
        ("[MAXSUN] MS-Intel Arc Pro B60 Dual 48G Turbo", "Arc-Pro-B60-Dual"),
        ("Intel Arc Pro B60", "Arc-Pro-B60"),
        ("Intel(R) Arc(TM) 140T GPU", "Arc-140T"),
        ("NVIDIA Jetson AGX Thor 128G", "Jetson-AGX-Thor"),
        ("DGX Spark", "GB10"),
        ("NVIDIA RTX 4000 Ada-PCIe-20GB", "RTX-4000-Ada"),
        ("NVIDIA RTX-2000E-Ada-16GB", "RTX-2000E-Ada"),
        ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
        ("A800 SXM 80GB", "A800-SXM4-80GB"),
        ("TPU v7", "TPU-v7"),
        ("Ironwood", "TPU-v7"),
        ("TPU v4", "TPU-v4"),
        ("Trainium2", "AWS-Trainium2"),
        ("AWS Trainium", "AWS-Trainium"),
        ("Inferentia2", "AWS-Inferentia2"),
        ("Inferentia", "AWS-Inferentia"),
        ("Intel Data Center GPU Max 1550", "Max-1550"),
        ("AMD Radeon PRO W7900", "Radeon-PRO-W7900"),
        ("QUALCOMM Cloud AI 100 Ultra", "Cloud-AI-100-Ultra"),
        ("B200 192GB", "B200-SXM-180GB"),  # marketing vs usable capacity, within 7%
        ("H100 NVL 96GB", "H100-NVL-94GB"),
        ("Intel Gaudi 3 HL-338", "Gaudi3-PCIe"),
        ("GB200 NVL4", "GB200"),
    ],
)
def test_lineup_spellings_resolve_to_their_part(text: str, key: str) -> None:
    match = resolve_accelerator(text)
    assert match.resolved, match.message()
    assert match.key == key


@pytest.mark.parametrize(
    ("text", "refusal", "suggested"),
    [
        ("RTX PRO 6000", "family", {"RTX-PRO-6000-Blackwell-WS", "RTX-PRO-6000-Blackwell-Server"}),
        (
            "RTX PRO 6000 Blackwell",
            "family",
            {"RTX-PRO-6000-Blackwell-WS", "RTX-PRO-6000-Blackwell-Server"},
        ),
        ("H100", "family", {"H100-SXM5-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"}),
        ("MI300", "family", {"MI300X", "MI300A"}),
        ("NVIDIA B200/B300", "ambiguous", {"B200-SXM-180GB", "B300-SXM-288GB"}),
        ("MI375X", "unknown", None),
        ("B250", "unknown", None),
        ("GB400", "unknown", None),
        ("H300 NVL", "unknown", None),
        ("Gaudi 4", "unknown", None),
        # the China-market 5090 D and the 24 GB laptop GPU are other parts than the RTX 5090
        ("NVIDIA GeForce RTX 5090 D", "unknown", None),
        ("NVIDIA GeForce RTX 5090D", "unknown", None),
        ("NVIDIA GeForce RTX 5090 Laptop GPU", "unknown", None),
        ("NVIDIA RTX PRO 500 Blackwell", "unknown", None),  # a laptop GPU, not the 5000
        ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "unknown", None),  # 70 W, 432 GB/s
        ("NVIDIA Jetson Orin Nano 4GB", "unknown", None),  # half the 8 GB module's GPU
        ("Tenstorrent Wormhole n150s", "unknown", None),
        ("RTX PRO 5000", "family", {"RTX-PRO-5000-Blackwell", "RTX-PRO-5000-Blackwell-72GB"}),
        ("NVIDIA B200A", "unknown", None),
        ("Trainium3", "unknown", None),
        ("Tesla V100", "family", {"V100-SXM2-32GB", "V100-PCIE-16GB"}),
        ("AMD MI300X/MI325X", "ambiguous", {"MI300X", "MI325X"}),
        ("NVIDIA H100 SXM5 94GB", "unknown", None),  # the pattern's part has 80 GB
        ("MI300X 128GB", "unknown", None),
    ],
)
def test_near_misses_are_refused_with_did_you_mean(
    text: str, refusal: str, suggested: set[str] | None
) -> None:
    match = resolve_accelerator(text)
    assert not match.resolved and match.entry is None
    assert match.refusal == refusal
    assert match.suggestions, "a refusal names the closest parts"
    assert "did you mean" in match.message()
    if suggested is not None:
        assert suggested <= set(match.suggestions)


@pytest.mark.parametrize(
    ("text", "not_this"),
    [
        ("B300", "B200-SXM-180GB"),
        ("GB200", "B200-SXM-180GB"),
        ("GB300", "B300-SXM-288GB"),
        ("H200 NVL", "H200-SXM-141GB"),
        ("H20", "H200-SXM-141GB"),
        ("MI325X", "MI300X"),
        ("MI355X", "MI350X"),
        ("MI250", "MI250X"),
        ("Arc Pro B60 Dual", "Arc-Pro-B60"),
        ("Gaudi 3 PCIe", "Gaudi3"),
        ("Inferentia2", "AWS-Inferentia"),
        ("Trainium2", "AWS-Trainium"),
        ("RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-Blackwell-WS"),
    ],
)
def test_a_neighbour_never_takes_the_name(text: str, not_this: str) -> None:
    match = resolve_accelerator(text)
    assert match.resolved and match.key != not_this


def test_every_name_of_every_entry_resolves_to_that_entry() -> None:
    """No entry's pattern (or an earlier entry's) steals another entry's own spellings."""
    cat = load_catalog()
    wrong = [
        (name, acc.id, resolve_accelerator(name).key)
        for acc in cat.accelerators.values()
        for name in acc.names()
        if resolve_accelerator(name).key != acc.id
    ]
    assert wrong == []


def test_a_system_listed_by_count_per_model_is_mixed() -> None:
    text = "AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct MI325X 256GB HBM3e (x16)"
    match = resolve_accelerator(text)
    assert match.kind == "mixed" and match.resolved
    assert [(p.per_node, p.accelerator.key) for p in match.parts] == [
        (32, "MI300X"),
        (16, "MI325X"),
    ]
    assert match.key == "mixed: 32x MI300X + 16x MI325X"
    again = resolve_accelerator(match.key)
    assert again.key == match.key and again.resolved
    assert not resolve_accelerator("MI300X (x8), MI999X (x8)").resolved


def test_superchips_and_multi_die_parts_say_what_one_accelerator_is() -> None:
    cat = load_catalog()
    for ident in (
        "GB200",
        "GB300",
        "GH200-144GB",
        "GB10",
        "MI250X",
        "MI250",
        "Gaudi3",
        "TPU-v7",
        "TPU-v5p",
        "Arc-Pro-B60-Dual",
        "Max-1550",
        "MI300A",
    ):
        assert cat.accelerators[ident].counted_as, ident
    assert "GPU" in (cat.accelerators["GB200"].counted_as or "")


def test_blackwell_driver_minimums_live_in_the_generations() -> None:
    cat = load_catalog()
    assert cat.min_driver("B200-SXM-180GB") == "570.26"
    assert cat.min_driver("GB200") == "570.26"
    assert cat.min_driver("RTX-PRO-6000-Blackwell-Server") == "570.26"
    assert cat.min_driver("B300-SXM-288GB") == "575.51.03"
    assert cat.min_driver("GB300") == "575.51.03"
    assert cat.min_driver("MI355X") is None
    for gen in cat.generations.values():
        assert gen.source.startswith("https://"), gen.id


def test_figures_are_dense_and_sourced() -> None:
    cat = load_catalog()
    for acc in cat.accelerators.values():
        assert acc.source.startswith("https://"), acc.id
    gb200 = cat.accelerators["GB200"].peak_tflops
    assert (gb200.bf16, gb200.fp8, gb200.fp4) == (2500, 5000, 10000)
    assert (
        cat.accelerators["H200-NVL-141GB"].peak_tflops.fp8 == 1670.5
    )  # the NVL column: 3,341 sparse, halved
    # HGX B300's 105 PFLOPS dense FP4 / 8 (two secondary copies of NVIDIA's HGX table agree)
    assert cat.accelerators["B300-SXM-288GB"].peak_tflops.fp4 == 13125


_GOOD: dict[str, Any] = {
    "id": "X1",
    "name": "Vendor X1",
    "vendor": "amd",
    "family": "X",
    "generation": "cdna3",
    "form_factor": "oam",
    "source": "https://example.com/x1",
}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"peak_tflops": {"bf16": 2000, "fp8": 1000}}, "fp8"),  # a sparse bf16 among dense figures
        ({"peak_tflops": {"fp8": 4000, "fp4": 2000}}, "fp4"),
        ({"peak_tflops": {"fp16": -1}}, "fp16"),
        ({"form_factor": "superchip"}, "counted_as"),
        ({"form_factor": "tpu-chip"}, "counted_as"),
        ({"gfd_products": ["AMD-X1"]}, "NVIDIA"),
        ({"interconnect_gbs": 800}, "interconnect"),
        ({"launch_year": 1999}, "launch_year"),
        ({"memory_gb": 0}, "memory_gb"),
        ({"tflops": 5}, "tflops"),
        ({"source": "www.example.com"}, "source"),
        ({"patterns": ["mi(300"]}, "pattern"),
    ],
)
def test_malformed_entries_are_refused(change: dict[str, Any], words: str) -> None:
    AcceleratorEntry.model_validate(_GOOD)  # the baseline is valid
    with pytest.raises(ValidationError) as info:
        AcceleratorEntry.model_validate({**_GOOD, **change})
    assert words in str(info.value)


def test_a_driver_minimum_is_nvidia_only() -> None:
    with pytest.raises(ValidationError, match="NVIDIA"):
        Generation.model_validate(
            {"id": "cdna9", "vendor": "amd", "min_driver": "600.1", "source": "https://example.com"}
        )


def test_a_summary_table_of_either_shape_gives_its_names(tmp_path: Any) -> None:
    """v5.1's list with `Accelerator`/`a#`/`Processor`, and a later round's object keyed "0",
    "1", ... with `accelerator_model_name`/`accelerators_per_node`: the same names."""
    import gzip
    import json

    from stack_advisor.catalog.coverage import scan_summary

    listed = [
        {
            "Accelerator": "NVIDIA GB200",
            "a#": 4,
            "Processor": "NVIDIA Grace",
            "Model": "llama2-70b-99",
            "Scenario": "Offline",
        },
        {
            "Accelerator": "",
            "a#": "",
            "Processor": "INTEL(R) XEON(R) 6787P",
            "Model": "resnet",
            "Scenario": "Server",
        },
    ]
    keyed = {
        "0": {
            "accelerator_model_name": "AMD Instinct MI355X 288GB HBM3e",
            "accelerators_per_node": 8,
            "host_processor_model_name": "AMD EPYC 9575F",
            "MlperfModel": "llama2-70b-99",
            "Scenario": "Interactive",
        }
    }
    first, second = (
        tmp_path / "summary_results_v5.1.json.gz",
        tmp_path / "summary_results_v6.0.json",
    )
    with gzip.open(first, "wt") as handle:
        json.dump(listed, handle)
    second.write_text(json.dumps(keyed))
    names = scan_summary([first, second])
    assert names.accelerators == {"NVIDIA GB200", "AMD Instinct MI355X 288GB HBM3e"}
    assert names.cpu_only_hosts == {"INTEL(R) XEON(R) 6787P"}
    assert names.benchmarks == {"llama2-70b-99", "resnet"}
    assert {resolve_accelerator(a).key for a in names.accelerators} == {"GB200", "MI355X"}


def test_a_host_cpu_written_without_its_prefix_is_the_cpu_only_system() -> None:
    """A CPU-only system is asked as "CPU <model>"; the model alone, as MLPerf's host_cpu field
    spells it, resolves to the same CPU (the answer names it "CPU <model>")."""
    from stack_advisor.catalog import resolve_accelerator

    match = resolve_accelerator("Intel(R) Xeon(R) Platinum 8480+")
    assert match.resolved and match.kind == "cpu" and match.matched_by == "host CPU"
    assert match.key == resolve_accelerator("CPU Intel(R) Xeon(R) Platinum 8480+").key
    assert match.key == "CPU Intel Xeon Platinum 8480+"
    assert not resolve_accelerator("Foo GPU 9000").resolved
    assert resolve_accelerator("Foo GPU 9000").suggestions == ()


def test_full_width_and_compatibility_forms_resolve_as_the_plain_name() -> None:
    """A name pasted from a document in full-width forms ("ｍｉ３００ｘ") is the plain name; a
    full-width "Ｈ100" had been read as "100" and suggested Cloud-AI-100."""
    match = resolve_accelerator("ｍｉ３００ｘ")
    assert match.resolved and match.entry is not None and match.entry.id == "MI300X"
    ambiguous = resolve_accelerator("NVIDIA Ｈ100")
    assert not ambiguous.resolved and ambiguous.suggestions[0].startswith("H100")
    trademark = resolve_accelerator("AMD Instinct™ MI355X")
    assert trademark.entry is not None and trademark.entry.id == "MI355X"
