"""Python's cyclic garbage collector paused while a batch is shaped into rows."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block.

    Shaping a batch (validation, catalogue names, rows, CSV cells) allocates several container
    objects per observation and makes no reference cycles. Those allocations set off the
    collector, whose older generations walk every live tracked object, the caller's models
    included: a third of the client's CPU per observation (docs/scale.md). Reference counting
    still frees everything as usual. The switch is process-wide; only the block that turned
    the collector off turns it back on, so overlapping blocks in several threads never leave
    it off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
