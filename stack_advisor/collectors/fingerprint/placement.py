"""Bare metal, PCI passthrough or vGPU: NVML's virtualization mode checked against hypervisor
evidence (the ``hypervisor`` CPU flag, DMI vendor/product). When they disagree the placement is
marked inconsistent with the evidence, never silently called bare metal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stack_advisor.collectors.fingerprint.sources import FileRoot, fact, known, unknown
from stack_advisor.schema.models import Placement, PlacementKind

# Substrings of DMI sys_vendor / product_name that only a virtual machine shows.
VM_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("qemu", "qemu/kvm"),
    ("kvm", "kvm"),
    ("vmware", "vmware"),
    ("virtualbox", "virtualbox"),
    ("innotek", "virtualbox"),
    ("openstack", "openstack"),
    ("xen", "xen"),
    ("firecracker", "firecracker"),
    ("bochs", "bochs"),
    ("virtual machine", "hyper-v"),
    ("google compute engine", "gce"),
    ("parallels", "parallels"),
)
# Cloud vendors that also sell bare metal: a hypervisor only with the CPU flag (e.g. EC2 *.metal).
CLOUD_VENDORS: tuple[tuple[str, str], ...] = (
    ("amazon ec2", "aws-nitro"),
    ("google", "gce"),
    ("microsoft corporation", "hyper-v"),
    ("alibaba", "alibaba"),
    ("oracle", "oci"),
)
DMI_FILES = ("sys_vendor", "product_name", "board_vendor", "bios_vendor")


@dataclass
class HypervisorEvidence:
    present: bool
    name: str | None
    evidence: list[str] = field(default_factory=list)


def read_dmi(root: FileRoot) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in DMI_FILES:
        path = f"/sys/class/dmi/id/{name}"
        value = root.first_line(path)
        out[f"dmi_{name}"] = fact(value, path) if value else unknown(path, "not readable")
    hv_type = root.first_line("/sys/hypervisor/type")
    out["sys_hypervisor_type"] = (
        fact(hv_type, "/sys/hypervisor/type")
        if hv_type
        else unknown("/sys/hypervisor/type", "not present")
    )
    return out


def detect_hypervisor(cpu_flag: bool | None, dmi: dict[str, Any]) -> HypervisorEvidence:
    evidence: list[str] = []
    texts = {k: str(known(v) or "") for k, v in dmi.items()}
    joined = " ".join(texts.get(f"dmi_{n}", "") for n in DMI_FILES).lower()
    vm_name = next((name for sig, name in VM_SIGNATURES if sig in joined), None)
    cloud_name = next((name for sig, name in CLOUD_VENDORS if sig in joined), None)
    sys_type = texts.get("sys_hypervisor_type") or None
    if cpu_flag:
        evidence.append("/proc/cpuinfo has the 'hypervisor' flag")
    if vm_name:
        evidence.append(
            f"DMI names a virtual machine ({vm_name}): "
            f"{texts.get('dmi_sys_vendor')!r} / {texts.get('dmi_product_name')!r}"
        )
    if sys_type:
        evidence.append(f"/sys/hypervisor/type = {sys_type}")
    present = bool(cpu_flag or vm_name or sys_type)
    if cloud_name and not present:
        evidence.append(
            f"DMI vendor is {texts.get('dmi_sys_vendor')!r} (a cloud) but no hypervisor flag: bare "
            "metal"
        )
    name = (
        vm_name
        or (cloud_name if present else None)
        or sys_type
        or ("unidentified" if present else None)
    )
    if cpu_flag is None and not present:
        evidence.append("CPU flags unreadable: hypervisor presence unknown")
    return HypervisorEvidence(present=present, name=name, evidence=evidence)


def classify(
    modes: list[str | None], hv: HypervisorEvidence, gpu_names: list[str | None]
) -> Placement:
    """The placement from per-GPU NVML virtualization modes (None = unreadable) and the
    hypervisor evidence. No GPU: bare metal without a hypervisor, unknown inside one."""
    evidence = list(hv.evidence)
    if not modes:
        evidence.append("no NVIDIA GPU visible to NVML")
        if hv.present:
            return Placement(kind=PlacementKind.UNKNOWN, hypervisor=hv.name, evidence=evidence)
        return Placement(kind=PlacementKind.BARE_METAL, evidence=evidence)
    evidence.append(
        "NVML virtualization mode: "
        + ", ".join(f"GPU{i}={m or 'unreadable'}" for i, m in enumerate(modes))
    )
    distinct = set(modes)
    if len(distinct) > 1 or None in distinct:
        return Placement(
            kind=PlacementKind.UNKNOWN,
            hypervisor=hv.name,
            evidence=[*evidence, "GPUs disagree or a mode is unreadable"],
            consistent=False,
        )
    return _from_mode(modes[0], hv, gpu_names, evidence)


def _from_mode(
    mode: str | None, hv: HypervisorEvidence, gpu_names: list[str | None], evidence: list[str]
) -> Placement:
    """The placement from the one mode every GPU reports, checked against the hypervisor
    evidence."""
    if mode == "VGPU":
        profile = gpu_names[0] or None
        if not hv.present:
            evidence.append("NVML says vGPU but no hypervisor evidence was found")
        return Placement(
            kind=PlacementKind.VGPU,
            hypervisor=hv.name,
            vgpu_profile=profile,
            evidence=evidence,
            consistent=hv.present,
        )
    if mode == "PASSTHROUGH":
        if not hv.present:
            evidence.append(
                "NVML says passthrough while the hypervisor hides itself (no flag, no DMI sign)"
            )
        return Placement(kind=PlacementKind.PASSTHROUGH, hypervisor=hv.name, evidence=evidence)
    if mode in ("HOST_VGPU", "HOST_VSGA"):
        evidence.append(f"NVML {mode}: this is the hypervisor host itself")
        return Placement(
            kind=PlacementKind.BARE_METAL, evidence=evidence, consistent=not hv.present
        )
    if mode == "NONE":
        if hv.present:
            evidence.append(
                "NVML says NONE (not virtualized) while a hypervisor is present: inconsistent"
            )
            return Placement(
                kind=PlacementKind.UNKNOWN, hypervisor=hv.name, evidence=evidence, consistent=False
            )
        return Placement(kind=PlacementKind.BARE_METAL, evidence=evidence)
    return Placement(
        kind=PlacementKind.UNKNOWN,
        hypervisor=hv.name,
        evidence=[*evidence, f"unrecognised mode {mode}"],
        consistent=False,
    )
