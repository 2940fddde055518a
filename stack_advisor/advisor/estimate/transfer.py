"""How a benchmark slice transfers to an accelerator that never ran it, from the accelerators
that did: fitted once per table (at calibration), persisted with the calibration, evaluated with
plain arithmetic at answer time.

Every model scales the ``NEAREST`` references closest by peak figures,
``u_t = median_r u_r · exp(a·(log P_t − log P_r) + b·(log B_t − log B_r))`` (``u``: the
per-accelerator figure of the reference's latest round, ``P`` peak compute, ``B`` bandwidth).
Two methods choose ``a`` and ``b``:

- ``roofline`` (what answers use): ``a = α``, ``b = 1 − α``, the share of compute in the roofline
  blend picked from ``ALPHAS`` (0.25..0.75: a figure moves with both) by leaving one accelerator
  out (smallest median |log error|); signs flipped for lower-is-better metrics.

References whose compute and bandwidth ratios to the target multiply past ``MAX_SPAN`` are
another device class and are not drawn on while closer ones exist (``nearest``); answers refuse a
target with none (``transferred``), and no figure's interval reaches beyond ``peak_bound``.
- ``learned`` (the challenger ``scripts/accuracy_report.py`` measures beside it): per slice and
  accelerator class, scikit-learn's ``Ridge`` fits the log of the percent-of-roofline efficiency
  ``log u − α·log P − (1 − α)·log B`` on ``log P`` and ``log B`` — the literature's
  utilisation target, shrunk towards the roofline blend — and
  ``sklearn.model_selection.LeaveOneGroupOut`` (one group per accelerator) scores it against the
  roofline blend on the same held-out accelerators; it is kept only where its mean |log error| is
  lower. Fitting imports scikit-learn; ``predict`` never does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stack_advisor.advisor.estimate.hardware import DEFAULT_POLICY
from stack_advisor.advisor.estimate.order_stats import median

# share of compute in the roofline blend: never 0 or 1 — every benchmark both reads its weights
# and activations (bandwidth) and computes on them, so a part's figure moves with both (a blend
# of bandwidth alone had made 8x H20, 4.0 TB/s and a seventh of H100's compute, out-serve H100
# on llama2-70b)
ALPHAS = (0.25, 0.5, 0.75)
# a reference whose peak compute and bandwidth ratios to the target's multiply past this is of
# another device class (Arc Pro B60 Dual for Gaudi 3: 4.7x x 4.0x), not a reference for it (H100
# NVL for H20: 5.6x x 1.03x still is: one memory system, a seventh of the compute)
MAX_SPAN = 8.0
NEAREST = 3  # reference accelerators a transfer draws on
MIN_LEARN = 5  # accelerators of the class a learned model needs (fitted on 4, 1 held out)
MIN_TELLING = 2  # parts whose figures move between two precision policies that a choice needs
RIDGE_PENALTY = 1.0  # fixed before measuring; RidgeCV's own choice did worse on both protocols
METHODS = ("roofline", "learned")
ROOFLINE = "roofline blend"
LEARNED = "ridge roofline efficiency"

# accelerator → (median per-accelerator value of its latest round, (peak compute, bandwidth), class)
References = dict[str, tuple[float, tuple[float, float], str]]


@dataclass(frozen=True)
class TransferModel:
    """A slice's transfer to one accelerator class: the exponents of peak compute and bandwidth
    applied to the nearest references, and how they were chosen."""

    method: str  # ROOFLINE or LEARNED
    compute_exp: float
    bandwidth_exp: float
    accelerators: int = 0  # how many references it was chosen on
    # mean |log error| leaving each accelerator of the class out, of the learned model and of the
    # roofline blend on the same accelerators (NaN where no learned model was tried)
    learned_cv_error: float = math.nan
    roofline_cv_error: float = math.nan
    precision: str = DEFAULT_POLICY  # the precision policy peak figures are read at (``hardware``)

    @property
    def alpha(self) -> float:
        """The share of compute, |a| / (|a| + |b|): what the factor calls compute- or
        memory-bound."""
        total = abs(self.compute_exp) + abs(self.bandwidth_exp)
        return abs(self.compute_exp) / total if total else 0.5

    def describe(self) -> str:
        """How a transferred figure was made, for its ``reference`` factor."""
        bound = (
            "compute"
            if self.alpha >= 0.75
            else "memory"
            if self.alpha <= 0.25
            else "compute and memory"
        )
        if self.method == ROOFLINE:
            return (
                f"scaled by peak compute^{self.alpha:g} x bandwidth^{1 - self.alpha:g} "
                f"at {self.precision} "
                f"({bound}-bound, learned on {self.accelerators} accelerators)"
            )
        return (
            f"scaled by peak compute^{self.compute_exp:.2f} x "
            f"bandwidth^{self.bandwidth_exp:.2f} at "
            f"{self.precision} ({LEARNED}: "
            "scikit-learn Ridge on log peak compute and log bandwidth over "
            f"{self.accelerators} accelerators; "
            f"leave-one-accelerator-out error {self.learned_cv_error:.3f} vs "
            f"{self.roofline_cv_error:.3f} for the "
            f"roofline blend)"
        )

    def as_list(self) -> list[str | float | int]:
        return [
            self.method,
            self.compute_exp,
            self.bandwidth_exp,
            self.accelerators,
            self.learned_cv_error,
            self.roofline_cv_error,
            self.precision,
        ]

    @classmethod
    def from_list(cls, values: list[str | float | int]) -> TransferModel:
        method, a, b, n, cv, roof, *rest = values
        if method not in (ROOFLINE, LEARNED):
            raise ValueError(f"unknown transfer model {method!r}")
        return cls(
            str(method),
            float(a),
            float(b),
            int(n),
            float(cv),
            float(roof),
            str(rest[0]) if rest else DEFAULT_POLICY,
        )


def roofline(
    alpha: float, hib: bool, accelerators: int = 0, precision: str = DEFAULT_POLICY
) -> TransferModel:
    sign = 1.0 if hib else -1.0
    return TransferModel(
        ROOFLINE, sign * alpha, sign * (1 - alpha), accelerators, precision=precision
    )


def by_bandwidth(hib: bool, accelerators: int = 0) -> TransferModel:
    """A transfer to a part with no published compute figure: bandwidth alone (the references'
    compute figures set to 1 by ``hardware.bandwidth_figures``)."""
    return roofline(0.0, hib, accelerators, precision="bandwidth only")


def _distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    return abs(math.log(a[0] / b[0])) + abs(math.log(a[1] / b[1]))


def within_span(figures: tuple[float, float], target: tuple[float, float]) -> bool:
    """Whether a reference's (compute, bandwidth) is of the target's device class: the two
    ratios between them (each >= 1) multiply to at most ``MAX_SPAN``."""
    return math.prod(max(a / b, b / a) for a, b in zip(figures, target) if a > 0 and b > 0) <= (
        MAX_SPAN
    )


def nearest(
    refs: References, target: tuple[float, float], prefer: tuple[str, ...] = ()
) -> list[str]:
    """The ``NEAREST`` references: the target's siblings among them first (``prefer``, the
    catalogue's parts closest in design, nearest first), then the closest by peak figures; those
    of the target's device class (``within_span``) only where it has any."""
    ordered = sorted(refs, key=lambda a: (_distance(refs[a][1], target), a))
    close = [a for a in ordered if within_span(refs[a][1], target)] or ordered
    first = [a for a in prefer if a in close]
    if first:  # a part of the same design ran it: its figures, not another generation's
        return first[:NEAREST]
    return close[:NEAREST]


# how a transfer's note on the peak bound begins (``transferred``; ``drift.held_bound`` rewrites it
# when it carries the interval to another round)
HELD = "held to what its peak figures allow ("


def peak_bound(refs: References, used: list[str], target: tuple[float, float], hib: bool) -> float:
    """The best figure the target's peaks allow from the references ``used``: each reference
    scaled by the larger of its compute and bandwidth ratios (a roofline part is at most as much
    faster as its faster resource), the best of them; for a lower-is-better figure, the lowest
    with the ratios inverted."""
    scaled = [
        refs[a][0] * max(target[0] / refs[a][1][0], target[1] / refs[a][1][1]) ** (1 if hib else -1)
        for a in used
    ]
    return max(scaled) if hib else min(scaled)


def predict(
    model: TransferModel,
    refs: References,
    target: tuple[float, float],
    prefer: tuple[str, ...] = (),
) -> tuple[float, list[str]]:
    """The figure ``model`` transfers to ``target`` (peak compute, bandwidth) from ``refs``
    (accelerators of the target's class; its siblings, ``prefer``, first), and the references
    it used. No scikit-learn."""
    used = nearest(refs, target, prefer)
    scaled = [
        refs[a][0]
        * (target[0] / refs[a][1][0]) ** model.compute_exp
        * (target[1] / refs[a][1][1]) ** model.bandwidth_exp
        for a in used
    ]
    return median(scaled), used


def learn_alpha(refs: References, hib: bool) -> float:
    """The roofline blend that best predicts each accelerator from the others of its class
    (smallest median |log error|; 0.5 when fewer than three accelerators)."""
    return _alpha_and_error(refs, hib)[0]


def _alpha_and_error(refs: References, hib: bool) -> tuple[float, float]:
    if len(refs) < 3:
        return 0.5, math.inf
    best, best_err = 0.5, math.inf
    for alpha in ALPHAS:
        errs = _held_out_errors(refs, roofline(alpha, hib))
        if not errs:
            return 0.5, math.inf
        err = median(errs)
        if err < best_err - 1e-9:
            best, best_err = alpha, err
    return best, best_err


def pooled_alpha(refs_list: list[References], hib: bool) -> float:
    """``learn_alpha`` over several slices at once (a benchmark's accuracy variants,
    ``stack_advisor.advisor.estimate.variants``): the blend with the smallest median |log error|
    of every slice's parts, each predicted from the others of its slice and class (0.5 where no
    slice has three parts)."""
    usable = [refs for refs in refs_list if len(refs) >= 3]
    best, best_err = 0.5, math.inf
    for alpha in ALPHAS:
        errs = [e for refs in usable for e in _held_out_errors(refs, roofline(alpha, hib))]
        if not errs:
            return 0.5
        err = median(errs)
        if err < best_err - 1e-9:
            best, best_err = alpha, err
    return best


def learn_blend(refs_by_policy: dict[str, References], hib: bool) -> tuple[str, float]:
    """(precision policy, roofline blend) that best predicts each accelerator from the others of
    its class: the blend learned under each policy's figures (``hardware.POLICIES``, in order), the
    policy with the smallest median |log error| over every part kept (the first where none can be
    scored or a later one is not better by 0.01). Where that choice rests on too few parts to tell
    the policies apart, answers span them (``undetermined``)."""
    best_policy, best_alpha, best_err = "", 0.5, math.inf
    tried: list[References] = []
    for policy, refs in refs_by_policy.items():
        if refs in tried:  # the same figures as a policy before it (no part of the slice has fp4)
            continue
        tried.append(refs)
        alpha, err = _alpha_and_error(refs, hib)
        if not best_policy or err < best_err - 0.01:
            best_policy, best_alpha, best_err = policy, alpha, err
    return best_policy or DEFAULT_POLICY, best_alpha


@dataclass(frozen=True)
class PolicyChoice:
    """A slice's precision policy, its blend, and the policies its evidence cannot tell from it
    (``undetermined``, in ``hardware.POLICIES`` order): answers span what those give."""

    policy: str
    alpha: float
    undetermined: tuple[str, ...] = ()


def choose_policy(
    refs_by_policy: dict[str, References], hib: bool, chosen: tuple[str, float] | None = None
) -> PolicyChoice:
    """``learn_blend``'s policy and blend (``chosen``: already learned on these references), with
    the policies it is not determined against.

    Two policies differ only where they move one part's figures against another's (a policy that
    doubles every part's figures scales nothing differently): the parts are grouped by the ratio
    of their figures under the two policies, and the *telling* parts are those outside the largest
    group (``telling_parts``). A choice is determined only where at least ``MIN_TELLING`` parts
    tell and at least one part's held-out prediction mixes groups (a telling part predicted from
    the others, or a part predicted from a telling one); else the other policy is undetermined.

    The choice itself stays ``learn_blend``'s median over every part: deciding it on the mixed
    parts alone, with the kept default where fewer than two parts tell, was measured worse
    leaving one accelerator out on v5.1 (MAPE 32.3% against 28.7%; v4.1 to v5.1 by round 14.9%
    against 13.7%): one fp4 part's evidence was right more often than the 8-bit default.
    Reading an undetermined slice's policy off its benchmark group's determined slices instead
    (the one most of them chose; measured 2026-11-29 on the shared rounds, not adopted) agreed
    with the precision the v5.1 table publishes (``weight_data_types``) on deepseek-r1 and
    llama3.1-8b but not mixtral-8x7b (fp8 on RTX PRO 6000 Blackwell), and though it took
    deepseek-r1 within the newest round from MAPE 49.8% / 52.1% (Offline / Server) to 29.9% /
    34.9%, llama3.1-8b's at 4 bits went from MAPE 6.6-14.8% to 44.5-84.6%: within-round MAPE
    18.5% -> 21.5%, coverage 0.74 -> 0.69; leaving one accelerator out 20.2% -> 21.2%.
    """
    policy, alpha = chosen or learn_blend(refs_by_policy, hib)
    if policy not in refs_by_policy:
        return PolicyChoice(policy, alpha)
    kept = refs_by_policy[policy]
    undetermined = tuple(
        other
        for other, refs in refs_by_policy.items()
        if other != policy and not _determined(kept, refs, alpha, learn_alpha(refs, hib), hib)
    )
    return PolicyChoice(policy, alpha, undetermined)


def telling_parts(first: References, second: References) -> list[str]:
    """The parts whose figures move against the others' between two policies' references: those
    outside the largest group of equal (compute, bandwidth) ratios (sorted; ties between groups
    broken by the ratio)."""
    groups: dict[tuple[float, float], list[str]] = {}
    for acc in sorted(set(first) & set(second)):
        groups.setdefault(_ratio(first[acc][1], second[acc][1]), []).append(acc)
    if len(groups) < 2:
        return []
    largest = max(sorted(groups), key=lambda g: len(groups[g]))
    return sorted(a for g, members in groups.items() if g != largest for a in members)


def _ratio(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return round(math.log(b[0] / a[0]), 3), round(math.log(b[1] / a[1]), 3)


def _determined(
    first: References, second: References, alpha_1: float, alpha_2: float, hib: bool
) -> bool:
    """Whether the parts can tell two policies apart (``choose_policy``)."""
    if len(telling_parts(first, second)) < MIN_TELLING:
        return False
    group = {a: _ratio(first[a][1], second[a][1]) for a in set(first) & set(second)}
    held_1 = _held_out(first, roofline(alpha_1, hib))
    held_2 = _held_out(second, roofline(alpha_2, hib))
    return any(
        group.get(r) != group.get(a)
        for a in set(held_1) & set(held_2)
        for r in held_1[a][1] + held_2[a][1]
    )


def _held_out_errors(refs: References, model: TransferModel) -> list[float]:
    """|log error| of each accelerator (sorted by name) transferred from the others of its class."""
    return [err for err, _ in _held_out(refs, model).values()]


def _held_out(refs: References, model: TransferModel) -> dict[str, tuple[float, list[str]]]:
    """accelerator (sorted by name) → (|log error| transferred from the others of its class, the
    references used)."""
    out = {}
    for acc in sorted(refs):
        value, peaks, cls = refs[acc]
        others = {a: v for a, v in refs.items() if a != acc and v[2] == cls}
        if others:
            predicted, used = predict(model, others, peaks)
            out[acc] = (abs(math.log(value / predicted)), used)
    return out


@dataclass(frozen=True)
class Fitted:
    """What ``fit`` returns: the model, and for a learned one the same fitted without each
    accelerator (only for replaying its history honestly at calibration; never persisted)."""

    model: TransferModel
    held_out: dict[str, TransferModel]


def fit(
    refs: References,
    hib: bool,
    alpha: float,
    cls: str,
    method: str = "roofline",
    precision: str = DEFAULT_POLICY,
) -> Fitted:
    """The transfer model of one slice for accelerators of class ``cls`` (module docstring).

    Args:
        refs: the slice's references of every class (``alpha`` was learned on them).
        alpha: the slice's roofline blend (``learn_alpha``).
        method: one of ``METHODS``.
        precision: the policy ``refs``' peak figures were read under (``hardware.POLICIES``).
    """
    base = roofline(alpha, hib, len(refs), precision)
    same = {a: v for a, v in refs.items() if v[2] == cls}
    if method == "roofline" or len(same) < MIN_LEARN:
        return Fitted(base, {})
    memo = (tuple(sorted(same.items())), hib, alpha, len(refs), precision)
    if memo not in _LEARNED:
        if len(_LEARNED) > 50_000:  # a long-lived process over many tables
            _LEARNED.clear()
        _LEARNED[memo] = _learn(same, hib, base)
    return _LEARNED[memo]


_LEARNED: dict[
    tuple[object, ...], Fitted
] = {}  # the same references fit the same (evaluation folds)


def _learn(same: References, hib: bool, base: TransferModel) -> Fitted:
    """Ridge on the log efficiency against the roofline blend, scored leaving each accelerator
    out; kept where its mean |log error| is below the blend's on the same accelerators."""
    # scikit-learn ships no type stubs
    import sklearn  # type: ignore[import-untyped]
    from sklearn.linear_model import Ridge  # type: ignore[import-untyped]
    from sklearn.model_selection import LeaveOneGroupOut  # type: ignore[import-untyped]

    names = sorted(same)
    x = np.log(np.array([same[a][1] for a in names], dtype=np.float64))
    y = np.log(np.array([same[a][0] for a in names], dtype=np.float64))
    prior = np.array([base.compute_exp, base.bandwidth_exp])

    def fitted(rows: np.ndarray, n: int) -> TransferModel:
        ridge = Ridge(alpha=RIDGE_PENALTY).fit(x[rows], y[rows] - x[rows] @ prior)
        a, b = (prior + ridge.coef_).tolist()
        return TransferModel(LEARNED, a, b, n, precision=base.precision)

    held_out: dict[str, TransferModel] = {}
    errs = []
    # input checks off: thousands of 2-feature fits per calibration, on arrays built just above
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        for train, test in LeaveOneGroupOut().split(x, y, groups=np.arange(len(names))):
            acc = names[int(test[0])]
            held_out[acc] = fitted(train, len(train))
            value, _ = predict(held_out[acc], {a: same[a] for a in names if a != acc}, same[acc][1])
            errs.append(abs(y[test[0]] - math.log(value)))
        model = fitted(np.arange(len(names)), len(names))
    learned_err = float(np.mean(errs))
    roofline_err = float(np.mean(_held_out_errors(same, base)))
    if learned_err < roofline_err - 1e-9:
        return Fitted(
            TransferModel(
                LEARNED,
                model.compute_exp,
                model.bandwidth_exp,
                len(names),
                learned_err,
                roofline_err,
                base.precision,
            ),
            held_out,
        )
    return Fitted(
        TransferModel(
            ROOFLINE,
            base.compute_exp,
            base.bandwidth_exp,
            base.accelerators,
            learned_err,
            roofline_err,
            base.precision,
        ),
        {},
    )


def figure_text(value: float) -> str:
    """A figure as a note prints it: four significant digits, a grouped whole number from
    10,000 up (never ``1.451e+04``)."""
    return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:,.4g}"
