"""Checks of single values that the domain model applies to what it accepts: names, figures
within physical bounds, strict numbers and booleans, and timestamps in a plausible range.

Each check raises ``ValueError`` with what is wrong and the value (pydantic turns it into a 422
naming the field).
"""

from __future__ import annotations

import math
import unicodedata
from datetime import UTC, datetime
from typing import Any

MAX_NAME = 256
MAX_TEXT = 4096  # a free-text field of a request (a framework as MLPerf writes it)
MAX_ENTRIES = 200  # the entries of a request's mapping or list (components, parameters)
MAX_DEPTH = 8
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)

# Unicode categories a name must not hold: controls, format characters (bidi overrides and
# isolates, zero-width spaces and joiners, the BOM), private use, surrogates, unassigned, line and
# paragraph separators. Spaces (Zs, the no-break space too) are allowed.
_REFUSED = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character (bidi override or zero-width)",
    "Co": "a private-use character",
    "Cs": "a surrogate",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def checked_name(value: str) -> str:
    """A name (metric, unit, family, model, host, run id, version ...): 1 to ``MAX_NAME``
    printable characters, not only spaces, no invisible or direction-changing characters."""
    if len(value) > MAX_NAME:
        raise ValueError(f"must be at most {MAX_NAME} characters, got {len(value)}")
    if not value.strip():
        raise ValueError("must not be blank")
    if not value.isprintable():
        for i, char in enumerate(value):
            why = _REFUSED.get(unicodedata.category(char))
            if why:
                raise ValueError(
                    f"holds {why} (U+{ord(char):04X}) at position {i}; names are printable text"
                )
    return value


def shown(value: Any, limit: int = 60) -> str:
    """A value as a message echoes it: its text, cut to ``limit`` characters with its length
    where longer (a megabyte given is not sent back)."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def checked_optional_name(value: str | None) -> str | None:
    return None if value is None else checked_name(value)


# The widest a figure in each unit can physically be: orders of magnitude beyond the largest
# published result (MLPerf Inference's largest Offline systems reach ~1e7 samples/s, Training's
# slowest results days, nccl-tests' bandwidths ~1e3 GB/s), so only a typo or a forged value trips
# it. Unknown units get the generic bound. Nonzero figures below SMALLEST are no measurement.
UPPER_BOUNDS = {
    "samples/s": 1e10,
    "queries/s": 1e10,
    "tokens/s": 1e10,
    "images/s": 1e10,
    "ms": 1e9,
    "s": 1e7,
    "us": 1e12,
    "min": 1e6,
    "h": 1e5,
    "gflop/s": 1e10,
    "tflop/s": 1e7,
    "gb/s": 1e7,
    "fraction": 1.0,
    "%": 100.0,
}
GENERIC_UPPER = 1e15
SMALLEST = 1e-12


def checked_figure(value: float, unit: str) -> None:
    """``value`` (already finite and not negative) within the physical bounds of ``unit``."""
    upper = UPPER_BOUNDS.get(unit.strip().lower(), GENERIC_UPPER)
    if value > upper:
        raise ValueError(
            f"{value!r} {unit} is beyond any physical figure in that unit "
            f"(at most {upper:g}); check the collector or the source"
        )
    if 0 < value < SMALLEST:
        raise ValueError(
            f"{value!r} {unit} is below any measurable figure (nonzero values are "
            f"at least {SMALLEST:g})"
        )


def strict_number(value: Any) -> Any:
    """Numbers only: ``true`` is not 1.0 and ``"12"`` is not 12."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"must be a number, got {type(value).__name__} {value!r:.40}")
    return value


def strict_bool(value: Any) -> Any:
    """``true`` or ``false`` only, not 1, ``"yes"`` or ``"on"``."""
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {type(value).__name__} {value!r:.40}")
    return value


def timestamp_in(value: Any) -> Any:
    """A number is Unix seconds (never milliseconds: ``99999999999`` is year 5138, not 1973);
    anything else goes on to pydantic's parsing."""
    if isinstance(value, bool):
        raise ValueError("must be a timestamp, got a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"must be a timestamp, got {value!r}")
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(
                f"{value!r} seconds since 1970 is no date; send ISO 8601 such as "
                "'2026-01-31T12:00:00Z'"
            ) from None
    return value


def not_before_2000(value: datetime) -> datetime:
    if value < EARLIEST:
        raise ValueError(
            f"is before 2000 ({value.isoformat()}); no result in this knowledge base "
            "is that old: check the date's format or the collector's clock"
        )
    return value


def bounded_request(value: Any, names: tuple[str, ...] = (), where: str = "") -> None:
    """A request's fields within bounds before anything reads them: the fields in ``names`` at
    most ``MAX_NAME`` characters, other text at most ``MAX_TEXT``, mappings and lists at most
    ``MAX_ENTRIES`` entries, nested at most ``MAX_DEPTH`` deep (a megabyte-long name had held
    an answer worker for minutes).

    Raises:
        ValueError: naming the field and its size.
    """
    _bounded(value, names, where, 0)


def _bounded(value: Any, names: tuple[str, ...], where: str, depth: int) -> None:
    field = where or "request"
    if depth > MAX_DEPTH:
        raise ValueError(f"{field}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        # a list's items are named by the list's field (hardware.accelerators.0: accelerators)
        key = next((p for p in reversed(where.split(".")) if not p.isdigit()), "")
        limit = MAX_NAME if key in names else MAX_TEXT
        if len(value) > limit:
            raise ValueError(f"{field}: {len(value)} characters, at most {limit}")
        return
    if isinstance(value, dict):
        if len(value) > MAX_ENTRIES:
            raise ValueError(f"{field}: {len(value)} entries, at most {MAX_ENTRIES}")
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            _bounded(str(key), (), path, depth + 1)
            _bounded(item, names, path, depth + 1)
    elif isinstance(value, (list, tuple)):
        if len(value) > MAX_ENTRIES:
            raise ValueError(f"{field}: {len(value)} entries, at most {MAX_ENTRIES}")
        for i, item in enumerate(value):
            _bounded(item, names, f"{where}.{i}" if where else str(i), depth + 1)


def not_a_bool(value: Any) -> Any:
    """A count as given, refused where it is JSON's ``true``/``false`` (pydantic reads them as
    1 and 0): a ``mode="before"`` field validator's body."""
    if isinstance(value, bool):
        raise ValueError(f"a count is a whole number, not {str(value).lower()}")
    return value
