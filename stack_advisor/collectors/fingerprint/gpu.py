"""Per-GPU facts from NVML: model, memory, compute capability, MIG mode, PCIe link, NVLink,
virtualization mode. Each with its NVML call as the source; unknown when the call fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stack_advisor.collectors.fingerprint.nvml import VIRTUALIZATION_MODES, Nvml, NvmlError
from stack_advisor.collectors.fingerprint.sources import fact, unknown

MIG_MODES = {0: "disabled", 1: "enabled"}


def _read(
    source: str, get: Callable[[], Any], convert: Callable[[Any], Any] = lambda v: v
) -> dict[str, Any]:
    try:
        return fact(convert(get()), source)
    except NvmlError as exc:
        return unknown(source, str(exc))


def _mig(value: tuple[int, int]) -> str:
    current, pending = value
    text = MIG_MODES.get(current, str(current))
    return text if current == pending else f"{text} (pending {MIG_MODES.get(pending, pending)})"


def _not_supported_ok(source: str, get: Callable[[], Any]) -> dict[str, Any]:
    """NVML's "Not Supported" is a real answer (e.g. a PCIe card has no NVLink), not unknown."""
    try:
        return fact(get(), source)
    except NvmlError as exc:
        if "not supported" in str(exc).lower():
            return fact("not supported", source)
        return unknown(source, str(exc))


def _mig_field(nvml: Nvml, i: int) -> dict[str, Any]:
    try:
        return fact(_mig(nvml.mig_mode(i)), "nvmlDeviceGetMigMode")
    except NvmlError as exc:
        if "not supported" in str(exc).lower():  # a real answer: this GPU has no MIG
            return fact("not supported", "nvmlDeviceGetMigMode")
        return unknown("nvmlDeviceGetMigMode", str(exc))


def read_gpus(nvml: Nvml | None, nvml_error: str | None = None) -> dict[str, Any]:
    """``driver``, ``cuda_driver_api`` and a list ``gpus`` of per-device facts."""
    if nvml is None:
        reason = nvml_error or "NVML not available"
        return {
            "driver": unknown("nvmlSystemGetDriverVersion", reason),
            "cuda_driver_api": unknown("nvmlSystemGetCudaDriverVersion", reason),
            "gpu_count": unknown("nvmlDeviceGetCount", reason),
            "gpus": [],
        }
    out: dict[str, Any] = {
        "driver": _read("nvmlSystemGetDriverVersion", nvml.driver_version),
        "cuda_driver_api": _read(
            "nvmlSystemGetCudaDriverVersion",
            nvml.cuda_driver_version,
            lambda v: f"{v // 1000}.{v % 1000 // 10}",
        ),
    }
    try:
        count = nvml.device_count()
    except NvmlError as exc:
        out["gpu_count"] = unknown("nvmlDeviceGetCount", str(exc))
        out["gpus"] = []
        return out
    out["gpu_count"] = fact(count, "nvmlDeviceGetCount")
    out["gpus"] = [_gpu_facts(nvml, i) for i in range(count)]
    return out


def _gpu_facts(nvml: Nvml, i: int) -> dict[str, Any]:
    """One device's facts; each getter is called at once, inside ``_read``."""
    return {
        "index": i,
        "model": _read("nvmlDeviceGetName", lambda: nvml.name(i)),
        "memory_mib": _read(
            "nvmlDeviceGetMemoryInfo.total",
            lambda: nvml.memory_total_bytes(i),
            lambda v: v // (1 << 20),
        ),
        "compute_capability": _read(
            "nvmlDeviceGetCudaComputeCapability",
            lambda: nvml.compute_capability(i),
            lambda v: f"{v[0]}.{v[1]}",
        ),
        "mig_mode": _mig_field(nvml, i),
        "pcie_link": _read(
            "nvmlDeviceGetCurr/MaxPcieLinkGeneration/Width", lambda: nvml.pcie_link(i)
        ),
        "nvlink_active_links": _not_supported_ok(
            "nvmlDeviceGetNvLinkState", lambda: nvml.nvlink_active(i)
        ),
        "virtualization_mode": _read(
            "nvmlDeviceGetVirtualizationMode",
            lambda: nvml.virtualization_mode(i),
            lambda v: VIRTUALIZATION_MODES.get(v, f"UNKNOWN({v})"),
        ),
    }
