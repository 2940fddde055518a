"""A benchmark's accuracy variants: slices of one model on one dataset held to two accuracy
targets (llama2-70b-99 and llama2-70b-99.9, bert-99 and bert-99.9), in the same scenario, metric
and division. They share how a part's figures move its throughput, so a transfer's roofline blend
is learned over the parts of both (``transfer.pooled_alpha``); each keeps its own precision policy
(a 99.9 target can hold a part to more bits). Learned apart, one blend had read llama2-70b-99 as
compute-bound and -99.9 as memory-bound though the parts that ran both ran them alike, and B300's
transfers of the two differed by 19% (a review finding, issue 41)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stack_advisor.advisor.estimate import transfer
from stack_advisor.advisor.estimate.drift_prior import catalogue_benchmark
from stack_advisor.advisor.estimate.query import SliceKey
from stack_advisor.advisor.estimate.transfer import References

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any


def variant_slices(slices: Iterable[SliceKey], key: SliceKey) -> list[SliceKey]:
    """The slices among ``slices`` that are accuracy variants of ``key`` (itself left out): the
    catalogue gives both benchmarks one model and one dataset."""
    own = catalogue_benchmark(key[0], key[1])
    if own is None or not own.model or not own.dataset:
        return []
    out = []
    for other in slices:
        if other == key or (other[0], *other[2:]) != (key[0], *key[2:]):
            continue
        entry = catalogue_benchmark(other[0], other[1])
        if (
            entry is not None
            and entry.id != own.id
            and (entry.model, entry.dataset)
            == (
                own.model,
                own.dataset,
            )
        ):
            out.append(other)
    return sorted(out)


def blend_with_variants(
    index: EvidenceIndex, key: SliceKey, refs_by_policy: dict[str, References]
) -> tuple[str, float]:
    """(precision policy, roofline blend) of the slice ``key``: the policy its own parts choose
    (``transfer.learn_blend``), the blend learned over its parts and its accuracy variants' at
    that policy."""
    hib = index.higher_is_better(key)
    policy, alpha = transfer.learn_blend(refs_by_policy, hib)
    kin = variant_slices(index.slices, key)
    if kin and policy in refs_by_policy:
        more = [index.references(index.slices[k], policy=policy) for k in kin]
        alpha = transfer.pooled_alpha([refs_by_policy[policy], *more], hib)
    return policy, alpha
