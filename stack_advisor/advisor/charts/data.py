"""What each chart shows, as plain rows: the numbers ``advisor plot ... --json`` prints and the
figure draws (``stack_advisor/advisor/charts/figures.py``), so a test can hold one against the
other.

Conventions shared with ``recommend``:

- accelerators appear under the catalogue's canonical name (``stack_advisor.catalog``; MIG
  slices kept apart) and a filter text is matched by
  ``stack_advisor.advisor.names.accelerator_selector``, as ``recommend`` matches it (one board or
  slice, a family, a generation or a vendor);
- throughput-like figures (higher is better) are per accelerator: a published result is a
  whole-system total, so it is divided by the system's accelerator count (``recommend`` ranks
  the same way); latencies are not divided;
- MLPerf's open division allows changed models, so the closed division is kept when a series has
  both (as ``recommend`` does).

Placement overhead is not computed here: ``overhead_rows`` formats what
``stack_advisor.advisor.estimate.analysis.placement_overheads`` computes for ``compare placement``.
"""

from __future__ import annotations

import difflib
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stack_advisor.advisor.charts.series import CLI, Series, Spelling, one_series, series_key
from stack_advisor.advisor.knowledge.table import round_number
from stack_advisor.advisor.names import accelerator_selector, canonical_metric
from stack_advisor.advisor.results import PlacementOverhead
from stack_advisor.catalog import resolve_accelerator, resolve_scenario
from stack_advisor.catalog.rounds import display_key
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import Observation, PlacementKind

TREND_COMPONENTS = ("framework_version", "cuda", "cudnn", "driver", "tensorrt", "nccl")
DEFAULT_TOP = 8  # stacks per accelerator, or lines per trend chart: tab10 gives each its colour
MAX_FACETS = 8  # accelerators per throughput chart


FORM = Spelling(form=True)  # a web form's fields (the CLI's options: CLI)


@dataclass
class Chart:
    """Rows to draw, the title, and notes saying what was left out and why."""

    title: str
    rows: list[dict[str, Any]]
    series: Series | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "series": self.series.as_dict() if self.series else None,
            "notes": self.notes,
            "rows": self.rows,
        }


# ---- selection -----------------------------------------------------------------------------


def parse_placement(text: str | None, spelling: Spelling = CLI) -> PlacementKind | None:
    """``--placement`` text → kind. Raises InvalidInput listing the valid values."""
    if text is None:
        return None
    try:
        return PlacementKind(text.strip().lower())
    except ValueError:
        valid = ", ".join(p.value for p in PlacementKind)
        raise InvalidInput(
            f"{spelling.field('placement')}: unknown placement {text!r}; valid: {valid}"
        ) from None


def canonical_name(accelerator: str) -> str:
    """The catalogue's canonical name of a stored accelerator (the name itself when unknown)."""
    return resolve_accelerator(accelerator).key


def filter_accelerators(
    observations: Sequence[Observation],
    accelerators: Sequence[str] | None,
    spelling: Spelling = CLI,
) -> list[Observation]:
    """Observations on any of the accelerators (matched as ``recommend`` matches them).

    Raises:
        InvalidInput: a name the catalogue does not know (with the closest names).
        NotFound: one of the names matches nothing in the selection; the message suggests close
        names.
    """
    if not accelerators:
        return list(observations)
    selectors = []
    for query in accelerators:
        try:
            selectors.append(accelerator_selector(query))
        except ValueError as exc:
            raise InvalidInput(f"{spelling.field('accelerator')}: {exc}") from None
    names = sorted({canonical_name(o.accelerator.model) for o in observations})
    for query, selector in zip(accelerators, selectors):
        if not any(selector.matches(n) for n in names):
            known = names
            close = difflib.get_close_matches(query, known, n=5, cutoff=0.4)
            hint = (
                f"did you mean: {', '.join(close)}" if close else f"known: {', '.join(known[:12])}"
            )
            raise NotFound(
                f"{spelling.field('accelerator')}: {query!r} matches no accelerator in "
                f"the selection; {hint}"
            )
    return [
        o
        for o in observations
        if any(sel.matches(canonical_name(o.accelerator.model)) for sel in selectors)
    ]


def benchmark_matches(query: str, obs: Observation) -> bool:
    b = obs.benchmark
    q = query.lower()
    return q in (b.benchmark_id.lower(), f"{b.family}/{b.name}".lower(), b.name.lower())


def select_series(
    observations: Sequence[Observation],
    *,
    benchmark: str | None = None,
    scenario: str | None = None,
    metric: str | None = None,
    spelling: Spelling = CLI,
) -> tuple[list[Observation], Series, list[str]]:
    """Narrow to one benchmark, scenario and metric; errors name the inputs as ``spelling`` says.

    ``benchmark`` matches a benchmark id, ``family/name`` or a name (case-insensitive).
    Returns the observations, the series and notes (e.g. the division kept, or the series kept
    where the named benchmark's scenario and metric were run with several parameter sets).
    Raises:
        NotFound: nothing matches (with close names). InvalidInput: several series match; the
        message lists each as the options that choose it.
    """
    chosen = _filtered([o for o in observations if o.valid], benchmark, scenario, metric, spelling)
    return one_series(chosen, benchmark, spelling)


def in_series(obs: Observation, series: Series) -> bool:
    """Whether ``obs`` belongs to ``series`` (the key ``select_series`` groups by)."""
    family, name, params, metric, unit = series_key(obs)
    scenario = dict(params).get("scenario")
    others = tuple((k, v) for k, v in params if k != "scenario")
    return (family, name, scenario or None, others, metric, unit) == (
        series.family,
        series.benchmark,
        series.scenario,
        series.parameters,
        series.metric,
        series.unit,
    )


def _filtered(
    chosen: list[Observation],
    benchmark: str | None,
    scenario: str | None,
    metric: str | None,
    spelling: Spelling,
) -> list[Observation]:
    """The observations of the benchmark, scenario and metric named (each optional).

    Raises:
        NotFound: nothing matches a filter (with the names recorded) or no observation is left.
    """
    if benchmark:
        # a LoadGen run of our own is named by its scenario: not a benchmark to suggest
        names = sorted({o.benchmark.name for o in chosen} - _scenario_names(chosen))
        chosen = [o for o in chosen if benchmark_matches(benchmark, o)]
        if not chosen:
            close = difflib.get_close_matches(benchmark, names, n=5, cutoff=0.5)
            raise NotFound(
                f"{spelling.field('benchmark')}: {benchmark!r} matches no benchmark in "
                "the selection; "
                + (
                    "did you mean: " + ", ".join(close)
                    if close
                    else "known: " + ", ".join(names[:12])
                )
            )
    if scenario:
        scenarios = sorted(
            {
                str(o.benchmark.parameters.get("scenario"))
                for o in chosen
                if o.benchmark.parameters.get("scenario")
            }
        )
        chosen = [
            o
            for o in chosen
            if str(o.benchmark.parameters.get("scenario", "")).lower() == scenario.lower()
        ]
        if not chosen:
            raise NotFound(
                f"{spelling.field('scenario')}: no observation of "
                f"{benchmark or 'the selection'} in scenario "
                f"{scenario!r}; recorded: {', '.join(scenarios) or 'none'}"
            )
    if metric:
        metric = canonical_metric(metric) or metric  # as users write it: ttft, tokens/s
        metrics = sorted({o.metric for o in chosen})
        chosen = [o for o in chosen if o.metric == metric]
        if not chosen:
            raise NotFound(
                f"{spelling.field('metric')}: no {metric!r} observations in the "
                f"selection; recorded: {', '.join(metrics)}"
            )
    if not chosen:
        raise NotFound("no valid observations match; `advisor plot ... --help` shows the filters")
    return chosen


def _scenario_names(observations: Iterable[Observation]) -> set[str]:
    """Benchmark names that are scenario names (``Offline``, ``SingleStream``)."""
    names = {o.benchmark.name for o in observations}
    return {n for n in names if resolve_scenario(n).resolved}


# ---- values --------------------------------------------------------------------------------


def per_accelerator(obs: Observation, series: Series) -> tuple[float, float | None, float | None]:
    """(value, p10, p90) of one observation on the chart's scale."""
    div = max(1, obs.accelerator.count) if series.per_accelerator else 1
    return (
        obs.value / div,
        None if obs.p10 is None else obs.p10 / div,
        None if obs.p90 is None else obs.p90 / div,
    )


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _round_of(obs: Observation) -> float:
    value = round_number(str(obs.provenance.details.get("round", "")))
    return 0.0 if math.isnan(value) else value


def spread(group: Sequence[Observation], series: Series) -> dict[str, Any]:
    """Median, p10 and p90 of a group's latest round (for one system size this is ``recommend``'s
    observed figure; a row mixing sizes takes the median of their per-accelerator values), and how
    the interval was made: across those observations when there are several, else the one
    observation's own measured p10–p90 (published results have none: the interval is then the point
    itself, and says so)."""
    newest = max(_round_of(o) for o in group)
    latest = [o for o in group if _round_of(o) == newest]
    scaled = [per_accelerator(o, series) for o in latest]
    values = [v for v, _lo, _hi in scaled]
    median = statistics.median(values)
    if len(values) >= 2:
        low, high, basis = (
            quantile(values, 0.1),
            quantile(values, 0.9),
            "p10-p90 across observations",
        )
    elif scaled[0][1] is not None and scaled[0][2] is not None:
        low, high, basis = float(scaled[0][1]), float(scaled[0][2]), "measured p10-p90 of the run"
    else:
        low, high, basis = median, median, "none: a single published result"
    if len(latest) < len(group):
        basis += f" of the latest round ({len(latest)} of {len(group)} observations)"
    return {
        "value": median,
        "low": min(low, median),
        "high": max(high, median),
        "interval": basis,
        "observations": len(group),
    }


def _better(series: Series) -> Any:
    """Sort key putting the best value first."""
    return (lambda v: -v) if series.higher_is_better else (lambda v: v)


# ---- charts --------------------------------------------------------------------------------


def throughput_chart(
    observations: Sequence[Observation],
    *,
    benchmark: str | None = None,
    scenario: str | None = None,
    metric: str | None = None,
    accelerators: Sequence[str] | None = None,
    top: int = DEFAULT_TOP,
    spelling: Spelling = CLI,
) -> Chart:
    """One row per (canonical accelerator, stack): per-accelerator median with its p10–p90, the
    best ``top`` stacks of each of the best ``MAX_FACETS`` accelerators."""
    if top < 1:
        raise InvalidInput(f"--top: must be >= 1, got {top}")
    chosen, series, notes = select_series(
        filter_accelerators(observations, accelerators, spelling),
        benchmark=benchmark,
        scenario=scenario,
        metric=metric,
        spelling=spelling,
    )
    by_accel = _stack_rows(chosen, series)
    key = _better(series)
    order = sorted(by_accel, key=lambda a: (key(by_accel[a][0]["value"]), a))
    if len(order) > MAX_FACETS:
        notes.append(
            f"{len(order) - MAX_FACETS} more accelerators left out (best {MAX_FACETS} shown): "
            f"{', '.join(order[MAX_FACETS : MAX_FACETS + 6])}"
            f"{' ...' if len(order) > MAX_FACETS + 6 else ''}; "
            "choose with --accelerator"
        )
        order = order[:MAX_FACETS]
    rows = []
    for accel in order:
        rows.extend(_best_stacks(accel, by_accel[accel], top, notes))
    per = " per accelerator" if series.per_accelerator else ""
    title = f"{series.heading}: {series.metric}{per} ({series.unit}) by software stack"
    return Chart(title=title, rows=rows, series=series, notes=notes)


def _stack_rows(chosen: Sequence[Observation], series: Series) -> dict[str, list[dict[str, Any]]]:
    """Rows per canonical accelerator, one per stack, best first."""
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    for obs in chosen:
        groups[(canonical_name(obs.accelerator.model), obs.stack.stack_id)].append(obs)
    by_accel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (accel, stack_id), group in groups.items():
        stack = group[0].stack
        by_accel[accel].append(
            {
                "accelerator": accel,
                "accelerator_names": sorted({o.accelerator.model for o in group}),
                "accelerator_counts": sorted({max(1, o.accelerator.count) for o in group}),
                "stack_id": stack_id,
                "stack": stack.label(),
                "framework": stack.framework or "?",
                **spread(group, series),
            }
        )
    key = _better(series)
    for rows in by_accel.values():
        rows.sort(key=lambda r: (key(r["value"]), r["stack"]))
    return by_accel


def _best_stacks(
    accel: str, ranked: list[dict[str, Any]], top: int, notes: list[str]
) -> list[dict[str, Any]]:
    """One accelerator's best ``top`` rows, labelled (noted when some are left out)."""
    kept = ranked[:top]
    seen: dict[str, int] = defaultdict(int)
    for row in kept:
        seen[row["stack"]] += 1
    for row in kept:  # two stacks alike in the label's components: tell them apart
        row["label"] = row["stack"] + (
            f" [{row['stack_id'][4:10]}]" if seen[row["stack"]] > 1 else ""
        )
    if len(ranked) > top:
        notes.append(f"{accel}: best {top} of {len(ranked)} stacks shown (--top to change)")
    return kept


def trend_chart(
    observations: Sequence[Observation],
    component: str = "framework_version",
    *,
    benchmark: str | None = None,
    scenario: str | None = None,
    metric: str | None = None,
    accelerators: Sequence[str] | None = None,
    top: int = DEFAULT_TOP,
) -> Chart:
    """Per-accelerator median per version of one component, one line per canonical accelerator;
    the ``top`` lines with the most observations. Framework versions need one framework."""
    if component not in TREND_COMPONENTS:
        raise InvalidInput(
            f"--component: unknown {component!r}; valid: {', '.join(TREND_COMPONENTS)}"
        )
    if top < 1:
        raise InvalidInput(f"--top: must be >= 1, got {top}")
    chosen, series, notes = select_series(
        filter_accelerators(observations, accelerators),
        benchmark=benchmark,
        scenario=scenario,
        metric=metric,
    )
    frameworks = sorted({o.stack.framework or "?" for o in chosen})
    if component == "framework_version" and len(frameworks) > 1:
        raise InvalidInput(
            f"framework versions of different frameworks do not share an axis; choose one with "
            f"--framework ({', '.join(frameworks)})"
        )
    groups = _version_groups(chosen, component, series)
    lines = _top_lines(groups, top, notes)
    rows = [
        {"series": line, "component": component, "version": version, **spread(group, series)}
        for (line, version), group in sorted(
            groups.items(), key=lambda kv: (kv[0][0], display_key(kv[0][1]))
        )
        if line in lines
    ]
    label = (
        f"{frameworks[0]} versions" if component == "framework_version" else f"{component} versions"
    )
    per = " per accelerator" if series.per_accelerator else ""
    title = f"{series.heading}: {series.metric}{per} ({series.unit}) across {label}"
    return Chart(title=title, rows=rows, series=series, notes=notes)


def _version_groups(
    chosen: Sequence[Observation], component: str, series: Series
) -> dict[tuple[str, str], list[Observation]]:
    """Observations per (canonical accelerator, version of ``component``).

    Raises:
        NotFound: no observation records a version of the component.
    """
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    for obs in chosen:
        version = getattr(obs.stack, component)
        if version:
            groups[(canonical_name(obs.accelerator.model), version)].append(obs)
    if not groups:
        raise NotFound(
            f"no observation of {series.heading} {series.metric} records a {component} version"
        )
    return groups


def _top_lines(
    groups: dict[tuple[str, str], list[Observation]], top: int, notes: list[str]
) -> list[str]:
    """The ``top`` accelerators with the most observations (noted when some are left out)."""
    evidence: dict[str, int] = defaultdict(int)
    for (line, _v), group in groups.items():
        evidence[line] += len(group)
    lines = sorted(evidence, key=lambda s: (-evidence[s], s))
    if len(lines) > top:
        notes.append(
            f"{top} of {len(lines)} accelerators shown (most observations first; --top or "
            f"--accelerator to change): left out {', '.join(lines[top : top + 6])}"
            f"{' ...' if len(lines) > top + 6 else ''}"
        )
        lines = lines[:top]
    return lines


def overhead_chart(overheads: Iterable[PlacementOverhead]) -> Chart:
    """Rows from the overheads ``compare placement`` reports (``Advisor.placement_overhead`` or
    ``analysis.select_overheads``): the same accelerators, ratios and intervals.

    Raises:
        NotFound: no accelerator was measured both on bare metal and virtualised.
    """
    rows = [
        {
            "accelerator": o.accelerator,
            "placement": o.placement.value,
            "ratio": o.ratio,
            "low": o.interval.low if o.interval else o.ratio,
            "high": o.interval.high if o.interval else o.ratio,
            "interval": "bootstrap p10-p90 of the median ratio"
            if o.interval
            else "none: a single pair",
            "pairs": o.pairs,
            "benchmarks": o.benchmarks,
            "summary": o.text,
        }
        for o in overheads
    ]
    if not rows:
        raise NotFound(
            "no benchmark was measured both on bare metal and in a VM (passthrough or vGPU) on the "
            "same accelerator, round and count, so there is no overhead to plot"
        )
    return Chart(
        title="Speed in VMs relative to bare metal (paired results; 1.0 = bare metal)", rows=rows
    )
