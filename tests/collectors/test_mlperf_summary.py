"""The MLPerf summary-table importer: the shared v5.1 table against the v5.1 results tree, the
later rounds' field names and shape, tables of another shape, counted skips, and idempotent
imports through the public CLI on every store backend."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.catalog.canonical import canonical_observation
from stack_advisor.collectors.importers.mlperf import to_observations
from stack_advisor.collectors.importers.mlperf_summary import (
    FIELD_ALIASES,
    import_summary,
    load_rows,
    read_summary,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import Observation
from tests.support.mlperf import require_shared_data, shared_inference_tree

SUMMARY = "summary_results_v5.1.json.gz"
# v5.1 field → the name later rounds use (MLCommons' later summary tables), for the alias fixture.
LATER_NAMES = {
    "Submitter": "Organization",
    "Category": "Division",
    "Accelerator": "accelerator_model_name",
    "a#": "accelerators_per_node",
    "Nodes": "number_of_nodes",
    "Model": "MlperfModel",
    "Performance_Result": "Result",
    "Performance_Units": "Units",
    "Software": "framework",
    "Platform": "system_id",
}


def _keys(observations: list[Observation]) -> dict[str, Observation]:
    """Observations by key, in catalogue names as a store keeps them."""
    memo: dict[int, Any] = {}
    return {o.observation_key: o for o in (canonical_observation(x, memo) for x in observations)}


@pytest.fixture(scope="module")
def v51_rows() -> list[dict[str, Any]]:
    return load_rows(require_shared_data() / SUMMARY)


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.slow
def test_v51_summary_equals_the_v51_results_tree() -> None:
    """Every result of the round's table is the tree's result with the same key (0 missing, 0
    extra) and the same value within 0.1%; the 536 inferred rows are counted, not imported."""
    data = require_shared_data()
    tree = shared_inference_tree("v5.1")
    raw = _keys([to_observations(r)[0] for r in tree.records])
    observations, report = read_summary(data / SUMMARY)
    summary = _keys(observations)
    assert (report.rows, report.results, dict(report.skipped_by_reason)) == (
        1448,
        912,
        {"inferred": 536},
    )
    assert set(raw) - set(summary) == set()
    assert set(summary) - set(raw) == set()
    worst = max(abs(summary[k].value - raw[k].value) / raw[k].value for k in raw)
    assert worst <= 0.001
    interactive = [
        o for o in summary.values() if o.benchmark.parameters["scenario"] == "Interactive"
    ]
    assert len(interactive) == 68 and {o.metric for o in interactive} == {"tokens_per_second"}
    latency = {o.metric for o in summary.values() if o.unit == "ms"}
    assert latency == {
        "p90_latency_ms",
        "p99_latency_ms",
        "p99_9_latency_ms",
    }  # PointPainting: p99.9
    assert report.power_figures_ignored == 24
    precision = {
        (o.accelerator.model, o.benchmark.name): o.provenance.details.get("weight_data_types")
        for o in summary.values()
    }  # the weights' precision as published, kept beside each result
    assert precision[("GB200", "llama2-70b-99")] == "fp4"
    assert precision[("MI325X", "llama2-70b-99")] == "fp8"
    assert (
        not report.unresolved_accelerators
    )  # every v5.1 name resolves (an unknown one: test_rows_not_imported_are_counted_by_reason)


def test_later_rounds_field_names_and_keyed_object_shape(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A fixture in the later rounds' shape, made here by renaming the fields of real v5.1 rows
    (LATER_NAMES) and keying them "0", "1", ...: the same observations as the v5.1 rows."""
    picked = [r for r in v51_rows if not r["inferred"]][:40] + [
        r for r in v51_rows if r["inferred"]
    ][:3]
    later = {
        str(i): {LATER_NAMES.get(k, k): v for k, v in row.items()} for i, row in enumerate(picked)
    }
    original, _ = read_summary(_write(tmp_path / "summary_results_v5.1.json", picked))
    renamed, report = read_summary(_write(tmp_path / "results_v5.1.json", later))
    assert len(original) == 40 and report.skipped_by_reason == {"inferred": 3}
    assert set(_keys(renamed)) == set(_keys(original))
    assert all(
        new in FIELD_ALIASES[ours]
        for ours, new in {
            "submitter": "Organization",
            "benchmark": "MlperfModel",
            "value": "Result",
        }.items()
    )


def test_a_benchmark_named_with_its_scenario_reads_as_that_scenario(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """v5.0's tables name the Interactive scenario in the model ("llama2-70b-interactive-99",
    Scenario "Server"): made here from real v5.1 Interactive rows, the same observations."""
    picked = [r for r in v51_rows if r["Scenario"] == "Interactive" and not r["inferred"]][:6]
    assert picked
    older = [
        {
            **r,
            "Model": r["Model"]
            .replace("llama2-70b-", "llama2-70b-interactive-")
            .replace("llama3.1-405b", "llama3.1-405b-interactive")
            .replace("llama3.1-8b", "llama3.1-8b-interactive"),
            "Scenario": "Server",
            "Location": "",
        }
        for r in picked
    ]
    original, _ = read_summary(_write(tmp_path / "summary_results_v5.1.json", picked))
    renamed, report = read_summary(_write(tmp_path / "older_v5.1.json", older))
    assert report.results == len(picked) and {
        o.benchmark.parameters["scenario"] for o in renamed
    } == {"Interactive"}
    assert set(_keys(renamed)) == set(_keys(original))


def test_results_of_mlcommons_reference_code_say_so(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A system folder <system>-reference-<device>-<framework>-... ran MLCommons' reference code
    (v5.1: GATEOverflow's vLLM whisper on RTX 4090): its stack says so, as the tree importer's
    does."""
    picked = [r for r in v51_rows if not r["inferred"] and "-reference-gpu-vllm" in r["Location"]][
        :3
    ]
    picked += [r for r in v51_rows if not r["inferred"] and "-nvidia-gpu-" in r["Location"]][:3]
    observations, _ = read_summary(_write(tmp_path / "summary_results_v5.1.json", picked))
    marked = [o.stack.extra.get("implementation") for o in observations]
    assert marked == ["reference"] * 3 + [None] * 3


def test_a_table_of_another_shape_gets_one_error_naming_what_it_lacks(tmp_path: Path) -> None:
    rows = [{"Submitter": "X", "Model": "resnet50", "Scenario": "Offline", "Result": 1.0}]
    with pytest.raises(InvalidInput) as caught:
        read_summary(_write(tmp_path / "summary_v5.1.json", rows))
    message = str(caught.value)
    for lacking in (
        "division (Category / Division",
        "system_id (Platform",
        "accelerator (Accelerator",
        "nodes (Nodes",
        "units (Performance_Units / Units",
        "a# / accelerators_per_node",
    ):
        assert lacking in message
    assert "benchmark" not in message and "submitter" not in message
    with pytest.raises(InvalidInput, match="expected a list of result rows or an object keyed"):
        read_summary(_write(tmp_path / "other_v5.1.json", {"results": "none"}))
    (tmp_path / "broken_v5.1.json").write_text("{", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not readable JSON"):
        read_summary(tmp_path / "broken_v5.1.json")


def test_round_from_the_name_the_rows_or_the_option(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A table as MLCommons publishes it (``summary_results.json``) is of the round its rows'
    ``version`` names; rows of no round, or of several, need ``--round``."""
    file = _write(tmp_path / "summary_results.json", v51_rows[:2])
    observations, report = read_summary(file)
    assert report.round == "v5.1" and all(o.source_key.startswith("v5.1/") for o in observations)
    mixed = [v51_rows[0], {**v51_rows[1], "version": "v6.0"}]
    with pytest.raises(
        InvalidInput, match=r"its rows name v5\.1 \(1 row\), v6\.0 \(1 row\); pass --round"
    ):
        read_summary(_write(tmp_path / "summary_results.json", mixed))
    # the hint names the round most rows give (a probe's table of 1,472 v6.0 rows and one
    # v5.1 row had been told "e.g. v5.1")
    most = [v51_rows[0], *({**r, "version": "v6.0"} for r in v51_rows[1:4])]
    with pytest.raises(InvalidInput, match=r"v6\.0 \(3 rows\), v5\.1 \(1 row\); .*e\.g\. v6\.0"):
        read_summary(_write(tmp_path / "summary_results.json", most))
    unnamed = [{k: v for k, v in r.items() if k != "version"} for r in v51_rows[:2]]
    with pytest.raises(InvalidInput, match="from its name; pass --round"):
        read_summary(_write(tmp_path / "summary_results.json", unnamed))
    observations, report = read_summary(
        _write(tmp_path / "summary_results.json", unnamed), round_name="v5.1"
    )
    assert report.round == "v5.1" and all(o.source_key.startswith("v5.1/") for o in observations)
    # a round the name or --round gives that the rows contradict: a v5.1 table renamed v6.0 had
    # been imported whole as v6.0; rows of another round among the right ones are listed
    with pytest.raises(InvalidInput, match=r"v6\.0 \(the file's name\) is not the round .* v5\.1"):
        read_summary(_write(tmp_path / "summary_results_v6.0.json", v51_rows[:2]))
    with pytest.raises(InvalidInput, match=r"v6\.0 \(--round\) is not the round"):
        read_summary(_write(tmp_path / "summary_results.json", v51_rows[:2]), round_name="v6.0")
    observations, report = read_summary(
        _write(tmp_path / "summary_results.json", mixed), round_name="v5.1"
    )
    assert len(observations) == 1 and report.skipped_by_reason == {"other-round": 1}
    (bad,) = report.to_dict()["bad_rows"]
    assert (bad["field"], bad["index"]) == ("version", 1) and "the row is of v6.0" in bad["why"]
    # a version naming no round (a later table's field of another meaning) is not judged
    other_meaning = [{**r, "version": "2"} for r in v51_rows[:2]]
    observations, report = read_summary(
        _write(tmp_path / "summary_results_v5.1.json", other_meaning)
    )
    assert len(observations) == len([r for r in v51_rows[:2] if not r["inferred"]])


def test_one_result_twice_in_a_table_is_reported(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """Rows giving one result (one system, benchmark, scenario and metric: a benchmark under
    two names) keep the first and list the others among ``bad_rows``, never silently; one with
    another figure is a conflict, both figures named."""
    row = next(r for r in v51_rows if not r["inferred"])
    value = row["Performance_Result"]
    thrice = [
        row,
        {**row, "ID": "again"},
        {**row, "ID": "other", "Performance_Result": value * 2},
    ]
    observations, report = read_summary(_write(tmp_path / "summary_results_v5.1.json", thrice))
    assert [o.value for o in observations] == [value]
    assert dict(report.skipped_by_reason) == {"duplicate": 1, "conflicting-duplicate": 1}
    assert report.results + sum(report.skipped_by_reason.values()) == report.rows == 3
    same, other = report.bad_rows
    assert same["row"] == "again" and same["field"] == "benchmark"
    assert same["why"].startswith(f"the same result as row {row['ID']} {row['Location']} (#0)")
    # a second figure for the result is named with both figures, not called the same result
    assert other["row"] == "other" and other["field"] == "value"
    assert other["why"].startswith(
        f"{value * 2:g} for the result row {row['ID']} {row['Location']} (#0) gives as {value:g}"
    )


def test_rows_not_imported_are_counted_by_reason(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    ss = next(
        r
        for r in v51_rows
        if r["Performance_Units"] == "Latency (ms)"
        and not r["inferred"]
        and r["Scenario"] == "SingleStream"
        and r["Model"] == "retinanet"
    )
    seconds = {
        **ss,
        "ID": "s",
        "Performance_Units": "Latency (s)",
        "Performance_Result": ss["Performance_Result"] / 1000,
    }
    energy = {**ss, "ID": "e", "Performance_Units": "millijoules", "Platform": "other"}
    odd = {**ss, "ID": "u", "Performance_Units": "Furlongs/s", "Platform": "odd"}
    stranger = {**ss, "ID": "x", "Accelerator": "Acme Hyperchip 9000", "a#": 4, "Platform": "acme"}
    blank = {**ss, "ID": "b", "Performance_Result": "", "Platform": "blank"}
    # units that cannot be the scenario's or the benchmark's result (a probe's rows were stored)
    tokens = {**ss, "ID": "t", "Performance_Units": "Tokens/s", "Platform": "tokens"}
    offline = next(
        r
        for r in v51_rows
        if r["Scenario"] == "Offline" and r["Model"] == "retinanet" and not r["inferred"]
    )
    latency = {**offline, "ID": "l", "Performance_Units": "Latency (ms)", "Platform": "lat"}
    counted = {**offline, "ID": "c", "Performance_Units": "Tokens/s", "Platform": "cnt"}
    table = [ss, seconds, energy, odd, stranger, blank, tokens, latency, counted]
    observations, report = read_summary(_write(tmp_path / "summary_v5.1.json", table))
    assert dict(report.skipped_by_reason) == {
        "energy-or-power": 1,
        "unknown-units": 1,
        "missing-field": 1,
        "duplicate": 1,  # the Latency (s) row: the ms row's result again, reported as such
        "unit-mismatch": 3,
    }
    assert report.results + sum(report.skipped_by_reason.values()) == report.rows == len(table)
    why = {b["row"]: (b["field"], b["why"]) for b in report.bad_rows}
    assert list(why) == ["s", "u", "b", "t", "l", "c"]  # unknown units listed too (a probe's)
    assert why["u"][0] == "Performance_Units" and "'Furlongs/s' is not a unit" in why["u"][1]
    assert why["b"] == ("Performance_Result", "empty (Performance_Result)")  # named, not counted
    assert why["t"] == ("Performance_Units", "a throughput where SingleStream publishes a latency")
    assert why["l"] == ("Performance_Units", "a latency where Offline publishes a throughput")
    assert why["c"][1].startswith("tokens/s for retinanet")
    assert "Furlongs/s" in report.examples["unknown-units"]
    by_system = {o.provenance.details["system_id"]: o for o in observations}
    assert by_system[ss["Platform"]].value == pytest.approx(
        ss["Performance_Result"]
    )  # seconds → ms: same key
    assert len(_keys(observations)) == 2  # the Latency (s) row is the ms row's result
    acme = by_system["acme"]
    assert acme.accelerator.model == "Acme Hyperchip 9000" and acme.accelerator.count == 4
    assert report.unresolved_accelerators == {"Acme Hyperchip 9000": 1}


def test_cli_imports_once_on_every_store(
    store: Any, tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """``advisor import mlperf-summary`` twice: the second adds nothing; the JSON counts. A table
    re-imported with one result corrected keeps the stored figure and names that result (a probe
    had read "present 3" and nothing else: the new figure dropped unsaid), and with
    ``replace_changed`` takes the corrected figure; a figure that differs only by a publication's
    rounding is the same figure."""
    from stack_advisor.cli.main import app
    from stack_advisor.schema.models import ObservationFilter

    picked = [r for r in v51_rows if r["Category"] == "closed"][:60]
    file = _write(tmp_path / "summary_results_v5.1.json", picked)
    direct = import_summary(file, store)
    again = import_summary(file, store)
    assert direct.imported == direct.results > 0
    assert (again.imported, again.already_present, again.changed) == (0, direct.results, 0)
    stored = list(store.iter_observations(ObservationFilter(source="mlperf-inference")))
    assert len(stored) == direct.results
    assert {o.provenance.details["file"] for o in stored} == {file.name}
    results = [i for i, r in enumerate(picked) if not r.get("inferred")]
    corrected = json.loads(json.dumps(picked))
    first, second = corrected[results[0]], corrected[results[1]]
    first["Performance_Result"] = float(first["Performance_Result"]) * 1.5
    second["Performance_Result"] = float(second["Performance_Result"]) * 1.00004  # rounding
    fixed = import_summary(_write(tmp_path / "summary_results_v5.1.json", corrected), store)
    assert (fixed.imported, fixed.changed) == (0, 1)
    (row,) = fixed.changed_rows
    assert first["Platform"] in row["result"] and first["Model"] in row["result"]
    assert float(row["table"]) == pytest.approx(first["Performance_Result"], rel=1e-5)
    held = {o.value for o in store.iter_observations(ObservationFilter(source="mlperf-inference"))}
    assert float(row["stored"]) == pytest.approx(float(picked[results[0]]["Performance_Result"]))
    assert first["Performance_Result"] not in held  # the stored figure is kept
    # asked to, the import takes the corrected figure; imported again, nothing has changed
    replaced = import_summary(
        _write(tmp_path / "summary_results_v5.1.json", corrected), store, replace_changed=True
    )
    assert (replaced.imported, replaced.changed, replaced.replaced) == (0, 1, 1)
    held = {o.value for o in store.iter_observations(ObservationFilter(source="mlperf-inference"))}
    assert first["Performance_Result"] in held
    settled = import_summary(_write(tmp_path / "summary_results_v5.1.json", corrected), store)
    assert (settled.changed, settled.replaced) == (0, 0)
    if not store.uri.startswith("embedded:"):
        return
    runner = CliRunner()
    result = runner.invoke(
        app, ["import", "mlperf-summary", str(file), "--store", store.uri, "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["imported"] == 0


def test_cli_bad_table_exits_with_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app

    file = _write(tmp_path / "summary_v5.1.json", [{"Model": "resnet50"}])
    code = run_guarded(
        app, ["import", "mlperf-summary", str(file), "--store", f"embedded:{tmp_path / 'kb'}"]
    )
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err  # bad input: a usage error
    assert (
        err.count("missing required field(s)") == 1 and "submitter (Submitter / Organization" in err
    )


def test_gzip_tables_read_like_plain_ones(tmp_path: Path, v51_rows: list[dict[str, Any]]) -> None:
    plain = _write(tmp_path / "a_v5.1.json", v51_rows[:5])
    packed = tmp_path / "b_v5.1.json.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        json.dump(v51_rows[:5], handle)
    assert set(_keys(read_summary(plain)[0])) == set(_keys(read_summary(packed)[0]))


def test_a_row_contradicting_itself_is_reported_not_stored(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A closed row whose Model names another benchmark than its Location, or that names a
    discrete accelerator with none counted (a blank count is how the table writes a CPU-only
    system), is listed among the bad rows with its field; not stored as some other result (an
    H200 row with a# 0 had become a CPU result that ranked first). An integrated GPU with a
    blank count is the processor's, as published (v5.1's Arc 140T rows)."""
    good = next(
        r
        for r in v51_rows
        if r["Category"] == "closed" and "H200" in str(r["Accelerator"]) and not r["inferred"]
    )
    uncounted = {**good, "ID": "zero", "a#": 0, "Platform": "zero"}
    other = {**good, "ID": "model", "Model": "resnet50", "Platform": "model"}
    # counted but not named: had been stored as a CPU-only system (it ranked among the CPUs)
    unnamed = {**good, "ID": "unnamed", "Accelerator": "", "Platform": "unnamed"}
    placeholder = {**good, "ID": "n/a", "Accelerator": "N/A", "Platform": "n/a"}
    table = [good, uncounted, other, unnamed, placeholder]
    observations, report = read_summary(_write(tmp_path / "summary_v5.1.json", table))
    assert [o.provenance.details["system_id"] for o in observations] == [good["Platform"]]
    bad = {b["row"]: b for b in report.to_dict()["bad_rows"]}
    assert bad["zero"]["field"] == "a#" and "no accelerator counted" in bad["zero"]["why"]
    assert bad["model"]["field"] == "Model" and "Location" in bad["model"]["why"]
    assert bad["unnamed"]["field"] == "Accelerator" and "none named" in bad["unnamed"]["why"]
    assert bad["n/a"]["field"] == "Accelerator" and "none named" in bad["n/a"]["why"]


def test_a_benchmark_the_catalogue_does_not_know_is_reported(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A new round's model the catalogue does not name yet is imported under its published name
    and listed in the report (``unresolved_benchmarks``), never silently."""
    row = next(r for r in v51_rows if not r["inferred"] and r["Scenario"] == "Offline")
    system, scenario = row["Location"].split("/")[3], row["Scenario"]
    new = {
        **row,
        "ID": "new",
        "Model": "acme-lm-9000",
        "Location": f"closed/{row['Submitter']}/results/{system}/acme-lm-9000/{scenario}",
    }
    observations, report = read_summary(_write(tmp_path / "summary_results_v5.1.json", [row, new]))
    assert len(observations) == 2
    assert report.to_dict()["unresolved_benchmarks"] == {"acme-lm-9000": 1}


def test_a_precision_of_any_shape_is_kept_and_never_loses_the_row(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """``weight_data_types`` is provenance: kept as published (an object as its JSON text, a
    long one cut), and a row is never refused for it."""
    row = next(r for r in v51_rows if not r["inferred"] and r["Scenario"] == "Offline")
    per_part = {**row, "weight_data_types": {"unet": "fp8", "vae": "int8"}}
    observations, report = read_summary(_write(tmp_path / "summary_results_v5.1.json", [per_part]))
    assert len(observations) == 1 and not report.bad_rows
    kept = observations[0].provenance.details["weight_data_types"]
    assert json.loads(kept) == {"unet": "fp8", "vae": "int8"}
    long = {**row, "weight_data_types": "fp8," * 500}
    observations, _ = read_summary(_write(tmp_path / "summary_results_v5.1.json", [long]))
    assert observations[0].provenance.details["weight_data_types"] == ("fp8," * 50)


def test_a_family_name_an_import_kept_is_asked_back_by_that_name(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """A row naming a family whose editions its system does not tell apart ("RTX PRO 4500
    Blackwell-PCIe-32GB": Workstation and Server Edition) is kept under its published name, and a
    query written the same way is answered from it, observed (a probe got "compute unpublished"
    for the Workstation Edition beside the very result); a family none of whose members can be
    answered says so for each."""
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.collectors.importers.mlperf_summary import import_summary
    from stack_advisor.store.registry import open_store

    name = "NVIDIA RTX PRO 4500 Blackwell-PCIe-32GB"
    row = next(
        r
        for r in v51_rows
        if not r["inferred"] and r["Model"] == "llama3.1-8b" and r["Scenario"] == "Offline"
    )
    held = {**row, "Accelerator": name, "a#": 4, "System": "Acme box", "Platform": "acme4500"}
    file = _write(tmp_path / "summary_results_v5.1.json", [row, held])
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    try:
        store.ensure_schema()
        report = import_summary(file, store)
        assert report.unresolved_accelerators == {name: 1}
        asked = {"accelerator_count": 4, "benchmark": "llama3.1-8b", "scenario": "Offline"}
        as_published, family = Advisor(store).predict(
            [
                {**asked, "accelerator": name},
                {**asked, "accelerator": "RTX PRO 4500 Blackwell-PCIe"},
            ]
        )
    finally:
        store.close()
    assert as_published.basis.value == "observed"
    assert as_published.value == pytest.approx(held["Performance_Result"])
    assert family.basis.value == "unsupported" and family.reason is not None
    assert family.reason.startswith(
        "accelerator: 'RTX PRO 4500 Blackwell-PCIe' names a family (RTX-PRO-4500-Blackwell-WS, "
        "RTX-PRO-4500-Blackwell-Server), each refused alike: compute unpublished"
    )


def test_a_results_own_software_text_asks_it_back_with_every_component_it_names(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """The ROCm (Triton, DALI, ...) a row's software text names is kept in its stack as the
    results tree keeps it, so the same text asked back is answered from that result, observed
    (a probe got "interpolated" for AMD's own "PyTorch ..., ROCm 7.2.2"), and a constraint on
    the component ranks it (``--framework 'rocm>=6'`` ranked nothing)."""
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.collectors.importers.mlperf_summary import import_summary
    from stack_advisor.store.registry import open_store

    row = next(
        r
        for r in v51_rows
        if not r["inferred"] and "ROCm" in str(r["Software"]) and r["Model"] == "llama2-70b-99"
    )
    [obs], _ = read_summary(_write(tmp_path / "summary_results_v5.1.json", [row]))
    assert obs.stack.extra["rocm"].startswith("6.")
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    try:
        store.ensure_schema()
        import_summary(_write(tmp_path / "summary_results_v5.1.json", [row]), store)
        advisor = Advisor(store)
        [found] = advisor.predict(
            [
                {
                    "accelerator": row["Accelerator"],
                    "accelerator_count": row["a#"],
                    "benchmark": row["Model"],
                    "scenario": row["Scenario"],
                    "framework": row["Software"],
                }
            ]
        )
        ranked = advisor.recommend(
            {
                "benchmark": row["Model"],
                "scenario": row["Scenario"],
                "frameworks": [
                    {"name": "rocm", "version": f">={obs.stack.extra['rocm'].split('.')[0]}"}
                ],
            }
        )
    finally:
        store.close()
    assert found.basis.value == "observed"
    assert found.value == pytest.approx(row["Performance_Result"])
    assert ranked.recommendations and "framework constraint" not in ranked.excluded


def test_a_corrected_figure_replaced_from_the_cli_is_what_the_advisor_answers(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """``advisor import mlperf-summary --replace-changed``: the corrected figure replaces the
    stored one and the next answer is made from it (the store's caches read it again), where
    without the option the stored figure is kept and said to be."""
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.cli.main import app
    from stack_advisor.store.registry import open_store

    row = next(
        r
        for r in v51_rows
        if not r["inferred"] and r["Model"] == "retinanet" and r["Scenario"] == "Offline"
    )
    uri = f"embedded:{tmp_path / 'kb'}"
    asked = {
        "accelerator": row["Accelerator"],
        "accelerator_count": row["a#"],
        "benchmark": "retinanet",
        "scenario": "Offline",
        "as_of": "now",
    }
    runner = CliRunner()
    file = _write(tmp_path / "summary_results_v5.1.json", [row])
    first = runner.invoke(app, ["import", "mlperf-summary", str(file), "--store", uri])
    assert first.exit_code == 0, first.output
    with open_store(uri) as store:
        (before,) = Advisor(store).predict([asked])
    fixed = {**row, "Performance_Result": float(row["Performance_Result"]) * 1.5}
    file = _write(tmp_path / "summary_results_v5.1.json", [fixed])
    kept = runner.invoke(app, ["import", "mlperf-summary", str(file), "--store", uri])
    assert kept.exit_code == 0 and "the stored figure is kept" in kept.output
    took = runner.invoke(
        app, ["import", "mlperf-summary", str(file), "--store", uri, "--replace-changed", "--json"]
    )
    assert took.exit_code == 0, took.output
    assert json.loads(took.stdout)["replaced"] == 1
    with open_store(uri) as store:
        (after,) = Advisor(store).predict([asked])
    assert before.basis.value == after.basis.value == "observed"
    assert after.value == pytest.approx(before.value * 1.5)


def test_a_row_holding_bytes_that_are_not_utf8_is_reported_and_the_rest_imported(
    tmp_path: Path, v51_rows: list[dict[str, Any]]
) -> None:
    """One stray byte in one row's Software had refused the whole table ('not text'); that row
    is a bad row naming its field, the others are imported. A file that is mostly not text is
    still refused whole."""
    good = [r for r in v51_rows if not r["inferred"]][:3]
    marked = [{**good[0], "Software": "TensorRT MARK"}, *good[1:]]
    raw = json.dumps(marked).encode().replace(b"MARK", b"\xff\xfe")
    (tmp_path / "summary_results_v5.1.json").write_bytes(raw)
    observations, report = read_summary(tmp_path / "summary_results_v5.1.json")
    assert len(observations) == 2 and report.skipped_by_reason == {"not-text": 1}
    (bad,) = report.to_dict()["bad_rows"]
    assert (bad["field"], bad["index"]) == ("Software", 0) and "not UTF-8" in bad["why"]
    # a table that is valid UTF-8 keeps a row whose text holds a U+FFFD of its own
    kept = [{**good[0], "Notes": "caf\ufffd"}, *good[1:]]
    observations, report = read_summary(_write(tmp_path / "summary_results_v5.1.json", kept))
    assert len(observations) == 3 and not report.skipped_by_reason
    (tmp_path / "summary_results_v5.0.json").write_bytes(bytes(range(128, 256)) * 64)
    with pytest.raises(InvalidInput, match="is not text"):
        read_summary(tmp_path / "summary_results_v5.0.json")
