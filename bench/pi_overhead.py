"""Our GEMM and copy PIs against the same library call timed directly in the same process.

Prints ours/direct ratios of the median rate (goal >= 0.95): the PI machinery (Kernel, timing
policy, batching) must not cost measurable throughput. NumPy and PyTorch on the CPU; PyTorch on
CUDA (direct timing with CUDA events around each call) when a GPU is present.

    python bench/pi_overhead.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from microbench import get_pi, policy, run_case
from microbench.backends import get_backend, installed


def direct_cpu(fn: Callable[[], Any], repeats: int, min_sample_s: float = 2e-3) -> list[float]:
    for _ in range(3):
        fn()
    once = time.perf_counter()
    fn()
    number = max(1, int(min_sample_s / max(time.perf_counter() - once, 1e-9)) + 1)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - t0) / number)
    return out


def direct_cuda(fn: Callable[[], Any], repeats: int) -> list[float]:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return out


def compare(label: str, pi: str, params: dict[str, Any], backend: str, device: str, direct: Callable[[], Any],
            repeats: int) -> None:
    spec = get_pi(pi)
    typed = spec.parse(params)
    ours = run_case(pi, params, get_backend(backend), device, policy("full", device))
    if ours.summary is None:
        print(f"{label:<42} ours: {ours.status} ({ours.message})")
        return
    timer = direct_cuda if device == "cuda" else direct_cpu
    direct_rate = statistics.median(spec.rate(typed, s) for s in timer(direct, repeats))
    ratio = ours.summary.median / direct_rate
    print(f"{label:<42} ours {ours.summary.median:10.3f} {spec.unit.unit:<8} direct {direct_rate:10.3f}  "
          f"ratio {ratio:.3f} {'ok' if ratio >= 0.95 else 'BELOW 0.95'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    r = args.repeats
    rng = np.random.default_rng(0)
    n = 512
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    compare(f"numpy gemm {n} fp32 (cpu)", "gemm", dict(m=n, n=n, k=n, dtype="fp32"), "numpy", "cpu",
            lambda: np.matmul(a, b, out=c), r)
    e = 1 << 24
    x, y = rng.standard_normal(e, dtype=np.float32), np.empty(e, dtype=np.float32)
    compare("numpy copy 2^24 fp32 (cpu)", "mem_copy", dict(elements=e), "numpy", "cpu", lambda: np.copyto(y, x), r)
    if not installed("torch"):
        return
    import torch

    ta, tb = torch.randn(n, n), torch.randn(n, n)
    tc = torch.empty(n, n)
    compare(f"torch gemm {n} fp32 (cpu)", "gemm", dict(m=n, n=n, k=n, dtype="fp32"), "torch", "cpu",
            lambda: torch.matmul(ta, tb, out=tc), r)
    tx, ty = torch.randn(e), torch.empty(e)
    compare("torch copy 2^24 fp32 (cpu)", "mem_copy", dict(elements=e), "torch", "cpu", lambda: ty.copy_(tx), r)
    if not torch.cuda.is_available():
        print("no CUDA device: GPU comparisons skipped")
        return
    for dt, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        g = 8192
        ga, gb = torch.randn(g, g, device="cuda", dtype=tdt), torch.randn(g, g, device="cuda", dtype=tdt)
        gc = torch.empty(g, g, device="cuda", dtype=tdt)
        compare(f"torch gemm {g} {dt} (cuda)", "gemm", dict(m=g, n=g, k=g, dtype=dt), "torch", "cuda",
                lambda: torch.matmul(ga, gb, out=gc), r)
    e = 1 << 28
    cx, cy = torch.randn(e, device="cuda"), torch.empty(e, device="cuda")
    compare("torch copy 2^28 fp32 (cuda)", "mem_copy", dict(elements=e), "torch", "cuda", lambda: cy.copy_(cx), r)
    e = 1 << 20
    sx, sy = torch.randn(e, device="cuda"), torch.empty(e, device="cuda")
    compare("torch copy 2^20 fp32 (cuda, launch-bound)", "mem_copy", dict(elements=e), "torch", "cuda",
            lambda: sy.copy_(sx), r)


if __name__ == "__main__":
    main()
