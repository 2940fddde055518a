"""Run tf_cnn_benchmarks (github.com/tensorflow/benchmarks) and parse what it prints.

The script is not a package: it is baked into the collector image (the collector Dockerfile clones
it at a pinned commit under /opt/benchmarks/scripts/tf_cnn_benchmarks/) or given by path, via the
``script`` option or the ``TF_CNN_BENCHMARKS_SCRIPT`` environment variable. In a source checkout
it is found in the shared third-party copy beside it
(``../shared/third_party/tensorflow-benchmarks``, see its SOURCE.md), so tests and local runs need
no setup. Its output is streamed line by line (progress
follows the step lines) and parsed by ``stack_advisor.collectors.importers.tf_cnn``, the same parser
``advisor import tf-cnn`` uses, so a live run and an imported log give the same measurement.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stack_advisor.collectors.importers.tf_cnn import parse_tf_cnn_log, tf_cnn_outcome
from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment, Unsupported
from stack_advisor.schema.models import FailureIn

log = logging.getLogger(__name__)

SCRIPT_ENV = "TF_CNN_BENCHMARKS_SCRIPT"
PYTHONPATH_ENV = "TF_CNN_BENCHMARKS_PYTHONPATH"
SCRIPT_NAME = "tf_cnn_benchmarks.py"
TF_BENCHMARKS_COMMIT = "8fb79079265933ad39bea628b777af662f5bf15d"
"""The tensorflow/benchmarks commit the collector image and the shared copy pin."""
SHARED_COPY = (
    Path(__file__).resolve().parents[3]
    / ".."
    / "shared"
    / "third_party"
    / "tensorflow-benchmarks"
    / "scripts"
    / "tf_cnn_benchmarks"
    / SCRIPT_NAME
)
"""The third-party copy next to a source checkout (../shared/third_party from the project root)."""
CONVENTIONAL_PATHS = (
    Path("/opt/benchmarks/scripts/tf_cnn_benchmarks") / SCRIPT_NAME,
    Path("/benchmarks/scripts/tf_cnn_benchmarks") / SCRIPT_NAME,
    Path("/workspace/benchmarks/scripts/tf_cnn_benchmarks") / SCRIPT_NAME,
    Path.home() / ".cache/stack-advisor/tf-benchmarks/scripts/tf_cnn_benchmarks" / SCRIPT_NAME,
    SHARED_COPY,
)


class TfCnnParams(BaseModel):
    """tf_cnn_benchmarks flags we set; each maps to ``--name=value``. ``batch_size`` is per device,
    as in the script (the global batch is batch_size × num_gpus × workers)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="resnet50", pattern=r"^[A-Za-z0-9_]+$")
    batch_size: int = Field(default=32, ge=1, description="per device")
    num_gpus: int = Field(default=1, ge=1)
    device: Literal["cpu", "gpu"] = "gpu"
    data_format: Literal["NCHW", "NHWC"] = "NCHW"
    variable_update: Literal[
        "parameter_server",
        "replicated",
        "distributed_replicated",
        "independent",
        "distributed_all_reduce",
        "collective_all_reduce",
        "horovod",
    ] = "parameter_server"
    forward_only: bool = False
    use_fp16: bool = False
    xla: bool = False
    num_batches: int = Field(default=100, ge=1)
    num_warmup_batches: int | None = Field(default=None, ge=0)
    optimizer: Literal["sgd", "momentum", "rmsprop", "adam"] = "sgd"
    local_parameter_device: Literal["cpu", "gpu", "CPU", "GPU"] = "gpu"
    display_every: int = Field(default=10, ge=1)

    def argv(self) -> list[str]:
        """The script's command-line flags, in a stable order."""
        args = []
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = "True" if value else "False"
            args.append(f"--{name}={value}")
        return args

    def identity(self) -> dict[str, Any]:
        """Workload facts the log's header does not print (added to the Benchmark parameters)."""
        return {"use_fp16": self.use_fp16, "xla": self.xla}


def params_for(ctx: RunContext, cuda: bool) -> TfCnnParams:
    """Profile defaults, then ``ctx.options`` overrides. Raises InvalidInput naming the field."""
    on_gpu = ctx.device == "cuda" or (ctx.device == "auto" and cuda)
    if ctx.profile == "quick":
        base: dict[str, Any] = dict(
            model="trivial", batch_size=2, num_batches=10, num_warmup_batches=2
        )
    else:
        base = dict(model="resnet50", batch_size=64 if on_gpu else 16, num_batches=100)
    base["display_every"] = max(1, base["num_batches"] // 10)
    if on_gpu:
        base.update(device="gpu", data_format="NCHW", local_parameter_device="gpu")
    else:
        base.update(device="cpu", data_format="NHWC", local_parameter_device="cpu")
    known = set(TfCnnParams.model_fields)
    base.update({k: v for k, v in ctx.options.items() if k in known})
    try:
        return TfCnnParams(**base)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"tf-cnn option {field}={first.get('input')!r} is invalid: {first['msg']}"
        ) from exc


def find_script(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The script: explicit path, then $TF_CNN_BENCHMARKS_SCRIPT, then the conventional places.
    Raises Unsupported (with where it looked and how to point at it) when none exists."""
    candidates: list[Path] = []
    if explicit:
        path = Path(explicit).expanduser()
        if path.is_dir():
            path = path / SCRIPT_NAME
        if not path.is_file():
            raise InvalidInput(f"tf-cnn option script={str(explicit)!r}: no such file")
        return path
    env = os.environ.get(SCRIPT_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise InvalidInput(f"{SCRIPT_ENV}={env!r}: no such file")
        return path
    candidates.extend(CONVENTIONAL_PATHS)
    for path in candidates:
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise MissingEnvironment(
        f"tf_cnn_benchmarks.py not found (looked in {looked}); set {SCRIPT_ENV} or pass the "
        "option script=PATH (clone github.com/tensorflow/benchmarks)"
    )


class TfCnnRunner:
    name = "tf-cnn"
    description = "tf_cnn_benchmarks.py (TensorFlow CNN training/inference throughput, images/sec)"

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        python = str(ctx.options.get("python") or sys.executable)
        if python == sys.executable and importlib.util.find_spec("tensorflow") is None:
            raise MissingEnvironment(
                "tf-cnn: TensorFlow is not installed in this Python: pip install "
                "'stack-advisor[tensorflow]'"
            )
        if python == sys.executable and not ctx.options.get("pythonpath"):
            _check_keras2()
        script = find_script(ctx.options.get("script"))
        params = params_for(ctx, cuda=_tf_sees_gpu(ctx))
        timeout = float(ctx.options.get("timeout_s", 600 if ctx.profile == "quick" else 3600))
        text, returncode = run_script(
            python, script, params, timeout, progress, pythonpath=ctx.options.get("pythonpath")
        )
        parsed = parse_tf_cnn_log(text)
        extra = params.identity()
        measurements, failures = tf_cnn_outcome(
            parsed, extra_parameters=extra, returncode=returncode
        )
        if returncode is None:  # killed on timeout: whatever it printed is not a result
            benchmark = failures[0].benchmark if failures else measurements[0].benchmark
            measurements, failures = (
                [],
                [
                    FailureIn(
                        benchmark=benchmark,
                        stage="run",
                        error_class="Timeout",
                        message=f"tf_cnn_benchmarks did not finish within {timeout:.0f} s",
                        log_tail=parsed.tail or None,
                    )
                ],
            )
        result = RunnerResult(measurements=measurements, failures=failures)
        if parsed.header.get("tensorflow"):
            version = parsed.header["tensorflow"]
            # the log prints major.minor ("2.20"); the installed distribution knows the patch, so
            # this run and the fingerprint (and other runners) name the same stack
            installed = _tensorflow_version() if python == sys.executable else None
            if installed and installed.startswith(f"{version}."):
                version = installed
            result.stack_extra = {"framework": "tensorflow", "framework_version": version}
        return result


def _tensorflow_version() -> str | None:
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _check_keras2() -> None:
    """TensorFlow 2.16+ ships Keras 3; the script's tf.compat.v1 layers need Keras 2 (tf-keras)."""
    version = _tensorflow_version()
    if version is None or importlib.util.find_spec("tf_keras") is not None:
        return
    major_minor = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if major_minor >= (2, 16):
        raise Unsupported(
            f"tf-cnn: TensorFlow {version} needs Keras 2 for tf_cnn_benchmarks: "
            f"pip install --no-deps 'tf-keras~={'.'.join(map(str, major_minor))}.0'"
        )


def _tf_sees_gpu(ctx: RunContext) -> bool:
    if ctx.device != "auto":
        return ctx.device == "cuda"
    # Avoid importing TensorFlow here (seconds, and it grabs GPU memory): nvidia-smi's presence
    # and a visible device are what tf_cnn_benchmarks will use.
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return Path("/dev/nvidiactl").exists()


def run_script(
    python: str,
    script: Path,
    params: TfCnnParams,
    timeout_s: float,
    progress: Progress | None = None,
    *,
    pythonpath: str | None = None,
) -> tuple[str, int | None]:
    """Run the script, streaming its output; returns (output, exit status or None on timeout)."""
    env = dict(os.environ)
    # The current script uses tf.compat.v1 layers that need Keras 2 (the tf-keras package).
    env.setdefault("TF_USE_LEGACY_KERAS", "1")
    extra_path = pythonpath or os.environ.get(PYTHONPATH_ENV)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH")) if p)
    argv = [python, str(script), *params.argv()]
    log.info("running %s", " ".join(argv))
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tf-cnn-") as workdir:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        started = time.monotonic()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                log.debug("tf_cnn: %s", line.rstrip())
                if progress is not None:
                    _report(line, params.num_batches, progress)
            returncode: int | None = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if time.monotonic() - started >= timeout_s and returncode not in (0,):
            lines.append(f"[stack-advisor] killed after {timeout_s:.0f} s timeout\n")
            returncode = None
    return "".join(lines), returncode


def _report(line: str, num_batches: int, progress: Progress) -> None:
    head = line.split("\t", 1)[0].strip()
    if head.isdigit() and "images/sec" in line:
        progress(f"step {head}/{num_batches}", min(1.0, int(head) / num_batches))
    elif line.startswith("Running warm up"):
        progress("warm-up", 0.0)


register_runner(TfCnnRunner())
