"""The topology reader on recorded trees of real 1-, 2- and 8-GPU machines (tests/data/topology,
each with its public source) and on this machine's own sysfs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stack_advisor.collectors.fingerprint import FileRoot, RecordedNvml, fingerprint_host
from stack_advisor.collectors.fingerprint.topology import (
    parse_topo_matrix,
    read_numa_nodes,
    read_topology,
    topology_of_tree,
)
from stack_advisor.schema.topology import DeviceAttachment, format_cpulist, parse_cpulist

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"
TREES = ("single-gpu-1numa", "dgx-a100-2gpu-slurm", "dgx-h100-8gpu")


def truth(name: str) -> dict:
    return json.loads((DATA / name / "truth.json").read_text())


def nvml_of(name: str) -> RecordedNvml | None:
    path = DATA / name / "nvml.json"
    return RecordedNvml(json.loads(path.read_text())) if path.is_file() else None


@pytest.mark.parametrize("name", TREES)
@pytest.mark.parametrize("with_topo", [True, False], ids=["sysfs+topo", "sysfs-only"])
def test_every_gpu_numa_node_and_cpus_match_the_public_output(name: str, with_topo: bool) -> None:
    tree = DATA / name
    topo = (tree / "nvidia-smi-topo-m.txt").read_text() if with_topo else None
    topology = read_topology(FileRoot(tree), nvml_of(name), topo)
    expected = truth(name)
    assert len(topology.numa_nodes) == expected["numa_nodes"]
    indexed = {g.index: g for g in topology.gpus if g.index is not None}
    assert sorted(indexed) == [g["index"] for g in expected["gpus"]]
    for want in expected["gpus"]:
        got = indexed[want["index"]]
        assert (got.pci_address, got.numa_node, got.cpu_affinity) == (
            want["pci_address"],
            want["numa_node"],
            want["cpus"],
        )
        # the GPU's CPU list is exactly its NUMA node's
        assert topology.node(got.numa_node).cpus == want["cpus"]
    assert len([g for g in topology.gpus if g.index is None]) == expected.get("hidden_gpus", 0)
    nics = {n.name: n.numa_node for n in topology.nics}
    assert all(nics[name_] == node for name_, node in expected["nics"].items())
    assert topology.multi_numa is (expected["numa_nodes"] > 1)


def test_links_come_from_the_topo_matrix() -> None:
    topology = topology_of_tree(DATA / "dgx-h100-8gpu")
    gpu0, gpu4 = topology.gpus[0], topology.gpus[4]
    assert (
        gpu0.links["GPU7"] == "NV18"
        and gpu0.links["mlx5_0"] == "PIX"
        and gpu0.links["mlx5_4"] == "SYS"
    )
    assert gpu4.links["mlx5_4"] == "PIX" and gpu4.links["mlx5_0"] == "SYS"
    assert {n.name: n.links.get("GPU0") for n in topology.nics}["mlx5_0"] == "PIX"


def test_nvml_subset_keeps_the_other_gpus_unindexed() -> None:
    topology = read_topology(FileRoot(DATA / "dgx-a100-2gpu-slurm"), nvml_of("dgx-a100-2gpu-slurm"))
    assert any("not visible to NVML" in e for e in topology.evidence)
    assert [g.pci_address for g in topology.gpus if g.index is not None] == [
        "0000:07:00.0",
        "0000:0f:00.0",
    ]
    # without the matrix, NVML's common-ancestor level names the GPU pair's link
    assert topology.gpus[0].links == {"GPU1": "PXB"}


def test_node_memory_and_distances() -> None:
    nodes = read_numa_nodes(FileRoot(DATA / "dgx-h100-8gpu"))
    assert [n.distances for n in nodes] == [[10, 21], [21, 10]]
    assert nodes[0].memory_mib == 1031912 and nodes[0].cpu_count == 112


def test_cpulists_round_trip_and_bad_ones_are_named() -> None:
    assert parse_cpulist("0-2,8,10-11") == [0, 1, 2, 8, 10, 11]
    assert format_cpulist([11, 0, 1, 2, 8, 10]) == "0-2,8,10-11"
    assert format_cpulist([]) == "" and parse_cpulist("") == []
    with pytest.raises(ValueError, match="'0-x'"):
        parse_cpulist("0-x")
    with pytest.raises(ValueError, match="beyond"):
        parse_cpulist("0-999999999999")  # never a trillion-element list
    assert (
        DeviceAttachment(kind="gpu", pci_address="00000000:1B:00.0").pci_address == "0000:1b:00.0"
    )
    with pytest.raises(ValueError, match="not a PCI address"):
        DeviceAttachment(kind="gpu", pci_address="1b")


def test_topo_matrix_without_header_is_refused() -> None:
    with pytest.raises(ValueError, match="header"):
        parse_topo_matrix("No devices were found\n")
    rows = parse_topo_matrix((DATA / "dgx-a100-2gpu-slurm" / "nvidia-smi-topo-m.txt").read_text())
    assert (
        rows["GPU0"]["cpus"] == "48-63,176-191"
        and rows["GPU0"]["numa"] == 3
        and rows["mlx5_2"]["links"]["GPU0"] == "SYS"
    )


def test_vm_guest_without_numa_affinity_says_hidden(tmp_path: Path) -> None:
    node = tmp_path / "sys" / "devices" / "system" / "node" / "node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-25\n")
    gpu = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:00:05.0"
    gpu.mkdir(parents=True)
    for f, v in (
        ("class", "0x030200"),
        ("vendor", "0x10de"),
        ("numa_node", "-1"),
        ("local_cpulist", "0-25"),
    ):
        (gpu / f).write_text(v + "\n")
    topology = read_topology(FileRoot(tmp_path), None, None, virtual=True)
    assert (
        topology.virtual
        and topology.guest_affinity == "hidden"
        and topology.gpus[0].numa_node is None
    )
    assert any("cannot be told from inside" in e for e in topology.evidence)


def test_vm_guest_with_vnuma_affinity_says_exposed() -> None:
    topology = read_topology(FileRoot(DATA / "dgx-h100-8gpu"), None, None, virtual=True)
    assert topology.guest_affinity == "exposed"


def test_fingerprint_carries_the_topology() -> None:
    fp = fingerprint_host(
        root=FileRoot(DATA / "dgx-h100-8gpu"),
        nvml=None,
        env={},
        hostname="dgx",
        libraries=False,
        topo_text=(DATA / "dgx-h100-8gpu" / "nvidia-smi-topo-m.txt").read_text(),
    )
    assert fp.host.topology is not None and len(fp.host.topology.gpus) == 8
    assert fp.raw["topology"]["value"]["numa_nodes"][1]["cpus"] == "56-111,168-223"
    assert "nvidia-smi topo -m" in fp.raw["topology"]["source"]


@pytest.mark.skipif(
    not Path("/sys/devices/system/node").is_dir(),
    reason="this machine's kernel exposes no NUMA sysfs",
)
def test_this_machines_real_sysfs() -> None:
    topology = read_topology(FileRoot())
    online = set(os.sched_getaffinity(0))
    listed = {c for n in topology.numa_nodes for c in parse_cpulist(n.cpus)}
    assert online <= listed  # every CPU this process may run on belongs to a NUMA node
    assert all(n.memory_mib is None or n.memory_mib > 0 for n in topology.numa_nodes)
    for dev in topology.devices:  # what the kernel says, as it says it (-1 → None)
        raw = Path(f"/sys/bus/pci/devices/{dev.pci_address}/numa_node").read_text().strip()
        assert dev.numa_node == (None if int(raw) < 0 else int(raw))
