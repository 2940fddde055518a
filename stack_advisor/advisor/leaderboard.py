"""The leaderboard answer (``service.leaderboard``): the best stack per (canonical accelerator,
placement) of one benchmark, best first, with the token latencies LLM benchmarks record.

Kept in the advisor's one answer cache (``Advisor.memoised``), per store generation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import ObservationFilter
from stack_advisor.store.base import Store

if TYPE_CHECKING:
    from stack_advisor.advisor.charts.series import Series
    from stack_advisor.advisor.engine import Advisor

TOKEN_LATENCIES = (("ttft_p99_ms", "TTFT p99 (ms)"), ("tpot_p99_ms", "TPOT p99 (ms)"))


def leaderboard(
    advisor: Advisor,
    store: Store,
    *,
    benchmark: str,
    scenario: str | None,
    metric: str | None,
    accelerator: str | None,
    placement: str | None,
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """Best stack per (canonical accelerator, placement), best first: ``advisor plot throughput``'s
    rows (``plot_data.throughput_chart``, top 1 stack) for each placement, over the observations
    ``GET /v1/observations?benchmark_name=...`` returns."""
    return advisor.memoised(
        ("leaderboard", benchmark, scenario, metric, accelerator, placement),
        lambda: _leaderboard(
            store,
            benchmark=benchmark,
            scenario=scenario,
            metric=metric,
            accelerator=accelerator,
            placement=placement,
        ),
    )


def _by_placement(store: Store, benchmark: str, placement: str | None) -> dict[str, list[Any]]:
    """The benchmark's observations per placement kind; NotFound when it has none."""
    from stack_advisor.advisor.charts import data as plot_data

    kind = plot_data.parse_placement(placement, plot_data.FORM) if placement else None
    parts = benchmark.split("/")  # a name, family/name, or an id (family/name/hash: one series)
    flt = (
        ObservationFilter(benchmark_id=benchmark, placement=kind)
        if len(parts) == 3
        else ObservationFilter(benchmark_name=parts[-1], placement=kind)
    )
    by_place: dict[str, list[Any]] = {}
    for obs in store.iter_observations(flt):
        by_place.setdefault(obs.placement.kind.value, []).append(obs)
    if not by_place:
        raise NotFound(
            f"Benchmark: no observations of {benchmark!r}"
            f"{' in placement ' + placement if placement else ''}"
        )
    return by_place


class _Board:
    """The rows and notes gathered placement by placement, on the one series the first placement
    with results chose."""

    def __init__(
        self, benchmark: str, scenario: str | None, metric: str | None, accelerator: str | None
    ) -> None:
        self.benchmark, self.scenario, self.metric = benchmark, scenario, metric
        self.accelerator = accelerator
        self.rows: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.series: Series | None = None
        self.first_error: NotFound | None = None

    def add(self, place: str, observations: list[Any]) -> None:
        from stack_advisor.advisor.charts import data as plot_data

        series = self.series
        if series is not None:  # chosen on an earlier placement: this one's results of it
            observations = [
                o for o in observations if plot_data.in_series(o, series)
            ] or observations
        # an InvalidInput (several series match) goes to the user: one choice for every placement
        try:
            chart = plot_data.throughput_chart(
                observations,
                benchmark=self.benchmark,
                scenario=self.scenario,
                metric=self.metric,
                accelerators=[self.accelerator] if self.accelerator else None,
                top=1,
                spelling=plot_data.FORM,
            )
        except NotFound as exc:
            self.first_error = self.first_error or exc
            self.notes.append(f"{place}: {exc.message}")
            return
        except InvalidInput as exc:  # only other series here, several of them
            if series is None:
                raise
            self.notes.append(f"{place}: left out, its results are other series ({exc.message})")
            return
        self.series = series = series or chart.series
        if chart.series != series:
            self.notes.append(
                f"{place}: left out, its results are another series "
                f"({chart.series.heading if chart.series else ''})"
            )
            return
        self.notes.extend(f"{place}: {n}" for n in chart.notes if "stacks shown" not in n)
        self.rows.extend({**r, "placement": place} for r in chart.rows)


def _leaderboard(
    store: Store,
    *,
    benchmark: str,
    scenario: str | None,
    metric: str | None,
    accelerator: str | None,
    placement: str | None,
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    by_place = _by_placement(store, benchmark, placement)
    everything = [o for obs in by_place.values() for o in obs]
    notes: list[str] = []
    if metric is None:  # the board opens on the benchmark's throughput metric, saying so
        scenario, metric, notes = default_series(everything, scenario)
    board = _Board(benchmark, scenario, metric, accelerator)
    board.notes = notes
    for place in sorted(by_place):
        board.add(place, by_place[place])
    series, rows = board.series, board.rows
    if series is None:
        assert board.first_error is not None
        raise board.first_error
    sign = -1 if series.higher_is_better else 1
    rows.sort(key=lambda r: (sign * r["value"], r["accelerator"], r["placement"]))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    token_latencies = add_token_latencies(rows, everything, series.scenario)
    return (
        rows,
        board.notes,
        series.as_dict()
        | {
            "heading": series.heading,
            "value_label": series.value_label,
            "token_latencies": token_latencies,
        },
    )


def default_series(
    observations: list[Any], scenario: str | None
) -> tuple[str | None, str | None, list[str]]:
    """The scenario and metric a leaderboard opens on when none is chosen: the benchmark's
    throughput (the most-recorded higher-is-better metric, as ``recommend`` ranks by), in its
    most-recorded scenario; with a note saying so. (None, None) when nothing is higher-is-better."""
    counts: dict[tuple[str, str], int] = {}
    for o in observations:
        scen = str(o.benchmark.parameters.get("scenario") or "")
        if (
            o.valid
            and o.higher_is_better
            and (scenario is None or scen.lower() == scenario.lower())
        ):
            counts[(scen, o.metric)] = counts.get((scen, o.metric), 0) + 1
    if not counts:
        return scenario, None, []
    (scen, metric), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    chosen = scenario or scen or None
    return (
        chosen,
        metric,
        [
            f"showing {metric}{' in ' + scen if scen and not scenario else ''}: the benchmark's "
            "throughput metric (most recorded); choose another metric or scenario above"
        ],
    )


def add_token_latencies(
    rows: list[dict[str, Any]], observations: list[Any], scenario: str | None
) -> list[str]:
    """TTFT and TPOT (p99, ms) of each row's accelerator, placement and stack in the same scenario,
    where the results record them (LLM benchmarks): the median over the matching results. Returns
    the columns added (none when the benchmark records no token latencies)."""
    from stack_advisor.advisor.charts.data import canonical_name

    wanted = {m for m, _ in TOKEN_LATENCIES}
    found: dict[tuple[str, str, str, str], list[float]] = {}
    for o in observations:
        scen = str(o.benchmark.parameters.get("scenario") or "")
        if (
            o.metric in wanted
            and o.valid
            and (scenario is None or scen.lower() == scenario.lower())
        ):
            key = (
                o.metric,
                canonical_name(o.accelerator.model),
                o.placement.kind.value,
                o.stack.stack_id,
            )
            found.setdefault(key, []).append(o.value)
    columns = [m for m, _ in TOKEN_LATENCIES if any(k[0] == m for k in found)]
    for r in rows:
        for m in columns:
            values = found.get((m, r["accelerator"], r["placement"], r["stack_id"]))
            r[m] = float(np.median(values)) if values else None
    return columns
