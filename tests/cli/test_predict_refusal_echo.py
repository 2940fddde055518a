"""`advisor predict` (issue 43): a refused query shows only what it gave, in the table and in the
JSON; the count and placement it was never answered with are not echoed as if asked for."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.cli import advisor, isolate_cli

GOOD = {
    "accelerator": "NVIDIA A100-SXM4-80GB",
    "benchmark": "resnet50",
    "scenario": "Offline",
    "metric": "samples_per_second",
}


@pytest.fixture(scope="module")
def kb_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    uri = f"embedded:{tmp_path_factory.mktemp('echo-kb') / 'kb'}"
    rows = [
        o
        for o in load_snapshot().observations
        if o.benchmark.name == "resnet50" and "A100" in o.accelerator.model_dump_json()
    ]
    with open_store(uri) as store:
        store.ingest(IngestBatch(observations=rows))
    yield uri


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path)


def _by_flags(capsys: pytest.CaptureFixture[str], kb_uri: str, *more: str) -> tuple[int, str, str]:
    """``predict`` of resnet50 Offline on one A100 by flags, with ``more`` options."""
    flags = ("--benchmark", "resnet50", "--scenario", "Offline", "--accelerator", "A100")
    return advisor(capsys, "predict", "--store", kb_uri, *flags, "--count", "1", *more)


def test_a_refused_query_shows_only_what_it_gave(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    query = tmp_path / "q.json"
    queries = [GOOD, {**GOOD, "placement": "vgp"}, {**GOOD, "accelerator": "Foo GPU 9000"}]
    query.write_text(json.dumps(queries))
    code, out_json, err = advisor(
        capsys, "predict", "--store", kb_uri, "--query", str(query), "--json"
    )
    assert code == 0, err
    answered, bad_placement, unknown = json.loads(out_json)
    assert answered["query"]["placement"] == "bare-metal"
    assert answered["query"]["accelerator_count"] == 1
    assert set(bad_placement["query"]) == set(unknown["query"]) == set(GOOD)

    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, "--query", str(query), "--format", "csv"
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    # today's round is a forecast beyond the knowledge base: the observed figure is carried
    assert [r["basis"].split()[1] for r in rows] == ["observed,", "unsupported", "unsupported"]
    assert (
        rows[0]["basis"].endswith(", carried")
        and rows[0]["round"] == json.loads(out_json)[0]["round"]
    )
    assert rows[0]["accelerator"].endswith(" x1") and rows[0]["placement"] == "bare-metal"
    for row in rows[1:]:
        assert not row["accelerator"].endswith(" x1"), row
        assert row["placement"] in ("", "-"), row


def test_benchmark_flags_with_a_count_answer_as_the_query_file(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    """`predict --benchmark B --accelerator A --count N` answers at N through the --query path
    (it once ranked first and refused N below the count of the part's published systems)."""
    flags = ("--benchmark", "resnet50", "--scenario", "Offline", "--accelerator", "A100")
    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, *flags, "--count", "8", "--as-of", "now", "--json"
    )
    assert code == 0, err
    (by_flags,) = json.loads(out)
    query = tmp_path / "q.json"
    asked = {**GOOD, "accelerator": "A100", "accelerator_count": 8, "as_of": "now"}
    query.write_text(json.dumps([asked]))
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, "--query", str(query), "--json")
    assert code == 0, err
    (by_file,) = json.loads(out)
    assert by_flags["query"]["accelerator_count"] == 8
    assert by_flags["query"]["metric"] == "samples_per_second"
    assert by_flags == by_file


def test_benchmark_flags_take_a_metric_and_a_stack_as_a_query_file_does(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    """``--metric`` and ``--stack`` are a query's ``metric`` and ``framework`` (a probe could
    not ask a latency, or a stack, without writing a query file); without the flags they
    describe they are refused, naming them."""
    stack = "TensorRT 8.4.2, CUDA 11.6"
    code, out, err = _by_flags(
        capsys,
        kb_uri,
        "--metric",
        "samples_per_second",
        "--stack",
        stack,
        "--as-of",
        "now",
        "--json",
    )
    assert code == 0, err
    (by_flags,) = json.loads(out)
    query = tmp_path / "q.json"
    asked = {**GOOD, "accelerator": "A100", "accelerator_count": 1, "as_of": "now"}
    query.write_text(json.dumps([{**asked, "framework": stack}]))
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, "--query", str(query), "--json")
    assert code == 0, err
    assert by_flags == json.loads(out)[0] and by_flags["query"]["framework"] == "tensorrt"
    code, _, err = advisor(
        capsys, "predict", "--store", kb_uri, "--query", str(query), "--metric", "x"
    )
    assert code == 2 and "--metric: only with --benchmark, --accelerator and --count" in err


def test_benchmark_flags_without_a_count_answer_each_part_once_at_its_smallest_count(
    capsys: pytest.CaptureFixture[str], kb_uri: str
) -> None:
    """Without ``--count`` each part is answered once, at the smallest count the ranking has for
    it (a probe found one row per published count), the scenario as the catalogue spells it,
    and an as-measured row is ``observed`` (it had said false with no factor moving it)."""
    flags = ("--benchmark", "resnet50", "--scenario", "offline", "--accelerator", "A100")
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, *flags, "--json")
    assert code == 0, err
    rows = json.loads(out)
    parts = [(p["accelerator"], p["query"]["placement"]) for p in rows]
    assert rows and len(parts) == len(set(parts))
    for p in rows:
        assert p["query"]["scenario"] == "Offline"
        moved = any(f["name"] in ("forecast", "round drift") for f in p["factors"])
        assert p["observed"] == (p["basis"] == "observed" and not moved)


def test_an_as_of_naming_no_round_is_a_usage_error_as_in_recommend(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    """A probe's ``predict --as-of garbage`` exited 1 with a refusal row where ``recommend``
    exits 2; with ``--model`` it was dropped without a word (the proxy names no round)."""
    flags = ["--benchmark", "resnet50", "--scenario", "Offline", "--accelerator", "A100"]
    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, *flags, "--count", "8", "--as-of", "garbage"
    )
    assert code == 2 and not out and "--as-of: 'garbage' is not" in err
    spec = ["--model", "llama3.1-8b", "--accelerator", "A100"]
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, *spec, "--as-of", "garbage")
    assert code == 2 and "--as-of: 'garbage' is not" in err
    code, out, err = advisor(capsys, "predict", "--store", kb_uri, *spec, "--as-of", "v4.1")
    assert "--as-of v4.1: not applied to a described model: estimated by proxy" in err
    described = tmp_path / "described.json"
    described.write_text(json.dumps([{"model": "llama3.1-8b", "accelerator": "A100"}, GOOD]))
    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, "--query", str(described), "--as-of", "v4.1"
    )
    assert "--as-of v4.1: not applied to 1 described model(s) of --query" in err


def test_placement_is_a_flag_beside_the_configuration_flags(
    capsys: pytest.CaptureFixture[str], kb_uri: str, tmp_path: Path
) -> None:
    """A ranking's row may name a placement (unknown, vgpu); predict by flags could not ask for
    it (a probe's row could not be reproduced)."""
    code, out, err = _by_flags(capsys, kb_uri, "--placement", "vgpu", "--json")
    [answer] = json.loads(out)
    assert answer["query"]["placement"] == "vgpu"
    query = tmp_path / "q.json"
    query.write_text(json.dumps([GOOD]))
    code, out, err = advisor(
        capsys, "predict", "--store", kb_uri, "--query", str(query), "--placement", "vgpu"
    )
    assert code == 2 and "--placement: only with --benchmark" in err
