"""Where a LoadGen Server query's time goes: each stage of the runner's SUT timed, per query.

Runs the collector's own SUT (``stack_advisor.collectors.runners.loadgen.TorchSut``, warmed up as
the runner does) under the real LoadGen in Server mode and stamps every query: issued by LoadGen,
taken off the SUT's queue, forward launched, device done, completed back to LoadGen. Prints the
latency percentiles, the median of each stage over the slowest 1% of queries, the host's launch time
and the device wait per served batch, the slowest batches (when, size, launch ms, device ms), and
the stalls of a thread that sleeps 1 ms at a time (a host hiccup shows there whatever its cause).

On an H100 (2026-11-27) it showed that the ~100 ms tails were each new batch size's first pass in
the serving thread (cuDNN plans and cuBLAS handles are per thread), and that what remains is
the eager forward's launch cost on the host, not the device (docs/sweep.md).

    python bench/loadgen_stages.py [--qps 100] [--device cuda] [--min-duration-ms 10000]
    [--no-warmup] [--sut cuda-graph]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.collectors.importers.loadgen_summary import parse_summary
from stack_advisor.collectors.runners import loadgen
from stack_advisor.collectors.runners.loadgen_params import LoadgenParams
from stack_advisor.runtime.gc_pause import gc_paused


class StagedSut(loadgen.TorchSut):
    """The runner's SUT, serving one batch at a time as it does, with every stage stamped."""

    def __init__(self, params: LoadgenParams, device: str) -> None:
        self.stamps: dict[int, list[float]] = {}
        self.batches: list[tuple[float, int, float, float]] = []  # start, size, launch s, device s
        super().__init__(params, device)

    def issue(self, query_samples: list[Any]) -> None:
        now = time.perf_counter()
        for s in query_samples:
            self.stamps[s.id] = [now]
        super().issue(query_samples)

    def _serve(self) -> None:
        import mlperf_loadgen as lg

        torch = self.torch
        if not self._start():
            return
        while (samples := self.next_batch()) is not None:
            taken = time.perf_counter()
            for begin in range(0, len(samples), self.max_batch):
                chunk = samples[begin : begin + self.max_batch]
                start = time.perf_counter()
                with torch.inference_mode():
                    logits = self.launch(chunk)
                    launched = time.perf_counter()
                    logits.argmax(1).cpu()
                done = time.perf_counter()
                lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in chunk])
                completed = time.perf_counter()
                self.batches.append((start, len(chunk), launched - start, done - launched))
                for s in chunk:
                    self.stamps[s.id] += [taken, start, done, completed]


def _ticker(stalls: list[tuple[float, float]], stop: threading.Event) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        time.sleep(0.001)
        took = time.perf_counter() - before
        if took > 0.005:
            stalls.append((before, took))


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def run(qps: float, device: str, min_duration_ms: int, warmup: bool, sut: str = "eager") -> None:
    import mlperf_loadgen as lg

    params = LoadgenParams(
        scenarios=["Server"],
        server_target_qps=qps,
        min_duration_ms=min_duration_ms,
        calibrate=False,
        warmup=warmup,
        sut=sut,
    )
    if device == "cpu":
        params = params.model_copy(update={"model": "small_cnn", "image_size": 64, "threads": 1})
    stalls: list[tuple[float, float]] = []
    stop = threading.Event()
    threading.Thread(target=_ticker, args=(stalls, stop), daemon=True).start()
    sut_impl = StagedSut(params, device)
    sut = lg.ConstructSUT(sut_impl.issue, sut_impl.flush)
    qsl = lg.ConstructQSL(params.sample_count, params.sample_count, lambda s: None, lambda s: None)
    log = lg.LogSettings()
    outdir = tempfile.mkdtemp(prefix="loadgen-stages-")
    log.log_output.outdir = outdir
    try:
        with gc_paused():
            lg.StartTestWithLogSettings(sut, qsl, loadgen._settings(lg, params, "Server"), log)
    finally:
        stop.set()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        sut_impl.close()
    served = {k: v for k, v in sut_impl.stamps.items() if len(v) == 5}
    latency = sorted((v[4] - v[0], k) for k, v in served.items())
    n = len(latency)
    print(
        f"{params.model} {params.image_size}px on {device} ({params.sut}), {qps:g} q/s "
        "target, warm-up "
        f"{'1-' + str(sut_impl.warmed) if sut_impl.warmed else 'off'}: {n} queries in "
        f"{len(sut_impl.batches)} batches (mean size "
        f"{statistics.mean(b[1] for b in sut_impl.batches):.2f})"
    )
    print(
        "latency ms: "
        + ", ".join(
            f"p{p:g} {_pct([x for x, _ in latency], p) * 1e3:.2f}" for p in (50, 90, 99, 99.9)
        )
    )
    slow = [served[k] for _, k in latency[-max(1, n // 100) :]]
    names = ("issue->dequeue", "dequeue->launch", "launch->device done", "done->completed")
    print(
        "slowest 1%, median ms per stage: "
        + ", ".join(
            f"{name} {statistics.median((v[i + 1] - v[i]) * 1e3 for v in slow):.2f}"
            for i, name in enumerate(names)
        )
    )
    launch = [b[2] for b in sut_impl.batches]
    wait = [b[3] for b in sut_impl.batches]
    print(
        f"per batch ms: host launch p50 {_pct(launch, 50) * 1e3:.2f} p99 "
        f"{_pct(launch, 99) * 1e3:.2f} "
        f"max {max(launch) * 1e3:.2f}; device wait p50 {_pct(wait, 50) * 1e3:.2f} p99 "
        f"{_pct(wait, 99) * 1e3:.2f} "
        f"max {max(wait) * 1e3:.2f}"
    )
    t0 = sut_impl.batches[0][0]
    worst = sorted(sut_impl.batches, key=lambda b: -(b[2] + b[3]))[:8]
    print(
        "slowest batches (s since first, size, launch ms, device ms): "
        + ", ".join(f"({b[0] - t0:.2f}, {b[1]}, {b[2] * 1e3:.1f}, {b[3] * 1e3:.1f})" for b in worst)
    )
    during = [(t - t0, d) for t, d in stalls if t >= t0]
    print(
        f"host stalls over 5 ms during the run: {len(during)}"
        + (
            ": "
            + ", ".join(
                f"{t:.2f} s {d * 1e3:.1f} ms" for t, d in sorted(during, key=lambda x: -x[1])[:8]
            )
            if during
            else ""
        )
    )
    summary = parse_summary((Path(outdir) / "mlperf_log_summary.txt").read_text())
    print(
        f"LoadGen: {summary.get('result')}, completed samples/s "
        f"{summary.get('completed_samples_per_second')}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument(
        "--device", default="cuda", help="cuda, or cpu (the small CNN at 64 px, one thread)"
    )
    parser.add_argument("--min-duration-ms", type=int, default=10_000)
    parser.add_argument(
        "--no-warmup", action="store_true", help="skip the SUT's warm-up (to see what it buys)"
    )
    parser.add_argument(
        "--sut", choices=("eager", "cuda-graph"), default="eager", help="the runner's SUT kind"
    )
    args = parser.parse_args()
    run(args.qps, args.device, args.min_duration_ms, not args.no_warmup, args.sut)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
