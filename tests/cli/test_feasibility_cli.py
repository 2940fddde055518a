"""Issue 31's bounds-and-emptiness cases as users type them, through the `advisor` entry point's
guard, on a store seeded with the starter knowledge base: no silent absurd or empty answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import advisor, isolate_cli


@pytest.fixture(scope="module")
def kb_uri(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> Iterator[str]:
    from tests.support.starter_kb import copy_starter_kb

    yield copy_starter_kb(starter_kb, tmp_path_factory.mktemp("feas-kb") / "kb")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def test_a_count_beyond_any_published_system_is_refused(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    code, _out, err = advisor(
        capsys, "recommend", "--store", kb_uri, "--benchmark", "resnet50", "--count", "100000"
    )
    assert code == 2 and "100,000 accelerators is beyond any published system" in err, err


def test_predict_at_a_million_accelerators_gives_no_figure(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    query = tmp_path / "q.json"
    query.write_text(
        json.dumps(
            [
                {
                    "benchmark": "resnet50",
                    "scenario": "Offline",
                    "metric": "samples_per_second",
                    "accelerator": "A100-SXM4-80GB",
                    "accelerator_count": 1_000_000,
                }
            ]
        )
    )
    code, out, _err = advisor(capsys, "predict", "--store", kb_uri, "--query", str(query), "--json")
    [answer] = json.loads(out)
    assert (
        code == 1 and answer["value"] is None and "beyond any published system" in answer["reason"]
    )


def test_an_empty_answer_says_why(capsys: pytest.CaptureFixture[str], kb_uri: str) -> None:
    code, out, err = advisor(
        capsys,
        "recommend",
        "--store",
        kb_uri,
        "--benchmark",
        "llama2-70b-99",
        "--scenario",
        "Server",
        "--accelerator",
        "T4",
        "--format",
        "plain",
    )
    assert "nothing ranked" in out and "()" not in out.splitlines()[0]
    assert code == 1 and "error: nothing ranked" in err, err  # a script sees the failure
    assert "note: no candidate passed: T4: model does not fit in memory" in err, err
    excluded = [line for line in err.splitlines() if line.startswith("  ")]
    assert excluded[0].startswith("  T4 "), excluded[:3]


def test_api_and_store_together_are_a_usage_error(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    code, _out, err = advisor(
        capsys,
        "--api",
        "http://127.0.0.1:9",
        "recommend",
        "--store",
        kb_uri,
        "--benchmark",
        "resnet50",
    )
    assert code == 2 and "name two knowledge bases" in err, err


def test_importing_an_empty_folder_is_an_error(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    empty = tmp_path / "results"
    empty.mkdir()
    code, _out, err = advisor(capsys, "import", "results", str(empty), "--store", kb_uri)
    assert code == 2 and "has no *.json result documents" in err, err


def test_a_user_image_of_another_stack_warns_in_the_table(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    code, out, _err = advisor(
        capsys,
        "recommend",
        "--store",
        kb_uri,
        "--benchmark",
        "llama2-70b-99",
        "--scenario",
        "Server",
        "--top",
        "1",
        "--image",
        "nvcr.io/nvidia/tensorrt:23.04-py3",
        "--json",
    )
    [row] = json.loads(out)["recommendations"]
    assert code == 0 and any("(NGC 23.04) ships cuda 12.1" in w for w in row["warnings"]), row[
        "warnings"
    ]


def test_a_first_answer_counts_exclusions_and_lists_none_it_was_not_asked_about(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    """Reproducer: the first `recommend --benchmark resnet50` listed ten excluded
    Raspberry-Pi-class CPUs under the answer."""
    args = ("recommend", "--store", kb_uri, "--benchmark", "resnet50", "--scenario", "Offline")
    code, _out, err = advisor(capsys, *args, "--top", "3", "--format", "plain")
    assert code == 0 and "excluded: " in err, err
    each = [line for line in err.splitlines() if line.startswith("  ")]
    assert each == [
        "  each excluded candidate with its reason: --json (excluded_candidates), or "
        "--accelerator NAME for one part"
    ], each
    code, out, _ = advisor(capsys, *args, "--top", "3", "--json")
    assert code == 0 and json.loads(out)["excluded_candidates"]  # still there for who asks


def test_all_without_top_lists_every_ranked_row(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    """``--all`` is every ranked row: a probe got the default 5 and no sign of the rest."""
    flags = ("recommend", "--store", kb_uri, "--benchmark", "resnet50", "--json")
    code, out, err = advisor(capsys, *flags, "--all")
    assert code == 0, err
    every = json.loads(out)["recommendations"]
    code, out, err = advisor(capsys, *flags, "--all", "--top", "3")
    assert code == 0, err
    assert len(every) > 5 and json.loads(out)["recommendations"] == every[:3]
    cut = [n for n in json.loads(out)["notes"] if "more ranked rows than the 3 shown" in n]
    assert len(cut) == 1 and int(cut[0].split()[0]) >= len(every) - 3
    code, out, _ = advisor(capsys, *flags)
    assert len(json.loads(out)["recommendations"]) == 5


def test_predict_exits_1_only_when_nothing_is_answered(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    """A batch with one answer succeeds (its refusals are reported beside it, a bad row not fatal
    to the rest); a batch or flag query of refusals alone exits 1, its JSON still printed;
    a usage error exits 2."""
    known = {"benchmark": "resnet50", "scenario": "Offline", "accelerator_count": 8}
    answered = {**known, "accelerator": "H100-SXM5-80GB"}
    refused = {**known, "accelerator": "Nvidia Frobnicator 9000"}
    both, alone = tmp_path / "both.json", tmp_path / "alone.json"
    both.write_text(json.dumps([answered, refused]))
    alone.write_text(json.dumps([refused, refused]))
    code, out, _err = advisor(capsys, "predict", "--store", kb_uri, "--query", str(both), "--json")
    assert code == 0 and [p["value"] is None for p in json.loads(out)] == [False, True]
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, "--query", str(alone), "--json")
    assert code == 1 and all(p["value"] is None for p in json.loads(out)), err
    assert "error: no configuration answered: 2 refused" in err, err
    flags = ["--benchmark", "resnet50", "--scenario", "Offline", "--count", "8"]
    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, *flags, "--accelerator", refused["accelerator"]
    )
    assert code == 1 and "unknown accelerator" in out + err, out + err
    typo = [*flags[:2], "--scenario", "Offlin", "--count", "8", "--accelerator", "H100"]
    code, _out, err = advisor(capsys, "predict", "--store", kb_uri, *typo)
    assert code == 2 and "did you mean 'Offline'" in err, err
