"""What the MLPerf importers share: reading a results tree (a directory or an archive), the issue
each file that does not fit becomes, system descriptions, the placement, host and CPU "accelerator"
of a published system, and writing observations to a store in batches.

The Inference tree importer (``mlperf``), the Training importer (``mlperf_training``) and the
summary-table importer (``mlperf_summary``) build on these, so that one published result reads the
same whichever way it arrives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack_advisor.catalog import load_catalog, resolve_cpu, resolve_metric
from stack_advisor.catalog.canonical import canonical_observation
from stack_advisor.catalog.stack_text import PlacementEvidence
from stack_advisor.collectors.importers.archive_stream import MemberBudget
from stack_advisor.collectors.importers.limits import ImportLimits, load_json
from stack_advisor.collectors.importers.tar_reader import ArchiveTruncated, iter_archive
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    Accelerator,
    IngestBatch,
    Observation,
    Placement,
    SoftwareStack,
)
from stack_advisor.store.base import Store

ROUND = re.compile(r"v(\d+\.\d+)")
# How far two readings of one published figure may lie apart and be the same figure: a round's
# summary table rounds to about six significant digits, its results tree's logs to two decimals
# (16.2 beside 16.2044 queries/s; 0.88 beside 0.880856, the farthest of Inference v5.1's 912)
SAME_FIGURE_REL = 1e-4
TWO_DECIMALS = 0.0051  # where one reading is a figure logged to two decimals
DEFAULT_BATCH = 2000
LINK_SKIPPED = "a symbolic link inside the tree is never followed or read"


@dataclass
class Issue:
    """A file (or row) an importer did not take, and why."""

    path: str
    reason: str
    outcome: str  # "skipped" | "failed" | "replaced" (a stored figure the files corrected)
    category: str = "other"  # short name to group issues by


def issue_dicts(issues: Iterable[Issue]) -> list[dict[str, str]]:
    """Issues as an import summary's JSON lists them."""
    return [
        {"path": i.path, "outcome": i.outcome, "category": i.category, "reason": i.reason}
        for i in issues
    ]


def truncated_issue(root: Path, exc: ArchiveTruncated) -> Issue:
    """The issue of an archive cut short: what came before it was read."""
    after = f" after {exc.after}" if exc.after else ""
    return Issue(
        str(root),
        f"archive is truncated or corrupt{after}; what came before was read",
        "failed",
        "truncated-archive",
    )


def metric_facts(metric: str) -> tuple[str, bool]:
    """(unit, higher is better) of a metric, from the catalogue.

    Raises:
        InvalidInput: the catalogue does not know the metric (with the closest names).
    """
    entry = load_catalog().metrics[resolve_metric(metric).require("metric")]
    return entry.unit, entry.higher_is_better


def checked_round(given: str | None) -> str | None:
    """A round given by name (``--round``) as MLCommons writes it: ``v6.0`` (``6.0`` and ``V6.0``
    read as ``v6.0``); None where none is given.

    Raises:
        InvalidInput: not a round name (``banana``, ``v6``, ``v6.0.1``): every result imported
            under it would stand apart from the round it belongs to.
    """
    if given is None:
        return None
    found = re.fullmatch(r"[vV]?(\d+)\.(\d+)", given.strip())
    if not found:
        raise InvalidInput(f"--round: {given!r} is not a round name such as v6.0")
    return f"v{int(found.group(1))}.{int(found.group(2))}"  # v06.0 and 6.00 are v6.0


def detect_round(path: Path, first_parts: Iterable[str] = ()) -> str | None:
    """``v3.0`` from a name such as ``inference_v3.0.tar.gz`` or ``inference_results_v3.0``."""
    for text in (*first_parts, path.name, path.resolve().name):
        match = ROUND.search(text)
        if match:
            return "v" + match.group(1)
    return None


# ---- reading a tree --------------------------------------------------------------------------


def iter_tree_files(
    root: Path,
    wanted: Callable[[str], bool],
    on_skipped: Callable[[str, str], None],
    limits: ImportLimits,
) -> Iterator[tuple[str, bytes | None, float]]:
    """(relative path, content, mtime) of every file under a directory or in a .tar(.gz), within
    ``limits``; content is None for files ``wanted`` refuses (the importer never reads them), and
    links (never followed) go to ``on_skipped``."""
    if root.is_dir():
        yield from _iter_directory(root, wanted, on_skipped, limits)
        return
    archive = iter_archive(
        root,
        wanted=lambda name: wanted(name.removeprefix("./")),
        limits=limits,
        on_skipped=lambda name, why: on_skipped(name.removeprefix("./"), why),
    )
    for name, content, mtime in archive:
        yield name.removeprefix("./"), content, mtime


def _iter_directory(
    root: Path,
    wanted: Callable[[str], bool],
    on_skipped: Callable[[str, str], None],
    limits: ImportLimits,
) -> Iterator[tuple[str, bytes | None, float]]:
    budget = MemberBudget(str(root), limits)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            budget.member()
            if full.is_symlink():
                on_skipped(rel, LINK_SKIPPED)
            elif not wanted(rel):
                yield rel, None, 0.0
            else:
                budget.reading(rel, full.stat().st_size)
                yield rel, full.read_bytes(), full.stat().st_mtime


def load_system(data: bytes, rel: str, limits: ImportLimits) -> dict[str, Any]:
    """One system description's fields.

    Raises:
        ValueError: not JSON, or a top level that is not an object.
        ImportLimitExceeded: the JSON is over a limit.
    """
    loaded = load_json(data, rel, limits)
    if not isinstance(loaded, dict):
        raise ValueError(f"top level is a {type(loaded).__name__}, not an object")
    return loaded


# ---- what a published system is --------------------------------------------------------------


def placement_of(where: PlacementEvidence) -> Placement:
    """The store's placement of a classified system description, its basis first in evidence."""
    return Placement(
        kind=where.kind,
        hypervisor=where.hypervisor,
        vgpu_profile=where.vgpu_profile,
        evidence=[f"basis: {where.basis}", *where.evidence],
    )


def cpu_accelerator(host_cpu: str, sockets: int) -> Accelerator:
    """A CPU-only system's "accelerator": its catalogued processor, one per socket."""
    cpu = resolve_cpu(host_cpu) if host_cpu else None
    return Accelerator(model="CPU " + (cpu.id if cpu else "unknown"), vendor="cpu", count=sockets)


def inference_stack(
    components: dict[str, str],
    framework: tuple[str | None, str | None],
    extra: dict[str, str],
    raw: str | None,
) -> SoftwareStack:
    """The stack an Inference result names (tree or summary table alike)."""
    c = components
    return SoftwareStack(
        driver=c.get("driver"),
        cuda=c.get("cuda"),
        cudnn=c.get("cudnn"),
        nccl=c.get("nccl"),
        tensorrt=c.get("tensorrt"),
        python=c.get("python"),
        framework=framework[0],
        framework_version=framework[1],
        extra=extra,
        raw=raw,
    )


# ---- writing to a store ----------------------------------------------------------------------


def batches(observations: list[Observation], batch_size: int) -> Iterator[IngestBatch]:
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
    for result in store.ingest_many(batches(observations, batch_size)):
        new += result.observations_new
        received += result.observations_received
        if progress:
            progress(result.observations_received)
    return new, received


def ingest_counted(
    store: Store,
    observations: list[Observation],
    batch_size: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[int, int]:
    """``ingest_observations`` reporting ``progress(done, total)`` after each batch."""
    total = len(observations)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    return ingest_observations(store, observations, batch_size=batch_size, progress=step)


def same_figure(a: float, b: float, *, exact: bool = False) -> bool:
    """Whether two readings of one published figure agree within its publications' rounding:
    ``SAME_FIGURE_REL`` apart, or within half a hundredth where one of them is logged to two
    decimals; ``exact``: readings of one computation, equal but for float noise."""
    if abs(a - b) <= (1e-9 if exact else SAME_FIGURE_REL) * max(abs(a), abs(b)):
        return True
    logged = not exact and any(round(x, 2) == x for x in (a, b))
    return logged and abs(a - b) <= TWO_DECIMALS


def reconcile_figures(
    store: Store,
    observations: list[Observation],
    *,
    exact: bool = False,
    replace: bool = False,
    batch_size: int = DEFAULT_BATCH,
) -> tuple[list[tuple[Observation, float]], int]:
    """(the observations the store holds at another figure, each with it
    (``held_at_other_values``); how many of them were replaced by what the files now give,
    with ``replace``: figure, samples, spread and provenance, ``Store.revise_observations``
    ``batch_size`` at a time). What a re-import does with a corrected result."""
    changed = held_at_other_values(store, observations, exact=exact)
    if not replace:
        return changed, 0
    revised = [o for o, _ in changed]
    return changed, sum(
        store.revise_observations(revised[i : i + batch_size])
        for i in range(0, len(revised), batch_size)
    )


def unresolved_benchmarks(observations: Iterable[Observation]) -> dict[str, int]:
    """Results (a system's run of a scenario, whatever metrics it records) per benchmark name the
    catalogue does not know (kept under the name published: a new round's model, answered once
    the catalogue names it), most first."""
    from stack_advisor.catalog import resolve_benchmark

    results: dict[str, set[tuple[str | None, Any]]] = {}
    known: dict[tuple[str, str], bool] = {}
    for obs in observations:
        key = (obs.benchmark.family, obs.benchmark.name)
        if key not in known:
            known[key] = resolve_benchmark(key[1], key[0]).resolved
        if not known[key]:
            scenario = obs.benchmark.parameters.get("scenario")
            results.setdefault(key[1], set()).add((obs.source_key, scenario))
    return {n: len(r) for n, r in sorted(results.items(), key=lambda i: -len(i[1]))}


def kept_or_replaced(replaced: int, what: str = "figure") -> str:
    """How a re-import's report ends a changed result's line."""
    return (
        "replaced"
        if replaced
        else f"the stored {what} is kept (--replace-changed takes the files')"
    )


def held_at_other_values(
    store: Store, observations: Iterable[Observation], *, exact: bool = False
) -> list[tuple[Observation, float]]:
    """(observation, the value the store holds) for each of ``observations`` the store already
    holds under its key at another value (``same_figure``; ``exact``: the readings come from
    one computation, so any difference counts): a result corrected after its round was imported.
    An observation is known by where it was published, not by its value, so the stored figure
    stays; the importer says so, row by row, rather than drop the new one unsaid. One bulk read
    (``Store.observation_values``)."""
    keyed = [(canonical_observation(o).observation_key, o) for o in observations]
    held = store.observation_values(k for k, _ in keyed)
    return [
        (obs, held[key])
        for key, obs in keyed
        if key in held and not same_figure(held[key], obs.value, exact=exact)
    ]
