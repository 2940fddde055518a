"""Read an MLPerf Inference results tree into flat records (one per published result), each
file that does not fit reported with its path and reason. ``mlperf`` turns the records into
observations; see its docstring for the layout and the conventions."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stack_advisor.catalog import load_catalog, named_scenario, resolve_benchmark, resolve_scenario
from stack_advisor.catalog.stack_text import classify_placement, merge_stack_texts, parse_framework
from stack_advisor.collectors.importers.limits import ImportLimitExceeded, ImportLimits
from stack_advisor.collectors.importers.loadgen_summary import (
    parse_summary,
    published_headline,
    token_latency_metrics,
)
from stack_advisor.collectors.importers.mlperf_common import (
    Issue,
    checked_round,
    detect_round,
    iter_tree_files,
    load_system,
    metric_facts,
    truncated_issue,
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
from stack_advisor.collectors.importers.tar_reader import ArchiveTruncated
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind

SOURCE = "mlperf-inference"
FAMILY = "mlperf-inference"
# Directories that hold runs other than the reported performance run: never results.
NOT_RESULTS = {"compliance", "accuracy", "ranging", "power"}
ATTRIBUTION = (
    "MLPerf(R) Inference results from MLCommons (https://mlcommons.org), used under the MLCommons "
    "results-use guidelines; round, submitter and system id are kept on every observation."
)
# Fields of a system description read as names: a list or an object there is refused.
SYSTEM_NAME_FIELDS = ("accelerator_model_name", "system_name", "host_processor_model_name")
DIVISIONS = ("closed", "open", "network")
_TRAINING_RESULT = re.compile(r"result_\d+\.txt")
_SUMMARY_LAYOUT = (
    "unexpected layout: expected "
    "results/<system>/<benchmark>/<scenario>/performance/run_1/mlperf_log_summary.txt"
)

SystemFields = dict[tuple[str, str, str], dict[str, Any] | Exception]


# ---- reading a tree --------------------------------------------------------------------------


@dataclass
class TreeFile:
    path: str  # relative to the results root, e.g. closed/NVIDIA/systems/X.json
    data: bytes
    mtime: float


def _relevant(rel: str) -> bool:
    parts = rel.split("/")
    if NOT_RESULTS.intersection(parts):
        return False
    name = parts[-1]
    return ("systems" in parts and name.endswith(".json")) or (
        "results" in parts and name == "mlperf_log_summary.txt"
    )


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
        framework=_text(f.get("framework")),
        software_stack=_text(f.get("other_software_stack")),
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

    def skip(self, path: str, reason: str, category: str) -> None:
        self.issues.append(Issue(path, reason, "skipped", category))

    def fail(self, path: str, reason: str, category: str) -> None:
        self.issues.append(Issue(path, reason, "failed", category))

    @property
    def replaced(self) -> list[Issue]:
        return [i for i in self.issues if i.outcome == "replaced"]


@dataclass
class _Sorted:
    """The files of a tree an importer reads, sorted as they stream by."""

    systems: dict[str, TreeFile] = field(default_factory=dict)
    results: list[TreeFile] = field(default_factory=list)
    prefixes: set[str] = field(default_factory=set)
    training_logs: int = 0  # an MLPerf Training round's files: the wrong importer


def _split(rel: str, marker: str) -> tuple[list[str], list[str]] | None:
    """(prefix, rest) around ``<division>/<submitter>/<marker>``; None if the marker is absent."""
    parts = rel.split("/")
    for i in range(2, len(parts)):
        if parts[i] == marker:
            return parts[: i - 2], parts[i - 2 :]
    return None


def _sort_file(tree: ParsedTree, rel: str, item: TreeFile | None, found: _Sorted) -> None:
    tree.files_seen += 1
    if item is None:
        tree.ignored += 1
        return
    marker = "systems" if "systems" in rel.split("/") and rel.endswith(".json") else "results"
    split = _split(rel, marker)
    if split is None:
        tree.skip(rel, f"not under <division>/<submitter>/{marker}/", "unexpected-layout")
        return
    prefix, rest = split
    found.prefixes.add("/".join(prefix))
    item.path = "/".join(rest)
    if marker == "results":
        found.results.append(item)
    elif len(rest) != 4:
        why = "unexpected layout: expected <division>/<submitter>/systems/<system_id>.json"
        tree.skip(rel, why, "unexpected-layout")
    else:
        found.systems[item.path] = item


def _walk(root: Path, tree: ParsedTree, limits: ImportLimits) -> _Sorted:
    found = _Sorted()

    def link(rel: str, why: str) -> None:
        tree.skip(rel, why, "link")

    try:
        for rel, data, mtime in iter_tree_files(root, _relevant, link, limits):
            item = None if data is None else TreeFile(rel, data, mtime)
            _sort_file(tree, rel, item, found)
            found.training_logs += bool(_TRAINING_RESULT.fullmatch(rel.rsplit("/", 1)[-1]))
    except ArchiveTruncated as exc:
        tree.issues.append(truncated_issue(root, exc))
    return found


def _round(root: Path, tree: ParsedTree, found: _Sorted, round_name: str | None) -> str:
    """The tree's round, once it is known to be an Inference tree.

    Raises:
        InvalidInput: nothing readable, a Training round, or no round to be told.
    """
    if tree.files_seen == 0:
        why = f" ({tree.issues[0].reason})" if tree.issues else ""
        raise InvalidInput(
            f"{str(root)!r} holds no readable files: not an MLPerf results tree or archive{why}"
        )
    if not found.results and found.training_logs:
        raise InvalidInput(
            f"{str(root)!r} is an MLPerf Training round ({found.training_logs} result_<N>.txt "
            "files, no Inference mlperf_log_summary.txt): import it with "
            "`advisor import mlperf-training`"
        )
    round_ = checked_round(round_name) or detect_round(root, sorted(found.prefixes)) or ""
    if not round_:
        raise InvalidInput(
            f"cannot tell the MLPerf round of {str(root)!r} from its name; pass --round (e.g. v3.0)"
        )
    return round_


def _read_systems(tree: ParsedTree, found: _Sorted, limits: ImportLimits) -> SystemFields:
    """Each system's record fields, or why its description cannot be read."""
    systems: SystemFields = {}
    for rel, item in sorted(found.systems.items()):
        division, submitter, _, name = rel.split("/")
        system = SystemInfo(division, submitter, name[: -len(".json")], rel, {})
        try:
            loaded = load_system(item.data, rel, limits)
            for name in SYSTEM_NAME_FIELDS:
                name_text(loaded.get(name), name)
            system.fields = loaded
            systems[(division, submitter, system.system_id)] = _system_record_fields(system)
        except (ValueError, ImportLimitExceeded) as exc:
            systems[(division, submitter, system.system_id)] = exc
            tree.fail(rel, f"malformed system description: {exc}", "malformed-system")
    return systems


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
    tree = ParsedTree(round="")
    limits = limits or ImportLimits.from_env()
    found = _walk(root, tree, limits)
    tree.round = _round(root, tree, found, round_name)
    systems = _read_systems(tree, found, limits)
    seen: set[tuple[str, ...]] = set()
    for item in sorted(found.results, key=lambda f: f.path):
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
            why = "a second result for the same system, benchmark and scenario"
            tree.skip(item.path, why, "duplicate")
            continue
        seen.add(identity)
        tree.records.append(record)
    return tree


# ---- one summary → one record ----------------------------------------------------------------


def _summary(tree: ParsedTree, item: TreeFile) -> dict[str, Any] | None:
    """The LoadGen summary of the reported run at ``item``, or None (reported in ``tree``)."""
    parts = item.path.split("/")
    # division/submitter/results/system/benchmark/scenario/performance/run_1/mlperf_log_summary.txt
    if len(parts) != 9 or parts[6] != "performance" or not parts[7].startswith("run_"):
        tree.skip(item.path, _SUMMARY_LAYOUT, "unexpected-layout")
        return None
    if parts[7] != "run_1":
        tree.skip(item.path, f"{parts[7]} is not the reported run (run_1)", "not-run_1")
        return None
    try:
        text = item.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        tree.fail(item.path, f"not UTF-8 text: {exc}", "malformed-summary")
        return None
    try:
        return parse_summary(text)
    except InvalidInput as exc:
        tree.fail(item.path, f"malformed LoadGen summary: {exc}", "malformed-summary")
        return None


def _scenario(
    tree: ParsedTree, item: TreeFile, scenario_dir: str, summary: dict[str, Any], bench: Any
) -> str | None:
    """The result's scenario: its directory's, when the summary ran that scenario."""
    # the catalogue's scenarios; a directory names one (Interactive: a Server run, v5.0+)
    match = resolve_scenario(scenario_dir)
    if not match.resolved:
        known = ", ".join(sorted(load_catalog().scenarios))
        why = f"scenario directory {scenario_dir!r} is not a known scenario ({known})"
        tree.fail(item.path, why, "unknown-scenario")
        return None
    loadgen_scenario = summary["scenario"]
    if load_catalog().scenarios[match.id].loadgen_mode != loadgen_scenario:
        why = (
            f"summary says Scenario {loadgen_scenario} but the directory says {scenario_dir} "
            "(a result inferred from another scenario, not a run of its own)"
        )
        tree.skip(item.path, why, "inferred-scenario")
        return None
    # A scenario LoadGen runs in another mode (Interactive: Server with tighter latency bounds)
    # is a result of its own under its directory's name, or under the benchmark's
    # (v5.0: llama2-70b-interactive-99/Server)
    scenario: str = named_scenario(bench, match.id)
    return scenario


def _system(
    tree: ParsedTree, item: TreeFile, key: tuple[str, str, str], systems: SystemFields
) -> dict[str, Any] | None:
    """The record fields of the result's system, or None (reported in ``tree``)."""
    system = systems.get(key)
    if system is None:
        division, submitter, system_id = key
        why = f"no system description {division}/{submitter}/systems/{system_id}.json"
        tree.fail(item.path, why, "missing-system")
        return None
    if isinstance(system, Exception):
        tree.fail(item.path, f"its system description is malformed: {system}", "malformed-system")
        return None
    return system


def _record(tree: ParsedTree, item: TreeFile, systems: SystemFields) -> MlperfRecord | None:
    summary = _summary(tree, item)
    if summary is None:
        return None
    division, submitter, _, system_id, benchmark_raw, scenario_dir = item.path.split("/")[:6]
    bench = resolve_benchmark(benchmark_raw, FAMILY)
    scenario = _scenario(tree, item, scenario_dir, summary, bench)
    if scenario is None:
        return None
    if summary.get("mode", "PerformanceOnly") != "PerformanceOnly":
        why = f"mode {summary['mode']!r} is not a performance run"
        tree.skip(item.path, why, "not-performance")
        return None
    try:
        headline = published_headline(summary)
    except InvalidInput as exc:
        tree.fail(item.path, f"malformed LoadGen summary: {exc}", "malformed-summary")
        return None
    system = _system(tree, item, (division, submitter, system_id), systems)
    if system is None:
        return None
    try:
        _check_result(headline.metric, headline.value, system)
    except RowRejected as exc:
        tree.fail(item.path, str(exc), "implausible-value")
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
