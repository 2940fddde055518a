"""Writes the recorded sysfs trees in this folder from the layouts below (run it after changing one:
``python tests/data/topology/build_trees.py``). Each layout says where its figures come from; the
``truth.json`` beside each tree is copied from the public ``nvidia-smi topo -m`` output's CPU
Affinity and NUMA Affinity columns, independently of the tree, so the reader is checked against
what NVIDIA's own tool printed on the real machine.

Only the files the topology reader opens are written: node*/cpulist, meminfo, distance and
pci devices' class, vendor, numa_node, local_cpulist and net/infiniband names.
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _dgx_h100() -> dict:
    # NVIDIA/nccl issue #1363 (an 8x H100 SXM node, 2 sockets: GPU0-3 and NIC0-3 on NUMA 0 with CPUs
    # 0-55,112-167; GPU4-7 and NIC4-9 on NUMA 1 with 56-111,168-223; all GPUs NV18; each GPU PIX to
    # one NIC). GPU PCI addresses: the DGX H100 user guide's nvidia-smi listing (1b, 43, 52, 61,
    # 9d, c3, d1, df). NIC addresses are not in the public output: placed beside their GPU's switch.
    s0, s1 = "0-55,112-167", "56-111,168-223"
    gpus = [
        ("0000:1b:00.0", 0),
        ("0000:43:00.0", 0),
        ("0000:52:00.0", 0),
        ("0000:61:00.0", 0),
        ("0000:9d:00.0", 1),
        ("0000:c3:00.0", 1),
        ("0000:d1:00.0", 1),
        ("0000:df:00.0", 1),
    ]
    nics = [
        ("0000:18:00.0", 0, "mlx5_0"),
        ("0000:40:00.0", 0, "mlx5_1"),
        ("0000:4f:00.0", 0, "mlx5_2"),
        ("0000:5e:00.0", 0, "mlx5_3"),
        ("0000:9a:00.0", 1, "mlx5_4"),
        ("0000:c0:00.0", 1, "mlx5_5"),
        ("0000:ce:00.0", 1, "mlx5_6"),
        ("0000:dc:00.0", 1, "mlx5_7"),
        ("0000:aa:00.0", 1, "mlx5_8"),
        ("0000:aa:00.1", 1, "mlx5_9"),
    ]
    return {
        "nodes": [(s0, 1031912, [10, 21]), (s1, 1032112, [21, 10])],
        "cpus_of": [s0, s1],
        "gpus": gpus,
        "nics": nics,
    }


def _dgx_a100_slice() -> dict:
    # rapidsai/dask-cuda issue #1358: a Slurm job given 2 GPUs of a DGX A100 (2x AMD EPYC 7742 in
    # NPS4: 8 NUMA nodes, node k has CPUs 16k..16k+15 and 128+16k..128+16k+15 -- GPU0/1 print
    # 48-63,176-191 and NUMA 3). sysfs in the job still shows all 8 GPUs (the DGX A100 user guide's
    # bus ids 07, 0f, 47, 4e, 87, 90, b7, bd; NUMA 3, 3, 1, 1, 7, 7, 5, 5); NVML (nvml.json) sees
    # only the job's two: 07:00.0 and 0f:00.0.
    def cpus(k: int) -> str:
        return f"{16 * k}-{16 * k + 15},{128 + 16 * k}-{128 + 16 * k + 15}"

    slit = [
        [10 if i == j else (12 if i // 4 == j // 4 else 32) for j in range(8)] for i in range(8)
    ]
    numa = {"07": 3, "0f": 3, "47": 1, "4e": 1, "87": 7, "90": 7, "b7": 5, "bd": 5}
    gpus = [(f"0000:{bus}:00.0", node) for bus, node in numa.items()]
    nics = [
        ("0000:0c:00.0", 3, "mlx5_0"),
        ("0000:12:00.0", 3, "mlx5_1"),
        ("0000:4b:00.0", 1, "mlx5_2"),
        ("0000:54:00.0", 1, "mlx5_3"),
    ]
    return {
        "nodes": [(cpus(k), 128845, slit[k]) for k in range(8)],
        "cpus_of": [cpus(k) for k in range(8)],
        "gpus": gpus,
        "nics": nics,
    }


def _one_gpu() -> dict:
    # novitalabs/pegaflow pull request #72, "Machine 1 (Single NUMA)": 48 CPUs (0-47), GPU 0 on
    # NUMA 0. PCI address and memory are not in the public text: a typical single-socket board's.
    return {
        "nodes": [("0-47", 257598, [10])],
        "cpus_of": ["0-47"],
        "gpus": [("0000:01:00.0", 0)],
        "nics": [("0000:02:00.0", 0, "eno1")],
    }


LAYOUTS = {
    "dgx-h100-8gpu": _dgx_h100,
    "dgx-a100-2gpu-slurm": _dgx_a100_slice,
    "single-gpu-1numa": _one_gpu,
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def build(name: str, layout: dict) -> None:
    sysfs = HERE / name / "sys"
    shutil.rmtree(sysfs, ignore_errors=True)
    for k, (cpus, mem_mib, dist) in enumerate(layout["nodes"]):
        base = sysfs / "devices" / "system" / "node" / f"node{k}"
        _write(base / "cpulist", cpus)
        _write(
            base / "meminfo",
            f"Node {k} MemTotal:       {mem_mib * 1024} kB\nNode {k} MemFree:        0 kB",
        )
        _write(base / "distance", " ".join(map(str, dist)))
    pci = sysfs / "bus" / "pci" / "devices"
    for address, node in layout["gpus"]:
        for f, v in (
            ("class", "0x030200"),
            ("vendor", "0x10de"),
            ("numa_node", str(node)),
            ("local_cpulist", layout["cpus_of"][node]),
        ):
            _write(pci / address / f, v)
    for address, node, nic in layout["nics"]:
        for f, v in (
            ("class", "0x020700" if nic.startswith("mlx") else "0x020000"),
            ("vendor", "0x15b3"),
            ("numa_node", str(node)),
            ("local_cpulist", layout["cpus_of"][node]),
        ):
            _write(pci / address / f, v)
        sub = "infiniband" if nic.startswith("mlx") else "net"
        (pci / address / sub / nic).mkdir(parents=True, exist_ok=True)
        _write(pci / address / sub / nic / "uevent", f"NAME={nic}")
    # a host bridge: not a GPU or NIC, must be skipped
    for f, v in (
        ("class", "0x060000"),
        ("vendor", "0x8086"),
        ("numa_node", "0"),
        ("local_cpulist", layout["cpus_of"][0]),
    ):
        _write(pci / "0000:00:00.0" / f, v)


if __name__ == "__main__":
    for name, layout in LAYOUTS.items():
        build(name, layout())
