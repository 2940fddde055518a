"""The stack-effect factors checked on pairs held out (``docs/accuracy.md``): the factors are
learned from the rounds before the table's latest and applied to the upgrade pairs whose newer
side is in that latest round; each row is one pool of pairs (family, vendor, direction), with how
far the carried-forward figure lands from the measured one and whether the pairs' own p10..p90
spread held it. Pairs with no factor (fewer than ``MIN_PAIRS`` to learn from) are counted, not
scored, and the figure they would get unchanged is shown beside."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.stack_effect import StackEffects, StackPair
from stack_advisor.advisor.knowledge.table import ObservationTable


def held_out_check(table: ObservationTable) -> list[dict[str, Any]]:
    """Rows ``factor``, ``pairs`` (learned from), ``held_out``, ``scored``, ``mape`` (with the
    factor), ``mape_unchanged`` (carrying the older figure as is) and ``coverage``."""
    index = EvidenceIndex(table)
    everything = StackEffects(index)
    rounds = sorted({p.round_new for p in everything.upgrade_pairs if p.round_new > 0})
    if len(rounds) < 2:
        return []
    latest, before = rounds[-1], rounds[-2]
    train = StackEffects(index, until=before)
    held = [p for p in everything.upgrade_pairs if p.round_new == latest and p.round_old <= before]
    groups: dict[tuple[str, str, str], list[StackPair]] = defaultdict(list)
    for p in held:
        groups[(p.family, p.vendor, p.direction)].append(p)
    return [_row(" ".join(key), pairs, train) for key, pairs in sorted(groups.items())]


def _row(name: str, pairs: list[StackPair], train: StackEffects) -> dict[str, Any]:
    factors = [
        train.upgrade(
            p.family,
            p.vendor,
            p.framework,
            p.benchmark,
            p.metric,
            p.direction.startswith("throughput"),
        )
        for p in pairs
    ]
    scored = [(p, f) for p, f in zip(pairs, factors, strict=True) if f is not None]
    row: dict[str, Any] = {
        "factor": name,
        "pairs": len(train.upgrade_pairs),
        "held_out": len(pairs),
        "scored": len(scored),
        "mape": None,
        "mape_unchanged": None,
        "coverage": None,
    }
    if scored:
        actual = np.asarray([math.exp(p.log_ratio) for p, _ in scored])
        carried = np.asarray([f.ratio**p.rounds for p, f in scored])  # a factor is per round
        row["mape"] = float(np.mean(np.abs(carried / actual - 1)) * 100)
        row["mape_unchanged"] = float(np.mean(np.abs(1 / actual - 1)) * 100)
        row["coverage"] = float(
            np.mean(
                [
                    f.spread_low**p.rounds <= a <= f.spread_high**p.rounds
                    for (p, f), a in zip(scored, actual, strict=True)
                ]
            )
        )
    return row
