"""MLPerf Training importer: MLLOG runs, olympic means, failures, and the shared v4.1 round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.collectors.importers.mlperf_training import (
    RCP_NOTE,
    TrainingRun,
    import_mlperf_training,
    olympic_score,
    parse_mllog,
    read_training_tree,
    system_context,
    to_batch,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import ObservationFilter
from tests.support.mlperf import (
    TRAINING_SYSTEM,
    mllog,
    require_training_data,
    shared_training_tree,
    small_training_tree,
    tar_gz,
)


def test_mllog_lines_with_rank_prefixes_and_noise() -> None:
    events, bad = parse_mllog(mllog(1000, 2.0))
    assert bad == 1
    assert events["run_stop"][0]["metadata"]["status"] == "success"
    assert events["global_batch_size"][0]["value"] == 768
    only, _ = parse_mllog(mllog(1000, 2.0), {"run_start", "run_stop"})
    assert set(only) == {"run_start", "run_stop"}


def test_a_file_cut_inside_a_line_is_told_from_a_whole_last_line() -> None:
    from stack_advisor.collectors.importers.mlperf_mllog import ends_mid_line

    start = ':::MLLOG {"key": "run_start", "time_ms": 1, "value": null}'
    interval = ':::MLLOG {"key": "epoch_start", "event_type": "INTERVA'
    assert ends_mid_line(f"{start}\n{interval}")  # cut inside the event, before run_stop
    assert not ends_mid_line(f"{start}\n") and not ends_mid_line(start)  # whole, newline or not
    assert not ends_mid_line(f"{start}\nsome trailing log text")  # not an MLLOG line


def test_olympic_mean_drops_fastest_and_slowest() -> None:
    def run(minutes: float | None, status: str = "success") -> TrainingRun:
        stop = None if minutes is None else int(minutes * 60_000)
        return TrainingRun("A", "s", "bert", "result_0", "p", 0, stop, status)

    score = olympic_score(
        [run(10), run(12), run(11), run(30), run(9), run(50, "aborted"), run(None, "no run_stop")]
    )
    assert score is not None
    assert score.minutes == pytest.approx(11.0)  # (10 + 12 + 11) / 3
    assert (score.runs, score.used, score.failed, score.fastest, score.slowest) == (
        5,
        3,
        2,
        9.0,
        30.0,
    )
    assert olympic_score([run(4), run(6)]).minutes == pytest.approx(5.0)  # too few to drop any
    assert olympic_score([run(None, "no run_stop")]) is None


def test_small_tree_runs_failures_scores_and_provenance(tmp_path: Path) -> None:
    tree = read_training_tree(small_training_tree(tmp_path))
    assert tree.round == "v9.9"
    issues = {(i.path, i.category) for i in tree.issues}
    assert issues == {
        ("Acme/results/h100x16/bert/result_6.txt", "no-run-stop"),
        ("Acme/results/h100x16/bert/result_7.txt", "malformed-run"),
        ("Acme/results/ghost/bert/result_0.txt", "missing-system"),
    }
    assert all(i.outcome == "failed" for i in tree.issues)
    batch = to_batch(tree)
    assert len(batch.runs) == 7
    assert sorted(f.error_class for f in batch.failures) == [
        "training-aborted",
        "training-no-run_stop",
    ]
    by_metric = {o.metric: o for o in batch.observations if o.run_id is None}
    score = by_metric["time_to_train_min"]
    assert (
        score.value == pytest.approx(11.0)
        and score.higher_is_better is False
        and score.unit == "min"
    )
    assert (score.samples, score.p10, score.p90) == (3, 9.0, 30.0)
    assert score.note == RCP_NOTE and "RCP" in score.note
    details = score.provenance.details
    assert (
        details["global_batch_size"] == "768"
        and details["runs"] == "5"
        and details["failed_runs"] == "2"
    )
    assert (details["nodes"], details["accelerators_per_node"]) == ("2", "8")
    assert details["accelerator_interconnect"] == "NVLINK Gen4 900 GB/s"
    assert (details["round"], details["submitter"], details["system_id"]) == (
        "v9.9",
        "Acme",
        "h100x16",
    )
    assert score.source_key == "v9.9/closed/Acme/h100x16"
    assert (score.accelerator.model, score.accelerator.count) == ("NVIDIA H100-SXM5-80GB", 16)
    assert (score.stack.cuda, score.stack.driver, score.stack.framework) == (
        "12.6",
        "560.35.03",
        "pytorch",
    )
    assert by_metric["accelerator_hours"].value == pytest.approx(11.0 / 60 * 16)
    per_run = [o for o in batch.observations if o.metric == "run_time_to_train_min"]
    assert sorted(round(o.value, 3) for o in per_run) == [9.0, 10.0, 11.0, 12.0, 30.0]
    assert all(o.run_id and o.provenance.details["file"].endswith(".txt") for o in per_run)


def test_import_is_idempotent_and_archive_reads_like_directory(
    embedded_store: Any, tmp_path: Path
) -> None:
    root = small_training_tree(tmp_path / "src")
    first = import_mlperf_training(root, embedded_store)
    assert (first.runs, first.failed_runs, first.scores, first.imported, first.failures_new) == (
        7,
        2,
        1,
        7,
        2,
    )
    again = import_mlperf_training(tar_gz(root, tmp_path / "training_v9.9.tar.gz"), embedded_store)
    assert (again.imported, again.already_present, again.failures_new) == (0, 7, 0)
    assert embedded_store.stats().observations_by_source == {"mlperf-training": 7}


def test_a_bad_run_or_system_is_reported_and_the_rest_imported(
    embedded_store: Any, tmp_path: Path
) -> None:
    """A probe's next-round tree: one run whose run_stop precedes its run_start, or one system of
    0 nodes, had failed the whole import (naming no file); each is now an issue with its path."""
    from tests.support.mlperf import write

    root = small_training_tree(tmp_path / "src")
    write(root, "Acme/results/h100x16/bert/result_8.txt", mllog(1_700_300_000_000, -5.0))
    zero = {**TRAINING_SYSTEM, "number_of_nodes": "0"}
    write(root, "Acme/systems/zero.json", json.dumps(zero))
    write(root, "Acme/results/zero/bert/result_0.txt", mllog(1_700_000_000_000, 3.0))
    write(root, "Acme/systems/broken.json", json.dumps(TRAINING_SYSTEM)[:40])
    # accelerators counted, none named: had been stored as a CPU-only system
    unnamed = {k: v for k, v in TRAINING_SYSTEM.items() if k != "accelerator_model_name"}
    write(root, "Acme/systems/unnamed.json", json.dumps(unnamed))
    write(root, "Acme/results/unnamed/bert/result_0.txt", mllog(1_700_000_000_000, 3.0))
    write(root, "Acme/results/broken/bert/result_0.txt", mllog(1_700_000_000_000, 3.0))
    for i in range(3):  # a system none of whose runs succeeded: no score, said so
        write(
            root,
            f"Acme/results/h100x16/gpt3/result_{i}.txt",
            mllog(1_700_500_000_000 + i, 5.0, "aborted"),
        )
    whole = mllog(1_700_400_000_000, 4.0)  # its run_stop line cut after the key
    write(root, "Acme/results/h100x16/bert/result_9.txt", whole[: whole.rindex('"value"')])
    summary = import_mlperf_training(root, embedded_store)
    issues = {i.path: (i.category, i.reason) for i in summary.issues}
    assert issues["Acme/results/h100x16/bert/result_8.txt"][0] == "malformed-run"
    assert "is not after run_start" in issues["Acme/results/h100x16/bert/result_8.txt"][1]
    assert issues["Acme/systems/zero.json"] == (
        "malformed-system",
        "malformed system description: number_of_nodes must be at least 1, got '0'",
    )
    assert issues["Acme/results/broken/bert/result_0.txt"] == (
        "missing-system",
        "its system description Acme/systems/broken.json is malformed (reported with it)",
    )
    assert issues["Acme/systems/unnamed.json"][0] == "malformed-system"
    assert "accelerator_model_name is blank" in issues["Acme/systems/unnamed.json"][1]
    assert issues["Acme/results/h100x16/gpt3"][0] == "no-score"
    # a file cut inside a line is no failed run (that would blame the stack): reported alone
    cut_short = issues["Acme/results/h100x16/bert/result_9.txt"]
    assert cut_short[0] == "truncated-run" and "ends inside an MLLOG line" in cut_short[1]
    assert summary.scores == 1 and summary.imported == 7  # bert's good runs and score stand
    assert summary.runs == 7 + 3  # written: bert's, gpt3's aborted ones; not the cut one


def test_a_re_import_with_more_runs_says_which_scores_it_kept(
    embedded_store: Any, tmp_path: Path
) -> None:
    """A probe imported two runs, added three and imported again: "imported 3 present 4", the
    score still the two runs' mean, and nothing said."""
    from tests.support.mlperf import write

    root = small_training_tree(tmp_path / "src")
    first = import_mlperf_training(root, embedded_store)
    assert not [i for i in first.issues if i.category == "changed-score"]
    write(root, "Acme/results/h100x16/bert/result_8.txt", mllog(1_700_300_000_000, 2.0))
    again = import_mlperf_training(root, embedded_store)
    (changed,) = [i for i in again.issues if i.category == "changed-score"]
    assert (
        changed.path.endswith("bert/result_*.txt") and "the stored score is kept" in changed.reason
    )
    assert again.imported == 1  # the new run; the score stays as stored
    took = import_mlperf_training(root, embedded_store, replace_changed=True)
    (replaced,) = [i for i in took.issues if i.category == "replaced-score"]
    assert replaced.reason.endswith(": replaced")
    assert (took.replaced, replaced.outcome, took.to_dict()["replaced"]) == (1, "replaced", 1)
    settled = import_mlperf_training(root, embedded_store)
    assert not [i for i in settled.issues if i.category in ("changed-score", "replaced-score")]


@pytest.mark.parametrize(
    ("given", "read"),
    [("6.0", "v6.0"), ("V6.0", "v6.0"), ("v6.0", "v6.0"), ("v06.0", "v6.0"), ("6.00", "v6.0")],
)
def test_a_round_given_is_read_as_mlcommons_writes_it(
    tmp_path: Path, given: str, read: str
) -> None:
    assert read_training_tree(small_training_tree(tmp_path), round_name=given).round == read


@pytest.mark.parametrize("given", ["banana", "v6", "v6.0.1", ""])
def test_a_round_given_that_is_no_round_is_refused(tmp_path: Path, given: str) -> None:
    """A probe imported one tree under banana, v6, 6.0, V6.0 and v6.0.1: five rounds of one."""
    with pytest.raises(InvalidInput, match=r"is not a round name such as v6\.0"):
        read_training_tree(small_training_tree(tmp_path), round_name=given)


def test_bad_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such results tree"):
        read_training_tree(tmp_path / "nope")
    tree = small_training_tree(tmp_path)
    with pytest.raises(InvalidInput, match="--round"):
        read_training_tree(tree.rename(tmp_path / "results"))


def test_cli_json_says_rcp_is_not_applied(tmp_path: Path) -> None:
    from stack_advisor.cli.main import app

    tree = small_training_tree(tmp_path / "src")
    uri = f"embedded:{tmp_path / 'kb'}"
    result = CliRunner().invoke(
        app, ["import", "mlperf-training", str(tree), "--store", uri, "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["round"], summary["runs"], summary["scores"]) == ("v9.9", 7, 1)
    assert "RCP" in summary["note"]
    assert {i["category"] for i in summary["issues"]} == {
        "no-run-stop",
        "malformed-run",
        "missing-system",
    }
    human = CliRunner().invoke(app, ["import", "mlperf-training", str(tree), "--store", uri])
    assert human.exit_code == 0 and "RCP" in human.stderr and "ghost" in human.stderr


# ---- the shared v4.1 round -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_training() -> Path:
    return require_training_data()


def test_shared_round_every_run_read(shared_training: Path) -> None:
    tree = shared_training_tree("v4.1")
    assert (tree.round, tree.files_seen, len(tree.runs), len(tree.systems)) == (
        "v4.1",
        1335,
        1249,
        86,
    )
    assert [(i.path, i.category) for i in tree.issues] == [
        ("tinycorp/results/tinybox_green/bert/result_2.txt", "no-run-stop")
    ]
    counts: dict[str, int] = {}
    for run in tree.runs:
        counts[run.benchmark] = counts.get(run.benchmark, 0) + 1
    assert counts == {
        "llama2_70b_lora": 270,
        "bert": 270,
        "stable_diffusion": 230,
        "gnn": 170,
        "dlrm_dcnv2": 140,
        "ssd": 130,
        "gpt3": 39,
    }
    assert sum(1 for r in tree.runs if r.status == "aborted") == 2
    batch = to_batch(tree)
    scores = [o for o in batch.observations if o.metric == "time_to_train_min"]
    assert len(scores) == 147 and all(o.samples >= 1 and o.value > 0 for o in scores)
    assert len(batch.failures) == 3


@pytest.mark.slow
@pytest.mark.neo4j
def test_shared_round_same_in_embedded_and_neo4j(
    embedded_store: Any, neo4j_store: Any, shared_training: Path
) -> None:
    for store in (embedded_store, neo4j_store):
        summary = import_mlperf_training(shared_training, store)
        assert (summary.imported, summary.failures_new) == (1540, 3)
    assert (
        embedded_store.stats().observations_by_source
        == neo4j_store.stats().observations_by_source
        == {"mlperf-training": 1540}
    )

    def values(store: Any) -> dict[tuple[str, str, str, str | None], float]:
        return {
            (o.source_key or "", o.benchmark.name, o.metric, o.run_id): round(o.value, 9)
            for o in store.iter_observations(ObservationFilter(source="mlperf-training"))
        }

    assert values(embedded_store) == values(neo4j_store)


# Oracle's v5.0 1xBM.GPU.B200.8: a 25.04 container beside a stale template's CUDA 12.2.1 (NVIDIA's
# own v5.0 systems list CUDA 12.9.0.036 with their 25.04 containers, as the release notes say)
STALE_TEMPLATE = dict(
    TRAINING_SYSTEM,
    accelerator_model_name="NVIDIA Blackwell GPU (B200-SXM-180GB)",
    framework="PyTorch NVIDIA Release 25.04",
    other_software_stack={"cuda_version": "12.2.1.020", "cuda_driver_version": "535.86.10"},
)
B200 = "NVIDIA Blackwell GPU (B200-SXM-180GB)"


def test_a_cuda_that_cannot_have_run_beside_its_ngc_container_is_the_containers() -> None:
    from stack_advisor.catalog.stack_facts import ngc_releases

    ctx = system_context("Oracle", "1xBM.GPU.B200.8", STALE_TEMPLATE)
    assert ngc_releases()["25.04"].cuda == "12.9"
    assert ctx.stack.cuda == "12.9" and ctx.stack.framework_version == "25.04"
    note = ctx.details["version_conflicts"]
    assert "published 12.2.1.020, but NGC 25.04 ships CUDA 12.9" in note and "rel-25-04" in note
    assert "12.2.1.020 predates blackwell (first CUDA 12.8)" in note
    assert "12.2.1.020" in (ctx.stack.raw or "")  # what was published stays as provenance
    assert ctx.stack.label().startswith("pytorch 2.7 (NGC 25.04), cuda 12.9")


@pytest.mark.parametrize(
    ("accelerator", "framework", "stack", "cuda", "noted"),
    [
        (
            B200,
            "NVIDIA PyTorch Release 25.04",
            {"cuda_version": "12.9.0.036"},
            "12.9.0.036",
            False,
        ),  # agrees
        # both could have run: which one did is not known, the published one stays, noted
        (
            B200,
            "NGC Pytorch 25.04, NGC HugeCTR 25.04",
            {"cuda_version": "12.8.1.012"},
            "12.8.1.012",
            True,
        ),
        (
            "NVIDIA H100-SXM5-80GB",
            "PyTorch NVIDIA Release 23.04",
            {"cuda_version": "12.2.1"},
            "12.2.1",
            True,
        ),
        # the tag is the stale part (23.09 ships CUDA 12.2, older than Blackwell): the published one
        # stays
        (B200, "PyTorch NVIDIA Release 23.09", {"cuda_version": "12.8"}, "12.8", True),
        (
            B200,
            "PyTorch NVIDIA Release 25.07",
            {"cuda_version": "12.2.1"},
            "12.2.1",
            False,
        ),  # not catalogued
        (
            B200,
            "PyTorch NVIDIA Release 25.04",
            {"cuda_driver_version": "575.51.02"},
            None,
            False,
        ),  # none published
        (B200, "JAX 0.4.30", {"cuda_version": "12.2.1"}, "12.2.1", False),  # not an NGC tag
    ],
)
def test_a_published_cuda_stays_unless_it_cannot_have_run(
    accelerator: str, framework: str, stack: dict[str, str], cuda: str | None, noted: bool
) -> None:
    ctx = system_context(
        "Acme",
        "box",
        dict(
            TRAINING_SYSTEM,
            accelerator_model_name=accelerator,
            framework=framework,
            other_software_stack=stack,
        ),
    )
    assert ctx.stack.cuda == cuda
    assert ("version_conflicts" in ctx.details) == noted


def test_shared_v5_round_records_a_cuda_that_can_have_run(shared_training: Path) -> None:
    """On the published v5.0 round: the one system whose published CUDA could not have run beside
    its catalogued container (Oracle's B200, 12.2.1 with 25.04) records the container's; the others
    that contradict their container are kept as published and noted."""
    archive = shared_training.with_name("training_v5.0.tar.gz")
    if not archive.exists():
        pytest.skip(f"{archive} not found")
    systems: dict[tuple[str, str], tuple[str | None, str]] = {}
    for o in to_batch(shared_training_tree("v5.0")).observations:
        note = o.provenance.details.get("version_conflicts")
        if note:
            systems[
                (str(o.provenance.details["submitter"]), str(o.provenance.details["system_id"]))
            ] = (o.stack.cuda, note)
    replaced = {
        k: cuda for k, (cuda, note) in systems.items() if "the container's is recorded" in note
    }
    assert replaced == {("Oracle", "1xBM.GPU.B200.8"): "12.9"}
    assert (
        systems[("Dell", "1xXE9712x4GB200")][0] == "12.8.1.012"
    )  # both could have run: as published
    assert len(systems) >= 10


def test_a_benchmark_the_catalogue_does_not_know_is_listed_by_every_importer(
    embedded_store: Any, tmp_path: Path
) -> None:
    """A next round's new model (qwen3_moe_30b) is imported under its published name and listed,
    as the summary importer lists it; the tree and Training importers had said nothing."""
    from stack_advisor.collectors.importers.mlperf import import_mlperf
    from tests.support.mlperf import SUMMARY_OFFLINE, result_path, small_tree, write

    root = small_training_tree(tmp_path / "src")
    for i in range(5):
        run = mllog(1_700_000_000_000 + i * 10**7, 9.0 + i)
        write(root, f"Acme/results/h100x16/qwen3_moe_30b/result_{i}.txt", run)
    took = import_mlperf_training(root, embedded_store)
    assert took.unresolved_benchmarks == {"qwen3_moe_30b": 1}  # one score, under its name
    assert took.to_dict()["unresolved_benchmarks"] == {"qwen3_moe_30b": 1}
    tree = small_tree(tmp_path / "inference")
    write(tree, result_path("box8", "llama4-scout-17b", "Offline"), SUMMARY_OFFLINE)
    got = import_mlperf(tree, embedded_store)
    assert got.unresolved_benchmarks == {"llama4-scout-17b": 1}
