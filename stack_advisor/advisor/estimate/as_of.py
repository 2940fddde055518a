"""What round an answer is for: ``as_of`` words ("today", "now", "next"), dates and round
names, read against the catalogue's round dates (``stack_advisor.catalog.rounds``)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection
from datetime import UTC, date, datetime
from functools import lru_cache

from stack_advisor.advisor.knowledge.table import round_number
from stack_advisor.catalog.rounds import load_rounds, rounds_after
from stack_advisor.schema.errors import InvalidInput

AS_OF_WORDS = ("today", "now", "next")
DATE_SHAPE = r"\d{4}-\d{2}-\d{2}"
TODAY_ENV = "ADVISOR_TODAY"  # an ISO date standing for today (a replay of an earlier day)


def as_of_problem(as_of: str) -> str:
    return (
        f"as_of: {as_of!r} is not 'today', 'now', 'next', a date such as 2026-05-01 or a round "
        "name such as 'v6.0'"
    )


def today() -> date:
    """Today's date (UTC), or the ISO date ``ADVISOR_TODAY`` gives.

    Raises:
        InvalidInput: ``ADVISOR_TODAY`` is not an ISO date.
    """
    given = os.environ.get(TODAY_ENV, "").strip()
    if not given:
        return datetime.now(UTC).date()
    try:
        return date.fromisoformat(given)
    except ValueError:
        raise InvalidInput(f"{TODAY_ENV}: {given!r} is not a date such as 2026-05-01") from None


def as_of_day(text: str) -> date | None:
    """The day ``text`` names: today for "today", an ISO date; None for anything else."""
    if text == "today":
        return today()
    if not re.fullmatch(DATE_SHAPE, text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


@lru_cache(maxsize=1024)
def round_at(family: str, day: date, now: float) -> float:
    """The newest round of ``family`` published by ``day`` (the catalogue's dates), or the
    knowledge base's own newest round ``now`` where it is newer and published by then (or
    has no listed date)."""
    listed = {round_number(r.id): r.published for r in load_rounds() if r.family == family}
    by_then = [n for n, published in listed.items() if published <= day and not math.isnan(n)]
    newest = max(by_then, default=0.0)
    if now > 0 and (now not in listed or listed[now] <= day):
        newest = max(newest, now)
    # none published by then: 0 (``drift.carry`` refuses it), where the catalogue dates any
    return newest if listed else newest or now


@lru_cache(maxsize=256)
def published_on(family: str, number: float) -> date | None:
    """The day the catalogue says round ``number`` of ``family`` was published."""
    for r in load_rounds():
        if r.family == family and round_number(r.id) == number:
            return r.published
    return None


ROUND_SHAPE = r"v?\d+\.\d+"  # a round as MLCommons names one: v5.1 (or 5.1)
MAX_AHEAD = 2  # a named round at most this many rounds beyond the newest published or held


def as_of_error(as_of: str | None) -> str | None:
    """Why ``as_of`` names no round (None when it does): for a query's refusal. None means the
    default ("today"); an empty text is no round."""
    text = _as_of_text(as_of)
    if re.fullmatch(DATE_SHAPE, text):
        return None if as_of_day(text) is not None else as_of_problem(str(as_of))
    if text in AS_OF_WORDS:
        return None
    if re.fullmatch(ROUND_SHAPE, text) and not math.isnan(round_number(text)):
        return None
    return as_of_problem(str(as_of))


def _as_of_text(as_of: str | None) -> str:
    return "today" if as_of is None else as_of.strip().lower()


def next_round(family: str, after: float) -> float:
    """The published round after ``after`` (the catalogue's rounds), else the one MLPerf's
    naming gives: two rounds a year since v1.0, X.0 then X.1, then (X+1).0 (Inference and
    Training alike: v5.1 is followed by v6.0, never v5.2)."""
    listed = sorted(
        n for n in (round_number(r.id) for r in load_rounds() if r.family == family) if n > after
    )
    if listed:
        return listed[0]
    major = math.floor(after + 1e-9)
    return float(major + 1) if after - major > 0.05 else round(after + 0.1, 1)


def target_round(family: str, as_of: str, now: float, held: Collection[float] = ()) -> float:
    """The round number an answer is for, the knowledge base's newest round of the slice being
    ``now``: the newest round published by today (the catalogue's round dates; "today", the
    default) or by a given ISO date, ``now`` itself ("now"), one published round beyond it
    ("next"), or a named round.

    Raises:
        InvalidInput: ``as_of`` is neither a word, a date nor a round name.
    """
    text = _as_of_text(as_of)
    if text == "now":
        return now
    if text == "next":
        return next_round(family, now)
    day = as_of_day(text)
    if day is not None:
        return round_at(family, day, now)
    if as_of_error(as_of) is not None:
        raise InvalidInput(as_of_problem(as_of))
    number = round_number(text)
    _check_round(family, number, text, now, held)
    return number


def _check_round(
    family: str, number: float, text: str, now: float, held: Collection[float] = ()
) -> None:
    """A named round is one the catalogue lists, the knowledge base holds (``held``: the
    slice's rounds) or MLCommons' cadence names (x.0 and x.1 a year), at most ``MAX_AHEAD``
    rounds beyond the newest round published by today or held.

    Raises:
        InvalidInput: a round that does not exist, or one too far ahead to forecast.
    """
    listed = {round_number(r.id) for r in load_rounds() if r.family == family}
    minor = round((number - math.floor(number)) * 10)
    # at any year: Training's v6.5 is no round, a year past its last listed round too
    unnamed = minor not in (0, 1) or number < 1
    if number not in listed and not any(abs(number - h) < 1e-9 for h in held) and unnamed:
        raise InvalidInput(
            f"as_of: {text!r} is no round of {family}: MLCommons publishes an x.0 and an x.1 "
            "round a year (v5.1, then v6.0)"
        )
    base = max(now, round_at(family, today(), now))
    ahead = rounds_after(family, base, number)
    if ahead > MAX_AHEAD:
        raise InvalidInput(
            f"as_of: {text!r} is {ahead} rounds beyond v{base:.1f}, the newest round published "
            f"or held; forecasts reach {MAX_AHEAD} rounds ahead"
        )
