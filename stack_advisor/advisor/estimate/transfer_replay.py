"""Replaying transfers on a slice's own history (``stack_advisor.advisor.estimate.transferred``):
the log residuals of each kind of transfer, and the quantiles a kind's interval reads from them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate import transfer
from stack_advisor.advisor.estimate.hardware import BANDWIDTH_ONLY, siblings
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.results import Basis

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any
CROSS_VENDOR = "cross-vendor"
SAME_VENDOR = ""
KINDS = (SAME_VENDOR, CROSS_VENDOR, BANDWIDTH_ONLY, f"{CROSS_VENDOR}, {BANDWIDTH_ONLY}")
# the pool of parts' first results on a benchmark, each transferred from its same-vendor peers of
# the rounds before (``first_results``)
FIRST_RESULTS = "first results"
# what a replayed or answered transfer drew on (``drawn_on``): its pool of first results apart
FROM_SIBLINGS = "from siblings"
FROM_OTHERS = "from other parts"
# how far replayed transfers' results landed beyond their references scaled by the target's faster
# resource ratio (``transfer.peak_bound``): what the peak bound allows a part's software over its
# references' (``peak_headroom``)
PEAK_HEADROOM = "peak headroom"
HEADROOM_Q = 0.9  # the share of replays the bound, carried by its headroom, holds


def kind_of(cross_vendor: bool, bandwidth_only: bool) -> str:
    return KINDS[int(cross_vendor) + 2 * int(bandwidth_only)]


def replay(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    rounds: list[float],
    out: dict[tuple[Any, ...], list[float]],
) -> None:
    """Log residuals of every kind of transfer on the slice's recent rounds, into ``out`` (same
    vendor per slice: ``(TRANSFERRED, division, metric, benchmark, scenario)``; the other kinds
    per cell: ``(TRANSFERRED, division, metric, kind)``)."""
    hib = index.higher_is_better(key)
    policy, alpha = index.blend(key, by_acc)
    base = transfer.roofline(alpha, hib, 0, policy)
    bw_model = transfer.by_bandwidth(hib)
    cell = (key[4], key[3])
    family_level = (None, "higher" if hib else "lower")
    _replay_same_vendor(index, key, by_acc, rounds, out)
    _replay_first_results(index, key, by_acc, rounds, out)
    # other vendors' parts on a benchmark are rare: every round of the slice, each accelerator
    # from the other vendors' latest results up to and including its round
    for i, rnd in enumerate(rounds):
        window = (rounds[max(0, i - 2)], rnd + 1e-6)
        for bandwidth_only in (False, True):
            model = bw_model if bandwidth_only else base
            kind = kind_of(True, bandwidth_only)
            peers = index.references(
                by_acc, between=window, policy=BANDWIDTH_ONLY if bandwidth_only else policy
            )
            current = index.references(
                by_acc, at=rnd, policy=BANDWIDTH_ONLY if bandwidth_only else policy
            )
            for acc, (_, target, cls) in current.items():
                other = {a: v for a, v in peers.items() if v[2] != cls}
                if other:
                    now = by_acc[acc][index.round_no[by_acc[acc]] == rnd]
                    value, _ = transfer.predict(model, other, target)
                    residuals = (np.log(index.unit[now]) - math.log(value)).tolist()
                    for level in (cell, family_level):
                        out[(Basis.TRANSFERRED, *level, kind)].extend(residuals)
                        out[(Basis.TRANSFERRED, *level, f"{kind} to {cls}")].extend(residuals)


def _replay_same_vendor(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    rounds: list[float],
    out: dict[tuple[Any, ...], list[float]],
) -> None:
    policy, _ = index.blend(key, by_acc)
    bw_model = transfer.by_bandwidth(index.higher_is_better(key))
    cell = (key[4], key[3])
    for i in range(max(1, len(rounds) - 2), len(rounds)):
        # each accelerator of a round from its peers' results of the two rounds before it (its
        # own left out) — what a transfer does: its references ran the stacks of earlier rounds,
        # the part it answers for runs the next one, so the residuals hold the round's drift as
        # well as the specs' error. Older peers stay out: a benchmark redefined under the same
        # name (3d-unet: BraTS, then KiTS19) would make their residuals an order of magnitude off
        rnd, window = rounds[i], (rounds[max(0, i - 2)], rounds[i])
        before = index.references(by_acc, between=window, policy=policy)
        before_bw = index.references(by_acc, between=window, policy=BANDWIDTH_ONLY)
        current = index.references(by_acc, at=rnd, policy=policy)
        current_bw = index.references(by_acc, at=rnd, policy=BANDWIDTH_ONLY)
        for acc, rows in by_acc.items():
            now = rows[index.round_no[rows] == rnd]
            if not len(now):
                continue
            actual = np.log(index.unit[now])
            if acc in current:
                target, cls = current[acc][1], current[acc][2]
                same = {a: v for a, v in before.items() if a != acc and v[2] == cls}
                if same:
                    # a learned model as fitted without this accelerator; the blend is learned
                    # with every accelerator in: a mild leak, far cheaper
                    model = index.transfer_model(key, by_acc, cls)
                    model = index.held_out_model(key, cls, acc) or model
                    value, used = transfer.predict(model, same, target, siblings(acc))
                    out[(Basis.TRANSFERRED, *cell, key[1], key[2])].extend(
                        (actual - math.log(value)).tolist()
                    )
                    if float(index.round_no[rows].min()) != rnd:  # a first result: recorded
                        beyond_bound(index, key, actual, same, used, target, out)  # once, below
            if acc in current_bw:
                target, cls = current_bw[acc][1], current_bw[acc][2]
                refs = {a: v for a, v in before_bw.items() if a != acc and v[2] == cls}
                if refs:
                    value, _ = transfer.predict(bw_model, refs, target)
                    for level in (
                        cell,
                        (None, "higher" if index.higher_is_better(key) else "lower"),
                    ):
                        out[(Basis.TRANSFERRED, *level, BANDWIDTH_ONLY)].extend(
                            (actual - math.log(value)).tolist()
                        )


def _replay_first_results(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    rounds: list[float],
    out: dict[tuple[Any, ...], list[float]],
) -> None:
    """Each part's first results on the slice, in any round after the slice's first, transferred
    from its same-vendor peers of the two rounds before: what a transfer answers (a part never
    measured on the benchmark), the drift of a round and a new part's own software included.
    Pooled per cell (division, metric) and per way the metric runs, each also apart by what the
    transfer drew on (``drawn_on``); ``first_results`` reads them."""
    policy, _ = index.blend(key, by_acc)
    way = (None, "higher" if index.higher_is_better(key) else "lower")
    for i in range(1, len(rounds)):
        rnd, window = rounds[i], (rounds[max(0, i - 2)], rounds[i])
        before: dict[str, Any] | None = None
        current = index.references(by_acc, at=rnd, policy=policy)
        for acc, rows in by_acc.items():
            if acc not in current or float(index.round_no[rows].min()) != rnd:
                continue
            if before is None:
                before = index.references(by_acc, between=window, policy=policy)
            target, cls = current[acc][1], current[acc][2]
            same = {a: v for a, v in before.items() if v[2] == cls}
            if not same:
                continue
            model = index.held_out_model(key, cls, acc) or index.transfer_model(key, by_acc, cls)
            value, used = transfer.predict(model, same, target, siblings(acc))
            now = rows[index.round_no[rows] == rnd]
            actual = np.log(index.unit[now])
            residuals = (actual - math.log(value)).tolist()
            drew = drawn_on(acc, used)
            for level in ((key[4], key[3]), way):
                out[(Basis.TRANSFERRED, *level, FIRST_RESULTS)].extend(residuals)
                out[(Basis.TRANSFERRED, *level, f"{FIRST_RESULTS} {drew}")].extend(residuals)
            beyond_bound(index, key, actual, same, used, target, out)


def beyond_bound(
    index: EvidenceIndex,
    key: tuple[str, ...],
    actual: np.ndarray,
    refs: dict[str, Any],
    used: list[str],
    target: tuple[float, float],
    out: dict[tuple[Any, ...], list[float]],
) -> None:
    """How far (log, positive: better) a replayed part's results landed beyond the peak bound of
    the references its transfer used, pooled per cell and per way the metric runs."""
    hib = index.higher_is_better(key)
    bound = transfer.peak_bound(refs, used, target, hib)
    beyond = ((actual - math.log(bound)) * (1.0 if hib else -1.0)).tolist()
    for level in ((key[4], key[3]), (None, "higher" if hib else "lower")):
        out[(Basis.TRANSFERRED, *level, PEAK_HEADROOM)].extend(beyond)


def drawn_on(acc: str, used: list[str]) -> str:
    """What a transfer to ``acc`` drew on: ``FROM_SIBLINGS`` where its references are parts of
    its own design (``hardware.siblings``: ``transfer.nearest`` then draws on them alone), else
    ``FROM_OTHERS``."""
    return FROM_SIBLINGS if set(used) & set(siblings(acc)) else FROM_OTHERS


def first_results(
    pools: dict[tuple[Any, ...], np.ndarray],
    key: tuple[str, ...],
    hib: bool,
    min_residuals: int,
    drew: str | None = None,
) -> tuple[float, float] | None:
    """How far below and above their median parts' first results on the slice's cell landed
    from their transfers (p10 - median, p90 - median of ``_replay_first_results``' pool), else on
    every metric of the family that runs the same way; None where neither holds
    ``min_residuals``.

    ``drew`` (``drawn_on``): at each level, the first results whose transfers drew on the same
    (the part's siblings, or other parts) where they hold ``min_residuals``, else every first
    result of that level: a part scaled from its own design lands closer than one scaled from
    another, and one spread for both had narrowed the other's interval (measured 2026-12-01
    when the Ampere and Ada parts came to name their siblings: round ahead v2.1 -> v3.0,
    transferred coverage 0.55 -> 0.49); the cell's own metric before the family's way (a
    single-stream latency never reads the LLM TTFTs beside it)."""
    way = (None, "higher" if hib else "lower")
    for level in ((key[4], key[3]), way):
        for label in ([f"{FIRST_RESULTS} {drew}"] if drew else []) + [FIRST_RESULTS]:
            values = pools.get((Basis.TRANSFERRED, *level, label))
            if values is not None and len(values) >= min_residuals:
                lo, mid, hi = quantiles(values, (0.1, 0.5, 0.9))
                return float(lo - mid), float(hi - mid)
    return None


def peak_headroom(
    pools: dict[tuple[Any, ...], np.ndarray], key: tuple[str, ...], hib: bool, min_residuals: int
) -> tuple[float, int]:
    """(log headroom, replays): the ``HEADROOM_Q`` quantile of how far replayed transfers'
    results landed beyond their references' peak bound (``beyond_bound``) on the slice's cell,
    else on every metric of the family that runs the same way; never below 0 (the bound is
    never tightened). (0, 0) where neither holds ``min_residuals``.

    A reference's efficiency is not the most another part's software reaches: on the shared
    MLPerf Inference rounds up to v5.1, 21% of closed throughput replays (51% of LLM tokens per
    second, whose p90 is 1.30x the bound) passed the bound their references' peaks set, so a
    bound at the references' efficiency cut off answers that held. Measured on same-vendor
    replays, each part's result in a round once; applied to every kind of transfer (the bound
    is about the references' efficiency, whoever made them). A cell with too few replays reads
    the way the metric runs over every division, as ``first_results`` does."""
    for level in ((key[4], key[3]), (None, "higher" if hib else "lower")):
        values = pools.get((Basis.TRANSFERRED, *level, PEAK_HEADROOM))
        if values is not None and len(values) >= min_residuals:
            q = np.quantile(values, HEADROOM_Q)  # one partition (answers call it per transfer)
            return max(0.0, float(q)), len(values)
    return 0.0, 0


MIN_DIRECTION = (
    10  # replays to one vendor's parts that set the centre of its cross-vendor transfers
)


def kind_quantiles(
    pools: dict[tuple[Any, ...], np.ndarray],
    key: tuple[str, ...],
    kind: str,
    cls: str,
    hib: bool,
    min_residuals: int,
) -> tuple[float, float, float]:
    """p10/median/p90 of the log residuals of ``kind`` of transfer (``KINDS``, not same-vendor)
    replayed on the slice's cell (division, metric), else on every metric of the family that
    runs the same way (higher or lower is better); NaN where neither holds ``min_residuals``.

    A cross-vendor transfer is centred on the replays *to the target's vendor* where there are
    ``MIN_DIRECTION`` of them (one vendor's parts may run under what another's scale to, and the
    other way round: their pooled median would move both the wrong way), its bounds the p10/p90 of
    every vendor's replays each centred on its own median; with fewer, on the whole pool's."""

    levels = ((key[4], key[3]), (None, "higher" if hib else "lower"))
    for i, level in enumerate(levels):
        values = pools.get((Basis.TRANSFERRED, *level, kind))
        if values is None or len(values) < min_residuals:
            continue
        own = pools.get((Basis.TRANSFERRED, *level, f"{kind} to {cls}"))
        few = own is None or len(own) < MIN_DIRECTION
        if CROSS_VENDOR in kind and few and i + 1 < len(levels):
            # too few replays to the target's vendor here: the wider level may hold enough (this
            # level's median is the other direction's, and moved MI300X TTFT 4x the wrong way)
            wider = pools.get((Basis.TRANSFERRED, *levels[i + 1], f"{kind} to {cls}"))
            if wider is not None and len(wider) >= MIN_DIRECTION:
                continue
        if CROSS_VENDOR not in kind or own is None or few:
            lo, mid, hi = quantiles(values, (0.1, 0.5, 0.9))
            return float(lo), float(mid), float(hi)
        whole = median(values)
        centred = [
            v - (median(v) if len(v) >= MIN_DIRECTION else whole)
            for k, v in pools.items()
            if len(k) == 4 and k[1:3] == level and str(k[3]).startswith(f"{kind} to ")
        ]
        lo, hi = quantiles(np.concatenate(centred), (0.1, 0.9))
        mid = median(own)
        return float(mid + lo), float(mid), float(mid + hi)
    return math.nan, math.nan, math.nan
