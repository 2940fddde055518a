"""What a workload adds beyond ranking one metric: serving latency limits (LLM time to first token
and per output token) and multi-node training jobs (node count, interconnect, a gang placement).

Kept apart from the engine's ranking so that ``Advisor._recommend`` only calls in here.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import numpy as np

from advisor.knowledge.table import ObservationTable
from advisor.workload import Workload


def latency_exclusions(table: ObservationTable, bench_rows: np.ndarray, workload: Workload) -> dict[int, str]:
    """Candidate code → why it is excluded, for candidates whose observed latency (worst p99 over
    their observations of this benchmark) breaks a limit the workload states."""
    out: dict[int, str] = {}
    for name, (limit, metric, what) in workload.latency_limits().items():
        code = table.metric.code(metric)
        if code < 0:
            continue
        rows = bench_rows[table.metric.codes[bench_rows] == code]
        worst: dict[int, float] = {}
        for cand, value in zip(table.candidate.codes[rows].tolist(), table.value[rows].tolist()):
            worst[cand] = max(value, worst.get(cand, value))
        for cand, value in worst.items():
            if value > limit and cand not in out:
                out[cand] = f"observed {what} p99 above {name}={limit:g} ms"
    return out


def latency_evidence(table: ObservationTable, bench_rows: np.ndarray, workload: Workload,
                     candidate: int) -> tuple[list[str], list[str]]:
    """(checked, unchecked): the limits this candidate was checked against, with its observed
    p99, and those it has no observation for."""
    checked, unchecked = [], []
    for name, (limit, metric, what) in workload.latency_limits().items():
        code = table.metric.code(metric)
        rows = bench_rows[(table.metric.codes[bench_rows] == code) & (table.candidate.codes[bench_rows] == candidate)] \
            if code >= 0 else bench_rows[:0]
        if len(rows):
            checked.append(f"{what} p99 {float(table.value[rows].max()):.0f} ms <= {name}={limit:g} ms (observed)")
        else:
            unchecked.append(f"{name} not checked: no observed {what} for this configuration")
    return checked, unchecked


def system_details(table: ObservationTable, rows: np.ndarray) -> dict[str, str]:
    """Nodes, accelerators per node and interconnect as the systems behind ``rows`` publish them
    (the most common value of each, ties to the first seen; left out when never given)."""
    out: dict[str, str] = {}
    values = table.system.values(rows) if len(rows) else []
    for i, name in enumerate(("nodes", "accelerators_per_node", "interconnect")):
        seen = [v[i] for v in values if v and v[i]]
        if seen:
            out[name] = Counter(seen).most_common(1)[0][0]  # not max(set(...)): set order varies per process
    return out


def gang_snippet(pod: dict[str, Any], *, nodes: int, per_node: int, name: str) -> dict[str, Any]:
    """A Kubeflow PyTorchJob that asks for ``nodes`` workers as a gang (all scheduled or none,
    ``runPolicy.schedulingPolicy.minAvailable``), each worker the given Pod's spec (built for
    ``per_node`` accelerators, so its resource requests, MIG ones included, stand as they are): a
    multi-node training job placed as the published system ran."""
    template = copy.deepcopy(pod["spec"])
    template.pop("restartPolicy", None)
    for container in template.get("containers", []):
        container["name"] = "pytorch"  # the container name the training operator expects
    metadata = copy.deepcopy(pod["metadata"])
    metadata["annotations"]["stack-advisor/gang"] = (
        f"{nodes} nodes x {per_node} accelerators, scheduled together (minAvailable={nodes}); "
        "with Volcano or scheduler-plugins coscheduling this is one PodGroup"
    )
    replica = {"restartPolicy": "OnFailure", "template": {"spec": template}}
    specs: dict[str, Any] = {"Master": {**replica, "replicas": 1}}
    if nodes > 1:
        specs["Worker"] = {**copy.deepcopy(replica), "replicas": nodes - 1}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {**metadata, "name": name},
        "spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": nodes}}, "pytorchReplicaSpecs": specs},
    }
