"""Parse MLPerf LoadGen's ``mlperf_log_summary.txt`` (any LoadGen version since 1.0).

``parse_summary(text)`` is pure and returns a plain dict with snake_case keys::

    {
      "sut_name": "PySUT", "scenario": "SingleStream", "mode": "PerformanceOnly",
      "result": "VALID", "valid": True,
      "constraints": {"min_duration_satisfied": True, "min_queries_satisfied": True, ...},
      "p90_latency_ns": 4751920830,             # SingleStream: "90th" or "90.0th percentile"
      "p99_latency_ns": ...,                     # MultiStream: "99th" / "99.0th percentile"
      "samples_per_second": 756960.0,            # Offline
      "completed_samples_per_second": 100.35,    # Server (LoadGen >= 3.1 result line)
      "scheduled_samples_per_second": 101.25,    # Server (older result line; later a stat)
      "tokens_per_second": ..., "completed_tokens_per_second": ...,   # LLM benchmarks
      "early_stopping": {"p90_estimate_ns": ..., "p99_estimate_ns": ..., "notes": [...]},
      "recommendations": [...],
      "latency_ns": {"min": ..., "max": ..., "mean": ..., "p50": ..., "p90": ..., "p99.9": ...},
      "first_token_latency_ns": {...}, "time_per_output_token_ns": {...},
      "qps_with_loadgen_overhead": ..., "qps_without_loadgen_overhead": ...,
      "test_parameters": {"target_qps": 632000, "min_duration (ms)": 600000, ...},
      "warnings": 9, "errors": 0,
      "complete": True,      # the closing "errors encountered" line was seen
    }

Keys whose line is absent are absent. Raises InvalidInput when the text is not a summary (no
``Scenario :`` line) or when a known line carries a value that is not a number.
"""

from __future__ import annotations

import re
from typing import Any

from graph_schema.catalog import load_catalog, resolve_scenario
from graph_schema.errors import InvalidInput

# The catalogue's scenarios (graph_schema/catalog/scenarios.yaml), for messages.
SCENARIOS = tuple(load_catalog().scenarios)

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_KV = re.compile(r"^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_PCT_LINE = re.compile(r"^(?P<pct>\d+(?:\.\d+)?)(?:th)? percentile (?P<what>.+?) \(ns\)$", re.IGNORECASE)
_EARLY_ESTIMATE = re.compile(
    rf"Early stopping (?P<pct>\d+(?:\.\d+)?)th percentile estimate:\s*(?P<value>{_NUMBER})", re.IGNORECASE
)
_COUNT_LINE = re.compile(r"^(?P<n>No|\d+) (?P<what>warnings?|errors?|ERRORS?|WARNINGS?) encountered", re.IGNORECASE)

# Result-section lines: summary key → dict key.
_RESULT_LINES = {
    "samples per second": "samples_per_second",
    "completed samples per second": "completed_samples_per_second",
    "scheduled samples per second": "scheduled_samples_per_second",
    "tokens per second": "tokens_per_second",
    "completed tokens per second": "completed_tokens_per_second",
    "samples per query": "samples_per_query",
    "qps w/ loadgen overhead": "qps_with_loadgen_overhead",
    "qps w/o loadgen overhead": "qps_without_loadgen_overhead",
}
_STAT_GROUPS = (
    ("first token", "first_token_latency_ns"),
    ("time per output token", "time_per_output_token_ns"),
    ("time to output token", "time_per_output_token_ns"),
    ("latency", "latency_ns"),
)


def _pct_key(pct: str) -> str:
    value = float(pct)
    return f"p{value:g}"


def _number(value: str, line: str) -> float | int:
    match = re.fullmatch(_NUMBER, value.strip())
    if not match:
        raise InvalidInput(f"LoadGen summary line {line.strip()!r}: {value!r} is not a number")
    number = float(value)
    return int(number) if re.fullmatch(r"[-+]?\d+", value.strip()) else number


def _stat_group(what: str) -> str | None:
    what = what.lower()
    for needle, key in _STAT_GROUPS:
        if needle in what:
            return key
    return None


def parse_summary(text: str) -> dict[str, Any]:
    """Parse an mlperf_log_summary.txt; see the module docstring for the keys."""
    out: dict[str, Any] = {"constraints": {}, "recommendations": [], "test_parameters": {}}
    early: dict[str, Any] = {"notes": []}
    section = "results"
    block: str | None = None  # "recommendations" | "early_stopping"
    lines = text.replace("\r\n", "\n").split("\n")
    # A file cut mid-write ends without a newline: its last line may hold half a number.
    for raw in lines[:-1] if lines[-1].strip() else lines:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or set(stripped) == {"="}:
            continue
        lower = stripped.lower()
        if lower == "additional stats":
            section, block = "stats", None
            continue
        if lower == "test parameters used":
            section, block = "parameters", None
            continue
        if lower == "mlperf results summary":
            continue
        count = _COUNT_LINE.match(stripped)
        if count:
            n = 0 if count.group("n").lower() == "no" else int(count.group("n"))
            out["warnings" if count.group("what").lower().startswith("warning") else "errors"] = n
            if count.group("what").lower().startswith("error"):
                out["complete"] = True
            continue
        if lower.startswith("recommendations"):
            block = "recommendations"
            continue
        if "early stopping result" in lower:
            block = "early_stopping"
            continue
        estimate = _EARLY_ESTIMATE.search(stripped)
        if estimate:
            early[f"{_pct_key(estimate.group('pct'))}_estimate_ns"] = _number(estimate.group("value"), line)
            early["notes"].append(stripped.lstrip("* "))
            continue
        if block and (stripped.startswith("*") or (block == "early_stopping" and raw.startswith(" ") and ":" not in stripped)):
            target = out["recommendations"] if block == "recommendations" else early["notes"]
            if stripped.startswith("*"):
                target.append(stripped.lstrip("* ").strip())
            elif target:  # a wrapped continuation line
                target[-1] = f"{target[-1]} {stripped}"
            continue
        kv = _KV.match(stripped)
        if not kv:
            continue
        key, value = kv.group("key"), kv.group("value")
        key_lower = key.lower()
        if section == "parameters":
            try:
                out["test_parameters"][key] = _number(value, line)
            except InvalidInput:
                out["test_parameters"][key] = value
            continue
        if key_lower == "sut name":
            out.setdefault("sut_name", value)
        elif key_lower == "scenario":
            out.setdefault("scenario", value)
        elif key_lower == "mode":
            out.setdefault("mode", value)
        elif key_lower == "result is":
            if value not in ("VALID", "INVALID"):
                raise InvalidInput(f"LoadGen summary line {stripped!r}: expected VALID or INVALID")
            out.setdefault("result", value)
            out.setdefault("valid", value == "VALID")
            block = None
        elif key_lower.endswith("satisfied"):
            name = re.sub(r"\W+", "_", key_lower).strip("_")
            out["constraints"][name] = value.lower() == "yes"
        elif key_lower in _RESULT_LINES:
            out.setdefault(_RESULT_LINES[key_lower], _number(value, line))
        else:
            pct = _PCT_LINE.match(key)
            group = _stat_group(key)
            if pct and section == "results":
                # The result line: "90th" (LoadGen < 4) or "90.0th" (LoadGen >= 4).
                out.setdefault(f"{_pct_key(pct.group('pct'))}_latency_ns", _number(value, line))
            elif pct and group:
                out.setdefault(group, {}).setdefault(_pct_key(pct.group("pct")), _number(value, line))
            elif group and key_lower.split(" ", 1)[0] in ("min", "max", "mean") and "(ns)" in key_lower:
                out.setdefault(group, {}).setdefault(key_lower.split(" ", 1)[0], _number(value, line))
    if "scenario" not in out:
        raise InvalidInput("not a LoadGen mlperf_log_summary.txt: no 'Scenario :' line found")
    scenario = resolve_scenario(out["scenario"])
    if not scenario.resolved:
        raise InvalidInput(f"LoadGen summary: {scenario.message('Scenario line')}; valid: {', '.join(SCENARIOS)}")
    out["scenario"] = scenario.id
    if len(early) > 1 or early["notes"]:
        out["early_stopping"] = early
    out.setdefault("complete", False)
    return out


def primary_result(summary: dict[str, Any]) -> tuple[str, float, str, bool] | None:
    """The scenario's headline figure: (metric, value, unit, higher_is_better), or None when the
    summary lacks it. SingleStream → p90 latency; MultiStream → p99 latency; Server/Interactive
    → completed (else scheduled) samples/s; Offline → samples/s."""
    scenario = summary.get("scenario")
    if scenario == "SingleStream" and "p90_latency_ns" in summary:
        return "p90_latency_ms", summary["p90_latency_ns"] / 1e6, "ms", False
    if scenario == "MultiStream" and "p99_latency_ns" in summary:
        return "p99_latency_ms", summary["p99_latency_ns"] / 1e6, "ms", False
    if scenario in ("Server", "Interactive"):
        for key in ("completed_samples_per_second", "scheduled_samples_per_second"):
            if key in summary:
                return key, float(summary[key]), "samples/s", True
    if scenario == "Offline" and "samples_per_second" in summary:
        return "samples_per_second", float(summary["samples_per_second"]), "samples/s", True
    return None
