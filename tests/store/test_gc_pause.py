"""``gc_paused``: the collector is off inside, back on after, and never left off by overlapping
blocks (several threads shape batches at once in the API)."""

from __future__ import annotations

import gc

import pytest

from stack_advisor.runtime.gc_pause import gc_paused


def test_paused_inside_and_back_on_after_even_on_error() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("bad batch")
    assert gc.isenabled()


def test_overlapping_blocks_leave_it_on_whichever_ends_first() -> None:
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()  # another thread's block, started while the first one runs
    first.__exit__(None, None, None)
    assert gc.isenabled()  # the block that turned it off turned it on
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_caller_that_turned_it_off_keeps_it_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
