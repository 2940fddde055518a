"""CPU model, logical and physical cores, ISA flags, NUMA nodes and memory from /proc and /sys."""

from __future__ import annotations

import re
from typing import Any

from stack_advisor.collectors.fingerprint.sources import FileRoot, fact, unknown

INTERESTING_FLAGS = re.compile(r"^(avx2|avx512\w*|amx\w*|avx_vnni|fma|f16c|sse4_2|hypervisor)$")


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, flags and counts from /proc/cpuinfo text (x86 and Arm layouts)."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    processors = 0
    model: str | None = None
    flags: set[str] = set()
    cores: set[tuple[str, str]] = set()
    for block in blocks:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if ":" in line:
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
        if "processor" not in fields:
            continue
        processors += 1
        model = model or fields.get("model name") or fields.get("Model") or None
        flags |= set((fields.get("flags") or fields.get("Features") or "").split())
        if "physical id" in fields and "core id" in fields:
            cores.add((fields["physical id"], fields["core id"]))
    return {"model": model, "flags": flags, "logical": processors, "physical": len(cores) or None}


def read_cpu(root: FileRoot) -> dict[str, Any]:
    out: dict[str, Any] = {}
    text = root.read("/proc/cpuinfo")
    if text is None:
        reason = "not readable"
        for name in (
            "cpu_model",
            "cpu_logical",
            "cpu_physical_cores",
            "cpu_flags",
            "cpu_hypervisor_flag",
        ):
            out[name] = unknown("/proc/cpuinfo", reason)
    else:
        info = parse_cpuinfo(text)
        src = "/proc/cpuinfo"
        out["cpu_model"] = (
            fact(info["model"], src) if info["model"] else unknown(src, "no 'model name' field")
        )
        out["cpu_logical"] = (
            fact(info["logical"], src) if info["logical"] else unknown(src, "no processor entries")
        )
        out["cpu_physical_cores"] = (
            fact(info["physical"], src + " (physical id, core id)")
            if info["physical"]
            else unknown(src, "no 'physical id'/'core id' fields")
        )
        out["cpu_flags"] = fact(
            sorted(f for f in info["flags"] if INTERESTING_FLAGS.match(f) and f != "hypervisor"),
            src,
        )
        out["cpu_hypervisor_flag"] = fact("hypervisor" in info["flags"], src + " flags")
    nodes = root.glob("/sys/devices/system/node", "node[0-9]*")
    out["numa_nodes"] = (
        fact(len(nodes), "/sys/devices/system/node/node*")
        if nodes
        else unknown("/sys/devices/system/node", "no node directories")
    )
    meminfo = root.read("/proc/meminfo")
    match = re.search(r"^MemTotal:\s+(\d+)\s+kB", meminfo or "", re.MULTILINE)
    out["memory_mib"] = (
        fact(int(match.group(1)) // 1024, "/proc/meminfo MemTotal")
        if match
        else unknown("/proc/meminfo", "no MemTotal line")
    )
    return out
