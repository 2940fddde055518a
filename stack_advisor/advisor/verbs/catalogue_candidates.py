"""Catalogue accelerators the knowledge base never saw, as recommend candidates (issue 27/28):
when a user's ``--accelerator`` filter names parts with no observation in the benchmark's family,
each such part joins the ranking unobserved, so the estimate hierarchy transfers to it from the
parts that ran the benchmark (basis ``transferred``, its factors shown) or refuses it with the
real reason (no figures to scale by, the model does not fit, too few transfers of its kind to
calibrate) instead of "accelerator not allowed"."""

from __future__ import annotations

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.workload import Workload
from stack_advisor.catalog import load_catalog, resolve_accelerator

PLACEMENT = "bare-metal"  # a part never measured: estimated as the datasheet describes it


def catalogue_parts(
    knowledge: Knowledge, workload: Workload, rows: np.ndarray, known: set[str]
) -> list[tuple[str, str, str, bool]]:
    """(canonical accelerator, stack id, catalogue name, whether the stack is borrowed) of each
    catalogue accelerator the workload's filter selects and ``known`` (the canonical
    accelerators the family has rows of) lacks; the stack is the newest among ``rows`` (the
    ranked slice) of the part's vendor, else of any vendor (borrowed: a placeholder for what a
    transfer assumes the part runs, not a stack to judge the part by)."""
    hw = workload.hardware
    if not hw.accelerators or not len(rows):
        return []
    out = []
    for entry in sorted(load_catalog().accelerators.values(), key=lambda e: e.id):
        key = resolve_accelerator(entry.id).key
        if key not in known and hw.allows(entry.id):
            stack, borrowed = _newest_stack(knowledge, rows, accelerator_class(entry.id))
            out.append((key, stack, entry.name, borrowed))
    return out


def _newest_stack(knowledge: Knowledge, rows: np.ndarray, vendor: str) -> tuple[str, bool]:
    table = knowledge.table
    same = np.array(
        [
            accelerator_class(table.accelerator.vocab[int(table.accelerator.codes[r])]) == vendor
            for r in rows.tolist()
        ],
        dtype=bool,
    )
    newest = knowledge.index.latest(rows[same] if same.any() else rows)
    stacks = table.stack.values(newest)
    return str(max(sorted(set(stacks)), key=stacks.count)), not same.any()
