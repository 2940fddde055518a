"""The starter knowledge base as an embedded store file, made once per test session and copied
for every test or module that needs a store of its own.

Made as a fresh default store is (``stack_advisor.store.registry``): the shipped prebuilt store
(``stack_advisor.store.starter_store.restore``, a gzip'd copy: ~0.2 CPU-seconds), or, where its
stamp does not match this install, seeded from the snapshot (~10 CPU-seconds for 18,000
observations). That the shipped store holds what seeding writes is proven in
tests/store/test_starter_store.py. A copy is one file copy (~0.1 s), so a test that writes to
its store never changes another's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from stack_advisor.store import starter_store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import seed_store


def make_starter_kb(folder: Path) -> Path:
    """The starter knowledge base's store file in ``folder`` (restored, or seeded when the
    shipped store does not stand for this install)."""
    target = folder / "kb"
    if not starter_store.restore(target):
        with open_store(f"embedded:{target}") as store:
            seed_store(store)
    return target


def copy_starter_kb(source: Path, target: Path) -> str:
    """Copy the closed embedded store file ``source`` (from ``make_starter_kb``, or any store a
    module ingested once) and any sidecar of it (``kb.wal``, ...) to ``target``; the copy's URI."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for sidecar in source.parent.glob(source.name + ".*"):
        shutil.copyfile(sidecar, target.with_name(target.name + sidecar.name[len(source.name) :]))
    shutil.copyfile(source, target)
    return f"embedded:{target}"
