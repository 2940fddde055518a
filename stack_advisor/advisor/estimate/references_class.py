"""A transfer's references of the query's system class: single-node results for a query that fits
one node, multi-node results for one that does not (issue 41: never a multi-node result scaled to
one node without a factor). A rack-scale system's per-accelerator figure is not what the same
part does alone in one server (GB300's deepseek-r1 Server results are 72-GPU racks), so where
the slice holds references of the query's class, only they are scaled; where it holds none, every
result is, and the answer says so. A query fits one node when its count is at most the largest
count the slice's single-node systems held (ten A30s and eighteen Cloud AI 100s have run in one
server), and at least eight; a result without a published node count spans nodes beyond eight.
The replays that calibrate transfer intervals read every system size.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any
# one node's accelerators where the slice holds no single-node system to say more
NODE_MAX = 8
_CACHE: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def published_nodes(system: tuple[Any, ...] | None) -> int:
    """A system column value's published node count (its first field); 0 where not published."""
    nodes = system[0] if system else ""
    return int(nodes) if str(nodes).isdigit() else 0


def node_counts(index: EvidenceIndex) -> np.ndarray:
    """Per table row: its system's published node count (``published_nodes``)."""
    memo = _CACHE.setdefault(index, {})
    if "nodes" not in memo:
        table = index.table
        by_code = np.asarray(
            [published_nodes(v) for v in (table.system.vocab if table.n else [])],
            dtype=np.int64,
        )
        memo["nodes"] = by_code[table.system.codes] if table.n else np.empty(0, dtype=np.int64)
    result: np.ndarray = memo["nodes"]
    return result


def of_class(
    index: EvidenceIndex, key: tuple[str, ...], by_acc: dict[str, np.ndarray], count: int
) -> tuple[dict[str, np.ndarray], bool]:
    """(``by_acc`` restricted to rows of the query's class, whether that class spans nodes); for
    the index's own slice the same dict object each time (the index memoises references by it).
    A row without a published node count spans nodes where its count exceeds ``NODE_MAX``."""
    nodes = node_counts(index)
    counts = index.table.count
    own = by_acc is index.slices.get(key)
    memo = _CACHE.setdefault(index, {})
    most = memo.get((key, "one node")) if own else None
    if most is None:
        single = [rows[nodes[rows] == 1] for rows in by_acc.values()]
        held = np.concatenate(single) if single else np.empty(0, dtype=np.int64)
        most = max(int(counts[held].max()) if len(held) else 0, NODE_MAX)
        if own:
            memo[(key, "one node")] = most
    multi = count > most
    if own and (key, multi) in memo:
        cached: dict[str, np.ndarray] = memo[(key, multi)]
        return cached, multi
    kept = {}
    for acc, rows in by_acc.items():
        rows_of_class = rows[spans_nodes(index, rows) == multi]
        if len(rows_of_class):
            kept[acc] = rows_of_class
    if own:
        memo[(key, multi)] = kept
    return kept, multi


def spans_nodes(index: EvidenceIndex, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: whether its system spans nodes (its published node count, else a
    count beyond ``NODE_MAX``)."""
    nodes = node_counts(index)[rows]
    spans: np.ndarray = np.where(nodes > 0, nodes > 1, index.table.count[rows] > NODE_MAX)
    return spans


def with_siblings(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    classed: dict[str, np.ndarray],
    siblings: tuple[str, ...],
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """``classed`` (the query's class) with the target's ``siblings`` that ran the slice only in
    the other class, their rows of that class added (what a transfer prefers to draw on: the
    same design, not an older generation of the right system size), and those siblings; the
    same dict object for the same slice, class and siblings (the index memoises references by
    it)."""
    crossed = tuple(s for s in siblings if s in by_acc and s not in classed)
    if not crossed or any(s in classed for s in siblings):
        return classed, ()
    memo = _CACHE.setdefault(index, {})
    memo_key = (key, id(classed), crossed)
    hit = memo.get(memo_key)
    if hit is not None and hit[0] is classed:
        return hit[1], crossed
    source = {**classed, **{s: by_acc[s] for s in crossed}}
    memo[memo_key] = (classed, source)
    return source, crossed
