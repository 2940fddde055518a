"""The rows of an ``ObservationTable`` being built: what a row takes from its benchmark and from
where it was measured (each worked out once), and the one builder that decides what a row holds,
whether the observations come as models or from a store's flat read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stack_advisor.advisor.knowledge.columns import Column
from stack_advisor.schema.models import Benchmark, SoftwareStack
from stack_advisor.store.base import FlatObservations

CATEGORICAL = (
    "metric",
    "unit",
    "benchmark",
    "family",
    "bench_name",
    "scenario",
    "division",
    "round",
    "source",
    "submitter",
    "accelerator",
    "physical",
    "placement",
    "stack",
    "candidate",
    "system",
)
"""The table's string columns, each a ``Column``; every one is filled row by row but those in
``DERIVED``."""
DERIVED = ("physical",)  # from the accelerator column, once per distinct name (``columns``)


@dataclass
class BenchmarkInfo:
    benchmark_id: str
    family: str
    name: str
    parameters: dict[str, Any]

    @property
    def scenario(self) -> str | None:
        s = self.parameters.get("scenario")
        return None if s is None else str(s)


@dataclass(frozen=True, slots=True)
class BenchPart:
    """What a row takes from its benchmark, worked out once per benchmark."""

    info: BenchmarkInfo
    scenario: str
    division: str | None  # the benchmark's own division parameter; None: the provenance's

    @classmethod
    def of(cls, bench: Benchmark) -> BenchPart:
        info = BenchmarkInfo(bench.benchmark_id, bench.family, bench.name, dict(bench.parameters))
        params = info.parameters
        return cls(
            info,
            str(params.get("scenario", "")),
            str(params["division"]) if "division" in params else None,
        )


@dataclass(frozen=True, slots=True)
class ContextPart:
    """What a row takes from where it was measured, worked out once per context."""

    stack_id: str
    stack: SoftwareStack
    accelerator: str
    count: int
    placement: str
    source: str
    host: str  # "" when none
    candidate: tuple[str, str, int, str]

    @classmethod
    def of(
        cls,
        stack_id: str,
        stack: SoftwareStack,
        accelerator: str,
        count: int,
        placement: str,
        source: str,
        host: str,
    ) -> ContextPart:
        count = max(1, count)
        return cls(
            stack_id,
            stack,
            accelerator,
            count,
            placement,
            source,
            host,
            (stack_id, accelerator, count, placement),
        )


def flat_context(
    flat: FlatObservations, context_id: str, stack_ids: dict[str, str]
) -> ContextPart | None:
    ctx = flat.contexts.get(context_id)
    stack = None if ctx is None else flat.stacks.get(ctx.stack_id)
    if ctx is None or stack is None:
        return None
    sid = stack_ids.get(ctx.stack_id)
    if sid is None:  # the id the paged read computes from the stack (not the node's key)
        sid = stack_ids[ctx.stack_id] = stack.stack_id
    return ContextPart.of(
        sid,
        stack,
        ctx.accelerator,
        ctx.accelerator_count,
        ctx.placement_kind,
        ctx.source,
        ctx.host or "",
    )


class RowBuilder:
    """The rows of a table being built, one ``add`` per valid observation: the one place that
    decides what a row holds, whether the observations come as models or from the flat read."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.counts: list[int] = []
        self.stamps: list[float] = []
        self.hib: list[bool] = []
        self.cols: dict[str, list[Any]] = {k: [] for k in CATEGORICAL if k not in DERIVED}
        self.keys: list[str] = []
        self.benchmarks: dict[str, BenchmarkInfo] = {}
        self.stacks: dict[str, SoftwareStack] = {}

    def add(
        self,
        key: str,
        metric: str,
        unit: str,
        value: float,
        stamp: float,
        hib: bool,
        details: dict[str, str],
        bench: BenchPart,
        ctx: ContextPart,
    ) -> None:
        info = bench.info
        bid, sid = info.benchmark_id, ctx.stack_id
        if bid not in self.benchmarks:
            self.benchmarks[bid] = info
        if sid not in self.stacks:
            self.stacks[sid] = ctx.stack
        self.values.append(value)
        self.counts.append(ctx.count)
        self.stamps.append(stamp)
        self.hib.append(hib)
        cols = self.cols
        cols["metric"].append(metric)
        cols["unit"].append(unit)
        cols["benchmark"].append(bid)
        cols["family"].append(info.family)
        cols["bench_name"].append(info.name)
        cols["scenario"].append(bench.scenario)
        cols["division"].append(
            bench.division if bench.division is not None else str(details.get("division", ""))
        )
        cols["round"].append(details.get("round", ""))
        cols["source"].append(ctx.source)
        cols["submitter"].append(details.get("submitter", ctx.host))
        cols["accelerator"].append(ctx.accelerator)
        cols["placement"].append(ctx.placement)
        cols["stack"].append(sid)
        cols["candidate"].append(ctx.candidate)
        cols["system"].append(
            (
                details.get("nodes", ""),
                details.get("accelerators_per_node", ""),
                details.get("accelerator_interconnect", ""),
            )
        )
        self.keys.append(key)

    def columns(self) -> dict[str, Any]:
        """The table's fields (all but its generation), built from the rows added."""
        stacks, cols = self.stacks, self.cols
        columns: dict[str, Any] = {name: Column.build(vals) for name, vals in cols.items()}
        return dict(
            n=len(self.values),
            value=np.asarray(self.values, dtype=np.float64),
            count=np.asarray(self.counts, dtype=np.int64),
            timestamp=np.asarray(self.stamps, dtype=np.float64),
            higher_is_better=np.asarray(self.hib, dtype=bool),
            keys=self.keys,
            benchmarks=self.benchmarks,
            stacks=stacks,
            images={sid: s.image for sid, s in stacks.items() if s.image},
            physical=Column.build(_mapped(cols["accelerator"], physical_key)),
            **columns,
        )


def _mapped(values: list[str], fn: Any) -> list[str]:
    memo: dict[str, str] = {}
    return [memo[v] if v in memo else memo.setdefault(v, fn(v)) for v in values]


def physical_key(accelerator: str) -> str:
    """The physical device a KB accelerator name stands for: its spec id (a vGPU profile such as
    ``A100-SXM-80C`` resolves to its GPU), MIG slices kept apart; the name itself when unknown."""
    from stack_advisor.catalog import resolve_accelerator

    match = resolve_accelerator(accelerator)
    return match.key if match.resolved and match.kind == "accelerator" else accelerator
