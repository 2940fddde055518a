"""Bounds on what a request may ask: an accelerator count beyond every system the knowledge base
holds has no evidence at any scale (a figure for it would be a straight-line extrapolation of
per-accelerator throughput to a machine nobody has published), so it is refused, naming the
largest published system."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from stack_advisor.advisor.knowledge.table import ObservationTable

_LARGEST: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()


def largest_system(table: ObservationTable) -> int:
    """The largest accelerator count of any observation (every family, every round)."""
    counts = np.asarray(table.count)
    return int(counts.max()) if len(counts) else 0


def family_largest(index: Any, family: str) -> int:
    """The largest accelerator count of any observation of ``family`` in the table of ``index``
    (an ``EvidenceIndex``; 0: none), read once per index."""
    held = _LARGEST.setdefault(index, {})
    if family not in held:
        table = index.table
        largest = 0
        if family in table.family.vocab:
            mine = np.asarray(table.count)[table.family.codes == table.family.code(family)]
            largest = int(mine.max()) if len(mine) else 0
        held[family] = largest
    return held[family]


def beyond_family_note(index: Any, family: str, count: int) -> str | None:
    """The warning for a count beyond every published system of the query's family (answered:
    the figure scales per accelerator past any result that shows it does), or None."""
    largest = family_largest(index, family)
    if not largest or count <= largest:
        return None
    return (
        f"{count:,} accelerators is beyond every {family} system in the knowledge base (the "
        f"largest has {largest:,}): the figure scales per accelerator past any result that "
        "shows it does"
    )


def count_beyond_published(
    table: ObservationTable, count: int | None, field: str = "count"
) -> str | None:
    """Why ``count`` accelerators cannot be answered, or None."""
    largest = largest_system(table)
    if count is None or not largest or count <= largest:
        return None
    return (
        f"{field}: {count:,} accelerators is beyond any published system (the largest in "
        "the knowledge "
        f"base has {largest:,}); no result scales that far, so no figure is given; ask "
        f"for at most {largest:,}"
    )
