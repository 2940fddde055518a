"""A virtualised placement (passthrough, vGPU) is never answered faster than bare metal without
evidence that it is: its answer is held to the same configuration's bare-metal answer, moved by
the placement effect learned from pairs (the same system in the same round, bare metal and VM;
``stack_advisor.advisor.estimate.analysis.placement_overheads``) with that effect's interval.

Without this, a VM answer drawn from other rows (a newer multi-node result) could beat the exact
bare-metal match of an older round, although a hypervisor only ever costs speed. ``recommend``
and ``predict`` both hold their estimates here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.results import Basis

VIRTUAL = ("passthrough", "vgpu")


def held_to_bare_metal(index: Any, q: Query, est: Estimate, hib: bool) -> Estimate:
    """``est`` for a VM placement, no better than bare metal moved by the learned effect (its
    interval's ends where known), and that answer itself where ``est`` rests on no result of
    the placement (it read other rows of the part: a probe's vGPU L40S had come out 41% below
    its own bare-metal result beside 'overhead assumed none'); an observed VM result, or any
    other placement, as it is."""
    if q.placement not in VIRTUAL or est.basis in (Basis.OBSERVED, Basis.UNSUPPORTED):
        return est
    if est.value is None or est.low is None or est.high is None:
        return est
    bare = index.estimate(dataclasses.replace(q, placement="bare-metal"))
    if bare.value is None or bare.low is None or bare.high is None:
        return est
    overhead = index.overheads.get((q.accelerator, q.placement))
    ratio = float(overhead.ratio) if overhead is not None else 1.0
    interval = getattr(overhead, "interval", None)
    lo_r, hi_r = (interval.low, interval.high) if interval is not None else (ratio, ratio)

    def moved(v: float, r: float) -> float:
        return v * r if hib else v / r

    value = moved(bare.value, ratio)
    better = est.value > value if hib else est.value < value
    if not better and index.ran_in(est.rows, q.placement).any():
        return est
    ends = sorted((moved(bare.low, min(lo_r, hi_r)), moved(bare.high, max(lo_r, hi_r))))
    why = (
        f"x{ratio:.3g} from {overhead.pairs} paired results"
        if overhead is not None
        else "no paired results: a hypervisor is taken to cost nothing, never to gain"
    )
    held = (
        "is not answered faster than bare metal without evidence"
        if better
        else "is answered from bare metal where no result of it is held"
    )
    return dataclasses.replace(
        est,
        value=value,
        low=min(ends[0], value),
        high=max(ends[1], value),
        notes=[
            *est.notes,
            f"held to the bare-metal answer for this configuration ({why}): a {q.placement} "
            f"placement {held}",
        ],
        # the figure is the bare-metal answer's, moved once: its factors, not the VM estimate's
        # (whose own placement factor would be counted twice)
        factors=[*bare.factors, ("placement held to bare metal", q.placement, ratio)],
        rows=bare.rows,
        measured_round=bare.measured_round,
    )
