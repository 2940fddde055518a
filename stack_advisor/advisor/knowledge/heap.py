"""Giving the C heap's free memory back to the system after a large passing read.

A full read of the store (a million rows: ~0.5 GB of row objects and the engine's buffers) is
freed once the table is built, but glibc's allocator keeps freed pages in its arenas, so the
resident size of a long-lived process (the API) stays near the read's peak. ``malloc_trim``
hands them back. Elsewhere (musl, macOS, Windows) this is a no-op.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None where the C library is not glibc."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim  # the process's own libc
    except (AttributeError, OSError, ValueError):
        return None
    trim.argtypes = [ctypes.c_size_t]  # type: ignore[attr-defined]
    trim.restype = ctypes.c_int  # type: ignore[attr-defined]
    return trim


def return_free_heap() -> bool:
    """Return the heap's free pages to the system; False where that cannot be done here."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
