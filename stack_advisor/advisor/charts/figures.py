"""Figures from chart rows (``stack_advisor/advisor/charts/data.py``): matplotlib, Agg backend, PNG
or SVG.

Each chart is a ``*_figure(chart)`` that returns the figure (tests read its axes back) and a
``draw_*(chart, out)`` that writes it. Readability rules: at most ten colours per figure
(tab10), whiskers drawn in black with caps so a p10–p90 interval is visible on any bar colour,
the scenario, metric and unit in the title and axis labels, and notes on what was left out.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from stack_advisor.advisor.charts.data import Chart
from stack_advisor.catalog.rounds import display_key
from stack_advisor.schema.errors import InvalidInput

FORMATS = (".png", ".svg")
WHISKER = {"ecolor": "black", "elinewidth": 1.2, "capsize": 4, "capthick": 1.2}
PLACEMENT_COLOURS = {"passthrough": "tab:blue", "vgpu": "tab:orange", "unknown": "tab:gray"}


def check_out(out: Path) -> None:
    if out.suffix.lower() not in FORMATS:
        raise InvalidInput(f"--out: {str(out)!r} must end in .png or .svg")


def save(fig: Figure, out: Path) -> Path:
    """Write the figure (PNG or SVG by suffix) and close it.

    Raises:
        InvalidInput: a bad suffix, or a folder that cannot be written (the message says why).
    """
    check_out(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise InvalidInput(f"--out: cannot write {str(out)!r}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return out


def _whiskers(rows: list[dict[str, Any]], value: str = "value") -> list[list[float]]:
    return [
        [max(r[value] - r["low"], 0.0) for r in rows],
        [max(r["high"] - r[value], 0.0) for r in rows],
    ]


def _footnote(fig: Figure, lines: list[str]) -> None:
    text = "\n".join(textwrap.fill(line, 130) for line in lines)
    fig.text(0.01, -0.01, text, ha="left", va="top", fontsize=7.5, color="#333333")


def _title(chart: Chart, title: str | None) -> str:
    return textwrap.fill(title or chart.title, 90)


def _colours(names: list[str]) -> dict[str, Any]:
    cmap = plt.get_cmap("tab10")
    return {name: cmap(i % 10) for i, name in enumerate(names)}


def throughput_figure(chart: Chart, title: str | None = None) -> Figure:
    """One panel per accelerator (shared value axis), one horizontal bar per stack, best first;
    bars coloured by framework."""
    assert chart.series is not None
    by_accel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in chart.rows:
        by_accel[row["accelerator"]].append(row)
    accels = list(by_accel)
    frameworks = sorted({r["framework"] for r in chart.rows})
    colour = _colours(frameworks)
    heights = [0.9 + 0.32 * len(by_accel[a]) for a in accels]
    fig, axes = plt.subplots(
        len(accels),
        1,
        figsize=(10.5, 0.9 + sum(heights)),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for ax, accel in zip(axes[:, 0], accels, strict=True):
        _stack_panel(ax, accel, by_accel[accel], colour)
    axes[-1, 0].set_xlabel(chart.series.value_label)
    handles = [Rectangle((0, 0), 1, 1, color=colour[f]) for f in frameworks]
    fig.legend(
        handles,
        frameworks,
        title="framework",
        loc="upper left",
        bbox_to_anchor=(1.0, 0.98),
        frameon=False,
    )
    fig.suptitle(_title(chart, title), fontsize=11, x=0.01, ha="left")
    per = (
        "; throughput of a system divided by its accelerator count"
        if chart.series.per_accelerator
        else ""
    )
    _footnote(
        fig,
        [
            "bars: median; whiskers: p10–p90 (across observations; a run's own p10–p90 "
            f"when n=1){per}",
            *chart.notes,
        ],
    )
    fig.tight_layout()
    return fig


def _stack_panel(ax: Any, accel: str, rows: list[dict[str, Any]], colour: dict[str, Any]) -> None:
    """One accelerator's panel: a bar per stack with its whiskers and observation count."""
    ys = list(range(len(rows)))
    ax.barh(
        ys,
        [r["value"] for r in rows],
        xerr=_whiskers(rows),
        height=0.7,
        color=[colour[r["framework"]] for r in rows],
        error_kw=WHISKER,
    )
    ax.set_yticks(ys)
    ax.set_yticklabels(
        [textwrap.shorten(r["label"], 80, placeholder="…") for r in rows], fontsize=8
    )
    ax.invert_yaxis()
    for y, r in zip(ys, rows, strict=True):
        ax.annotate(
            f" n={r['observations']}", (r["high"], y), va="center", fontsize=7, color="#333333"
        )
    counts = sorted({c for r in rows for c in r["accelerator_counts"]})
    ax.set_title(
        f"{accel}  (systems of {', '.join(map(str, counts))} accelerator"
        f"{'s' if counts != [1] else ''})",
        fontsize=9.5,
        loc="left",
    )
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)


def overhead_figure(chart: Chart, title: str | None = None) -> Figure:
    """Grouped bars: the median speed ratio against bare metal per accelerator and placement."""
    accels = sorted({r["accelerator"] for r in chart.rows})
    kinds = sorted({r["placement"] for r in chart.rows})
    width = 0.8 / len(kinds)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 + 1.5 * len(accels)), 4.8))
    for i, kind in enumerate(kinds):
        rows = [r for r in chart.rows if r["placement"] == kind]
        xs = [accels.index(r["accelerator"]) - 0.4 + width * (i + 0.5) for r in rows]
        ax.bar(
            xs,
            [r["ratio"] for r in rows],
            width=width * 0.9,
            yerr=_whiskers(rows, "ratio"),
            label=kind,
            color=PLACEMENT_COLOURS.get(kind, "tab:green"),
            error_kw=WHISKER,
        )
        for x, r in zip(xs, rows, strict=True):
            ax.annotate(
                f"n={r['pairs']}",
                (x, r["high"]),
                ha="center",
                va="bottom",
                fontsize=7,
                xytext=(0, 2),
                textcoords="offset points",
            )
    ax.axhline(1.0, color="black", linewidth=0.9)
    ax.set_xticks(range(len(accels)))
    ax.set_xticklabels(
        accels, rotation=20 if len(accels) > 3 else 0, ha="right" if len(accels) > 3 else "center"
    )
    ax.set_ylabel("speed relative to bare metal (×) — higher is better")
    ax.set_title(_title(chart, title), fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(title="placement", loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    how = (
        "bars: median over paired results (same round, benchmark, metric, accelerator, "
        "count; n pairs); "
        "whiskers: bootstrap p10–p90 of that median; the same figures as `advisor "
        "compare placement`"
    )
    _footnote(fig, [how, *chart.notes])
    fig.tight_layout()
    return fig


def trend_figure(chart: Chart, title: str | None = None) -> Figure:
    """One line per accelerator across versions; points are medians with p10–p90 whiskers."""
    assert chart.series is not None
    versions = sorted({r["version"] for r in chart.rows}, key=display_key)
    position = {v: i for i, v in enumerate(versions)}
    by_line: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in chart.rows:
        by_line[row["series"]].append(row)
    colour = _colours(list(by_line))
    fig, ax = plt.subplots(figsize=(max(7.0, 2.5 + 0.7 * len(versions)), 4.8))
    step = 0.25 / max(len(by_line), 1)  # side by side, so whiskers at one version do not overlap
    for i, (line, points) in enumerate(by_line.items()):
        points.sort(key=lambda r: position[r["version"]])
        xs = [position[r["version"]] + (i - (len(by_line) - 1) / 2) * step for r in points]
        ax.errorbar(
            xs,
            [r["value"] for r in points],
            yerr=_whiskers(points),
            marker="o",
            markersize=4,
            label=line,
            color=colour[line],
            capsize=3,
            elinewidth=1,
            linewidth=1.4,
        )
    ax.set_xticks(range(len(versions)))
    ax.set_xticklabels(versions, rotation=30 if len(versions) > 6 else 0)
    component = chart.rows[0]["component"].replace("_", " ")
    ax.set_xlabel(component + " version")
    ax.set_ylabel(textwrap.fill(chart.series.value_label, 48))
    ax.set_title(_title(chart, title), fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(
        title="accelerator", loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=8
    )
    _footnote(
        fig, ["points: median per version; whiskers: p10–p90 across observations", *chart.notes]
    )
    fig.tight_layout()
    return fig


def draw_throughput(chart: Chart, out: Path, title: str | None = None) -> Path:
    check_out(out)
    return save(throughput_figure(chart, title), out)


def draw_overhead(chart: Chart, out: Path, title: str | None = None) -> Path:
    check_out(out)
    return save(overhead_figure(chart, title), out)


def draw_trend(chart: Chart, out: Path, title: str | None = None) -> Path:
    check_out(out)
    return save(trend_figure(chart, title), out)


def draw_sweep(ratios: list[Any], out: Path, title: str) -> Path:
    """Each sweep cell's speed relative to the baseline per benchmark (``advisor compare sweep``'s
    rows): the ratio with its 95% interval; changes beyond the run-to-run spread in colour."""
    check_out(out)
    if not ratios:
        raise InvalidInput("nothing to plot: only the baseline cell has observations")
    labels = [f"{r.benchmark} [{r.parameters}]"[:70] + f"  {r.cell}" for r in ratios]
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.35 * len(ratios)))
    for y, r in enumerate(ratios):
        colour = ("tab:green" if r.ratio > 1 else "tab:red") if r.flagged else "tab:gray"
        ax.errorbar(
            [r.ratio],
            [y],
            xerr=[[r.ratio - r.low], [r.high - r.ratio]],
            fmt="o",
            color=colour,
            capsize=3,
        )
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(ratios)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("speed vs baseline (log scale; > 1 faster), 95% interval")
    ax.set_title(title, fontsize=10)
    _footnote(
        fig,
        ["measured on this node; colour: beyond the run-to-run spread (green faster, red slower)"],
    )
    return save(fig, out)
