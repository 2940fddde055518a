"""tf_cnn_benchmarks runner: command line from typed parameters, and a real run when the script
is on this machine (it is never committed: clone github.com/tensorflow/benchmarks and point
TF_CNN_BENCHMARKS_SCRIPT at scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from collectors.runners import RunContext, get_runner
from collectors.runners.tf_cnn import TfCnnParams, find_script, params_for
from graph_schema.errors import InvalidInput, Unsupported

CACHE = Path.home() / ".cache/stack-advisor/tf-benchmarks"


def test_argv_from_typed_parameters() -> None:
    params = TfCnnParams(
        model="resnet50", batch_size=64, num_gpus=2, device="gpu", data_format="NCHW",
        variable_update="replicated", forward_only=False, use_fp16=True, xla=True,
        num_batches=50, num_warmup_batches=5, optimizer="momentum", local_parameter_device="gpu",
    )
    argv = params.argv()
    for flag in (
        "--model=resnet50", "--batch_size=64", "--num_gpus=2", "--device=gpu", "--data_format=NCHW",
        "--variable_update=replicated", "--forward_only=False", "--use_fp16=True", "--xla=True",
        "--num_batches=50", "--num_warmup_batches=5", "--optimizer=momentum",
        "--local_parameter_device=gpu",
    ):
        assert flag in argv
    assert "--num_warmup_batches" not in " ".join(TfCnnParams().argv())  # None: script default


def test_quick_profile_on_cpu_and_overrides() -> None:
    p = params_for(RunContext(profile="quick", device="cpu", options={"model": "resnet50"}), cuda=False)
    assert (p.model, p.device, p.data_format, p.local_parameter_device) == ("resnet50", "cpu", "NHWC", "cpu")
    g = params_for(RunContext(profile="full", device="cuda"), cuda=True)
    assert (g.device, g.data_format, g.batch_size) == ("gpu", "NCHW", 64)


def test_invalid_option_names_field_and_value() -> None:
    with pytest.raises(InvalidInput, match=r"batch_size=0"):
        params_for(RunContext(options={"batch_size": 0}), cuda=False)
    with pytest.raises(InvalidInput, match=r"data_format='NWHC'"):
        params_for(RunContext(options={"data_format": "NWHC"}), cuda=False)


def test_missing_script_is_unsupported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TF_CNN_BENCHMARKS_SCRIPT", raising=False)
    monkeypatch.setattr("collectors.runners.tf_cnn.CONVENTIONAL_PATHS", (tmp_path / "none.py",))
    with pytest.raises(Unsupported, match="TF_CNN_BENCHMARKS_SCRIPT"):
        find_script()
    with pytest.raises(InvalidInput, match="no such file"):
        find_script(tmp_path / "nope.py")


def _real_script() -> Path | None:
    env = os.environ.get("TF_CNN_BENCHMARKS_SCRIPT")
    path = Path(env) if env else CACHE / "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"
    return path if path.is_file() else None


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow not installed")
@pytest.mark.skipif(
    _real_script() is None,
    reason="tf_cnn_benchmarks.py not on this machine (set TF_CNN_BENCHMARKS_SCRIPT or put a "
    "github.com/tensorflow/benchmarks checkout under ~/.cache/stack-advisor/tf-benchmarks)",
)
def test_real_script_quick_profile() -> None:
    options: dict = {"script": str(_real_script()), "num_batches": 5, "num_warmup_batches": 1}
    site = CACHE / "site"  # tf-keras installed with pip --target (the script needs Keras 2)
    if site.is_dir():
        options["pythonpath"] = str(site)
    seen: list[float] = []
    result = get_runner("tf-cnn").run(
        RunContext(profile="quick", device="cpu", options=options), lambda msg, f: seen.append(f)
    )
    assert result.failures == [], result.failures[0].log_tail if result.failures else ""
    (m,) = result.measurements
    assert m.metric == "images_per_sec" and m.value > 0
    assert m.benchmark.name == "trivial" and m.benchmark.parameters["device"] == "cpu"
    assert m.benchmark.parameters["use_fp16"] is False
    assert result.stack_extra["framework"] == "tensorflow"
    assert seen and seen[-1] == 1.0


@pytest.mark.skipif(_real_script() is None, reason="tf_cnn_benchmarks.py not on this machine")
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow not installed")
def test_real_script_crash_is_a_failure() -> None:
    options = {"script": str(_real_script()), "model": "nosuchmodel", "num_batches": 2}
    if (CACHE / "site").is_dir():
        options["pythonpath"] = str(CACHE / "site")
    result = get_runner("tf-cnn").run(RunContext(profile="quick", device="cpu", options=options))
    assert result.measurements == []
    (failure,) = result.failures
    assert failure.error_class == "ValueError" and "nosuchmodel" in (failure.log_tail or "")
