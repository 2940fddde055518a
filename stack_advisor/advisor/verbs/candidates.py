"""The first stages of ``recommend``: what slice is ranked, which candidates it has, and which of
them the user's constraints, the compatibility rules or known failures rule out.

A ``Candidate`` is one (canonical accelerator, placement, stack) with the knowledge-base rows
behind it; the later stages (``stack_advisor.advisor.verbs.scoring``,
``stack_advisor.advisor.verbs.explain``) fill in its estimate and score. Each stage is a function of
a ``Knowledge``, the workload and its inputs.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.estimate.references_class import spans_nodes
from stack_advisor.advisor.estimate.scenario import derivable, derived_base
from stack_advisor.advisor.knowledge.rules import parse_version, stack_components
from stack_advisor.advisor.proxy.model import catalogue_configs
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import serving
from stack_advisor.advisor.verbs.catalogue_candidates import PLACEMENT as CATALOGUE_PLACEMENT
from stack_advisor.advisor.verbs.catalogue_candidates import catalogue_parts
from stack_advisor.advisor.workload import MLPERF_TRAINING, Objective, Workload
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.stack_facts import ngc_release_of, ngc_releases
from stack_advisor.catalog.stack_text import system_components
from stack_advisor.schema.checks import shown
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import NGC_FRAMEWORKS, PlacementKind, SoftwareStack


def mode(values: list[Any]) -> Any:
    """The most common value (ties: the first seen)."""
    return Counter(values).most_common(1)[0][0]


def query_components(stack: SoftwareStack) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in stack_components(stack).items() if v}


@dataclass(frozen=True)
class Slice:
    """What one ranking ranks on: the benchmark's rows, the chosen metric's rows, its unit and
    direction, the scenario and division, and the observed latency limits broken."""

    workload: Workload
    bench_rows: np.ndarray
    rows: np.ndarray
    metric: str
    unit: str | None
    hib: bool
    per_acc: bool
    scenario: str
    division: str
    latest: str
    over_limit: dict[int, str]
    bench_ids: frozenset[str]  # the benchmark ids behind ``rows`` (known failures name one)
    notes: tuple[str, ...]
    # the scenario ``rows`` were recorded in: ``scenario`` itself, or where the knowledge base
    # holds none of it, the scenario it is run as (Interactive: Server), each candidate then
    # estimated by the learned ratio (``stack_advisor.advisor.estimate.scenario``)
    recorded_scenario: str

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """The slice the candidates come from: the one ranked, or where its scenario is derived,
        the slice of the scenario it is run as."""
        w = self.workload
        return (w.family, w.benchmark or "", self.recorded_scenario, self.metric, self.division)

    @property
    def derived(self) -> bool:
        """Whether no result of the ranked scenario is held (each candidate is an estimate)."""
        return self.recorded_scenario != self.scenario


@dataclass(frozen=True)
class Candidate:
    """One (canonical accelerator, placement, stack) and, once estimated and scored, its figure."""

    accelerator: str
    placement: str
    stack_id: str
    stack: SoftwareStack
    rows: list[int]  # its own rows when observed here, else the family's rows of the pair
    observed: bool  # measured on the ranked slice
    published: list[str]  # accelerator names as published, sorted
    count: int = 0
    est: Estimate | None = None
    value: float = 0.0
    low: float = 0.0
    high: float = 0.0
    score: float = 0.0
    capped: bool = False
    group: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # serving limits checked against estimated TTFT/TPOT
    # (``stack_advisor.advisor.verbs.serving.estimated_limits``)
    latency_checks: tuple[str, ...] = ()
    # a catalogue part's stack taken from another vendor's parts: a placeholder, not its own
    borrowed_stack: bool = False


# ---- stage 0: the slice ---------------------------------------------------------------------


def benchmark_rows(knowledge: Knowledge, workload: Workload) -> tuple[np.ndarray, list[str]]:
    """The rows of the workload's benchmark (closed division unless asked otherwise), and the
    parameters the knowledge base does not record for it.

    Raises:
        NotFound: the family or benchmark is not in the knowledge base, or nothing matches.
    """
    table = knowledge.table
    assert workload.benchmark is not None
    params = workload.parameter_filters()
    if "division" not in params:
        # MLPerf's open division allows changed models: only closed results compare.
        closed, unrecorded = table.benchmark_mask(
            workload.family, workload.benchmark, {**params, "division": "closed"}
        )
        if "division" not in unrecorded and closed.any():
            params["division"] = "closed"
    mask, ignored = table.benchmark_mask(workload.family, workload.benchmark, params)
    if not mask.any():
        raise _not_found(knowledge, workload)
    return np.flatnonzero(mask), ignored


def _not_found(knowledge: Knowledge, workload: Workload) -> NotFound:
    benchmarks = knowledge.table.benchmarks.values()
    names = sorted({b.name for b in benchmarks if b.family == workload.family})
    if not names:
        families = sorted({b.family for b in benchmarks})
        return NotFound(
            f"family: no benchmarks of family {workload.family!r} in the knowledge base; "
            f"families: {', '.join(families) or 'none'}"
        )
    assert workload.benchmark is not None
    if workload.benchmark not in names:
        return NotFound(unheld_benchmark(workload.benchmark, workload.family, names))
    asked = workload.parameter_filters()
    held = sorted(
        {
            str(b.parameters["scenario"])
            for b in benchmarks
            if b.family == workload.family
            and b.name == workload.benchmark
            and "scenario" in b.parameters
        }
    )
    pinned = ", ".join(f"{k} {shown(v)}" for k, v in asked.items())
    scenarios = f" (its scenarios held: {', '.join(held)})" if "scenario" in asked and held else ""
    return NotFound(
        f"no observations of {workload.family}/{workload.benchmark} with {pinned}{scenarios}"
    )


def unheld_benchmark(benchmark: str, family: str, names: list[str]) -> str:
    """Why ``benchmark`` (of ``family``) is not answered where the knowledge base holds no
    result of it (``names``: the benchmarks it holds): the catalogue's model without results
    yet, else the closest names held."""
    if not benchmark.strip():
        closed = [n for n in names if "_" not in n]  # open-division variants are named after
        some = f"{', '.join(closed[:8])}, ...: " if closed else ""
        return f"benchmark: empty; name one ({some}`advisor catalogue list benchmarks` lists them)"
    if catalogued(benchmark, family):
        return "benchmark: " + no_results_yet(benchmark, family)
    close = difflib.get_close_matches(benchmark, names, n=6, cutoff=0.5)
    return (
        f"benchmark: {shown(benchmark)!r} is not in the knowledge base for {family}; "
        f"similar: {', '.join(close) or ', '.join(names[:8])}"
    )


def no_results_yet(benchmark: str, family: str) -> str:
    """Why a benchmark the catalogue knows (``benchmark``: its id) is answered from no result, and
    what to do: import a round that has it, or ask its model by proxy."""
    entry = load_catalog().benchmark(family, benchmark)
    since = f", new in {entry.introduced.round}" if entry and entry.introduced else ""
    proxy = (
        f', or ask its model by proxy (a query with "model": "{benchmark}", `advisor predict '
        f"--model {benchmark}`)"
        if family == "mlperf-inference" and benchmark in catalogue_configs()
        else ""
    )
    importer = (
        "`advisor import mlperf-training ROUND.tar.gz`"
        if family == "mlperf-training"
        else "`advisor import mlperf-summary FILE` or `advisor import mlperf ROUND.tar.gz`"
    )
    return (
        f"no results yet for {benchmark} in {family}{since}: the catalogue knows the model "
        f"(`advisor catalogue show {benchmark}`) and the knowledge base holds no observation of "
        f"it; import a round that has it ({importer}){proxy}"
    )


def catalogued(benchmark: str, family: str) -> bool:
    """Whether the catalogue has ``benchmark`` as a benchmark of ``family`` (by its id)."""
    match = resolve_benchmark(benchmark, family)
    return match.resolved and match.id == benchmark


# the latencies a latency ranking reads first, where recorded and the scenario publishes none of
# its own: the p99 that MLPerf's limits bind (an LLM's time to first token, else a query's p99)
BOUND_LATENCIES = ("ttft_p99_ms", "p99_latency_ms", "tpot_p99_ms", "p99_9_latency_ms")


def _bound_latency(scenario: str | None, recorded: set[str]) -> str | None:
    """The latency a ranking of ``scenario`` reads: the scenario's own published metric where it
    is a latency (SingleStream's p90, MultiStream's p99), else the first of ``BOUND_LATENCIES``
    recorded; None where none is (the commonest latency then)."""
    entry = load_catalog().scenarios.get(scenario or "")
    own = entry.metric if entry is not None else None
    if own in recorded:
        return own
    return next((m for m in BOUND_LATENCIES if m in recorded), None)


def choose_metric(knowledge: Knowledge, rows: np.ndarray, workload: Workload) -> str:
    """The workload's metric, else for a latency objective the latency the scenario's rules
    bind (``_bound_latency``), else the most common metric of the objective's direction.

    Raises:
        InvalidInput: the metric is not recorded, or none has the objective's direction.
    """
    table = knowledge.table
    metrics = table.metric.codes[rows]
    available = sorted({table.metric.vocab[m] for m in set(metrics.tolist())})
    if workload.metric:
        code = table.metric.code(workload.metric)
        if code not in set(metrics.tolist()):
            raise InvalidInput(
                f"metric: {workload.metric!r} is not recorded for this benchmark; "
                f"recorded: {', '.join(available) or 'none'}"
            )
        if (
            workload.objective is Objective.LATENCY
            and table.higher_is_better[rows][metrics == code].all()
        ):
            raise InvalidInput(
                f"objective: 'latency' ranks a latency (lower is better) and {workload.metric} is "
                "a throughput: drop --objective latency, or name a latency metric "
                f"({', '.join(m for m in available if m.endswith('_ms')) or 'none recorded'})"
            )
        return workload.metric
    want_hib = workload.objective is not Objective.LATENCY
    ok = metrics[table.higher_is_better[rows] == want_hib]
    named = {table.metric.vocab[int(m)] for m in set(ok.tolist())}
    bound = None if want_hib else _bound_latency(workload.scenario, named)
    if bound is not None:
        return bound
    if len(ok) == 0:
        raise InvalidInput(
            f"objective: {workload.objective.value!r} needs a "
            f"{'higher' if want_hib else 'lower'}-is-better metric, and this benchmark/scenario "
            f"records only {', '.join(available)}; pick another scenario or objective"
        )
    values, counts = np.unique(ok, return_counts=True)
    metric: str = table.metric.vocab[int(values[np.argmax(counts)])]
    return metric


def select_slice(knowledge: Knowledge, workload: Workload) -> Slice:
    """The slice ranked for this workload, with the notes on what was assumed."""
    table = knowledge.table
    notes: list[str] = []
    recorded = None  # the scenario asked (or chosen), unless derived from another
    try:
        bench_rows, ignored = benchmark_rows(knowledge, workload)
    except NotFound as missing:
        base = _derivable_scenario(knowledge, workload)
        if base is None:
            raise
        try:
            bench_rows, ignored = benchmark_rows(
                knowledge, workload.model_copy(update={"scenario": base})
            )
        except NotFound:
            raise missing from None
        recorded = base
        notes.append(
            f"no {workload.scenario} results of {workload.benchmark} are held: each part is "
            f"ranked as for {base} (measured or estimated there), scaled by the learned "
            f"{workload.scenario}/{base} ratio (see how each was made)"
        )
    if ignored:
        notes.append(
            "ignored parameters the knowledge base does not record for this benchmark: "
            f"{', '.join(ignored)}"
        )
    metric = choose_metric(knowledge, bench_rows, workload)
    over_limit = (
        serving.latency_exclusions(table, bench_rows, workload) if workload.latency_limits() else {}
    )
    rows = bench_rows[table.metric.codes[bench_rows] == table.metric.code(metric)]
    hib = bool(table.higher_is_better[rows[0]])
    scenario = workload.scenario or mode(table.scenario.values(rows))
    division = mode(table.division.values(rows))
    if recorded is not None:
        _refuse_derived(knowledge, workload, (metric, division), recorded)
    if workload.scenario is None and len(set(table.scenario.values(rows))) > 1:
        notes.append(f"no scenario given: ranked on {scenario!r}, the most common for {metric}")
    return Slice(
        workload=workload,
        bench_rows=bench_rows,
        rows=rows,
        metric=metric,
        unit=table.unit.vocab[int(table.unit.codes[rows[0]])],
        hib=hib,
        per_acc=workload.rank_per_accelerator and hib,
        scenario=scenario,
        division=division,
        latest=table.latest_round(workload.family),
        over_limit=over_limit,
        notes=tuple(notes),
        bench_ids=frozenset(
            table.benchmark.vocab[int(c)] for c in set(table.benchmark.codes[rows].tolist())
        ),
        recorded_scenario=recorded or scenario,
    )


def _derivable_scenario(knowledge: Knowledge, workload: Workload) -> str | None:
    """``scenario.derived_base`` of the workload's slice (None without a scenario)."""
    if workload.scenario is None or workload.benchmark is None:
        return None
    return derived_base(knowledge.index, workload.family, workload.benchmark, workload.scenario)


def _refuse_derived(
    knowledge: Knowledge, workload: Workload, ranked: tuple[str, str], base: str
) -> None:
    """NotFound with the reason where no part's figure of the derived scenario can be made (a
    latency, a round before the rules set the scenario, too few systems that ran both): said
    once for the slice, not as each candidate's exclusion."""
    metric, division = ranked
    q = Query(
        workload.family,
        workload.benchmark or "",
        workload.scenario or "",
        metric,
        division,
        "",  # no part: what is asked holds for every one
        1,
        PlacementKind.BARE_METAL.value,
        as_of=workload.as_of,
    )
    why = derivable(knowledge.index, q, base)
    if isinstance(why, str):
        raise NotFound(why)


# ---- stage 1: candidates --------------------------------------------------------------------


def candidates(knowledge: Knowledge, sl: Slice) -> list[Candidate]:
    """Observed (accelerator, placement, stack) groups of the slice, then one candidate for each
    (accelerator, placement) the family knows but the slice never saw, with its newest stack."""
    table, index = knowledge.table, knowledge.index
    groups: dict[tuple[str, str, str, int], list[int]] = defaultdict(list)
    for acc, acc_rows in index.slices.get(sl.key, {}).items():
        # a system spanning nodes (an NVL72 rack, two 4-GPU trays, four 8-GPU nodes) is a
        # deployment of its size, a row of its own beside the stack's one-node systems and its
        # other sizes; MLPerf Training's times to train are a row per published count (the
        # fastest and the cheapest sizes both show), unless a count or a budget picks one
        size = np.where(spans_nodes(index, acc_rows), table.count[acc_rows].astype(int), 0)
        if sl.workload.family == MLPERF_TRAINING:
            hw = sl.workload.hardware
            picked = hw.count is not None or hw.max_count is not None
            size = np.zeros_like(size) if picked else table.count[acc_rows].astype(int)
        for r, n in zip(acc_rows.tolist(), size.tolist()):
            groups[
                (
                    acc,
                    table.placement.vocab[int(table.placement.codes[r])],
                    table.stack.vocab[int(table.stack.codes[r])],
                    int(n),
                )
            ].append(r)
    fam = np.flatnonzero(
        (table.family.codes == table.family.code(sl.workload.family))
        & (table.division.codes == table.division.code(sl.division))
    )
    pairs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in fam.tolist():
        pairs[(index.accel[r], table.placement.vocab[int(table.placement.codes[r])])].append(r)
    out = [_candidate(knowledge, a, p, s, g, not sl.derived) for (a, p, s, _), g in groups.items()]
    observed_pairs = {(a, p) for a, p, _, _ in groups}
    for (acc, place), fam_rows in sorted(pairs.items()):
        if (acc, place) not in observed_pairs:
            newest = index.latest(np.asarray(fam_rows))
            out.append(
                _candidate(knowledge, acc, place, mode(table.stack.values(newest)), fam_rows, False)
            )
    for acc, stack_id, name, borrowed in catalogue_parts(
        knowledge, sl.workload, sl.rows, {a for a, _ in pairs}
    ):
        out.append(
            Candidate(
                accelerator=acc,
                placement=CATALOGUE_PLACEMENT,
                stack_id=stack_id,
                stack=table.stacks[stack_id],
                rows=[],
                observed=False,
                published=[name],
                borrowed_stack=borrowed,
            )
        )
    return out


def _candidate(
    knowledge: Knowledge, acc: str, place: str, stack_id: str, rows: list[int], observed: bool
) -> Candidate:
    table = knowledge.table
    published = sorted({table.accelerator.vocab[int(table.accelerator.codes[r])] for r in rows})
    group = np.asarray(rows if observed else [], dtype=np.int64)
    return Candidate(
        accelerator=acc,
        placement=place,
        stack_id=stack_id,
        stack=table.stacks[stack_id],
        rows=rows,
        observed=observed,
        published=published,
        group=group,
    )


# ---- stage 2: constraints -------------------------------------------------------------------


def constraint(knowledge: Knowledge, sl: Slice, c: Candidate) -> str | None:
    """Why the user's constraints, known failures, the latency limits or ``--observed-only``
    rule the candidate out; None when nothing does (what the nodes' driver and the stack cannot
    run: ``stack_advisor.advisor.verbs.feasibility.refusal``)."""
    workload = sl.workload
    reason = _hardware(workload, c) or _frameworks(workload, c.stack)
    if reason is None and not c.observed and _failed(knowledge, sl, c):
        reason = "known failure"
    if reason is None and c.observed:
        codes = knowledge.table.candidate.codes[np.asarray(c.rows)].tolist()
        reason = next((sl.over_limit[code] for code in codes if code in sl.over_limit), None)
    if reason is None and not c.observed and not workload.include_predicted:
        reason = "not observed (--observed-only)"
    return reason


def _hardware(workload: Workload, c: Candidate) -> str | None:
    hw = workload.hardware
    if hw.accelerators and not any(hw.allows(n) for n in (c.accelerator, *c.published)):
        return "accelerator not allowed"
    if not hw.include_cpu and accelerator_class(c.published[0]) == "cpu":
        return "CPU-only excluded"
    if hw.placements and c.placement not in {p.value for p in hw.placements}:
        return "placement not allowed"
    return None


def _frameworks(workload: Workload, stack: SoftwareStack) -> str | None:
    for fc in workload.frameworks:
        # the components a result's text named beside its framework (ROCm, Triton, ...) count too
        comps = {**system_components(stack.extra), **query_components(stack)}
        names = set(comps) | ({stack.framework.lower()} if stack.framework else set())
        if fc.name not in names:
            return f"framework constraint: runs no {fc.name}"
        if fc.version:
            written = shipped_version(fc.name, comps.get(fc.name))
            version = parse_version(written)
            if version is None:
                return f"{fc.name} version not recorded (the version constraint cannot be checked)"
            if not fc.specifier.contains(version, prereleases=True):
                return f"framework constraint: {fc.name} {written} is not {fc.specifier}"
    return None


def shipped_version(name: str, written: str | None) -> str | None:
    """A component's version as a version: an NGC container tag written in its place ("pytorch
    23.09") stands for what that release ships when the catalogue knows it, else for nothing
    (a tag is never compared as if it were version 23.9)."""
    if written is None or name not in NGC_FRAMEWORKS or ngc_release_of(written) is None:
        return written
    release = ngc_releases().get(ngc_release_of(written) or "")
    return getattr(release, name, None) if release is not None else None


def _failed(knowledge: Knowledge, sl: Slice, c: Candidate) -> bool:
    return any(
        (c.stack_id, n, c.placement, b) in knowledge.failures
        for n in c.published
        for b in (*sl.bench_ids, None)
    )
