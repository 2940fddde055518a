"""The NUMA local/remote runner: which pairs it plans on recorded machines, "not applicable" on a
single NUMA node (no figure), and real bound processes measuring the input pipeline here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.collectors.collect import UNSUPPORTED, collect
from stack_advisor.collectors.fingerprint import FileRoot, fingerprint_host
from stack_advisor.collectors.fingerprint.topology import read_topology
from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.numa import NumaRunner, _child, farthest, plan_pairs, usable
from stack_advisor.schema.errors import InvalidInput, Unsupported

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


def test_pairs_on_a_two_socket_eight_gpu_node() -> None:
    topology = read_topology(FileRoot(DATA / "dgx-h100-8gpu"))
    first = plan_pairs(topology, "first")
    assert len(first) == 1 and first[0]["gpu"].index == 0
    assert [n.node for n in first[0]["local"]] == [0, 0] and [
        n.node for n in first[0]["remote"]
    ] == [1, 1]
    every = plan_pairs(topology, "all")
    assert [(p["gpu"].index, p["home"], p["remote"][0].node) for p in every] == [
        (i, 0 if i < 4 else 1, 1 if i < 4 else 0) for i in range(8)
    ]


def test_a_cpuset_without_the_remote_nodes_cpus_is_not_applicable() -> None:
    topology = read_topology(FileRoot(DATA / "dgx-h100-8gpu"))
    inside = usable(topology, set(range(56)))  # a container given socket 0's cores only
    assert inside.node(0).cpus == "0-55" and inside.node(1).cpus == ""
    with pytest.raises(Unsupported, match=r"1 NUMA node.s. with CPUs this process may use"):
        plan_pairs(inside, "first")
    pair = plan_pairs(usable(topology, {0, 1, 56, 57}), "first")[0]
    assert (pair["local"][0].cpus, pair["remote"][0].cpus) == ("0-1", "56-57")


def test_remote_is_the_farthest_node_by_slit_distance() -> None:
    topology = read_topology(FileRoot(DATA / "dgx-a100-2gpu-slurm"))
    far = farthest(topology, 3)  # NPS4: nodes 0-3 on socket 0 (distance 12), 4-7 across (32)
    assert far is not None and far.node == 4
    assert plan_pairs(topology, "first")[0]["home"] == 3


def test_single_numa_node_is_not_applicable() -> None:
    topology = read_topology(FileRoot(DATA / "single-gpu-1numa"))
    with pytest.raises(Unsupported, match="not applicable: this node has 1 NUMA node"):
        plan_pairs(topology, "first")


def test_vm_gpu_without_numa_node_is_not_applicable(tmp_path: Path) -> None:
    for n, cpus in ((0, "0-3"), (1, "4-7")):
        d = tmp_path / "sys" / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus)
    gpu = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:00:05.0"
    gpu.mkdir(parents=True)
    for f, v in (("class", "0x030200"), ("vendor", "0x10de"), ("numa_node", "-1")):
        (gpu / f).write_text(v)
    with pytest.raises(Unsupported, match="reports no NUMA node"):
        plan_pairs(read_topology(FileRoot(tmp_path), virtual=True), "first")


def test_collect_on_a_single_node_records_not_applicable_and_no_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = FileRoot(DATA / "single-gpu-1numa")
    fp = fingerprint_host(
        root=root, nvml=None, env={}, hostname="ws", libraries=False, topo_text=None
    )
    monkeypatch.setattr(
        get_runner("numa"), "root", root
    )  # the registered runner reads the recorded tree
    outcome = collect(["numa"], fingerprint=fp)
    doc = outcome.documents[0]
    assert doc.measurements == []
    assert [f.stage for f in doc.failures] == [UNSUPPORTED] and "not applicable" in doc.failures[
        0
    ].message


def test_bad_options_are_named() -> None:
    runner = NumaRunner(FileRoot(DATA / "dgx-h100-8gpu"))
    with pytest.raises(InvalidInput, match="gpus='some'"):
        runner.run(RunContext(options={"gpus": "some"}))
    with pytest.raises(InvalidInput, match="unknown option"):
        runner.run(RunContext(options={"size": "1"}))
    with pytest.raises(InvalidInput, match="bind='taskset'"):
        runner.run(RunContext(options={"bind": "taskset"}))


def _two_node_tree(tmp_path: Path) -> FileRoot:
    """Two NUMA nodes over this machine's own CPUs (one CPU each where there are two)."""
    cpus = sorted(os.sched_getaffinity(0))
    halves = (cpus[: max(1, len(cpus) // 2)], cpus[len(cpus) // 2 :] or cpus[:1])
    for n, part in enumerate(halves):
        d = tmp_path / "sys" / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(",".join(map(str, part)))
        (d / "distance").write_text("10 21" if n == 0 else "21 10")
    return FileRoot(tmp_path)


def test_real_bound_processes_measure_the_pipeline_local_and_remote(tmp_path: Path) -> None:
    """The real child process binds itself (sched_setaffinity + set_mempolicy) and measures; only
    the memory node is mapped to node 0, the one this machine has."""
    seen: list[tuple[int, int]] = []

    def child(args: dict[str, Any], method: str, cpu_node: Any, mem_node: Any) -> dict[str, Any]:
        seen.append((cpu_node.node, mem_node.node))
        return _child(args, method, cpu_node, mem_node.model_copy(update={"node": 0}))

    runner = NumaRunner(_two_node_tree(tmp_path), child)
    result = runner.run(
        RunContext(options={"bind": "self", "batch": 4, "images": 8, "gpus": "first"})
    )
    assert result.failures == []
    assert seen == [(0, 0), (0, 1)]  # no GPU: CPUs stay on node 0, memory local then remote
    by_binding = {m.benchmark.parameters["binding"]: m for m in result.measurements}
    assert set(by_binding) == {"local", "remote"}
    for m in by_binding.values():
        assert (
            m.benchmark.family == "numa"
            and m.benchmark.name == "input_pipeline"
            and m.unit == "images/s"
        )
        assert m.value > 0 and m.samples >= 5 and "CPUs on NUMA node 0" in (m.note or "")
    assert by_binding["remote"].benchmark.parameters["memory_node"] == 1
