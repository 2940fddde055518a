"""The Explore page's query: observations filtered, sorted and paged over the advisor's columnar
table (the one ``recommend``, ``compare`` and ``predict`` answer from), so 100k rows filter and
sort in milliseconds and what the page shows is what the advisor reasons over.

An accelerator that names one board is matched exactly, as the observations API matches it; a
family, generation or vendor as ``recommend`` matches it (``stack_advisor.advisor.names``). Every
other filter is an exact value, and a value the knowledge base never recorded is refused with the
closest ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from stack_advisor.advisor.knowledge.columns import Column
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.names import matching_accelerators
from stack_advisor.catalog.rounds import round_key
from stack_advisor.schema.errors import InvalidInput

COMPONENTS = ("driver", "cuda", "cudnn", "tensorrt", "framework", "framework_version")
COLUMN_FILTERS = {
    "benchmark": "bench_name",
    "scenario": "scenario",
    "metric": "metric",
    "placement": "placement",
    "source": "source",
    "round": "round",
}
SORTS = (
    "value",
    "per_accelerator",
    "accelerator",
    "benchmark",
    "scenario",
    "round",
    "source",
    "key",
)
PAGE_SIZES = (25, 50, 100, 200)


class ExploreQuery(BaseModel):
    """Every field of the Explore form: the URL's query string holds them all (the permalink)."""

    model_config = ConfigDict(extra="ignore")

    accelerator: str | None = None
    benchmark: str | None = None
    scenario: str | None = None
    metric: str | None = None
    placement: str | None = None
    source: str | None = None
    round: str | None = None
    driver: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    tensorrt: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    advisor_figure: bool = Field(default=False, description="add the advisor's figure for each row")
    sort: str = "key"
    order: str = "asc"
    page: int = Field(default=1, ge=1)
    size: int = 50

    def cleaned(self) -> ExploreQuery:
        """Blank form fields are no filter; sort, order and size checked with a clear error."""
        data: dict[str, Any] = {
            k: (v.strip() or None) if isinstance(v, str) else v
            for k, v in self.model_dump().items()
        }
        data["sort"] = data["sort"] or "key"
        data["order"] = data["order"] or "asc"
        q = ExploreQuery(**data)
        if q.sort not in SORTS:
            raise InvalidInput(f"sort: unknown {q.sort!r}; valid: {', '.join(SORTS)}")
        if q.order not in ("asc", "desc"):
            raise InvalidInput(f"order: must be asc or desc, got {q.order!r}")
        if q.size not in PAGE_SIZES:
            raise InvalidInput(
                f"size: must be one of {', '.join(map(str, PAGE_SIZES))}, got {q.size}"
            )
        return q

    def filters(self) -> dict[str, str]:
        return {
            k: v
            for k, v in self.model_dump().items()
            if k in ("accelerator", *COLUMN_FILTERS, *COMPONENTS) and v
        }


@dataclass
class ExplorePage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    figures: list[dict[str, Any]] = field(default_factory=list)


def _exact(column: Column, value: str, name: str) -> np.ndarray:
    code = column.code(value)
    if code < 0:
        known = [str(v) for v in column.vocab if v]
        close = difflib.get_close_matches(value, known, n=4, cutoff=0.5)
        hint = (
            f"did you mean: {', '.join(close)}"
            if close
            else f"recorded: {', '.join(sorted(known)[:12])}"
        )
        raise InvalidInput(f"{name}: {value!r} is not recorded in the knowledge base; {hint}")
    matches: np.ndarray = column.codes == code
    return matches


def accelerator_names(table: ObservationTable, text: str) -> list[str]:
    """The stored names an accelerator filter selects: one board or slice exactly, as
    ``GET /v1/observations?accelerator=`` resolves it (``Store.query_observations``); a family,
    generation or vendor as ``recommend`` matches it."""
    from stack_advisor.catalog import resolve_accelerator

    match = resolve_accelerator(text)
    if match.resolved and match.kind in ("accelerator", "cpu"):
        return [match.key]
    return matching_accelerators(table.accelerator.vocab, text)


def matching_rows(table: ObservationTable, q: ExploreQuery) -> np.ndarray:
    """Row indices of the table that pass every filter of ``q``.

    Raises:
        InvalidInput: a value never recorded (with the closest ones), an unknown accelerator.
    """
    mask = np.ones(table.n, dtype=bool)
    if q.accelerator:
        mask &= table.accelerator.mask(accelerator_names(table, q.accelerator))
    for name, column in COLUMN_FILTERS.items():
        value = getattr(q, name)
        if value:
            mask &= _exact(getattr(table, column), value, name)
    wanted = {c: getattr(q, c) for c in COMPONENTS if getattr(q, c)}
    if wanted:
        sids = [
            sid
            for sid, st in table.stacks.items()
            if all((getattr(st, c) or "") == v for c, v in wanted.items())
        ]
        if not sids:
            first, value = next(iter(wanted.items()))
            known = sorted(
                {getattr(st, first) for st in table.stacks.values() if getattr(st, first)}
            )
            close = difflib.get_close_matches(value, known, n=4, cutoff=0.5)
            hint = (
                f"did you mean: {', '.join(close)}"
                if close
                else f"recorded: {', '.join(known[:12])}"
            )
            raise InvalidInput(
                f"{first}: no stack in the knowledge base has "
                f"{', '.join(f'{c}={v}' for c, v in wanted.items())}; {hint}"
            )
        mask &= table.stack.mask(sids)
    return np.flatnonzero(mask)


def per_accelerator_values(table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """Throughput-like values divided by the system's accelerator count (as recommend ranks);
    latencies as they are."""
    values = table.value[rows]
    out: np.ndarray = np.where(
        table.higher_is_better[rows], values / np.maximum(table.count[rows], 1), values
    )
    return out


def _rank(column: Column, key: Any = str) -> np.ndarray:
    """Each code's position in the sorted vocabulary, so codes sort as their values do."""
    order = sorted(range(len(column.vocab)), key=lambda c: key(column.vocab[c]))
    rank = np.empty(max(1, len(column.vocab)), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def sort_rows(table: ObservationTable, rows: np.ndarray, sort: str, order: str) -> np.ndarray:
    if sort == "value":
        key = table.value[rows]
    elif sort == "per_accelerator":
        key = per_accelerator_values(table, rows)
    elif sort == "key":
        return rows if order == "asc" else rows[::-1]  # the table keeps the store's key order
    else:
        column = table.bench_name if sort == "benchmark" else getattr(table, sort)
        key = _rank(column, round_key if sort == "round" else str)[column.codes[rows]]
    idx = np.argsort(key, kind="stable")
    return rows[idx[::-1]] if order == "desc" else rows[idx]


def row_dict(table: ObservationTable, r: int) -> dict[str, Any]:
    stack = table.stacks[table.stack.vocab[table.stack.codes[r]]]
    value = float(table.value[r])
    count = int(table.count[r])
    hib = bool(table.higher_is_better[r])

    def col(name: str) -> Any:
        column = getattr(table, name)
        return column.vocab[column.codes[r]]

    return {
        "key": table.keys[r],
        "accelerator": col("accelerator"),
        "count": count,
        "placement": col("placement"),
        "benchmark": col("bench_name"),
        "scenario": col("scenario"),
        "metric": col("metric"),
        "unit": col("unit"),
        "value": value,
        "per_accelerator": value / max(count, 1) if hib else value,
        "higher_is_better": hib,
        "driver": stack.driver,
        "cuda": stack.cuda,
        "cudnn": stack.cudnn,
        "tensorrt": stack.tensorrt,
        "framework": stack.framework,
        "framework_version": stack.framework_version,
        # MLCommons' reference code ran (the system folder says so): asked as such
        "implementation": stack.extra.get("implementation"),
        "stack_id": table.stack.vocab[table.stack.codes[r]],
        "source": col("source"),
        "round": col("round"),
        "submitter": col("submitter"),
        "family": col("family"),
        "division": col("division"),
        "basis": "observed",
    }


def accelerator_figures(
    table: ObservationTable, rows: np.ndarray, limit: int = 12
) -> list[dict[str, Any]]:
    """Per (accelerator, benchmark, scenario, metric) of the selection: observations, median and
    p10–p90 of the per-accelerator values; the most-observed ``limit`` groups."""
    if not len(rows):
        return []
    n_bench, n_metric = len(table.benchmark.vocab), len(table.metric.vocab)
    keys = (
        table.accelerator.codes[rows].astype(np.int64) * n_bench + table.benchmark.codes[rows]
    ) * n_metric + table.metric.codes[rows]
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    per = per_accelerator_values(table, rows)
    out = []
    for g in np.argsort(-counts, kind="stable")[:limit]:
        members = inverse.ravel() == g
        vals = per[members]
        acc, rest = divmod(int(uniq[g]), n_bench * n_metric)
        bench, metric = divmod(rest, n_metric)
        info = table.benchmarks[table.benchmark.vocab[bench]]
        r0 = rows[members][0]
        out.append(
            {
                "accelerator": table.accelerator.vocab[acc],
                "benchmark": info.name,
                "scenario": info.scenario or "",
                "metric": table.metric.vocab[metric],
                "unit": table.unit.vocab[table.unit.codes[r0]],
                "per_accelerator": bool(table.higher_is_better[r0]),
                "observations": int(counts[g]),
                "median": float(np.median(vals)),
                "p10": float(np.quantile(vals, 0.1)),
                "p90": float(np.quantile(vals, 0.9)),
            }
        )
    return out


def explore(table: ObservationTable, q: ExploreQuery) -> ExplorePage:
    """One page of the selection, sorted, with the per-accelerator figures of the whole
    selection."""
    rows = sort_rows(table, matching_rows(table, q), q.sort, q.order)
    pages = max(1, -(-len(rows) // q.size))
    page = min(q.page, pages)
    shown = rows[(page - 1) * q.size : page * q.size]
    return ExplorePage(
        rows=[row_dict(table, int(r)) for r in shown],
        total=len(rows),
        page=page,
        pages=pages,
        figures=accelerator_figures(table, rows),
    )


def facets(table: ObservationTable) -> dict[str, list[str]]:
    """The values each filter can take (the form's choices), from the table itself."""
    out = {
        name: sorted(str(v) for v in getattr(table, column).vocab if v)
        for name, column in COLUMN_FILTERS.items()
    }
    out["round"] = sorted(out["round"], key=round_key)
    out["accelerator"] = sorted(str(v) for v in table.accelerator.vocab if v)
    for c in COMPONENTS:
        out[c] = sorted({str(getattr(st, c)) for st in table.stacks.values() if getattr(st, c)})
    return out
