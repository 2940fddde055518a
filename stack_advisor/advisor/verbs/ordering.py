"""The one ordering rule every ranking uses (``recommend``, cluster ``--nodes``, the web pages
that show either): a row's score is its measured figure when observed, else the pessimistic end
of its 80% interval in the metric's direction — the LOW end of a higher-is-better figure
(throughput), the HIGH end of a lower-is-better one (time to train, TTFT, TPOT, latency).

Scores rank highest first, so a lower-is-better figure scores as its negation: the row whose
pessimistic time is shortest comes first, and the unit says so (``-min``: minutes, negated).
"""

from __future__ import annotations


def pessimistic_end(value: float, low: float, high: float, *, observed: bool, hib: bool) -> float:
    """The figure a row is judged by: ``value`` when measured, else the end of the interval
    that is worst for the user (``low`` when higher is better, ``high`` when lower is)."""
    if observed:
        return value
    return low if hib else high


def score(value: float, low: float, high: float, *, observed: bool, hib: bool) -> float:
    """The ranking key (higher ranks first): the pessimistic end, negated when lower is better."""
    end = pessimistic_end(value, low, high, observed=observed, hib=hib)
    return end if hib else -end


def score_unit(unit: str | None, *, hib: bool, per: str = "") -> str:
    """What a score is measured in: ``unit`` (with ``per``, e.g. " per accelerator") for a
    higher-is-better figure; ``-unit`` (negated) for a lower-is-better one, never "per"
    anything (a time to train is not divided among accelerators)."""
    text = unit or "value"
    if not hib:
        return f"-{text}"
    return text + per
