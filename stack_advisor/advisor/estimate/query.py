"""The estimate's vocabulary: a ``Query`` in canonical terms, the ``Estimate`` it gets, the
``Calibration`` an index computes, and the benchmark slices (family, benchmark, scenario, metric,
division) every estimate stays inside."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.facts import canonical_accelerator
from stack_advisor.advisor.estimate.transfer import TransferModel
from stack_advisor.advisor.knowledge.table import ObservationTable, group_rows
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog.loading import load_catalog
from stack_advisor.catalog.rounds import round_key

SliceKey = tuple[str, str, str, str, str]  # family, benchmark, scenario, metric, division
# a residual pool: (basis, division, metric) — a calibration cell, (basis, division, "higher" or
# "lower") the division's metrics that run one way, (basis, None, None) the whole family,
# (basis, division, metric, benchmark, scenario) one slice's share of its cell, or (basis,
# division or None, metric or way, kind) a kind of transfer's ("cross-vendor", "first results",
# "first results from siblings", ...)
PoolKey = tuple[Any, ...]
FORMER = " (before"  # a redefined benchmark's results before its redefinition: ``former_name``


@dataclass
class Estimate:
    """One figure and how it was made. ``value``/``low``/``high`` are per accelerator for
    higher-is-better metrics (multiply by the count), as measured otherwise."""

    basis: Basis
    value: float | None = None
    low: float | None = None
    high: float | None = None
    rows: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    reason: str | None = None
    references: list[str] = field(default_factory=list)
    factors: list[tuple[str, str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # a transfer beyond the best (or below the worst) accelerator measured on the benchmark
    extrapolated: bool = False
    # a scenario derived from another one's estimate (Interactive from Server): that one's basis
    derived_from: Basis | None = None
    # the round a stack's own result was measured in, answered as measured (``drift.carry``:
    # a stack's figure does not move with the rounds); None: the round ``as_of`` names
    measured_round: float | None = None

    @property
    def confidence(self) -> float:
        """low/high of the 80% interval: 1 = exact, towards 0 = uninformative."""
        if self.low is None or self.high is None or self.high <= 0:
            return 0.0
        return max(0.0, min(1.0, self.low / self.high))


@dataclass
class Calibration:
    """What calibrating an evidence index computes: per family, the log residual pools per
    ``PoolKey`` (cells, the whole family, and each slice's transfers); per slice, the learned
    share of compute in the roofline blend and the transfer model of each accelerator class."""

    residuals: dict[str, dict[PoolKey, np.ndarray]]
    alphas: dict[SliceKey, float]
    # (family, benchmark, scenario, metric, division, accelerator class) → its transfer model
    transfers: dict[tuple[str, ...], TransferModel] = field(default_factory=dict)
    precisions: dict[SliceKey, str] = field(default_factory=dict)  # each slice's precision policy


@dataclass
class Query:
    """A configuration in canonical terms (names already resolved)."""

    family: str
    benchmark: str
    scenario: str
    metric: str
    division: str
    accelerator: str  # canonical
    count: int
    placement: str
    components: dict[str, str] = field(default_factory=dict)  # lower-case name → version
    raw_accelerator: str = ""
    # the framework as a query wrote it (free text), or a ranked candidate's "<name> <release>":
    # its software class and release (``stack_adjust``)
    framework: str = ""
    # the round the answer is for: "today" (the newest round published by today's date), "now"
    # (the newest round held), "next", a date or a round name (drift)
    as_of: str = "today"
    # the stack ids the figure is of, where the components cannot tell it apart from others (a
    # ranked stack that names no version: "pytorch ?"); empty: any stack the components match
    stacks: tuple[str, ...] = ()

    @property
    def slice(self) -> SliceKey:
        return (self.family, self.benchmark, self.scenario, self.metric, self.division)


def group_slices(
    table: ObservationTable, canon: list[str] | None = None
) -> dict[SliceKey, dict[str, np.ndarray]]:
    """The rows with a positive value grouped by benchmark slice, then by canonical accelerator
    (``canon``: the canonical name of each of the table's accelerator names), slices and
    accelerators in the order they first appear. Results from before their benchmark's
    redefinition form a slice of their own, named ``former_name`` ("3d-unet-99 (before v2.0)")."""
    if canon is None:
        canon = [canonical_accelerator(a) for a in table.accelerator.vocab]
    slices: dict[SliceKey, dict[str, np.ndarray]] = {}
    cols = (table.family, table.bench_name, table.scenario, table.metric, table.division)
    canon_names = sorted(set(canon))
    canon_code = np.asarray([canon_names.index(c) for c in canon], dtype=np.int64)
    rows = np.flatnonzero(table.value > 0)
    old = superseded(table)[rows].astype(np.int64)
    columns = [c.codes[rows] for c in cols]
    if table.n:
        columns.append(old)
        columns.append(canon_code[table.accelerator.codes[rows]])
    for (*slice_codes, before, acc), members in group_rows(columns, rows):  # in appearance order
        key = tuple(col.vocab[c] for col, c in zip(cols, slice_codes))
        if before:  # the old workload: a slice of its own, never the benchmark's evidence
            key = (key[0], former_name(key[0], key[1]), *key[2:])
        slices.setdefault(key, {})[canon_names[acc]] = members.astype(np.int64)
    return slices


def slice_direction(
    table: ObservationTable, slices: dict[SliceKey, dict[str, np.ndarray]], key: SliceKey
) -> bool:
    """Whether a larger figure is better in a slice; in a slice no part ran (a scenario derived
    from another: ``stack_advisor.advisor.estimate.scenario``), its metric's direction."""
    by_acc = slices.get(key)
    rows = (
        next(iter(by_acc.values()))
        if by_acc
        else np.flatnonzero(table.metric.codes == table.metric.code(key[3]))
    )
    return bool(table.higher_is_better[rows].all()) if len(rows) else True


def former_name(family: str, benchmark: str) -> str:
    """The slice name of a redefined benchmark's results from before its redefinition."""
    entry = load_catalog().benchmark(family, benchmark)
    since = entry.redefined.round if entry is not None and entry.redefined is not None else "?"
    return f"{benchmark}{FORMER} {since})"


def model_name(benchmark: str) -> str:
    """The benchmark a slice name stands for, a redefined one's former workload included (the
    same model on another dataset: its software has the same age)."""
    return benchmark.split(FORMER, 1)[0]


def superseded(table: ObservationTable) -> np.ndarray:
    """Rows measured before their benchmark was redefined (``BenchmarkEntry.redefined``: the name
    stands for another workload since that round): no evidence for the benchmark as it is now
    (``group_slices`` keeps them as a slice of their own: replays within their rounds still
    calibrate the intervals)."""
    out = np.zeros(table.n, dtype=bool)
    if not table.n:
        return out
    # a result with no published round (a local run) is of today's workload
    keys = [round_key(r or "") for r in table.round.vocab]
    for entry in load_catalog().benchmarks.values():
        bench, family = table.bench_name.code(entry.id), table.family.code(entry.family)
        if entry.redefined is None or bench < 0 or family < 0:
            continue
        since = round_key(entry.redefined.round)
        old = np.asarray([k not in ((), (0,)) and k < since for k in keys], dtype=bool)
        mine = (table.bench_name.codes == bench) & (table.family.codes == family)
        out |= mine & old[table.round.codes]
    return out


def redefined_reason(
    family: str, benchmark: str, slices: dict[SliceKey, dict[str, np.ndarray]]
) -> str | None:
    """Why a benchmark the catalogue redefined has no evidence here: only results from before
    its redefinition are held (``slices`` hold its former workload, none of it since); else
    None."""
    entry = load_catalog().benchmark(family, benchmark)
    if entry is None or entry.redefined is None:
        return None
    former = former_name(family, benchmark)
    held = {k[1] for k in slices if k[0] == family}
    if former not in held or benchmark in held:
        return None
    now = f", {entry.dataset} since" if entry.dataset else " in"
    return (
        f"no result of {benchmark} since it was redefined{now} {entry.redefined.round}: the "
        f"knowledge base holds only results of its earlier workload ({former!r})"
    )
