"""`advisor import` on the command line: what an interrupted MLPerf import reports, and the
fingerprint files `import tf-cnn` accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import document
from tests.support.cli import advisor, isolate_cli
from tests.support.mlperf import small_tree

DATA = Path(__file__).resolve().parents[1] / "data"
LOG = DATA / "tf_cnn" / "measured_tf2.21_resnet50_cpu_train.log"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def test_store_dying_mid_import_reports_what_was_committed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = small_tree(tmp_path / "src")  # two results: two batches of one
    real_write = EmbeddedStore._write_rows

    def write_then_die(self: EmbeddedStore, batch, rows):  # type: ignore[no-untyped-def]
        result = real_write(self, batch, rows)
        self.close()  # the store goes away after the first committed batch; the next one fails
        return result

    monkeypatch.setattr(EmbeddedStore, "_write_rows", write_then_die)
    kb = tmp_path / "kb"
    code, out, _ = advisor(
        capsys, "import", "mlperf", str(tree), "--store", str(kb), "--batch-size", "1", "--json"
    )
    error = json.loads(out)["error"]
    assert code == 1
    assert error["details"]["committed"] == {
        "source": tree.name,
        "observations": 1,
        "batches": 1,
        "of": 2,
    }
    assert "committing 1 observation(s) in 1 batch(es)" in error["message"]
    monkeypatch.setattr(EmbeddedStore, "_write_rows", real_write)
    code, out, _ = advisor(capsys, "import", "mlperf", str(tree), "--store", str(kb), "--json")
    again = json.loads(out)
    assert code == 0 and (again["imported"], again["already_present"]) == (1, 1)  # the rest, once


def _fingerprint_files(tmp_path: Path) -> dict[str, Path]:
    doc = document("run-fp", accelerator="NVIDIA L4")
    files = {
        "collect --out": tmp_path / "run.json",
        "one document": tmp_path / "doc.json",
        "bare fingerprint": tmp_path / "fp.json",
    }
    files["collect --out"].write_text(json.dumps([doc]))
    files["one document"].write_text(json.dumps(doc))
    files["bare fingerprint"].write_text(
        json.dumps({k: doc[k] for k in ("stack", "accelerator", "placement", "host")})
    )
    return files


@pytest.mark.parametrize("kind", ["collect --out", "one document", "bare fingerprint"])
def test_tf_cnn_accepts_what_collect_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    fp = _fingerprint_files(tmp_path)[kind]
    code, out, err = advisor(
        capsys, "import", "tf-cnn", str(LOG), "--fingerprint", str(fp), "--dry-run", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["accelerator"]["model"] == "NVIDIA L4" and doc["measurements"]
    if kind == "collect --out":  # a run on another framework lends its node, not its framework
        assert doc["stack"]["framework"] == "tensorflow"


def test_tf_cnn_rejects_a_list_without_documents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fp = tmp_path / "fp.json"
    fp.write_text("[1, 2]")
    code, _, err = advisor(
        capsys, "import", "tf-cnn", str(LOG), "--fingerprint", str(fp), "--dry-run"
    )
    assert code == 2 and "is a list without result documents" in err
