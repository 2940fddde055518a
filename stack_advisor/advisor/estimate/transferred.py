"""Transfers: a benchmark slice's figure for an accelerator that never ran it, from the parts that
did, scaled by catalogue figures (``stack_advisor.advisor.estimate.hardware``,
``stack_advisor.advisor.estimate.transfer``); and the replay of the same on the knowledge base's
history that calibrates their intervals.

A transfer draws on the nearest references of the target's own vendor. Where none ran the slice it
draws on other vendors' (``cross-vendor``), and where the catalogue publishes no compute figure
for the target it scales by memory bandwidth alone (``bandwidth only``) — only on a benchmark the
slice's learned blend finds memory-bound (else by its measured level on the other benchmarks it
ran, ``stack_advisor.advisor.estimate.level_transfer``, else from its generation's parts by
bandwidth, ``stack_advisor.advisor.estimate.generation_transfer``, or refused: compute matters and
is unknown; every blend now weighs compute, ``transfer.ALPHAS``), and in
4-bit operands where the slice runs 4-bit and the part's generation has fp4. Each kind is replayed
apart on the history (each accelerator of a recent round from its peers' results of the rounds
before: the same kind of references, the round's drift included) and answers with its own
residuals' p10..p90: wider where that kind of transfer has been worse, and spanning what each
precision policy gives where the slice's parts cannot tell them apart (``policy_spread``). A kind
with too few replays to calibrate an interval is refused, saying so. A CPU transfers from CPUs only
(``stack_advisor.advisor.estimate.cpu_transfer``); no transfer crosses between CPUs and
accelerators, nor between device classes (``transfer.within_span``), and no end of an interval
goes beyond what the target's peak figures allow from its references (``transfer.peak_bound``,
carried by the precision spread and by the larger of the learned efficiency correction (another
vendor's transfers: their replays' centre; a same-vendor transfer has none, ``_answer_centre``)
and the headroom replayed parts' results have shown beyond their own references' bound,
``transfer_replay.peak_headroom``: a reference's efficiency is not the most a part reaches).
References are read from
results of the query's system class (one node for up to eight accelerators, several beyond:
``references_class``) where a part of the target's vendor ran in that class, else from every
result, saying so: a rack's per-accelerator figure is not one server's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate import transfer
from stack_advisor.advisor.estimate.cpu_transfer import cpu_transferred
from stack_advisor.advisor.estimate.facts import accelerator_class, model_weights_gb
from stack_advisor.advisor.estimate.generation_transfer import generation_transfer
from stack_advisor.advisor.estimate.hardware import (
    BANDWIDTH_ONLY,
    bandwidth_figures,
    figures,
    replicas_per_node,
    runs_fp4,
    scaling_figures,
    siblings,
)
from stack_advisor.advisor.estimate.level_transfer import level_transfer
from stack_advisor.advisor.estimate.node_scaling import ClassFactor, class_factor
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.estimate.references_class import of_class, with_siblings
from stack_advisor.advisor.estimate.transfer import figure_text
from stack_advisor.advisor.estimate.transfer_replay import CROSS_VENDOR as CROSS_VENDOR
from stack_advisor.advisor.estimate.transfer_replay import (
    HEADROOM_Q,
    drawn_on,
    first_results,
    kind_of,
    peak_headroom,
)
from stack_advisor.advisor.estimate.transfer_replay import KINDS as KINDS
from stack_advisor.advisor.estimate.transfer_replay import MIN_DIRECTION as MIN_DIRECTION
from stack_advisor.advisor.estimate.transfer_replay import SAME_VENDOR as SAME_VENDOR
from stack_advisor.advisor.estimate.transfer_replay import kind_quantiles as kind_quantiles
from stack_advisor.advisor.estimate.transfer_replay import replay as replay
from stack_advisor.advisor.results import Basis

# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any here: that module
# calls this one)
EvidenceIndex = Any


def _calibrated(
    index: EvidenceIndex,
    q: Query,
    kind: str,
    cls: str,
    refs: dict[str, tuple[float, tuple[float, float], str]],
    drew: str,
) -> tuple[float, float, float] | Estimate:
    """(p10, median, p90) log residuals of this kind of transfer, never narrower than a
    same-vendor transfer on the slice (whose replays hold a round's drift); a refusal where too
    few transfers of the kind were replayed to calibrate an interval. A same-vendor transfer's
    bounds are those of parts' first results on the cell (``first_results``: what a transfer
    answers, measured round ahead; those whose transfers drew as this one did, ``drew``, on the
    part's siblings or on other parts), their spread around both its answer and the replays'
    centre; another kind's are never narrower than every first result's."""
    lo_q, mid_q, hi_q = index.transfer_quantiles(q.slice, kind, cls)
    if math.isnan(lo_q):
        seen = sorted({v[2] for v in refs.values()})
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"no accelerator of this class measured: no {cls} accelerator "
            f"ever ran {q.benchmark} {q.scenario} (seen: {', '.join(seen)}), and too few {kind} "
            "transfers on this metric's history to calibrate an interval",
        )
    if kind:
        s_lo, s_mid, s_hi = index.quantiles(q.slice, Basis.TRANSFERRED)
        lo_q, hi_q = (
            mid_q + min(lo_q - mid_q, s_lo - s_mid),
            mid_q + max(hi_q - mid_q, s_hi - s_mid),
        )
    # a part's first results on a benchmark, predicted from the rounds before, are what a
    # transfer answers: their spread is a same-vendor transfer's, and the floor of other kinds'
    first = first_results(
        index.residuals_for(q.family),
        q.slice,
        index.higher_is_better(q.slice),
        index.min_residuals,
        None if kind else drew,
    )
    if first is not None and not kind:
        # the answer is the scaling itself (``_answer_centre``: the replays' centre moved answers
        # the wrong way as often as not), so the bounds hold the first results' spread around
        # both: the answer is never outside its interval, nor at an end the spread leaves room past
        lo_q, hi_q = min(mid_q, 0.0) + first[0], max(mid_q, 0.0) + first[1]
    elif first is not None:
        lo_q, hi_q = mid_q + min(lo_q - mid_q, first[0]), mid_q + max(hi_q - mid_q, first[1])
    return lo_q, mid_q, hi_q


def _explain(
    q: Query,
    name: str,
    kind: str,
    cls: str,
    refs: dict[str, tuple[float, tuple[float, float], str]],
    mid_q: float,
    fp4: bool,
    factors: list[tuple[str, str, float]],
    notes: list[str],
) -> None:
    """The factors and notes after the scaling: fp4 bandwidth, the kind of transfer, the learned
    efficiency correction and whether the model fits."""
    if fp4:
        factors.append(
            (
                "precision",
                "fp4 (its generation has it): bandwidth counted in 4-bit operands, as for "
                "the references that run fp4",
                2.0,
            )
        )
    if kind:
        factors.append(("transfer kind", kind, 1.0))
        notes.append(_kind_note(kind, cls, refs))
    if abs(mid_q) > 0.01:
        factors.append(
            (
                "efficiency",
                f"median correction of {kind} transfers on this metric's history",
                math.exp(mid_q),
            )
        )
    fit = _fit_note(q, name)
    if fit:
        notes.append(fit)


def _scaled_factors(
    index: EvidenceIndex,
    q: Query,
    by_acc: dict[str, np.ndarray],
    scaling: _Scaling,
    name: str,
    cls: str,
    used: list[str],
) -> tuple[list[tuple[str, str, float]], list[str], dict[str, float]]:
    """(factors, notes, spread): the references and the target's figures, and where the
    precision is not determined, the value each candidate policy gives (the interval spans
    them); the note where the references are of other system sizes than the query's."""
    model, source = scaling.model, scaling.source
    bandwidth_only = model.precision == BANDWIDTH_ONLY
    factors: list[tuple[str, str, float]] = [
        ("reference", f"{', '.join(used)} {model.describe()}", 1.0),
        (
            "target",
            figures(name, model.precision if not bandwidth_only else "8-bit").describe(),
            1.0,
        ),
    ]
    notes: list[str] = [scaling.note] if scaling.note else []
    spread = (
        {} if bandwidth_only else policy_spread(index, q.slice, by_acc, model, name, cls, source)
    )
    if spread:  # precision not determined: the interval spans what each candidate policy gives
        factors.append(("precision", _spread_text(spread, model.precision), 1.0))
        notes.append(factors[-1][1])
    return factors, notes, spread


def transferred_estimate(
    index: EvidenceIndex, q: Query, by_acc: dict[str, np.ndarray], hib: bool
) -> Estimate:
    """The transfer to ``q``'s accelerator (module docstring), or the reason it cannot be made."""
    name = q.raw_accelerator or q.accelerator
    cls = accelerator_class(name)
    if cls == "cpu":  # from other CPUs only (stack_advisor.advisor.estimate.cpu_transfer)
        return cpu_transferred(index, q, by_acc, hib)
    scaling = _scaling(index, q, by_acc, name, cls, hib)
    if isinstance(scaling, Estimate):
        return scaling
    model, target, policy, refs = scaling.model, scaling.target, scaling.policy, scaling.refs
    bandwidth_only = model.precision == BANDWIDTH_ONLY
    same = {a: v for a, v in refs.items() if v[2] == cls}
    kind = kind_of(not same, bandwidth_only)
    pool = same or refs
    raw_value, used = transfer.predict(model, pool, target, siblings(name))
    calibrated = _calibrated(index, q, kind, cls, refs, drawn_on(name, used))
    if isinstance(calibrated, Estimate):
        return calibrated
    lo_q, centre, hi_q = calibrated
    mid_q = _answer_centre(kind, centre)
    raw = index.raw_names
    if not any(same_device_class(raw.get(a, a), name, pool[a][1], target) for a in used):
        return Estimate(Basis.UNSUPPORTED, reason=_span_refusal(q, name, pool, used, target))
    factors, notes, spread = _scaled_factors(index, q, by_acc, scaling, name, cls, used)
    lo_q, hi_q = _crossed_class(scaling, used, (lo_q, centre, hi_q), factors)
    low, high = min(spread.values(), default=raw_value), max(spread.values(), default=raw_value)
    # another kind's median residual on the cell's history is a learned efficiency correction
    # (how that vendor's parts compared before); the interval is their p10..p90 around the scaling
    value = raw_value * math.exp(mid_q)
    fp4 = bandwidth_only and policy == "4-bit" and runs_fp4(name)
    _explain(q, name, kind, cls, refs, mid_q, fp4, factors, notes)
    all_values = [v[0] for v in refs.values()]
    extrapolated = value > max(all_values) * 1.05 if hib else value < min(all_values) * 0.95
    if extrapolated:
        notes.append(
            "beyond the best measured accelerator on this benchmark: extrapolated from public specs"
        )
    rows = np.concatenate([scaling.source[a] for a in used])
    widest = (max if hib else min)(spread.values()) / raw_value if spread else 1.0
    value, low, high = _held_to_peaks(
        index,
        q,
        (pool, used, target),
        (value, low * math.exp(lo_q), high * math.exp(hi_q)),
        (widest, mid_q),
        notes,
    )
    return Estimate(
        Basis.TRANSFERRED,
        value,
        low,
        high,
        rows=rows,
        references=used,
        factors=factors,
        notes=notes,
        extrapolated=extrapolated,
    )


def _answer_centre(kind: str, centre: float) -> float:
    """The log correction a transfer of ``kind`` answers at, from its replays' ``centre``.

    A same-vendor transfer answers at the scaling itself, its interval the first results' spread
    around both it and the replays' centre (``_calibrated``): that centre (a part's result
    against its peers of the two rounds before, a round's drift in it) moved answers whose
    references are of the slice's newest round, and the wrong way as often as not (on the
    shared rounds, without it: one accelerator out 20.2%
    -> 17.4% MAPE, within the newest round 21.8% -> 18.2%, round ahead v3.0 -> v4.1 35.2% ->
    28.2%, v4.1 -> v5.1 15.4% -> 13.7%; coverage as was). Another kind keeps its centre: how
    that vendor's parts compared before."""
    return centre if kind else 0.0


def _held_to_peaks(
    index: EvidenceIndex,
    q: Query,
    scaled: tuple[dict[str, Any], list[str], tuple[float, float]],
    ends: tuple[float, float, float],
    carried: tuple[float, float],
    notes: list[str],
) -> tuple[float, float, float]:
    """(value, low, high) with no end better than the part's peak bound (``transfer.peak_bound``
    of the references ``used`` from ``pool`` at ``target``), the bound carried by the widest
    precision the interval spans and by the larger of the learned efficiency correction (the
    centre a cross-vendor kind answers at; none for a same-vendor transfer) and the headroom
    replayed parts' results
    showed beyond their own references' bound (measured against the raw bound, it holds what
    ``learned`` carries too); notes say what held an end and why."""
    (pool, used, target), (widest, mid_q) = scaled, carried
    hib = index.higher_is_better(q.slice)
    learned = max(1.0, math.exp(mid_q)) if hib else min(1.0, math.exp(mid_q))
    headroom, replays = peak_headroom(
        index.residuals_for(q.family), q.slice, hib, index.min_residuals
    )
    allowed = math.exp(headroom if hib else -headroom)
    efficiency = max(learned, allowed) if hib else min(learned, allowed)
    bound = transfer.peak_bound(pool, used, target, hib) * widest * efficiency
    value, low, high = _bounded(*ends, bound, hib)
    stretched = stretch_note(*ends, " per accelerator" if hib else "")
    if stretched:
        notes.append(stretched)
    if (high if hib else low) == bound:
        each = " per accelerator" if hib else ""  # a throughput's bound: per accelerator
        notes.append(f"{transfer.HELD}{figure_text(bound)}{each} at best)")
        notes.append(_headroom_note(efficiency, allowed, replays, hib))
    return value, low, high


def stretch_note(value: float, low: float, high: float, each: str = "") -> str:
    """What an answer outside its own replayed range says ("" where inside): a same-vendor
    transfer answers at the scaling (``_answer_centre``) while its interval is where the
    replays landed, so where they all landed on one side of it the interval is stretched to
    hold the answer. Answering at the range's nearer end instead was measured once on
    2026-11-30 (``bench/ttft_limit_share.py``, the specs transfer of p99 TTFT on rounds <=
    v5.1, the only place it fired): MAPE 39.8% -> 41.0%, coverage 0.45 -> 0.40; not kept."""
    if low <= value <= high:
        return ""
    side = "below" if value < low else "above"
    return (
        f"the answer ({figure_text(value)}{each}) lies {side} the 80% range its replayed "
        f"transfers give ({figure_text(low)}-{figure_text(high)}): the interval is stretched to "
        "hold it"
    )


def _headroom_note(efficiency: float, allowed: float, replays: int, hib: bool) -> str:
    """What the peak bound carries beyond the references' efficiency, and where that came from:
    the headroom replayed transfers showed, or the learned efficiency correction where larger."""
    beyond = efficiency if hib else 1.0 / efficiency
    if efficiency == allowed and replays:
        why = (
            f"{HEADROOM_Q:.0%} of {replays} replayed transfers' results stayed within "
            f"{beyond:.2f}x their own references' bound"
        )
    elif efficiency == 1.0:
        why = "no replay measured a headroom beyond it"
    else:
        why = "the learned efficiency correction of this kind of transfer"
    return f"the peak bound allows {beyond:.2f}x its references' efficiency: {why}"


def _bounded(
    value: float, low: float, high: float, bound: float, hib: bool
) -> tuple[float, float, float]:
    """(value, low, high) with no end better than ``bound`` (``transfer.peak_bound``), the
    interval still holding the value."""
    if hib and high > bound:
        high, value = bound, min(value, bound)
    elif not hib and low < bound:
        low, value = bound, max(value, bound)
    return value, min(low, value), max(high, value)


def same_device_class(
    reference: str, name: str, scaled: tuple[float, float], target: tuple[float, float]
) -> bool:
    """Whether two parts are of one device class (``transfer.within_span``), read on their
    hardware: 16-bit compute (as published, else read off a matrix peak at fewer bits:
    ``hardware.matrix_rate``) and memory bandwidth. The figures a transfer scales by
    (``scaled``, ``target``) count each part at the precision it runs (fp4, bandwidth in 4-bit
    operands, where its generation has it), which would set a part a generation on (MI355X in
    fp4 beside MI325X in fp8) as far apart as a workstation card; they decide only where a part
    publishes no 16-bit figures."""
    return transfer.within_span(*_class_figures(reference, name, scaled, target)[:2])


def _class_figures(
    reference: str, name: str, scaled: tuple[float, float], target: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float], str]:
    """(reference's, target's (compute, bandwidth), the precisions read) that
    ``same_device_class`` compares: the figures ``hardware.figures`` gives for 16 bits where both
    parts have them (a part publishing no 16-bit rate is read at its vector fp32, as the RTX 5090
    is), else the figures the transfer scales by."""
    ref, tgt = figures(reference, "16-bit"), figures(name, "16-bit")
    if ref.compute and tgt.compute and ref.bandwidth_gbs and tgt.bandwidth_gbs:
        read = "/".join(dict.fromkeys((ref.precision or "16-bit", tgt.precision or "16-bit")))
        return (ref.compute, ref.bandwidth_gbs), (tgt.compute, tgt.bandwidth_gbs), read
    return scaled, target, "the transfer's precision"


def _span_refusal(
    q: Query, name: str, pool: dict[str, Any], used: list[str], target: tuple[float, float]
) -> str:
    ref = used[0]
    (compute, bandwidth), (t_compute, t_bandwidth), read = _class_figures(
        ref, name, pool[ref][1], target
    )
    return (
        f"no reference of its device class: the measured part nearest {name} on {q.benchmark} "
        f"{q.scenario}, {ref}, is more than {transfer.MAX_SPAN:g}x apart in peak compute "
        f"({figure_text(compute)} vs {figure_text(t_compute)} T at {read}) times bandwidth "
        f"({figure_text(bandwidth)} vs {figure_text(t_bandwidth)} GB/s): another device class, "
        "and no factor has been learned "
        "across that span"
    )


@dataclass(frozen=True)
class _Scaling:
    """What a transfer scales by: its model, the target's (compute, bandwidth), the precision
    policy the figures are read under, and the references."""

    model: transfer.TransferModel
    target: tuple[float, float]
    policy: str
    refs: dict[str, Any]
    source: dict[str, np.ndarray]  # the slice's rows the references were read from
    note: str | None = None
    # the target's siblings read from the other system class, moved to the query's by
    # ``class_factor`` (``references_class.with_siblings``), and that factor
    crossed: tuple[str, ...] = ()
    class_move: ClassFactor | None = None
    to_multi: bool = False


def _scaling(
    index: EvidenceIndex, q: Query, by_acc: dict[str, np.ndarray], name: str, cls: str, hib: bool
) -> _Scaling | Estimate:
    """The slice's transfer model and figures for ``name`` (by bandwidth alone where the part
    publishes no compute figure), or the refusal."""
    model = index.transfer_model(q.slice, by_acc, cls)
    target = scaling_figures(name, model.precision)
    policy = model.precision
    if target is None:
        policy, alpha = index.blend(q.slice, by_acc)
        target = bandwidth_figures(name, policy)
        refused = _bandwidth_refusal(q, target is None, alpha)
        if refused or target is None:
            # no figure to scale by: the part's measured level on other benchmarks, else its
            # generation's parts scaled by bandwidth, if any
            by_level = level_transfer(index, q, by_acc) or generation_transfer(index, q, by_acc)
            return by_level or Estimate(Basis.UNSUPPORTED, reason=refused)
        model = transfer.by_bandwidth(hib, model.accelerators)
    source, note, crossed, multi = _class_source(index, q, by_acc, name, cls, model.precision)
    refs = index.references(source, policy=model.precision)
    found = class_factor(index, q.family) if crossed else None
    if found is not None:  # per accelerator, moved to the query's system class
        ratio = found.ratio(multi)
        refs = {
            a: ((v * ratio, p, c) if a in crossed else (v, p, c)) for a, (v, p, c) in refs.items()
        }
    if (
        model.precision == BANDWIDTH_ONLY and policy == "4-bit"
    ):  # the references' bandwidth in their operands
        refs = {
            a: (v, bandwidth_figures(index.raw_names.get(a, a), policy) or p, c)
            for a, (v, p, c) in refs.items()
        }
    if not refs:
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"no accelerator with public figures measured: none ran "
            f"{q.benchmark} {q.scenario} with catalogue figures to scale by",
        )
    return _Scaling(
        model, target, policy, refs, source, note, crossed, found if crossed else None, multi
    )


def _crossed_class(
    scaling: _Scaling,
    used: list[str],
    quantiles: tuple[float, float, float],
    factors: list[tuple[str, str, float]],
) -> tuple[float, float]:
    """The log quantiles (low, high) of a transfer that read siblings of the other system
    class (``references_class.with_siblings``): the class factor's spread added, the factor
    shown; as they were where none of them was used."""
    lo_q, mid_q, hi_q = quantiles
    moved = [a for a in used if a in scaling.crossed]
    found = scaling.class_move
    if not moved or found is None:
        return lo_q, hi_q
    down, up = found.spread()
    ratio = found.ratio(scaling.to_multi)
    kinds = ("single-node", "multi-node") if scaling.to_multi else ("multi-node", "single-node")
    factors.append(
        (
            "system class",
            f"{', '.join(moved)} (the same design) ran it only in {kinds[0]} systems: their "
            f"per-accelerator figures moved to a {kinds[1]} one by {ratio:.3f}x ({found.pairs} "
            "parts with both in one round), not an older design of the query's size",
            ratio,
        )
    )
    return mid_q - math.hypot(mid_q - lo_q, down), mid_q + math.hypot(hi_q - mid_q, up)


def _class_source(
    index: EvidenceIndex,
    q: Query,
    by_acc: dict[str, np.ndarray],
    name: str,
    cls: str,
    policy: str,
) -> tuple[dict[str, np.ndarray], str | None, tuple[str, ...], bool]:
    """(the rows a transfer reads its references from, the note where they are of every system
    size, the target's siblings among them read from the other class, whether the query spans
    nodes). The rows are those of the query's system class (one node, or several) where a
    reference of the target's vendor (else of any vendor, where none of its vendor ran the
    benchmark) ran in that class, with the target's siblings that ran it only in the other class
    where a factor between the classes is learned (``references_class.with_siblings``); else
    every row, saying so."""
    classed, multi = of_class(index, q.slice, by_acc, q.count)
    if len(classed) == len(by_acc) and all(len(classed[a]) == len(by_acc[a]) for a in classed):
        return by_acc, None, (), multi  # every result is of the query's class
    every = index.references(by_acc, policy=policy)
    own = index.references(classed, policy=policy)
    vendor_ran = any(v[2] == cls for v in every.values())
    if own and (any(v[2] == cls for v in own.values()) or not vendor_ran):
        if class_factor(index, q.family) is None:
            return classed, None, (), multi
        source, crossed = with_siblings(index, q.slice, by_acc, classed, siblings(name))
        return source, None, crossed, multi
    kind = "multi-node" if multi else "single-node"
    note = (
        f"no reference part has a {kind} result on {q.benchmark} {q.scenario}: scaled from "
        "results of other system sizes (their per-accelerator figures as published)"
    )
    return by_acc, note, (), multi


def policy_spread(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    model: transfer.TransferModel,
    name: str,
    cls: str,
    source: dict[str, np.ndarray] | None = None,
) -> dict[str, float]:
    """policy → the figure ``model`` transfers to ``name`` under it, for the slice's policy and
    those its evidence could not tell from it (``transfer.choose_policy``), where they differ by
    more than 1% (the target's figures move against the references' between them); else empty."""
    choice = index.policy_choice(key, by_acc)
    if choice.policy != model.precision or not choice.undetermined:
        return {}
    out = {}
    for policy in (model.precision, *choice.undetermined):
        target = scaling_figures(name, policy)
        refs = index.references(by_acc if source is None else source, policy=policy)
        same = {a: v for a, v in refs.items() if v[2] == cls}
        if target is not None and refs:
            out[policy] = transfer.predict(replace(model, precision=policy), same or refs, target)[
                0
            ]
    kept = out.get(model.precision)
    moved = {
        p: v
        for p, v in out.items()
        if kept is not None and p != model.precision and abs(math.log(v / kept)) > 0.01
    }
    return {model.precision: kept, **moved} if kept is not None and moved else {}


def _spread_text(spread: dict[str, float], kept: str) -> str:
    others = ", ".join(f"at {p} {v / spread[kept]:.2f}x it" for p, v in spread.items() if p != kept)
    return (
        "precision not determined: the parts that ran this benchmark cannot tell "
        f"{' and '.join(spread)} apart "
        f"(fewer than {transfer.MIN_TELLING} whose figures move between them, or none "
        "predicted across them); "
        f"at {kept} (kept) this figure, {others}; the interval spans them"
    )


def _bandwidth_refusal(q: Query, no_bandwidth: bool, alpha: float) -> str | None:
    """Why a part without a compute figure is not transferred to: no bandwidth figure either, or
    a benchmark that is not memory-bound (bandwidth alone stands for speed only where the
    slice's learned blend gives compute no weight: on llama2-70b-99.9, blend 0.25, it was off by
    3.4x where the 99 variant, blend 0, was within 1.1x)."""
    if no_bandwidth:
        return (
            f"no public specs to transfer by: {q.accelerator} has neither a peak compute "
            "nor a memory "
            f"bandwidth figure in the catalogue and was never measured on {q.benchmark} "
            f"{q.scenario}"
        )
    if alpha <= 0:
        return None
    return (
        f"compute unpublished: the catalogue has no peak compute figure for {q.accelerator}, and "
        f"{q.benchmark} {q.scenario} is not memory-bound on the parts that ran it "
        "(learned blend: peak "
        f"compute^{alpha:g} x bandwidth^{1 - alpha:g}): bandwidth alone would not predict it"
    )


def _kind_note(kind: str, cls: str, refs: dict[str, Any]) -> str:
    parts = []
    if CROSS_VENDOR in kind:
        parts.append(
            f"no {cls} accelerator ran this benchmark: transferred from "
            f"{', '.join(sorted({v[2] for v in refs.values()}))} parts"
        )
    if BANDWIDTH_ONLY in kind:
        parts.append(
            "the catalogue publishes no compute figure for this part: scaled by memory "
            "bandwidth alone"
        )
    return "; ".join(parts) + " (interval from the same kind of transfer replayed on history)"


def _fit_note(q: Query, name: str) -> str | None:
    """How many copies of the model fit on the configuration (weights at 8 bits), where known."""
    need = model_weights_gb(q.benchmark)
    have = figures(name).memory_gb
    if need is None or have is None or need[0] < 1:
        return None
    copies = replicas_per_node(need[0], have, q.count)
    return (
        f"memory: {copies} cop{'y' if copies == 1 else 'ies'} of the model's {need[0]:g} GB "
        f"of weights (8 bits) fit on {q.count} x {have:g} GB"
    )
