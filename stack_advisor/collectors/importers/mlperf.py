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
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stack_advisor.catalog import (
    load_catalog,
    named_scenario,
    resolve_benchmark,
    resolve_cpu,
    resolve_metric,
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
from stack_advisor.collectors.importers.archive_stream import MemberBudget
from stack_advisor.collectors.importers.limits import ImportLimitExceeded, ImportLimits, load_json
from stack_advisor.collectors.importers.loadgen_summary import (
    parse_summary,
    published_headline,
    token_latency_metrics,
)
from stack_advisor.collectors.importers.mlperf_system import accelerators as _accelerators
from stack_advisor.collectors.importers.mlperf_system import flat_text as _text
from stack_advisor.collectors.importers.mlperf_system import memory_mib as _memory_mib
from stack_advisor.collectors.importers.mlperf_system import whole_number as _int
from stack_advisor.collectors.importers.row_checks import (
    RowRejected,
    check_plausible,
    name_text,
    result_number,
)
from stack_advisor.collectors.importers.tar_reader import ArchiveTruncated, iter_archive
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Host,
    IngestBatch,
    Observation,
    Placement,
    PlacementKind,
    Provenance,
    SoftwareStack,
    SourceKind,
)
from stack_advisor.store.base import Store

SOURCE = "mlperf-inference"
FAMILY = "mlperf-inference"
# Directories that hold runs other than the reported performance run: never results.
NOT_RESULTS = {"compliance", "accuracy", "ranging", "power"}
ATTRIBUTION = (
    "MLPerf(R) Inference results from MLCommons (https://mlcommons.org), used under the MLCommons "
    "results-use guidelines; round, submitter and system id are kept on every observation."
)
_ROUND = re.compile(r"v(\d+\.\d+)")


# Fields of a system description read as names: a list or an object there is refused.
SYSTEM_NAME_FIELDS = ("accelerator_model_name", "system_name", "host_processor_model_name")
EXTRA_COMPONENTS = ("dali", "triton", "jetpack", "rocm", "gcc")


def metric_facts(metric: str) -> tuple[str, bool]:
    """(unit, higher is better) of a metric, from the catalogue.

    Raises:
        InvalidInput: the catalogue does not know the metric (with the closest names).
    """
    entry = load_catalog().metrics[resolve_metric(metric).require("metric")]
    return entry.unit, entry.higher_is_better


# ---- reading a tree --------------------------------------------------------------------------


@dataclass
class TreeFile:
    path: str  # relative to the results root, e.g. closed/NVIDIA/systems/X.json
    data: bytes
    mtime: float


@dataclass
class Issue:
    path: str
    reason: str
    outcome: str  # "skipped" | "failed"
    category: str = "other"  # short name to group issues by


def _relevant(parts: list[str]) -> bool:
    if NOT_RESULTS.intersection(parts):
        return False
    name = parts[-1]
    return ("systems" in parts and name.endswith(".json")) or (
        "results" in parts and name == "mlperf_log_summary.txt"
    )


def _iter_files(
    root: Path, on_skipped: Callable[[str, str], None], limits: ImportLimits
) -> Iterator[tuple[str, TreeFile | None]]:
    """(relative path, file) for every file under a directory or in a .tar(.gz), within
    ``limits``; the file is None for those an importer never reads (compliance, accuracy, logs),
    and links (never followed) go to ``on_skipped``."""
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
                    continue
                if not _relevant(rel.split("/")):
                    yield rel, None
                    continue
                budget.reading(rel, full.stat().st_size)
                yield rel, TreeFile(rel, full.read_bytes(), full.stat().st_mtime)
        return
    archive = iter_archive(
        root,
        wanted=lambda name: _relevant(name.removeprefix("./").split("/")),
        limits=limits,
        on_skipped=lambda name, why: on_skipped(name.removeprefix("./"), why),
    )
    for name, content, mtime in archive:
        rel = name.removeprefix("./")
        yield rel, None if content is None else TreeFile(rel, content, mtime)


DIVISIONS = ("closed", "open", "network")


def expand_sources(path: str | os.PathLike[str]) -> list[Path]:
    """The results trees a path names: itself when it is an archive or a round directory
    (``closed/``, ``open/``, ``network/`` inside); else the round directories and archives
    directly inside it (e.g. a folder of ``inference_v*.tar.gz``), sorted; else itself, so that
    reading it reports what is wrong."""
    root = Path(path)
    if not root.is_dir() or any((root / d).is_dir() for d in DIVISIONS):
        return [root]
    found = sorted(
        child
        for child in root.iterdir()
        if (child.is_file() and child.name.endswith((".tar.gz", ".tgz", ".tar")))
        or (child.is_dir() and any((child / d).is_dir() for d in DIVISIONS))
    )
    return found or [root]


def detect_round(path: Path, first_parts: Iterable[str] = ()) -> str | None:
    """``v3.0`` from a name such as ``inference_v3.0.tar.gz`` or ``inference_results_v3.0``."""
    for text in (*first_parts, path.name, path.resolve().name):
        match = _ROUND.search(text)
        if match:
            return "v" + match.group(1)
    return None


# ---- records ---------------------------------------------------------------------------------


@dataclass
class SystemInfo:
    division: str
    submitter: str
    system_id: str
    path: str
    fields: dict[str, Any]


@dataclass
class MlperfRecord:
    """One published result, flat: what the reference CSV tabulates, plus what we derive."""

    round: str
    division: str
    submitter: str
    system_id: str
    system_name: str
    accelerator: str  # "" for CPU-only systems
    accelerators_per_node: str
    accelerator_count: int
    nodes: int
    host_cpu: str
    framework: str
    software_stack: str
    components: dict[str, str]
    version_conflicts: list[str]
    framework_name: str | None
    framework_version: str | None
    placement: PlacementKind
    placement_basis: str
    placement_evidence: list[str]
    hypervisor: str | None
    vgpu_profile: str | None
    cloud_provider: str | None
    benchmark: str
    benchmark_raw: str
    scenario: str
    metric: str
    value: float
    valid: bool
    metric_source: str
    source_path: str
    system_path: str
    mtime: float
    host_processors_per_node: int | None = None
    operating_system: str | None = None
    system_type: str | None = None
    accelerator_memory_mib: int | None = None
    host_cores: int | None = None
    # (metric, value in ms, source line): TTFT/TPOT figures of LLM runs
    latency_metrics: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def source_key(self) -> str:
        return f"{self.round}/{self.division}/{self.submitter}/{self.system_id}"


def _system_record_fields(system: SystemInfo) -> dict[str, Any]:
    """Everything a record needs from one system description (computed once per system)."""
    f = system.fields
    model, per_node_text, count, nodes = _accelerators(f)
    framework_text = _text(f.get("framework"))
    stack_text = _text(f.get("other_software_stack"))
    parsed = merge_stack_texts(f.get("framework"), f.get("other_software_stack"))
    fw_name, fw_version = parse_framework(f.get("framework"))
    evidence_fields: dict[str, Any] = {"system_id": system.system_id}
    evidence_fields.update({k: v for k, v in f.items() if isinstance(v, (str, list, dict))})
    placement = classify_placement(evidence_fields, has_accelerator=bool(model))
    return dict(
        system_name=_text(f.get("system_name")),
        accelerator=model,
        accelerators_per_node=per_node_text,
        accelerator_count=count,
        nodes=nodes,
        host_cpu=_text(f.get("host_processor_model_name")),
        framework=framework_text,
        software_stack=stack_text,
        components=parsed.components,
        version_conflicts=parsed.conflicts,
        framework_name=fw_name,
        framework_version=fw_version,
        placement=placement.kind,
        placement_basis=placement.basis,
        placement_evidence=placement.evidence,
        hypervisor=placement.hypervisor,
        vgpu_profile=placement.vgpu_profile,
        cloud_provider=placement.cloud_provider,
        system_path=system.path,
        host_processors_per_node=_int(f.get("host_processors_per_node")),
        operating_system=_text(f.get("operating_system")) or None,
        system_type=_text(f.get("system_type")) or None,
        accelerator_memory_mib=_memory_mib(f.get("accelerator_memory_capacity")),
        host_cores=_int(f.get("host_processor_core_count")),
    )


@dataclass
class ParsedTree:
    round: str
    records: list[MlperfRecord] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    files_seen: int = 0
    ignored: int = 0  # compliance, accuracy and other files an importer never reads

    @property
    def skipped(self) -> list[Issue]:
        return [i for i in self.issues if i.outcome == "skipped"]

    @property
    def failed(self) -> list[Issue]:
        return [i for i in self.issues if i.outcome == "failed"]


def _split(rel: str, marker: str) -> tuple[list[str], list[str]] | None:
    """(prefix, rest) around ``<division>/<submitter>/<marker>``; None if the marker is absent."""
    parts = rel.split("/")
    for i in range(2, len(parts)):
        if parts[i] == marker:
            return parts[: i - 2], parts[i - 2 :]
    return None


_TRAINING_RESULT = re.compile(r"result_\d+\.txt")


def _sort_file(
    tree: ParsedTree,
    rel: str,
    item: TreeFile | None,
    systems_raw: dict[str, TreeFile],
    results_raw: list[TreeFile],
    prefixes: set[str],
) -> None:
    tree.files_seen += 1
    if item is None:
        tree.ignored += 1
        return
    marker = "systems" if "systems" in rel.split("/") and rel.endswith(".json") else "results"
    split = _split(rel, marker)
    if split is None:
        tree.issues.append(
            Issue(
                rel, f"not under <division>/<submitter>/{marker}/", "skipped", "unexpected-layout"
            )
        )
        return
    prefix, rest = split
    prefixes.add("/".join(prefix))
    item.path = "/".join(rest)
    if marker == "systems":
        if len(rest) != 4:
            tree.issues.append(
                Issue(
                    rel,
                    "unexpected layout: expected <division>/<submitter>/systems/<system_id>.json",
                    "skipped",
                    "unexpected-layout",
                )
            )
            return
        systems_raw[item.path] = item
    else:
        results_raw.append(item)


def read_tree(
    path: str | os.PathLike[str],
    *,
    round_name: str | None = None,
    limits: ImportLimits | None = None,
) -> ParsedTree:
    """Parse an MLPerf Inference results tree into records, reporting what does not fit.

    Raises:
        InvalidInput: the path does not exist or is not a tree/archive; the round cannot be
            told from its name and none was given.
        ImportLimitExceeded: the tree or archive is over a limit (default: from the environment).
    """
    root = Path(path)
    if not root.exists():
        raise InvalidInput(f"no such results tree: {str(root)!r} (give a directory or a .tar.gz)")
    systems_raw: dict[str, TreeFile] = {}
    results_raw: list[TreeFile] = []
    prefixes: set[str] = set()
    tree = ParsedTree(round="")
    training_logs = 0  # an MLPerf Training round's files: the wrong importer
    limits = limits or ImportLimits.from_env()

    def link(rel: str, why: str) -> None:
        tree.issues.append(Issue(rel, why, "skipped", "link"))

    try:
        for rel, item in _iter_files(root, link, limits):
            _sort_file(tree, rel, item, systems_raw, results_raw, prefixes)
            training_logs += bool(_TRAINING_RESULT.fullmatch(rel.rsplit("/", 1)[-1]))
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
        why = f" ({tree.issues[0].reason})" if tree.issues else ""
        raise InvalidInput(
            f"{str(root)!r} holds no readable files: not an MLPerf results tree or archive{why}"
        )
    if not results_raw and training_logs:
        raise InvalidInput(
            f"{str(root)!r} is an MLPerf Training round ({training_logs} result_<N>.txt files, no "
            "Inference mlperf_log_summary.txt): import it with `advisor import mlperf-training`"
        )

    tree.round = round_name or detect_round(root, sorted(prefixes)) or ""
    if not tree.round:
        raise InvalidInput(
            f"cannot tell the MLPerf round of {str(root)!r} from its name; pass --round (e.g. v3.0)"
        )
    if not _ROUND.fullmatch(tree.round):
        raise InvalidInput(f"round must look like v3.0, got {tree.round!r}")

    systems: dict[tuple[str, str, str], dict[str, Any] | Exception] = {}
    for rel, item in sorted(systems_raw.items()):
        division, submitter, _, name = rel.split("/")
        system = SystemInfo(division, submitter, name[: -len(".json")], rel, {})
        try:
            loaded = load_json(item.data, rel, limits)
            if not isinstance(loaded, dict):
                raise ValueError(f"top level is a {type(loaded).__name__}, not an object")
            for name in SYSTEM_NAME_FIELDS:
                name_text(loaded.get(name), name)
            system.fields = loaded
            systems[(division, submitter, system.system_id)] = _system_record_fields(system)
        except (ValueError, ImportLimitExceeded) as exc:
            systems[(division, submitter, system.system_id)] = exc
            tree.issues.append(
                Issue(rel, f"malformed system description: {exc}", "failed", "malformed-system")
            )

    seen: set[tuple[str, ...]] = set()
    for item in sorted(results_raw, key=lambda f: f.path):
        record = _record(tree, item, systems)
        if record is None:
            continue
        identity = (
            record.division,
            record.submitter,
            record.system_id,
            record.benchmark,
            record.scenario,
        )
        if identity in seen:
            tree.issues.append(
                Issue(
                    item.path,
                    "a second result for the same system, benchmark and scenario",
                    "skipped",
                    "duplicate",
                )
            )
            continue
        seen.add(identity)
        tree.records.append(record)
    return tree


def _record(
    tree: ParsedTree,
    item: TreeFile,
    systems: dict[tuple[str, str, str], dict[str, Any] | Exception],
) -> MlperfRecord | None:
    parts = item.path.split("/")
    # division/submitter/results/system/benchmark/scenario/performance/run_1/mlperf_log_summary.txt
    if len(parts) != 9 or parts[6] != "performance" or not parts[7].startswith("run_"):
        tree.issues.append(
            Issue(
                item.path,
                "unexpected layout: expected "
                "results/<system>/<benchmark>/<scenario>/performance/run_1/mlperf_log_summary.txt",
                "skipped",
                "unexpected-layout",
            )
        )
        return None
    if parts[7] != "run_1":
        tree.issues.append(
            Issue(item.path, f"{parts[7]} is not the reported run (run_1)", "skipped", "not-run_1")
        )
        return None
    division, submitter, _, system_id, benchmark_raw, scenario_dir = parts[:6]
    try:
        text = item.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        tree.issues.append(
            Issue(item.path, f"not UTF-8 text: {exc}", "failed", "malformed-summary")
        )
        return None
    try:
        summary = parse_summary(text)
    except InvalidInput as exc:
        tree.issues.append(
            Issue(item.path, f"malformed LoadGen summary: {exc}", "failed", "malformed-summary")
        )
        return None
    loadgen_scenario = summary["scenario"]
    # the catalogue's scenarios; a directory names one (Interactive: a Server run, v5.0+)
    match = resolve_scenario(scenario_dir)
    directory_scenario = match.id if match.resolved else None
    if directory_scenario is None:
        known = ", ".join(sorted(load_catalog().scenarios))
        tree.issues.append(
            Issue(
                item.path,
                f"scenario directory {scenario_dir!r} is not a known scenario ({known})",
                "failed",
                "unknown-scenario",
            )
        )
        return None
    bench = resolve_benchmark(benchmark_raw, FAMILY)
    if load_catalog().scenarios[directory_scenario].loadgen_mode == loadgen_scenario:
        # A scenario LoadGen runs in another mode (Interactive: Server with tighter latency
        # bounds) is a result of its own under its directory's name, or under the benchmark's
        # (v5.0: llama2-70b-interactive-99/Server)
        scenario = named_scenario(bench, directory_scenario)
    else:
        tree.issues.append(
            Issue(
                item.path,
                f"summary says Scenario {loadgen_scenario} but the directory says {scenario_dir} "
                "(a result inferred from another scenario, not a run of its own)",
                "skipped",
                "inferred-scenario",
            )
        )
        return None
    if summary.get("mode", "PerformanceOnly") != "PerformanceOnly":
        tree.issues.append(
            Issue(
                item.path,
                f"mode {summary['mode']!r} is not a performance run",
                "skipped",
                "not-performance",
            )
        )
        return None
    try:
        headline = published_headline(summary)
    except InvalidInput as exc:
        tree.issues.append(
            Issue(item.path, f"malformed LoadGen summary: {exc}", "failed", "malformed-summary")
        )
        return None
    system = systems.get((division, submitter, system_id))
    if system is None:
        tree.issues.append(
            Issue(
                item.path,
                f"no system description {division}/{submitter}/systems/{system_id}.json",
                "failed",
                "missing-system",
            )
        )
        return None
    if isinstance(system, Exception):
        tree.issues.append(
            Issue(
                item.path,
                f"its system description is malformed: {system}",
                "failed",
                "malformed-system",
            )
        )
        return None
    try:
        _check_result(headline.metric, headline.value, system)
    except RowRejected as exc:
        tree.issues.append(Issue(item.path, str(exc), "failed", "implausible-value"))
        return None
    return MlperfRecord(
        round=tree.round,
        division=division,
        submitter=submitter,
        system_id=system_id,
        benchmark=bench.id,
        benchmark_raw=benchmark_raw,
        scenario=scenario,
        metric=headline.metric,
        value=headline.value,
        valid=headline.valid,
        metric_source=headline.source_line,
        latency_metrics=token_latency_metrics(summary),
        source_path=item.path,
        mtime=item.mtime,
        **system,
    )


def _check_result(metric: str, value: float, system: dict[str, Any]) -> None:
    """A headline must be finite, positive and plausible for its unit and accelerators."""
    number = result_number(value, metric)
    check_plausible(metric, metric_facts(metric)[0], number, int(system["accelerator_count"]))


# ---- observations ----------------------------------------------------------------------------


SystemContext = tuple[SoftwareStack, Accelerator, Placement, Host]


def _extra(components: dict[str, str], system_id: str) -> dict[str, str]:
    """The stack's extra components: those the texts name, and the implementation where the
    system folder says the MLCommons reference code ran (its software class, whatever the
    framework)."""
    out = {k: v for k, v in components.items() if k in EXTRA_COMPONENTS}
    implementation = implementation_of(system_id)
    if implementation:
        out["implementation"] = implementation
    return out


def _system_context(record: MlperfRecord) -> SystemContext:
    c = record.components
    raw_parts = [
        f"framework: {record.framework}" if record.framework else "",
        f"other_software_stack: {record.software_stack}" if record.software_stack else "",
    ]
    stack = SoftwareStack(
        driver=c.get("driver"),
        cuda=c.get("cuda"),
        cudnn=c.get("cudnn"),
        nccl=c.get("nccl"),
        tensorrt=c.get("tensorrt"),
        python=c.get("python"),
        framework=record.framework_name,
        framework_version=record.framework_version,
        extra=_extra(c, record.system_id),
        raw=" | ".join(p for p in raw_parts if p) or None,
    )
    # Names resolve through the catalogue; the published text stays in the provenance.
    kind, basis, evidence = (
        record.placement,
        record.placement_basis,
        list(record.placement_evidence),
    )
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
        cpu = resolve_cpu(record.host_cpu) if record.host_cpu else None
        accelerator = Accelerator(
            model="CPU " + (cpu.id if cpu else "unknown"), vendor="cpu", count=sockets
        )
    placement = Placement(
        kind=kind,
        hypervisor=record.hypervisor,
        vgpu_profile=vgpu_profile,
        evidence=[f"basis: {basis}", *evidence],
    )
    labels = {"system_name": record.system_name, "system_type": record.system_type or ""}
    host = Host(
        name=f"mlperf:{record.submitter}/{record.system_id}",
        cpu_model=record.host_cpu or None,
        os=record.operating_system,
        labels={k: v for k, v in labels.items() if v},
    )
    return stack, accelerator, placement, host


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
    )
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "round": self.round,
            "files_seen": self.files_seen,
            "results_found": self.results_found,
            "imported": self.imported,
            "already_present": self.already_present,
            "skipped": self.skipped,
            "failed": self.failed,
            "ignored": self.ignored,
            "skipped_by_reason": self.skipped_by_reason,
            "issues": [
                {"path": i.path, "outcome": i.outcome, "category": i.category, "reason": i.reason}
                for i in self.issues
            ],
            "seconds": round(self.seconds, 3),
        }


DEFAULT_BATCH = 2000


def _batches(observations: list[Observation], batch_size: int) -> Iterator[IngestBatch]:
    """Batches of at most ``batch_size`` items, an observation's ``stack.extra`` entries counted
    as the API's batch cap counts them (so a batch sent to a REST store is never refused)."""
    start = weight = 0
    for end, observation in enumerate(observations):
        cost = 1 + len(observation.stack.extra) if observation.stack else 1
        if weight and weight + cost > batch_size:
            yield IngestBatch(observations=observations[start:end])
            start, weight = end, 0
        weight += cost
    if start < len(observations):
        yield IngestBatch(observations=observations[start:])


def ingest_observations(
    store: Store,
    observations: list[Observation],
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Ingest in batches (one transaction each; the next one prepared while the store writes
    the one before, see ``Store.ingest_many``). Returns (new, received)."""
    new = received = 0
    for result in store.ingest_many(_batches(observations, batch_size)):
        new += result.observations_new
        received += result.observations_received
        if progress:
            progress(result.observations_received)
    return new, received


def import_mlperf(
    path: str | os.PathLike[str],
    store: Store,
    *,
    round_name: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Read one results tree and write its records to ``store``; idempotent.

    ``progress(done, total)`` is called after each batch.
    """
    import time

    started = time.perf_counter()
    tree = read_tree(path, round_name=round_name)
    observations: list[Observation] = []
    cache: dict[str, SystemContext] = {}
    for record in tree.records:
        try:
            observations.extend(to_observations(record, cache))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            tree.issues.append(
                Issue(
                    record.source_path,
                    f"cannot build an observation: {exc}",
                    "failed",
                    "invalid-value",
                )
            )
    total = len(observations)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    if progress:
        progress(0, total)
    new, received = ingest_observations(store, observations, batch_size=batch_size, progress=step)
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
    )
