"""Parse tf_cnn_benchmarks output and turn it into measurements (or a failure).

The script (github.com/tensorflow/benchmarks, scripts/tf_cnn_benchmarks) prints a header block,
one line per displayed step and a closing ``total images/sec`` line::

    TensorFlow:  2.21
    Model:       resnet50
    ...
    Batch size:  64 global
                 64 per device
    ==========
    Step	Img/sec	total_loss
    1	images/sec: 93.8 +/- 0.0 (jitter = 0.0)	8.507
    10	images/sec: 93.8 +/- 3.2 (jitter = 12.7)	8.507
    ----------------------------------------------------------------
    total images/sec: 189.07

A step line's figures are over the steps so far: the mean speed (batch / mean step time), the
standard error of the per-step speeds and their jitter (1.4826 × median absolute deviation).
Multi-worker runs (Horovod, distributed_replicated) print one ``total images/sec`` per worker,
each already cluster-wide, so several totals are averaged, never summed. A log with a Python
traceback, or without a total, is a failure and never yields a measurement.

``parse_tf_cnn_log`` is pure; ``tf_cnn_outcome`` maps a parsed log to the domain model; the
``advisor import tf-cnn`` command calls ``import_tf_cnn_log``.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from stack_advisor.catalog.rounds import same_release
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    FailureIn,
    Host,
    Measurement,
    Placement,
    Provenance,
    ResultDocument,
    Run,
    SoftwareStack,
    SourceKind,
)

FAMILY = "tf_cnn"
LOG_TAIL_LINES = 40
LOG_TAIL_CHARS = 6000

# mpirun --tag-output prefixes each line with "[jobid,rank]<stdout>:".
_MPI_TAG = re.compile(r"^\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:\s?")
_HEADER = re.compile(r"^(?P<key>[A-Z][A-Za-z0-9 ]*?):\s+(?P<value>\S.*?)\s*$")
_PER_DEVICE = re.compile(r"^\s+(?P<n>\d+(?:\.\d+)?)\s+per device\s*$")
_GLOBAL = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s+global$")
_NUM = r"(?:[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)"
_STEP = re.compile(
    rf"^(?P<step>\d+)\s+images/sec:\s*(?P<speed>{_NUM})"
    rf"(?:\s*\+/-\s*(?P<se>{_NUM})\s*\(jitter\s*=\s*(?P<jitter>{_NUM})\))?"
    rf"(?:\s+(?P<loss>{_NUM}))?(?:\s+(?P<top1>{_NUM})\s+(?P<top5>{_NUM}))?\s*$",
    re.IGNORECASE,
)
_TOTAL = re.compile(rf"^total images/sec:\s*(?P<value>{_NUM})\s*$", re.IGNORECASE)
_ACCURACY = re.compile(
    rf"Accuracy @ 1 = (?P<top1>{_NUM})\s+Accuracy @ 5 = "
    rf"(?P<top5>{_NUM})(?:\s+\[(?P<n>\d+) examples\])?"
)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(
    r"^(?P<cls>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::\s*(?P<msg>.*))?$"
)

# Header keys we understand, mapped to snake_case names; others are kept under their own name.
_HEADER_KEYS = {
    "TensorFlow": "tensorflow",
    "Model": "model",
    "Dataset": "dataset",
    "Mode": "mode",
    "SingleSess": "single_session",
    "Batch size": "batch_size",
    "Num batches": "num_batches",
    "Num epochs": "num_epochs",
    "Devices": "devices",
    "NUMA bind": "numa_bind",
    "Data format": "data_format",
    "Layout optimizer": "layout_optimizer",
    "Optimizer": "optimizer",
    "Variables": "variable_update",
    "AllReduce": "all_reduce_spec",
    "Sync": "sync",
    "Staged vars": "staged_vars",
    "Horovod on": "horovod_device",
    "RewriterConfig": "rewriter_config",
}


@dataclass
class TfCnnStep:
    step: int
    images_per_sec: float
    stderr: float | None
    jitter: float | None
    loss: float | None
    top_1: float | None = None
    top_5: float | None = None
    worker: int | None = None


@dataclass
class TfCnnLog:
    """What one tf_cnn_benchmarks log says. ``totals`` has one entry per worker that printed one."""

    header: dict[str, str] = field(default_factory=dict)
    global_batch: int | None = None
    per_device_batch: float | None = None
    devices: list[str] = field(default_factory=list)
    steps: list[TfCnnStep] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    eval_top_1: float | None = None
    eval_top_5: float | None = None
    traceback: bool = False
    error_class: str | None = None
    error_message: str | None = None
    tail: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.totals) and not self.traceback

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what ``advisor import tf-cnn --json`` prints)."""

        def finite(x: float | None) -> float | str | None:
            return x if x is None or math.isfinite(x) else str(x)

        return {
            "ok": self.ok,
            "header": dict(self.header),
            "global_batch": self.global_batch,
            "per_device_batch": self.per_device_batch,
            "devices": list(self.devices),
            "steps": [
                {k: finite(v) if isinstance(v, float) else v for k, v in vars(s).items()}
                for s in self.steps
            ],
            "totals": list(self.totals),
            "eval_top_1": self.eval_top_1,
            "eval_top_5": self.eval_top_5,
            "error_class": self.error_class,
            "error_message": self.error_message,
        }


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    return float(text)


def _tail(lines: list[str]) -> str:
    return "\n".join(lines[-LOG_TAIL_LINES:])[-LOG_TAIL_CHARS:]


def _header_line(log: TfCnnLog, line: str, last_key: str | None) -> tuple[bool, str | None]:
    """(whether ``line`` was a header field, the header key last read)."""
    per_device = _PER_DEVICE.match(line)
    if per_device and last_key == "batch_size":
        log.per_device_batch = float(per_device.group("n"))
        return True, last_key
    header = _HEADER.match(line.strip())
    if not (header and header.group("key") in _HEADER_KEYS):
        return False, last_key
    key = _HEADER_KEYS[header.group("key")]
    # Multi-worker logs repeat the header once per worker: keep the first.
    log.header.setdefault(key, header.group("value"))
    if key == "batch_size":
        match = _GLOBAL.match(header.group("value"))
        if match and log.global_batch is None:
            log.global_batch = int(float(match.group("n")))
    return True, key


def _body_line(log: TfCnnLog, stripped: str, worker: int | None) -> None:
    """A step, a total, the accuracy, or a traceback's lines."""
    step = _STEP.match(stripped)
    if step:
        log.steps.append(
            TfCnnStep(
                step=int(step.group("step")),
                images_per_sec=float(step.group("speed")),
                stderr=_num(step.group("se")),
                jitter=_num(step.group("jitter")),
                loss=_num(step.group("loss")),
                top_1=_num(step.group("top1")),
                top_5=_num(step.group("top5")),
                worker=worker,
            )
        )
        return
    total = _TOTAL.match(stripped)
    if total:
        log.totals.append(float(total.group("value")))
        return
    accuracy = _ACCURACY.search(stripped)
    if accuracy:
        log.eval_top_1 = float(accuracy.group("top1"))
        log.eval_top_5 = float(accuracy.group("top5"))
        return
    if stripped.startswith(_TRACEBACK):
        log.traceback = True
        log.error_class, log.error_message = "Traceback", None
        return
    exc = _EXCEPTION_LINE.match(stripped)
    if exc and log.traceback:
        log.error_class = exc.group("cls").rsplit(".", 1)[-1]
        log.error_message = (exc.group("msg") or "").strip() or None


def parse_tf_cnn_log(text: str) -> TfCnnLog:
    """Parse tf_cnn_benchmarks output (any version since 2017). Never raises on odd content:
    what cannot be read is left out, and ``ok`` says whether a total was printed without a crash."""
    log = TfCnnLog()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # The last line of a log cut mid-write has no newline: it may be half a number
    # ("total images/sec: 5" of 512.3), so it is kept for the tail but not parsed.
    in_header = False
    last_key: str | None = None
    for raw in lines[:-1]:
        worker: int | None = None
        tag = _MPI_TAG.match(raw)
        if tag:
            worker = int(tag.group("rank"))
            raw = raw[tag.end() :]
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("TensorFlow:") and not log.steps:
            in_header = True
        if in_header:
            if stripped.startswith("=========="):
                in_header = False
                continue
            was_header, last_key = _header_line(log, line, last_key)
            if was_header:
                continue
        _body_line(log, stripped, worker)
    if "devices" in log.header:
        log.devices = re.findall(r"'([^']+)'", log.header["devices"])
    nonblank = [line for line in lines if line.strip()]
    log.tail = _tail(nonblank)
    return log


def _device_kind(devices: list[str]) -> str | None:
    kinds = {
        ("gpu" if "gpu" in d.lower() else "cpu" if "cpu" in d.lower() else "other") for d in devices
    }
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else None)


def benchmark_for(log: TfCnnLog, extra: dict[str, Any] | None = None) -> Benchmark:
    """The workload as the header describes it (plus ``extra`` facts the header lacks, such as
    ``use_fp16`` or ``xla`` known to the runner). Run length (num_batches) is not identity."""
    h = log.header
    per_device = log.per_device_batch
    parameters: dict[str, Any] = {
        "model": h.get("model"),
        "dataset": h.get("dataset"),
        # "forward-only" (TF 1.x) and "forward only" (TF 2.x) are the same mode.
        "mode": re.sub(r"[\s_]+", "-", h["mode"].strip().lower()) if h.get("mode") else None,
        "batch_size_per_device": (
            int(per_device) if per_device is not None and per_device.is_integer() else per_device
        ),
        "global_batch_size": log.global_batch,
        "num_devices": len(log.devices) or None,
        "device": _device_kind(log.devices),
        "data_format": h.get("data_format"),
        "optimizer": h.get("optimizer"),
        "variable_update": h.get("variable_update"),
    }
    if "all_reduce_spec" in h:
        parameters["all_reduce_spec"] = h["all_reduce_spec"]
    parameters.update(extra or {})
    parameters = {k: v for k, v in parameters.items() if v is not None}
    return Benchmark(family=FAMILY, name=h.get("model") or "unknown", parameters=parameters)


def _failure(
    log: TfCnnLog, benchmark: Benchmark | None, crashed: bool, returncode: int | None
) -> FailureIn:
    """The one failure of a log that crashed or printed no total."""
    if crashed:
        error_class = log.error_class or f"ExitCode{returncode}"
        message = log.error_message or (
            f"tf_cnn_benchmarks exited with status {returncode}"
            if returncode not in (None, 0)
            else "tf_cnn_benchmarks crashed"
        )
    elif log.steps:
        error_class, message = (
            "TruncatedLog",
            (f"log ends after step {log.steps[-1].step} without a 'total images/sec' line"),
        )
    elif log.header:
        error_class, message = "TruncatedLog", "log has a header but no step and no total"
    else:
        error_class, message = (
            "NotATfCnnLog",
            "no tf_cnn_benchmarks header, steps or total found",
        )
    return FailureIn(
        benchmark=benchmark,
        stage="run" if crashed or log.header else "parse",
        error_class=error_class,
        message=message,
        log_tail=log.tail or None,
    )


def _throughput(log: TfCnnLog, benchmark: Benchmark) -> Measurement:
    """images/s: the mean of the totals printed, its spread from the last step's standard error."""
    totals = log.totals
    value = sum(totals) / len(totals)
    notes = []
    stddev = cv = None
    samples = 1
    last = _last_step(log)
    if len(totals) > 1:
        notes.append(
            f"{len(totals)} workers each printed a cluster-wide total "
            f"({', '.join(f'{t:.2f}' for t in totals)}); averaged, not summed"
        )
        samples = len(totals)
    elif last is not None and last.stderr is not None and math.isfinite(last.stderr):
        # tf_cnn_benchmarks prints the standard error np.std(speeds)/sqrt(n) over n steps.
        samples = last.step
        stddev = last.stderr * math.sqrt(last.step)
        cv = stddev / value if value > 0 else None
    if last is not None and last.stderr is not None:
        notes.append(
            f"last step {last.step}: {last.images_per_sec} +/- {last.stderr} images/sec "
            f"(jitter = {last.jitter})"
        )
    if last is not None and last.loss is not None and math.isnan(last.loss):
        notes.append("loss is nan")
    if log.header.get("num_batches"):
        notes.append(f"num_batches={log.header['num_batches']}")
    return Measurement(
        benchmark=benchmark,
        metric="images_per_sec",
        value=value,
        unit="images/s",
        higher_is_better=True,
        samples=samples,
        stddev=stddev,
        cv=cv,
        note="; ".join(notes) or None,
    )


def tf_cnn_outcome(
    log: TfCnnLog,
    *,
    extra_parameters: dict[str, Any] | None = None,
    returncode: int | None = None,
) -> tuple[list[Measurement], list[FailureIn]]:
    """Measurements of a successful log, or exactly one failure (with the log's tail)."""
    benchmark = benchmark_for(log, extra_parameters) if log.header.get("model") else None
    crashed = log.traceback or (returncode not in (None, 0))
    if crashed or not log.totals:
        return [], [_failure(log, benchmark, crashed, returncode)]
    if benchmark is None:
        benchmark = Benchmark(
            family=FAMILY, name="unknown", parameters=dict(extra_parameters or {})
        )
    measurements = [_throughput(log, benchmark)]
    for metric, acc in (("top_1_accuracy", log.eval_top_1), ("top_5_accuracy", log.eval_top_5)):
        if acc is not None and math.isfinite(acc):
            measurements.append(
                Measurement(benchmark=benchmark, metric=metric, value=acc, unit="fraction")
            )
    return measurements, []


def _last_step(log: TfCnnLog) -> TfCnnStep | None:
    """The last step line of the first worker that printed one (rank 0 under mpirun tags)."""
    if not log.steps:
        return None
    workers = {s.worker for s in log.steps}
    first = 0 if 0 in workers else log.steps[0].worker
    mine = [s for s in log.steps if s.worker == first]
    return mine[-1]


def tensorflow_stack(stack: SoftwareStack, printed: str | None) -> SoftwareStack:
    """The stack of a tf_cnn_benchmarks log: TensorFlow, at the version the log printed (more
    precise when the stack's ``extra`` or its TensorFlow version agree with it). A fingerprint's
    framework describes the node's default Python (often torch), not the log, and is replaced.

    Raises:
        InvalidInput: the caller named a TensorFlow version the log contradicts.
    """
    named = stack.framework_version if stack.framework == "tensorflow" else None
    if named and printed and not _one_release(named, printed):
        raise InvalidInput(
            f"framework_version: {named!r} was given, but the log was written by "
            f"TensorFlow {printed}; leave --framework-version out or fix it"
        )
    known = stack.extra.get("tensorflow")
    version = named or (known if known and printed and _one_release(known, printed) else printed)
    extra = {k: v for k, v in stack.extra.items() if k != "tensorflow"}
    return stack.model_copy(
        update={"framework": "tensorflow", "framework_version": version, "extra": extra}
    )


def _one_release(a: str, b: str) -> bool:
    """'2.21.0' and '2.21' are one release ('2.21.1' and '2.21' too: neither says more than the
    other); '2.15.0' and '2.21' are not."""
    return same_release(a, b) or same_release(b, a)


def import_tf_cnn_log(
    text: str,
    *,
    stack: SoftwareStack,
    accelerator: Accelerator,
    placement: Placement,
    host: Host | None = None,
    run_id: str | None = None,
) -> ResultDocument:
    """A ResultDocument for a saved log: its measurements, or one failure when it crashed or
    has no total. Raises InvalidInput when ``text`` is empty. The framework version printed in
    the header fills ``stack`` when the caller did not name a framework."""
    if not text.strip():
        raise InvalidInput(
            "tf_cnn_benchmarks log is empty; pass the file the script's output was saved to"
        )
    log = parse_tf_cnn_log(text)
    measurements, failures = tf_cnn_outcome(log)
    stack = tensorflow_stack(stack, log.header.get("tensorflow"))
    run = Run(run_id=run_id or f"import-tf-cnn-{uuid.uuid4().hex[:12]}", collector="tf-cnn-import")
    return ResultDocument(
        run=run,
        provenance=Provenance(
            kind=SourceKind.MEASURED,
            source="tf_cnn_benchmarks-log",
            details={"host": host.name} if host else {},
        ),
        stack=stack,
        accelerator=accelerator,
        placement=placement,
        host=host,
        measurements=measurements,
        failures=failures,
    )
