"""What a remote-NUMA placement costs: the PI suite's host↔device bandwidth and a CPU-fed input
pipeline, each run NUMA-local and NUMA-remote (``advisor collect --benchmark numa``).

Local: the process's CPUs and memory on the GPU's NUMA node. Remote: both on the NUMA node
farthest from it (SLIT distance), so the pipeline's batches cross the socket interconnect before
the copy. Without a GPU the pipeline alone runs, CPUs on node 0, memory on node 0 (local) or the
farthest node (remote). Each pair runs in fresh processes bound by ``numactl`` when installed, else
by ``os.sched_setaffinity`` + ``set_mempolicy(MPOL_BIND)`` (``collectors.runners.numa_bind``); the
binding is in the benchmark's parameters, so the two figures are separate observations.

On a node with one NUMA node (most VMs and single-socket machines) local and remote are the same:
the runner records "not applicable" with the reason and no figure. Options: ``gpus`` (``first``,
default, or ``all``), ``size_mib`` (transfer size; 256 quick, 1024 full), ``bind`` (``auto``,
``numactl``, ``self``), ``workers`` (pipeline threads; default min(4, CPUs of the node)),
``batch`` and ``images`` (the pipeline's batch and dataset sizes; 64 and 512).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from typing import Any

from stack_advisor.collectors.fingerprint import open_nvml
from stack_advisor.collectors.fingerprint.sources import FileRoot
from stack_advisor.collectors.fingerprint.topology import read_topology
from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.microbench import policy, summarise
from stack_advisor.schema.errors import InvalidInput, Unsupported
from stack_advisor.schema.models import Benchmark, FailureIn, Measurement
from stack_advisor.schema.topology import HostTopology, NumaNode, format_cpulist, parse_cpulist

FAMILY = "numa"
VERSION = 1
OPTIONS = ("gpus", "size_mib", "bind", "workers", "batch", "images")
CHILD_TIMEOUT_S = 900
NOT_APPLICABLE = "not applicable"


def farthest(topology: HostTopology, node: int) -> NumaNode | None:
    """The CPU-bearing NUMA node farthest from ``node`` (SLIT distance; the lowest number on a
    tie)."""
    here = topology.node(node)
    others = [n for n in topology.cpu_nodes if n.node != node]
    if not others:
        return None

    def distance(n: NumaNode) -> int:
        return here.distances[n.node] if here and n.node < len(here.distances) else 0

    return max(others, key=lambda n: (distance(n), -n.node))


def usable(topology: HostTopology, allowed: set[int]) -> HostTopology:
    """The topology as this process may use it: each node's CPUs cut to the allowed ones (a
    container's cpuset, a batch job's allocation), so a binding never names a CPU it cannot have."""
    nodes = [
        n.model_copy(update={"cpus": format_cpulist(set(parse_cpulist(n.cpus)) & allowed)})
        for n in topology.numa_nodes
    ]
    return topology.model_copy(update={"numa_nodes": nodes})


def plan_pairs(topology: HostTopology, gpus: str) -> list[dict[str, Any]]:
    """The (local, remote) bindings to measure: one pair per chosen GPU, or one CPU-only pair.

    Raises Unsupported ("not applicable") on a single-NUMA node or when the GPU's node is
    unknown."""
    cpu_nodes = topology.cpu_nodes
    if len(cpu_nodes) < 2:
        raise Unsupported(
            f"numa: {NOT_APPLICABLE}: this node has {len(cpu_nodes)} NUMA node(s) with CPUs this "
            "process may use, so NUMA-local and NUMA-remote placement are the same; nothing to "
            "measure"
        )
    visible = [g for g in topology.gpus if g.index is not None]
    chosen = visible if gpus == "all" else visible[:1]
    if not chosen:
        home = cpu_nodes[0]
        far = farthest(topology, home.node)
        assert far is not None
        return [{"gpu": None, "home": home.node, "local": (home, home), "remote": (home, far)}]
    pairs = []
    for gpu in chosen:
        node = None if gpu.numa_node is None else topology.node(gpu.numa_node)
        if gpu.numa_node is None or node is None or not node.cpus:
            raise Unsupported(
                f"numa: {NOT_APPLICABLE}: GPU{gpu.index} ({gpu.pci_address}) reports no NUMA node "
                "with CPUs this process may use (numa_node -1: a VM without PCI NUMA affinity or "
                "firmware that gives none; or a cpuset without its node's CPUs), so local and "
                "remote cannot be told apart"
            )
        home = node
        far = farthest(topology, gpu.numa_node)
        assert home is not None and far is not None
        pairs.append({"gpu": gpu, "home": home.node, "local": (home, home), "remote": (far, far)})
    return pairs


def bind_method(requested: str) -> str:
    if requested not in ("auto", "numactl", "self"):
        raise InvalidInput(f"numa option bind={requested!r} is invalid; valid: auto, numactl, self")
    if requested == "numactl" and shutil.which("numactl") is None:
        raise Unsupported(
            "numa: bind=numactl but numactl is not installed (Debian: apt-get install numactl)"
        )
    if requested == "auto":
        return "numactl" if shutil.which("numactl") else "self"
    return requested


def _child(
    args: dict[str, Any], method: str, cpu_node: NumaNode, mem_node: NumaNode
) -> dict[str, Any]:
    payload = {
        **args,
        "cpus": parse_cpulist(cpu_node.cpus),
        "memory_node": mem_node.node,
        "bind": "self" if method == "self" else "numactl",
    }
    cmd = [sys.executable, "-m", "stack_advisor.collectors.runners.numa_bind", json.dumps(payload)]
    if method == "numactl":
        cmd = ["numactl", f"--cpunodebind={cpu_node.node}", f"--membind={mem_node.node}", *cmd]
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}  # device ordinals in PCI order, as NVML's indices
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        env={**os.environ, **env},
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(
            f"bound run ({' '.join(cmd[:3])} ...) exited {done.returncode}: {tail[0][:300]}"
        )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _options(ctx: RunContext, topology: HostTopology) -> dict[str, Any]:
    unknown = sorted(set(ctx.options) - set(OPTIONS))
    if unknown:
        raise InvalidInput(
            f"numa: unknown option(s) {', '.join(unknown)}; valid: {', '.join(OPTIONS)}"
        )
    gpus = str(ctx.options.get("gpus", "first"))
    if gpus not in ("first", "all"):
        raise InvalidInput(f"numa option gpus={gpus!r} is invalid; valid: first, all")
    try:
        size_mib = int(ctx.options.get("size_mib", 256 if ctx.profile == "quick" else 1024))
        counts = {
            k: int(ctx.options[k]) for k in ("workers", "batch", "images") if k in ctx.options
        }
    except ValueError as exc:
        raise InvalidInput(
            f"numa options size_mib, workers, batch and images must be integers: {exc}"
        ) from None
    if size_mib < 1 or any(v < 1 for v in counts.values()):
        raise InvalidInput("numa options size_mib, workers, batch and images must be at least 1")
    return {
        "gpus": gpus,
        "size_mib": size_mib,
        "workers": counts.get("workers"),
        "bind": str(ctx.options.get("bind", "auto")),
        "pipeline": {
            k2: counts[k]
            for k, k2 in (("batch", "batch"), ("images", "dataset_images"))
            if k in counts
        },
    }


class NumaRunner:
    name = "numa"
    description = "host<->device bandwidth and a CPU-fed input pipeline, NUMA-local vs NUMA-remote"

    def __init__(self, root: FileRoot | None = None, child: Any = None) -> None:
        self.root = root or FileRoot()
        self.child = child or _child  # tests replace the process launch only where no NUMA exists

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        topology = usable(read_topology(self.root, _nvml_or_none()), set(os.sched_getaffinity(0)))
        opts = _options(ctx, topology)
        method = bind_method(opts["bind"])
        pairs = plan_pairs(topology, opts["gpus"])
        pol = policy(ctx.profile, "cuda" if pairs[0]["gpu"] is not None else "cpu")
        result = RunnerResult()
        for i, pair in enumerate(pairs):
            for j, binding in enumerate(("local", "remote")):
                if progress:
                    progress(
                        f"{binding} {pair['gpu'].label if pair['gpu'] else 'cpu'}",
                        (2 * i + j) / (2 * len(pairs)),
                    )
                cpu_node, mem_node = pair[binding]
                args = _child_args(pair, opts, asdict(pol), cpu_node)
                identity = {
                    "binding": binding,
                    "cpu_node": cpu_node.node,
                    "memory_node": mem_node.node,
                    "home_node": pair["home"],
                    "bind_method": method,
                    "numa_version": VERSION,
                    "gpu_index": pair["gpu"].index if pair["gpu"] else None,
                    "gpu_pci": pair["gpu"].pci_address if pair["gpu"] else None,
                }
                try:
                    out = self.child(args, method, cpu_node, mem_node)
                except (
                    RuntimeError,
                    OSError,
                    subprocess.TimeoutExpired,
                    json.JSONDecodeError,
                ) as exc:
                    result.failures.append(
                        FailureIn(
                            benchmark=Benchmark(
                                family=FAMILY, name="bound-run", parameters=identity
                            ),
                            stage="run",
                            error_class=type(exc).__name__,
                            message=str(exc),
                        )
                    )
                    continue
                _record(result, out, identity, args)
        if progress:
            progress("done", 1.0)
        return result


def _child_args(
    pair: dict[str, Any], opts: dict[str, Any], pol: dict[str, Any], cpu_node: NumaNode
) -> dict[str, Any]:
    gpu = pair["gpu"]
    workers = opts["workers"] or max(1, min(4, cpu_node.cpu_count))
    args: dict[str, Any] = {
        "policy": pol,
        "pipeline": {**opts["pipeline"], "workers": workers, "device": "cuda" if gpu else "cpu"},
    }
    if gpu is not None:
        args.update(transfer=True, cuda_index=gpu.index, size_bytes=opts["size_mib"] << 20)
    return args


def _measurement(
    name: str, metric: str, unit: str, parameters: dict[str, Any], rates: list[float], note: str
) -> Measurement:
    s = summarise(rates)
    return Measurement(
        benchmark=Benchmark(family=FAMILY, name=name, parameters=parameters),
        metric=metric,
        value=s.median,
        unit=unit,
        samples=s.n,
        p10=s.p10,
        p90=s.p90,
        stddev=s.stddev,
        cv=s.cv,
        note=note,
    )


def _record(
    result: RunnerResult, out: dict[str, Any], identity: dict[str, Any], args: dict[str, Any]
) -> None:
    where = (
        f"{identity['binding']}: CPUs on NUMA node {identity['cpu_node']}, memory on node "
        f"{identity['memory_node']} ({identity['bind_method']}); process saw "
        f"{len(out.get('cpus_seen', []))} CPUs"
    )
    cases = [
        (
            f"{d}",
            "gbps",
            "GB/s",
            {**identity, "size_bytes": args.get("size_bytes"), "host_memory": "pinned"},
            (out.get("transfer") or {}).get(d),
        )
        for d in ("h2d", "d2h")
        if args.get("transfer")
    ]
    cases.append(
        (
            "input_pipeline",
            "images_per_s",
            "images/s",
            {**identity, **args["pipeline"]},
            out.get("pipeline"),
        )
    )
    for name, metric, unit, params, data in cases:
        if not data or "error" in data:
            why = (data or {}).get("error", "no result")
            result.failures.append(
                FailureIn(
                    benchmark=Benchmark(family=FAMILY, name=name, parameters=params),
                    stage="unsupported" if "NotSupported" in why else "run",
                    error_class="BoundRunError",
                    message=f"{name} {where}: {why}",
                )
            )
            continue
        note = (
            f"median of {len(data['rates'])} samples ({data['number']} run(s) each, "
            f"{data['warmup']} warm-up, stopped: {data['stop_reason']}); "
            f"{data.get('label', '')}; {where}"
        )
        result.measurements.append(_measurement(name, metric, unit, params, data["rates"], note))


def _nvml_or_none() -> Any:
    nvml, _ = open_nvml()
    return nvml


register_runner(NumaRunner())
