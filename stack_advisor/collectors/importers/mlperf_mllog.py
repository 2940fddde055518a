"""Read an MLPerf Training results tree: its system descriptions, one run per result file (from
the MLLOG lines it printed), and the score of a system's runs (their olympic mean).
``mlperf_training`` writes them to a store; see its docstring for the layout and the conventions.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from stack_advisor.collectors.importers.limits import ImportLimitExceeded, ImportLimits
from stack_advisor.collectors.importers.mlperf_common import (
    Issue,
    checked_round,
    detect_round,
    iter_tree_files,
    load_system,
    truncated_issue,
)
from stack_advisor.collectors.importers.mlperf_system import flat_text
from stack_advisor.collectors.importers.tar_reader import ArchiveTruncated
from stack_advisor.schema.errors import InvalidInput

_MLLOG = ":::MLLOG"
# MLLOG keys kept on a run (others are read past).
_RUN_KEYS = (
    "global_batch_size",
    "seed",
    "submission_platform",
    "submission_division",
    "submission_org",
)
_READ_KEYS = frozenset({"run_start", "run_stop", "eval_accuracy", *_RUN_KEYS})
_RESULT_LAYOUT = (
    "unexpected layout: expected <submitter>/results/<system>/<benchmark>/result_<N>.txt"
)


@dataclass
class TrainingRun:
    """One result file: a run of one benchmark on one system."""

    submitter: str
    system_id: str
    benchmark: str
    index: str  # "result_3"
    path: str
    start_ms: int
    stop_ms: int | None
    status: str  # "success" | "aborted" | "no run_stop"
    keys: dict[str, str] = field(default_factory=dict)
    bad_lines: int = 0  # MLLOG lines of the wanted keys that were not JSON (a cut line)
    cut_short: bool = False  # the file ends inside an MLLOG line (``ends_mid_line``)

    @property
    def minutes(self) -> float | None:
        return None if self.stop_ms is None else (self.stop_ms - self.start_ms) / 60_000

    @property
    def succeeded(self) -> bool:
        return self.status == "success" and self.stop_ms is not None


@dataclass
class TrainingTree:
    round: str
    systems: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    runs: list[TrainingRun] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    files_seen: int = 0
    malformed_systems: set[tuple[str, str]] = field(default_factory=set)

    def skip(self, path: str, reason: str, category: str) -> None:
        self.issues.append(Issue(path, reason, "skipped", category))

    def fail(self, path: str, reason: str, category: str) -> None:
        self.issues.append(Issue(path, reason, "failed", category))


def _mllog_lines(text: str, keys: Collection[str] | None) -> Iterator[str]:
    if keys is None:
        yield from text.splitlines()
        return
    # Result files hold up to hundreds of thousands of lines: find the wanted keys, not every line.
    wanted = re.compile(r'"key"\s*:\s*"(?:' + "|".join(re.escape(k) for k in sorted(keys)) + r')"')
    last = -1
    for match in wanted.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        if start <= last:
            continue
        end = text.find("\n", match.end())
        last = start
        yield text[start : end if end >= 0 else len(text)]


def parse_mllog(
    text: str, keys: Collection[str] | None = None
) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """MLLOG events by key (in file order), and how many MLLOG lines were not JSON. With
    ``keys``, only those events are decoded."""
    events: dict[str, list[dict[str, Any]]] = {}
    bad = 0
    for line in _mllog_lines(text, keys):
        at = line.find(_MLLOG)
        if at < 0:
            continue
        try:
            event = json.loads(line[at + len(_MLLOG) :])
        except (json.JSONDecodeError, RecursionError):  # a hostile nesting is a bad line too
            bad += 1
            continue
        if (
            isinstance(event, dict)
            and isinstance(event.get("key"), str)
            and (keys is None or event["key"] in keys)
        ):
            events.setdefault(event["key"], []).append(event)
    return events, bad


def ends_mid_line(text: str) -> bool:
    """Whether a result file ends inside an MLLOG line: no newline after a last line whose
    event is not whole JSON (a file cut short in transfer; a whole last line without its newline
    is not)."""
    if text.endswith("\n"):
        return False
    last = text[text.rfind("\n") + 1 :]
    at = last.find(_MLLOG)
    if at < 0:
        return False
    try:
        json.loads(last[at + len(_MLLOG) :])
    except (json.JSONDecodeError, RecursionError):
        return True
    return False


def read_run(path: str, text: str) -> TrainingRun:
    """One run from its result file; ``path`` is
    ``<submitter>/results/<system>/<benchmark>/result_N.txt``.

    Raises:
        ValueError: no ``run_start`` event, or times that are not numbers.
    """
    submitter, _, system_id, benchmark, name = path.split("/")[-5:]
    events, bad = parse_mllog(text, _READ_KEYS)
    starts = events.get("run_start")
    if not starts:
        cut = f" ({bad} MLLOG line(s) of its keys are not JSON: cut?)" if bad else ""
        raise ValueError(f"no MLLOG run_start event{cut}")
    try:
        start = min(int(e["time_ms"]) for e in starts)
        stops = events.get("run_stop") or []
        stop = max(int(e["time_ms"]) for e in stops) if stops else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"run_start/run_stop without a numeric time_ms: {exc}") from None
    if stop is not None and stop <= start:
        raise ValueError(
            f"run_stop (time_ms {stop}) is not after run_start (time_ms {start}): no time to train"
        )
    status = "no run_stop"
    if stops:
        metadata = stops[-1].get("metadata") or {}
        status = str(metadata.get("status", "unknown")).lower()
    keys = {}
    for key in _RUN_KEYS:
        if events.get(key):
            keys[key] = flat_text(events[key][0].get("value"))
    if events.get("eval_accuracy"):
        keys["eval_accuracy"] = flat_text(events["eval_accuracy"][-1].get("value"))
    return TrainingRun(
        submitter,
        system_id,
        benchmark,
        name.removesuffix(".txt"),
        path,
        start,
        stop,
        status,
        keys,
        bad,
        ends_mid_line(text),
    )


def _wanted(rel: str) -> bool:
    """A file the Training importer reads: a system description or a run's result."""
    parts = rel.removeprefix("./").split("/")
    return ("systems" in parts and rel.endswith(".json")) or (
        "results" in parts and parts[-1].startswith("result_") and rel.endswith(".txt")
    )


def _read_run(rel: str, data: bytes) -> TrainingRun | ValueError:
    """The run of one result file, read as it streams by (so no log is held), or why not."""
    try:
        return read_run(rel, data.decode("utf-8", errors="replace"))
    except ValueError as exc:
        return exc


@dataclass
class _Walk:
    """What a walk of a tree found besides the systems: results and round-name prefixes."""

    prefixes: set[str] = field(default_factory=set)
    results: list[tuple[str, TrainingRun | ValueError]] = field(default_factory=list)
    inference_logs: int = 0  # an MLPerf Inference round's files: the wrong importer


def _add_system(
    tree: TrainingTree, walk: _Walk, rel: str, data: bytes, limits: ImportLimits
) -> None:
    parts = rel.split("/")
    at = parts.index("systems")
    if at < 1:
        tree.skip(rel, "not under <submitter>/systems/", "unexpected-layout")
        return
    walk.prefixes.add("/".join(parts[: at - 1]))
    try:
        loaded = load_system(data, rel, limits)
    except (ValueError, ImportLimitExceeded) as exc:
        where = "/".join(parts[at - 1 :])  # from the submitter, as a run's path is given
        tree.fail(where, f"malformed system description: {exc}", "malformed-system")
        tree.malformed_systems.add((parts[at - 1], parts[-1].removesuffix(".json")))
        return
    tree.systems[(parts[at - 1], parts[-1].removesuffix(".json"))] = loaded


def _add_result(tree: TrainingTree, walk: _Walk, rel: str, data: bytes) -> None:
    parts = rel.split("/")
    at = parts.index("results")
    if at < 1 or len(parts) - at != 4:
        tree.skip(rel, _RESULT_LAYOUT, "unexpected-layout")
        return
    walk.prefixes.add("/".join(parts[: at - 1]))
    run_path = "/".join(parts[at - 1 :])
    walk.results.append((run_path, _read_run(run_path, data)))


def _walk(root: Path, tree: TrainingTree, limits: ImportLimits) -> _Walk:
    walk = _Walk()

    def link(rel: str, why: str) -> None:
        tree.skip(rel, why, "link")

    try:
        for rel, data, _ in iter_tree_files(root, _wanted, link, limits):
            tree.files_seen += 1
            parts = rel.split("/")
            walk.inference_logs += parts[-1] == "mlperf_log_summary.txt"
            if data is None:
                continue
            if "systems" in parts and rel.endswith(".json"):
                _add_system(tree, walk, rel, data, limits)
            elif "results" in parts and parts[-1].startswith("result_") and rel.endswith(".txt"):
                _add_result(tree, walk, rel, data)
    except ArchiveTruncated as exc:
        tree.issues.append(truncated_issue(root, exc))
    return walk


def _round(root: Path, tree: TrainingTree, walk: _Walk, round_name: str | None) -> str:
    """The tree's round, once it is known to hold Training results.

    Raises:
        InvalidInput: nothing readable, an Inference round, no results, or no round to be told.
    """
    if tree.files_seen == 0:
        raise InvalidInput(
            f"{str(root)!r} holds no readable files: not an MLPerf Training results tree or archive"
        )
    if not walk.results and walk.inference_logs:
        raise InvalidInput(
            f"{str(root)!r} is an MLPerf Inference round ({walk.inference_logs} "
            "mlperf_log_summary.txt files, no Training result_<N>.txt): import it with "
            "`advisor import mlperf`"
        )
    if not walk.results:
        raise InvalidInput(
            f"{str(root)!r} holds no MLPerf Training results: none of its {tree.files_seen} files "
            "is <submitter>/results/<system>/<benchmark>/result_<N>.txt"
        )
    round_ = checked_round(round_name) or detect_round(root, sorted(p for p in walk.prefixes if p))
    round_ = round_ or ""
    if not round_:
        raise InvalidInput(
            f"cannot tell the MLPerf round of {str(root)!r} from its name; pass --round (e.g. v4.1)"
        )
    return round_


def _add_run(tree: TrainingTree, rel: str, run: TrainingRun | ValueError) -> None:
    if isinstance(run, ValueError):
        tree.fail(rel, f"unreadable training run: {run}", "malformed-run")
        return
    if (run.submitter, run.system_id) not in tree.systems:
        system = f"{run.submitter}/systems/{run.system_id}.json"
        if (run.submitter, run.system_id) in tree.malformed_systems:
            why = f"its system description {system} is malformed (reported with it)"
        else:
            why = f"no system description {system}"
        tree.fail(rel, why, "missing-system")
        return
    if run.stop_ms is None and run.cut_short:  # the file's end is lost, not the run's
        why = (
            "the file ends inside an MLLOG line (cut short?) before any run_stop event: whether "
            "the run finished cannot be read; not recorded as a run (a failed one would blame "
            "the stack)"
        )
        tree.fail(rel, why, "truncated-run")
        return
    if run.stop_ms is None:
        why = "no MLLOG run_stop event: the run did not finish (counted as a failed run)"
        if run.bad_lines:
            why = (
                f"no readable MLLOG run_stop event: {run.bad_lines} MLLOG line(s) of its keys "
                "are not JSON (a cut run_stop line?); counted as a failed run"
            )
        tree.fail(rel, why, "no-run-stop")
    tree.runs.append(run)


def read_training_tree(
    path: str | os.PathLike[str],
    *,
    round_name: str | None = None,
    limits: ImportLimits | None = None,
) -> TrainingTree:
    """Parse a Training results tree into runs and system descriptions, reporting what does not fit.

    Raises:
        InvalidInput: no such path, nothing readable in it, or a round that cannot be told.
        ImportLimitExceeded: the tree or archive is over a limit (default: from the environment).
    """
    root = Path(path)
    if not root.exists():
        raise InvalidInput(f"no such results tree: {str(root)!r} (give a directory or a .tar.gz)")
    tree = TrainingTree(round="")
    # Each log is parsed as it streams by and dropped, so what is kept is bounded by the
    # expanded size; each log still by member_bytes.
    limits = limits or ImportLimits.from_env()
    limits = replace(limits, held_bytes=limits.expanded_bytes)
    walk = _walk(root, tree, limits)
    tree.round = _round(root, tree, walk, round_name)
    for rel, run in sorted(walk.results, key=lambda r: r[0]):
        _add_run(tree, rel, run)
    return tree


# ---- scores ----------------------------------------------------------------------------------


@dataclass
class Score:
    """MLCommons' score of one system on one benchmark: olympic mean of the successful runs."""

    minutes: float
    runs: int  # successful runs
    used: int  # runs in the mean (runs - 2 when there are at least 3)
    failed: int  # aborted or unfinished runs
    fastest: float
    slowest: float
    stddev: float | None


def olympic_score(runs: list[TrainingRun]) -> Score | None:
    """Drop the fastest and the slowest successful run, average the rest (all of them when
    fewer than three succeeded); None when none did."""
    times = sorted(m for r in runs if r.succeeded and (m := r.minutes) is not None)
    failed = sum(1 for r in runs if not r.succeeded)
    if not times:
        return None
    kept = times[1:-1] if len(times) >= 3 else times
    stddev = statistics.stdev(times) if len(times) >= 2 else None
    return Score(statistics.fmean(kept), len(times), len(kept), failed, times[0], times[-1], stddev)
