"""Charts from the store's observations: throughput by stack per accelerator, placement overhead,
trends across versions. Each chart is two steps: ``*_rows`` (plain rows, also what ``--json``
prints) and ``draw_*`` (a matplotlib figure, Agg backend, written as PNG or SVG)."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from graph_schema.errors import InvalidInput, NotFound
from graph_schema.models import Observation, PlacementKind

FORMATS = (".png", ".svg")
TREND_COMPONENTS = ("framework_version", "cuda", "cudnn", "driver", "tensorrt", "nccl")
MAX_BARS = 40


def _series_key(obs: Observation) -> tuple[str, str, str]:
    return (obs.benchmark.benchmark_id, obs.metric, obs.unit)


def pick_series(
    observations: Sequence[Observation], benchmark: str | None, metric: str | None
) -> tuple[list[Observation], str, str, str]:
    """Narrow to one benchmark+metric (a chart of mixed units means nothing).

    ``benchmark`` matches a benchmark id, ``family/name`` or a name.
    Raises:
        NotFound: nothing matches. InvalidInput: several series match; the message lists them.
    """
    def matches(obs: Observation) -> bool:
        b = obs.benchmark
        if benchmark and benchmark not in (b.benchmark_id, f"{b.family}/{b.name}", b.name):
            return False
        return not metric or obs.metric == metric

    chosen = [o for o in observations if o.valid and matches(o)]
    if not chosen:
        raise NotFound(
            f"no valid observations for benchmark={benchmark or 'any'} metric={metric or 'any'}; "
            "`advisor plot ... --help` shows the filters"
        )
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for obs in chosen:
        counts[_series_key(obs)] += 1
    if len(counts) > 1:
        listed = "; ".join(f"--benchmark {b} --metric {m} ({n} obs)"
                           for (b, m, _u), n in sorted(counts.items(), key=lambda kv: -kv[1])[:8])
        raise InvalidInput(
            f"{len(counts)} benchmark/metric series match; choose one: {listed}"
        )
    (bench_id, metric_name, unit), = counts
    return chosen, bench_id, metric_name, unit


def _spread(group: Sequence[Observation]) -> tuple[float, float, float]:
    values = [o.value for o in group]
    median = statistics.median(values)
    low = min(o.p10 if o.p10 is not None else o.value for o in group)
    high = max(o.p90 if o.p90 is not None else o.value for o in group)
    return median, min(low, median), max(high, median)


def throughput_rows(
    observations: Sequence[Observation], benchmark: str | None = None, metric: str | None = None
) -> list[dict[str, Any]]:
    """One row per (accelerator, stack): median value, p10..p90 band, observation count."""
    chosen, bench_id, metric_name, unit = pick_series(observations, benchmark, metric)
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    labels: dict[str, str] = {}
    for obs in chosen:
        groups[(obs.accelerator.model, obs.stack.stack_id)].append(obs)
        labels[obs.stack.stack_id] = obs.stack.label()
    rows = []
    for (accel, stack_id), group in sorted(groups.items()):
        median, low, high = _spread(group)
        rows.append({
            "accelerator": accel, "stack_id": stack_id, "stack": labels[stack_id],
            "benchmark_id": bench_id, "metric": metric_name, "unit": unit,
            "value": median, "low": low, "high": high, "observations": len(group),
            "higher_is_better": group[0].higher_is_better,
        })
    return rows


def overhead_rows(observations: Iterable[Observation]) -> list[dict[str, Any]]:
    """Virtualisation overhead against bare metal, in percent (positive = slower than bare
    metal), for every benchmark/metric/stack/accelerator measured both ways; one row per
    (accelerator, placement kind) with the median over those pairs."""
    cells: dict[tuple[Any, ...], dict[PlacementKind, list[float]]] = defaultdict(
        lambda: defaultdict(list))
    better: dict[tuple[Any, ...], bool] = {}
    for obs in observations:
        if not obs.valid:
            continue
        key = (*_series_key(obs), obs.stack.stack_id, obs.accelerator.model)
        cells[key][obs.placement.kind].append(obs.value)
        better[key] = obs.higher_is_better
    pooled: dict[tuple[str, PlacementKind], list[float]] = defaultdict(list)
    for key, by_kind in cells.items():
        base_values = by_kind.get(PlacementKind.BARE_METAL)
        if not base_values:
            continue
        base = statistics.median(base_values)
        if base == 0:
            continue
        for kind, values in by_kind.items():
            if kind in (PlacementKind.BARE_METAL, PlacementKind.UNKNOWN):
                continue
            value = statistics.median(values)
            pct = (base - value) / base * 100 if better[key] else (value - base) / base * 100
            pooled[(key[4], kind)].append(pct)
    if not pooled:
        raise NotFound(
            "no benchmark was measured both on bare metal and in a VM (passthrough or vGPU) with "
            "the same stack and accelerator, so there is no overhead to plot"
        )
    return [
        {"accelerator": accel, "placement": kind.value,
         "overhead_pct": statistics.median(values),
         "q25_pct": _quantile(values, 0.25), "q75_pct": _quantile(values, 0.75),
         "min_pct": min(values), "max_pct": max(values), "pairs": len(values)}
        for (accel, kind), values in sorted(pooled.items(), key=lambda kv: (kv[0][0], kv[0][1].value))
    ]


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def version_key(version: str) -> tuple[Any, ...]:
    """Sort versions numerically where they are numbers: 2.10 after 2.9."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+_]", version))


def trend_rows(
    observations: Sequence[Observation],
    component: str = "framework_version",
    benchmark: str | None = None,
    metric: str | None = None,
) -> list[dict[str, Any]]:
    """Median value per version of one component, one series per accelerator (and framework,
    when the component is the framework version)."""
    if component not in TREND_COMPONENTS:
        raise InvalidInput(
            f"component: unknown {component!r}; valid: {', '.join(TREND_COMPONENTS)}")
    chosen, bench_id, metric_name, unit = pick_series(observations, benchmark, metric)
    frameworks = sorted({o.stack.framework or "?" for o in chosen})
    if component == "framework_version" and len(frameworks) > 1:
        raise InvalidInput(
            f"framework versions of different frameworks do not share an axis; choose one with "
            f"--framework ({', '.join(frameworks)})"
        )
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    for obs in chosen:
        version = getattr(obs.stack, component)
        if not version:
            continue
        series = obs.accelerator.model
        if component == "framework_version":
            series = f"{obs.accelerator.model} · {obs.stack.framework or '?'}"
        groups[(series, version)].append(obs)
    if not groups:
        raise NotFound(f"no observation of {bench_id} {metric_name} records a {component} version")
    rows = []
    for (series, version), group in sorted(groups.items(), key=lambda kv: (kv[0][0], version_key(kv[0][1]))):
        median, low, high = _spread(group)
        rows.append({"series": series, "component": component, "version": version,
                     "benchmark_id": bench_id, "metric": metric_name, "unit": unit,
                     "value": median, "low": low, "high": high, "observations": len(group)})
    return rows


# ---- drawing -------------------------------------------------------------------------------

def _check_out(out: Path) -> None:
    if out.suffix.lower() not in FORMATS:
        raise InvalidInput(f"--out: {str(out)!r} must end in .png or .svg")


def _save(fig: Figure, out: Path) -> Path:
    _check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out


def _grouped_bars(ax: Any, groups: list[str], series: list[str],
                  cell: dict[tuple[str, str], dict[str, Any]], value: str,
                  err: tuple[str, str] | None) -> None:
    width = 0.8 / max(len(series), 1)
    cmap = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
    for i, name in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for g, group in enumerate(groups):
            row = cell.get((group, name))
            if row is None:
                continue
            xs.append(g - 0.4 + width * (i + 0.5))
            ys.append(row[value])
            if err:
                lo.append(max(row[value] - row[err[0]], 0))
                hi.append(max(row[err[1]] - row[value], 0))
        ax.bar(xs, ys, width=width * 0.95, label=name, color=cmap(i % cmap.N),
               yerr=[lo, hi] if err else None, capsize=3 if err else 0,
               error_kw={"elinewidth": 1, "alpha": 0.7})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20 if len(groups) > 3 else 0, ha="right" if len(groups) > 3 else "center")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def draw_throughput(rows: list[dict[str, Any]], out: Path, title: str | None = None) -> Path:
    _check_out(out)
    if len(rows) > MAX_BARS:
        raise InvalidInput(
            f"{len(rows)} bars would not be readable (limit {MAX_BARS}); narrow with "
            "--accelerator or --framework")
    accels = sorted({r["accelerator"] for r in rows})
    stacks = sorted({r["stack"] for r in rows})
    cell = {(r["accelerator"], r["stack"]): r for r in rows}
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + 0.45 * len(rows) + 1.2 * len(accels)), 4.8))
    _grouped_bars(ax, accels, stacks, cell, "value", ("low", "high"))
    first = rows[0]
    arrow = "higher is better" if first["higher_is_better"] else "lower is better"
    ax.set_ylabel(f"{first['metric']} ({first['unit']}) — {arrow}")
    ax.set_title(title or f"{first['benchmark_id']}: {first['metric']} by stack per accelerator")
    ax.legend(title="stack", loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=8)
    ax.set_xlabel("bars: median of observations; whiskers: p10–p90", fontsize=8, alpha=0.8)
    return _save(fig, out)


def draw_overhead(rows: list[dict[str, Any]], out: Path, title: str | None = None) -> Path:
    _check_out(out)
    accels = sorted({r["accelerator"] for r in rows})
    kinds = sorted({r["placement"] for r in rows})
    cell = {(r["accelerator"], r["placement"]): r for r in rows}
    fig, ax = plt.subplots(figsize=(max(5.5, 1.5 + 1.4 * len(accels)), 4.5))
    _grouped_bars(ax, accels, kinds, cell, "overhead_pct", ("q25_pct", "q75_pct"))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("overhead vs bare metal (%) — lower is better")
    ax.set_title(title or "Placement overhead against bare metal")
    for (accel, kind), row in cell.items():
        x = accels.index(accel) - 0.4 + (0.8 / len(kinds)) * (kinds.index(kind) + 0.5)
        ax.annotate(f"n={row['pairs']}", (x, max(row["q75_pct"], row["overhead_pct"], 0)),
                    ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                    textcoords="offset points")
    ax.legend(title="placement", loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set_xlabel("bars: median over benchmark/stack pairs measured both ways (n); "
                  "whiskers: 25th–75th percentile", fontsize=8, alpha=0.8)
    return _save(fig, out)


def draw_trend(rows: list[dict[str, Any]], out: Path, title: str | None = None) -> Path:
    _check_out(out)
    versions = sorted({r["version"] for r in rows}, key=version_key)
    position = {v: i for i, v in enumerate(versions)}
    by_series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_series[row["series"]].append(row)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.5 + 0.7 * len(versions)), 4.5))
    cmap = plt.get_cmap("tab10" if len(by_series) <= 10 else "tab20")
    band_alpha = 0.15 if len(by_series) <= 4 else 0.0
    for i, (series, points) in enumerate(sorted(by_series.items())):
        points.sort(key=lambda r: position[r["version"]])
        xs = [position[r["version"]] for r in points]
        ys = [r["value"] for r in points]
        color = cmap(i % cmap.N)
        ax.plot(xs, ys, marker="o", label=series, color=color)
        if band_alpha:
            ax.fill_between(xs, [r["low"] for r in points], [r["high"] for r in points],
                            color=color, alpha=band_alpha, linewidth=0)
    ax.set_xticks(range(len(versions)))
    ax.set_xticklabels(versions, rotation=30 if len(versions) > 6 else 0)
    first = rows[0]
    ax.set_xlabel(first["component"].replace("_", " ") + "  (points: median; band: p10–p90)")
    ax.set_ylabel(f"{first['metric']} ({first['unit']})")
    ax.set_title(title or f"{first['benchmark_id']}: {first['metric']} across {first['component'].replace('_', ' ')}s")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=8)
    return _save(fig, out)
