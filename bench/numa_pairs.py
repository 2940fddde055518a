"""NUMA-local vs NUMA-remote on this node: the `numa` runner's pairs, printed with their ratio.

Runs exactly what `advisor collect --benchmark numa` runs (H2D/D2H with the PI transfer kernel
and the CPU-fed input pipeline, each in processes bound local then remote) and prints one line per
pair: local, remote, local/remote and the CVs. On a node with one NUMA node it prints the runner's
"not applicable" and no figure. Also writes the topology and the result document as JSON when
``--out DIR`` is given (commit them as the measured record).

    python bench/numa_pairs.py [--profile quick|full] [--gpus first|all] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.collectors.collect import collect
from stack_advisor.collectors.fingerprint import FileRoot, open_nvml
from stack_advisor.collectors.fingerprint.topology import read_topology, run_topo_matrix


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="quick", choices=["quick", "full"])
    parser.add_argument("--gpus", default="first", choices=["first", "all"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    nvml, _ = open_nvml()
    topology = read_topology(FileRoot(), nvml, run_topo_matrix() if nvml else None)
    print(
        f"NUMA nodes: {len(topology.numa_nodes)} ({len(topology.cpu_nodes)} with CPUs); GPUs: "
        + ", ".join(f"{g.label}@{g.pci_address} node {g.numa_node}" for g in topology.gpus)
    )
    outcome = collect(["numa"], profile=args.profile, options={"gpus": args.gpus})
    doc = outcome.documents[0]
    for f in doc.failures:
        print(f"{f.stage}: {f.message}")
    pairs: dict[tuple[str, str], dict[str, object]] = {}
    for m in doc.measurements:
        p = dict(m.benchmark.parameters)
        key = (
            m.benchmark.name,
            json.dumps(
                {k: v for k, v in p.items() if k not in ("binding", "cpu_node", "memory_node")},
                sort_keys=True,
            ),
        )
        pairs.setdefault(key, {})[str(p["binding"])] = m
    for (name, _), pair in sorted(pairs.items()):
        local, remote = pair.get("local"), pair.get("remote")
        if local is None or remote is None:
            continue
        print(
            f"{name:15s} GPU{local.benchmark.parameters.get('gpu_index')}: local "
            f"{local.value:.4g} "
            f"(cv {local.cv:.3f}, node {local.benchmark.parameters['cpu_node']}) vs "
            f"remote {remote.value:.4g} "
            f"(cv {remote.cv:.3f}, node {remote.benchmark.parameters['cpu_node']}) "
            f"{local.unit}: "
            f"local/remote {local.value / remote.value:.3f}"
        )  # type: ignore[attr-defined]
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "topology.json").write_text(
            json.dumps(topology.model_dump(mode="json"), indent=1)
        )
        (args.out / "numa-run.json").write_text(
            json.dumps([d.model_dump(mode="json") for d in outcome.documents], indent=1)
        )
        print(f"wrote {args.out}/topology.json and numa-run.json")


if __name__ == "__main__":
    main()
