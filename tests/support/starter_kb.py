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
from collections.abc import Callable
from functools import cache
from pathlib import Path

from stack_advisor.schema.models import IngestBatch, Observation
from stack_advisor.store import starter_store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot, seed_store


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


def snapshot_store(folder: Path, keep: Callable[[Observation], bool]) -> str:
    """An embedded store in ``folder`` holding the starter snapshot's observations that ``keep``
    accepts (real published results, ingested once); its URI."""
    uri = f"embedded:{folder / 'kb'}"
    rows = [o for o in load_snapshot().observations if keep(o)]
    with open_store(uri) as store:
        store.ensure_schema()
        store.ingest(IngestBatch(observations=rows))
    return uri


@cache
def _names(kind: str) -> frozenset[str]:
    """The benchmark names a ``keep`` below accepts (read once: a predicate runs per row)."""
    from stack_advisor.advisor.proxy.estimate import llm_benchmarks
    from stack_advisor.advisor.proxy.samples import training_runs, vision_models

    if kind == "llm":
        return frozenset(llm_benchmarks())
    return frozenset({*vision_models(), *training_runs()})


def llm_tokens_per_second(o: Observation) -> bool:
    """``keep`` for ``snapshot_store``: the published LLM tokens/s results (proxy evidence)."""
    return o.benchmark.name in _names("llm") and o.metric == "tokens_per_second"


def vision_and_training(o: Observation) -> bool:
    """``keep`` for ``snapshot_store``: the vision models' samples/s and the training runs'
    accelerator-hours (the described-model samples' evidence)."""
    metrics = ("samples_per_second", "accelerator_hours")
    return o.benchmark.name in _names("samples") and o.metric in metrics
