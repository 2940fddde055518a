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

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from stack_advisor.catalog import resolve_benchmark
from stack_advisor.catalog.stack_text import (
    classify_placement,
    container_cuda,
    merge_stack_texts,
    parse_framework,
)
from stack_advisor.collectors.importers.mlperf_common import (
    DEFAULT_BATCH,
    Issue,
    ingest_counted,
    issue_dicts,
    kept_or_replaced,
    placement_of,
    reconcile_figures,
    unresolved_benchmarks,
)
from stack_advisor.collectors.importers.mlperf_mllog import (
    Score,
    TrainingRun,
    TrainingTree,
    olympic_score,
    parse_mllog,
    read_run,
    read_training_tree,
)
from stack_advisor.collectors.importers.mlperf_system import (
    accelerators,
    flat_text,
    memory_mib,
    vendor,
    whole_number,
)
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

__all__ = [
    "ATTRIBUTION",
    "FAMILY",
    "RCP_NOTE",
    "SOURCE",
    "Score",
    "SystemContext",
    "TrainingImportSummary",
    "TrainingRun",
    "TrainingTree",
    "catalogue_benchmark",
    "import_mlperf_training",
    "olympic_score",
    "parse_mllog",
    "read_run",
    "read_training_tree",
    "system_context",
    "to_batch",
]

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


# ---- observations ----------------------------------------------------------------------------


@dataclass
class SystemContext:
    stack: SoftwareStack
    accelerator: Accelerator
    placement: Placement
    host: Host
    details: dict[str, str]
    accelerators: int


def _stack(fields: dict[str, Any], model: str) -> tuple[SoftwareStack, str | None]:
    """The stack a system description names, and a conflict of its CUDA with its container's."""
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
    return stack, cuda_conflict


def system_context(submitter: str, system_id: str, fields: dict[str, Any]) -> SystemContext:
    """Stack, accelerator, placement, host and provenance details of one system description.

    Raises:
        ValueError: counts that cannot be read.
    """
    model, per_node, count, nodes = accelerators(fields)
    stack, cuda_conflict = _stack(fields, model)
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
    system_name = flat_text(fields.get("system_name"))
    host = Host(
        name=f"mlperf-training:{submitter}/{system_id}",
        cpu_model=flat_text(fields.get("host_processor_model_name")) or None,
        os=flat_text(fields.get("operating_system")) or None,
        labels={"system_name": system_name} if system_name else {},
    )
    details = {
        "system_name": system_name,
        "nodes": str(nodes),
        "accelerators_per_node": per_node,
        "accelerator_interconnect": flat_text(fields.get("accelerator_interconnect")),
        "host_networking": flat_text(fields.get("host_networking")),
        "placement_basis": where.basis,
        "cloud_provider": where.cloud_provider or "",
        "version_conflicts": cuda_conflict or "",
    }
    return SystemContext(
        stack,
        accelerator,
        placement_of(where),
        host,
        {k: v for k, v in details.items() if v},
        count,
    )


def catalogue_benchmark(name: str) -> str:
    """A Training benchmark's catalogue id (its name as written when the catalogue lacks it)."""
    match = resolve_benchmark(name, FAMILY)
    return match.id if match.resolved and match.matched_by != "pattern" else name


@dataclass
class _Group:
    """One system × benchmark of a tree: what its runs, failures and scores share."""

    tree: TrainingTree
    submitter: str
    system_id: str
    benchmark: str
    ctx: SystemContext
    bench: Benchmark
    source_key: str
    base: dict[str, str]

    @property
    def common(self) -> dict[str, Any]:
        return {
            "stack": self.ctx.stack,
            "accelerator": self.ctx.accelerator,
            "placement": self.ctx.placement,
            "host": self.ctx.host,
        }

    def provenance(self, details: dict[str, str]) -> Provenance:
        url = f"https://github.com/mlcommons/training_results_{self.tree.round}"
        return Provenance(
            kind=SourceKind.PUBLISHED, source=SOURCE, url=url, details={**self.base, **details}
        )

    def observation(self, details: dict[str, str], **figure: Any) -> Observation:
        """One of the group's figures (``figure``: metric, value, unit, note, ...); every figure
        of a training result is a time or a cost, so lower is better."""
        return Observation(
            benchmark=self.bench,
            higher_is_better=False,
            source_key=self.source_key,
            provenance=self.provenance(details),
            **figure,
            **self.common,
        )


def _context(
    tree: TrainingTree, contexts: dict[tuple[str, str], SystemContext | None], key: tuple[str, str]
) -> SystemContext | None:
    """The system's context, built once; None (reported once) when its description is malformed."""
    if key not in contexts:
        submitter, system_id = key
        try:
            contexts[key] = system_context(submitter, system_id, tree.systems[key])
        except ValueError as exc:
            contexts[key] = None
            tree.fail(
                f"{submitter}/systems/{system_id}.json",
                f"malformed system description: {exc}",
                "malformed-system",
            )
    return contexts[key]


def _group(
    tree: TrainingTree, key: tuple[str, str, str], runs: list[TrainingRun], ctx: SystemContext
) -> _Group:
    submitter, system_id, benchmark = key
    fields = tree.systems[(submitter, system_id)]
    division = (
        flat_text(fields.get("division")) or runs[0].keys.get("submission_division", "") or "closed"
    )
    # One name in every layer: the catalogue's id ("gnn" of v4.1 is v5.0's "rgat").
    bench = Benchmark(
        family=FAMILY, name=catalogue_benchmark(benchmark), parameters={"division": division}
    )
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
    source_key = f"{tree.round}/{division}/{submitter}/{system_id}"
    return _Group(tree, submitter, system_id, benchmark, ctx, bench, source_key, base)


def _add_run(batch: IngestBatch, group: _Group, run: TrainingRun) -> None:
    """One run: its ``Run``, and its time to train or its failure."""
    tree = group.tree
    run_id = (
        f"{SOURCE}:{tree.round}/{group.submitter}/{group.system_id}/{group.benchmark}/{run.index}"
    )
    started = datetime.fromtimestamp(run.start_ms / 1000, tz=UTC)
    finished = datetime.fromtimestamp(run.stop_ms / 1000, tz=UTC) if run.stop_ms else None
    batch.runs.append(
        Run(
            run_id=run_id,
            started_at=started,
            finished_at=finished,
            collector=SOURCE,
            collector_version=tree.round,
            profile=group.benchmark,
        )
    )
    details = {"file": run.path, **run.keys, "status": run.status}
    if run.succeeded and run.minutes is not None:
        batch.observations.append(
            group.observation(
                details,
                metric="run_time_to_train_min",
                value=run.minutes,
                unit="min",
                timestamp=started,
                run_id=run_id,
                note="one run's time to train (run_start to run_stop)",
            )
        )
        return
    why = "aborted: did not reach the target quality" if run.status == "aborted" else run.status
    batch.failures.append(
        Failure(
            benchmark=group.bench,
            stage="run",
            error_class=OUTCOME_ERROR_PREFIX + run.status.replace(" ", "-"),
            message=f"{run.path}: {why}",
            timestamp=started,
            run_id=run_id,
            provenance=group.provenance(details),
            **group.common,
        )
    )


def _score_details(group: _Group, runs: list[TrainingRun], score: Score) -> dict[str, str]:
    batch_sizes = sorted(
        {r.keys["global_batch_size"] for r in runs if "global_batch_size" in r.keys}
    )
    return {
        "runs": str(score.runs),
        "runs_in_mean": str(score.used),
        "failed_runs": str(score.failed),
        "fastest_min": f"{score.fastest:.3f}",
        "slowest_min": f"{score.slowest:.3f}",
        "global_batch_size": ", ".join(batch_sizes),
        "rcp": "not applied (not in the result files)",
        "file": f"{group.submitter}/results/{group.system_id}/{group.benchmark}/result_*.txt",
    }


def _add_score(batch: IngestBatch, group: _Group, runs: list[TrainingRun]) -> None:
    """The system's score on the benchmark: time to train, and accelerator-hours."""
    score = olympic_score(runs)
    if score is None:
        return
    details = _score_details(group, runs, score)
    cv = score.stddev / score.minutes if score.stddev is not None else None
    when = datetime.fromtimestamp(min(r.start_ms for r in runs) / 1000, tz=UTC)
    accelerators = group.ctx.accelerators
    # (metric, unit, per minute of training, note): the time itself, and the accelerators' time
    figures = (
        ("time_to_train_min", "min", 1.0, RCP_NOTE),
        (
            "accelerator_hours",
            "accelerator-h",
            accelerators / 60,
            f"time to train × {accelerators} accelerators; {RCP_NOTE}",
        ),
    )
    for metric, unit, scale, note in figures:
        batch.observations.append(
            group.observation(
                details,
                metric=metric,
                value=score.minutes * scale,
                unit=unit,
                note=note,
                timestamp=when,
                samples=score.used,
                p10=score.fastest * scale,
                p90=score.slowest * scale,
                stddev=score.stddev * scale if score.stddev is not None else None,
                cv=cv,
            )
        )


def to_batch(tree: TrainingTree) -> IngestBatch:
    """Runs, per-run times, failures and per-system scores of one tree, with provenance."""
    groups: dict[tuple[str, str, str], list[TrainingRun]] = {}
    for run in tree.runs:
        groups.setdefault((run.submitter, run.system_id, run.benchmark), []).append(run)
    contexts: dict[tuple[str, str], SystemContext | None] = {}
    batch = IngestBatch()
    for key, runs in sorted(groups.items()):
        ctx = _context(tree, contexts, key[:2])
        if ctx is None:
            continue
        group = _group(tree, key, runs, ctx)
        kept = []
        for run in runs:
            try:  # one run a record refuses is reported with its file; the others stand
                one = IngestBatch()
                _add_run(one, group, run)
            except (ValueError, InvalidInput) as exc:
                tree.fail(run.path, f"malformed training run: {_why(exc)}", "malformed-run")
                continue
            _merge(batch, one)
            kept.append(run)
        where = f"{group.submitter}/results/{group.system_id}/{group.benchmark}"
        try:
            one = IngestBatch()
            _add_score(one, group, kept)
        except (ValueError, InvalidInput) as exc:
            tree.fail(where, f"no score: {_why(exc)}", "malformed-run")
            continue
        if not one.observations and kept:
            why = f"no score: none of its {len(kept)} runs succeeded (their failures are kept)"
            tree.skip(where, why, "no-score")
        _merge(batch, one)
    return batch


def _changed_scores(
    store: Store, batch: IngestBatch, replace: bool = False, batch_size: int = DEFAULT_BATCH
) -> list[Issue]:
    """The scores the store holds at another value than the files give (a round re-imported
    with more result files), each said (``reconcile_figures``; both readings are this
    importer's own olympic means, so any difference counts): the stored figure stays, or with
    ``replace`` every changed figure of the batch (a score's accelerator-hours with it) is
    replaced."""
    changed, replaced = reconcile_figures(
        store, batch.observations, exact=True, replace=replace, batch_size=batch_size
    )
    return [
        Issue(
            obs.provenance.details.get("file", obs.source_key or ""),
            f"score held at {stored:.4g} min; the files now give {obs.value:.4g} "
            f"(runs {obs.provenance.details.get('runs', '?')}): "
            f"{kept_or_replaced(replaced, 'score')}",
            "replaced" if replaced else "skipped",
            "replaced-score" if replaced else "changed-score",
        )
        for obs, stored in changed
        if obs.metric == "time_to_train_min"
    ]


def _why(exc: Exception) -> str:
    """An error in one line per field (a record's validation names each field and why)."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}".removeprefix(": ")
            for e in exc.errors()
        )
    return str(exc)


def _merge(batch: IngestBatch, part: IngestBatch) -> None:
    batch.runs.extend(part.runs)
    batch.observations.extend(part.observations)
    batch.failures.extend(part.failures)


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
    replaced: int = 0  # stored scores the files corrected (``replace_changed``)
    # results per benchmark the catalogue does not know, imported under the published name
    unresolved_benchmarks: dict[str, int] = field(default_factory=dict)
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
            "replaced": self.replaced,
            "unresolved_benchmarks": self.unresolved_benchmarks,
            "failures_new": self.failures_new,
            "issues": issue_dicts(self.issues),
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
    replace_changed: bool = False,
) -> TrainingImportSummary:
    """Read one Training results tree and write it to ``store``; idempotent (``replace_changed``:
    a score the files now give otherwise replaces the stored one, ``_changed_scores``)."""
    started = time.perf_counter()
    tree = read_training_tree(path, round_name=round_name)
    batch = to_batch(tree)
    # Runs and failures first (small), then observations in batches.
    head = store.ingest(IngestBatch(runs=batch.runs, failures=batch.failures))
    new, received = ingest_counted(store, batch.observations, batch_size, progress)
    if received > new:  # a re-import: what the store held already may read otherwise now
        tree.issues.extend(_changed_scores(store, batch, replace_changed, batch_size))
    return TrainingImportSummary(
        path=str(path),
        round=tree.round,
        files_seen=tree.files_seen,
        runs=len(batch.runs),  # the runs written (a malformed system's are reported instead)
        failed_runs=len(batch.failures),
        scores=sum(1 for o in batch.observations if o.metric == "time_to_train_min"),
        imported=new,
        already_present=received - new,
        failures_new=head.failures_new,
        issues=tree.issues,
        seconds=time.perf_counter() - started,
        replaced=sum(1 for i in tree.issues if i.outcome == "replaced"),
        unresolved_benchmarks=unresolved_benchmarks(
            o for o in batch.observations if o.metric == "time_to_train_min"
        ),
    )
