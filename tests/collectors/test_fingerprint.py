"""Fingerprint parsers and placement, fed recorded /proc, DMI and NVML answers.

``h100-firecracker`` was recorded on a real H100 VM (Firecracker) with
``python -m stack_advisor.collectors.fingerprint --record-nvml``; the other placements use answers
in the same recorded format with the values NVML gives on such machines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.collectors.fingerprint import FileRoot, RecordedNvml, fingerprint_host
from stack_advisor.collectors.fingerprint.cpu import parse_cpuinfo
from stack_advisor.collectors.fingerprint.kube import parse_labels_env, parse_labels_file
from stack_advisor.schema.models import PlacementKind

DATA = Path(__file__).resolve().parents[1] / "data" / "fingerprint"
H100 = DATA / "h100-firecracker"
X86_CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t: 0
flags\t\t: fpu sse4_2 avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 {hv}

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
core id\t: 0
flags\t\t: fpu sse4_2 avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 {hv}
"""


def gpu(mode: int, name: str = "NVIDIA A100-SXM4-80GB") -> dict[str, Any]:
    return {
        "name": name,
        "memory_total_bytes": 85899345920,
        "compute_capability": [8, 0],
        "mig_mode": [0, 0],
        "pcie_link": {"gen": 4, "width": 16, "max_gen": 4, "max_width": 16},
        "nvlink_active": 12,
        "virtualization_mode": mode,
    }


def machine(tmp_path: Path, hypervisor: bool, vendor: str = "", product: str = "") -> FileRoot:
    (tmp_path / "proc").mkdir(parents=True)
    (tmp_path / "proc" / "cpuinfo").write_text(
        X86_CPUINFO.format(hv="hypervisor" if hypervisor else "")
    )
    (tmp_path / "proc" / "meminfo").write_text("MemTotal:       2097152 kB\n")
    dmi = tmp_path / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    if vendor:
        (dmi / "sys_vendor").write_text(vendor + "\n")
        (dmi / "product_name").write_text(product + "\n")
    for n in (0, 1):
        (tmp_path / "sys" / "devices" / "system" / "node" / f"node{n}").mkdir(parents=True)
    return FileRoot(tmp_path)


def fp(root: FileRoot, answers: dict[str, Any] | None, env: dict[str, str] | None = None) -> Any:
    nvml = RecordedNvml(answers) if answers is not None else None
    return fingerprint_host(root=root, nvml=nvml, env=env or {}, hostname="node-a", libraries=False)


def nvml_answers(*modes: int, name: str = "NVIDIA A100-SXM4-80GB") -> dict[str, Any]:
    return {
        "driver_version": "550.54.15",
        "cuda_driver_version": 12040,
        "devices": [gpu(m, name) for m in modes],
    }


def test_parse_cpuinfo() -> None:
    info = parse_cpuinfo(X86_CPUINFO.format(hv="hypervisor"))
    assert (
        info["model"] == "Intel(R) Xeon(R) Platinum 8480+"
        and info["logical"] == 2
        and info["physical"] == 1
    )
    assert {"avx512f", "amx_bf16", "hypervisor"} <= info["flags"]


def test_recorded_h100_firecracker_vm_is_passthrough() -> None:
    result = fp(FileRoot(H100), json.loads((H100 / "nvml.json").read_text()))
    assert result.placement.kind is PlacementKind.PASSTHROUGH and result.placement.consistent
    assert any("hypervisor" in e for e in result.placement.evidence)
    assert (
        result.accelerator.model == "NVIDIA H100 80GB HBM3"
        and result.accelerator.compute_capability == "9.0"
    )
    assert result.accelerator.memory_mib == 81559
    assert result.stack.driver == "580.159.04" and result.stack.extra["cuda_driver_api"] == "13.0"
    g = result.raw["nvidia"]["gpus"][0]
    assert (
        g["mig_mode"]["value"] == "disabled"
        and g["nvlink_active_links"]["value"] == "not supported"
    )
    assert g["pcie_link"]["value"]["gen"] == 5
    assert result.host.cpu_model == "Intel(R) Xeon(R) Processor" and result.host.cores == 16


def test_bare_metal(tmp_path: Path) -> None:
    result = fp(
        machine(tmp_path, hypervisor=False, vendor="Supermicro", product="SYS-821GE"),
        nvml_answers(0, 0),
    )
    assert result.placement.kind is PlacementKind.BARE_METAL and result.placement.consistent
    assert result.host.numa_nodes == 2 and result.host.memory_mib == 2048
    assert "amx_tile" in result.host.cpu_flags and "hypervisor" not in result.host.cpu_flags


def test_passthrough_under_kvm(tmp_path: Path) -> None:
    result = fp(
        machine(tmp_path, hypervisor=True, vendor="QEMU", product="Standard PC (Q35 + ICH9, 2009)"),
        nvml_answers(1),
    )
    assert (
        result.placement.kind is PlacementKind.PASSTHROUGH
        and result.placement.hypervisor == "qemu/kvm"
    )


def test_vgpu_keeps_the_profile(tmp_path: Path) -> None:
    result = fp(
        machine(
            tmp_path, hypervisor=True, vendor="VMware, Inc.", product="VMware Virtual Platform"
        ),
        nvml_answers(2, name="GRID A100-40C"),
    )
    assert (
        result.placement.kind is PlacementKind.VGPU
        and result.placement.vgpu_profile == "GRID A100-40C"
    )
    assert result.placement.hypervisor == "vmware" and result.placement.consistent


def test_host_vgpu_is_the_hypervisor_host(tmp_path: Path) -> None:
    result = fp(machine(tmp_path, hypervisor=False), nvml_answers(3))
    assert result.placement.kind is PlacementKind.BARE_METAL
    assert any("HOST_VGPU" in e for e in result.placement.evidence)


def test_none_under_a_hypervisor_is_inconsistent(tmp_path: Path) -> None:
    result = fp(
        machine(tmp_path, hypervisor=True, vendor="OpenStack Foundation", product="OpenStack Nova"),
        nvml_answers(0),
    )
    assert result.placement.kind is PlacementKind.UNKNOWN and result.placement.consistent is False
    assert result.placement.hypervisor == "openstack"
    assert any("inconsistent" in e for e in result.placement.evidence)


def test_ec2_metal_is_bare_metal_but_ec2_vm_is_not(tmp_path: Path) -> None:
    metal = fp(
        machine(tmp_path / "a", hypervisor=False, vendor="Amazon EC2", product="p4d.metal"),
        nvml_answers(0),
    )
    assert metal.placement.kind is PlacementKind.BARE_METAL
    vm = fp(
        machine(tmp_path / "b", hypervisor=True, vendor="Amazon EC2", product="p4d.24xlarge"),
        nvml_answers(1),
    )
    assert vm.placement.kind is PlacementKind.PASSTHROUGH and vm.placement.hypervisor == "aws-nitro"


def test_gpus_that_disagree_are_inconsistent(tmp_path: Path) -> None:
    result = fp(machine(tmp_path, hypervisor=True), nvml_answers(1, 0))
    assert result.placement.consistent is False


def test_no_gpu_gives_a_cpu_accelerator_and_unknown_fields(tmp_path: Path) -> None:
    result = fp(machine(tmp_path, hypervisor=False), None)
    assert (
        result.accelerator.model == "CPU Intel(R) Xeon(R) Platinum 8480+"
        and result.accelerator.vendor == "cpu"
    )
    assert result.stack.driver is None and result.raw["nvidia"]["driver"]["value"] == "unknown"
    assert (
        result.raw["system"]["os"]["value"] == "unknown"
    )  # no /etc/os-release in the recorded tree
    assert result.placement.kind is PlacementKind.BARE_METAL


def test_unreadable_files_are_unknown_with_the_source(tmp_path: Path) -> None:
    result = fp(FileRoot(tmp_path), None)
    assert result.raw["cpu"]["cpu_model"] == {
        "value": "unknown",
        "source": "/proc/cpuinfo",
        "error": "not readable",
    }
    assert result.accelerator.model == "CPU unknown" and result.host.cpu_model is None
    assert any("unknown" in e for e in result.placement.evidence)


def test_nvml_errors_become_unknown_fields(tmp_path: Path) -> None:
    answers = nvml_answers(0)
    answers["devices"][0]["compute_capability"] = {
        "error": "nvmlDeviceGetCudaComputeCapability: Unknown Error"
    }
    result = fp(machine(tmp_path, hypervisor=False), answers)
    assert result.accelerator.compute_capability is None
    assert "Unknown Error" in result.raw["nvidia"]["gpus"][0]["compute_capability"]["error"]


def test_kubernetes_node_name_and_labels(tmp_path: Path) -> None:
    root = machine(tmp_path, hypervisor=False)
    (tmp_path / "etc" / "podinfo").mkdir(parents=True)
    (tmp_path / "etc" / "podinfo" / "labels").write_text(
        'app="collector"\nnvidia.com/gpu.product="H100"\n'
    )
    result = fp(root, None, env={"NODE_NAME": "gpu-node-7", "KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert (
        result.host.name == "gpu-node-7" and result.host.labels["nvidia.com/gpu.product"] == "H100"
    )
    result = fp(root, None, env={"ADVISOR_NODE_LABELS": "zone=a,pool=gpu"})
    assert result.host.labels == {"zone": "a", "pool": "gpu"} and result.host.name == "node-a"


def test_a_plan_job_records_its_image_with_the_stack(tmp_path: Path) -> None:
    """A collection plan's Job sets ADVISOR_IMAGE; the stack carries it, so the advisor's
    placement snippets can name the image the stack was measured in."""
    root = machine(tmp_path, hypervisor=False)
    image = "ghcr.io/stack-advisor/collector:torch2.5.1-cuda12.4.1"
    assert fp(root, None, env={"ADVISOR_IMAGE": image}).stack.image == image
    assert fp(root, None, env={}).stack.image is None


def test_label_parsers() -> None:
    assert parse_labels_file('a="x=y"\nb="2"\n') == {"a": "x=y", "b": "2"}
    assert parse_labels_env('{"a": 1}') == {"a": "1"}
    with pytest.raises(ValueError, match="not key=value"):
        parse_labels_env("novalue")
