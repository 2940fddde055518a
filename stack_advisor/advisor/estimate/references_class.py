"""A transfer's references of the query's system class: single-node results for a query that fits
one node, multi-node results for one that does not (issue 41: never a multi-node result scaled to
one node without a factor). A rack-scale system's per-accelerator figure is not what the same
part does alone in one server (GB300's deepseek-r1 Server results are 72-GPU racks), so where
the slice holds references of the query's class, only they are scaled; where it holds none, every
result is, and the answer says so.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any
# the most accelerators one node of the catalogue's systems holds: a larger count spans nodes
NODE_MAX = 8
_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def multi_node_rows(index: EvidenceIndex) -> np.ndarray:
    """Per table row: whether its system spans several nodes (as published)."""
    memo = _CACHE.setdefault(index, {})
    if "multi" not in memo:
        table = index.table
        by_code = np.asarray(
            [
                bool(v) and str(v[0]).isdigit() and int(v[0]) > 1
                for v in (table.system.vocab if table.n else [])
            ],
            dtype=bool,
        )
        memo["multi"] = by_code[table.system.codes] if table.n else np.empty(0, dtype=bool)
    result: np.ndarray = memo["multi"]
    return result


def of_class(
    index: EvidenceIndex, key: tuple[str, ...], by_acc: dict[str, np.ndarray], count: int
) -> tuple[dict[str, np.ndarray], bool]:
    """(the slice's accelerators restricted to rows of the query's class, multi-node or not),
    the same dict object for the same slice and class (the index memoises references by it)."""
    multi = count > NODE_MAX
    memo = _CACHE.setdefault(index, {})
    cache_key = (key, multi)
    if cache_key not in memo:
        flags = multi_node_rows(index)
        kept = {}
        for acc, rows in by_acc.items():
            own = rows[flags[rows] == multi]
            if len(own):
                kept[acc] = own
        memo[cache_key] = kept
    found: dict[str, np.ndarray] = memo[cache_key]
    return found, multi
