"""tf_cnn_benchmarks log parser and importer, on real logs (see tests/data/tf_cnn/README.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stack_advisor.collectors.importers.tf_cnn import (
    import_tf_cnn_log,
    parse_tf_cnn_log,
    tf_cnn_outcome,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import Accelerator, Host, Placement, PlacementKind, SoftwareStack

DATA = Path(__file__).parents[1] / "data" / "tf_cnn"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_measured_resnet50_header_steps_and_total() -> None:
    log = parse_tf_cnn_log(read("measured_tf2.21_resnet50_cpu_train.log"))
    assert log.ok
    assert log.header["tensorflow"] == "2.21"
    assert log.header["model"] == "resnet50"
    assert log.header["dataset"] == "imagenet (synthetic)"
    assert log.header["mode"] == "training"
    assert log.header["single_session"] == "False"
    assert log.header["num_batches"] == "10"
    assert log.header["data_format"] == "NHWC"
    assert log.header["optimizer"] == "sgd"
    assert log.header["variable_update"] == "parameter_server"
    assert (log.global_batch, log.per_device_batch) == (2, 2.0)
    assert log.devices == ["/cpu:0"]
    assert [s.step for s in log.steps] == [1, 2, 4, 6, 8, 10]
    last = log.steps[-1]
    assert (last.images_per_sec, last.stderr, last.jitter, last.loss) == (2.0, 0.2, 0.8, 8.573)
    assert log.totals == [2.01]


def test_measured_resnet50_outcome_is_one_measurement() -> None:
    measurements, failures = tf_cnn_outcome(
        parse_tf_cnn_log(read("measured_tf2.21_resnet50_cpu_train.log"))
    )
    assert failures == []
    (m,) = measurements
    assert m.metric == "images_per_sec" and m.unit == "images/s" and m.value == 2.01
    assert m.benchmark.family == "tf_cnn" and m.benchmark.name == "resnet50"
    p = m.benchmark.parameters
    assert p["batch_size_per_device"] == 2 and p["global_batch_size"] == 2
    assert p["device"] == "cpu" and p["num_devices"] == 1 and p["mode"] == "training"
    # stderr 0.2 over 10 steps -> stddev of per-step speeds 0.2*sqrt(10)
    assert m.samples == 10
    assert m.stddev == pytest.approx(0.2 * math.sqrt(10))
    assert m.cv == pytest.approx(0.2 * math.sqrt(10) / 2.01)
    assert "jitter = 0.8" in (m.note or "")


def test_accuracy_columns_and_nan_loss() -> None:
    log = parse_tf_cnn_log(read("measured_tf2.21_trivial_cpu_accuracy_nan.log"))
    assert log.ok
    assert all(math.isnan(s.loss) for s in log.steps if s.loss is not None)
    assert log.steps[-1].top_1 == 0.0 and log.steps[-1].top_5 == 0.0
    (m,), _ = tf_cnn_outcome(log)
    assert m.value == 126.18 and "loss is nan" in (m.note or "")
    assert log.to_dict()["steps"][-1]["loss"] == "nan"  # JSON-safe


def test_forward_only_mode() -> None:
    (m,), failures = tf_cnn_outcome(
        parse_tf_cnn_log(read("measured_tf2.21_alexnet_cpu_forward.log"))
    )
    assert not failures
    assert m.benchmark.parameters["mode"] == "forward-only" and m.value == 25.24


@pytest.mark.parametrize(
    ("name", "error_class", "text"),
    [
        (
            "measured_tf2.21_crash_invalid_model.log",
            "ValueError",
            "Invalid model name 'nosuchmodel'",
        ),
        ("measured_tf2.21_crash_keras3.log", "AttributeError", "BasicLSTMCell"),
    ],
)
def test_crash_is_a_failure_with_tail(name: str, error_class: str, text: str) -> None:
    log = parse_tf_cnn_log(read(name))
    measurements, (failure,) = tf_cnn_outcome(log, returncode=1)
    assert measurements == []
    assert failure.error_class == error_class and failure.stage == "run"
    assert text in (failure.message + (failure.log_tail or ""))
    assert "Traceback" in (failure.log_tail or "") or error_class in (failure.log_tail or "")


def test_nonzero_exit_without_traceback_is_a_failure() -> None:
    measurements, (failure,) = tf_cnn_outcome(
        parse_tf_cnn_log(read("measured_tf2.21_resnet50_cpu_train.log")), returncode=137
    )
    assert measurements == [] and failure.error_class == "ExitCode137"


def test_truncated_log_is_a_failure() -> None:
    measurements, (failure,) = tf_cnn_outcome(
        parse_tf_cnn_log(read("truncated_resnet50_after_step6.log"))
    )
    assert measurements == []
    assert failure.error_class == "TruncatedLog" and "step 6" in failure.message
    assert failure.benchmark is not None and failure.benchmark.name == "resnet50"
    assert (failure.log_tail or "").rstrip().endswith("8.656")


def test_total_cut_mid_line_is_not_read_as_a_number() -> None:
    """tensorflow/benchmarks#232 excerpt ends in "total images/sec: 5" (no newline)."""
    log = parse_tf_cnn_log(
        read("published_tfbench232_tf1.10_alexnet_worker0_truncated_excerpt.log")
    )
    assert log.totals == [] and not log.ok
    assert log.header["layout_optimizer"] == "False" and log.header["sync"] == "False"
    assert log.per_device_batch == 1024.0 and log.global_batch == 4096
    assert log.devices == ["/job:worker/replica:0/task:0/gpu:0"]
    assert all(math.isnan(s.loss) for s in log.steps)
    _, (failure,) = tf_cnn_outcome(log)
    assert failure.error_class == "TruncatedLog"


def test_published_logs_without_header() -> None:
    (m,), _ = tf_cnn_outcome(
        parse_tf_cnn_log(read("published_horovod466_resnet101_1gpu_no_header.log"))
    )
    assert m.value == 204.75 and m.samples == 100 and m.benchmark.name == "unknown"
    log = parse_tf_cnn_log(read("published_tfbench63_resnet50_loss_column.log"))
    assert log.totals == [138.95] and log.steps[-1].loss == 7.917


def test_old_headers() -> None:
    log = parse_tf_cnn_log(read("published_horovod499_tf1.8_header_only.log"))
    assert log.header["tensorflow"] == "1.8" and log.header["horovod_device"] == "cpu"
    assert log.header["layout_optimizer"] == "False" and log.devices == ["horovod/gpu:0"]
    two = parse_tf_cnn_log(read("published_horovod124_tf1.4_two_workers_headers.log"))
    assert two.header["tensorflow"] == "1.4" and "dataset" not in two.header
    assert two.global_batch == 128 and two.per_device_batch == 64 and len(two.devices) == 2
    _, (failure,) = tf_cnn_outcome(two)
    assert failure.error_class == "TruncatedLog" and "no step" in failure.message


def test_multi_worker_totals_are_averaged_not_summed() -> None:
    worker_logs = sorted(DATA.glob("measured_tf2.21_distributed_worker*.log"))
    if len(worker_logs) < 2:
        pytest.skip("distributed worker logs not recorded")
    logs = [parse_tf_cnn_log(p.read_text()) for p in worker_logs]
    totals = [t for lg in logs for t in lg.totals]
    combined = parse_tf_cnn_log("".join(p.read_text() for p in worker_logs))
    (m,), _ = tf_cnn_outcome(combined)
    assert m.value == pytest.approx(sum(totals) / len(totals))
    assert m.samples == len(totals) and "not summed" in (m.note or "")


def test_mpi_tagged_lines_keep_one_worker_and_do_not_sum() -> None:
    body = read("published_horovod466_resnet101_1gpu_no_header.log").splitlines(keepends=True)
    tagged = "".join(f"[1,{rank}]<stdout>:{line}" for rank in (0, 1) for line in body)
    log = parse_tf_cnn_log(tagged)
    assert log.totals == [204.75, 204.75]
    (m,), _ = tf_cnn_outcome(log)
    assert m.value == 204.75 and m.samples == 2


def test_malformed_text_is_not_a_measurement() -> None:
    log = parse_tf_cnn_log(read("malformed_garbage.log"))
    assert log.steps == [] and log.totals == []
    measurements, (failure,) = tf_cnn_outcome(log)
    assert measurements == [] and failure.error_class == "NotATfCnnLog" and failure.stage == "parse"


def _context() -> dict:
    return dict(
        stack=SoftwareStack(python="3.11"),
        accelerator=Accelerator(model="cpu"),
        placement=Placement(kind=PlacementKind.BARE_METAL),
        host=Host(name="node-a"),
    )


def test_import_document_fills_framework_and_round_trips() -> None:
    doc = import_tf_cnn_log(
        read("measured_tf2.21_resnet50_cpu_train.log"), run_id="r1", **_context()
    )
    assert doc.stack.framework == "tensorflow" and doc.stack.framework_version == "2.21"
    assert doc.run.run_id == "r1" and len(doc.measurements) == 1 and doc.failures == []
    batch = doc.to_batch()
    assert batch.observations[0].value == 2.01 and batch.observations[0].host.name == "node-a"
    doc2 = type(doc).model_validate_json(doc.model_dump_json())
    assert doc2.measurements[0].value == 2.01


def test_import_crash_document_has_failure_only() -> None:
    doc = import_tf_cnn_log(read("measured_tf2.21_crash_invalid_model.log"), **_context())
    assert doc.measurements == [] and doc.failures[0].error_class == "ValueError"


def test_import_empty_text_names_the_problem() -> None:
    with pytest.raises(InvalidInput, match="empty"):
        import_tf_cnn_log("  \n", **_context())
