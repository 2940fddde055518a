"""Fingerprint of the node a collector runs on: software stack, accelerator, host, placement.

Every raw field is ``{"value": ..., "source": ...}`` and ``unknown`` (with the reason) when it
could not be read; the domain models built from it leave such fields ``None``. Readers take a
``FileRoot`` and an NVML facade, so tests feed recorded /proc, DMI and NVML answers.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stack_advisor.collectors.fingerprint.cpu import read_cpu
from stack_advisor.collectors.fingerprint.gpu import read_gpus
from stack_advisor.collectors.fingerprint.kube import read_kube
from stack_advisor.collectors.fingerprint.nvml import Nvml, NvmlError, PynvmlFacade, RecordedNvml
from stack_advisor.collectors.fingerprint.placement import classify, detect_hypervisor, read_dmi
from stack_advisor.collectors.fingerprint.software import (
    read_frameworks,
    read_libraries,
    read_os,
    torch_facts,
)
from stack_advisor.collectors.fingerprint.sources import FileRoot, fact, known
from stack_advisor.collectors.fingerprint.topology import read_topology, run_topo_matrix
from stack_advisor.schema.models import Accelerator, Host, Placement, SoftwareStack
from stack_advisor.schema.topology import HostTopology

PRIMARY_FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "numpy")


@dataclass
class Fingerprint:
    stack: SoftwareStack
    accelerator: Accelerator
    host: Host
    placement: Placement
    raw: dict[str, Any]


def open_nvml() -> tuple[Nvml | None, str | None]:
    """The real NVML, or (None, why not)."""
    try:
        return PynvmlFacade(), None
    except NvmlError as exc:
        return None, str(exc)


def fingerprint_host(
    root: FileRoot | None = None,
    nvml: Nvml | str | None = "auto",
    env: Mapping[str, str] | None = None,
    hostname: str | None = None,
    libraries: bool = True,
    topo_text: str | bool | None = True,
) -> Fingerprint:
    """Read this machine (or the recorded one). ``nvml="auto"`` opens the real NVML; ``None``
    means there is none. ``libraries=False`` skips importing frameworks (CUDA/cuDNN/NCCL).
    ``topo_text``: ``nvidia-smi topo -m``'s text; True runs the tool where installed."""
    root = root or FileRoot()
    env = os.environ if env is None else env
    nvml_error: str | None = None
    if nvml == "auto":
        nvml, nvml_error = open_nvml()
    assert not isinstance(nvml, str)
    raw: dict[str, Any] = {}
    raw["cpu"] = read_cpu(root)
    raw["dmi"] = read_dmi(root)
    raw["system"] = read_os(root)
    raw["nvidia"] = read_gpus(nvml, nvml_error)
    raw["frameworks"] = read_frameworks()
    raw["libraries"] = read_libraries(raw["frameworks"]) if libraries else {}
    raw["kubernetes"] = read_kube(env, root)
    node = known(raw["kubernetes"]["node_name"])
    raw["hostname"] = (
        fact(node, "env NODE_NAME")
        if node
        else fact(hostname or socket.gethostname(), "socket.gethostname()")
    )
    hv = detect_hypervisor(known(raw["cpu"].get("cpu_hypervisor_flag", {})), raw["dmi"])
    gpus = raw["nvidia"]["gpus"]
    placement = classify(
        [known(g["virtualization_mode"]) for g in gpus], hv, [known(g["model"]) for g in gpus]
    )
    raw["placement"] = {
        "hypervisor_present": hv.present,
        "hypervisor": hv.name,
        "evidence": placement.evidence,
    }
    topo = run_topo_matrix() if topo_text is True and gpus else (topo_text or None)
    topology = read_topology(
        root, nvml, topo if isinstance(topo, str) else None, virtual=hv.present
    )
    raw["topology"] = fact(
        topology.model_dump(mode="json"),
        "sysfs node/pci" + (", nvidia-smi topo -m" if topo else ""),
    )
    return Fingerprint(
        stack=_stack(raw),
        accelerator=_accelerator(raw),
        host=_host(raw),
        placement=placement,
        raw=raw,
    )


def _stack(raw: dict[str, Any]) -> SoftwareStack:
    frameworks = {k: known(v) for k, v in raw["frameworks"].items() if known(v)}
    primary = next((f for f in PRIMARY_FRAMEWORKS if f in frameworks), None)
    libs = raw["libraries"].get(primary or "", {})
    has_gpu = bool(raw["nvidia"]["gpus"])
    extra = {k: v for k, v in frameworks.items() if k != primary}
    cuda_api = known(raw["nvidia"]["cuda_driver_api"])
    if cuda_api:
        extra["cuda_driver_api"] = cuda_api
    return SoftwareStack(
        driver=known(raw["nvidia"]["driver"]),
        cuda=known(libs.get("cuda", {})) if has_gpu else None,
        cudnn=known(libs.get("cudnn", {})) if has_gpu else None,
        nccl=known(libs.get("nccl", {})) if has_gpu else None,
        framework=primary,
        framework_version=frameworks.get(primary) if primary else None,
        python=known(raw["system"]["python"]),
        extra=extra,
        image=known(raw["kubernetes"].get("image", {})),
    )


def _accelerator(raw: dict[str, Any]) -> Accelerator:
    gpus = raw["nvidia"]["gpus"]
    if gpus and known(gpus[0]["model"]):
        g = gpus[0]
        # The runners measure one device, so count is 1; gpu_count in the raw fingerprint says how
        # many.
        return Accelerator(
            model=known(g["model"]),
            vendor="nvidia",
            count=1,
            memory_mib=known(g["memory_mib"]),
            compute_capability=known(g["compute_capability"]),
        )
    cpu_model = known(raw["cpu"]["cpu_model"]) or "unknown"
    return Accelerator(model=f"CPU {cpu_model}", vendor="cpu", count=1)


def _host(raw: dict[str, Any]) -> Host:
    cpu = raw["cpu"]
    labels = known(raw["kubernetes"]["labels"]) or {}
    return Host(
        name=known(raw["hostname"]) or "unknown",
        cpu_model=known(cpu["cpu_model"]),
        cores=known(cpu["cpu_logical"]),
        cpu_flags=known(cpu["cpu_flags"]) or [],
        numa_nodes=known(cpu["numa_nodes"]),
        memory_mib=known(cpu["memory_mib"]),
        os=known(raw["system"]["os"]),
        kernel=known(raw["system"]["kernel"]),
        labels=dict(labels),
        topology=HostTopology.model_validate(raw["topology"]["value"])
        if "topology" in raw
        else None,
    )


__all__ = [
    "FileRoot",
    "Fingerprint",
    "Nvml",
    "NvmlError",
    "RecordedNvml",
    "fingerprint_host",
    "open_nvml",
    "torch_facts",
]
