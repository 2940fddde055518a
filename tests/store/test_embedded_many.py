"""One process may hold many embedded stores open at once (a server's stores, a test session's
fixtures, a bench): each database reserves address space, and at the engine's default 8 TiB the
16th open failed with "Mmap ... failed"."""

from __future__ import annotations

from pathlib import Path

from stack_advisor.store.registry import open_store


def test_twenty_embedded_stores_open_at_once(tmp_path: Path) -> None:
    stores = [open_store(f"embedded:{tmp_path / f'kb{i}'}") for i in range(20)]
    try:
        assert all(s.generation() >= 0 for s in stores)
    finally:
        for s in stores:
            s.close()
