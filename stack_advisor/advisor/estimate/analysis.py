"""Paired comparisons over the observation table: placement overhead against bare metal, stack A
against stack B, and regressions (a newer component version slower, with statistical support).

Pairs are always formed within one round, benchmark (with its parameters), metric, accelerator
and count, because MLPerf metrics change meaning across rounds. Speed ratios are oriented so that
> 1 means faster: a throughput ratio, or the inverse latency ratio.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.order_stats import median, median_rows, quantiles
from stack_advisor.advisor.knowledge.table import ObservationTable, group_ids, group_rows
from stack_advisor.advisor.results import Interval, PlacementOverhead
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind


def speed_ratio(new: float, old: float, higher_is_better: bool) -> float:
    return new / old if higher_is_better else old / new


def bootstrap_interval(values: np.ndarray, *, n: int = 500, seed: int = 0) -> Interval | None:
    if len(values) < 2:
        return None
    rng = np.random.default_rng(seed)
    samples = rng.choice(values, size=(n, len(values)), replace=True)
    low, high = quantiles(median_rows(samples), (0.1, 0.9))
    return Interval(low=low, high=high)


def _column(table: ObservationTable, name: str) -> np.ndarray:
    col = getattr(table, name)
    values: np.ndarray = col.codes if hasattr(col, "codes") else col
    return values


def groups(
    table: ObservationTable, rows: np.ndarray, by: tuple[str, ...]
) -> dict[tuple[Any, ...], np.ndarray]:
    return dict(group_rows([_column(table, name)[rows] for name in by], rows))


PAIR_KEY = ("round", "benchmark", "metric", "accelerator", "count")
PLACEMENT_PAIR_KEY = ("round", "benchmark", "metric", "physical", "count")


def placement_overheads(table: ObservationTable) -> dict[tuple[str, str], PlacementOverhead]:
    """(physical accelerator, placement) → overhead vs bare metal, from paired results.

    Pairs on the physical device, because a vGPU result names its profile (``A100-SXM-80C``)
    where the bare-metal one names the GPU."""
    bare = table.placement.code(PlacementKind.BARE_METAL.value)
    if bare < 0:
        return {}
    ratios: dict[tuple[int, int], list[float]] = defaultdict(list)
    benches: dict[tuple[int, int], set[str]] = defaultdict(set)
    # only groups with a virtualised result can pair: find them with one array pass, then group
    # those rows alone (a Python pass over every row cost more than the rest of an answer)
    places = table.placement.codes
    virtual = (places != bare) & (places != table.placement.code(PlacementKind.UNKNOWN.value))
    group = group_ids(_column(table, name) for name in PLACEMENT_PAIR_KEY)
    paired = np.flatnonzero(np.isin(group, group[virtual]))
    for key, idx in groups(table, paired, PLACEMENT_PAIR_KEY).items():
        places = table.placement.codes[idx]
        if bare not in places or len(set(places.tolist())) < 2:
            continue
        hib = bool(table.higher_is_better[idx[0]])
        base = median(table.value[idx[places == bare]])
        for p in set(places.tolist()) - {bare}:
            kind = table.placement.vocab[p]
            if kind == PlacementKind.UNKNOWN.value:
                continue
            virt = median(table.value[idx[places == p]])
            if base > 0 and virt > 0:
                ratios[(key[3], p)].append(speed_ratio(virt, base, hib))
                benches[(key[3], p)].add(table.bench_name.vocab[table.bench_name.codes[idx[0]]])
    out = {}
    for (acc, p), values in ratios.items():
        arr = np.asarray(values)
        ratio = median(arr)
        name, kind = table.physical.vocab[acc], PlacementKind(table.placement.vocab[p])
        label = {"vgpu": "vGPU", "passthrough": "passthrough"}.get(kind.value, kind.value)
        out[(name, kind.value)] = PlacementOverhead(
            accelerator=name,
            placement=kind,
            ratio=ratio,
            interval=bootstrap_interval(arr),
            pairs=len(arr),
            benchmarks=sorted(benches[(acc, p)]),
            text=f"{label} {ratio:.2f}x bare metal on {name}, {len(arr)} paired "
            f"result{'s' * (len(arr) != 1)}",
        )
    return out


def select_overheads(
    overheads: dict[tuple[str, str], PlacementOverhead],
    accelerator: str | None = None,
    placement: PlacementKind | str | None = None,
) -> list[PlacementOverhead]:
    """The overheads ``compare placement`` and ``plot overhead`` show: one accelerator (matched as
    ``recommend`` matches it) and one placement, or all; sorted by accelerator and placement.

    Raises:
        InvalidInput: an unknown placement (the message lists the valid ones) or an accelerator
            name the catalogue does not know.
    """
    from stack_advisor.advisor.names import matching_accelerators

    kind = None
    if placement is not None:
        try:
            kind = PlacementKind(
                placement.strip().lower() if isinstance(placement, str) else placement
            ).value
        except ValueError:
            valid = ", ".join(p.value for p in PlacementKind)
            raise InvalidInput(f"placement: unknown {placement!r}; valid: {valid}") from None
    wanted = (
        None
        if accelerator is None
        else set(matching_accelerators(sorted({acc for acc, _ in overheads}), accelerator))
    )
    out = [
        o
        for (acc, p), o in overheads.items()
        if (wanted is None or acc in wanted) and (kind is None or p == kind)
    ]
    return sorted(out, key=lambda o: (o.accelerator, o.placement.value))


def mann_whitney(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) < 2 or len(b) < 2:
        return None
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        return 1.0
    # imported when a test runs: scipy.stats costs a second (scipy ships no type stubs)
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
