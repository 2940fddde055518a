"""The hook where estimates pick their sources (``EvidenceIndex.estimate``): an estimate for a
query that names its framework is held to the stack rules of
``stack_advisor.advisor.estimate.stack_effect``: never borrowed across software classes without a
learned factor (else refused), carried forward from an older version of the same framework by the
upgrade factor, shown (else a note says it was not)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from stack_advisor.advisor.estimate.drift_prior import PRIOR_WEIGHT_PAIRS, round_label
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.order_stats import median
from stack_advisor.advisor.estimate.protocols import EvidenceIndex
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.estimate.stack_effect import (
    CLASSED_FAMILIES,
    MIN_PAIRS,
    StackEffects,
    StackFactor,
    direction_of,
    effects_of,
    framework_id,
    version_key,
)
from stack_advisor.advisor.estimate.stack_level import REFERENCE
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import SoftwareClass, stack_class
from stack_advisor.catalog.rounds import release_of
from stack_advisor.catalog.stack_text import parse_framework


def apply_factor(
    est: Estimate, factor: StackFactor, hib: bool, kind: str, text: str, *, widen: bool = True
) -> Estimate:
    """``est`` moved by the factor's speed ratio, the factor shown; ``widen``: its interval
    widened by the factor's pair spread (log half-widths added in quadrature), else moved as is."""
    assert est.value is not None and est.low is not None and est.high is not None
    r = factor.ratio if hib else 1 / factor.ratio
    value = est.value * r
    lo_w, hi_w = math.log(est.value / est.low), math.log(est.high / est.value)
    s_lo, s_hi = (
        math.log(factor.ratio / factor.spread_low),
        math.log(factor.spread_high / factor.ratio),
    )
    if not hib:
        s_lo, s_hi = s_hi, s_lo
    if not widen:
        s_lo = s_hi = 0.0
    low = value * math.exp(-math.hypot(lo_w, s_lo))
    high = value * math.exp(math.hypot(hi_w, s_hi))
    return replace(
        est,
        value=value,
        low=low,
        high=high,
        factors=[*est.factors, (kind, f"{text}: {factor.describe()}", r)],
    )


def query_stack(q: Query) -> tuple[str, str | None, SoftwareClass | None] | None:
    """(canonical framework, major.minor version, class) of the framework a query names; None
    when it names none the catalogue knows."""
    if not q.framework:
        return None
    # the runtime that ran this benchmark where the text lists several (a system's framework field)
    name, version = _parsed(q.framework, q.benchmark, q.family)
    fw = framework_id(name or q.framework)
    if fw is None:
        return None
    return (
        fw,
        version_key(version or q.components.get(fw)),
        stack_class(fw, q.components.get("implementation")),
    )


@lru_cache(maxsize=4096)
def _parsed(framework: str, benchmark: str, family: str) -> tuple[str | None, str | None]:
    """``parse_framework`` once per text and benchmark: a ranking asks it for every candidate
    (a recommendation of resnet50 reads some 280 stacks' texts, most of them alike)."""
    return parse_framework(framework, benchmark, family)


def adjust(index: EvidenceIndex, q: Query, est: Estimate) -> Estimate:
    """An estimate for a query that names its framework, made honest about the stack: borrowed
    across software classes only through a learned factor (else refused; results of another
    class are never "observed"), and an interpolation carried forward from an older version of
    the same framework through the upgrade factor (else a note says it was not)."""
    if est.basis is Basis.UNSUPPORTED or est.value is None or not len(est.rows):
        return est
    if est.derived_from is not None:
        return est  # from another scenario's estimate, made honest about the stack there
    wanted = query_stack(q)
    if wanted is None:
        return est
    effects = effects_of(index)
    named, decided = wanted[2], _query_class(effects, q, est, wanted)
    if named is not None and decided is not None and decided != named:
        note = (
            f"software class: {named.framework} runs as MLCommons' reference code and as "
            f"optimised stacks; taken as {decided.software_class}: {decided.source}"
        )
        est = replace(est, notes=[*est.notes, note])
    wanted = (*wanted[:2], decided)
    if est.basis is Basis.OBSERVED:
        # a framework named without a version matches every stack of the configuration: results
        # of another software class are not an observation of this one
        return _observed_class(effects, q, _own_framework(effects, q, est, wanted[0]), wanted[2])
    est = _cross_class(effects, q, est, wanted[2])
    if est.basis is Basis.INTERPOLATED:
        est = _carry_forward(effects, q, est, wanted[0], wanted[1])
        est = _others_only(effects, est, wanted[0])
    return est


def _others_only(effects: StackEffects, est: Estimate, fw: str) -> Estimate:
    """An interpolation none of whose results ran the named framework says so (as an
    observation of another framework does, ``_own_framework``): a probe got "vLLM 0.9.0" on an
    H200 answered from its TensorRT results, unsaid, where "vllm" alone said it."""
    if est.basis is not Basis.INTERPOLATED or not len(est.rows):
        return est
    if any(kind == "software class" for kind, _, _ in est.factors):
        return est  # moved across classes by a learned factor: its own note says whose
    ran = sorted({effects.row_stack(r).framework or "unknown" for r in est.rows.tolist()})
    if fw in ran:
        return est
    note = (
        f"no result of {fw} on this accelerator: the figure is of {', '.join(ran)} (its "
        "software class alike), not of it"
    )
    return replace(est, notes=[*est.notes, note])


def _query_class(
    effects: StackEffects,
    q: Query,
    est: Estimate,
    wanted: tuple[str, str | None, SoftwareClass | None],
) -> SoftwareClass | None:
    """The class a query asks for. Where only the framework's name gave it (no
    ``implementation`` component: "PyTorch 2.10.0, ROCm 7.2.2", "vLLM 0.5.2"), the class its
    results show (``stack_level``): those on the estimate's evidence, else, for a
    reference-class name, every result the knowledge base could level of that framework
    (reference only where most ran at its level); the name's class where none shows one. A
    probe's "vLLM 0.5.2" on 8 L40S was refused as borrowing reference results: its own, a vLLM
    run recorded as MLCommons' reference code."""
    fw, _, cls = wanted
    if cls is None or q.components.get("implementation"):
        return cls
    rows = [r for r in est.rows.tolist() if effects.row_stack(r).framework == fw]
    where = "on this evidence"
    if not rows and cls.software_class != REFERENCE:
        return cls  # an optimised name: its own results here say otherwise, or nothing does
    if not rows:
        rows, where = effects.leveled_rows(fw), "in the knowledge base, beside optimised peers"
    shown = [effects.row_stack(r).software_class for r in rows]
    known = sorted({c for c in shown if c is not None})
    majority = max(known, key=shown.count, default=None)
    if majority is None or majority == cls.software_class:
        return cls
    return SoftwareClass(
        fw,
        majority,
        f"{shown.count(majority)} of its {len(shown)} results {where} ran at {majority} level "
        "(stack_advisor.advisor.estimate.stack_level)",
    )


def _own_framework(effects: StackEffects, q: Query, est: Estimate, fw: str) -> Estimate:
    """An observation of the named framework from its own results where the configuration also
    ran others (a framework named without a version matches every stack); where it ran none,
    no observation of it: the others' figure as an interpolation, saying so (its interval at
    least an interpolation's)."""
    own = np.asarray([effects.row_stack(r).framework == fw for r in est.rows.tolist()], dtype=bool)
    index = effects.index
    if not own.any():
        ran = sorted({effects.row_stack(r).framework or "unknown" for r in est.rows.tolist()})
        lo_q, _, hi_q = index.quantiles(q.slice, Basis.INTERPOLATED)
        assert est.value is not None and est.low is not None and est.high is not None
        note = (
            f"no result of {fw} on this configuration: the figure is of {', '.join(ran)} "
            "(its software class alike), not an observation of it"
        )
        return replace(
            est,
            basis=Basis.INTERPOLATED,
            low=min(est.low, est.value * math.exp(lo_q)),
            high=max(est.high, est.value * math.exp(hi_q)),
            notes=[*est.notes, note],
        )
    if own.all():
        return est
    rows = est.rows[own]
    value = median(index.unit[index.latest(rows)])
    scale = value / est.value  # type: ignore[operator]
    return replace(est, value=value, low=est.low * scale, high=est.high * scale, rows=rows)  # type: ignore[operator]


def _observed_class(
    effects: StackEffects, q: Query, est: Estimate, wanted: SoftwareClass | None
) -> Estimate:
    if wanted is None or q.family not in CLASSED_FAMILIES:
        return est
    classes = {effects.row_stack(r).software_class for r in est.rows.tolist()} - {None}
    if not classes or wanted.software_class in classes:
        return est
    return _cross_class(effects, q, replace(est, basis=Basis.INTERPOLATED), wanted)


def _cross_class(
    effects: StackEffects, q: Query, est: Estimate, wanted: SoftwareClass | None
) -> Estimate:
    index = effects.index
    if wanted is None or q.family not in CLASSED_FAMILIES:
        return est
    rows = est.rows
    classes = np.asarray(
        [effects.row_stack(r).software_class or "" for r in rows.tolist()], dtype=object
    )
    known = set(classes.tolist()) - {""}
    if not known or known == {wanted.software_class}:
        return est
    hib = index.higher_is_better(q.slice)
    if wanted.software_class in known:
        if est.basis is not Basis.INTERPOLATED:
            return est
        same = rows[classes == wanted.software_class]
        value = median(index.unit[index.latest(same)])
        scale = value / est.value  # type: ignore[operator]
        return replace(
            est,
            value=value,
            low=est.low * scale,  # type: ignore[operator]
            high=est.high * scale,  # type: ignore[operator]
            rows=same,
            factors=[
                *est.factors,
                (
                    "software class",
                    f"only its {wanted.software_class} results "
                    f"(like {wanted.framework}): {len(same)} of {len(rows)}",
                    1.0,
                ),
            ],
        )
    other = sorted(known)[0]
    names = sorted({effects.row_stack(r).framework or "?" for r in rows.tolist()})
    vendor = accelerator_class(q.raw_accelerator or q.accelerator)
    factor = effects.crossing(
        q.family, vendor, other, wanted.software_class, direction_of(q.family, q.benchmark, hib)
    )
    what = (
        f"{wanted.framework} is {'an' if (wanted.software_class or 'x')[0] in 'aeiou' else 'a'} "
        f"{wanted.software_class} implementation "
        f"({wanted.source}); the results this "
        f"estimate borrows ran on {other} runtimes ({', '.join(names)})"
    )
    if factor is None:
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"software class: {what}, and fewer than {MIN_PAIRS} pairs of both "
            f"classes on the same accelerator, benchmark and round ({q.family}, {vendor} "
            "accelerators) "
            "to learn the factor between them from",
        )
    moved = apply_factor(est, factor, hib, "software class", f"{other} -> {wanted.software_class}")
    return replace(
        moved, notes=[*moved.notes, f"software class: {what}; moved by a factor learned from pairs"]
    )


def _newest_only(
    effects: StackEffects, est: Estimate, fw: str, newest: str | None, latest: np.ndarray
) -> Estimate:
    """The estimate from the newest version's own results where the versions are one host's
    measurements (``advisor sweep``: an upgrade); versions within one published round are
    submitters, not an upgrade (``upgrade_pair``), so there the median of every latest result
    stays: picking the newest version's (often one submitter's) moved by-round answers further
    from the next round (v3.0 -> v4.1 interpolated MAPE 6.2% -> 5.9%, median 4.3% -> 3.8%)."""
    index = effects.index

    def is_newest(r: int) -> bool:
        return effects.row_stack(r).framework == fw and effects.row_stack(r).version == newest

    measured = not index.round_no[latest].any()
    if measured and not all(is_newest(r) for r in latest.tolist()):
        own = est.rows[[is_newest(r) for r in est.rows.tolist()]]
        value = median(index.unit[index.latest(own)])
        scale = value / est.value  # type: ignore[operator]
        est = replace(
            est,
            value=value,
            low=est.low * scale,  # type: ignore[operator]
            high=est.high * scale,  # type: ignore[operator]
            rows=own,
            factors=[
                *est.factors,
                (
                    "stack version",
                    f"only its {fw} {newest} results: {len(own)} of {len(est.rows)}",
                    1.0,
                ),
            ],
        )
    return est


def _carry_forward(
    effects: StackEffects, q: Query, est: Estimate, fw: str, version: str | None
) -> Estimate:
    index = effects.index
    wanted = release_of(version)
    if wanted is None:
        return est
    est = _past_every_release(effects, est, fw, version, wanted)
    latest = index.latest(est.rows)
    have = {
        effects.row_stack(r).version
        for r in latest.tolist()
        if effects.row_stack(r).framework == fw
    }
    have.discard(None)
    if not have:
        return est
    newest = max(have, key=lambda v: release_of(v) or ())
    if (release_of(newest) or ()) >= wanted:
        return est
    vendor = accelerator_class(q.raw_accelerator or q.accelerator)
    hib = index.higher_is_better(q.slice)
    factor = effects.upgrade(q.family, vendor, fw, q.benchmark, q.metric, hib)
    if factor is None:
        return replace(
            est,
            notes=[
                *est.notes,
                f"stack: no pairs to carry {fw} {newest} forward to {version} on "
                f"{vendor} ({q.family}); its {newest} results are used as they are",
            ],
        )
    if not factor.significant:
        return replace(
            est,
            notes=[
                *est.notes,
                f"stack: upgrading {fw} {newest} to {version} on {vendor}: "
                f"{factor.percent()} from {factor.pairs} pairs ({factor.scope}), not told apart "
                f"from no change; its {newest} results are used as they are",
            ],
        )
    est = _newest_only(effects, est, fw, newest, latest)
    factor, drifted = _toward_round_drift(index, q, latest, factor)
    # not widened: an interpolated interval is conformal on the same accelerator's moves from
    # round to round, which hold its stack upgrades already
    return apply_factor(
        est,
        factor,
        hib,
        "stack",
        f"{fw} {newest} carried forward to {version} (one round's step){drifted}",
        widen=False,
    )


def _toward_round_drift(
    index: EvidenceIndex, q: Query, latest: np.ndarray, factor: StackFactor
) -> tuple[StackFactor, str]:
    """The upgrade factor moved toward the round drift the parts measured in both rounds show on
    the query's slice, where the evidence ``latest`` is of a round older than the newest the
    knowledge base holds for it (up to the round asked): their log moves weighted n : 4
    (``PRIOR_WEIGHT_PAIRS``), and what the factor's text adds; else the factor as it is.

    The factor is a median over every benchmark's stack changes of the framework; the pairs
    are this benchmark's own step between those rounds, upgrades included, but few pairs are
    noisy (measured 2026-12-01, within the newest round, one accelerator out: the pairs alone
    took B200's llama2-70b from 9% to 3% off and H200's, from two pairs, from 9% to 14%)."""
    drift = index.round_drift
    rounds = index.round_no[latest]
    held = drift.rounds(q.slice)
    if not len(rounds) or not (rounds > 0).all() or not held:
        return factor, ""
    old = float(rounds.max())
    new = min(drift.slice_target(q.slice, q.as_of), held[-1])
    pairs = [v for _, v in drift.pairs(q.slice, old, new)] if new > old else []
    if not pairs:
        return factor, ""
    hib = index.higher_is_better(q.slice)
    moved = median(np.asarray(pairs))  # the value's log move (a lower-is-better figure: down)
    speed = moved if hib else -moved
    w = len(pairs) / (len(pairs) + PRIOR_WEIGHT_PAIRS)
    ratio = math.exp(w * speed + (1 - w) * math.log(factor.ratio))
    text = (
        f", moved toward the round drift {len(pairs)} parts in both rounds show on this "
        f"benchmark ({round_label(old)} -> {round_label(new)}: {math.exp(speed):.3f}x speed, "
        f"weighted {w:.2f})"
    )
    scale = ratio / factor.ratio
    return (
        replace(
            factor,
            ratio=ratio,
            low=factor.low * scale,
            high=factor.high * scale,
            spread_low=factor.spread_low * scale,
            spread_high=factor.spread_high * scale,
        ),
        text,
    )


def _past_every_release(
    effects: StackEffects, est: Estimate, fw: str, version: str | None, wanted: tuple[int, ...]
) -> Estimate:
    """A note where the version asked is two or more major releases past the newest any result
    of the knowledge base ran (``TensorRT 99.0`` beside 10.x held): a release not out yet, or a
    typo; the answer stays one round's step past what was measured, as the factor says."""
    newest = effects.newest_held.get(fw)
    held = release_of(newest)
    if not held or wanted[0] < held[0] + 2:
        return est
    note = (
        f"stack: {fw} {version} is {wanted[0] - held[0]} major releases past the newest any "
        f"result ran ({newest}): a release not out yet, or a typo? answered as measured, at most "
        "one round's step forward"
    )
    return replace(est, notes=[*est.notes, note])
