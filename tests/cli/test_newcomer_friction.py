"""What a new user met on the way through the README (issue 31 item 8), each case as it was met:
a TensorFlow log stored under the fingerprint's torch, `--dry-run` printing a summary, undecodable
`--nodes` and tarballs, a training import given an inference round, and `--out` into a folder that
cannot exist found only after the benchmark ran."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.api import document
from tests.support.cli import advisor as run
from tests.support.cli import isolate_cli
from tests.support.mlperf import small_training_tree, small_tree, tar_gz

LOG = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "tf_cnn"
    / "measured_tf2.21_resnet50_cpu_train.log"
)
GARBAGE = b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x01not what you meant" * 40


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def advisor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code, out, err = run(capsys, *args)
    assert "unexpected" not in err
    return code, out, err


def test_a_tensorflow_log_is_stored_as_tensorflow_whatever_the_fingerprint_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = document("run-fp", accelerator="CPU AMD EPYC", framework_version="2.15.0")
    doc["stack"].update(framework="torch", extra={"torch": "2.15.0"})
    fp = tmp_path / "fp.json"
    fp.write_text(json.dumps(doc))  # one document of a torch run on this node
    code, out, err = advisor(
        capsys, "import", "tf-cnn", str(LOG), "--fingerprint", str(fp), "--dry-run"
    )
    assert code == 0, err
    stack = json.loads(out)["stack"]  # --dry-run prints the document, as its help says
    assert (stack["framework"], stack["framework_version"]) == ("tensorflow", "2.21")
    code, _, err = advisor(
        capsys,
        "import",
        "tf-cnn",
        str(LOG),
        "--fingerprint",
        str(fp),
        "--framework-version",
        "2.15.0",
        "--dry-run",
    )
    assert code == 2 and "TensorFlow 2.21" in err and "'2.15.0'" in err


def test_a_binary_nodes_file_is_named_as_not_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_bytes(GARBAGE)
    code, _, err = advisor(capsys, "recommend", "--benchmark", "resnet50", "--nodes", str(nodes))
    assert (
        code == 2
        and "--nodes" in err
        and "is not a text file" in err
        and "kubectl get nodes -o json" in err
    )


@pytest.mark.parametrize("command", ["mlperf", "mlperf-training", "mlperf-summary"])
def test_a_garbage_archive_says_what_it_is_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    bad = tmp_path / "round.tar.gz"
    bad.write_bytes(GARBAGE)
    code, _, err = advisor(capsys, "import", command, str(bad), "--store", str(tmp_path / "kb"))
    assert code == 2 and str(bad) in err and "not" in err
    assert (
        "\\x" not in err and "b'" not in err and "ReadError" not in err
    )  # no raw bytes, no Python internals
    assert len(err.strip().splitlines()) == 1


def test_importers_given_the_other_kind_of_round_say_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inference = tar_gz(
        small_tree(tmp_path / "inf").rename(tmp_path / "inf" / "inference_v3.0"),
        tmp_path / "inference_v3.0.tar.gz",
    )
    code, out, err = advisor(
        capsys, "import", "mlperf-training", str(inference), "--store", str(tmp_path / "kb")
    )
    assert code == 2 and "MLPerf Inference round" in err and "advisor import mlperf`" in err, (
        out,
        err,
    )
    empty = tmp_path / "training_v4.1"
    (empty / "Acme" / "systems").mkdir(parents=True)
    (empty / "Acme" / "systems" / "box.json").write_text("{}")
    code, _, err = advisor(
        capsys, "import", "mlperf-training", str(empty), "--store", str(tmp_path / "kb")
    )
    assert code == 2 and "holds no MLPerf Training results" in err
    training = tar_gz(
        small_training_tree(tmp_path / "tr").rename(tmp_path / "tr" / "training_v4.1"),
        tmp_path / "training_v4.1.tar.gz",
    )
    code, _, err = advisor(
        capsys, "import", "mlperf", str(training), "--store", str(tmp_path / "kb")
    )
    assert code == 2 and "MLPerf Training round" in err and "advisor import mlperf-training`" in err


def test_an_unwritable_out_fails_before_the_benchmark(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    started = time.monotonic()
    code, _, err = advisor(
        capsys, "collect", "--profile", "quick", "--out", "/proc/nope/run.json", "--no-store"
    )
    assert (
        code == 2 and "--out" in err and "/proc/nope/run.json" in err and "nothing was run" in err
    )
    assert time.monotonic() - started < 10  # no fingerprint, no benchmark
    code, _, err = advisor(
        capsys, "collect", "--profile", "quick", "--out", str(tmp_path), "--no-store"
    )
    assert code == 2 and "is a folder" in err
