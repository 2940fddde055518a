"""Candidates for catalogue accelerators the knowledge base never saw (issue 27/28): when a
user's ``--accelerator`` filter names parts with no observation in the benchmark's family, each
such part joins the ranking unobserved, so the estimate hierarchy transfers to it from the parts
that ran the benchmark (basis ``transferred``, its factors shown) or refuses it with the real
reason (no figures to scale by, the model does not fit, too few transfers of its kind to
calibrate) instead of "accelerator not allowed"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.estimate.facts import accelerator_class
from advisor.snapshot import Knowledge
from graph_schema.catalog import load_catalog, resolve_accelerator

if TYPE_CHECKING:
    from advisor.verbs.candidates import Candidate, Slice

PLACEMENT = "bare-metal"  # a part never measured: estimated as the datasheet describes it


def catalogue_candidates(knowledge: Knowledge, sl: Slice, known: set[str]) -> list[Candidate]:
    """One unobserved candidate per catalogue accelerator the filter selects and ``known`` (the
    canonical accelerators the family has rows of) lacks, on the slice's newest stack of the
    part's vendor (else the slice's newest stack): what a transfer assumes it runs."""
    from advisor.verbs.candidates import Candidate

    hw = sl.workload.hardware
    if not hw.accelerators or not len(sl.rows):
        return []
    table = knowledge.table
    out: list[Candidate] = []
    for entry in sorted(load_catalog().accelerators.values(), key=lambda e: e.id):
        key = resolve_accelerator(entry.id).key
        if key in known or not hw.allows(entry.id):
            continue
        stack_id = _newest_stack(knowledge, sl, accelerator_class(entry.id))
        out.append(Candidate(accelerator=key, placement=PLACEMENT, stack_id=stack_id, stack=table.stacks[stack_id],
                             rows=[], observed=False, published=[entry.name]))
    return out


def _newest_stack(knowledge: Knowledge, sl: Slice, vendor: str) -> str:
    table, index = knowledge.table, knowledge.index
    rows = [r for r in sl.rows.tolist() if accelerator_class(table.accelerator.vocab[int(table.accelerator.codes[r])])
            == vendor]
    pool = index.latest(sl.rows[[i for i, r in enumerate(sl.rows.tolist()) if r in set(rows)]] if rows else sl.rows)
    stacks = table.stack.values(pool)
    return max(set(stacks), key=stacks.count)
