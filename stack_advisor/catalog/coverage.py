"""How much of a published MLPerf results tree the catalogue resolves.

Reads only the names (system descriptions' ``accelerator_model_name`` and host CPU, the benchmark
and scenario directories), so the bench, the tests and ``advisor evaluate`` can check coverage
without importing anything.
"""

from __future__ import annotations

import csv
import gzip
import json
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack_advisor.catalog.resolve import (
    NOT_AN_ACCELERATOR,
    resolve_accelerator,
    resolve_benchmark,
    resolve_cpu,
    resolve_scenario,
)


@dataclass
class TreeNames:
    accelerators: set[str] = field(default_factory=set)
    cpu_only_hosts: set[str] = field(default_factory=set)
    benchmarks: set[str] = field(default_factory=set)
    scenarios: set[str] = field(default_factory=set)
    frameworks: set[str] = field(default_factory=set)  # the systems' free-text framework fields
    sources: list[str] = field(default_factory=list)


def _system(names: TreeNames, data: bytes) -> None:
    try:
        fields: Any = json.loads(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return
    if not isinstance(fields, dict):
        return
    model = " ".join(str(fields.get("accelerator_model_name") or "").split())
    per_node = str(fields.get("accelerators_per_node") or "").strip()
    framework = " ".join(str(fields.get("framework") or "").split())
    if framework:
        names.frameworks.add(framework)
    if model.lower() in NOT_AN_ACCELERATOR or per_node == "0":
        host = " ".join(str(fields.get("host_processor_model_name") or "").split())
        if host:
            names.cpu_only_hosts.add(host)
    else:
        names.accelerators.add(model)


def _result(names: TreeNames, parts: list[str]) -> None:
    i = parts.index("results")
    if len(parts) > i + 3:
        names.benchmarks.add(parts[i + 2])
        if parts[-1] == "mlperf_log_summary.txt" and len(parts) > i + 4:
            names.scenarios.add(parts[i + 3])


def scan_names(paths: Iterable[Path]) -> TreeNames:
    """Names in MLPerf results archives (``.tar.gz``) or directories."""
    names = TreeNames()
    for path in paths:
        names.sources.append(str(path))
        if path.is_dir():
            files = ((p.relative_to(path).as_posix(), p) for p in path.rglob("*") if p.is_file())
            for rel, full in files:
                parts = rel.split("/")
                if "compliance" in parts:
                    continue
                if "systems" in parts and rel.endswith(".json"):
                    _system(names, full.read_bytes())
                elif "results" in parts:
                    _result(names, parts)
            continue
        with tarfile.open(path) as archive:
            for member in archive:
                if not member.isfile():
                    continue
                parts = member.name.split("/")
                if "compliance" in parts:
                    continue
                if "systems" in parts and member.name.endswith(".json"):
                    handle = archive.extractfile(member)
                    if handle is not None:
                        _system(names, handle.read())
                elif "results" in parts:
                    _result(names, parts)
    return names


def scan_reference_csv(paths: Iterable[Path]) -> TreeNames:
    """Names in the reference tabulations of published results (``observations_*.csv``: one
    row per result, with the system's ``accelerator``, ``host_cpu`` and ``benchmark_raw``):
    the names that reach observations, much faster to read than the archives."""
    names = TreeNames()
    for path in paths:
        names.sources.append(str(path))
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                model = " ".join((row.get("accelerator") or "").split())
                if (
                    model.lower() in NOT_AN_ACCELERATOR
                    or (row.get("accelerators_per_node") or "").strip() == "0"
                ):
                    host = " ".join((row.get("host_cpu") or "").split())
                    if host:
                        names.cpu_only_hosts.add(host)
                else:
                    names.accelerators.add(model)
                names.benchmarks.add(row.get("benchmark_raw") or row.get("benchmark") or "")
                if (row.get("framework") or "").strip():
                    names.frameworks.add(" ".join(row["framework"].split()))
                names.scenarios.add(row.get("scenario") or "")
    names.benchmarks.discard("")
    names.scenarios.discard("")
    return names


# The summary table's field names drift between rounds (v5.1: Accelerator, a#, Processor, Model;
# later: accelerator_model_name, accelerators_per_node, ...): the first present wins.
_SUMMARY_FIELDS = {
    "accelerator": ("Accelerator", "accelerator_model_name"),
    "count": ("a#", "accelerators_per_node", "total_accelerators"),
    "host": ("Processor", "host_processor_model_name"),
    "benchmark": ("Model", "MlperfModel", "UsedModel"),
    "scenario": ("Scenario", "scenario"),
    "framework": ("Software", "framework"),
}


def _field(row: dict[str, Any], what: str) -> str:
    for name in _SUMMARY_FIELDS[what]:
        if row.get(name) not in (None, ""):
            return " ".join(str(row[name]).split())
    return ""


def scan_summary(paths: Iterable[Path]) -> TreeNames:
    """Names in MLCommons' published result tables (``summary_results_*.json[.gz]``: a list of
    rows, or an object keyed "0", "1", ...); a row without an accelerator (or with a count of 0)
    is a CPU-only system, named by its host processor."""
    names = TreeNames()
    for path in paths:
        names.sources.append(str(path))
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
        rows = data.values() if isinstance(data, dict) else data
        for row in rows:
            if not isinstance(row, dict):
                continue
            model = _field(row, "accelerator")
            if model.lower() in NOT_AN_ACCELERATOR or _field(row, "count") in ("0", ""):
                host = _field(row, "host")
                if host and model.lower() in NOT_AN_ACCELERATOR:
                    names.cpu_only_hosts.add(host)
                if model.lower() in NOT_AN_ACCELERATOR:
                    model = ""
            if model:
                names.accelerators.add(model)
            for what, into in (("benchmark", names.benchmarks), ("scenario", names.scenarios)):
                if _field(row, what):
                    into.add(_field(row, what))
    return names


def merge(*parts: TreeNames) -> TreeNames:
    out = TreeNames()
    for part in parts:
        out.accelerators |= part.accelerators
        out.cpu_only_hosts |= part.cpu_only_hosts
        out.benchmarks |= part.benchmarks
        out.scenarios |= part.scenarios
        out.frameworks |= part.frameworks
        out.sources += part.sources
    return out


def coverage_report(names: TreeNames) -> dict[str, Any]:
    """Distinct raw names, how many canonical entities they resolve to, and the unresolved."""
    acc = {a: resolve_accelerator(a) for a in names.accelerators}
    cpus = {c: resolve_cpu(c) for c in names.cpu_only_hosts}
    bench = {b: resolve_benchmark(b) for b in names.benchmarks}
    scen = {s: resolve_scenario(s) for s in names.scenarios}
    canonical_acc = {m.key for m in acc.values() if m.resolved and m.kind == "accelerator"}
    boards = {m.entry.id for m in acc.values() if m.entry is not None}
    return {
        "sources": names.sources,
        "accelerators": {
            "raw_names": len(acc),
            "canonical": len(canonical_acc),
            "boards": len(boards),
            "mixed_systems": sorted(a for a, m in acc.items() if m.kind == "mixed"),
            "unresolved": sorted(a for a, m in acc.items() if not m.resolved),
        },
        "cpu_only_hosts": {
            "raw_names": len(cpus),
            "canonical": len({m.id for m in cpus.values() if m.resolved}),
            "unresolved": sorted(c for c, m in cpus.items() if not m.resolved),
        },
        "benchmarks": {
            "raw_names": len(bench),
            "canonical": len({m.base or m.id for m in bench.values() if m.resolved}),
            "unresolved": sorted(b for b, m in bench.items() if not m.resolved),
        },
        "scenarios": {
            "raw_names": len(scen),
            "canonical": len({m.id for m in scen.values() if m.resolved}),
            "unresolved": sorted(s for s, m in scen.items() if not m.resolved),
        },
    }
