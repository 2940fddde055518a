"""Estimates from the nearest evidence outward, each labelled with how it was made.

The hierarchy (the same for ``recommend``, ``predict`` and ``evaluate``):

1. **observed** — this exact configuration (canonical accelerator, count, placement, the stack's
   named components) was measured on this benchmark slice: the median of its latest round.
2. **interpolated** — the same canonical accelerator ran this benchmark slice with another stack,
   count or placement: the median per-accelerator value of its latest round, times the count
   (the "simple lookup"), adjusted for placement only where paired bare-metal/virtualised results
   support it.
3. **transferred** — another accelerator ran it: the nearest accelerators of the same vendor are
   scaled by published peak compute and memory bandwidth, ``(P_t/P_r)^a * (B_t/B_r)^(1-a)``, with
   ``a`` (compute- vs memory-bound) and the precision the figures are read at learned per benchmark
   by leaving one accelerator out (``stack_advisor.advisor.estimate.transfer``, which also holds the
   scikit-learn challenger the accuracy report measures;
   ``stack_advisor.advisor.estimate.hardware``); other vendors' parts where the target's vendor
   never ran it, its measured level on other benchmarks where its compute is unpublished
   (``stack_advisor.advisor.estimate.level_transfer``), each kind calibrated apart
   (``stack_advisor.advisor.estimate.transferred``); a CPU from other CPUs only, by per-socket
   figures, calibrated apart too (``stack_advisor.advisor.estimate.cpu_transfer``).
4. **unsupported** — refused, with the reason: unknown benchmark or metric, no accelerator of
   that class ever seen on it, no public specs to scale by, the model does not fit in memory.

Every estimate depends only on the rows of its own benchmark slice (family, benchmark, scenario,
metric, division). Intervals are split-conformal per basis: log residuals of the same estimator
replayed on the knowledge base's own history, pooled per calibration cell (``residuals``,
``transferred``), persisted with the table's content digest (``calibration_file``). Results from
before a benchmark's redefinition are a slice of their own, not offered to users (``benchmarks``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate import stack_adjust, transfer
from stack_advisor.advisor.estimate.drift import RoundDrift, carry
from stack_advisor.advisor.estimate.facts import (
    accelerator_class,
    canonical_accelerator,
    memory_misfit,
)
from stack_advisor.advisor.estimate.hardware import (
    BANDWIDTH_ONLY,
    POLICIES,
    bandwidth_figures,
    scaling_figures,
)
from stack_advisor.advisor.estimate.interpolated import (
    interpolated_estimate,
    missing_slice,
    observed_then,
)
from stack_advisor.advisor.estimate.latency import LatencyCalibration
from stack_advisor.advisor.estimate.latency import applies as is_latency_slice
from stack_advisor.advisor.estimate.latency_limit import capped, limit_share_estimate
from stack_advisor.advisor.estimate.order_stats import median, quantile
from stack_advisor.advisor.estimate.query import (
    FORMER,
    Calibration,
    Estimate,
    PoolKey,
    Query,
    SliceKey,
    group_slices,
    slice_direction,
)
from stack_advisor.advisor.estimate.residuals import (
    FALLBACK,
    calibration_cells,
    history_residuals,
    residual_quantiles,
    scaled_cell,
)
from stack_advisor.advisor.estimate.residuals import LEVEL as LEVEL
from stack_advisor.advisor.estimate.residuals import QUANTILES as QUANTILES
from stack_advisor.advisor.estimate.residuals import SHRINK as SHRINK
from stack_advisor.advisor.estimate.scenario import derived_estimate
from stack_advisor.advisor.estimate.training import TrainingEstimator
from stack_advisor.advisor.estimate.training import applies as is_training_slice
from stack_advisor.advisor.estimate.transfer import TransferModel, figure_text
from stack_advisor.advisor.estimate.transferred import kind_quantiles, transferred_estimate
from stack_advisor.advisor.estimate.variants import blend_with_variants
from stack_advisor.advisor.knowledge.table import ObservationTable, round_number
from stack_advisor.advisor.results import Basis, weaker
from stack_advisor.catalog.loading import load_catalog
from stack_advisor.catalog.rounds import round_date, same_release
from stack_advisor.catalog.stack_text import system_components
from stack_advisor.schema.errors import InvalidInput

MIN_RESIDUALS = 40


# ---- the evidence index ----------------------------------------------------------------------


class EvidenceIndex:
    """The observation table grouped by benchmark slice and canonical accelerator, with the
    conformal residual quantiles per basis. Built once per table (store generation)."""

    def __init__(
        self,
        table: ObservationTable,
        overheads: dict[tuple[str, str], Any] | None = None,
        transfer_method: str = "roofline",
        slices: dict[SliceKey, dict[str, np.ndarray]] | None = None,
    ) -> None:
        """``slices``: the grouping computed earlier over this very table (same rows in the same
        order: ``stack_advisor.advisor.estimate.calibration_file`` checks), else computed here."""
        if transfer_method not in transfer.METHODS:
            raise InvalidInput(
                f"transfer method: {transfer_method!r} is not one of {', '.join(transfer.METHODS)}"
            )
        self.table = table
        self.transfer_method = transfer_method
        self.overheads = overheads or {}
        canon = [canonical_accelerator(a) for a in table.accelerator.vocab]
        self.accel = (
            np.asarray(canon, dtype=object)[table.accelerator.codes]
            if table.n
            else np.empty(0, object)
        )
        self.raw_names: dict[str, str] = {}
        for raw, key in zip(table.accelerator.vocab, canon):
            self.raw_names.setdefault(key, raw)
        counts = np.maximum(table.count, 1).astype(np.float64)
        self.unit = np.where(table.higher_is_better, table.value / counts, table.value)
        rounds = np.array([round_number(r) for r in table.round.vocab]) if table.n else np.empty(0)
        self.round_no = (
            np.nan_to_num(rounds[table.round.codes], nan=0.0) if table.n else np.empty(0)
        )
        self.slices = group_slices(table, canon) if slices is None else slices
        self._alpha: dict[SliceKey, float] = {}
        self._precision: dict[SliceKey, str] = {}
        self._policy_choice: dict[SliceKey, transfer.PolicyChoice] = {}
        self._medians: dict[int, tuple[np.ndarray, dict[float, float]]] = {}
        # references per (slice rows, round filter, precision policy): the replays ask each many
        # times
        self._refs: dict[
            tuple[Any, ...],
            tuple[dict[str, np.ndarray], dict[str, tuple[float, tuple[float, float], str]]],
        ] = {}
        self._transfer: dict[tuple[str, ...], TransferModel] = {}
        # the same models fitted without each accelerator (calibration time only: honest replays)
        self._held_out: dict[tuple[str, ...], dict[str, TransferModel]] = {}
        self._residuals: dict[str, dict[PoolKey, np.ndarray]] = {}
        # (family, basis, division, metric) → the cell's median, spread, scaled p10/p90, slices'
        # spreads
        self._scaled: dict[
            tuple[Any, ...], tuple[float, float, float, float, dict[tuple[str, str], float]]
        ] = {}
        self._training: TrainingEstimator | None = None
        # ``stack_advisor.advisor.estimate.cpu_transfer``
        self.cpu_blends: dict[SliceKey, tuple[str, float]] = {}
        # ``stack_advisor.advisor.estimate.level_transfer``: per (what, family, division), its
        # tables, replays and interval quantiles
        self.level_memo: dict[tuple[str, str, str], Any] = {}
        self.min_residuals = MIN_RESIDUALS
        self._latency: LatencyCalibration | None = None
        self._drift: RoundDrift | None = None

    @property
    def training(self) -> TrainingEstimator:
        """The MLPerf Training estimator over this index (built on first use)."""
        if self._training is None:
            self._training = TrainingEstimator(self)
        return self._training

    def known_benchmarks(self) -> set[tuple[str, str]]:
        return {(k[0], k[1]) for k in self.slices if FORMER not in k[1]}

    def holds_accelerator(self, name: str) -> bool:
        """Whether results are stored under the canonical name ``name`` (one an import could not
        resolve keeps its published name)."""
        return name in self.raw_names

    def benchmarks(self, family: str) -> list[str]:
        return sorted({k[1] for k in self.slices if k[0] == family and FORMER not in k[1]})

    def scenarios(self, family: str, benchmark: str) -> list[str]:
        return sorted({k[2] for k in self.slices if k[0] == family and k[1] == benchmark})

    def metrics(self, family: str, benchmark: str, scenario: str | None = None) -> list[str]:
        return sorted(
            {
                k[3]
                for k in self.slices
                if k[0] == family and k[1] == benchmark and (scenario is None or k[2] == scenario)
            }
        )

    def divisions(self, family: str, benchmark: str) -> list[str]:
        return sorted({k[4] for k in self.slices if k[0] == family and k[1] == benchmark})

    def higher_is_better(self, key: SliceKey) -> bool:
        return slice_direction(self.table, self.slices, key)

    # ---- the hierarchy -----------------------------------------------------------------------
    def estimate(self, q: Query) -> Estimate:
        """The nearest evidence for one configuration (see the module docstring), made honest
        about the query's named stack (``stack_advisor.advisor.estimate.stack_adjust.adjust``)."""
        adjusted = stack_adjust.adjust(self, q, self._nearest(q))
        return self._within_looser(q, capped(q, carry(self.round_drift, q, adjusted, q.as_of)))

    def _within_looser(self, q: Query, est: Estimate) -> Estimate:
        """A throughput estimated for a scenario LoadGen runs as another with looser limits
        (Interactive, a Server run under tighter TTFT/TPOT bounds), or for Server where the
        benchmark has Offline results (no latency bound at all), is at most that scenario's
        estimate of the same configuration: the looser run may take the tighter one's operating
        point (every system that published both ran Interactive at or below its Server figure);
        an answer below it keeps its value, its interval's top held to that estimate's. A probe's
        MI355X x8 llama3.1-8b Server had read 89,497 tokens/s beside an Offline 80,987."""
        entry = load_catalog().scenarios.get(q.scenario)
        looser = entry.loadgen_mode if entry is not None else q.scenario
        if looser == "Server" == q.scenario and "Offline" in self.scenarios(q.family, q.benchmark):
            # a Server run is latency-bound: at most the system's Offline figure (312 of the 326
            # systems of the shared rounds that published both; the others within 1.03x but one)
            looser = "Offline"
        if (
            looser == q.scenario
            or est.value is None
            or est.basis in (Basis.OBSERVED, Basis.UNSUPPORTED)
            or not self.higher_is_better(q.slice)
        ):
            return est
        if looser == "Offline" and not self._offline_records(q):
            # Offline counts samples where Server counts queries (vision): read as one another,
            # the bound moved those answers further off (by round 10.2 -> 10.3% MAPE)
            return est
        bound = self.estimate(replace(q, scenario=looser))
        if bound.value is None or (looser == "Offline" and weaker(bound.basis, est.basis)):
            return est  # an Offline figure made on less evidence does not move the part's own
        if est.value <= bound.value:  # the answer holds; its interval's top no higher either
            if est.high is None or bound.high is None or est.high <= bound.high:
                return est
            held = (
                f"the interval's top is held to its {looser} estimate's "
                f"({figure_text(bound.high)} per accelerator, {bound.basis.value}): "
                f"{q.scenario}'s limits are tighter"
            )
            return replace(est, high=bound.high, notes=[*est.notes, held])
        high = min(est.high, bound.high) if est.high is not None and bound.high else est.high
        low = min(est.low, bound.low) if est.low is not None and bound.low else est.low
        how = (
            f"at most its {looser} estimate ({bound.basis.value}): {q.scenario}'s limits are "
            "tighter"
        )
        return replace(
            est,
            value=bound.value,
            low=low,
            high=high,
            factors=[*est.factors, (f"{looser} bound", how, bound.value / est.value)],
        )

    def ran_in(self, rows: np.ndarray, placement: str) -> np.ndarray:
        """The mask of ``rows`` that ran in ``placement``."""
        column = self.table.placement
        return np.asarray(column.codes[rows] == column.code(placement))

    def _offline_records(self, q: Query) -> bool:
        """Whether the benchmark's Offline results record the Server query's metric (tokens/s)."""
        family, benchmark, _, metric, division = q.slice
        return (family, benchmark, "Offline", metric, division) in self.slices

    @property
    def round_drift(self) -> RoundDrift:
        """How the slices moved between rounds (``stack_advisor.advisor.estimate.drift``)."""
        if self._drift is None:
            self._drift = RoundDrift(self)
        return self._drift

    def _nearest(self, q: Query) -> Estimate:
        by_acc = self.slices.get(q.slice)
        if by_acc is None:
            return self._unrecorded(q)
        hib = self.higher_is_better(q.slice)
        rows = by_acc.get(q.accelerator, np.empty(0, dtype=np.int64))
        training = is_training_slice(q.slice, hib)
        exact = self.matching(rows, q) if len(rows) else rows
        if (
            len(exact) and not training and observed_then(self, q, rows, exact)
        ):  # a published run is proof it ran, whatever the model's nominal size
            return self._observed(q, exact)
        # a published Training run of the part at this count or fewer, any stack, is proof the
        # model fits (the training rule is for sizes never published)
        fits = training and bool((self.table.count[rows] <= q.count).any())
        family = None if fits else q.family
        misfit = memory_misfit(q.benchmark, q.accelerator, q.count, family)
        if misfit:
            return Estimate(Basis.UNSUPPORTED, reason=misfit)
        if training:  # time to train: the count scaling (stack_advisor.advisor.estimate.training)
            return self.training.estimate(q, by_acc, exact)
        if len(rows):
            return interpolated_estimate(self, q, rows, hib)
        derived = derived_estimate(self, q, own_only=True)
        if isinstance(derived, Estimate):
            return derived
        found = limit_share_estimate(self, q) or self._transferred(q, by_acc, hib)
        unrun = None if q.accelerator in found.references else self._throughput_refused(q)
        if unrun is not None:  # read off other parts only, for a run that cannot be estimated
            return unrun
        if found.basis is Basis.UNSUPPORTED:
            # no transfer in the scenario (no reference of the part's class ran it there): its
            # estimate in the scenario LoadGen runs it as, times the learned ratio, where that
            # one can be made (Arc Pro B70 on llama3.1-8b Interactive, from its Server estimate)
            derived = derived_estimate(self, q)
            if isinstance(derived, Estimate) and derived.value is not None:
                return derived
        return found

    def _throughput_refused(self, q: Query) -> Estimate | None:
        """A serving latency of a part that never ran the slice, read off other parts alone, is
        refused where the same configuration's throughput is (a latency is one of a run at that
        load): a probe's Jetson AGX Orin x8 ranked among the lowest p99 TTFTs of llama2-70b
        Interactive, its throughput refused for want of a reference of its class. One read on
        the part's own results on other models (its share of the limit) stands. None
        otherwise."""
        if not is_latency_slice(q.slice):
            return None
        family, benchmark, scenario, _, division = q.slice
        throughput = sorted(
            k[3]
            for k in self.slices
            if k[:3] == (family, benchmark, scenario)
            and k[4] == division
            and self.higher_is_better(k)
        )
        if len(throughput) != 1:
            return None
        run = self.estimate(replace(q, metric=throughput[0]))
        if run.basis is not Basis.UNSUPPORTED:
            return None
        return Estimate(
            Basis.UNSUPPORTED,
            reason=f"{q.metric}: its {throughput[0]} in {scenario} cannot be estimated either "
            f"({run.reason}); a latency is one of a run at that load",
        )

    def _unrecorded(self, q: Query) -> Estimate:
        """No results of the slice: a scenario run as another (Interactive as Server) derived from
        it by a learned factor (``stack_advisor.advisor.estimate.scenario``), else refused saying
        what is missing."""
        if q.benchmark in self.benchmarks(q.family) and q.scenario not in self.scenarios(
            q.family, q.benchmark
        ):
            derived = derived_estimate(self, q)
            if derived is not None:
                return (
                    derived
                    if isinstance(derived, Estimate)
                    else Estimate(Basis.UNSUPPORTED, reason=derived)
                )
        return Estimate(Basis.UNSUPPORTED, reason=missing_slice(self, q))

    def matching(
        self, rows: np.ndarray, q: Query, *, any_count: bool = False, any_placement: bool = False
    ) -> np.ndarray:
        """``rows`` of the query's count (any with ``any_count``), placement (any with
        ``any_placement``) and stack."""
        t = self.table
        placed = any_placement | (t.placement.codes[rows] == t.placement.code(q.placement))
        keep: np.ndarray = rows[((t.count[rows] == q.count) | any_count) & placed]
        if q.stacks and len(keep):
            keep = keep[np.isin(t.stack.codes[keep], [t.stack.code(s) for s in q.stacks])]
        if not q.components or not len(keep):
            return keep
        from stack_advisor.advisor.knowledge.rules import stack_components

        codes = t.stack.codes[keep]
        ok = []
        # per stack, not per row (thousands at 1M); a set, not np.unique (which imports numpy.ma)
        for code in sorted(set(codes.tolist())):
            stack = t.stacks[t.stack.vocab[code]]
            named = {**system_components(stack.extra), **stack_components(stack)}  # ROCm, ...
            have = {k.lower(): str(v).lower() for k, v in named.items() if v}
            have.setdefault("implementation", str(stack.extra.get("implementation", "")).lower())
            if all(same_release(have.get(k), v.lower()) for k, v in q.components.items()):
                ok.append(code)
        kept: np.ndarray = keep[np.isin(codes, ok)].astype(np.int64)
        return kept

    def latest(self, rows: np.ndarray, upto: float = math.inf) -> np.ndarray:
        """The rows of the newest round among ``rows`` up to ``upto`` where any are, else newest."""
        held = rows[self.round_no[rows] <= upto] if len(rows) else rows
        rows = held if len(held) else rows
        return rows[self.round_no[rows] == self.round_no[rows].max()] if len(rows) else rows

    def _observed(self, q: Query, rows: np.ndarray) -> Estimate:
        latest = self.latest(rows, self.round_drift.target(q, q.as_of))
        value = median(self.unit[latest])
        lo_q, _, hi_q = self.quantiles(q.slice, Basis.OBSERVED)
        low, high = value * math.exp(lo_q), value * math.exp(hi_q)
        values = self.unit[latest]
        if len(values) >= 2:  # repeats show their own spread: two, both of them (a probe's
            # 95,000 and 120,000 had been answered 107,500 (104,372..114,244), neither inside)
            ends = (0.0, 1.0) if len(values) == 2 else (QUANTILES[0], QUANTILES[1])
            low = min(low, quantile(values, ends[0]))
            high = max(high, quantile(values, ends[1]))
        shown = rows[self.round_no[rows] <= self.round_no[latest].max()]  # up to the round used
        return Estimate(Basis.OBSERVED, value, low, high, rows=shown)

    def _transferred(self, q: Query, by_acc: dict[str, np.ndarray], hib: bool) -> Estimate:
        return transferred_estimate(self, q, by_acc, hib)

    def references(
        self,
        by_acc: dict[str, np.ndarray],
        *,
        at: float | None = None,
        exclude: str | None = None,
        between: tuple[float, float] | None = None,
        policy: str = POLICIES[0],
        cpu: bool = False,
    ) -> dict[str, tuple[float, tuple[float, float], str]]:
        """accelerator → (median per-accelerator value of its latest round, peaks, class), for the
        slice's accelerators with public peaks under the precision ``policy``
        (``stack_advisor.advisor.estimate.hardware``; ``BANDWIDTH_ONLY``: bandwidth alone) (``at``:
        only results
        of that round; ``between``: only results of rounds ``first <= round < last``). CPUs
        (per-socket figures) only with ``cpu``, and then only CPUs: a CPU and an accelerator are
        never each other's reference."""
        memo_key = (id(by_acc), at, exclude, between, policy, cpu)
        if memo_key in self._refs and self._refs[memo_key][0] is by_acc:
            return self._refs[memo_key][1]
        out = {}
        for acc, rows in by_acc.items():
            if acc == exclude:
                continue
            per_round = self.round_medians(rows)
            if at is not None:
                kept = [at] if at in per_round else []
            elif between is not None:
                kept = [r for r in per_round if between[0] <= r < between[1]]
            else:
                kept = list(per_round)
            if not kept:
                continue
            raw = self.raw_names.get(acc, acc)
            if (accelerator_class(raw) == "cpu") != cpu:
                continue
            peaks = (
                bandwidth_figures(raw) if policy == BANDWIDTH_ONLY else scaling_figures(raw, policy)
            )
            if peaks is not None:
                out[acc] = (per_round[max(kept)], peaks, accelerator_class(raw))
        self._refs[memo_key] = (by_acc, out)  # by_acc kept: its id is not reused while held
        return out

    def round_medians(self, rows: np.ndarray) -> dict[float, float]:
        """round → median per-accelerator value of ``rows`` in it (computed once per rows array)."""
        hit = self._medians.get(id(rows))
        if hit is not None and hit[0] is rows:
            return hit[1]
        rounds = self.round_no[rows]
        out = {r: median(self.unit[rows[rounds == r]]) for r in sorted(set(rounds.tolist()))}
        self._medians[id(rows)] = (rows, out)
        return out

    def blend(self, key: SliceKey, by_acc: dict[str, np.ndarray]) -> tuple[str, float]:
        """(precision policy, roofline blend) that best predict each accelerator of the slice
        from the others (``variants.blend_with_variants``)."""
        if key not in self._alpha or key not in self._precision:
            refs = {policy: self.references(by_acc, policy=policy) for policy in POLICIES}
            self._precision[key], self._alpha[key] = blend_with_variants(self, key, refs)
        return self._precision[key], self._alpha[key]

    def policy_choice(self, key: SliceKey, by_acc: dict[str, np.ndarray]) -> transfer.PolicyChoice:
        """The slice's precision policy with the policies its evidence could not tell from it
        (``transfer.choose_policy``); recomputed per process (not persisted with the
        calibration)."""
        if key not in self._policy_choice:
            refs = {policy: self.references(by_acc, policy=policy) for policy in POLICIES}
            self._policy_choice[key] = transfer.choose_policy(
                refs, self.higher_is_better(key), chosen=self.blend(key, by_acc)
            )
        return self._policy_choice[key]

    def held_out_model(self, key: SliceKey, cls: str, acc: str) -> TransferModel | None:
        """The slice's learned model for ``cls`` fitted without ``acc`` (calibration only)."""
        return self._held_out.get((*key, cls), {}).get(acc)

    def transfer_model(
        self, key: SliceKey, by_acc: dict[str, np.ndarray], cls: str
    ) -> TransferModel:
        """How the slice transfers to an accelerator of class ``cls``
        (``stack_advisor.advisor.estimate.transfer``): fitted once per table, at calibration, and
        persisted with it."""
        model_key = (*key, cls)
        if model_key not in self._transfer:
            policy, alpha = self.blend(key, by_acc)
            fitted = transfer.fit(
                self.references(by_acc, policy=policy),
                self.higher_is_better(key),
                alpha,
                cls,
                self.transfer_method,
                policy,
            )
            self._transfer[model_key], self._held_out[model_key] = fitted.model, fitted.held_out
        return self._transfer[model_key]

    # ---- calibration -------------------------------------------------------------------------
    def quantiles(self, key: SliceKey, basis: Basis) -> tuple[float, float, float]:
        """p10/p90 of the log residuals of ``basis`` replayed on the history of the slice's
        calibration cell (family, division and metric for a transfer; family, division and the
        way the metric runs for an observed or interpolated figure: an open-division latency
        varies far more than a closed-division throughput); the whole family where the cell has
        too few."""
        family, division, metric = key[0], key[4], key[3]
        pools = self.residuals_for(family)
        own = pools.get((basis, division, metric))
        if (
            is_latency_slice(key)
            and basis is not Basis.TRANSFERRED
            and (own is None or len(own) < MIN_RESIDUALS)
        ):
            if (
                self._latency is None
            ):  # no round-to-round history of this latency: replay within rounds
                self._latency = LatencyCalibration(self)
            within = self._latency.quantiles(key, basis)
            if within is not None:
                return within
        way = ("higher" if self.higher_is_better(key) else "lower") if key in self.slices else None
        for cell in calibration_cells(basis, division, metric, way):
            values = pools.get(cell)
            if values is not None and len(values) >= MIN_RESIDUALS:
                if basis is Basis.TRANSFERRED and cell[1] is not None:
                    return self._normalised(family, cell, key)
                return residual_quantiles(values)
        return FALLBACK[basis]

    def transfer_quantiles(self, key: SliceKey, kind: str, cls: str) -> tuple[float, float, float]:
        """p10/median/p90 of the log residuals of ``kind`` of transfer to a part of vendor ``cls``
        (``stack_advisor.advisor.estimate.transferred.kind_quantiles``); NaN where too few to
        calibrate."""
        if not kind:
            return self.quantiles(key, Basis.TRANSFERRED)
        return kind_quantiles(
            self.residuals_for(key[0]),
            key,
            kind,
            cls,
            self.higher_is_better(key),
            self.min_residuals,
        )

    def _normalised(self, family: str, cell: PoolKey, key: SliceKey) -> tuple[float, float, float]:
        """Locally weighted split-conformal bounds of a transfer (Lei et al. 2018, sec. 5.2):
        the cell's residuals, each divided by the spread of its own slice (median absolute
        deviation, shrunk towards the cell's by ``SHRINK`` pseudo-residuals), give the p10/p90;
        scaled back by this slice's spread. A benchmark whose transfers have always been close
        gets a narrow interval, one whose transfers scatter a wide one; the centre (the cell's
        median: where the replays landed over their scaling) is the same for both. A same-vendor
        transfer answers at the scaling itself (``transferred._answer_centre``), this interval
        around it as the replays landed; another kind answers at the centre."""
        memo_key = (family, *cell)
        if memo_key not in self._scaled:
            self._scaled[memo_key] = scaled_cell(self.residuals_for(family), cell)
        mid, cell_spread, lo, hi, spreads = self._scaled[memo_key]
        spread = spreads.get((key[1], key[2]), cell_spread)
        return mid + lo * spread, mid, mid + hi * spread

    def residuals_for(self, family: str) -> dict[PoolKey, np.ndarray]:
        """``residuals`` of the family, computed once."""
        if family not in self._residuals:
            self._residuals[family] = self.residuals(family)
        return self._residuals[family]

    def families(self) -> list[str]:
        return sorted({k[0] for k in self.slices})

    def calibration(self) -> Calibration:
        """Every family's residual pools and every slice's transfer models (one per accelerator
        class it has references of), computed now where not yet: what ``adopt`` restores in
        another process over the same table, which then never fits anything."""
        for family in self.families():
            self.residuals_for(family)
        for key, by_acc in self.slices.items():
            policy, _ = self.blend(key, by_acc)
            for cls in sorted({v[2] for v in self.references(by_acc, policy=policy).values()}):
                self.transfer_model(key, by_acc, cls)
        return Calibration(
            residuals={f: dict(p) for f, p in self._residuals.items()},
            alphas=dict(self._alpha),
            transfers=dict(self._transfer),
            precisions=dict(self._precision),
        )

    def adopt(self, calibration: Calibration) -> None:
        """Use a calibration computed earlier over this very table (same content)."""
        self._scaled.clear()
        self._residuals.update(calibration.residuals)
        self._alpha.update(calibration.alphas)
        self._precision.update(calibration.precisions)
        self._transfer.update(calibration.transfers)

    def residuals(self, family: str) -> dict[PoolKey, np.ndarray]:
        """Log residuals of each basis on the family's own history
        (``stack_advisor.advisor.estimate.residuals.history_residuals``)."""
        return history_residuals(self, family)

    def last_seen(self, rows: np.ndarray) -> datetime | None:
        """The publication date of the newest round among ``rows`` (else the newest timestamp)."""
        if not len(rows):
            return None
        t = self.table
        held = zip(t.round.codes[rows].tolist(), t.family.codes[rows].tolist(), strict=True)
        dates = [  # each round on its own family's calendar (Training's v5.1 is not Inference's)
            round_date(t.round.vocab[int(r)], str(t.family.vocab[int(f)])) for r, f in set(held)
        ]
        known = [d for d in dates if d is not None]
        if known:
            return max(known)
        return datetime.fromtimestamp(float(t.timestamp[rows].max()), tz=UTC)
