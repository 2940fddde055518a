"""The software class of a result that only its framework's name classed.

"pytorch" names MLCommons' reference code and also AMD's, Intel's and NVIDIA's optimised stacks
(AMD's closed LLM results read ``PyTorch 2.10.0+git..., ROCm 7.2.2``; NVIDIA's Training results
run in NGC PyTorch containers), so the name alone decides nothing: a result's class is what its
level shows beside the optimised results of the same accelerator, benchmark, scenario and round.
Results with no optimised peer keep the name's class; results whose system folder or submitter
said how they ran (``implementation``: reference or vendor) keep that.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from stack_advisor.advisor.estimate.order_stats import median
from stack_advisor.advisor.estimate.protocols import EvidenceIndex

REFERENCE, OPTIMISED = "reference", "optimised"  # ``entries.SOFTWARE_CLASSES``
# A result named only by a reference-class framework ran an optimised stack where it reaches this
# share of the optimised results' median on the same part, benchmark, scenario and round. Measured
# on the held rounds (starter KB, 2026-11-29): results named "pytorch" with such peers sat at
# 0.86-4.6x of them (p10-p90; 10 inference and 22 training results), "onnxruntime" at 0.08-0.12x.
LEVEL = 0.5


@dataclass(frozen=True)
class RowStack:
    """What an estimate needs of a row's stack: canonical framework, major.minor version, class."""

    framework: str | None
    version: str | None
    software_class: str | None


def leveled(
    index: EvidenceIndex,
    stack_of: list[RowStack],
    by_word: np.ndarray,
    families: tuple[str, ...],
) -> dict[int, RowStack]:
    """Row -> its stack with the class its level shows, for the rows of ``families`` whose stack
    (``by_word[stack code]``) only the framework's name classed and that have optimised peers."""
    codes = index.table.stack.codes
    out: dict[int, RowStack] = {}
    for key, by_acc in index.slices.items():
        if key[0] not in families:
            continue
        hib = index.higher_is_better(key)
        for rows in by_acc.values():
            if not by_word[codes[rows]].any():
                continue
            for rnd in np.unique(index.round_no[rows]):
                group = rows[index.round_no[rows] == rnd]
                word = by_word[codes[group]]
                peers = [
                    r
                    for r in group[~word].tolist()
                    if stack_of[int(codes[r])].software_class == OPTIMISED
                ]
                if not peers or not word.any():
                    continue
                level = median(index.unit[np.asarray(peers)])
                for r in group[word].tolist():
                    ratio = float(index.unit[r]) / level
                    at = (ratio if hib else 1 / ratio) >= LEVEL
                    base = stack_of[int(codes[r])]
                    out[r] = replace(base, software_class=OPTIMISED if at else REFERENCE)
    return out
