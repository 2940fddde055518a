"""Import published MLPerf Inference results (a results tree as MLCommons publishes it).

Layout read (a directory, or a ``.tar.gz`` of one, read in place with ``tarfile``)::

    [<round dir>/]<division>/<submitter>/systems/<system_id>.json
    [<round dir>/]<division>/<submitter>/results/<system_id>/<benchmark>/<scenario>/
        performance/run_1/mlperf_log_summary.txt

Compliance runs (``compliance/.../TEST0x``) and accuracy runs are not results and are ignored.
A summary whose ``Scenario`` line disagrees with its directory (submitters copy a SingleStream
run into ``offline/`` or ``multistream/`` where the rules let them infer that scenario) is not a
measurement of that scenario and is skipped with the reason. Every other file that does not fit
is reported with its path and reason; the import goes on.

One record per (round, division, submitter, system, benchmark, scenario), with the headline
metric of the scenario: Offline samples/s (tokens/s for LLMs), Server scheduled or completed
samples/s (whichever the LoadGen version reports as the result), SingleStream p90 latency (the
early-stopping estimate where present), MultiStream p99 latency. LLM runs also carry their time to
first token and time per output token figures (mean and percentiles, ms), one observation each.

A scenario that LoadGen runs in another mode (``Interactive``: Server with tighter latency
bounds, so its summary says ``Scenario : Server``) is a result of its own under its directory's
name. INVALID results are kept, marked invalid (rankings leave them out). Summaries are read by
the one LoadGen parser, ``stack_advisor.collectors.importers.loadgen_summary``; lines and system
keys it does not know are ignored, never an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stack_advisor.catalog.editions import resolve_in_context
from stack_advisor.catalog.stack_text import (
    benchmark_stack,
    implementation_of,
    system_components,
)
from stack_advisor.collectors.importers.mlperf_common import (
    DEFAULT_BATCH,
    Issue,
    cpu_accelerator,
    detect_round,
    inference_stack,
    ingest_counted,
    ingest_observations,
    issue_dicts,
    kept_or_replaced,
    metric_facts,
    reconcile_figures,
    unresolved_benchmarks,
)
from stack_advisor.collectors.importers.mlperf_inference_tree import (
    ATTRIBUTION,
    FAMILY,
    NOT_RESULTS,
    SOURCE,
    SYSTEM_NAME_FIELDS,
    MlperfRecord,
    ParsedTree,
    SystemInfo,
    TreeFile,
    expand_sources,
    read_tree,
)
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store

__all__ = [
    "ATTRIBUTION",
    "DEFAULT_BATCH",
    "FAMILY",
    "NOT_RESULTS",
    "SOURCE",
    "SYSTEM_NAME_FIELDS",
    "ImportSummary",
    "Issue",
    "MlperfRecord",
    "ParsedTree",
    "SystemContext",
    "SystemInfo",
    "TreeFile",
    "detect_round",
    "expand_sources",
    "import_mlperf",
    "ingest_observations",
    "metric_facts",
    "read_tree",
    "to_observation",
    "to_observations",
]

# ---- observations ----------------------------------------------------------------------------


SystemContext = tuple[SoftwareStack, Accelerator, Placement, Host]


def _extra(components: dict[str, str], system_id: str) -> dict[str, str]:
    """The stack's extra components: those the texts name, and the implementation where the
    system folder says the MLCommons reference code ran (its software class, whatever the
    framework)."""
    out = system_components(components)
    implementation = implementation_of(system_id)
    if implementation:
        out["implementation"] = implementation
    return out


def _system_context(record: MlperfRecord) -> SystemContext:
    raw_parts = [
        f"framework: {record.framework}" if record.framework else "",
        f"other_software_stack: {record.software_stack}" if record.software_stack else "",
    ]
    stack = inference_stack(
        record.components,
        (record.framework_name, record.framework_version),
        _extra(record.components, record.system_id),
        " | ".join(p for p in raw_parts if p) or None,
    )
    accelerator, placement = _accelerator_placement(record)
    labels = {"system_name": record.system_name, "system_type": record.system_type or ""}
    host = Host(
        name=f"mlperf:{record.submitter}/{record.system_id}",
        cpu_model=record.host_cpu or None,
        os=record.operating_system,
        labels={k: v for k, v in labels.items() if v},
    )
    return stack, accelerator, placement, host


def _accelerator_placement(record: MlperfRecord) -> tuple[Accelerator, Placement]:
    """The record's accelerator, resolved through the catalogue (the published text stays in
    the provenance), and its placement, which the accelerator's name can sharpen."""
    kind, basis = record.placement, record.placement_basis
    evidence = list(record.placement_evidence)
    vgpu_profile = record.vgpu_profile
    if record.accelerator:
        match = resolve_in_context(record.accelerator, record.system_name, record.system_id)
        accelerator = Accelerator(
            model=match.key,
            vendor=match.vendor,
            count=record.accelerator_count,
            memory_mib=record.accelerator_memory_mib,
        )
        # The accelerator's name can say more of the placement than the rest of the description
        # ("Virtualized NVIDIA H200-SXM-141GB", a vGPU profile such as "NVIDIA H100-80C").
        if match.placement == "vgpu" and kind is not PlacementKind.VGPU:
            kind, basis = PlacementKind.VGPU, "accelerator-name"
            vgpu_profile = vgpu_profile or match.vgpu_profile
            evidence.append(f"accelerator_model_name: {record.accelerator}")
        elif match.placement == "vm" and kind is PlacementKind.BARE_METAL:
            kind, basis = PlacementKind.UNKNOWN, "accelerator-name"
            evidence.append(f"accelerator_model_name: {record.accelerator} (a VM; mode not stated)")
    else:
        sockets = (record.host_processors_per_node or 1) * record.nodes
        accelerator = cpu_accelerator(record.host_cpu, sockets)
    placement = Placement(
        kind=kind,
        hypervisor=record.hypervisor,
        vgpu_profile=vgpu_profile,
        evidence=[f"basis: {basis}", *evidence],
    )
    return accelerator, placement


def to_observations(
    record: MlperfRecord, cache: dict[str, SystemContext] | None = None
) -> list[Observation]:
    """The headline observation of one record, then one per TTFT/TPOT figure it carries (LLM
    runs), each with the summary line it was read from."""
    headline = to_observation(record, cache)
    out = [headline]
    for metric, value, line in record.latency_metrics:
        unit, higher = metric_facts(metric)
        details = {**headline.provenance.details, "metric_source": line}
        out.append(
            headline.model_copy(
                update={
                    "metric": metric,
                    "value": value,
                    "unit": unit,
                    "higher_is_better": higher,
                    "provenance": headline.provenance.model_copy(update={"details": details}),
                }
            )
        )
    return out


def to_observation(
    record: MlperfRecord, cache: dict[str, SystemContext] | None = None
) -> Observation:
    """The store's view of one record, with the conventions other modules rely on.

    ``cache`` (one dict for a whole import) shares the stack/accelerator/placement/host objects
    of one system between its results instead of building them again for each."""
    if cache is None:
        stack, accelerator, placement, host = _system_context(record)
    else:
        context = cache.get(record.source_key)
        if context is None:
            context = cache[record.source_key] = _system_context(record)
        stack, accelerator, placement, host = context
    # one system lists every runtime it used: the one that ran this benchmark, as published
    stack = benchmark_stack(
        stack,
        record.framework,
        record.benchmark,
        division=record.division,
        submitter=record.submitter,
        vendor=accelerator.vendor,
        round_name=record.round,
    )
    details = _details(record, placement)
    unit, higher = metric_facts(record.metric)
    return Observation(
        benchmark=Benchmark(
            family=FAMILY,
            name=record.benchmark,
            parameters={"scenario": record.scenario, "division": record.division},
        ),
        metric=record.metric,
        value=record.value,
        unit=unit,
        higher_is_better=higher,
        valid=record.valid,
        note=None if record.valid else "LoadGen reported the run INVALID",
        timestamp=datetime.fromtimestamp(record.mtime, tz=UTC),
        stack=stack,
        accelerator=accelerator,
        placement=placement,
        host=host,
        provenance=Provenance(
            kind=SourceKind.PUBLISHED,
            source=SOURCE,
            url=f"https://github.com/mlcommons/inference_results_{record.round}",
            details=details,
        ),
        source_key=record.source_key,
    )


def _details(record: MlperfRecord, placement: Placement) -> dict[str, str]:
    """The provenance details of one record: where it was published and what it said."""
    details = {
        "round": record.round,
        "division": record.division,
        "submitter": record.submitter,
        "system_id": record.system_id,
        "system_name": record.system_name,
        "file": record.source_path,
        "system_file": record.system_path,
        "metric_source": record.metric_source,
        "benchmark_raw": record.benchmark_raw,
        "accelerator_raw": record.accelerator or f"CPU {record.host_cpu}",
        "accelerators_per_node": record.accelerators_per_node,
        "nodes": str(record.nodes),
        "placement_basis": placement.evidence[0].removeprefix("basis: "),
        "license": "Apache-2.0",
        "attribution": "MLCommons MLPerf Inference " + record.round,
    }
    if record.cloud_provider:
        details["cloud_provider"] = record.cloud_provider
    if record.version_conflicts:
        details["version_conflicts"] = "; ".join(record.version_conflicts)
    return details


# ---- import into a store ---------------------------------------------------------------------


@dataclass
class ImportSummary:
    path: str
    round: str
    files_seen: int
    results_found: int
    imported: int  # new observations written
    already_present: int  # observations the store held already (re-import)
    skipped: int
    failed: int
    ignored: int
    skipped_by_reason: dict[str, int]
    issues: list[Issue]
    seconds: float = 0.0
    replaced: int = 0  # stored figures the files corrected (``replace_changed``)
    # results per benchmark the catalogue does not know, imported under the published name
    unresolved_benchmarks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "round": self.round,
            "files_seen": self.files_seen,
            "results_found": self.results_found,
            "imported": self.imported,
            "already_present": self.already_present,
            "replaced": self.replaced,
            "unresolved_benchmarks": self.unresolved_benchmarks,
            "skipped": self.skipped,
            "failed": self.failed,
            "ignored": self.ignored,
            "skipped_by_reason": self.skipped_by_reason,
            "issues": issue_dicts(self.issues),
            "seconds": round(self.seconds, 3),
        }


def _observations(tree: ParsedTree) -> list[Observation]:
    """The observations of every record; a record that cannot be one is a failed issue."""
    observations: list[Observation] = []
    cache: dict[str, SystemContext] = {}
    for record in tree.records:
        try:
            observations.extend(to_observations(record, cache))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            why = f"cannot build an observation: {exc}"
            tree.fail(record.source_path, why, "invalid-value")
    return observations


def import_mlperf(
    path: str | os.PathLike[str],
    store: Store,
    *,
    round_name: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
    replace_changed: bool = False,
) -> ImportSummary:
    """Read one results tree and write its records to ``store``; idempotent. A result the
    store holds at another figure than the files now give keeps the stored one, said in an
    issue (``changed-value``), or with ``replace_changed`` takes the files' (``replaced-value``).

    ``progress(done, total)`` is called after each batch.
    """
    started = time.perf_counter()
    tree = read_tree(path, round_name=round_name)
    observations = _observations(tree)
    if progress:
        progress(0, len(observations))
    new, received = ingest_counted(store, observations, batch_size, progress)
    if received > new:  # a re-import: what the store held already may read otherwise now
        changed, replaced = reconcile_figures(
            store, observations, replace=replace_changed, batch_size=batch_size
        )
        for obs, stored in changed:  # a kept figure is the files' skipped, a replaced one not
            scenario = obs.benchmark.parameters.get("scenario") or ""
            tree.issues.append(
                Issue(
                    obs.provenance.details.get("file") or obs.source_key or "",
                    f"{obs.benchmark.name} {scenario} {obs.metric} held at {stored:.6g}; the "
                    f"files now give {obs.value:.6g}: {kept_or_replaced(replaced)}",
                    "replaced" if replaced else "skipped",
                    "replaced-value" if replaced else "changed-value",
                )
            )
    by_reason: dict[str, int] = {}
    for issue in tree.skipped:
        key = issue.category
        by_reason[key] = by_reason.get(key, 0) + 1
    return ImportSummary(
        path=str(path),
        round=tree.round,
        files_seen=tree.files_seen,
        results_found=len(tree.records),
        imported=new,
        already_present=received - new,
        skipped=len(tree.skipped),
        failed=len(tree.failed),
        ignored=tree.ignored,
        skipped_by_reason=by_reason,
        issues=tree.issues,
        seconds=time.perf_counter() - started,
        replaced=len(tree.replaced),
        unresolved_benchmarks=unresolved_benchmarks(observations),
    )
