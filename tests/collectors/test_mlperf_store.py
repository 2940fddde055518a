"""MLPerf import into real stores: idempotent, and identical on the embedded store and Neo4j."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.collectors.importers.mlperf import import_mlperf
from stack_advisor.schema.models import ObservationFilter
from tests.support.mlperf import (
    ROUNDS,
    SUMMARY_OFFLINE,
    require_shared_data,
    result_path,
    small_tree,
    tar_gz,
    write,
)


@pytest.fixture
def kb(embedded_store: Any) -> Any:
    return embedded_store


def _values(store: Any) -> dict[tuple[str, str, str], tuple[float, str | None, str, int]]:
    return {
        (o.source_key or "", o.benchmark.benchmark_id, o.metric): (
            o.value,
            o.stack.cuda,
            o.placement.kind.value,
            o.accelerator.count,
        )
        for o in store.iter_observations(ObservationFilter(source="mlperf-inference"))
    }


def test_import_small_tree_then_reimport_adds_nothing(kb: Any, tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "src")
    write(tree, "closed/Acme/systems/broken.json", "{")
    write(tree, result_path("broken", "resnet50", "Offline"), SUMMARY_OFFLINE)
    first = import_mlperf(tree, kb)
    assert (first.results_found, first.imported, first.already_present, first.failed) == (
        2,
        2,
        0,
        2,
    )
    again = import_mlperf(tar_gz(tree, tmp_path / "inference_v9.9.tar.gz"), kb)
    assert (again.results_found, again.imported, again.already_present) == (2, 0, 2)
    assert kb.stats().observations_by_source == {"mlperf-inference": 2}
    assert not [i for i in again.issues if i.category == "changed-value"]
    # a result corrected in the files: the stored figure stays, and the re-import says so
    offline = result_path("box8", "resnet50", "Offline")
    write(tree, offline, SUMMARY_OFFLINE.replace("1234.5", "1500.0"))
    fixed = import_mlperf(tree, kb)
    (changed,) = [i for i in fixed.issues if i.category == "changed-value"]
    assert changed.path.endswith("mlperf_log_summary.txt") and "Offline" in changed.path
    assert "held at 1234.5; the files now give 1500" in changed.reason
    assert fixed.skipped_by_reason.get("changed-value") == 1
    # asked to, the re-import takes the files' figure, and says so
    took = import_mlperf(tree, kb, replace_changed=True)
    (replaced,) = [i for i in took.issues if i.category == "replaced-value"]
    assert "held at 1234.5; the files now give 1500: replaced" in replaced.reason
    # replaced is counted as such, not among the files' skipped
    assert (took.replaced, replaced.outcome, took.skipped_by_reason) == (1, "replaced", {})
    assert took.to_dict()["replaced"] == 1 and took.skipped == 0
    assert 1500.0 in {o.value for o in kb.iter_observations()}
    assert not [i for i in import_mlperf(tree, kb).issues if "changed" in i.category]


def test_cli_folder_of_rounds_imports_each(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    folder = tmp_path / "mlperf"
    small_tree(folder)
    older = small_tree(tmp_path / "src").rename(tmp_path / "src" / "inference_v9.8")
    tar_gz(older, folder / "inference_v9.8.tar.gz")
    (folder / "README.md").write_text("not a round")
    uri = f"embedded:{tmp_path / 'kb'}"
    result = CliRunner().invoke(app, ["import", "mlperf", str(folder), "--store", uri, "--json"])
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)
    assert [(s["round"], s["imported"]) for s in summaries] == [("v9.8", 2), ("v9.9", 2)]


def test_cli_json_summary(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    tree = small_tree(tmp_path / "src")
    write(tree, result_path("ghost", "resnet50", "Offline"), SUMMARY_OFFLINE)
    uri = f"embedded:{tmp_path / 'kb'}"
    result = CliRunner().invoke(app, ["import", "mlperf", str(tree), "--store", uri, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["round"], summary["imported"], summary["skipped"], summary["failed"]) == (
        "v9.9",
        2,
        0,
        1,
    )
    assert summary["issues"] == [
        {
            "path": result_path("ghost", "resnet50", "Offline"),
            "outcome": "failed",
            "category": "missing-system",
            "reason": "no system description closed/Acme/systems/ghost.json",
        }
    ]
    human = CliRunner().invoke(app, ["import", "mlperf", str(tree), "--store", uri])
    assert human.exit_code == 0
    assert "ghost" in human.stderr and "MLPerf import" in human.stdout


# 10,938 published results (10,001 in v1.1-v3.0, 937 in v4.1) and 14 TTFT/TPOT figures for each
# of v4.1's 95 LLM Server results.
ALL_OBSERVATIONS = 10_938 + 95 * 14


@pytest.fixture(scope="module")
def shared_rounds() -> list[Path]:
    data = require_shared_data()
    return [data / f"inference_{r}.tar.gz" for r in ROUNDS]


@pytest.mark.slow
def test_five_rounds_into_the_embedded_store_idempotent(kb: Any, shared_rounds: list[Path]) -> None:
    total = sum(import_mlperf(p, kb).imported for p in shared_rounds)
    assert total == ALL_OBSERVATIONS
    assert kb.stats().observations_by_source == {"mlperf-inference": ALL_OBSERVATIONS}
    again = import_mlperf(shared_rounds[0], kb)
    assert (again.imported, again.already_present) == (0, 1498)
    vgpu = kb.query_observations(
        ObservationFilter(source="mlperf-inference", placement="vgpu"), limit=100
    )
    assert len(vgpu) == 32 and all(o.placement.evidence for o in vgpu)


@pytest.mark.slow
@pytest.mark.neo4j
def test_embedded_and_neo4j_hold_identical_counts_and_values(
    kb: Any, neo4j_store: Any, shared_rounds: list[Path]
) -> None:
    for path in shared_rounds:
        import_mlperf(path, kb)
        import_mlperf(path, neo4j_store)
    embedded_stats, neo_stats = kb.stats(), neo4j_store.stats()
    assert (
        embedded_stats.observations_by_source
        == neo_stats.observations_by_source
        == {"mlperf-inference": ALL_OBSERVATIONS}
    )
    assert embedded_stats.counts == neo_stats.counts
    assert _values(kb) == _values(neo4j_store)


@pytest.mark.slow
def test_import_through_the_http_api(tmp_path: Path) -> None:
    """`--store http://...`: the same import, client of a real `advisor serve` process."""
    import secrets
    import subprocess
    import sys

    from tests.support.servers import ServedAPI

    tree = small_tree(tmp_path / "src")
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    advisor = str(Path(sys.executable).with_name("advisor"))
    with ServedAPI(f"embedded:{tmp_path / 'kb'}", tokens, log=tmp_path / "serve.log") as api:
        env = {
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
            "HOME": str(tmp_path),
            "ADVISOR_TOKEN": tokens["write"],
        }
        runs = [
            subprocess.run(
                [advisor, "import", "mlperf", str(tree), "--store", api.url, "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            for _ in range(2)
        ]
    assert runs[0].returncode == 0, runs[0].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert (first["imported"], second["imported"], second["already_present"]) == (2, 0, 2)


@pytest.mark.neo4j
def test_v41_same_in_embedded_and_neo4j_idempotent(kb: Any, neo4j_store: Any) -> None:
    """Round v4.1 alone (LLM tokens/s and TTFT/TPOT figures): same observations in both stores."""
    path = require_shared_data() / "inference_v4.1.tar.gz"
    for store in (kb, neo4j_store):
        first = import_mlperf(path, store)
        assert (first.results_found, first.imported, first.failed) == (937, 937 + 95 * 14, 0)
    again = import_mlperf(path, neo4j_store)
    assert (again.imported, again.already_present) == (0, 937 + 95 * 14)
    assert (
        kb.stats().observations_by_source
        == neo4j_store.stats().observations_by_source
        == {"mlperf-inference": 937 + 95 * 14}
    )
    assert _values(kb) == _values(neo4j_store)
