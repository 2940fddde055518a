"""Our GEMM and copy PIs against the same library call timed directly in the same process.

Prints ours/direct ratios of the median rate (goal >= 0.95): the PI machinery (Kernel, timing
policy, batching, parameter validation) must not cost measurable throughput. NumPy and PyTorch
on the CPU; PyTorch on CUDA when a GPU is present.

"Direct" is how one would time the call by hand: warm up, then back-to-back calls between two
clock reads (CUDA events on the GPU) lasting at least 2 ms, repeated; the median. Ours and direct
alternate for ``--rounds`` rounds and each side reports its median over rounds, so a neighbour
stealing the CPU (this machine has 2 shared cores) or GPU clocks drifting hits both alike.
``--per-call`` adds the naive one-call-per-event-pair timing on CUDA, to show what batching buys
on launch-bound kernels.

    python bench/pi_overhead.py [--repeats 30] [--rounds 3] [--per-call]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from stack_advisor.microbench import get_pi, policy, run_case
from stack_advisor.microbench.backends import get_backend, installed

MIN_SAMPLE_S = 2e-3


def _batch_size(once_s: float) -> int:
    return max(1, int(MIN_SAMPLE_S / max(once_s, 1e-9)) + 1)


def direct_cpu(fn: Callable[[], Any], repeats: int) -> list[float]:
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    number = _batch_size(time.perf_counter() - t0)
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - t0) / number)
    return out


def direct_cuda(fn: Callable[[], Any], repeats: int, per_call: bool = False) -> list[float]:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed(number: int) -> float:
        start.record()
        for _ in range(number):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    number = 1 if per_call else _batch_size(timed(1))
    return [timed(number) / number for _ in range(repeats)]


def compare(
    label: str,
    pi: str,
    params: dict[str, Any],
    backend: str,
    device: str,
    direct: Callable[[], Any],
    repeats: int,
    rounds: int,
    per_call: bool = False,
) -> None:
    spec = get_pi(pi)
    typed = spec.parse(params)
    ours_rates: list[float] = []
    direct_rates: list[float] = []
    naive_rates: list[float] = []
    for _ in range(rounds):
        ours = run_case(pi, params, get_backend(backend), device, policy("full", device))
        if ours.summary is None:
            print(f"{label:<44} ours: {ours.status} ({ours.message})")
            return
        ours_rates.append(ours.summary.median)
        seconds = direct_cuda(direct, repeats) if device == "cuda" else direct_cpu(direct, repeats)
        direct_rates.append(statistics.median(spec.rate(typed, s) for s in seconds))
        if per_call and device == "cuda":
            naive = direct_cuda(direct, repeats, per_call=True)
            naive_rates.append(statistics.median(spec.rate(typed, s) for s in naive))
    ours_rate, direct_rate = statistics.median(ours_rates), statistics.median(direct_rates)
    ratio = ours_rate / direct_rate
    line = (
        f"{label:<44} ours {ours_rate:10.3f} {spec.unit.unit:<8} direct {direct_rate:10.3f}  "
        f"ratio {ratio:.3f} {'ok' if ratio >= 0.95 else 'BELOW 0.95'}"
    )
    if naive_rates:
        line += f"  (one call per event pair: {statistics.median(naive_rates):.3f})"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--per-call", action="store_true", help="also time one call per CUDA event pair"
    )
    args = parser.parse_args()
    r, k = args.repeats, args.rounds
    rng = np.random.default_rng(0)
    n = 512
    a, b = (
        rng.standard_normal((n, n), dtype=np.float32),
        rng.standard_normal((n, n), dtype=np.float32),
    )
    c = np.empty((n, n), dtype=np.float32)
    compare(
        f"numpy gemm {n} fp32 (cpu)",
        "gemm",
        {"m": n, "n": n, "k": n, "dtype": "fp32"},
        "numpy",
        "cpu",
        lambda: np.matmul(a, b, out=c),
        r,
        k,
    )
    e = 1 << 24
    x, y = rng.standard_normal(e, dtype=np.float32), np.empty(e, dtype=np.float32)
    compare(
        "numpy copy 2^24 fp32 (cpu)",
        "mem_copy",
        {"elements": e},
        "numpy",
        "cpu",
        lambda: np.copyto(y, x),
        r,
        k,
    )
    if not installed("torch"):
        return
    import torch

    ta, tb = torch.randn(n, n), torch.randn(n, n)
    tc = torch.empty(n, n)
    compare(
        f"torch gemm {n} fp32 (cpu)",
        "gemm",
        {"m": n, "n": n, "k": n, "dtype": "fp32"},
        "torch",
        "cpu",
        lambda: torch.matmul(ta, tb, out=tc),
        r,
        k,
    )
    tx, ty = torch.randn(e), torch.empty(e)
    compare(
        "torch copy 2^24 fp32 (cpu)",
        "mem_copy",
        {"elements": e},
        "torch",
        "cpu",
        lambda: ty.copy_(tx),
        r,
        k,
    )
    if not torch.cuda.is_available():
        print("no CUDA device: GPU comparisons skipped")
        return
    pc = args.per_call
    for dt, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        g = 8192
        ga, gb = (
            torch.randn(g, g, device="cuda", dtype=tdt),
            torch.randn(g, g, device="cuda", dtype=tdt),
        )
        gc = torch.empty(g, g, device="cuda", dtype=tdt)
        compare(
            f"torch gemm {g} {dt} (cuda)",
            "gemm",
            {"m": g, "n": g, "k": g, "dtype": dt},
            "torch",
            "cuda",
            lambda ga=ga, gb=gb, gc=gc: torch.matmul(ga, gb, out=gc),
            r,
            k,
            pc,
        )
    e = 1 << 28
    cx, cy = torch.randn(e, device="cuda"), torch.empty(e, device="cuda")
    compare(
        "torch copy 2^28 fp32 (cuda)",
        "mem_copy",
        {"elements": e},
        "torch",
        "cuda",
        lambda: cy.copy_(cx),
        r,
        k,
        pc,
    )
    e = 1 << 20
    sx, sy = torch.randn(e, device="cuda"), torch.empty(e, device="cuda")
    compare(
        "torch copy 2^20 fp32 (cuda, launch-bound)",
        "mem_copy",
        {"elements": e},
        "torch",
        "cuda",
        lambda: sy.copy_(sx),
        r,
        k,
        pc,
    )


if __name__ == "__main__":
    main()
