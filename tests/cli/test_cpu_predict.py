"""`advisor predict` for a CPU never measured on a benchmark (issue 27): transferred from other
CPUs with the kind named; an unknown CPU name is never mapped to another part. On a small table of
real published CPU-only results (``tests.support.cpu_results``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_advisor.cli.guard import run_guarded
from stack_advisor.cli.main import app
from tests.support.cpu_results import write_cpu_results


@pytest.fixture
def kb_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from stack_advisor.store.registry import open_store

    for var in ("ADVISOR_API", "ADVISOR_STORE", "ADVISOR_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(
        "stack_advisor.advisor.estimate.index.MIN_RESIDUALS", 8
    )  # a 36-row table's replays
    uri = f"embedded:{tmp_path / 'kb'}"
    store = open_store(uri)
    write_cpu_results(store)
    store.close()
    return uri


def _predict(
    capsys: pytest.CaptureFixture[str], uri: str, tmp_path: Path, cpu: str
) -> tuple[int, str, str]:
    query = tmp_path / "q.json"
    query.write_text(
        json.dumps(
            [
                {
                    "benchmark": "resnet50",
                    "scenario": "Offline",
                    "metric": "samples_per_second",
                    "accelerator": cpu,
                    "accelerator_count": 2,
                }
            ]
        )
    )
    code = run_guarded(app, ["predict", "--store", uri, "--query", str(query), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_an_unmeasured_cpu_is_transferred_with_kind_cpu(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    code, out, err = _predict(capsys, kb_uri, tmp_path, "CPU Intel(R) Xeon(R) 6787P")
    assert code == 0, out + err
    row = json.loads(out)[0]
    assert row["basis"].startswith("transferred") and row["value"], row
    factors = {f["name"]: f["value"] for f in row["factors"]}
    assert factors["transfer kind"] == "cpu, same core", factors
    assert "CPU Intel Xeon 6980P" in factors["reference"], factors
    assert any("CPU transfer (kind cpu, same core)" in w for w in row["warnings"]), row


def test_an_unknown_cpu_is_refused_never_mapped_to_another_part(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    code, out, err = _predict(capsys, kb_uri, tmp_path, "CPU Frobnicator X9000")
    text = out + err
    assert "6980P" not in text and "transferred" not in text, text
    assert code == 1 and json.loads(out)[0]["value"] is None, text  # nothing answered: exit 1
    assert "unknown accelerator 'CPU Frobnicator X9000'" in text, text
    # a model number the Xeon family resolves but the catalogue has no figures for: its own name,
    # refused for lack of figures, never given another Xeon's
    code, out, err = _predict(capsys, kb_uri, tmp_path, "CPU Intel(R) Xeon(R) Platinum 8999 CPU")
    text = out + err
    assert "6980P" not in text and "transferred" not in text, text
    row = json.loads(out)[0] if code == 1 else None
    assert row is not None and row["value"] is None, text
    assert (
        "no published CPU figures" in row["reason"] and "Intel Xeon Platinum 8999" in row["reason"]
    ), row
