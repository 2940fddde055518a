"""Read MLCommons' published results table (``summary_results.json[.gz]``): its rows, whatever
shape the round gave the file, and which of its field names stand for ours. ``mlperf_summary``
turns the rows into observations; see its docstring.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stack_advisor.catalog import resolve_scenario
from stack_advisor.collectors.importers.archive_stream import ArchiveStream
from stack_advisor.collectors.importers.limits import ImportLimits, limit_error, load_json
from stack_advisor.collectors.importers.mlperf_system import flat_text, whole_number
from stack_advisor.collectors.importers.row_checks import TEXT_CHARS, RowRejected, name_text
from stack_advisor.schema.errors import InvalidInput

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
    "version": ("version", "Version"),  # the round each row is of (v5.1)
    "weight_data_types": ("weight_data_types", "Weight_Data_Types"),  # fp4, fp8, int8 (v5.1)
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

NAME_FIELDS = ("submitter", "division", "system_id", "system_name", "accelerator", "benchmark")
TEXT_FIELDS = ("scenario", "units", "software", "location", "host_cpu", "operating_system")


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
    data, not_text = _table_json(file, limits)
    if isinstance(data, dict) and data and all(str(k).isdigit() for k in data):
        data = [data[k] for k in sorted(data, key=lambda k: int(k))]
    if not isinstance(data, list) or not any(isinstance(r, dict) for r in data):
        shape = type(data).__name__
        raise InvalidInput(
            f"summary table {str(file)!r}: expected a list of result rows or an object keyed "
            f'"0", "1", ... of rows; got '
            + (
                f"an empty {shape}"
                if not data
                else f"a {shape}" + (" of no objects" if isinstance(data, list) else "")
            )
        )
    if len(data) > limits.rows:
        raise limit_error(str(file), f"{len(data):,} rows", "rows", limits.rows)
    return NotText(data) if not_text else data


def load_rows(
    path: str | os.PathLike[str], limits: ImportLimits | None = None
) -> list[dict[str, Any]]:
    """The table's rows that are objects (see ``table_rows``)."""
    rows = table_rows(Path(path), limits or ImportLimits.from_env())
    return [r for r in rows if isinstance(r, dict)]


NOT_UTF8 = "\ufffd"  # what a byte that is not UTF-8 reads as (the rows holding one are reported)


class NotText(list):  # type: ignore[type-arg]
    """A table's rows read after bytes that were not UTF-8 were replaced (``NOT_UTF8``): the rows
    holding one are reported (``mlperf_summary.read_summary``)."""


def _table_json(file: Path, limits: ImportLimits) -> tuple[Any, bool]:
    """The table's JSON, and whether bytes that were not UTF-8 were replaced to read it."""
    try:
        raw = _table_bytes(file, limits)
        try:
            return load_json(raw, str(file), limits), False
        except UnicodeDecodeError as exc:
            # a few stray bytes in a row's text: those rows are reported, the rest imported
            text = raw.decode("utf-8", errors="replace")
            if text.count(NOT_UTF8) > max(16, len(raw) // 1000):
                raise InvalidInput(
                    f"summary table {str(file)!r} is not text (byte {exc.start} is not UTF-8): "
                    "not the summary_results JSON"
                ) from None
            return load_json(text.encode(), str(file), limits), True
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


def normalised(row: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {ours: row.get(theirs) for ours, theirs in names.items()}


# ---- reading a row ----------------------------------------------------------------------------


def location_parts(location: str) -> tuple[str, str, str] | None:
    """(system, benchmark and scenario directories) from
    ``<division>/<submitter>/results/<system>/<benchmark>/<scenario>``."""
    parts = [p for p in str(location or "").split("/") if p]
    if len(parts) >= 6 and parts[2] == "results":
        return parts[3], parts[4], parts[5]
    return None


def row_scenario(row: dict[str, Any]) -> str | None:
    """The directory's scenario where the row names one (the tree importer's, and the one that
    keeps Interactive apart from Server), else the Scenario field's."""
    where = location_parts(row.get("location") or "")
    if where:
        directory = resolve_scenario(where[2])
        if directory.resolved:
            return directory.id
    match = resolve_scenario(flat_text(row.get("scenario")))
    return match.id if match.resolved else None


def check_texts(r: dict[str, Any]) -> None:
    """Names are text of a name's length; free text is text within TEXT_CHARS."""
    for name in NAME_FIELDS:
        name_text(r.get(name), name)
    for name in TEXT_FIELDS:
        name_text(r.get(name), name, TEXT_CHARS)


def row_nodes(raw: Any) -> int:
    """The node count: 1 where blank, else a whole number of at least 1."""
    if raw is None or raw == "":
        return 1
    nodes = whole_number(raw)
    if nodes is None or nodes < 1:
        raise RowRejected("nodes", f"{raw!r} is not a whole number of nodes (1 or more)")
    return nodes
