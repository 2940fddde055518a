"""MLPerf Inference scenarios driven by the real LoadGen (``mlperf_loadgen``).

The system under test runs a real forward pass of one of the project's CNNs (PyTorch, CPU or
CUDA) per query sample; a worker thread serves the queries LoadGen issues, batching Offline
samples and the Server queries that arrived while the device was busy (up to ``max_batch``). LoadGen
writes its own ``mlperf_log_summary.txt``; we read that with
``stack_advisor.collectors.importers.loadgen_summary.parse_summary`` and record its headline figure
— SingleStream p90 latency, Server completed samples/s at the latency bound, Offline samples/s —
with LoadGen's VALID/INVALID verdict on the measurement (``valid`` and ``note``).
"""

from __future__ import annotations

import importlib.util
import logging
import queue
import statistics
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from stack_advisor.collectors.importers.loadgen_summary import parse_summary, primary_result
from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.collectors.runners.loadgen_params import (
    Calibration,
    LoadgenParams,
    benchmark_of,
    params_for,
)
from stack_advisor.runtime.gc_pause import gc_paused
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment, Unsupported
from stack_advisor.schema.models import Benchmark, FailureIn, Measurement

log = logging.getLogger(__name__)


def calibrate(params: LoadgenParams, device: str, repeats: int = 10) -> Calibration:
    """Median time of one-sample and max_batch passes of the SUT the scenarios will run (eager
    or its captured graphs; synchronised by copying the result to the host, as it does), after a
    warm-up."""
    import torch

    threads_before = torch.get_num_threads()
    if params.threads and device == "cpu":
        torch.set_num_threads(params.threads)  # as the scenarios will run
    sut = TorchSut(params, device)
    batch = min(params.max_batch, params.sample_count)
    samples = [SimpleNamespace(index=i, id=i) for i in range(batch)]

    def timed(n: int) -> float:
        with torch.inference_mode():
            start = time.perf_counter()
            sut.launch(samples[:n]).argmax(1).cpu()
            return time.perf_counter() - start

    try:
        for _ in range(3):
            timed(1), timed(batch)
        single = statistics.median(timed(1) for _ in range(repeats))
        full = statistics.median(timed(batch) for _ in range(max(3, repeats // 2)))
    finally:
        sut.close()
        torch.set_num_threads(threads_before)
    return Calibration(single_latency_ms=single * 1e3, batch_qps=batch / full)


class TorchSut:
    """LoadGen SUT: a worker thread runs the model on the samples of each issued query."""

    def __init__(self, params: LoadgenParams, device: str) -> None:
        import torch

        from stack_advisor.collectors.models.torch_models import build

        self.torch = torch
        self.device = torch.device(device)
        torch.manual_seed(0)
        self.model = build(params.model, params.num_classes).to(self.device).eval()
        self.images = torch.randn(
            params.sample_count, 3, params.image_size, params.image_size, device=self.device
        )
        self.max_batch = params.max_batch
        self.graphs: dict[
            int, tuple[Any, Any, Any]
        ] = {}  # batch size -> (graph, static input, output)
        self.capture = params.sut == "cuda-graph"
        self.warm = self.capture or (device != "cpu" if params.warmup is None else params.warmup)
        self.warmed = 0
        self.queue: queue.Queue[list[Any] | None] = queue.Queue()
        self.worker = threading.Thread(target=self._serve, name="loadgen-sut", daemon=True)
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.worker.start()
        self.ready.wait()
        if self.error is not None:
            raise RuntimeError(f"SUT warm-up failed: {self.error}") from self.error

    def _warm_up(self) -> int:
        """One forward pass at each batch size 1..max_batch (outside LoadGen's timing), in the
        thread that serves: PyTorch keeps cuDNN's execution plans and cuBLAS handles per thread,
        so a warm-up elsewhere leaves every new size's first query to build them (H100, resnet50:
        ~60-75 ms per size). The number of sizes warmed."""
        torch = self.torch
        count = self.images.shape[0]
        with torch.inference_mode():
            for size in range(1, self.max_batch + 1):
                index = torch.arange(size, device=self.device) % count
                self.model(self.images.index_select(0, index)).argmax(1).cpu()
        return self.max_batch

    def _capture(self) -> int:
        """One CUDA graph per batch size 1..max_batch, each warmed on a side stream first, all in
        one memory pool (replays never overlap: a batch's output is read before the next replay);
        the number of sizes captured."""
        torch = self.torch
        count = self.images.shape[0]
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        with torch.inference_mode():
            for size in range(1, self.max_batch + 1):
                static = self.images.index_select(0, torch.arange(size, device=self.device) % count)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):
                        self.model(static)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=pool):
                    out = self.model(static)
                self.graphs[size] = (graph, static, out)
        torch.cuda.synchronize()
        return self.max_batch

    def launch(self, chunk: list[Any]) -> Any:
        """The model's logits for the samples of ``chunk`` (at most ``max_batch``), launched on
        the device and not waited for: eager, or the captured graph of that batch size replayed
        on the samples copied into its input."""
        torch = self.torch
        index = torch.tensor([s.index for s in chunk], device=self.device)
        with torch.inference_mode():
            if not self.graphs:
                return self.model(self.images.index_select(0, index))
            graph, static, out = self.graphs[len(chunk)]
            torch.index_select(self.images, 0, index, out=static)
            graph.replay()
            return out

    def issue(self, query_samples: list[Any]) -> None:
        self.queue.put(list(query_samples))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.queue.put(None)
        self.worker.join(timeout=30)

    def _start(self) -> bool:
        """The serving thread's first step: the warm-up, then the constructor is released; False
        where the warm-up failed (the constructor raises it)."""
        try:
            self.warmed = self._capture() if self.capture else self._warm_up() if self.warm else 0
        except BaseException as exc:  # reported by the constructor
            self.error = exc
            return False
        finally:
            self.ready.set()
        return True

    def next_batch(self) -> list[Any] | None:
        """The samples to serve next (None: closed): a query, with those that arrived while the
        device was busy, as a serving system batches them (Server; SingleStream has one query
        out, Offline one large query). Longer than ``max_batch`` only when one query is."""
        samples = self.queue.get()
        if samples is None:
            return None
        while len(samples) < self.max_batch:
            try:
                more = self.queue.get_nowait()
            except queue.Empty:
                break
            if more is None:
                self.queue.put(None)
                break
            samples.extend(more)
        return samples

    def _serve(self) -> None:
        import mlperf_loadgen as lg

        torch = self.torch
        if not self._start():
            return
        while (samples := self.next_batch()) is not None:
            for start in range(0, len(samples), self.max_batch):
                chunk = samples[start : start + self.max_batch]
                try:
                    with torch.inference_mode():
                        self.launch(chunk).argmax(
                            1
                        ).cpu()  # waits for the device, as a real server must
                except BaseException as exc:  # report, and still complete so LoadGen ends
                    self.error = self.error or exc
                responses = [lg.QuerySampleResponse(s.id, 0, 0) for s in chunk]
                lg.QuerySamplesComplete(responses)


def _settings(lg: Any, params: LoadgenParams, scenario: str) -> Any:
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = params.min_duration_ms
    settings.max_duration_ms = params.max_duration_ms
    settings.min_query_count = params.min_query_count
    settings.single_stream_expected_latency_ns = int(params.single_stream_expected_latency_ms * 1e6)
    settings.server_target_qps = params.server_target_qps
    settings.server_target_latency_ns = int(params.server_target_latency_ms * 1e6)
    settings.offline_expected_qps = params.offline_expected_qps
    return settings


def run_scenario(params: LoadgenParams, scenario: str, device: str, outdir: Path) -> dict[str, Any]:
    """Run one scenario with the real LoadGen; return the parsed summary LoadGen wrote."""
    import mlperf_loadgen as lg
    import torch

    threads_before, autotune_before = torch.get_num_threads(), torch.backends.cudnn.benchmark
    if params.threads and device == "cpu":
        torch.set_num_threads(params.threads)
    # served batch sizes vary (1 to max_batch): cuDNN's autotuning of each new shape would stall
    # queries for hundreds of milliseconds inside the timed run (another runner may have set it)
    torch.backends.cudnn.benchmark = False
    try:
        # no cyclic collection inside the timed run: a collection walks every live object of the
        # process (a collector that ran other benchmarks first holds millions), stalling the SUT
        # thread (CPU, 400 q/s, 3M live objects: Server p99 238-364 ms, 25 ms with it paused)
        with gc_paused():
            return _run_scenario(lg, params, scenario, device, outdir)
    finally:
        torch.set_num_threads(threads_before)
        torch.backends.cudnn.benchmark = autotune_before


def _run_scenario(
    lg: Any, params: LoadgenParams, scenario: str, device: str, outdir: Path
) -> dict[str, Any]:
    sut_impl = TorchSut(params, device)
    sut = lg.ConstructSUT(sut_impl.issue, sut_impl.flush)
    qsl = lg.ConstructQSL(params.sample_count, params.sample_count, lambda s: None, lambda s: None)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(outdir)
    log_settings.log_output.copy_summary_to_stdout = False
    try:
        lg.StartTestWithLogSettings(sut, qsl, _settings(lg, params, scenario), log_settings)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        sut_impl.close()
    if sut_impl.error is not None:
        raise RuntimeError(f"SUT forward pass failed: {sut_impl.error}") from sut_impl.error
    summary = parse_summary((outdir / "mlperf_log_summary.txt").read_text())
    summary["warmed_batch_sizes"] = sut_impl.warmed
    summary["sut"] = params.sut
    return summary


def summary_measurement(summary: dict[str, Any], benchmark: Benchmark) -> Measurement | None:
    headline = primary_result(summary)
    if headline is None:
        return None
    metric, value, unit, higher = headline
    unmet = [
        k.replace("_satisfied", "").replace("_", " ")
        for k, ok in summary.get("constraints", {}).items()
        if not ok
    ]
    note = f"LoadGen result {summary.get('result', 'missing')}"
    if unmet:
        note += f" ({', '.join(unmet)} not satisfied)"
    estimate = summary.get("early_stopping", {}).get("p90_estimate_ns")
    if estimate is not None:
        note += f"; early-stopping p90 estimate {estimate / 1e6:.3f} ms"
    latency = summary.get("latency_ns", {})
    if "p50" in latency and "p99" in latency:
        note += f"; latency p50 {latency['p50'] / 1e6:.3f} ms, p99 {latency['p99'] / 1e6:.3f} ms"
    if summary.get("warmed_batch_sizes"):
        done = "replays CUDA graphs captured" if summary.get("sut") == "cuda-graph" else "warmed up"
        note += f"; SUT {done} at batch sizes 1-{summary['warmed_batch_sizes']} before timing"
    p10 = p90 = None
    if unit == "ms" and "p90" in latency:
        p90 = latency["p90"] / 1e6
    return Measurement(
        benchmark=benchmark,
        metric=metric,
        value=value,
        unit=unit,
        higher_is_better=higher,
        p10=p10,
        p90=p90,
        valid=bool(summary.get("valid", False)),
        note=note,
    )


class LoadgenRunner:
    name = "loadgen"
    description = (
        "MLPerf Inference SingleStream/Server/Offline with the real LoadGen (CNN SUT, PyTorch)"
    )

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        _require_environment()
        params = params_for(ctx)
        from stack_advisor.collectors.models.torch_bench import resolve_device, stack_facts

        device = resolve_device(ctx.device)
        if params.sut == "cuda-graph" and device != "cuda":
            raise Unsupported(
                f"loadgen: sut=cuda-graph replays CUDA graphs, and this run's device is {device}"
            )
        result = RunnerResult(stack_extra=stack_facts())
        calibration = None
        if params.calibrate:
            if progress:
                progress("LoadGen calibration", 0.0)
            calibration = calibrate(params, device)
            params = calibration.apply(params, set(ctx.options))
        for i, scenario in enumerate(params.scenarios):
            if progress:
                progress(f"LoadGen {scenario}", i / len(params.scenarios))
            _run_one(params, scenario, device, calibration, result)
        if progress:
            progress("LoadGen done", 1.0)
        return result


def _require_environment() -> None:
    """Raises MissingEnvironment where LoadGen or PyTorch (the SUT's) is not installed."""
    if importlib.util.find_spec("mlperf_loadgen") is None:
        raise MissingEnvironment(
            "loadgen: mlcommons-loadgen is not installed: pip install 'stack-advisor[loadgen]'"
        )
    if importlib.util.find_spec("torch") is None:
        raise MissingEnvironment(
            "loadgen: its SUT needs PyTorch, which is not installed: pip install "
            "'stack-advisor[torch]'"
        )


def _run_one(
    params: LoadgenParams,
    scenario: str,
    device: str,
    calibration: Calibration | None,
    result: RunnerResult,
) -> None:
    """Run one scenario into ``result``: its measurement, or a failure (of the run, or of a
    summary without a headline figure)."""
    family, name = benchmark_of(params.model)
    benchmark = Benchmark(family=family, name=name, parameters=params.identity(scenario, device))
    with tempfile.TemporaryDirectory(prefix=f"loadgen-{scenario}-") as outdir:
        try:
            summary = run_scenario(params, scenario, device, Path(outdir))
        except (RuntimeError, OSError, InvalidInput) as exc:
            tail = _tail(Path(outdir) / "mlperf_log_summary.txt")
            result.failures.append(
                FailureIn(
                    benchmark=benchmark,
                    stage="run",
                    error_class=type(exc).__name__,
                    message=str(exc)[:500],
                    log_tail=tail,
                )
            )
            return
    measurement = summary_measurement(summary, benchmark)
    if measurement is None:
        result.failures.append(
            FailureIn(
                benchmark=benchmark,
                stage="parse",
                error_class="NoResult",
                message=f"LoadGen summary for {scenario} has no headline figure",
            )
        )
        return
    if calibration is not None:
        measurement.note = f"{measurement.note}; {calibration.note()}"
    result.measurements.append(measurement)


def _tail(path: Path) -> str | None:
    try:
        return path.read_text()[-4000:]
    except OSError:
        return None


register_runner(LoadgenRunner())
