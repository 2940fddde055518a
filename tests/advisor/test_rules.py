"""Every compatibility rule matches at least one real configuration (a rule that can never match
is a bug), gives the right verdict on real cases, and malformed rules are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from stack_advisor.advisor.knowledge.rules import (
    Severity,
    component_versions,
    load_rules,
    stack_components,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.store.starter import load_snapshot

# Documented real configurations for rules the MLPerf v1.1-v3.0 data does not exercise. Each is
# a configuration a vendor ships: NVIDIA's CUDA runfiles bundle a driver and are named
# cuda_<toolkit>_<driver>_linux.run; PyTorch wheels name their CUDA build; TensorFlow lists its
# tested build configurations.
DOCUMENTED = [
    (
        {"cuda": "11.0.2", "driver": "450.51.05"},
        "https://developer.nvidia.com/cuda-11.0-download-archive (cuda_11.0.2_450.51.05_linux.run)",
    ),
    (
        {"cuda": "11.2.0", "driver": "460.27.04"},
        "https://developer.nvidia.com/cuda-11.2.0-download-archive "
        "(cuda_11.2.0_460.27.04_linux.run)",
    ),
    (
        {"cuda": "12.1.0", "driver": "530.30.02"},
        "https://developer.nvidia.com/cuda-12-1-0-download-archive "
        "(cuda_12.1.0_530.30.02_linux.run)",
    ),
    (
        {"cuda": "12.2.0", "driver": "535.54.03"},
        "https://developer.nvidia.com/cuda-12-2-0-download-archive "
        "(cuda_12.2.0_535.54.03_linux.run)",
    ),
    (
        {"cuda": "12.3.0", "driver": "545.23.06"},
        "https://developer.nvidia.com/cuda-12-3-0-download-archive "
        "(cuda_12.3.0_545.23.06_linux.run)",
    ),
    (
        {"cuda": "12.4.0", "driver": "550.54.14"},
        "https://developer.nvidia.com/cuda-12-4-0-download-archive "
        "(cuda_12.4.0_550.54.14_linux.run)",
    ),
    (
        {"cuda": "12.5.0", "driver": "555.42.02"},
        "https://developer.nvidia.com/cuda-12-5-0-download-archive "
        "(cuda_12.5.0_555.42.02_linux.run)",
    ),
    (
        {"cuda": "12.6.0", "driver": "560.28.03"},
        "https://developer.nvidia.com/cuda-12-6-0-download-archive "
        "(cuda_12.6.0_560.28.03_linux.run)",
    ),
    (
        {"cuda": "12.8.0", "driver": "570.86.10"},
        "https://developer.nvidia.com/cuda-12-8-0-download-archive "
        "(cuda_12.8.0_570.86.10_linux.run)",
    ),
    (
        {"cuda": "12.9.0", "driver": "575.51.03"},
        "https://developer.nvidia.com/cuda-12-9-0-download-archive "
        "(cuda_12.9.0_575.51.03_linux.run)",
    ),
    (
        {"cuda": "13.0.0", "driver": "580.65.06"},
        "https://developer.nvidia.com/cuda-13-0-0-download-archive "
        "(cuda_13.0.0_580.65.06_linux.run)",
    ),
    # torch 2.4.0+cu121 wheels depend on nvidia-cudnn-cu12==9.1.0.70 and the CUDA 12.1 runtime
    ({"pytorch": "2.4.0+cu121", "cudnn": "9.1.0.70"}, "https://pypi.org/project/torch/2.4.0/"),
    # TensorFlow 2.15 is tested with CUDA 12.2 and cuDNN 8.9
    (
        {"tensorflow": "2.15.0", "cuda": "12.2", "cudnn": "8.9"},
        "https://www.tensorflow.org/install/source#gpu",
    ),
]


def _real_cases() -> list[dict[str, str | None]]:
    seen: dict[str, dict[str, str | None]] = {}
    for obs in load_snapshot().observations:
        stack = obs.stack
        seen.setdefault(stack.stack_id, stack_components(stack))
    return [*seen.values(), *(comps for comps, _ in DOCUMENTED)]


REAL = _real_cases()
RULES = load_rules()


@pytest.mark.parametrize("rule", RULES.rules, ids=lambda r: r.id)
def test_every_rule_matches_a_real_case(rule) -> None:  # type: ignore[no-untyped-def]
    matching = [c for c in REAL if rule.applies(component_versions(c))]
    assert matching, f"rule {rule.id} matches no real configuration"
    # a matching real case that passes shows the rule is not over-broad
    assert any(rule.check(component_versions(c)) is None for c in matching)


def test_packaged_rules_cover_the_three_kinds() -> None:
    ids = {r.id for r in RULES.rules}
    assert {
        "cuda11-minor-compat-driver",
        "cuda12-minor-compat-driver",
        "cuda13-minor-compat-driver",
    } <= ids
    assert any(i.startswith("cudnn") for i in ids)
    assert any(i.startswith(("tensorrt", "tensorflow", "framework")) for i in ids)


def test_real_violation_cuda12_on_an_r515_driver() -> None:
    # MLPerf Inference v3.0, A100-PCIe-80GBx8_TRT: CUDA 12.0 reported with driver 515.65.01
    found = RULES.check_components(
        {"cuda": "12.0", "driver": "515.65.01", "cudnn": "8.8.0", "tensorrt": "8.6.0"}
    )
    by_rule = {v.rule: v for v in found}
    assert by_rule["cuda12-minor-compat-driver"].severity is Severity.ERROR
    assert "driver 515.65.01 " in by_rule["cuda12-minor-compat-driver"].message
    assert by_rule["cuda12-0-release-driver"].severity is Severity.WARNING


def test_real_good_configuration_passes() -> None:
    # MLPerf Inference v1.1, Alibaba A100-SXM-80GBx1_TRT: TensorRT 8.0.1.6, CUDA 11.3, cuDNN
    # 8.2.1.32, driver 470.57.02
    assert (
        RULES.check_components(
            {"cuda": "11.3", "driver": "470.57.02", "cudnn": "8.2.1.32", "tensorrt": "8.0.1.6"}
        )
        == []
    )


def test_minor_version_compatibility_is_a_warning_not_an_error() -> None:
    # MLPerf v2.1 H100-SXM-80GBx1_TRT: CUDA 11.8 with driver 520.48 (below 11.8 GA's 520.61.05,
    # above 450.80.02)
    found = RULES.check_components({"cuda": "11.8", "driver": "520.48"})
    assert [v.rule for v in found] == ["cuda11-8-release-driver"]
    assert found[0].severity is Severity.WARNING


def test_cudnn_build_needs_its_cuda_major() -> None:
    found = RULES.check_components({"cudnn": "8.2.1", "cuda": "12.0"})
    assert [v.rule for v in found] == ["cudnn8-pre88-cuda-10-11"]


def test_wheel_cuda_build_stands_in_for_missing_cuda_and_must_match_major() -> None:
    versions = component_versions({"pytorch": "2.1.0+cu121"})
    assert str(versions["cuda"]) == "12.1"
    found = RULES.check_components({"pytorch": "2.1.0+cu118", "cuda": "12.1"})
    assert [v.rule for v in found] == ["framework-wheel-cuda-major"]
    # an old driver breaks the wheel's bundled CUDA 12 runtime
    assert "cuda12-minor-compat-driver" in {
        v.rule for v in RULES.check_components({"pytorch": "2.1.0+cu121", "driver": "470.57.02"})
    }


def test_unknown_components_never_count_as_broken() -> None:
    assert RULES.check_components({"cuda": "12.0"}) == []
    assert RULES.check_components({"driver": "not-a-version", "cuda": "12.0"}) == []


def test_malformed_rules_are_refused_with_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nrules:\n  - id: x\n    description: d\n    when: {cuda: '>>11'}\n"
        "    require: {driver: '>=1'}\n    source: https://example.org\n"
    )
    with pytest.raises(InvalidInput, match=r"rules\.0\.when.*>>11"):
        load_rules(bad)
    with pytest.raises(InvalidInput, match="needs 'require' or 'same_major'"):
        load_rules(
            [
                {
                    "id": "y",
                    "description": "d",
                    "when": {"cuda": ">=11"},
                    "source": "https://example.org",
                }
            ]
        )
    rule = {
        "id": "z",
        "description": "d",
        "when": {"cuda": ">=11"},
        "require": {"driver": ">=1"},
        "source": "https://example.org",
    }
    with pytest.raises(InvalidInput, match="duplicate rule ids"):
        load_rules([rule, rule])
    with pytest.raises(InvalidInput, match="source"):
        load_rules([{**rule, "source": "not a url"}])
