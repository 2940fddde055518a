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
      "sources": {"samples_per_second": ("results", "Samples per second"), ...},
    }

``sources`` names the line each figure came from, as published, and its section ("results" or
"stats"); stat figures are keyed ``<group>.<stat>`` (``first_token_latency_ns.p99``). A line
marked ``(inferred)`` (``Tokens per second (inferred)``, LoadGen's estimate from samples/s) fills
the same key; its source says so. Lines this parser does not know are ignored, so newer LoadGen
versions read as far as their lines are known.

Keys whose line is absent are absent. Raises InvalidInput when the text is not a summary (no
``Scenario :`` line) or when a known line carries a value that is not a number.

``published_headline(summary)`` picks the figure MLCommons reports as a published result's
headline; ``primary_result(summary)`` the one our own LoadGen runs record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stack_advisor.catalog import load_catalog, resolve_scenario
from stack_advisor.schema.errors import InvalidInput

# The catalogue's scenarios (stack_advisor/catalog/scenarios.yaml), for messages.
SCENARIOS = tuple(load_catalog().scenarios)

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_NUMBER_TEXT = re.compile(_NUMBER)  # compiled once: a round's summaries hold ~150k figures
_INTEGER_TEXT = re.compile(r"[-+]?\d+")
_NON_WORD = re.compile(r"\W+")
_KV = re.compile(r"^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_PCT_LINE = re.compile(
    r"^(?P<pct>\d+(?:\.\d+)?)(?:th)? percentile (?P<what>.+?) \(ns\)$", re.IGNORECASE
)
_EARLY_ESTIMATE = re.compile(
    rf"Early stopping (?P<pct>\d+(?:\.\d+)?)th percentile estimate:\s*(?P<value>{_NUMBER})",
    re.IGNORECASE,
)
_COUNT_LINE = re.compile(
    r"^(?P<n>No|\d+) (?P<what>warnings?|errors?|ERRORS?|WARNINGS?) encountered", re.IGNORECASE
)

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
    text = value.strip()
    if not _NUMBER_TEXT.fullmatch(text):
        raise InvalidInput(f"LoadGen summary line {line.strip()!r}: {value!r} is not a number")
    number = float(value)
    return int(number) if _INTEGER_TEXT.fullmatch(text) else number


def _stat_group(what: str) -> str | None:
    what = what.lower()
    for needle, key in _STAT_GROUPS:
        if needle in what:
            return key
    return None


class _SummaryParser:
    """The state of one summary being read line by line: the section (results, stats,
    parameters), the block of bullet lines it is in, and what has been read."""

    def __init__(self) -> None:
        self.out: dict[str, Any] = {"constraints": {}, "recommendations": [], "test_parameters": {}}
        self.sources: dict[str, tuple[str, str]] = {}
        self.early: dict[str, Any] = {"notes": []}
        self.section = "results"
        self.block: str | None = None  # "recommendations" | "early_stopping"
        self.estimate_prefix = ""  # "ttft_" / "tpot_" inside an LLM's per-token block

    def line(self, raw: str) -> None:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped.strip("="):  # blank, or a rule of "="
            return
        if self._heading(stripped) or self._count(stripped) or self._early_line(stripped, line):
            return
        if self._bullet(raw, stripped):
            return
        kv = _KV.match(stripped)
        if kv:
            self._key_value(kv.group("key"), kv.group("value"), line, stripped)

    def _heading(self, stripped: str) -> bool:
        """A section's or a block's heading (the section or block it starts is set)."""
        lower = stripped.lower()
        if lower == "additional stats":
            self.section, self.block = "stats", None
        elif lower == "test parameters used":
            self.section, self.block = "parameters", None
        elif lower.startswith("recommendations"):
            self.block = "recommendations"
        elif "early stopping result" in lower:
            self.block = "early_stopping"
            # LLM runs report one block per token latency ("TTFT Early Stopping Result:"):
            # their estimates are the token latency's, not the query latency's.
            group = lower.split("early stopping result", 1)[0].strip()
            self.estimate_prefix = f"{group}_" if group else ""
        elif lower != "mlperf results summary":
            return False
        return True

    def _count(self, stripped: str) -> bool:
        count = _COUNT_LINE.match(stripped)
        if not count:
            return False
        n = 0 if count.group("n").lower() == "no" else int(count.group("n"))
        what = count.group("what").lower()
        self.out["warnings" if what.startswith("warning") else "errors"] = n
        if what.startswith("error"):
            self.out["complete"] = True
        return True

    def _early_line(self, stripped: str, line: str) -> bool:
        estimate = _EARLY_ESTIMATE.search(stripped)
        if not estimate:
            return False
        name = f"{self.estimate_prefix}{_pct_key(estimate.group('pct'))}_estimate_ns"
        self.early[name] = _number(estimate.group("value"), line)
        label = stripped.lstrip("* ").split(":", 1)[0].strip()
        self.sources.setdefault(f"early_stopping.{name}", (self.section, label))
        self.early["notes"].append(stripped.lstrip("* "))
        return True

    def _bullet(self, raw: str, stripped: str) -> bool:
        """A bullet of the recommendations or early-stopping block, or its wrapped continuation."""
        block = self.block
        if not block or not (
            stripped.startswith("*")
            or (block == "early_stopping" and raw.startswith(" ") and ":" not in stripped)
        ):
            return False
        target = self.out["recommendations"] if block == "recommendations" else self.early["notes"]
        if stripped.startswith("*"):
            target.append(stripped.lstrip("* ").strip())
        elif target:  # a wrapped continuation line
            target[-1] = f"{target[-1]} {stripped}"
        return True

    def _key_value(self, key: str, value: str, line: str, stripped: str) -> None:
        out = self.out
        key_lower = key.lower()
        # "Tokens per second (inferred)": LoadGen's estimate fills the same figure.
        known_lower = key_lower.removesuffix(" (inferred)")
        if self.section == "parameters":
            try:
                out["test_parameters"][key] = _number(value, line)
            except InvalidInput:
                out["test_parameters"][key] = value
        elif key_lower in ("sut name", "scenario", "mode"):
            out.setdefault(key_lower.replace(" ", "_"), value)
        elif key_lower == "result is":
            if value not in ("VALID", "INVALID"):
                raise InvalidInput(f"LoadGen summary line {stripped!r}: expected VALID or INVALID")
            out.setdefault("result", value)
            out.setdefault("valid", value == "VALID")
            self.block = None
        elif key_lower.endswith("satisfied"):
            name = _NON_WORD.sub("_", key_lower).strip("_")
            out["constraints"][name] = value.lower() == "yes"
        elif known_lower in _RESULT_LINES:
            name = _RESULT_LINES[known_lower]
            if name not in out:
                out[name] = _number(value, line)
                self.sources[name] = (self.section, key)
        else:
            self._percentile(key, key_lower, value, line)

    def _percentile(self, key: str, key_lower: str, value: str, line: str) -> None:
        """A latency line: the result's percentile, or a statistic of a latency group."""
        out = self.out
        pct = _PCT_LINE.match(key)
        stat_group = _stat_group(key)
        if pct and self.section == "results":
            # The result line: "90th" (LoadGen < 4) or "90.0th" (LoadGen >= 4).
            name = f"{_pct_key(pct.group('pct'))}_latency_ns"
            if name not in out:
                out[name] = _number(value, line)
                self.sources[name] = (self.section, key)
            return
        stat = None
        if pct and stat_group:
            stat = _pct_key(pct.group("pct"))
        elif (
            stat_group
            and key_lower.split(" ", 1)[0] in ("min", "max", "mean")
            and "(ns)" in key_lower
        ):
            stat = key_lower.split(" ", 1)[0]
        if stat_group and stat and stat not in out.get(stat_group, {}):
            out.setdefault(stat_group, {})[stat] = _number(value, line)
            self.sources[f"{stat_group}.{stat}"] = (self.section, key)

    def finish(self) -> dict[str, Any]:
        out = self.out
        if "scenario" not in out:
            raise InvalidInput("not a LoadGen mlperf_log_summary.txt: no 'Scenario :' line found")
        scenario = resolve_scenario(out["scenario"])
        if not scenario.resolved:
            raise InvalidInput(
                f"LoadGen summary: {scenario.message('Scenario line')}; "
                f"valid: {', '.join(SCENARIOS)}"
            )
        out["scenario"] = scenario.id
        if len(self.early) > 1 or self.early["notes"]:
            out["early_stopping"] = self.early
        out.setdefault("complete", False)
        out["sources"] = self.sources
        return out


def parse_summary(text: str) -> dict[str, Any]:
    """Parse an mlperf_log_summary.txt; see the module docstring for the keys."""
    parser = _SummaryParser()
    lines = text.replace("\r\n", "\n").split("\n")
    # A file cut mid-write ends without a newline: its last line may hold half a number.
    for raw in lines[:-1] if lines[-1].strip() else lines:
        parser.line(raw)
    return parser.finish()


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


@dataclass(frozen=True)
class Headline:
    """A published result's headline figure and the summary line it was read from."""

    metric: str
    value: float
    unit: str
    higher_is_better: bool
    source_line: str
    valid: bool


# (summary key, metric, unit, higher is better, scale)
_Candidate = tuple[str, str, str, bool, float]
_NS_TO_MS = 1e-6
_HEADLINE_CANDIDATES: dict[str, tuple[_Candidate, ...]] = {
    "Offline": (
        ("tokens_per_second", "tokens_per_second", "tokens/s", True, 1.0),
        ("samples_per_second", "samples_per_second", "samples/s", True, 1.0),
    ),
    # The Server result line moved from "Scheduled" to "Completed" samples per second; the one in
    # the result section is the result, whatever the stats section repeats.
    "Server": (
        ("completed_tokens_per_second", "tokens_per_second", "tokens/s", True, 1.0),
        ("scheduled_samples_per_second", "queries_per_second", "queries/s", True, 1.0),
        ("completed_samples_per_second", "queries_per_second", "queries/s", True, 1.0),
    ),
    "SingleStream": (
        ("early_stopping.p90_estimate_ns", "p90_latency_ms", "ms", False, _NS_TO_MS),
        ("p90_latency_ns", "p90_latency_ms", "ms", False, _NS_TO_MS),
        ("latency_ns.p90", "p90_latency_ms", "ms", False, _NS_TO_MS),
    ),
    "MultiStream": (
        ("early_stopping.p99_estimate_ns", "p99_latency_ms", "ms", False, _NS_TO_MS),
        ("p99_latency_ns", "p99_latency_ms", "ms", False, _NS_TO_MS),
        ("latency_ns.p99", "p99_latency_ms", "ms", False, _NS_TO_MS),
    ),
}
_HEADLINE_CANDIDATES["Interactive"] = _HEADLINE_CANDIDATES["Server"]


def _figure(summary: dict[str, Any], key: str) -> float | None:
    head, _, stat = key.partition(".")
    value = summary.get(head)
    if stat:
        value = value.get(stat) if isinstance(value, dict) else None
    return None if value is None else float(value)


_RESULT_PCT = re.compile(r"^p(?P<pct>\d+(?:\.\d+)?)_latency_ns$")


def _latency_headline(summary: dict[str, Any]) -> Headline | None:
    """SingleStream/MultiStream: the tail percentile the result section reports ("90th", "99th",
    PointPainting's "99.9th"), as its early-stopping estimate where the run has one (the
    published figure), else the result line itself; the metric is ``p<pct>_latency_ms``."""
    sources = summary.get("sources", {})
    reported = [
        m.group("pct")
        for key in summary
        if (m := _RESULT_PCT.match(key)) and sources.get(key, ("",))[0] == "results"
    ]
    if len(reported) != 1:
        return None
    pct = reported[0]
    metric = f"p{pct.replace('.', '_')}_latency_ms"
    early = summary.get("early_stopping") or {}
    estimate = early.get(f"p{pct}_estimate_ns")
    if estimate is not None:
        line = sources.get(
            f"early_stopping.p{pct}_estimate_ns",
            ("", f"Early stopping {pct}th percentile estimate"),
        )[1]
        return Headline(
            metric, float(estimate) * _NS_TO_MS, "ms", False, line, bool(summary.get("valid"))
        )
    key = f"p{pct}_latency_ns"
    return Headline(
        metric,
        float(summary[key]) * _NS_TO_MS,
        "ms",
        False,
        sources[key][1],
        bool(summary.get("valid")),
    )


def published_headline(summary: dict[str, Any]) -> Headline:
    """The headline figure of a published result, by the summary's LoadGen scenario: Offline
    tokens/s (LLMs) else samples/s; Server the result-section line (completed tokens/s, scheduled
    or completed samples/s) else the stats one; SingleStream the early-stopping p90 estimate else
    the p90; MultiStream likewise p99. Latencies in ms.

    Raises:
        InvalidInput: the summary carries none of its scenario's result lines.
    """
    scenario = summary["scenario"]
    if scenario in ("SingleStream", "MultiStream"):
        latency = _latency_headline(summary)
        if latency is not None:
            return latency
    candidates = _HEADLINE_CANDIDATES[scenario]
    sources = summary.get("sources", {})
    ordered = (
        sorted(candidates, key=lambda c: sources.get(c[0], ("stats",))[0] != "results")
        if scenario in ("Server", "Interactive")
        else candidates
    )
    for key, metric, unit, higher, scale in ordered:
        value = _figure(summary, key)
        if value is not None:
            line = sources.get(key, ("", key))[1]
            return Headline(metric, value * scale, unit, higher, line, bool(summary.get("valid")))
    wanted = ", ".join(repr(c[0]) for c in candidates)
    raise InvalidInput(f"{scenario} summary has none of the result figures {wanted}")


# LLM latency figures (time to first token, time per output token) kept as metrics of their own.
TOKEN_LATENCY_GROUPS = {"first_token_latency_ns": "ttft", "time_per_output_token_ns": "tpot"}
TOKEN_LATENCY_STATS = ("mean", "p50", "p90", "p95", "p97", "p99", "p99.9")


def token_latency_metrics(summary: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(metric, value in ms, source line) for every TTFT/TPOT figure the summary carries, e.g.
    ``("ttft_p99_ms", 785.27, "99.00 percentile first token latency (ns)")``."""
    out = []
    sources = summary.get("sources", {})
    for group, prefix in TOKEN_LATENCY_GROUPS.items():
        stats = summary.get(group) or {}
        for stat in TOKEN_LATENCY_STATS:
            if stat in stats:
                metric = f"{prefix}_{stat.replace('.', '_')}_ms"
                line = sources.get(f"{group}.{stat}", ("", stat))[1]
                out.append((metric, float(stats[stat]) * _NS_TO_MS, line))
    return out
