"""Time to train (and the other MLPerf Training figures) for an accelerator count nobody ran.

A training figure depends on the accelerator count far more than an inference figure does, and
not in proportion: a run on 64 GPUs is not 8x faster than on 8. Each benchmark's **count
scaling** is learned from the published sizes: the same accelerator in the same round at two
counts gives a pair, ``d log(value) / d log(count)`` at the pair's midpoint; a line in log count,
``slope(x) = c0 + c1·(x − X0)``, is fitted to a benchmark's pairs (weighted by how far apart the
counts are), shrunk towards the family's line for the same metric by ``PRIOR_PAIRS``
pseudo-pairs, and clipped to the slopes pairs have actually shown (never extrapolated beyond).
Moving a figure from count ``m`` to ``n`` multiplies it by ``exp(∫ slope dx)`` from log m to log n.

The bases are the hierarchy's (``stack_advisor.advisor.estimate.index``):

- **observed** — this accelerator at this count (and stack, placement) was published: the median
  of its latest round.
- **interpolated** — the accelerator ran the benchmark at other counts: its latest round's
  median at the nearest count, moved along the count scaling (a count between two of its
  published sizes: moved from both, weighted by closeness in log count).
- **transferred** — another accelerator of the same vendor ran it: each of the ``NEAREST``
  references closest by peak figures is moved to the count, then scaled by peak compute and
  bandwidth, ``((P_r/P_t)^a (B_r/B_t)^(1−a))^g``, ``a``, ``g`` and how many references chosen
  by leaving each accelerator out (within its round, and in its first round from the rounds
  before), for the benchmark's kind (``scale_kind``: LLMs apart from the small models) where
  the kind has the replays, else for the family; the geometric mean of the references.
- **unsupported** — a CPU, no public specs, or no accelerator of the vendor ever ran it.

Intervals are split-conformal per basis and metric, on log residuals of the same estimators
replayed on the training data: every result as its configuration's other results (observed),
as the accelerator's other counts of the same round and as its earlier rounds (interpolated),
and as the other accelerators (transferred): where the history holds ``MIN_RESIDUALS`` replays of
parts new to a round, asked from the rounds before theirs, those (the task a transfer answers: a
part before it ran; generation steps come out faster than their peaks' ratio within a round says),
else the other accelerators of the same round.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.drift_prior import catalogue_benchmark
from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.interpolated import unpaired_placement
from stack_advisor.advisor.estimate.order_stats import median, quantiles
from stack_advisor.advisor.estimate.query import Estimate, Query, SliceKey, model_name
from stack_advisor.advisor.estimate.training_scaling import FAMILY as FAMILY
from stack_advisor.advisor.estimate.training_scaling import CountScaling as CountScaling
from stack_advisor.advisor.estimate.training_scaling import Pairs, budget_refusal, fit_line
from stack_advisor.advisor.estimate.training_scaling import applies as applies
from stack_advisor.advisor.estimate.training_scaling import budget_count as budget_count
from stack_advisor.advisor.estimate.training_scaling import peaks as peaks
from stack_advisor.advisor.results import Basis

PRIOR_PAIRS = 4.0  # pseudo-pairs pulling a benchmark's line towards its family's
NEAREST = (1, 2, 3)  # how many of the closest references a transfer averages (learned)
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)  # share of compute in the peak scaling
GAINS = (0.25, 0.5, 0.75, 1.0)  # how much of a peak ratio shows in time to train
MIN_RESIDUALS = 12
MIN_KIND_REPLAYS = 40  # transfer replays a benchmark kind needs for a peak scaling of its own
NEXT = "next round"  # the residual pool of parts replayed from the rounds before theirs
LEVEL_Q = (0.1, 0.5, 0.9)
FALLBACK = {
    Basis.OBSERVED: (-0.1, 0.0, 0.1),
    Basis.INTERPOLATED: (-0.3, 0.0, 0.3),
    Basis.TRANSFERRED: (-0.7, 0.0, 0.7),
}


@lru_cache(maxsize=64)
def scale_kind(benchmark: str) -> str:
    """How a benchmark's time follows peak figures: "llm" where the catalogue's task names a
    large language model (its time is its matrix work), else "other" (small vision, graph and
    recommendation models, input and communication bound too); "" where the catalogue does not
    know it. Not ``drift_prior.benchmark_group``: that puts every Training benchmark in one
    group, and its LLM test (token-metered results) holds for inference entries only."""
    entry = catalogue_benchmark(FAMILY, benchmark)
    if entry is None:
        return ""
    return "llm" if "llm" in (entry.task or "").lower().split() else "other"


def bracket(by_count: dict[int, float], n: int) -> tuple[int, int, float] | None:
    """(the published count below ``n``, the one above, the weight of the one below: closeness
    in log count) where both exist and ``n`` is not published itself; else None."""
    below = [c for c in by_count if c < n]
    above = [c for c in by_count if c > n]
    if n in by_count or not below or not above:
        return None
    lo, hi = max(below), min(above)
    return lo, hi, math.log(hi / n) / math.log(hi / lo)


def _best_scaling(errors: dict[tuple[float, float, int], list[float]]) -> tuple[float, float, int]:
    scored = {ag: median(np.asarray(e)) for ag, e in errors.items() if e}
    if not scored:
        return (0.5, 1.0, max(NEAREST))
    return min(scored, key=lambda ag: (round(scored[ag], 4), abs(ag[0] - 0.5), -ag[1], -ag[2]))


class TrainingEstimator:
    """Count scaling, estimates and their calibration over one evidence index's training slices.
    Built lazily by the index; everything is computed once per table."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.table = index.table
        self._curves: dict[SliceKey, CountScaling] = {}
        self._pooled: dict[str, tuple[Pairs, float, float]] = {}
        self._alpha: dict[str, dict[str, tuple[float, float, int]]] = {}
        self._residuals: dict[tuple[Basis, str], np.ndarray] | None = None
        self._quantiles: dict[tuple[Basis, str], tuple[float, float, float]] = {}
        self._drift: tuple[np.ndarray, str] | None = None

    # ---- count scaling ------------------------------------------------------------------------
    def _per_count(self, rows: np.ndarray) -> dict[tuple[float, str], dict[int, float]]:
        """(round, accelerator) → count → median value."""
        t, ix = self.table, self.index
        groups: dict[tuple[float, str, int], list[float]] = defaultdict(list)
        for r in rows.tolist():
            groups[(float(ix.round_no[r]), str(ix.accel[r]), int(t.count[r]))].append(
                float(t.value[r])
            )
        out: dict[tuple[float, str], dict[int, float]] = defaultdict(dict)
        for (rnd, acc, n), values in groups.items():
            out[(rnd, acc)][n] = median(np.asarray(values))
        return out

    def _pairs(self, key: SliceKey) -> Pairs:
        p = Pairs()
        rows = np.concatenate(list(self.index.slices[key].values()))
        for by_count in self._per_count(rows).values():
            counts = sorted(c for c in by_count if c > 0)
            for a, b in itertools.pairwise(counts):
                gap = math.log(b / a)
                p.x.append((math.log(a) + math.log(b)) / 2)
                p.slope.append(math.log(by_count[b] / by_count[a]) / gap)
                p.weight.append(gap)
        return p

    def _family_line(self, metric: str) -> tuple[Pairs, float, float]:
        if metric not in self._pooled:
            pooled = Pairs()
            for key in self.index.slices:
                if key[0] == FAMILY and key[3] == metric:
                    pooled.extend(self._pairs(key))
            if pooled.slope:
                c0, c1 = fit_line(pooled)
            else:  # no pair anywhere: time in inverse proportion (accelerator-hours constant)
                c0, c1 = (-1.0 if "time" in metric else 0.0), 0.0
            self._pooled[metric] = (pooled, c0, c1)
        return self._pooled[metric]

    def scaling(self, key: SliceKey) -> CountScaling:
        """The slice's count scaling (see the module docstring)."""
        if key not in self._curves:
            pooled, f0, f1 = self._family_line(key[3])
            own = self._pairs(key)
            k = len(own.slope)
            c0, c1 = fit_line(own) if k else (f0, f1)
            c0 = (k * c0 + PRIOR_PAIRS * f0) / (k + PRIOR_PAIRS)
            c1 = (k * c1 + PRIOR_PAIRS * f1) / (k + PRIOR_PAIRS)
            seen = pooled.slope or [f0]
            low, high = float(np.percentile(seen, 5)), float(np.percentile(seen, 95))
            source = (
                f"{k} pairs of published sizes of {key[1]}, shrunk towards "
                f"{len(pooled.slope)} of the family"
                if k
                else f"{len(pooled.slope)} pairs of published sizes across the family "
                f"({key[1]} has none)"
            )
            self._curves[key] = CountScaling(c0, c1, min(low, high), max(low, high), k, source)
        return self._curves[key]

    # ---- estimators (shared by answers and the calibration replays) --------------------------
    def _from_counts(self, key: SliceKey, by_count: dict[int, float], n: int) -> tuple[float, int]:
        """The value at count ``n``: moved along the count scaling from the nearest published
        count, and where published counts bracket ``n`` (``bracket``), from the nearest on each
        side, the two moves weighted by closeness in log count (so an estimate meets each
        published figure at its count and does not jump between them): (value, the nearest
        count)."""
        curve = self.scaling(key)
        near = min(by_count, key=lambda c: (abs(math.log(c / n)), -c))
        sides = bracket(by_count, n)
        if sides is None:
            return by_count[near] * math.exp(curve.log_ratio(near, n)), near
        lo, hi, w = sides
        log_value = w * (math.log(by_count[lo]) + curve.log_ratio(lo, n)) + (1 - w) * (
            math.log(by_count[hi]) + curve.log_ratio(hi, n)
        )
        return math.exp(log_value), near

    def _held_by(self, rows: np.ndarray, upto: float) -> np.ndarray:
        """The rows of rounds up to ``upto`` where any are, else all of them (a round before
        the first held is the forecast's, backwards)."""
        held = rows[self.index.round_no[rows] <= upto] if len(rows) else rows
        return held if len(held) else rows

    def _latest_by_count(self, rows: np.ndarray) -> dict[int, float]:
        per = self._per_count(self.index.latest(rows))
        return next(iter(per.values())) if per else {}

    def alpha(self, metric: str, benchmark: str | None = None) -> tuple[float, float, int]:
        """(share of compute, gain, references) of the peak scaling, picked from ``ALPHAS`` x
        ``GAINS`` x ``NEAREST`` by predicting each accelerator of a round from its same-vendor
        peers (smallest median |log error|; ties towards an even blend, the full peak ratio and
        more references): for the benchmark's kind (``scale_kind``: an LLM's time follows its
        peaks further than a small vision or graph model's) where its replays number
        ``MIN_KIND_REPLAYS``, else for every benchmark of the metric."""
        if metric not in self._alpha:
            grid = [(a, g, k) for a in ALPHAS for g in GAINS for k in NEAREST]
            errors: dict[str, dict[tuple[float, float, int], list[float]]] = defaultdict(
                lambda: {ag: [] for ag in grid}
            )
            for key, by_acc in self.index.slices.items():
                if key[0] != FAMILY or key[3] != metric:
                    continue
                kind = scale_kind(model_name(key[1]))
                for _, ((_rnd, acc), by_count, refs) in self._replays(key, by_acc):
                    for ag in grid:
                        for n, v in by_count.items():
                            got = self._transfer(key, acc, n, refs, ag)
                            if got is not None:
                                error = abs(math.log(v / got[0]))
                                errors[""][ag].append(error)
                                if kind:
                                    errors[kind][ag].append(error)
            self._alpha[metric] = {
                kind: _best_scaling(by_how)
                for kind, by_how in errors.items()
                if kind == "" or len(next(iter(by_how.values()))) >= MIN_KIND_REPLAYS
            }
        chosen = self._alpha[metric]
        fallback = chosen.get("", (0.5, 1.0, max(NEAREST)))
        return chosen.get(self._kind_chosen(metric, benchmark), fallback)

    def _kind_chosen(self, metric: str, benchmark: str | None) -> str:
        """The kind whose own choice ``alpha`` answers ``benchmark`` with ("" for every
        benchmark's)."""
        kind = scale_kind(model_name(benchmark)) if benchmark else ""
        return kind if kind in self._alpha.get(metric, {}) else ""

    def scaling_learned_on(self, metric: str, benchmark: str) -> str:
        """Which replays ``alpha`` chose ``benchmark``'s peak scaling on, for an answer to say."""
        self.alpha(metric, benchmark)
        kind = self._kind_chosen(metric, benchmark)
        return {"llm": "the LLM benchmarks'", "other": "the non-LLM benchmarks'"}.get(
            kind, "every benchmark's"
        )

    def _round_peers(self, key: SliceKey, by_acc: dict[str, np.ndarray]) -> Any:
        """For each (round, accelerator) of the slice: its per-count medians and its same-class
        peers of that round (accelerator → per-count medians)."""
        rows = np.concatenate(list(by_acc.values()))
        per = self._per_count(rows)
        for (rnd, acc), by_count in per.items():
            cls = accelerator_class(self.index.raw_names.get(acc, acc))
            refs = {
                a: c
                for (r2, a), c in per.items()
                if r2 == rnd
                and a != acc
                and accelerator_class(self.index.raw_names.get(a, a)) == cls
            }
            if refs:
                yield (rnd, acc), by_count, refs

    def _next_round_peers(self, key: SliceKey, by_acc: dict[str, np.ndarray]) -> Any:
        """For each accelerator's first round in the slice (a part new to the benchmark): its
        per-count medians there and its same-class peers as the rounds before knew them (each
        peer's latest earlier round): the task a transfer answers, a part asked before it ran."""
        rows = np.concatenate(list(by_acc.values()))
        per = self._per_count(rows)
        first: dict[str, float] = {}
        for rnd, acc in per:
            first[acc] = min(first.get(acc, rnd), rnd)
        for acc, rnd in first.items():
            cls = accelerator_class(self.index.raw_names.get(acc, acc))
            refs: dict[str, dict[int, float]] = {}
            for (r2, a), by_count in sorted(per.items()):
                same_class = accelerator_class(self.index.raw_names.get(a, a)) == cls
                if r2 < rnd and a != acc and same_class:
                    refs[a] = by_count  # sorted: the latest earlier round wins
            if refs:
                yield (rnd, acc), per[(rnd, acc)], refs

    def _replays(self, key: SliceKey, by_acc: dict[str, np.ndarray]) -> Any:
        """Every transfer replay: within each round (``_round_peers``) and parts new to the
        benchmark from the rounds before (``_next_round_peers``), tagged "within" / "next"."""
        for peers in self._round_peers(key, by_acc):
            yield "within", peers
        for peers in self._next_round_peers(key, by_acc):
            yield "next", peers

    def _transfer(
        self,
        key: SliceKey,
        target: str,
        n: int,
        refs: dict[str, dict[int, float]],
        how: tuple[float, float, int],
    ) -> tuple[float, list[str]] | None:
        tp = peaks(self.index.raw_names.get(target, target))
        if tp is None:
            return None
        scored = []
        for acc, by_count in refs.items():
            rp = peaks(self.index.raw_names.get(acc, acc))
            if rp is None:
                continue
            distance = abs(math.log(rp[0] / tp[0])) + abs(math.log(rp[1] / tp[1]))
            value, _ = self._from_counts(key, by_count, n)
            alpha, gain, _ = how
            scaled = value * ((rp[0] / tp[0]) ** alpha * (rp[1] / tp[1]) ** (1 - alpha)) ** gain
            scored.append((distance, acc, scaled))
        if not scored:
            return None
        scored.sort()
        use = scored[: how[2]]
        return math.exp(float(np.mean([math.log(s[2]) for s in use]))), [s[1] for s in use]

    # ---- answers -------------------------------------------------------------------------------
    def estimate(self, q: Query, by_acc: dict[str, np.ndarray], exact: np.ndarray) -> Estimate:
        """The nearest evidence for ``q`` (a training slice; ``exact``: the rows of this very
        configuration, found by the index)."""
        # the count scaling is not extrapolated past twice the benchmark's largest system, the
        # bound a budget (``recommend --gpus``) is held to
        counts = [int(n) for rows in by_acc.values() for n in self.index.table.count[rows]]
        beyond = budget_refusal(q.count, counts, q.benchmark)
        if beyond and not len(exact):
            return Estimate(Basis.UNSUPPORTED, reason=beyond.replace("budget", "count"))
        # a held round asked is answered from its results and older ones, not a later round's
        # carried back by the drift
        upto = self.index.round_drift.target(q, q.as_of)
        exact = self._held_by(exact, upto)
        if len(exact):
            by_count = self._latest_by_count(exact)
            value = by_count[q.count]
            return self._bounded(q, Basis.OBSERVED, value, exact, [])
        rows = by_acc.get(q.accelerator)
        rows = self._held_by(rows, upto) if rows is not None else None
        if rows is not None and len(rows):
            by_count = self._latest_by_count(rows)
            value, near = self._from_counts(q.slice, by_count, q.count)
            curve = self.scaling(q.slice)
            sides = bracket(by_count, q.count)
            moved = (
                f"x{sides[0]} and x{sides[1]} → x{q.count} (each moved, weighted "
                f"{sides[2]:.2f} / {1 - sides[2]:.2f} by closeness in log count)"
                if sides
                else f"x{near} → x{q.count}"
            )
            factors = [
                (
                    "count scaling",
                    f"{q.accelerator} {moved}, learned from {curve.source}",
                    value / by_count[near],
                )
            ]
            est = self._bounded(
                q, Basis.INTERPOLATED, value, rows, factors if near != q.count else []
            )
            if (
                q.placement in ("passthrough", "vgpu")
                and not self.index.ran_in(rows, q.placement).any()
            ):  # as an inference interpolation says it
                est = replace(
                    est, notes=[*est.notes, unpaired_placement(q.placement, q.accelerator)]
                )
            return est
        return self._transferred(q, by_acc)

    def _transferred(self, q: Query, by_acc: dict[str, np.ndarray]) -> Estimate:
        raw = q.raw_accelerator or q.accelerator
        cls = accelerator_class(raw)
        if cls == "cpu":
            return Estimate(
                Basis.UNSUPPORTED,
                reason=f"CPU never measured on this benchmark: {q.accelerator} "
                f"on {q.benchmark}; no CPU has published MLPerf Training results to scale by",
            )
        if peaks(raw) is None:
            return Estimate(
                Basis.UNSUPPORTED,
                reason=f"no public specs to transfer by: {q.accelerator} has no "
                f"16-bit peak compute and bandwidth in the catalogue and never ran {q.benchmark}",
            )
        refs = {
            a: self._latest_by_count(rows)
            for a, rows in by_acc.items()
            if accelerator_class(self.index.raw_names.get(a, a)) == cls
        }
        got = (
            self._transfer(q.slice, q.accelerator, q.count, refs, self.alpha(q.metric, q.benchmark))
            if refs
            else None
        )
        if got is None:
            seen = sorted({accelerator_class(self.index.raw_names.get(a, a)) for a in by_acc})
            return Estimate(
                Basis.UNSUPPORTED,
                reason=f"no accelerator of this class measured: no {cls} accelerator "
                f"ever ran {q.benchmark} (seen: {', '.join(seen)})",
            )
        value, used = got
        a, g, _ = self.alpha(q.metric, q.benchmark)
        factors = [
            (
                "reference",
                f"{', '.join(used)} moved to x{q.count} by the count scaling "
                f"({self.scaling(q.slice).source}), scaled by (peak compute^{a:g} x "
                f"bandwidth^{1 - a:g})^{g:g}, "
                "learned by predicting each accelerator of a round from its peers on "
                f"{self.scaling_learned_on(q.metric, q.benchmark)} replays",
                1.0,
            )
        ]
        rows = np.concatenate([by_acc[u] for u in used])
        est = self._bounded(q, Basis.TRANSFERRED, value, rows, factors)
        est.references = used
        return est

    def _bounded(
        self,
        q: Query,
        basis: Basis,
        value: float,
        rows: np.ndarray,
        factors: list[tuple[str, str, float]],
    ) -> Estimate:
        lo, mid, hi = self.quantiles(basis, q.metric)
        centre = value * math.exp(mid) if basis is Basis.TRANSFERRED else value
        notes = []
        counts = self.table.count[rows]
        if len(counts) and (q.count > counts.max() * 2 or q.count < counts.min() / 2):
            notes.append(
                f"x{q.count} is beyond the counts this estimate rests on ({int(counts.min())}.."
                f"{int(counts.max())}): the count scaling is extrapolated"
            )
        factors = [
            *factors,
            (
                "interval",
                f"80% split-conformal on replays of this estimator; {self.drift()[1]}",
                1.0,
            ),
        ]
        return Estimate(
            basis,
            centre,
            value * math.exp(lo),
            value * math.exp(hi),
            rows=rows,
            factors=factors,
            notes=notes,
        )

    # ---- calibration ---------------------------------------------------------------------------
    def quantiles(self, basis: Basis, metric: str) -> tuple[float, float, float]:
        """p10, median and p90 of the basis's log residuals (truth / estimate) for the metric (else
        the family's), each within-round residual combined with every round-to-round movement
        (``drift``): what an estimate from this round's evidence meets in the next round."""
        key = (basis, metric)
        if key not in self._quantiles:
            pools = self.residuals()
            within = next(
                (
                    v
                    for v in (pools.get(key), pools.get((basis, "")))
                    if v is not None and len(v) >= MIN_RESIDUALS
                ),
                None,
            )
            drift, _ = self.drift()
            if (
                basis is Basis.OBSERVED
            ):  # the same configuration a round later (else: within its round)
                values = drift if len(drift) else within
            elif within is None:
                values = None
            else:
                values = (within[:, None] + drift[None, :]).ravel() if len(drift) else within
            if values is None or not len(values):
                self._quantiles[key] = FALLBACK[basis]
            else:
                lo, hi = quantiles(values, (LEVEL_Q[0], LEVEL_Q[2]))
                # the centre's correction: the estimator's own within-round bias, not the drift
                mid = median(within) if within is not None else 0.0
                self._quantiles[key] = (float(lo), float(mid), float(hi))
        return self._quantiles[key]

    def drift(self) -> tuple[np.ndarray, str]:
        """How a figure moves from one round to the next: log(now / before) of the same
        accelerator at the same count in consecutive training rounds; where the family has too
        few (one round), the knowledge base's other families' same-accelerator round-to-round
        residuals (``stack_advisor.advisor.estimate.index``), said so in the interval's factor."""
        if self._drift is None:
            own = self.residuals().get((Basis.OBSERVED, "drift"), np.empty(0))
            if len(own) >= MIN_RESIDUALS:
                self._drift = (
                    own,
                    f"{len(own)} round-to-round movements of the same accelerator and count",
                )
            else:
                borrowed = self._borrowed_drift()
                self._drift = (
                    borrowed,
                    f"the family has {len(own)} round-to-round movements; the interval borrows "
                    f"{len(borrowed)} of the other benchmark families' (same "
                    "accelerator, next round)",
                )
        return self._drift

    def _borrowed_drift(self) -> np.ndarray:
        """The other families' closed-division same-accelerator round-to-round log residuals of
        throughput (a rate, as 1 / time to train is), signed as a time: a faster next round is
        negative. Latency figures stay out: a tail latency moves with its scenario's target."""
        hib = {key[3]: self.index.higher_is_better(key) for key in self.index.slices}
        parts = []
        for f in self.index.families():
            if f == FAMILY:
                continue
            for k, v in self.index.residuals_for(f).items():
                if (
                    len(k) == 3
                    and k[0] is Basis.INTERPOLATED
                    and k[1] == "closed"
                    and hib.get(k[2])
                ):
                    parts.append(-v)
        return np.concatenate(parts) if parts else np.empty(0)

    def residuals(self) -> dict[tuple[Basis, str], np.ndarray]:
        """log(truth / estimate) of each basis's estimator replayed within each round of the
        family's history, and (observed, "drift") the same accelerator and count a round later."""
        if self._residuals is None:
            out: dict[tuple[Basis, str], list[float]] = defaultdict(list)
            for key, by_acc in self.index.slices.items():
                if key[0] == FAMILY and applies(key, self.index.higher_is_better(key)):
                    self._replay(key, by_acc, out)
            pooled = {k: np.asarray(v) for k, v in out.items()}
            for (basis, pool), values in list(pooled.items()):
                # a transfer answers a part before it ran: where the history has enough parts
                # new to a round, their replays (bias and spread) stand for the transfer's
                if pool.endswith(f" {NEXT}"):
                    del pooled[(basis, pool)]
                    if len(values) >= MIN_RESIDUALS:
                        pooled[(basis, pool.removesuffix(f" {NEXT}"))] = values
            for basis in FALLBACK:
                parts = [v for k, v in pooled.items() if k[0] is basis and k[1] != "drift"]
                pooled[(basis, "")] = np.concatenate(parts) if parts else np.empty(0)
            self._residuals = pooled
        return self._residuals

    def _replay(
        self,
        key: SliceKey,
        by_acc: dict[str, np.ndarray],
        out: dict[tuple[Basis, str], list[float]],
    ) -> None:
        t, ix, metric = self.table, self.index, key[3]
        for rows in by_acc.values():
            config = defaultdict(list)
            for r in rows.tolist():
                config[(ix.round_no[r], int(t.count[r]), t.candidate.codes[r])].append(
                    float(t.value[r])
                )
            for values in config.values():  # observed: each result as its configuration's others
                for i, v in enumerate(values):
                    rest = values[:i] + values[i + 1 :]
                    if rest:
                        out[(Basis.OBSERVED, metric)].append(math.log(v / median(np.asarray(rest))))
            per = self._per_count(rows)
            rounds = sorted({rnd for rnd, _ in per})
            for (rnd, acc), by_count in per.items():
                before = [r for r in rounds if r < rnd]
                previous = per.get((before[-1], acc), {}) if before else {}
                for n, v in by_count.items():
                    others = {c: x for c, x in by_count.items() if c != n}
                    if others:  # interpolated: the same round's other counts
                        out[(Basis.INTERPOLATED, metric)].append(
                            math.log(v / self._from_counts(key, others, n)[0])
                        )
                    if n in previous:  # the next round, same accelerator and count
                        out[(Basis.OBSERVED, "drift")].append(math.log(v / previous[n]))
        alpha = self.alpha(metric, key[1])
        for kind, ((_rnd, acc), by_count, refs) in self._replays(key, by_acc):
            for n, v in by_count.items():
                got = self._transfer(key, acc, n, refs, alpha)
                if got is not None:
                    pool = metric if kind == "within" else f"{metric} {NEXT}"
                    out[(Basis.TRANSFERRED, pool)].append(math.log(v / got[0]))
