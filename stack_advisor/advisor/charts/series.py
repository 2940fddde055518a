"""Which one series a chart shows: the benchmark, scenario and metric (a chart of mixed units
means nothing), how observations group into series, and how an error message names the inputs
that choose one (CLI options or web form fields).

The filtering by the names a user gave lives with the charts (``stack_advisor.advisor.charts.data``
``select_series``); this module picks the one series among what is left.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import Observation


@dataclass(frozen=True)
class Spelling:
    """How an error message names the inputs that choose a series: the CLI's options
    (``--benchmark resnet50 --metric ...``) or a web form's fields (``Benchmark: resnet50,
    ...``)."""

    form: bool = False

    def field(self, name: str) -> str:
        return name.capitalize() if self.form else f"--{name}"

    def choice(self, pairs: list[tuple[str, str]]) -> str:
        if self.form:
            return ", ".join(f"{self.field(k)}: {v}" for k, v in pairs)
        return " ".join(f"{self.field(k)} {v}" for k, v in pairs)


CLI = Spelling()


@dataclass(frozen=True)
class Series:
    """The one benchmark, scenario and metric a chart shows (a chart of mixed units means
    nothing)."""

    family: str
    benchmark: str
    scenario: str | None
    division: str | None
    metric: str
    unit: str
    higher_is_better: bool
    parameters: tuple[tuple[str, str], ...] = ()  # the benchmark's others, e.g. batch size

    @property
    def per_accelerator(self) -> bool:
        return self.higher_is_better

    @property
    def value_label(self) -> str:
        per = " per accelerator" if self.per_accelerator else ""
        arrow = "higher is better" if self.higher_is_better else "lower is better"
        return f"{self.metric}{per} ({self.unit}) — {arrow}"

    @property
    def heading(self) -> str:
        parts = [f"{self.family}/{self.benchmark}"]
        if self.scenario:
            parts.append(self.scenario)
        if self.division:
            parts.append(f"{self.division} division")
        if self.parameters:
            text = " ".join(f"{k}={v}" for k, v in self.parameters)
            parts.append(text if len(text) <= 60 else text[:59] + "…")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "benchmark": self.benchmark,
            "scenario": self.scenario,
            "division": self.division,
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "per_accelerator": self.per_accelerator,
            "parameters": dict(self.parameters),
        }


def one_series(
    chosen: list[Observation], benchmark: str | None, spelling: Spelling = CLI
) -> tuple[list[Observation], Series, list[str]]:
    """The one series of already filtered observations, with notes (the division kept, or the
    series kept where the named benchmark's scenario and metric were run with several parameter
    sets).

    Raises:
        InvalidInput: several series match; the message lists each as the options that choose it.
    """
    by_key: dict[tuple[Any, ...], list[Observation]] = defaultdict(list)
    for obs in chosen:
        by_key[series_key(obs)].append(obs)
    notes: list[str] = []
    if benchmark:
        by_key = _best_variant(by_key, benchmark, spelling, notes)
    by_key = _throughput_of_one_slice(by_key, notes)
    if len(by_key) > 1:
        ranked = sorted(by_key.items(), key=lambda kv: -len(kv[1]))
        listed = "; ".join(
            f"{_how_to_choose(key, group, by_key, spelling)} ({len(group)} obs)"
            for key, group in ranked[:8]
        )
        more = f" (and {len(ranked) - 8} more)" if len(ranked) > 8 else ""
        raise InvalidInput(
            f"{len(by_key)} benchmark/scenario/metric series match; choose one: {listed}{more}"
        )
    (((family, name, params, metric_name, unit), chosen),) = by_key.items()
    chosen, division = _division(chosen, notes)
    series = Series(
        family=family,
        benchmark=name,
        scenario=dict(params).get("scenario") or None,
        division=division,
        metric=metric_name,
        unit=unit,
        higher_is_better=chosen[0].higher_is_better,
        parameters=tuple((k, v) for k, v in params if k != "scenario"),
    )
    return chosen, series, notes


def _throughput_of_one_slice(
    by_key: dict[tuple[Any, ...], list[Observation]], notes: list[str]
) -> dict[tuple[Any, ...], list[Observation]]:
    """Series of one benchmark and scenario that differ only by metric, no metric named: its
    one throughput, as ``recommend`` and the leaderboard read it (an LLM's Server results record
    a dozen TTFT/TPOT statistics beside their tokens/s), noted; else the series as they are."""
    slices = {key[:3] for key in by_key}
    faster = [key for key, group in by_key.items() if group[0].higher_is_better]
    if len(by_key) < 2 or len(slices) != 1 or len(faster) != 1:
        return by_key
    others = sorted(str(key[3]) for key in by_key if key != faster[0])
    notes.append(
        f"metric: none named; its throughput {faster[0][3]} (also recorded: {', '.join(others)})"
    )
    return {faster[0]: by_key[faster[0]]}


def _division(chosen: list[Observation], notes: list[str]) -> tuple[list[Observation], str | None]:
    """The closed division where a series has it and others (as ``recommend`` ranks), noted; else
    the one division recorded, if any."""
    divisions = {str(o.benchmark.parameters.get("division", "")) for o in chosen}
    if "closed" in divisions and len(divisions) > 1:
        left = len([o for o in chosen if o.benchmark.parameters.get("division") != "closed"])
        notes.append(
            f"closed division only, as recommend ranks ({left} open/other-division "
            "results left out)"
        )
        return [o for o in chosen if o.benchmark.parameters.get("division") == "closed"], "closed"
    if len(divisions) == 1 and divisions != {""}:
        return chosen, divisions.pop()
    return chosen, None


def _best_variant(
    by_key: dict[tuple[Any, ...], list[Observation]],
    benchmark: str,
    spelling: Spelling,
    notes: list[str],
) -> dict[tuple[Any, ...], list[Observation]]:
    """Where the series are one named benchmark, scenario and metric run with different
    parameters (batch size, data, SUT), the one with the most results answers; a note says how
    to choose the others. Any other mix is left for the caller to refuse."""
    firsts = {(f, n, dict(p).get("scenario"), m, u) for f, n, p, m, u in by_key}
    if len(by_key) < 2 or len(firsts) != 1:
        return by_key
    ranked = sorted(by_key.items(), key=lambda kv: -len(kv[1]))
    others = "; ".join(
        f"{_how_to_choose(k, g, by_key, spelling)} ({len(g)} obs)" for k, g in ranked[1:4]
    )
    notes.append(
        f"{len(ranked) - 1} other series of {benchmark} with other parameters left out (the one "
        f"with the most results, {len(ranked[0][1])}, kept); choose another with {others}"
    )
    return dict(ranked[:1])


def series_key(obs: Observation) -> tuple[Any, ...]:
    """What makes two observations one series: benchmark, its parameters (the division aside:
    it is chosen after), metric and unit."""
    b = obs.benchmark
    params = tuple(sorted((k, str(v)) for k, v in b.parameters.items() if k != "division"))
    return (b.family, b.name, params, obs.metric, obs.unit)


def _how_to_choose(
    key: tuple[Any, ...],
    group: list[Observation],
    all_keys: dict[tuple[Any, ...], list[Observation]],
    spelling: Spelling = CLI,
) -> str:
    """The options that pick this series: name, scenario and metric when they are enough, else
    the benchmark id."""
    _family, name, params, metric, _unit = key
    scenario = dict(params).get("scenario")
    same = [
        k
        for k in all_keys
        if k[1] == name and dict(k[2]).get("scenario") == scenario and k[3] == metric
    ]
    if len(same) == 1:
        return spelling.choice(
            [
                ("benchmark", name),
                *([("scenario", scenario)] if scenario else []),
                ("metric", metric),
            ]
        )
    return spelling.choice([("benchmark", group[0].benchmark.benchmark_id), ("metric", metric)])
