"""Rounds and versions in order: the publication date of each benchmark round
(``rounds.yaml``), and the one ordering of round names and of version strings every layer sorts
by (drivers, CUDA, frameworks, rounds)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from stack_advisor.catalog.entries import RoundEntry


@lru_cache(maxsize=1)
def load_rounds() -> tuple[RoundEntry, ...]:
    """Every round in ``rounds.yaml``, validated.

    Raises:
        InvalidInput: the file is unreadable or an entry is malformed.
    """
    from stack_advisor.catalog.resolve import load_entries

    return tuple(load_entries("rounds.yaml", "rounds", RoundEntry))


@lru_cache(maxsize=256)
def round_date(round_name: str, family: str = "mlperf-inference") -> datetime | None:
    """When the round's results were published (UTC midnight), None when the catalogue has no
    date."""
    for entry in load_rounds():
        if entry.id == round_name and entry.family == family:
            return datetime(
                entry.published.year, entry.published.month, entry.published.day, tzinfo=UTC
            )
    return None


def round_key(value: str) -> tuple[int, ...]:
    """A round name's order: 'v2.1' → (2, 1), 'v4.0' → (4, 0); (0,) when it has no number."""
    digits = "".join(ch if ch.isdigit() or ch == "." else "" for ch in value)
    try:
        return tuple(int(p) for p in digits.split(".") if p)
    except ValueError:
        return (0,)


@lru_cache(maxsize=1024)
def rounds_after(family: str, old: float, new: float) -> int:
    """Published rounds of ``family`` after round number ``old`` up to ``new`` (0 where ``new``
    is not after ``old``): the catalogue's dated rounds and, from v1.0 on, MLCommons' cadence of
    an x.0 and an x.1 round a year (rounds beyond the newest dated one, and Training's older
    rounds, which the catalogue does not date). v3.0 -> v4.1 is 3: v3.1, v4.0, v4.1."""
    if new <= old:
        return 0
    known = set()
    for entry in load_rounds():
        parts = round_key(entry.id)
        if entry.family == family and parts != (0,):
            known.add(parts[0] + (parts[1] / 10 if len(parts) > 1 else 0.0))
    known |= {major + minor / 10 for major in range(1, int(new) + 1) for minor in (0, 1)}
    return sum(1 for n in known if old + 1e-9 < n <= new + 1e-9)


def release_key(text: str) -> tuple[int, ...]:
    """The numeric parts of a dotted version: '535.104.05' → (535, 104, 5); text parts ignored."""
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def display_key(version: str) -> tuple[Any, ...]:
    """Sort versions numerically where they are numbers (2.10 after 2.9), text parts after."""
    return tuple(
        (0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+_]", version)
    )


def release_of(text: str | None) -> tuple[int, ...] | None:
    """A PEP 440 version's release numbers ('v12.1' → (12, 1), '2.3.1+cu121' → (2, 3, 1)); None
    when the text is no version."""
    from packaging.version import InvalidVersion, Version

    if not text:
        return None
    try:
        return tuple(Version(text.strip().lstrip("vV").split("+")[0]).release)
    except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
        return None


def same_release(have: str | None, named: str) -> bool:
    """Whether a recorded component version ``have`` is the release a query names: equal; a
    record less precise than the name (``12.4`` for ``12.4.1``); or the name's release with a
    patch of 0 and any build after it (``TensorRT 10.2`` names the recorded 10.2.0 and 10.2.0.19,
    not 10.2.1; ``CUDA 12`` names 12.0, not 12.4), a name with a patch level taking any build of
    it (10.2.0 names 10.2.0.19)."""
    if have is None:
        return False
    a, b = have.split("."), named.split(".")
    if len(a) <= len(b):
        return b[: len(a)] == a
    return a[: len(b)] == b and (len(b) >= 3 or all(part == "0" for part in a[len(b) : 3]))
