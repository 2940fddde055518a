"""The table's building blocks: grouping rows without a Python step per row, columns and keys
extended by appended rows."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from stack_advisor.advisor.knowledge.columns import Column, KeyList
from stack_advisor.advisor.knowledge.table import group_rows


def _grouped_row_by_row(
    columns: list[np.ndarray], rows: np.ndarray
) -> list[tuple[tuple[int, ...], list[int]]]:
    out: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for i, row in enumerate(rows.tolist()):
        out[tuple(int(c[i]) for c in columns)].append(row)
    return list(out.items())


@pytest.mark.parametrize("wide", [False, True])
def test_group_rows_gives_the_groups_and_order_of_a_row_by_row_dict(wide: bool) -> None:
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(5000, size=3000, replace=False))
    columns = [
        rng.integers(0, 4, size=3000),
        rng.integers(-2, 3, size=3000),
        rng.integers(0, 7, size=3000),
    ]
    if wide:  # keys too wide for one integer: the fallback path
        columns.append(rng.integers(0, 2**40, size=3000) * 2**20)
    got = [(k, part.tolist()) for k, part in group_rows(columns, rows)]
    assert got == _grouped_row_by_row(columns, rows)
    assert group_rows(columns, rows[:0]) == []


def test_an_extended_column_keeps_its_codes_and_appends_new_values() -> None:
    old = Column.build(["a", "b", "a"])
    new = old.extended(Column.build(["c", "a", "c"]))
    assert new.vocab == ["a", "b", "c"] and new.codes.tolist() == [0, 1, 0, 2, 0, 2]
    assert new.values() == ["a", "b", "a", "c", "a", "c"]
    assert old.vocab == ["a", "b"] and old.codes.tolist() == [0, 1, 0]  # unchanged


def test_extended_keys_are_the_keys_in_order_without_splitting_the_blob() -> None:
    keys = KeyList.of(["obs-1", "obs-22", "obs-ü"])
    more = keys.extended(["obs-4", "obs-55"])
    assert keys._keys is None and more._keys is None
    assert list(more) == ["obs-1", "obs-22", "obs-ü", "obs-4", "obs-55"] and len(more) == 5
    assert list(KeyList.of([]).extended(["x"])) == ["x"]
