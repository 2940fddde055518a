"""The workload spec from YAML, JSON and dicts; bad input names the field and value; the
price table and accelerator spec table load and validate."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack_advisor.advisor.knowledge.specs import load_prices, resolve_accelerator
from stack_advisor.advisor.workload import FrameworkConstraint, Objective, Workload
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind


def test_yaml_and_json_files_give_the_same_workload(tmp_path: Path) -> None:
    yaml_file = tmp_path / "w.yaml"
    yaml_file.write_text(
        "benchmark: bert-99\nscenario: Server\nobjective: cost\nmin_evidence: 2\n"
        "frameworks:\n  - {name: TensorRT, version: '>=8.5'}\n"
        "hardware:\n  accelerators: [A100, H100]\n  placements: [bare-metal, vgpu]\n "
        " driver: '525.85.12'\n"
    )
    json_file = tmp_path / "w.json"
    json_file.write_text(
        '{"benchmark": "bert-99", "scenario": "Server", "objective": "cost", "min_evidence": 2,'
        ' "frameworks": [{"name": "tensorrt", "version": ">=8.5"}], "hardware": {"accelerators":'
        ' ["A100", "H100"], "placements": ["bare-metal", "vgpu"], "driver": "525.85.12"}}'
    )
    a, b = Workload.from_file(yaml_file), Workload.from_file(json_file)
    assert a == b
    assert a.objective is Objective.COST
    assert a.frameworks[0].name == "tensorrt"
    assert a.hardware.placements == [PlacementKind.BARE_METAL, PlacementKind.VGPU]
    assert a.parameter_filters() == {"scenario": "Server"}


def test_task_and_model_resolve_to_a_benchmark() -> None:
    assert Workload(task="image-classification").benchmark == "resnet50"
    assert Workload(model="rnnt").benchmark == "rnnt"
    cnn = Workload(family="cnn", benchmark="resnet50", batch_size=64, precision="fp16")
    assert cnn.parameter_filters() == {"batch_size": 64, "precision": "fp16"}
    # MLPerf v5.0's name for an Interactive result: the benchmark and its scenario
    for scenario in (None, "Server", "Interactive"):
        named = Workload(benchmark="llama3.1-8b-interactive", scenario=scenario)
        assert (named.benchmark, named.scenario) == ("llama3.1-8b", "Interactive")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "name a benchmark"),
        ({"benchmark": "resnet50", "objective": "fastest"}, r"objective.*'fastest'"),
        ({"benchmark": "resnet50", "task": "juggling"}, r"task.*unknown task 'juggling'"),
        (
            {"benchmark": "resnet50", "frameworks": [{"name": "tensorrt", "version": "8.5+"}]},
            r"frameworks\.0\.version.*'8\.5\+'",
        ),
        ({"benchmark": "resnet50", "hardware": {"count": 0}}, r"hardware\.count"),
        ({"benchmark": "resnet50", "hardware": {"driver": "new"}}, r"hardware\.driver.*'new'"),
        (
            {"benchmark": "resnet50", "hardware": {"min_count": 8, "max_count": 2}},
            "min_count 8 is above max_count 2",
        ),
        ({"benchmark": "resnet50", "colour": "blue"}, r"colour"),
        (
            {"benchmark": "llama2-70b-interactive-99", "scenario": "Offline"},
            "^workload: benchmark 'llama2-70b-interactive-99' is llama2-70b-99's "
            "Interactive scenario, not Offline$",
        ),
    ],
)
def test_bad_workloads_name_field_and_value(data: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInput, match=message):
        Workload.from_dict(data)


def test_unreadable_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read workload file"):
        Workload.from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        Workload.from_file(bad)


def test_framework_constraint_parsing() -> None:
    assert FrameworkConstraint.parse("tensorrt>=8.4,<9") == FrameworkConstraint(
        name="tensorrt", version=">=8.4,<9"
    )
    assert FrameworkConstraint.parse("pytorch").version is None


def test_price_table_override_and_validation(tmp_path: Path) -> None:
    table = load_prices(
        {"prices": {"default": {"default": 1.0}, "A30": {"default": 0.5, "vgpu": 0.7}}}
    )
    assert table.price("NVIDIA A30", PlacementKind.VGPU) == (0.7, "A30/vgpu")
    assert table.price("NVIDIA A30 (1x1g.6gb MIG)", PlacementKind.BARE_METAL) == (
        0.5,
        "A30/default",
    )
    assert table.price("NVIDIA L4", PlacementKind.BARE_METAL) == (1.0, "default/default")
    with pytest.raises(InvalidInput, match=r"prices\.A30\.cloud: unknown placement"):
        load_prices({"prices": {"A30": {"cloud": 1.0}}})
    with pytest.raises(InvalidInput, match="must be > 0"):
        load_prices({"prices": {"A30": {"default": 0}}})
    assert load_prices().price("NVIDIA H100-SXM-80GB", PlacementKind.BARE_METAL)[0] > 0


def test_spec_table_entries_cite_sources_and_resolve_kb_names() -> None:
    catalog = load_catalog()
    assert all(acc.source.startswith("https://") for acc in catalog.accelerators.values())
    a100 = resolve_accelerator("NVIDIA A100-SXM4-80GB CTS")
    assert a100.spec is not None and a100.spec.id == "A100-SXM4-80GB"
    assert a100.figure("memory_bw_gbs") == 2039
    mig = resolve_accelerator("NVIDIA A100-SXM-80GB (1x1g.10gb MIG)")
    assert mig.figure("fp16_tflops") == pytest.approx(312 / 7)
    vgpu = resolve_accelerator("NVIDIA A10-24Q")
    assert vgpu.spec is not None and vgpu.spec.id == "A10"
    assert resolve_accelerator("CPU AMD EPYC 9654 96-Core Processor").is_cpu
    # MLPerf v1.1's "NVIDIA A100-PCIe" systems describe 40 GB (the only PCIe A100 then)
    assert resolve_accelerator("NVIDIA A100-PCIe").spec.id == "A100-PCIE-40GB"
    assert resolve_accelerator("NVIDIA A100-SXM-80G").spec is None  # a typo is not guessed


def test_a_workload_field_beyond_its_bound_is_refused_naming_it() -> None:
    """Names at most 256 characters, a list at most 200 entries: refused before the catalogue
    matches anything (a megabyte-long name had cost minutes)."""
    from stack_advisor.schema.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"hardware.accelerators.0: 300 characters, at most 256"):
        Workload.from_dict({"benchmark": "resnet50", "hardware": {"accelerators": ["H" * 300]}})
    with pytest.raises(InvalidInput, match=r"benchmark: 1000000 characters, at most 256"):
        Workload.from_dict({"benchmark": "r" * 1_000_000})
    many = {"benchmark": "resnet50", "parameters": {f"p{i}": 1 for i in range(201)}}
    with pytest.raises(InvalidInput, match=r"parameters: 201 entries, at most 200"):
        Workload.from_dict(many)
