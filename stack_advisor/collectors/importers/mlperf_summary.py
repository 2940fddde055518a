"""Import an MLPerf Inference round from MLCommons' published results table alone.

MLCommons publishes every round's whole result table as one JSON file (``summary_results.json``):
one row per published result. A user can import a round from it the day it appears, without the
raw results tree. Its field names drift between rounds (v5.1: ``Submitter``, ``Category``,
``Accelerator``, ``a#``; later: ``Organization``, ``Division``, ``accelerator_model_name``,
``accelerators_per_node``, ...) and so does its shape (a list of rows, or an object keyed "0",
"1", ...): both are read through ``FIELD_ALIASES``, a table, not code branches. A file of another
shape gets one error naming every required field it lacks.

The observations are the ones the results-tree importer
(``stack_advisor.collectors.importers.mlperf``) makes of the same results, with the same keys (a
published result is keyed by where it was published: round, division, submitter, system, benchmark,
scenario, metric), so importing a round both ways stores each result once. What the table cannot say
stays unsaid: the stack is the ``Software`` text only (the tree's ``other_software_stack`` is not in
the table), and there are no TTFT/TPOT figures.

Rows not imported are counted by reason and reported: ``inferred`` (a result derived from another
scenario's run, as the tree importer skips them), ``energy-or-power`` (a row whose figure is
energy or power), ``unknown-units``, ``unknown-scenario``, ``missing-field``, ``bad-value``. A
row whose accelerator the catalogue does not know is imported under its published name and
counted as unresolved, never dropped or mapped to another part.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stack_advisor.catalog import (
    BenchmarkEntry,
    load_catalog,
    named_scenario,
    resolve_accelerator,
    resolve_benchmark,
)
from stack_advisor.catalog.editions import resolve_in_context
from stack_advisor.catalog.rounds import round_date
from stack_advisor.catalog.stack_text import (
    benchmark_stack,
    classify_placement,
    implementation_of,
    merge_stack_texts,
    parse_framework,
    system_components,
)
from stack_advisor.collectors.importers.limits import ImportLimits
from stack_advisor.collectors.importers.mlperf_common import (
    DEFAULT_BATCH,
    checked_round,
    cpu_accelerator,
    detect_round,
    inference_stack,
    ingest_counted,
    metric_facts,
    placement_of,
    reconcile_figures,
    same_figure,
)
from stack_advisor.collectors.importers.mlperf_inference_tree import ATTRIBUTION, FAMILY, SOURCE
from stack_advisor.collectors.importers.mlperf_summary_table import (
    FIELD_ALIASES,
    NOT_UTF8,
    REQUIRED,
    NotText,
    check_texts,
    field_map,
    load_rows,
    location_parts,
    normalised,
    row_nodes,
    row_scenario,
    table_rows,
)
from stack_advisor.collectors.importers.mlperf_system import (
    NOT_AN_ACCELERATOR,
    flat_text,
    whole_number,
)
from stack_advisor.collectors.importers.mlperf_system import accelerators as system_accelerators
from stack_advisor.collectors.importers.row_checks import (
    RowRejected,
    check_plausible,
    result_number,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    Observation,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store

# Units as tables print them (compared lower case) → (kind, metric for throughput, factor to ms
# for latency). Energy and power rows are counted and skipped: the store keeps performance.
UNITS: dict[str, tuple[str, str | None, float]] = {
    "samples/s": ("throughput", "samples_per_second", 1.0),
    "queries/s": ("throughput", "queries_per_second", 1.0),
    "tokens/s": ("throughput", "tokens_per_second", 1.0),
    "latency (ms)": ("latency", None, 1.0),
    "latency (s)": ("latency", None, 1000.0),
    "latency (us)": ("latency", None, 0.001),
    "latency (ns)": ("latency", None, 1e-6),
}
ENERGY_WORDS = ("joule", "watt", "energy", "power")
SKIP_REASONS = {
    "inferred": "a result inferred from another scenario's run (not a run of its own)",
    "energy-or-power": "an energy or power figure (the store keeps performance results)",
    "unknown-units": "units the importer does not know",
    "unknown-scenario": "a scenario the catalogue does not know",
    "missing-field": "a required field is empty",
    "bad-value": "the result is not a positive number or a count is not a whole number",
    "unit-mismatch": "units that contradict the scenario or the benchmark (a latency for a "
    "throughput scenario, tokens for a benchmark counted in samples)",
    "duplicate": "the same result as an earlier row of the table (the first is kept)",
    "conflicting-duplicate": "another figure for a result an earlier row of the table gives (the "
    "first is kept; which one is right, the table does not say)",
    "not-a-row": "a row that is not a JSON object",
    "other-round": "a row whose own version names another round than the import's",
    "not-text": "a row whose text holds bytes that are not UTF-8",
}
BAD_ROWS_SHOWN = 1000


@dataclass
class SummaryImport:
    """What one summary table gave: rows seen, imported, skipped by reason, unresolved names."""

    path: str
    round: str
    rows: int
    results: int = 0
    imported: int = 0
    already_present: int = 0
    skipped_by_reason: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # reason → one row's description
    unresolved_accelerators: Counter[str] = field(default_factory=Counter)
    # benchmarks the catalogue does not know, kept under their published names (a new round's
    # models: answered once the catalogue names them, refused as unknown until then)
    unresolved_benchmarks: Counter[str] = field(default_factory=Counter)
    power_figures_ignored: int = 0
    seconds: float = 0.0
    # (file, row, field, why) of the rows refused for a bad value, the first BAD_ROWS_SHOWN
    bad_rows: list[dict[str, str | int]] = field(default_factory=list)
    # results the store held already at another value (a corrected table re-imported): the
    # stored figure is kept; how many, and the first BAD_ROWS_SHOWN of them
    changed: int = 0
    changed_rows: list[dict[str, str]] = field(default_factory=list)
    replaced: int = 0  # of those, the stored figures replaced (``--replace-changed``)

    def held_otherwise(self, obs: Observation, stored: float) -> None:
        """Say that the store keeps ``stored`` where this table gives ``obs``'s value."""
        self.changed += 1
        if len(self.changed_rows) < BAD_ROWS_SHOWN:
            scenario = obs.benchmark.parameters.get("scenario") or ""
            self.changed_rows.append(
                {
                    "result": f"{obs.source_key} {obs.benchmark.name} {scenario} {obs.metric}",
                    "stored": f"{stored:.6g}",
                    "table": f"{obs.value:.6g}",
                }
            )

    def reject(self, row: _Row, exc: RowRejected, reason: str = "bad-value") -> None:
        """Skip a row for one bad field, and say which row, field and why."""
        self.skip(reason, row.values, str(exc))
        if len(self.bad_rows) < BAD_ROWS_SHOWN:
            where = row.values.get("row_id") or row.values.get("location") or f"#{row.index}"
            self.bad_rows.append(
                {
                    "file": row.file,
                    "row": str(where)[:200],  # its ID: one per system, not per row
                    "index": row.index,  # its position in the table (from 0): one row
                    "field": exc.field,
                    "why": exc.why,
                }
            )

    def skip(self, reason: str, row: dict[str, Any], detail: str = "") -> None:
        self.skipped_by_reason[reason] += 1
        if reason not in self.examples:
            where = row.get("location") or row.get("row_id") or "?"
            self.examples[reason] = f"{where}: {SKIP_REASONS[reason]}" + (
                f" ({detail})" if detail else ""
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "round": self.round,
            "rows": self.rows,
            "results": self.results,
            "imported": self.imported,
            "already_present": self.already_present,
            "skipped": sum(self.skipped_by_reason.values()),
            "skipped_by_reason": dict(sorted(self.skipped_by_reason.items())),
            "skip_examples": dict(sorted(self.examples.items())),
            "unresolved_accelerators": dict(self.unresolved_accelerators.most_common()),
            "unresolved_benchmarks": dict(self.unresolved_benchmarks.most_common()),
            "power_figures_ignored": self.power_figures_ignored,
            "bad_rows": self.bad_rows,
            "changed": self.changed,
            "changed_rows": self.changed_rows,
            "replaced": self.replaced,
            "seconds": round(self.seconds, 3),
        }


# ---- one row → one observation ---------------------------------------------------------------


def _implementation(row: _Row, system_id: str) -> dict[str, str]:
    """{"implementation": "reference"} where the result's system folder (its location, else the
    system id) says the MLCommons reference code ran, as the tree importer records it."""
    where = location_parts(row.values.get("location") or "")
    implementation = implementation_of(where[0] if where else system_id)
    return {"implementation": implementation} if implementation else {}


def _metric(
    benchmark_id: str, base: str | None, scenario: str, kind: str, unit_metric: str | None
) -> str:
    """The metric the tree importer names this figure: tokens/s for a benchmark LoadGen counts in
    tokens (whatever the table labels it), the benchmark's own tail percentile or the scenario's
    for latency."""
    cat = load_catalog()
    entry = _entry(benchmark_id, base)
    if kind == "throughput":
        return "tokens_per_second" if entry is not None and entry.tokens else str(unit_metric)
    if entry is not None and entry.latency_percentile is not None and scenario == "SingleStream":
        return f"p{entry.latency_percentile:g}".replace(".", "_") + "_latency_ms"
    return cat.scenarios[scenario].metric


def _entry(benchmark_id: str, base: str | None) -> BenchmarkEntry | None:
    """The catalogue's entry of the row's benchmark, else of the benchmark it is a variant of."""
    cat = load_catalog()
    return cat.benchmark(FAMILY, benchmark_id) or (cat.benchmark(FAMILY, base) if base else None)


def _unit_mismatch(
    benchmark_id: str, base: str | None, scenario: str, kind: str, unit_metric: str | None
) -> str | None:
    """Why the row's units cannot be its scenario's or benchmark's result, or None: a latency
    where the scenario publishes a throughput (or the reverse), tokens for a benchmark the
    catalogue says LoadGen counts in samples or queries."""
    higher = metric_facts(load_catalog().scenarios[scenario].metric)[1]
    expected = "throughput" if higher else "latency"
    if kind != expected:
        return f"a {kind} where {scenario} publishes a {expected}"
    entry = _entry(benchmark_id, base)
    if unit_metric == "tokens_per_second" and entry is not None and not entry.tokens:
        return f"tokens/s for {entry.id}, whose LoadGen counts samples or queries, not tokens"
    return None


@dataclass
class _Row:
    round: str
    file: str
    mtime: float
    values: dict[str, Any]
    index: int = -1  # where the row is in the table


@dataclass
class _Figure:
    """What a row publishes, read and checked: the result and the system it ran on."""

    scenario: str
    benchmark: str
    benchmark_raw: str
    metric: str
    value: float
    model: str
    per_node_text: str
    count: int
    nodes: int


def _refused(row: _Row, report: SummaryImport) -> bool:
    """Whether the row is one the importer does not take (counted in ``report`` by reason)."""
    r = row.values
    try:
        check_texts(r)
    except RowRejected as exc:
        report.reject(row, exc)
        return True
    if str(r.get("inferred") or "0").strip().lower() not in ("0", "false", "no", ""):
        report.skip("inferred", r)
        return True
    units = flat_text(r.get("units")).lower()
    if any(word in units for word in ENERGY_WORDS):
        report.skip("energy-or-power", r, units)
        return True
    if units not in UNITS:  # listed in bad_rows: a new round's units are worth seeing
        known = ", ".join(UNITS)
        why = (
            f"{r.get('units')!r} is not a unit the importer knows ({known})"
            if units
            else f"empty (a unit the importer knows: {known})"
        )
        report.reject(row, RowRejected(FIELD_ALIASES["units"][0], why), "unknown-units")
        return True
    empty = [
        f
        for f in ("submitter", "division", "system_id", "benchmark", "scenario", "value")
        if not flat_text(r.get(f))
    ]
    if empty:
        # a row without a field it needs is a bad row: named in bad_rows as a bad value is
        columns = [FIELD_ALIASES[f][0] for f in empty]  # as the published tables name them
        report.reject(
            row, RowRejected(columns[0], f"empty ({', '.join(columns)})"), "missing-field"
        )
        return True
    return False


def _discrete(name: str) -> bool:
    """Whether ``name`` is a catalogue part and no integrated GPU (a CPU-only row names none)."""
    if not name:
        return False
    match = resolve_accelerator(name)
    entry = load_catalog().accelerators.get(match.key) if match.resolved else None
    return entry is not None and entry.form_factor != "integrated"


def _counts(r: dict[str, Any]) -> tuple[float, tuple[str, str, int, int]]:
    """The row's result and its (model, per-node text, count, nodes).

    Raises:
        RowRejected: a bad field, named.
        TypeError, ValueError: a count that cannot be read.
    """
    value = result_number(r["value"], "value")
    per_node = flat_text(r.get("accelerators_per_node"))
    nodes = row_nodes(r.get("nodes"))
    if not per_node and whole_number(r.get("total_accelerators")):
        per_node = str(int(r["total_accelerators"]) // nodes)
    named = flat_text(r.get("accelerator"))
    # a blank count is how the table writes a CPU-only system, which names no discrete
    # accelerator (an integrated GPU is the processor's: Core Ultra's Arc 140T)
    if _discrete(named) and (not per_node or whole_number(per_node) == 0):
        raise RowRejected(
            "a#",
            f"no accelerator counted for a system naming {named!r} (a CPU-only system names none)",
        )
    if named.lower() in NOT_AN_ACCELERATOR - {"cpu"} and whole_number(per_node):  # no name
        raise RowRejected(
            "Accelerator",
            f"{per_node} accelerator(s) counted per node but none named: which accelerator ran "
            "is not said (a CPU-only system counts none)",
        )
    system = system_accelerators(
        {
            "accelerator_model_name": r.get("accelerator"),
            "accelerators_per_node": per_node or "0",
            "number_of_nodes": r.get("nodes"),
        }
    )
    return value, system


def row_observation(row: _Row, report: SummaryImport) -> Observation | None:
    """The observation of one table row, or None (counted in ``report`` by reason)."""
    r = row.values
    if _refused(row, report):
        return None
    scenario = row_scenario(r)
    if scenario is None:
        why = f"{r.get('scenario')!r} is not a scenario the catalogue knows"
        report.reject(row, RowRejected(FIELD_ALIASES["scenario"][0], why), "unknown-scenario")
        return None
    try:
        value, (model, per_node_text, count, nodes) = _counts(r)
    except RowRejected as exc:
        report.reject(row, exc)
        return None
    except (TypeError, ValueError) as exc:  # a count that is no whole number: named, listed
        report.reject(row, RowRejected("accelerators_per_node / nodes", str(exc)))
        return None
    kind, unit_metric, to_ms = UNITS[flat_text(r.get("units")).lower()]
    where = location_parts(r.get("location") or "")
    benchmark_raw = where[1] if where else flat_text(r["benchmark"])
    bench = resolve_benchmark(benchmark_raw, FAMILY)
    named = resolve_benchmark(flat_text(r["benchmark"]), FAMILY)
    closed = flat_text(r.get("division")).lower() == "closed"  # open: a variant of the Model
    if (
        closed
        and bench.resolved
        and named.resolved
        and (bench.base or bench.id) != (named.base or named.id)
    ):
        # the Model field names another benchmark than the result's directory: which ran?
        report.reject(
            row,
            RowRejected(
                "Model",
                f"{flat_text(r['benchmark'])!r} is not the benchmark of its Location "
                f"({benchmark_raw!r})",
            ),
        )
        return None
    scenario = named_scenario(bench, scenario)  # v5.0: "llama2-70b-interactive-99", Server
    mismatch = _unit_mismatch(bench.id, bench.base, scenario, kind, unit_metric)
    if mismatch:
        report.reject(row, RowRejected("Performance_Units", mismatch), reason="unit-mismatch")
        return None
    metric = _metric(bench.id, bench.base, scenario, kind, unit_metric)
    value = value * (to_ms if kind == "latency" else 1.0)
    try:
        check_plausible(metric, metric_facts(metric)[0], value, count)
    except RowRejected as exc:
        report.reject(row, exc)
        return None
    if not bench.resolved:
        report.unresolved_benchmarks[benchmark_raw] += 1
    figure = _Figure(
        scenario, bench.id, benchmark_raw, metric, value, model, per_node_text, count, nodes
    )
    return _observation(row, figure, report)


def _accelerator(row: _Row, figure: _Figure, report: SummaryImport) -> Accelerator:
    """The row's accelerator through the catalogue (an unknown one counted as unresolved), or
    its CPU, one per socket."""
    r = row.values
    if figure.model:
        system_id = flat_text(r["system_id"])
        match = resolve_in_context(figure.model, flat_text(r.get("system_name")), system_id)
        if not match.resolved:
            report.unresolved_accelerators[figure.model] += 1
        return Accelerator(model=match.key, vendor=match.vendor, count=figure.count)
    sockets = (whole_number(r.get("host_processors_per_node")) or 1) * figure.nodes
    return cpu_accelerator(flat_text(r.get("host_cpu")), sockets)


def _stack(row: _Row, benchmark: str, vendor: str | None) -> SoftwareStack:
    """The stack the row's ``Software`` text names, as the benchmark ran it."""
    r = row.values
    division, submitter, system_id = (
        flat_text(r[k]) for k in ("division", "submitter", "system_id")
    )
    software = flat_text(r.get("software"))
    components = merge_stack_texts(software, None).components
    stack = inference_stack(
        components,
        parse_framework(software),
        {**system_components(components), **_implementation(row, system_id)},  # as the tree
        f"framework: {software}" if software else None,
    )
    return benchmark_stack(
        stack,
        software,
        benchmark,
        division=division,
        submitter=submitter,
        vendor=vendor,
        round_name=row.round,
    )


PRECISION_CHARS = 200  # a weight_data_types text longer than any a round has published


def _details(row: _Row, figure: _Figure, basis: str) -> dict[str, str]:
    """The provenance details of one row: where it was published and what it said."""
    r = row.values
    details = {
        "round": row.round,
        "division": flat_text(r["division"]),
        "submitter": flat_text(r["submitter"]),
        "system_id": flat_text(r["system_id"]),
        "system_name": flat_text(r.get("system_name")),
        "file": row.file,
        "table_row": flat_text(r.get("row_id")),
        "location": flat_text(r.get("location")),
        "metric_source": f"{row.file}: result {r['value']} {flat_text(r.get('units'))}",
        "benchmark_raw": figure.benchmark_raw,
        "accelerator_raw": figure.model or f"CPU {flat_text(r.get('host_cpu'))}",
        "accelerators_per_node": figure.per_node_text,
        "nodes": str(figure.nodes),
        "placement_basis": basis,
        # the weights' precision as the submitter published it (kept, not used; an odd value
        # is cut, never a reason to lose the row)
        "weight_data_types": flat_text(r.get("weight_data_types"))[:PRECISION_CHARS],
        "license": "Apache-2.0",
        "attribution": "MLCommons MLPerf Inference " + row.round,
        "imported_from": "results summary table",
    }
    return {k: v for k, v in details.items() if v}


def _observation(row: _Row, figure: _Figure, report: SummaryImport) -> Observation:
    r = row.values
    division, submitter, system_id = (
        flat_text(r[k]) for k in ("division", "submitter", "system_id")
    )
    accelerator = _accelerator(row, figure, report)
    system_name = flat_text(r.get("system_name"))
    evidence = {
        "system_id": system_id,
        "system_name": system_name,
        "framework": flat_text(r.get("software")),
        "accelerator_model_name": figure.model,
    }
    placement = classify_placement(
        {k: v for k, v in evidence.items() if v}, has_accelerator=bool(figure.model)
    )
    unit, higher = metric_facts(figure.metric)
    return Observation(
        benchmark=Benchmark(
            family=FAMILY,
            name=figure.benchmark,
            parameters={"scenario": figure.scenario, "division": division},
        ),
        metric=figure.metric,
        value=figure.value,
        unit=unit,
        higher_is_better=higher,
        timestamp=datetime.fromtimestamp(row.mtime, tz=UTC),
        stack=_stack(row, figure.benchmark, accelerator.vendor),
        accelerator=accelerator,
        placement=placement_of(placement),
        host=Host(
            name=f"mlperf:{submitter}/{system_id}",
            cpu_model=flat_text(r.get("host_cpu")) or None,
            os=flat_text(r.get("operating_system")) or None,
            labels={"system_name": system_name} if system_name else {},
        ),
        provenance=Provenance(
            kind=SourceKind.PUBLISHED,
            source=SOURCE,
            url=f"https://github.com/mlcommons/inference_results_{row.round}",
            details=_details(row, figure, placement.basis),
        ),
        source_key=f"{row.round}/{division}/{submitter}/{system_id}",
    )


# ---- the whole table -------------------------------------------------------------------------


def read_summary(
    path: str | os.PathLike[str],
    *,
    round_name: str | None = None,
    limits: ImportLimits | None = None,
) -> tuple[list[Observation], SummaryImport]:
    """The observations of one summary table and what was skipped (nothing is written).

    Raises:
        InvalidInput: unreadable file, a table of another shape (naming the fields it lacks), or
            no round (neither in the file name nor given).
    """
    file = Path(path)
    every = table_rows(file, limits or ImportLimits.from_env())
    names = field_map(r for r in every if isinstance(r, dict))
    round_ = checked_round(round_name) or detect_round(file) or _rows_round(every, names, file)
    if not round_.startswith("v"):
        round_ = "v" + round_
    own = _other_rounds(every, names, round_, "--round" if round_name else "the file's name")
    report = SummaryImport(path=str(file), round=round_, rows=len(every))
    mtime = file.stat().st_mtime
    observations = []
    first_of: dict[str, tuple[int, str, float]] = {}  # key → the row that gave it, its figure
    for index, raw in enumerate(every):
        if not isinstance(raw, dict):
            why = f"a {type(raw).__name__}, not an object"
            report.reject(_Row(round_, file.name, mtime, {}, index), RowRejected("row", why))
            continue
        values = normalised(raw, names)
        garbled = (
            next((k for k, v in raw.items() if NOT_UTF8 in flat_text(v)), None)
            if isinstance(every, NotText)  # read with bytes that were not UTF-8 replaced
            else None
        )
        if garbled is not None:  # bytes that were not UTF-8: what the row says cannot be read
            why = "holds bytes that are not UTF-8 (read as U+FFFD): its text cannot be trusted"
            report.reject(
                _Row(round_, file.name, mtime, values, index), RowRejected(garbled, why), "not-text"
            )
            continue
        if index in own:  # a row of another round than the import's: never stored as this one
            report.reject(_Row(round_, file.name, mtime, values, index), own[index], "other-round")
            continue
        if flat_text(values.get("power_result")):
            report.power_figures_ignored += 1  # a power figure beside the result: not kept
        row = _Row(round_, file.name, mtime, values, index)
        obs = row_observation(row, report)
        if obs is None:
            continue
        earlier = first_of.setdefault(
            obs.observation_key, (index, _where(values, index), obs.value)
        )
        if earlier[0] != index:  # one result twice (two names of one benchmark and scenario)
            report.reject(row, *_twice(obs, earlier))
            continue
        observations.append(obs)
        report.results += 1
    return observations, report


def _twice(obs: Observation, earlier: tuple[int, str, float]) -> tuple[RowRejected, str]:
    """Why a row giving the result an earlier row gave is not imported: a plain duplicate, or
    one whose figure differs (both figures named)."""
    scenario = obs.benchmark.parameters.get("scenario") or ""
    what = f"system, benchmark {obs.benchmark.name} {scenario}, metric {obs.metric}"
    if same_figure(obs.value, earlier[2]):
        why = f"the same result as row {earlier[1]} ({what}): the first is kept"
        return RowRejected("benchmark", why), "duplicate"
    why = (
        f"{obs.value:g} for the result row {earlier[1]} gives as {earlier[2]:g} ({what}): the "
        "first is kept"
    )
    return RowRejected("value", why), "conflicting-duplicate"


def _where(values: dict[str, Any], index: int) -> str:
    """A row as the report names it: its ID (not unique: one per system), place and position."""
    return (
        " ".join(filter(None, (flat_text(values.get("row_id")), flat_text(values.get("location")))))
        + f" (#{index})"
    )


def _version_round(version: str) -> str | None:
    """The round a row's ``version`` text names (``v5.1``, ``5.1``), as a file name would; None
    when it names none."""
    if not version:
        return None
    return detect_round(Path(f"summary_results_v{version.lstrip('vV')}.json"))


def _other_rounds(
    rows: list[Any], names: dict[str, str], round_: str, given: str
) -> dict[int, RowRejected]:
    """The rows whose own ``version`` names another round than ``round_`` (from ``given``),
    each with why (a v5.1 table renamed v6.0 had been imported whole as v6.0).

    Raises:
        InvalidInput: every row that names a round names another one.
    """
    out: dict[int, RowRejected] = {}
    named = 0
    for index, r in enumerate(rows):
        version = flat_text(normalised(r, names).get("version")) if isinstance(r, dict) else ""
        its = _version_round(version)
        if its is None or (its != round_ and round_date(its) is None):
            continue  # no round the catalogue knows (a field of another meaning): not judged
        named += 1
        if its != round_:
            out[index] = RowRejected(
                "version", f"the row is of {version}, the import of {round_} ({given})"
            )
    if named and len(out) == named:
        seen = sorted({w.why.split(",")[0].removeprefix("the row is of ") for w in out.values()})
        raise InvalidInput(
            f"{round_} ({given}) is not the round of this table: its rows name "
            f"{', '.join(seen[:6])}; pass --round with theirs, or import the table of {round_}"
        )
    return out


def _rows_round(rows: list[Any], names: dict[str, str], file: Path) -> str:
    """The round the rows' ``version`` field names where the file's name names none (MLCommons
    publishes ``summary_results.json``).

    Raises:
        InvalidInput: no version, or rows of several rounds.
    """
    counts = Counter(
        flat_text(normalised(r, names).get("version")) for r in rows if isinstance(r, dict)
    )
    counts.pop("", None)
    named = _version_round(next(iter(counts))) if len(counts) == 1 else None
    if named:
        return named
    said = ""
    example = "v5.1"
    if counts:
        most = counts.most_common()
        said = "; its rows name " + ", ".join(
            f"{v} ({n:,} row{'s' if n != 1 else ''})" for v, n in most[:6]
        )
        example = _version_round(most[0][0]) or example  # the round most of its rows name
    raise InvalidInput(
        f"cannot tell the MLPerf round of {str(file)!r} from its name{said}; pass --round "
        f"(e.g. {example})"
    )


def import_summary(
    path: str | os.PathLike[str],
    store: Store,
    *,
    round_name: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
    replace_changed: bool = False,
) -> SummaryImport:
    """Read one summary table and write its results to ``store``; idempotent, and adds nothing
    for results already imported from the round's results tree. A result the store holds at
    another value is reported (``SummaryImport.changed_rows``) and keeps the stored figure, or
    with ``replace_changed`` takes the table's (``SummaryImport.replaced``)."""
    started = time.perf_counter()
    observations, report = read_summary(path, round_name=round_name)
    new, received = ingest_counted(store, observations, batch_size, progress)
    report.imported, report.already_present = new, received - new
    if received > new:  # a re-import: what the store held already may read otherwise now
        changed, report.replaced = reconcile_figures(
            store, observations, replace=replace_changed, batch_size=batch_size
        )
        for obs, stored in changed:
            report.held_otherwise(obs, stored)
    report.seconds = time.perf_counter() - started
    return report


__all__ = [
    "ATTRIBUTION",
    "FIELD_ALIASES",
    "REQUIRED",
    "UNITS",
    "SummaryImport",
    "field_map",
    "import_summary",
    "load_rows",
    "read_summary",
    "row_observation",
]
