"""``advisor recommend``'s answer as a table: one row per recommendation, the title naming the
metric and objective, then the notes (what was excluded and why, snippets missing) on stderr and
the Kubernetes snippets on stdout when asked for."""

from __future__ import annotations

import sys
from typing import Any

BASIS_MARK = {
    "observed": "● observed",
    "interpolated": "◐ interpolated",
    "transferred": "○ transferred",
    "unsupported": "✗ unsupported",
}


def number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def with_interval(value: float | None, low: float | None, high: float | None) -> str:
    """'91,826' when the interval is one point, else '91,826 (88,000..93,100)'."""
    text = number(value)
    if low is None or high is None or (number(low) == text and number(high) == text):
        return text
    return f"{text} ({number(low)}..{number(high)})"


def print_recommendations(result: Any, snippets: bool, fmt: Any) -> None:
    from stack_advisor.cli.render import render

    recs = result.recommendations
    with_system = any("nodes" in r.system or "interconnect" in r.system for r in recs)
    with_hours = any(r.accelerator_hours is not None for r in recs)
    render(
        [recommendation_row(r, with_hours=with_hours, with_system=with_system) for r in recs],
        fmt=fmt,
        title=_title(result),
        columns=[
            "#",
            "basis",
            "accelerator",
            "placement",
            "score",
            "value",
            *(["acc-hours"] if with_hours else []),
            "observed range",
            "evidence",
            "conf",
        ],
        details=[
            "stack",
            "overhead",
            *(["nodes", "interconnect"] if with_system else []),
            "warnings",
            "how it was made",
        ],
    )
    _notes(result, snippets)
    if snippets:
        _snippets(result)


def recommendation_row(r: Any, *, with_hours: bool, with_system: bool) -> dict[str, Any]:
    """One recommendation's cells (``acc-hours`` only when some row has them; ``nodes`` and
    ``interconnect`` only when some row's system says)."""
    c = r.candidate
    if r.accelerator_hours is not None:
        hours: dict[str, Any] = {
            "acc-hours": with_interval(
                r.value * c.accelerator_count / 60,
                r.accelerator_hours.low,
                r.accelerator_hours.high,
            )
        }
    else:
        hours = {"acc-hours": None} if with_hours else {}
    system = (
        {
            "nodes": r.system.get("nodes") or None,
            "interconnect": r.system.get("interconnect") or None,
        }
        if with_system
        else {}
    )
    evidence = (
        f"{r.evidence.count} obs x{','.join(map(str, r.observed_counts))} "
        f"{'/'.join(r.evidence.rounds)}"
    ).strip()
    return {
        "#": r.rank,
        "basis": BASIS_MARK.get(r.basis.value, r.basis.value)
        + (f" ({r.basis_note})" if r.basis_note else ""),
        "accelerator": f"{c.accelerator} x{c.accelerator_count}",
        "placement": c.placement.value,
        "score": number(r.score),
        "value": with_interval(r.value, r.interval.low, r.interval.high),
        "observed range": f"{number(r.observed_range.low)}..{number(r.observed_range.high)}"
        if r.observed_range
        else None,
        **hours,
        "evidence": "; ".join(
            part
            for part in (
                evidence if r.evidence.count else "",
                f"{r.more_results} more results" if getattr(r, "more_results", 0) else "",
            )
            if part
        )
        or None,
        "conf": f"{r.confidence:.2f}",
        "stack": c.stack_label,
        "overhead": r.placement_overhead.text if r.placement_overhead else None,
        **system,
        "warnings": "; ".join(r.warnings) or None,
        "how it was made": "; ".join(
            f"{f.name}: {f.value}" + (f" (x{f.effect:.2f})" if f.effect != 1.0 else "")
            for f in r.factors
        )
        or None,
    }


def _title(result: Any) -> str:
    recs = result.recommendations
    if not recs:
        return (
            f"{result.workload.get('benchmark')}: {result.metric} "
            f"— objective {result.objective}; nothing ranked (see the notes)"
        )
    per = " per accelerator" if recs[0].per_accelerator else ""
    return (
        f"{result.workload.get('benchmark')}: {result.metric} "
        f"({recs[0].unit}{per}), objective {result.objective}; "
        f"ranked by score ({recs[0].score_unit})"
    )


def _notes(result: Any, snippets: bool) -> None:
    """On stderr: the answer's notes, how rows are scored, what was excluded and why, the
    answer's size and time, and which rows have no snippet."""
    from stack_advisor.cli.render import note

    for text in result.notes:
        note(text, prefix="note: ")
    note(
        "the value for observed rows, the pessimistic end of the 80% interval for the others",
        prefix="score: ",
    )
    if result.excluded:
        note(
            ", ".join(f"{k}: {v}" for k, v in sorted(result.excluded.items())), prefix="excluded: "
        )
        _excluded_each(result)
    note(
        f"{result.candidates_considered} candidates, generation {result.generation}, "
        f"{result.elapsed_ms:.0f} ms"
    )
    missing = [r.rank for r in result.recommendations if r.snippet_yaml is None]
    if missing and not snippets:
        note(
            f"no Kubernetes snippet for #{', #'.join(map(str, missing))}: the knowledge base "
            "records no container image for those stacks; pass --image IMAGE",
            prefix="note: ",
        )


def _excluded_each(result: Any) -> None:
    """Each excluded candidate with its reason where the user named accelerators (they asked
    about those parts); otherwise the counts above answer, and a hint says where each is."""
    from stack_advisor.cli.render import note

    hardware = result.workload.get("hardware") or {}
    if hardware.get("accelerators"):
        for e in result.excluded_candidates[:10]:
            note(f"{e.accelerator} ({e.placement.value}): {e.reason}", prefix="  ")
    elif result.excluded_candidates:
        note(
            "each excluded candidate with its reason: --json (excluded_candidates), or "
            "--accelerator NAME for one part",
            prefix="  ",
        )


def _snippets(result: Any) -> None:
    from stack_advisor.cli.render import note

    for r in result.recommendations:
        if r.snippet_yaml is None:
            note(f"# --- #{r.rank}: {r.snippet_missing} ---")
            continue
        sys.stdout.write(f"# --- #{r.rank} ---\n{r.snippet_yaml.rstrip()}\n")
