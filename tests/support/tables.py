"""Comparing observation tables column by column."""

from __future__ import annotations

import numpy as np

from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.table import ObservationTable


def assert_same_table(a: ObservationTable, b: ObservationTable) -> None:
    assert (a.n, a.generation) == (b.n, b.generation)
    assert a.keys == b.keys
    for name in table_file.NUMERIC:
        got, want = getattr(a, name), getattr(b, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    for name in table_file.COLUMNS:
        ca, cb = getattr(a, name), getattr(b, name)
        assert ca.vocab == cb.vocab and ca.index == cb.index, name
        assert np.array_equal(ca.codes, cb.codes), name
        assert ca.values() == cb.values(), name
    assert {k: vars(v) for k, v in a.benchmarks.items()} == {
        k: vars(v) for k, v in b.benchmarks.items()
    }
    assert {k: v.model_dump() for k, v in a.stacks.items()} == {
        k: v.model_dump() for k, v in b.stacks.items()
    }
    assert all(s.stack_id == k for k, s in a.stacks.items())
    assert a.images == b.images
