"""One bound measurement: ``python -m stack_advisor.collectors.runners.numa_bind '<json>'``.

Runs in a fresh process so that every allocation (the CUDA context, pinned buffers, the
pipeline's dataset) happens under the binding: either ``numactl --cpunodebind=N --membind=M``
started it, or (``"bind": "self"``) it binds itself first with ``os.sched_setaffinity`` and the
``set_mempolicy(MPOL_BIND)`` system call, before importing NumPy or torch. Prints one JSON object:
per case the per-run seconds, or the reason it could not run.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import sys
from typing import Any

MPOL_BIND = 2
SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "ppc64le": 261, "s390x": 270}


def set_mempolicy_bind(node: int) -> None:
    """Bind this thread's future allocations (and its children's) to NUMA node ``node``."""
    number = SYS_SET_MEMPOLICY.get(platform.machine())
    if number is None:
        raise OSError(f"set_mempolicy: no system call number known for {platform.machine()}")
    words = node // 64 + 1
    mask = (ctypes.c_ulong * words)()
    mask[node // 64] = 1 << (node % 64)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, MPOL_BIND, mask, ctypes.c_ulong(words * 64 + 1)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"set_mempolicy(MPOL_BIND, node {node}): {os.strerror(err)}")


def _timings(timing: Any, work: float, scale: float) -> dict[str, Any]:
    return {
        "rates": [work / s / scale for s in timing.seconds],
        "number": timing.number,
        "stop_reason": timing.stop_reason,
        "warmup": timing.warmup,
    }


def _transfer(args: dict[str, Any], pol: Any) -> dict[str, Any]:
    from stack_advisor.microbench import get_pi, measure
    from stack_advisor.microbench.backends import get_backend

    out: dict[str, Any] = {}
    try:
        backend = get_backend("torch")
        import torch

        torch.cuda.set_device(args["cuda_index"])
    except Exception as exc:  # no torch, no CUDA: said, never a figure
        return {d: {"error": f"{type(exc).__name__}: {exc}"} for d in ("h2d", "d2h")}
    pi = get_pi("transfer")
    for direction in ("h2d", "d2h"):
        params = pi.parse(
            {"size_bytes": args["size_bytes"], "direction": direction, "host_memory": "pinned"}
        )
        try:
            kernel = backend.prepare("transfer", params, "cuda")
            timing = measure(kernel, pol)
        except Exception as exc:
            out[direction] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            continue
        out[direction] = {
            **_timings(timing, pi.work(params), pi.unit.scale),
            "label": kernel.label,
            "backend_version": backend.version(),
        }
    return out


def _pipeline(args: dict[str, Any], pol: Any) -> dict[str, Any]:
    from stack_advisor.microbench import measure
    from stack_advisor.microbench.input_pipeline import PipelineParams, prepare

    params = PipelineParams(**args["pipeline"])
    try:
        kernel = prepare(params, args.get("cuda_index", 0))
        timing = measure(kernel, pol)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    return {**_timings(timing, params.batch, 1.0), "label": kernel.label}


def main(argv: list[str]) -> int:
    args = json.loads(argv[0])
    if args.get("bind") == "self":
        os.sched_setaffinity(0, set(args["cpus"]))
        set_mempolicy_bind(args["memory_node"])
    from stack_advisor.microbench import TimingPolicy

    pol = TimingPolicy(**args["policy"])
    result: dict[str, Any] = {"cpus_seen": sorted(os.sched_getaffinity(0))}
    if args.get("transfer"):
        result["transfer"] = _transfer(args, pol)
    if args.get("pipeline"):
        result["pipeline"] = _pipeline(args, pol)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
