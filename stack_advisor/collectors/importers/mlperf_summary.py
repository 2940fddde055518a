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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stack_advisor.catalog import (
    load_catalog,
    named_scenario,
    resolve_benchmark,
    resolve_cpu,
    resolve_scenario,
)
from stack_advisor.catalog.editions import resolve_in_context
from stack_advisor.catalog.stack_text import (
    benchmark_stack,
    classify_placement,
    implementation_of,
    merge_stack_texts,
    parse_framework,
)
from stack_advisor.collectors.importers.archive_stream import ArchiveStream
from stack_advisor.collectors.importers.limits import ImportLimits, limit_error, load_json
from stack_advisor.collectors.importers.mlperf import (
    ATTRIBUTION,
    DEFAULT_BATCH,
    FAMILY,
    SOURCE,
    detect_round,
    ingest_observations,
    metric_facts,
)
from stack_advisor.collectors.importers.mlperf_system import accelerators as system_accelerators
from stack_advisor.collectors.importers.mlperf_system import flat_text, whole_number
from stack_advisor.collectors.importers.row_checks import (
    TEXT_CHARS,
    RowRejected,
    check_plausible,
    name_text,
    result_number,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    Observation,
    Placement,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store

# Our field → the names rounds have given it, in the order they are tried.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "submitter": ("Submitter", "Organization", "submitter", "organization"),
    "division": ("Category", "Division", "division", "category"),
    "system_id": ("Platform", "system_id", "SystemId", "platform"),
    "system_name": ("System", "system_name", "SystemName"),
    "accelerator": ("Accelerator", "accelerator_model_name", "accelerator"),
    "accelerators_per_node": ("a#", "accelerators_per_node"),
    "total_accelerators": ("total_accelerators", "Total_Accelerators"),
    "nodes": ("Nodes", "number_of_nodes", "nodes"),
    "benchmark": ("Model", "MlperfModel", "mlperf_model", "model"),
    "scenario": ("Scenario", "scenario"),
    "value": ("Performance_Result", "Result", "result"),
    "units": ("Performance_Units", "Units", "units"),
    "software": ("Software", "framework", "Framework"),
    "location": ("Location", "location"),
    "inferred": ("inferred", "Inferred"),
    "host_cpu": ("Processor", "host_processor_model_name"),
    "host_processors_per_node": ("host_processors_per_node", "p#"),
    "operating_system": ("operating_system", "OperatingSystem"),
    "row_id": ("ID", "id"),
    "power_result": ("Power_Result", "power_result"),
}
# A row cannot be placed without these (the accelerator's count may come from either field).
REQUIRED = (
    "submitter",
    "division",
    "system_id",
    "accelerator",
    "nodes",
    "benchmark",
    "scenario",
    "value",
    "units",
)
COUNT_FIELDS = ("accelerators_per_node", "total_accelerators")

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
    "not-a-row": "a row that is not a JSON object",
}
BAD_ROWS_SHOWN = 1000
NAME_FIELDS = ("submitter", "division", "system_id", "system_name", "accelerator", "benchmark")
TEXT_FIELDS = ("scenario", "units", "software", "location", "host_cpu", "operating_system")


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
    power_figures_ignored: int = 0
    seconds: float = 0.0
    # (file, row, field, why) of the rows refused for a bad value, the first BAD_ROWS_SHOWN
    bad_rows: list[dict[str, str]] = field(default_factory=list)

    def reject(self, row: _Row, exc: RowRejected) -> None:
        """Skip a row for one bad field, and say which row, field and why."""
        self.skip("bad-value", row.values, str(exc))
        if len(self.bad_rows) < BAD_ROWS_SHOWN:
            where = row.values.get("row_id") or row.values.get("location") or f"#{row.index}"
            self.bad_rows.append(
                {"file": row.file, "row": str(where)[:200], "field": exc.field, "why": exc.why}
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
            "power_figures_ignored": self.power_figures_ignored,
            "bad_rows": self.bad_rows,
            "seconds": round(self.seconds, 3),
        }


# ---- reading the table -----------------------------------------------------------------------


def _table_bytes(file: Path, limits: ImportLimits) -> bytes:
    """The table's JSON text, inflated a megabyte at a time and never past ``json_bytes``."""
    with ArchiveStream(file, limits) as stream:
        if file.name.endswith(".gz") and not stream.gzip:
            raise InvalidInput(
                f"summary table {str(file)!r} is not gzip-compressed although its name ends in "
                ".gz; pass the summary_results JSON (or .json.gz) as published"
            )
        data = stream.read(limits.json_bytes + 1)
        if len(data) > limits.json_bytes:
            raise limit_error(str(file), "JSON of more bytes", "json_bytes", limits.json_bytes)
        if not stream.complete:
            raise InvalidInput(f"summary table {str(file)!r} is cut short or corrupt (gzip)")
    return data


def table_rows(file: Path, limits: ImportLimits) -> list[Any]:
    """Every row of the table as published (a list, or an object keyed "0", "1", ...), objects
    or not: ``read_summary`` reports those that are not.

    Raises:
        InvalidInput: no such file, not JSON, or neither shape.
        ImportLimitExceeded: the file is over a limit (size, depth, objects, rows).
    """
    if not file.is_file():
        raise InvalidInput(
            f"no such summary table: {str(file)!r} (give MLCommons' summary_results.json[.gz])"
        )
    data = _table_json(file, limits)
    if isinstance(data, dict) and data and all(str(k).isdigit() for k in data):
        data = [data[k] for k in sorted(data, key=lambda k: int(k))]
    if not isinstance(data, list) or not any(isinstance(r, dict) for r in data):
        shape = type(data).__name__
        raise InvalidInput(
            f"summary table {str(file)!r}: expected a list of result rows or an object keyed "
            f'"0", "1", ... of rows; got a {shape}' + (" of no objects" if data else "")
        )
    if len(data) > limits.rows:
        raise limit_error(str(file), f"{len(data):,} rows", "rows", limits.rows)
    return data


def load_rows(
    path: str | os.PathLike[str], limits: ImportLimits | None = None
) -> list[dict[str, Any]]:
    """The table's rows that are objects (see ``table_rows``)."""
    rows = table_rows(Path(path), limits or ImportLimits.from_env())
    return [r for r in rows if isinstance(r, dict)]


def _table_json(file: Path, limits: ImportLimits) -> Any:
    try:
        return load_json(_table_bytes(file, limits), str(file), limits)
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"summary table {str(file)!r} is not text (byte {exc.start} is not UTF-8): not the "
            "summary_results JSON"
        ) from None
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInput(f"summary table {str(file)!r} is not readable JSON: {exc}") from None


def field_map(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Our field → the table's name for it (the first alias any row carries).

    Raises:
        InvalidInput: the table lacks required fields; the message names each with the names
            it would be accepted under.
    """
    present: set[str] = set()
    for row in rows:
        present.update(row)
    found = {
        ours: next(a for a in aliases if a in present)
        for ours, aliases in FIELD_ALIASES.items()
        if any(a in present for a in aliases)
    }
    missing = [f for f in REQUIRED if f not in found]
    if not any(f in found for f in COUNT_FIELDS):
        missing.append(" or ".join(COUNT_FIELDS))
    if missing:
        named = "; ".join(
            f"{m} ({' / '.join(FIELD_ALIASES[m])})"
            if m in FIELD_ALIASES
            else f"{m} ({' / '.join(a for f in COUNT_FIELDS for a in FIELD_ALIASES[f])})"
            for m in missing
        )
        raise InvalidInput(
            f"not an MLPerf results summary table: missing required field(s) {named}"
        )
    return found


def _normalised(row: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {ours: row.get(theirs) for ours, theirs in names.items()}


# ---- one row → one observation ---------------------------------------------------------------


def _implementation(row: _Row, system_id: str) -> dict[str, str]:
    """{"implementation": "reference"} where the result's system folder (its location, else the
    system id) says the MLCommons reference code ran, as the tree importer records it."""
    where = _location_parts(row.values.get("location") or "")
    implementation = implementation_of(where[0] if where else system_id)
    return {"implementation": implementation} if implementation else {}


def _location_parts(location: str) -> tuple[str, str, str] | None:
    """(system, benchmark and scenario directories) from
    ``<division>/<submitter>/results/<system>/<benchmark>/<scenario>``."""
    parts = [p for p in str(location or "").split("/") if p]
    if len(parts) >= 6 and parts[2] == "results":
        return parts[3], parts[4], parts[5]
    return None


def _scenario(row: dict[str, Any]) -> str | None:
    """The directory's scenario where the row names one (the tree importer's, and the one that
    keeps Interactive apart from Server), else the Scenario field's."""
    where = _location_parts(row.get("location") or "")
    if where:
        directory = resolve_scenario(where[2])
        if directory.resolved:
            return directory.id
    match = resolve_scenario(flat_text(row.get("scenario")))
    return match.id if match.resolved else None


def _metric(
    benchmark_id: str, base: str | None, scenario: str, kind: str, unit_metric: str | None
) -> str:
    """The metric the tree importer names this figure: tokens/s for a benchmark LoadGen counts in
    tokens (whatever the table labels it), the benchmark's own tail percentile or the scenario's
    for latency."""
    cat = load_catalog()
    entry = cat.benchmark(FAMILY, benchmark_id) or (cat.benchmark(FAMILY, base) if base else None)
    if kind == "throughput":
        return "tokens_per_second" if entry is not None and entry.tokens else str(unit_metric)
    if entry is not None and entry.latency_percentile is not None and scenario == "SingleStream":
        return f"p{entry.latency_percentile:g}".replace(".", "_") + "_latency_ms"
    return cat.scenarios[scenario].metric


@dataclass
class _Row:
    round: str
    file: str
    mtime: float
    values: dict[str, Any]
    index: int = -1  # where the row is in the table


def _check_texts(r: dict[str, Any]) -> None:
    """Names are text of a name's length; free text is text within TEXT_CHARS."""
    for name in NAME_FIELDS:
        name_text(r.get(name), name)
    for name in TEXT_FIELDS:
        name_text(r.get(name), name, TEXT_CHARS)


def _nodes(raw: Any) -> int:
    """The node count: 1 where blank, else a whole number of at least 1."""
    if raw is None or raw == "":
        return 1
    nodes = whole_number(raw)
    if nodes is None or nodes < 1:
        raise RowRejected("nodes", f"{raw!r} is not a whole number of nodes (1 or more)")
    return nodes


def row_observation(row: _Row, report: SummaryImport) -> Observation | None:
    """The observation of one table row, or None (counted in ``report`` by reason)."""
    r = row.values
    try:
        _check_texts(r)
    except RowRejected as exc:
        report.reject(row, exc)
        return None
    if str(r.get("inferred") or "0").strip().lower() not in ("0", "false", "no", ""):
        report.skip("inferred", r)
        return None
    units = flat_text(r.get("units")).lower()
    if any(word in units for word in ENERGY_WORDS):
        report.skip("energy-or-power", r, units)
        return None
    if units not in UNITS:
        report.skip("unknown-units", r, repr(r.get("units")))
        return None
    empty = [
        f
        for f in ("submitter", "division", "system_id", "benchmark", "scenario", "value")
        if not flat_text(r.get(f))
    ]
    if empty:
        report.skip("missing-field", r, ", ".join(empty))
        return None
    scenario = _scenario(r)
    if scenario is None:
        report.skip("unknown-scenario", r, repr(r.get("scenario")))
        return None
    try:
        value = result_number(r["value"], "value")
        per_node = flat_text(r.get("accelerators_per_node"))
        nodes = _nodes(r.get("nodes"))
        if not per_node and whole_number(r.get("total_accelerators")):
            per_node = str(int(r["total_accelerators"]) // nodes)
        # A blank count is how the table writes a CPU-only system.
        model, per_node_text, count, nodes = system_accelerators(
            {
                "accelerator_model_name": r.get("accelerator"),
                "accelerators_per_node": per_node or "0",
                "number_of_nodes": r.get("nodes"),
            }
        )
    except RowRejected as exc:
        report.reject(row, exc)
        return None
    except (TypeError, ValueError) as exc:
        report.skip("bad-value", r, str(exc))
        return None
    kind, unit_metric, to_ms = UNITS[units]
    where = _location_parts(r.get("location") or "")
    benchmark_raw = where[1] if where else flat_text(r["benchmark"])
    bench = resolve_benchmark(benchmark_raw, FAMILY)
    scenario = named_scenario(bench, scenario)  # v5.0: "llama2-70b-interactive-99", Server
    metric = _metric(bench.id, bench.base, scenario, kind, unit_metric)
    value = value * (to_ms if kind == "latency" else 1.0)
    try:
        check_plausible(metric, metric_facts(metric)[0], value, count)
    except RowRejected as exc:
        report.reject(row, exc)
        return None
    report.results += 1
    return _observation(
        row,
        scenario,
        bench.id,
        benchmark_raw,
        metric,
        value,
        model,
        per_node_text,
        count,
        nodes,
        report,
    )


def _observation(
    row: _Row,
    scenario: str,
    benchmark: str,
    benchmark_raw: str,
    metric: str,
    value: float,
    model: str,
    per_node_text: str,
    count: int,
    nodes: int,
    report: SummaryImport,
) -> Observation:
    r = row.values
    division, submitter, system_id = (
        flat_text(r[k]) for k in ("division", "submitter", "system_id")
    )
    host_cpu = flat_text(r.get("host_cpu"))
    software = flat_text(r.get("software"))
    if model:
        match = resolve_in_context(model, flat_text(r.get("system_name")), system_id)
        if not match.resolved:
            report.unresolved_accelerators[model] += 1
        accelerator = Accelerator(model=match.key, vendor=match.vendor, count=count)
    else:
        sockets = (whole_number(r.get("host_processors_per_node")) or 1) * nodes
        cpu = resolve_cpu(host_cpu) if host_cpu else None
        accelerator = Accelerator(
            model="CPU " + (cpu.id if cpu else "unknown"), vendor="cpu", count=sockets
        )
    parsed = merge_stack_texts(software, None)
    fw_name, fw_version = parse_framework(software)
    c = parsed.components
    stack = SoftwareStack(
        driver=c.get("driver"),
        cuda=c.get("cuda"),
        cudnn=c.get("cudnn"),
        nccl=c.get("nccl"),
        tensorrt=c.get("tensorrt"),
        python=c.get("python"),
        framework=fw_name,
        framework_version=fw_version,
        raw=f"framework: {software}" if software else None,
        extra=_implementation(row, system_id),
    )
    stack = benchmark_stack(
        stack,
        software,
        benchmark,
        division=division,
        submitter=submitter,
        vendor=accelerator.vendor,
    )
    system_name = flat_text(r.get("system_name"))
    evidence = {
        "system_id": system_id,
        "system_name": system_name,
        "framework": software,
        "accelerator_model_name": model,
    }
    placement = classify_placement(
        {k: v for k, v in evidence.items() if v}, has_accelerator=bool(model)
    )
    unit, higher = metric_facts(metric)
    details = {
        "round": row.round,
        "division": division,
        "submitter": submitter,
        "system_id": system_id,
        "system_name": system_name,
        "file": row.file,
        "table_row": flat_text(r.get("row_id")),
        "location": flat_text(r.get("location")),
        "metric_source": f"{row.file}: result {r['value']} {flat_text(r.get('units'))}",
        "benchmark_raw": benchmark_raw,
        "accelerator_raw": model or f"CPU {host_cpu}",
        "accelerators_per_node": per_node_text,
        "nodes": str(nodes),
        "placement_basis": placement.basis,
        "license": "Apache-2.0",
        "attribution": "MLCommons MLPerf Inference " + row.round,
        "imported_from": "results summary table",
    }
    return Observation(
        benchmark=Benchmark(
            family=FAMILY, name=benchmark, parameters={"scenario": scenario, "division": division}
        ),
        metric=metric,
        value=value,
        unit=unit,
        higher_is_better=higher,
        timestamp=datetime.fromtimestamp(row.mtime, tz=UTC),
        stack=stack,
        accelerator=accelerator,
        placement=Placement(
            kind=placement.kind,
            hypervisor=placement.hypervisor,
            vgpu_profile=placement.vgpu_profile,
            evidence=[f"basis: {placement.basis}", *placement.evidence],
        ),
        host=Host(
            name=f"mlperf:{submitter}/{system_id}",
            cpu_model=host_cpu or None,
            os=flat_text(r.get("operating_system")) or None,
            labels={"system_name": system_name} if system_name else {},
        ),
        provenance=Provenance(
            kind=SourceKind.PUBLISHED,
            source=SOURCE,
            url=f"https://github.com/mlcommons/inference_results_{row.round}",
            details={k: v for k, v in details.items() if v},
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
    round_ = round_name or detect_round(file) or ""
    if not round_:
        raise InvalidInput(
            f"cannot tell the MLPerf round of {str(file)!r} from its name; pass --round (e.g. v5.1)"
        )
    if not round_.startswith("v"):
        round_ = "v" + round_
    report = SummaryImport(path=str(file), round=round_, rows=len(every))
    mtime = file.stat().st_mtime
    observations = []
    for index, raw in enumerate(every):
        if not isinstance(raw, dict):
            why = f"a {type(raw).__name__}, not an object"
            report.reject(_Row(round_, file.name, mtime, {}, index), RowRejected("row", why))
            continue
        values = _normalised(raw, names)
        if flat_text(values.get("power_result")):
            report.power_figures_ignored += 1  # a power figure beside the result: not kept
        obs = row_observation(_Row(round_, file.name, mtime, values, index), report)
        if obs is not None:
            observations.append(obs)
    return observations, report


def import_summary(
    path: str | os.PathLike[str],
    store: Store,
    *,
    round_name: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> SummaryImport:
    """Read one summary table and write its results to ``store``; idempotent, and adds nothing
    for results already imported from the round's results tree."""
    started = time.perf_counter()
    observations, report = read_summary(path, round_name=round_name)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, len(observations))

    new, received = ingest_observations(store, observations, batch_size=batch_size, progress=step)
    report.imported, report.already_present = new, received - new
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
