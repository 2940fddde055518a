"""Import published MLPerf Training results (a results tree as MLCommons publishes it).

Layout read (a directory, or a ``.tar.gz`` of one)::

    [<round dir>/]<submitter>/systems/<system>.json
    [<round dir>/]<submitter>/results/<system>/<benchmark>/result_<N>.txt

Each result file is one training run: the MLLOG lines it printed (``:::MLLOG {json}``, possibly
after a rank prefix such as `` 0: ``, interleaved with other output). A run's time to train is the
wall time from ``run_start`` to ``run_stop``; ``run_stop``'s ``metadata.status`` says whether it
reached the target (``success``) or not (``aborted``). Per system and benchmark MLCommons scores
the olympic mean of the successful runs (the fastest and the slowest dropped).

What goes into the store, per system × benchmark:

- one ``Run`` per result file, and one ``run_time_to_train_min`` observation per successful run;
- a failure per aborted run (and per run that never logged ``run_stop``);
- ``time_to_train_min``: the olympic mean, with the run count (``samples``), spread (min/max as
  p10/p90, standard deviation, CV) and the global batch size;
- ``accelerator_hours``: that time × the accelerators (nodes × accelerators per node).

MLCommons also normalises some benchmarks' scores by reference convergence points (RCP); that
correction is not in the files, so these scores are the raw olympic means (every observation's
note says so). Unknown MLLOG keys and system-description keys are not errors; a file that cannot
be read is reported with its path and reason.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stack_advisor.catalog import resolve_benchmark
from stack_advisor.catalog.stack_text import (
    classify_placement,
    container_cuda,
    merge_stack_texts,
    parse_framework,
)
from stack_advisor.collectors.importers.archive_stream import MemberBudget
from stack_advisor.collectors.importers.limits import ImportLimitExceeded, ImportLimits, load_json
from stack_advisor.collectors.importers.mlperf import (
    DEFAULT_BATCH,
    Issue,
    detect_round,
    ingest_observations,
)
from stack_advisor.collectors.importers.mlperf_system import (
    accelerators,
    flat_text,
    memory_mib,
    vendor,
    whole_number,
)
from stack_advisor.collectors.importers.tar_reader import ArchiveTruncated, iter_archive
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    OUTCOME_ERROR_PREFIX,
    Accelerator,
    Benchmark,
    Failure,
    Host,
    IngestBatch,
    Observation,
    Placement,
    Provenance,
    Run,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store

SOURCE = "mlperf-training"
FAMILY = "mlperf-training"
RCP_NOTE = (
    "olympic mean of the successful runs (fastest and slowest dropped); MLCommons' RCP "
    "normalisation is not in the result files and is not applied"
)
ATTRIBUTION = (
    "MLPerf(R) Training results from MLCommons (https://mlcommons.org), used under the MLCommons "
    "results-use guidelines; round, submitter and system id are kept on every observation."
)
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


def read_run(path: str, text: str) -> TrainingRun:
    """One run from its result file; ``path`` is
    ``<submitter>/results/<system>/<benchmark>/result_N.txt``.

    Raises:
        ValueError: no ``run_start`` event, or times that are not numbers.
    """
    submitter, _, system_id, benchmark, name = path.split("/")[-5:]
    events, _ = parse_mllog(text, _READ_KEYS)
    starts = events.get("run_start")
    if not starts:
        raise ValueError("no MLLOG run_start event")
    try:
        start = min(int(e["time_ms"]) for e in starts)
        stops = events.get("run_stop") or []
        stop = max(int(e["time_ms"]) for e in stops) if stops else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"run_start/run_stop without a numeric time_ms: {exc}") from None
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
        submitter, system_id, benchmark, name.removesuffix(".txt"), path, start, stop, status, keys
    )


def _wanted(rel: str) -> bool:
    """A file the Training importer reads: a system description or a run's result."""
    parts = rel.removeprefix("./").split("/")
    return ("systems" in parts and rel.endswith(".json")) or (
        "results" in parts and parts[-1].startswith("result_") and rel.endswith(".txt")
    )


def _iter_files(
    root: Path, on_skipped: Callable[[str, str], None], limits: ImportLimits
) -> Iterator[tuple[str, bytes | None]]:
    """(relative path, content) of every file, within ``limits``; content is None for files
    the importer never reads, and links (never followed) go to ``on_skipped``."""
    if root.is_dir():
        budget = MemberBudget(str(root), limits)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                full = Path(dirpath) / name
                rel = full.relative_to(root).as_posix()
                budget.member()
                if full.is_symlink():
                    on_skipped(rel, "a symbolic link inside the tree is never followed or read")
                elif not _wanted(rel):
                    yield rel, None
                else:
                    budget.reading(rel, full.stat().st_size)
                    yield rel, full.read_bytes()
        return
    archive = iter_archive(root, wanted=_wanted, limits=limits, on_skipped=on_skipped)
    for name, content, _ in archive:
        yield name.removeprefix("./"), content


def _read_run(rel: str, data: bytes) -> TrainingRun | ValueError:
    """The run of one result file, read as it streams by (so no log is held), or why not."""
    try:
        return read_run(rel, data.decode("utf-8", errors="replace"))
    except ValueError as exc:
        return exc


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
    prefixes: set[str] = set()
    results: list[tuple[str, TrainingRun | ValueError]] = []
    inference_logs = 0  # an MLPerf Inference round's files: the wrong importer
    # Each log is parsed as it streams by and dropped, so what is kept is bounded by the
    # expanded size; each log still by member_bytes.
    limits = limits or ImportLimits.from_env()
    limits = replace(limits, held_bytes=limits.expanded_bytes)

    def link(rel: str, why: str) -> None:
        tree.issues.append(Issue(rel, why, "skipped", "link"))

    try:
        for rel, data in _iter_files(root, link, limits):
            tree.files_seen += 1
            parts = rel.split("/")
            inference_logs += parts[-1] == "mlperf_log_summary.txt"
            if data is None:
                continue
            if "systems" in parts and rel.endswith(".json"):
                at = parts.index("systems")
                if at < 1:
                    tree.issues.append(
                        Issue(rel, "not under <submitter>/systems/", "skipped", "unexpected-layout")
                    )
                    continue
                prefixes.add("/".join(parts[: at - 1]))
                try:
                    loaded = load_json(data, rel, limits)
                except (ValueError, ImportLimitExceeded) as exc:
                    tree.issues.append(
                        Issue(
                            rel,
                            f"malformed system description: {exc}",
                            "failed",
                            "malformed-system",
                        )
                    )
                    continue
                if not isinstance(loaded, dict):
                    why = (
                        "malformed system description: top level is a "
                        f"{type(loaded).__name__}, not an object"
                    )
                    tree.issues.append(Issue(rel, why, "failed", "malformed-system"))
                    continue
                tree.systems[(parts[at - 1], parts[-1].removesuffix(".json"))] = loaded
            elif "results" in parts and parts[-1].startswith("result_") and rel.endswith(".txt"):
                at = parts.index("results")
                if at < 1 or len(parts) - at != 4:
                    tree.issues.append(
                        Issue(
                            rel,
                            "unexpected layout: expected "
                            "<submitter>/results/<system>/<benchmark>/result_<N>.txt",
                            "skipped",
                            "unexpected-layout",
                        )
                    )
                    continue
                prefixes.add("/".join(parts[: at - 1]))
                run_path = "/".join(parts[at - 1 :])
                results.append((run_path, _read_run(run_path, data)))
    except ArchiveTruncated as exc:
        after = f" after {exc.after}" if exc.after else ""
        tree.issues.append(
            Issue(
                str(root),
                f"archive is truncated or corrupt{after}; what came before was read",
                "failed",
                "truncated-archive",
            )
        )
    if tree.files_seen == 0:
        raise InvalidInput(
            f"{str(root)!r} holds no readable files: not an MLPerf Training results tree or archive"
        )
    if not results and inference_logs:
        raise InvalidInput(
            f"{str(root)!r} is an MLPerf Inference round ({inference_logs} mlperf_log_summary.txt "
            "files, no Training result_<N>.txt): import it with `advisor import mlperf`"
        )
    if not results:
        raise InvalidInput(
            f"{str(root)!r} holds no MLPerf Training results: none of its {tree.files_seen} files "
            "is <submitter>/results/<system>/<benchmark>/result_<N>.txt"
        )
    tree.round = round_name or detect_round(root, sorted(p for p in prefixes if p)) or ""
    if not tree.round:
        raise InvalidInput(
            f"cannot tell the MLPerf round of {str(root)!r} from its name; pass --round (e.g. v4.1)"
        )
    for rel, run in sorted(results, key=lambda r: r[0]):
        if isinstance(run, ValueError):
            tree.issues.append(
                Issue(rel, f"unreadable training run: {run}", "failed", "malformed-run")
            )
            continue
        if (run.submitter, run.system_id) not in tree.systems:
            tree.issues.append(
                Issue(
                    rel,
                    f"no system description {run.submitter}/systems/{run.system_id}.json",
                    "failed",
                    "missing-system",
                )
            )
            continue
        if run.stop_ms is None:
            tree.issues.append(
                Issue(
                    rel,
                    "no MLLOG run_stop event: the run did not finish (counted as a failed run)",
                    "failed",
                    "no-run-stop",
                )
            )
        tree.runs.append(run)
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


# ---- observations ----------------------------------------------------------------------------


@dataclass
class SystemContext:
    stack: SoftwareStack
    accelerator: Accelerator
    placement: Placement
    host: Host
    details: dict[str, str]
    accelerators: int


def system_context(submitter: str, system_id: str, fields: dict[str, Any]) -> SystemContext:
    """Stack, accelerator, placement, host and provenance details of one system description.

    Raises:
        ValueError: counts that cannot be read.
    """
    model, per_node, count, nodes = accelerators(fields)
    parsed = merge_stack_texts(
        fields.get("framework"), fields.get("other_software_stack") or fields.get("sw_stack")
    )
    framework, framework_version = parse_framework(fields.get("framework"))
    c = parsed.components
    cuda, cuda_conflict = container_cuda(framework, framework_version, c.get("cuda"), model)
    raw = " | ".join(
        f"{name}: {flat_text(fields.get(name))}"
        for name in ("framework", "other_software_stack")
        if fields.get(name)
    )
    stack = SoftwareStack(
        driver=c.get("driver"),
        cuda=cuda,
        cudnn=c.get("cudnn"),
        nccl=c.get("nccl"),
        python=c.get("python"),
        framework=framework,
        framework_version=framework_version,
        extra={k: v for k, v in c.items() if k in ("rocm", "dali", "gcc")},
        raw=raw or None,
    )
    if model:
        accelerator = Accelerator(
            model=model,
            vendor=vendor(model),
            count=count,
            memory_mib=memory_mib(fields.get("accelerator_memory_capacity")),
        )
    else:
        cpu = flat_text(fields.get("host_processor_model_name")) or "unknown"
        count = (whole_number(fields.get("host_processors_per_node")) or 1) * nodes
        accelerator = Accelerator(model="CPU " + cpu, vendor="cpu", count=count)
    evidence = {
        "system_id": system_id,
        **{k: v for k, v in fields.items() if isinstance(v, (str, list, dict))},
    }
    where = classify_placement(evidence, has_accelerator=bool(model))
    placement = Placement(
        kind=where.kind,
        hypervisor=where.hypervisor,
        vgpu_profile=where.vgpu_profile,
        evidence=[f"basis: {where.basis}", *where.evidence],
    )
    host = Host(
        name=f"mlperf-training:{submitter}/{system_id}",
        cpu_model=flat_text(fields.get("host_processor_model_name")) or None,
        os=flat_text(fields.get("operating_system")) or None,
        labels={
            k: v for k, v in {"system_name": flat_text(fields.get("system_name"))}.items() if v
        },
    )
    details = {
        "system_name": flat_text(fields.get("system_name")),
        "nodes": str(nodes),
        "accelerators_per_node": per_node,
        "accelerator_interconnect": flat_text(fields.get("accelerator_interconnect")),
        "host_networking": flat_text(fields.get("host_networking")),
        "placement_basis": where.basis,
    }
    if where.cloud_provider:
        details["cloud_provider"] = where.cloud_provider
    if cuda_conflict:
        details["version_conflicts"] = cuda_conflict
    return SystemContext(
        stack, accelerator, placement, host, {k: v for k, v in details.items() if v}, count
    )


def catalogue_benchmark(name: str) -> str:
    """A Training benchmark's catalogue id (its name as written when the catalogue lacks it)."""
    match = resolve_benchmark(name, FAMILY)
    return match.id if match.resolved and match.matched_by != "pattern" else name


def to_batch(tree: TrainingTree) -> IngestBatch:
    """Runs, per-run times, failures and per-system scores of one tree, with provenance."""
    groups: dict[tuple[str, str, str], list[TrainingRun]] = {}
    for run in tree.runs:
        groups.setdefault((run.submitter, run.system_id, run.benchmark), []).append(run)
    contexts: dict[tuple[str, str], SystemContext | None] = {}
    batch = IngestBatch()
    url = f"https://github.com/mlcommons/training_results_{tree.round}"
    for (submitter, system_id, benchmark), runs in sorted(groups.items()):
        fields = tree.systems[(submitter, system_id)]
        if (submitter, system_id) not in contexts:
            try:
                contexts[(submitter, system_id)] = system_context(submitter, system_id, fields)
            except ValueError as exc:
                contexts[(submitter, system_id)] = None
                tree.issues.append(
                    Issue(
                        f"{submitter}/systems/{system_id}.json",
                        f"malformed system description: {exc}",
                        "failed",
                        "malformed-system",
                    )
                )
        ctx = contexts[(submitter, system_id)]
        if ctx is None:
            continue
        division = (
            flat_text(fields.get("division"))
            or runs[0].keys.get("submission_division", "")
            or "closed"
        )
        # One name in every layer: the catalogue's id ("gnn" of v4.1 is v5.0's "rgat").
        bench = Benchmark(
            family=FAMILY, name=catalogue_benchmark(benchmark), parameters={"division": division}
        )
        source_key = f"{tree.round}/{division}/{submitter}/{system_id}"
        base = {
            "round": tree.round,
            "division": division,
            "submitter": submitter,
            "system_id": system_id,
            "system_file": f"{submitter}/systems/{system_id}.json",
            "license": "Apache-2.0",
            "attribution": "MLCommons MLPerf Training " + tree.round,
            "benchmark_raw": benchmark,
            **ctx.details,
        }
        common: dict[str, Any] = {
            "stack": ctx.stack,
            "accelerator": ctx.accelerator,
            "placement": ctx.placement,
            "host": ctx.host,
        }

        def provenance(details: dict[str, str], base: dict[str, str] = base) -> Provenance:
            return Provenance(
                kind=SourceKind.PUBLISHED, source=SOURCE, url=url, details={**base, **details}
            )

        for run in runs:
            run_id = f"{SOURCE}:{tree.round}/{submitter}/{system_id}/{benchmark}/{run.index}"
            started = datetime.fromtimestamp(run.start_ms / 1000, tz=UTC)
            finished = datetime.fromtimestamp(run.stop_ms / 1000, tz=UTC) if run.stop_ms else None
            batch.runs.append(
                Run(
                    run_id=run_id,
                    started_at=started,
                    finished_at=finished,
                    collector=SOURCE,
                    collector_version=tree.round,
                    profile=benchmark,
                )
            )
            details = {"file": run.path, **run.keys, "status": run.status}
            if run.succeeded and run.minutes is not None:
                batch.observations.append(
                    Observation(
                        benchmark=bench,
                        metric="run_time_to_train_min",
                        value=run.minutes,
                        unit="min",
                        higher_is_better=False,
                        timestamp=started,
                        run_id=run_id,
                        source_key=source_key,
                        note="one run's time to train (run_start to run_stop)",
                        provenance=provenance(details),
                        **common,
                    )
                )
            else:
                why = (
                    "aborted: did not reach the target quality"
                    if run.status == "aborted"
                    else run.status
                )
                batch.failures.append(
                    Failure(
                        benchmark=bench,
                        stage="run",
                        error_class=OUTCOME_ERROR_PREFIX + run.status.replace(" ", "-"),
                        message=f"{run.path}: {why}",
                        timestamp=started,
                        run_id=run_id,
                        provenance=provenance(details),
                        **common,
                    )
                )
        score = olympic_score(runs)
        if score is None:
            continue
        batch_sizes = sorted(
            {r.keys["global_batch_size"] for r in runs if "global_batch_size" in r.keys}
        )
        details = {
            "runs": str(score.runs),
            "runs_in_mean": str(score.used),
            "failed_runs": str(score.failed),
            "fastest_min": f"{score.fastest:.3f}",
            "slowest_min": f"{score.slowest:.3f}",
            "global_batch_size": ", ".join(batch_sizes),
            "rcp": "not applied (not in the result files)",
            "file": f"{submitter}/results/{system_id}/{benchmark}/result_*.txt",
        }
        spread: dict[str, Any] = {
            "samples": score.used,
            "p10": score.fastest,
            "p90": score.slowest,
            "stddev": score.stddev,
            "cv": score.stddev / score.minutes if score.stddev is not None else None,
        }
        when = datetime.fromtimestamp(min(r.start_ms for r in runs) / 1000, tz=UTC)
        batch.observations.append(
            Observation(
                benchmark=bench,
                metric="time_to_train_min",
                value=score.minutes,
                unit="min",
                higher_is_better=False,
                note=RCP_NOTE,
                timestamp=when,
                source_key=source_key,
                provenance=provenance(details),
                **spread,
                **common,
            )
        )
        hours = ctx.accelerators / 60
        batch.observations.append(
            Observation(
                benchmark=bench,
                metric="accelerator_hours",
                value=score.minutes * hours,
                unit="accelerator-h",
                higher_is_better=False,
                note=f"time to train × {ctx.accelerators} accelerators; {RCP_NOTE}",
                timestamp=when,
                source_key=source_key,
                provenance=provenance(details),
                samples=score.used,
                p10=score.fastest * hours,
                p90=score.slowest * hours,
                stddev=score.stddev * hours if score.stddev is not None else None,
                cv=spread["cv"],
                **common,
            )
        )
    return batch


# ---- import into a store ---------------------------------------------------------------------


@dataclass
class TrainingImportSummary:
    path: str
    round: str
    files_seen: int
    runs: int
    failed_runs: int
    scores: int  # system × benchmark scores written (time to train)
    imported: int  # new observations
    already_present: int
    failures_new: int
    issues: list[Issue]
    seconds: float = 0.0
    note: str = (
        "RCP normalisation (MLCommons) is not in the result files: scores are raw olympic means"
    )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "round": self.round,
            "files_seen": self.files_seen,
            "runs": self.runs,
            "failed_runs": self.failed_runs,
            "scores": self.scores,
            "imported": self.imported,
            "already_present": self.already_present,
            "failures_new": self.failures_new,
            "issues": [
                {"path": i.path, "outcome": i.outcome, "category": i.category, "reason": i.reason}
                for i in self.issues
            ],
            "seconds": round(self.seconds, 3),
            "note": self.note,
        }


def import_mlperf_training(
    path: str | os.PathLike[str],
    store: Store,
    *,
    round_name: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> TrainingImportSummary:
    """Read one Training results tree and write it to ``store``; idempotent."""
    started = time.perf_counter()
    tree = read_training_tree(path, round_name=round_name)
    batch = to_batch(tree)
    # Runs and failures first (small), then observations in batches.
    head = store.ingest(IngestBatch(runs=batch.runs, failures=batch.failures))
    total = len(batch.observations)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    new, received = ingest_observations(
        store, batch.observations, batch_size=batch_size, progress=step
    )
    return TrainingImportSummary(
        path=str(path),
        round=tree.round,
        files_seen=tree.files_seen,
        runs=len(tree.runs),
        failed_runs=sum(1 for r in tree.runs if not r.succeeded),
        scores=sum(1 for o in batch.observations if o.metric == "time_to_train_min"),
        imported=new,
        already_present=received - new,
        failures_new=head.failures_new,
        issues=tree.issues,
        seconds=time.perf_counter() - started,
    )
