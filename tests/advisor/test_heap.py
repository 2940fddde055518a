"""Handing the heap's free memory back: works where the C library is glibc, a no-op elsewhere."""

from __future__ import annotations

import os

from stack_advisor.advisor.knowledge.heap import return_free_heap


def test_return_free_heap_trims_on_glibc_and_is_a_no_op_elsewhere() -> None:
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError):
        glibc = False
    assert return_free_heap() is glibc
    assert return_free_heap() is glibc  # the C function is looked up once
