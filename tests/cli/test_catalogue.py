"""`advisor catalogue list|show|search`: the catalogue's entries, figures and sources, as JSON
(the contract tests parse) and as tables; unknown names refused with "did you mean"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import advisor, isolate_cli


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def test_list_json_has_every_accelerator_with_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "catalogue", "list", "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    assert len(rows) > 100
    assert rows["MI355X"]["fp4"] == 10066.3 and rows["MI355X"]["memory_gb"] == 288
    assert rows["H200-NVL-141GB"]["interconnect_gbs"] == 900
    assert rows["GB300"]["min_driver"] == "575.51.03"
    assert all(r["source"].startswith("https://") for r in rows.values())


def test_list_filters_and_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "catalogue", "list", "--vendor", "intel", "--format", "csv")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("id,vendor,family")
    assert {line.split(",")[1] for line in lines[1:]} == {"intel"}
    assert any(line.startswith("Gaudi3,") for line in lines)
    code, out, _ = advisor(capsys, "catalogue", "list", "--kind", "benchmarks", "--json")
    assert code == 0 and any(r["id"] == "resnet50" for r in json.loads(out))


def test_show_resolves_any_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "catalogue", "show", "NVIDIA Blackwell GPU (GB200)", "--json")
    assert code == 0
    row = json.loads(out)
    assert row["id"] == "GB200" and row["matched_by"] == "alias" and "GPU" in row["counted_as"]
    code, out, _ = advisor(capsys, "catalogue", "show", "gaudi 3", "--format", "plain")
    assert code == 0 and "1,835" in out and "counted_as" in out


def test_show_refuses_a_near_miss_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = advisor(capsys, "catalogue", "show", "MI375X")
    assert code == 1 and out == ""
    assert "did you mean" in err and "MI355X" in err
    code, _, err = advisor(capsys, "catalogue", "show", "H100")
    assert code == 1 and "family" in err and "H100-NVL-94GB" in err
    code, _, err = advisor(capsys, "catalogue", "list", "--kind", "gpus")
    assert code == 2 and "--kind must be one of accelerators, benchmarks" in err


def test_show_finds_a_benchmark_without_kind_and_refuses_names_of_neither_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = advisor(capsys, "catalogue", "show", "GPT-OSS 120B", "--json")
    row = json.loads(out)
    assert code == 0 and (row["id"], row["family"], row["active_params_b"]) == (
        "gpt-oss-120b",
        "mlperf-inference",
        5.1,
    )
    assert (
        row["source"].startswith("https://github.com/mlcommons/inference_policies/blob/")
        and row["reference"]
    )
    code, out, _ = advisor(
        capsys, "catalogue", "show", "deepseek-v3", "--family", "mlperf-training", "--json"
    )
    assert code == 0 and json.loads(out)["id"] == "deepseekv3"
    code, out, err = advisor(capsys, "catalogue", "show", "gpt-oss-12b")
    assert (
        code == 1
        and out == ""
        and "unknown accelerator or benchmark 'gpt-oss-12b'; did you mean 'gpt-oss-120b'" in err
    )
    code, _, err = advisor(capsys, "catalogue", "show", "gpt-oss-120b", "--kind", "accelerators")
    assert code == 1 and "unknown accelerator 'gpt-oss-120b'" in err  # an explicit kind is kept


def test_search(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = advisor(capsys, "catalogue", "search", "blackwell ultra", "--json")
    assert code == 0
    assert {h["id"] for h in json.loads(out)} >= {"B300-SXM-288GB", "GB300"}
    code, out, _ = advisor(capsys, "catalogue", "search", "B250", "--json")
    assert code == 0 and [h["why"] for h in json.loads(out)][:1] == ["close spelling"]


def test_a_benchmark_shows_the_latency_limits_answers_are_read_against() -> None:
    """A probe: answers quoted llama2-70b's Server and Interactive TTFT/TPOT limits that
    ``catalogue show`` did not list."""
    from stack_advisor.catalog.browse import show_entry

    shown = show_entry("llama2-70b-99")
    limits = shown["latency_limits"]
    assert (limits["Server"]["ttft_ms"], limits["Server"]["tpot_ms"]) == (2000.0, 200.0)
    assert (limits["Interactive"]["ttft_ms"], limits["Interactive"]["tpot_ms"]) == (450.0, 40.0)
    assert all(limit["source"].startswith("https://") for limit in limits.values())
    assert "latency_limits" not in show_entry("resnet50") or show_entry("resnet50")[
        "latency_limits"
    ].keys() <= {"Server"}
