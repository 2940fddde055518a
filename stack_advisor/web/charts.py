"""Charts as inline SVG, drawn on the server: horizontal bars with p10–p90 whiskers.

No JavaScript chart library: the page stays readable without scripts, prints, and weighs a few
kilobytes. Every bar carries a ``<title>`` (the browser's tooltip and what a screen reader
reads) with the exact figure and how its interval was made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Okabe–Ito colours: tell series apart for colour-blind readers too.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


@dataclass(frozen=True)
class Bar:
    """One bar: its label, group (the colour: a placement, a stack), value and interval."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    group: str = ""
    note: str = ""


@dataclass(frozen=True)
class _Layout:
    """Where things go: the label column's width, a row's height, the first row's top, the plot's
    width and pixels per unit."""

    label_w: int
    row_h: int
    top: int
    plot_w: int
    scale: float


def bar_chart(
    bars: list[Bar], *, title: str, unit: str = "", reference: float | None = None, width: int = 760
) -> str:
    """The SVG markup (safe to embed: every text is escaped); ``reference`` draws a dashed line at
    that value (1.0 for ratios)."""
    if not bars:
        return ""
    label_w, row_h, top, bottom = 230, 22, 8, 34
    plot_w = width - label_w - 70
    finite = [
        v for b in bars for v in (b.value, b.low, b.high) if v is not None and math.isfinite(v)
    ]
    hi = max([*finite, reference or 0.0, 0.0]) or 1.0
    step = nice_step(hi * 1.05 / 4)
    top_tick = step * math.ceil(hi * 1.05 / step)
    groups = list(dict.fromkeys(b.group for b in bars))
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    if len(groups) > 1:
        top += 20  # the legend's line
    at = _Layout(label_w, row_h, top, plot_w, plot_w / top_tick)
    height = top + row_h * len(bars) + bottom
    opening = (
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">'
    )
    out = [opening, f"<title>{escape(title)}</title>"]
    for i, b in enumerate(bars):
        out.extend(_bar(b, top + i * row_h, at, unit, colour[b.group]))
    axis_y = top + row_h * len(bars) + 4
    out.extend(_axis(at, axis_y, step, top_tick, unit))
    if reference is not None:
        x = label_w + reference * at.scale
        out.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{axis_y}" stroke="#555" '
            'stroke-dasharray="4 3"/>'
        )
    if len(groups) > 1:
        out.extend(_legend(groups, colour, label_w))
    out.append("</svg>")
    return "".join(out)


def _bar(b: Bar, y: float, at: _Layout, unit: str, fill: str) -> list[str]:
    """One bar's group: its tooltip, label, bar, whiskers and figure."""
    w = max(0.0, b.value * at.scale) if math.isfinite(b.value) else 0.0
    tip = f"{b.label}{' · ' + b.group if b.group else ''}: {figure(b.value)} {unit}"
    if b.low is not None and b.high is not None:
        tip += f" (interval {figure(b.low)}–{figure(b.high)})"
    if b.note:
        tip += f" — {b.note}"
    out = [
        f"<g><title>{escape(tip)}</title>"
        f'<text x="{at.label_w - 6}" y="{y + 15}" text-anchor="end" class="lbl">'
        f"{escape(_short(b.label, 30))}</text>"
        f'<rect x="{at.label_w}" y="{y + 4}" width="{w:.1f}" height="{at.row_h - 8}" '
        f'fill="{fill}"/>'
    ]
    if b.low is not None and b.high is not None and b.high > b.low:
        x1, x2, ym = at.label_w + b.low * at.scale, at.label_w + b.high * at.scale, y + at.row_h / 2
        out.append(
            f'<path d="M{x1:.1f} {ym:.1f}H{x2:.1f}M{x1:.1f} {ym - 5:.1f}v10'
            f'M{x2:.1f} {ym - 5:.1f}v10" stroke="#222" stroke-width="1.5" fill="none"/>'
        )
    end = max(
        w, (b.high or 0.0) * at.scale if b.high is not None and math.isfinite(b.high) else 0.0
    )
    out.append(
        f'<text x="{at.label_w + end + 5:.1f}" y="{y + 15}" '
        f'class="val">{figure(b.value)}</text></g>'
    )
    return out


def _axis(at: _Layout, axis_y: int, step: float, top_tick: float, unit: str) -> list[str]:
    """The value axis: its line, ticks and unit."""
    out = [
        f'<line x1="{at.label_w}" y1="{axis_y}" x2="{at.label_w + at.plot_w}" y2="{axis_y}" '
        'stroke="#888"/>'
    ]
    for k in range(round(top_tick / step) + 1):
        v = k * step
        x = at.label_w + v * at.scale
        out.append(
            f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" '
            f'class="tick">{figure(v, 3)}</text>'
        )
    out.append(
        f'<text x="{at.label_w + at.plot_w / 2:.1f}" y="{axis_y + 28}" text-anchor="middle" '
        f'class="tick">{escape(unit)}</text>'
    )
    return out


def _legend(groups: list[str], colour: dict[str, str], label_w: int) -> list[str]:
    """One swatch and name per group, on the line above the bars."""
    out = []
    x, y = label_w, 14
    for g in groups:
        out.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour[g]}"/>'
            f'<text x="{x + 14}" y="{y}" class="tick">{escape(g)}</text>'
        )
        x += 24 + 7 * len(g)
    return out


def nice_step(raw: float) -> float:
    """The round tick step (1, 2, 2.5 or 5 times a power of ten) at or above ``raw``."""
    if not math.isfinite(raw) or raw <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(float(m * power) for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))


def figure(value: float, digits: int = 4) -> str:
    """A number for people: whole numbers with thousands separators from 1,000 up, else
    ``digits`` significant digits (never an exponent below 10^15)."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e15:
        return f"{value:.3e}"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:,.{digits}g}"


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
