"""A narrow facade over NVML (nvidia-ml-py), and a recorded-answer replay of it.

Readers call only these methods, so a test (or a machine without a GPU) can feed the answers a
real NVML gave (``record`` writes them; ``RecordedNvml`` replays them). Any NVML call may raise
``NvmlError``; its text is kept as the reason a field is unknown or "not supported".
"""

from __future__ import annotations

from typing import Any, Protocol

NVLINK_MAX_LINKS = 18
VIRTUALIZATION_MODES = {0: "NONE", 1: "PASSTHROUGH", 2: "VGPU", 3: "HOST_VGPU", 4: "HOST_VSGA"}


class NvmlError(Exception):
    """An NVML call failed (library missing, no GPU, not supported on this GPU ...)."""


class Nvml(Protocol):
    def driver_version(self) -> str: ...
    def cuda_driver_version(self) -> int: ...
    def device_count(self) -> int: ...
    def name(self, index: int) -> str: ...
    def memory_total_bytes(self, index: int) -> int: ...
    def compute_capability(self, index: int) -> tuple[int, int]: ...
    def mig_mode(self, index: int) -> tuple[int, int]: ...
    def pcie_link(self, index: int) -> dict[str, int]: ...
    def nvlink_active(self, index: int) -> int: ...
    def virtualization_mode(self, index: int) -> int: ...
    def pci_bus_id(self, index: int) -> str: ...
    def topology_level(self, index: int, peer: int) -> int: ...


class PynvmlFacade:
    """The real NVML. ``open`` raises NvmlError when the library or a GPU is missing."""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError as exc:
            raise NvmlError(f"nvidia-ml-py is not installed: {exc}") from None
        self._nv = pynvml
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded ...
            raise NvmlError(f"nvmlInit failed: {exc}") from None

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._nv, fn)(*args)
        except Exception as exc:
            raise NvmlError(f"{fn}: {exc}") from None

    def _handle(self, index: int) -> Any:
        return self._call("nvmlDeviceGetHandleByIndex", index)

    def driver_version(self) -> str:
        value = self._call("nvmlSystemGetDriverVersion")
        return value.decode() if isinstance(value, bytes) else str(value)

    def cuda_driver_version(self) -> int:
        return int(self._call("nvmlSystemGetCudaDriverVersion"))

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def name(self, index: int) -> str:
        value = self._call("nvmlDeviceGetName", self._handle(index))
        return value.decode() if isinstance(value, bytes) else str(value)

    def memory_total_bytes(self, index: int) -> int:
        return int(self._call("nvmlDeviceGetMemoryInfo", self._handle(index)).total)

    def compute_capability(self, index: int) -> tuple[int, int]:
        major, minor = self._call("nvmlDeviceGetCudaComputeCapability", self._handle(index))
        return int(major), int(minor)

    def mig_mode(self, index: int) -> tuple[int, int]:
        current, pending = self._call("nvmlDeviceGetMigMode", self._handle(index))
        return int(current), int(pending)

    def pcie_link(self, index: int) -> dict[str, int]:
        h = self._handle(index)
        return {
            "gen": int(self._call("nvmlDeviceGetCurrPcieLinkGeneration", h)),
            "width": int(self._call("nvmlDeviceGetCurrPcieLinkWidth", h)),
            "max_gen": int(self._call("nvmlDeviceGetMaxPcieLinkGeneration", h)),
            "max_width": int(self._call("nvmlDeviceGetMaxPcieLinkWidth", h)),
        }

    def nvlink_active(self, index: int) -> int:
        h = self._handle(index)
        active = 0
        for link in range(NVLINK_MAX_LINKS):
            try:
                state = self._nv.nvmlDeviceGetNvLinkState(h, link)
            except Exception as exc:
                if link == 0:
                    raise NvmlError(f"nvmlDeviceGetNvLinkState: {exc}") from None
                break
            active += int(state == 1)
        return active

    def virtualization_mode(self, index: int) -> int:
        return int(self._call("nvmlDeviceGetVirtualizationMode", self._handle(index)))

    def pci_bus_id(self, index: int) -> str:
        value = self._call("nvmlDeviceGetPciInfo", self._handle(index)).busId
        return value.decode() if isinstance(value, bytes) else str(value)

    def topology_level(self, index: int, peer: int) -> int:
        return int(
            self._call(
                "nvmlDeviceGetTopologyCommonAncestor", self._handle(index), self._handle(peer)
            )
        )


class RecordedNvml:
    """Replays answers recorded from a real NVML. An answer ``{"error": "..."}`` raises
    NvmlError with that text, as the real call did."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def _get(self, key: str, index: int | None = None) -> Any:
        source = self.answers if index is None else self.answers["devices"][index]
        if key not in source:
            raise NvmlError(f"{key}: not recorded")
        value = source[key]
        if isinstance(value, dict) and set(value) == {"error"}:
            raise NvmlError(value["error"])
        return value

    def driver_version(self) -> str:
        return str(self._get("driver_version"))

    def cuda_driver_version(self) -> int:
        return int(self._get("cuda_driver_version"))

    def device_count(self) -> int:
        if "error" in self.answers:
            raise NvmlError(self.answers["error"])
        return len(self.answers.get("devices", []))

    def name(self, index: int) -> str:
        return str(self._get("name", index))

    def memory_total_bytes(self, index: int) -> int:
        return int(self._get("memory_total_bytes", index))

    def compute_capability(self, index: int) -> tuple[int, int]:
        major, minor = self._get("compute_capability", index)
        return int(major), int(minor)

    def mig_mode(self, index: int) -> tuple[int, int]:
        current, pending = self._get("mig_mode", index)
        return int(current), int(pending)

    def pcie_link(self, index: int) -> dict[str, int]:
        return dict(self._get("pcie_link", index))

    def nvlink_active(self, index: int) -> int:
        return int(self._get("nvlink_active", index))

    def virtualization_mode(self, index: int) -> int:
        return int(self._get("virtualization_mode", index))

    def pci_bus_id(self, index: int) -> str:
        return str(self._get("pci_bus_id", index))

    def topology_level(self, index: int, peer: int) -> int:
        levels = self._get("topology_levels", index)  # one answer per peer index (None for itself)
        if not isinstance(levels, list) or peer >= len(levels) or levels[peer] is None:
            raise NvmlError(
                f"nvmlDeviceGetTopologyCommonAncestor: not recorded for GPU{index}-GPU{peer}"
            )
        return int(levels[peer])


def _answer(fn: Any, *args: Any) -> Any:
    try:
        value = fn(*args)
    except NvmlError as exc:
        return {"error": str(exc)}
    return list(value) if isinstance(value, tuple) else value


def record(nvml: Nvml) -> dict[str, Any]:
    """Everything the readers ask, as answered by ``nvml`` (for RecordedNvml)."""
    out: dict[str, Any] = {
        "driver_version": _answer(nvml.driver_version),
        "cuda_driver_version": _answer(nvml.cuda_driver_version),
    }
    try:
        count = nvml.device_count()
    except NvmlError as exc:
        return {**out, "error": str(exc)}
    out["devices"] = [
        {
            key: _answer(getattr(nvml, key), i)
            for key in (
                "name",
                "memory_total_bytes",
                "compute_capability",
                "mig_mode",
                "pcie_link",
                "nvlink_active",
                "virtualization_mode",
                "pci_bus_id",
            )
        }
        for i in range(count)
    ]
    for i, device in enumerate(out["devices"]):
        levels = [None if j == i else _answer(nvml.topology_level, i, j) for j in range(count)]
        device["topology_levels"] = [v if isinstance(v, int) else None for v in levels]
    return out
