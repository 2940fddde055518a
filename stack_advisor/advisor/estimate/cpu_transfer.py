"""The CPU transfer: a benchmark slice's figure for a CPU that never ran it, from the CPUs that
did, scaled by the catalogue's per-socket figures (``stack_advisor.catalog.cpu_models``: peak
compute derived from cores x base clock x the core's documented ops per cycle, and peak memory
bandwidth), as the accelerator transfer scales by its roofline blend
(``stack_advisor.advisor.estimate.transfer``).

MLPerf counts a CPU-only system's sockets (host processors per node x nodes), so a result per
"accelerator" is per socket, like the figures. Only CPUs are references, and only those whose
peak is read at the target's precision (an AMX int8 part is not scaled against an fp32-only
one; every CPU is read at its narrowest published precision): a CPU and an accelerator do not
scale alike, so no transfer crosses between them. The blend of compute and bandwidth is learned
on the slice's CPUs alone (leaving each out); with fewer than three, half and half.

Its interval is its own: every CPU of the slice, in every round it ran after the first, is
predicted from the other CPUs of the two CPU rounds before (its own results left out), and the
log residuals pooled per cell (division, metric), else per family of metrics run the same way,
under the kind ``cpu``; their median is the learned efficiency correction, their p10..p90 the
interval. Fewer than the minimum replays: refused, saying so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate import transfer
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.hardware import DEFAULT_POLICY, figures
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog.cpu_models import cpu_figures

CPU_KIND = "cpu"
SAME_CORE = "cpu, same core"  # every reference of the target's own microarchitecture
CPU_POLICY = DEFAULT_POLICY  # int8, else bf16/fp16, else fp32: a CPU's narrowest published peak
# ``index``: an ``stack_advisor.advisor.estimate.index.EvidenceIndex`` (typed Any: that module calls
# this one)
EvidenceIndex = Any
References = dict[str, tuple[float, tuple[float, float], str]]


def cpu_blend(
    index: EvidenceIndex, key: tuple[str, ...], by_acc: dict[str, np.ndarray]
) -> tuple[str, float]:
    """(precision policy, roofline blend) of the slice's CPU transfers: always the narrowest
    precision a CPU publishes (``CPU_POLICY``: int8 from AMX or VNNI, else bf16/fp16, else fp32),
    so that CPUs are compared by their best unit; the blend learned on the slice's CPUs alone
    (``transfer.learn_blend``)."""
    if key not in index.cpu_blends:
        refs = {CPU_POLICY: index.references(by_acc, policy=CPU_POLICY, cpu=True)}
        index.cpu_blends[key] = transfer.learn_blend(refs, index.higher_is_better(key))
    blend: tuple[str, float] = index.cpu_blends[key]
    return blend


def _precision(index: EvidenceIndex, acc: str, policy: str) -> str | None:
    return figures(index.raw_names.get(acc, acc), policy).precision


def _core(name: str) -> str | None:
    """The microarchitecture of a CPU name (``CPU <model>``), None where the catalogue has no
    model."""
    match = resolve_accelerator(name).match
    found = cpu_figures(match.cpu) if match.cpu and match.resolved else None
    return found.model.core if found else None


def _same_precision(index: EvidenceIndex, refs: References, target: str, policy: str) -> References:
    """The references whose peak is read at ``target``'s precision; those of its own
    microarchitecture alone where any ran (a newer core's gains are not a spec ratio)."""
    precision = _precision(index, target, policy)
    same = {a: v for a, v in refs.items() if _precision(index, a, policy) == precision}
    core = _core(index.raw_names.get(target, target))
    kin = {a: v for a, v in same.items() if _core(index.raw_names.get(a, a)) == core}
    return kin or same


def kind_of(index: EvidenceIndex, refs: References, target: str) -> str:
    """``CPU_KIND``, or ``SAME_CORE`` where every reference shares the target's
    microarchitecture."""
    core = _core(index.raw_names.get(target, target))
    return (
        SAME_CORE
        if core and all(_core(index.raw_names.get(a, a)) == core for a in refs)
        else CPU_KIND
    )


def _cpu_rounds(index: EvidenceIndex, by_acc: dict[str, np.ndarray]) -> list[float]:
    """The rounds in which CPUs ran the slice, oldest first."""
    cpus = [
        rows
        for acc, rows in by_acc.items()
        if accelerator_class(index.raw_names.get(acc, acc)) == "cpu"
    ]
    return sorted(set(index.round_no[np.concatenate(cpus)].tolist())) if cpus else []


def _cpu_references(
    index: EvidenceIndex,
    q: Query,
    by_acc: dict[str, np.ndarray],
    policy: str,
    precision: str | None,
    where: str,
) -> tuple[dict[str, Any], dict[str, Any]] | Estimate:
    """(measured, refs): the CPUs of the slice's two latest CPU rounds, as replayed (a benchmark
    redefined under the same name, 3d-unet: BraTS, then KiTS19, or a generation of matrix units
    ago scales badly), and those with figures at the target's precision; else the refusal."""
    name = q.raw_accelerator or q.accelerator
    rounds = _cpu_rounds(index, by_acc)
    recent = (rounds[-2] if len(rounds) > 1 else -math.inf, math.inf)
    measured = index.references(by_acc, between=recent, policy=policy, cpu=True)
    if not measured:
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"CPU never measured on this benchmark: no CPU with catalogue "
            f"figures ran {where}; accelerators' results are not transferred to a CPU (they do not "
            "scale alike)",
        )
    refs = _same_precision(index, measured, name, policy)
    if not refs:
        theirs = sorted({str(_precision(index, a, policy)) for a in measured})
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"CPU never measured on this benchmark at {precision}: the "
            f"CPUs that ran {where} ({', '.join(sorted(measured))}) have peak figures at "
            f"{', '.join(theirs)}; {q.accelerator} only at {precision} (no matrix "
            "or vector unit "
            "in common to scale by)",
        )
    return measured, refs


def _cpu_factors(
    used: list[str], model: str, target: str, kind: str, mid_q: float
) -> tuple[list[tuple[str, str, float]], list[str]]:
    """The factors and first note of a CPU transfer (``model``, ``target``: their descriptions)."""
    factors: list[tuple[str, str, float]] = [
        ("reference", f"{', '.join(used)} {model}", 1.0),
        ("target", target + " per socket", 1.0),
        ("transfer kind", kind, 1.0),
    ]
    if abs(mid_q) > 0.01:
        factors.append(
            (
                "efficiency",
                "median correction of CPU transfers on this metric's history",
                math.exp(mid_q),
            )
        )
    notes = [
        f"CPU transfer (kind {kind}) from {', '.join(used)}: their per-socket results "
        "scaled by catalogue "
        "figures derived from cores x base clock x the core's ops per cycle and memory "
        "channels x speed "
        "(interval from CPU transfers replayed on history)"
    ]
    return factors, notes


def cpu_transferred(
    index: EvidenceIndex, q: Query, by_acc: dict[str, np.ndarray], hib: bool
) -> Estimate:
    """The CPU transfer to ``q``'s CPU (module docstring), or the reason it cannot be made."""
    name = q.raw_accelerator or q.accelerator
    where = f"{q.benchmark} {q.scenario} ({q.division})"
    policy, alpha = cpu_blend(index, q.slice, by_acc)
    target = figures(name, policy)
    scaling = target.scaling()
    if scaling is None:
        missing = "peak compute" if target.bandwidth_gbs else "peak compute and memory bandwidth"
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"no published CPU figures: the catalogue has no {missing} for "
            f"{q.accelerator} (per-model cores, base clock, the core's documented ops "
            "per cycle, memory "
            f"channels and speed) to scale other CPUs' results by; it never ran {where}",
        )
    found = _cpu_references(index, q, by_acc, policy, target.precision, where)
    if isinstance(found, Estimate):
        return found
    measured, refs = found
    kind = kind_of(index, refs, name)
    lo_q, mid_q, hi_q = index.transfer_quantiles(q.slice, kind, CPU_KIND)
    if math.isnan(lo_q):
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"too few CPU transfers to calibrate: fewer than "
            f"{index.min_residuals} CPU-to-CPU transfers replayed on this metric's history, so no "
            f"interval can be given for {q.accelerator} on {where}",
        )
    model = transfer.roofline(alpha, hib, len(measured), policy)
    raw_value, used = transfer.predict(model, refs, scaling)
    value = raw_value * math.exp(mid_q)
    factors, notes = _cpu_factors(used, model.describe(), target.describe(), kind, mid_q)
    values = [v[0] for v in refs.values()]
    extrapolated = value > max(values) * 1.05 if hib else value < min(values) * 0.95
    if extrapolated:
        notes.append(
            "beyond the best measured CPU on this benchmark: extrapolated from public specs"
        )
    rows = np.concatenate([by_acc[a] for a in used])
    return Estimate(
        Basis.TRANSFERRED,
        value,
        raw_value * math.exp(lo_q),
        raw_value * math.exp(hi_q),
        rows=rows,
        references=used,
        factors=factors,
        notes=notes,
        extrapolated=extrapolated,
    )


def cpu_replay(
    index: EvidenceIndex,
    key: tuple[str, ...],
    by_acc: dict[str, np.ndarray],
    out: dict[tuple[Any, ...], list[float]],
) -> None:
    """Log residuals of the CPU transfer on the slice's history, into ``out`` under
    ``(TRANSFERRED, division, metric, "cpu")`` and ``(TRANSFERRED, None, "higher"|"lower",
    "cpu")``."""
    rounds = _cpu_rounds(index, by_acc)
    if not rounds:
        return
    hib = index.higher_is_better(key)
    policy, alpha = cpu_blend(index, key, by_acc)
    model = transfer.roofline(alpha, hib, 0, policy)
    levels = ((key[4], key[3]), (None, "higher" if hib else "lower"))
    for i in range(len(rounds)):
        rnd, window = rounds[i], (rounds[max(0, i - 2)], rounds[i] + 1e-6)
        before = index.references(by_acc, between=window, policy=policy, cpu=True)
        for acc, (_, target, _) in index.references(
            by_acc, at=rnd, policy=policy, cpu=True
        ).items():
            others = {a: v for a, v in before.items() if a != acc}
            refs = _same_precision(index, others, acc, policy)
            if not refs:
                continue
            now = by_acc[acc][index.round_no[by_acc[acc]] == rnd]
            value, _ = transfer.predict(model, refs, target)
            residuals = (np.log(index.unit[now]) - math.log(value)).tolist()
            for level in levels:
                out[(Basis.TRANSFERRED, *level, kind_of(index, refs, acc))].extend(residuals)
