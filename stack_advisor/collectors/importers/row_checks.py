"""Checks one published row or file must pass before it becomes an observation.

Each raises ``RowRejected`` naming the field and why, so an importer can skip the row, report
(file, row, field, why) and import the rest. Types are strict: a bool is not a number (JSON
``true`` is not 1.0), a list or an object is not a name. Results must be finite and positive, and
within a plausibility bound for their unit (per accelerator for throughput); a result beyond it
is reported, not stored.

The bounds are about 100 times the extremes of the published rounds we hold (Inference v1.1 to
v5.1, per accelerator: 105,165 tokens/s, 745,480 samples/s; latencies 0.12 ms to 28,287 ms), so
the next round's real results pass and a typo or a hostile 1e9 tokens/s does not.
"""

from __future__ import annotations

import math
from typing import Any

NAME_CHARS = 256  # a submitter, system, accelerator, benchmark or scenario name
TEXT_CHARS = 4096  # a free-text field kept with a result (software, notes)

# unit → (lowest, highest) plausible value; throughput per accelerator (or CPU socket)
PLAUSIBLE: dict[str, tuple[float, float]] = {
    "samples/s": (1e-6, 1e8),
    "queries/s": (1e-6, 1e8),
    "tokens/s": (1e-6, 1e7),
    "ms": (1e-6, 1e8),
    "min": (1e-3, 1e6),
}
PER_ACCELERATOR = {"samples/s", "queries/s", "tokens/s"}
# the most accelerators one published system may have: about 100 times the largest we hold
# (MLPerf Training, 11,616), so a typo or a hostile 1e9 is reported, not stored
MAX_ACCELERATORS = 1_000_000


class RowRejected(ValueError):
    """One field of a row is not acceptable; the row is skipped and reported."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field
        self.why = why


def result_number(value: Any, field: str) -> float:
    """A finite positive number from a JSON number or numeric text.

    Raises:
        RowRejected: a bool, list, object or text that is no number; not finite; not > 0.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise RowRejected(field, f"{_shown(value)} is not a number")
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise RowRejected(field, f"{_shown(value)} is not a number") from None
    if not math.isfinite(number):
        raise RowRejected(field, f"{_shown(value)} is not a finite number")
    if number <= 0:
        raise RowRejected(field, f"{_shown(value)} is not a positive result")
    return number


def name_text(value: Any, field: str, limit: int = NAME_CHARS) -> str:
    """A name as one line of text ("" for none).

    Raises:
        RowRejected: a list, object or bool where a name belongs, or a name over ``limit``.
    """
    if value is None:
        return ""
    if isinstance(value, (bool, list, dict)):
        raise RowRejected(field, f"a {type(value).__name__} ({_shown(value)}) is not a name")
    text = " ".join(str(value).split())
    if len(text) > limit:
        what = "a name" if limit <= NAME_CHARS else "a text field"
        raise RowRejected(field, f"{len(text):,} characters, over the {limit:,} {what} may have")
    return text


def check_plausible(metric: str, unit: str, value: float, accelerators: int) -> None:
    """Raise RowRejected when ``value`` is beyond the plausibility bound of ``unit``, or the
    system's ``accelerators`` beyond ``MAX_ACCELERATORS``."""
    if accelerators > MAX_ACCELERATORS:
        raise RowRejected(
            "accelerators",
            f"{accelerators:,} in one system is beyond the plausible {MAX_ACCELERATORS:,}; "
            "reported, not stored",
        )
    low, high = PLAUSIBLE.get(unit, (0.0, math.inf))
    per = max(accelerators, 1) if unit in PER_ACCELERATOR else 1
    share = value / per
    if not low <= share <= high:
        each = f" per accelerator ({per})" if per > 1 else ""
        raise RowRejected(
            metric,
            f"{value:g} {unit}{each} is beyond the plausible {low:g}..{high:g} {unit}; "
            "reported, not stored",
        )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "MAX_ACCELERATORS",
    "NAME_CHARS",
    "PLAUSIBLE",
    "TEXT_CHARS",
    "RowRejected",
    "check_plausible",
    "name_text",
    "result_number",
]
