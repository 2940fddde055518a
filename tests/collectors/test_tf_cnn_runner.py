"""tf_cnn_benchmarks runner: command line from typed parameters, and a real run of the script from
the shared third-party copy (../shared/third_party/tensorflow-benchmarks, pinned commit), which
``find_script`` finds by default; TF_CNN_BENCHMARKS_SCRIPT points elsewhere."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.tf_cnn import (
    SHARED_COPY,
    TfCnnParams,
    find_script,
    params_for,
)
from stack_advisor.schema.errors import InvalidInput, Unsupported

IN_CI = os.environ.get("CI") == "true"


def test_argv_from_typed_parameters() -> None:
    params = TfCnnParams(
        model="resnet50",
        batch_size=64,
        num_gpus=2,
        device="gpu",
        data_format="NCHW",
        variable_update="replicated",
        forward_only=False,
        use_fp16=True,
        xla=True,
        num_batches=50,
        num_warmup_batches=5,
        optimizer="momentum",
        local_parameter_device="gpu",
    )
    argv = params.argv()
    for flag in (
        "--model=resnet50",
        "--batch_size=64",
        "--num_gpus=2",
        "--device=gpu",
        "--data_format=NCHW",
        "--variable_update=replicated",
        "--forward_only=False",
        "--use_fp16=True",
        "--xla=True",
        "--num_batches=50",
        "--num_warmup_batches=5",
        "--optimizer=momentum",
        "--local_parameter_device=gpu",
    ):
        assert flag in argv
    assert "--num_warmup_batches" not in " ".join(TfCnnParams().argv())  # None: script default


def test_quick_profile_on_cpu_and_overrides() -> None:
    p = params_for(
        RunContext(profile="quick", device="cpu", options={"model": "resnet50"}), cuda=False
    )
    assert (p.model, p.device, p.data_format, p.local_parameter_device) == (
        "resnet50",
        "cpu",
        "NHWC",
        "cpu",
    )
    g = params_for(RunContext(profile="full", device="cuda"), cuda=True)
    assert (g.device, g.data_format, g.batch_size) == ("gpu", "NCHW", 64)


def test_invalid_option_names_field_and_value() -> None:
    with pytest.raises(InvalidInput, match=r"batch_size=0"):
        params_for(RunContext(options={"batch_size": 0}), cuda=False)
    with pytest.raises(InvalidInput, match=r"data_format='NWHC'"):
        params_for(RunContext(options={"data_format": "NWHC"}), cuda=False)


def test_missing_script_is_unsupported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TF_CNN_BENCHMARKS_SCRIPT", raising=False)
    monkeypatch.setattr(
        "stack_advisor.collectors.runners.tf_cnn.CONVENTIONAL_PATHS", (tmp_path / "none.py",)
    )
    with pytest.raises(Unsupported, match="TF_CNN_BENCHMARKS_SCRIPT"):
        find_script()
    with pytest.raises(InvalidInput, match="no such file"):
        find_script(tmp_path / "nope.py")


def _real_script() -> Path | None:
    try:
        return find_script()
    except (Unsupported, InvalidInput):
        return None


def test_shared_copy_is_found_by_default_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source checkout finds the pinned shared copy with no setup (scripts/test.sh relies on
    it)."""
    if not SHARED_COPY.is_file():
        assert not IN_CI, f"the shared tf_cnn_benchmarks copy is missing under CI: {SHARED_COPY}"
        pytest.skip(f"no shared third-party copy at {SHARED_COPY}")
    monkeypatch.delenv("TF_CNN_BENCHMARKS_SCRIPT", raising=False)
    assert find_script().resolve() == SHARED_COPY.resolve()


def _skip_unless_runnable() -> Path:
    script = _real_script()
    have_tf = importlib.util.find_spec("tensorflow") is not None
    have_keras2 = importlib.util.find_spec("tf_keras") is not None
    if script is None or not have_tf or not have_keras2:
        why = (
            "tf_cnn_benchmarks.py not found"
            if script is None
            else "TensorFlow not installed"
            if not have_tf
            else "tf-keras not installed"
        )
        assert not IN_CI, f"{why}: scripts/test.sh installs what the real tf-cnn run needs"
        pytest.skip(why)
    return script


@pytest.mark.slow
def test_real_script_quick_profile() -> None:
    script = _skip_unless_runnable()
    options: dict = {"script": str(script), "num_batches": 3, "num_warmup_batches": 1}
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
    from stack_advisor.collectors.runners.tf_cnn import _tensorflow_version

    assert (
        result.stack_extra["framework_version"] == _tensorflow_version()
    )  # with the patch, as installed
    assert seen and seen[-1] == 1.0


@pytest.mark.slow
def test_real_script_crash_is_a_failure() -> None:
    options = {"script": str(_skip_unless_runnable()), "model": "nosuchmodel", "num_batches": 2}
    result = get_runner("tf-cnn").run(RunContext(profile="quick", device="cpu", options=options))
    assert result.measurements == []
    (failure,) = result.failures
    assert failure.error_class == "ValueError" and "nosuchmodel" in (failure.log_tail or "")
