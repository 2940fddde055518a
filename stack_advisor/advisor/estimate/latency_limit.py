"""p99 time to first token read as a share of the scenario's published limit (issue 28, item 5).

In a Server or Interactive run the submitter chooses the load; LoadGen only checks that p99
TTFT and TPOT stay under the scenario's limits (``stack_advisor/catalog/scenarios.yaml``). TPOT
is the binding one (v4.1 llama2-70b Server: p99 TPOT at 132-194 ms of 200), so p99 TTFT lands
wherever the serving stack's scheduler puts it below its limit, and that follows the stack
more than the hardware's speed: in v4.1 every NVIDIA part ran llama2-70b Server at 0.18-0.33
of the 2,000 ms limit (B200 to L40S, a 25x spread in tokens/s per accelerator), AMD's MI300X
at 0.39-0.86. Scaling another accelerator's TTFT by peak compute and bandwidth (the specs
transfer) therefore moves it the wrong way as often as the right one.

For an accelerator without results on the slice, TTFT is estimated here instead as
``limit * exp(model term + accelerator term)``: log(TTFT / limit) of the latest round of each
(accelerator, model and scenario) cell, split by alternating medians into a term per model and
scenario (one term for a benchmark's accuracy variants, llama2-70b-99 and -99.9, which are the
same runs) and a term per accelerator. The accelerator's term comes from its own results on
other models, else the median of its vendor's accelerators moved for its peak compute against
theirs (a slope of the terms on log peak compute, learned on the measured accelerators with each
vendor centred on its own: on rounds <= v4.1, -0.31, faster parts a little further below the
limit; without it a vendor's unmeasured parts all tie, and a ranking among them is list order);
with neither, None (the specs transfer applies). The 80% interval is split-conformal on per-result
residuals of the same estimator replayed on every cell of the knowledge base left out in turn, and
never above the limit (a valid result meets it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from weakref import WeakKeyDictionary

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class, peak_figures
from stack_advisor.advisor.estimate.order_stats import median
from stack_advisor.advisor.estimate.protocols import EvidenceIndex
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.estimate.scenario import conformal_bounds
from stack_advisor.advisor.results import Basis
from stack_advisor.catalog import load_catalog

METRIC_LIMITS = {"ttft_p99_ms": "ttft_ms"}  # a latency the submitter's load sets → its limit field
CAPPED = {
    "ttft_p99_ms": "ttft_ms",
    "tpot_p99_ms": "tpot_ms",
}  # p99 figures a valid result keeps under
MIN_RESIDUALS = 10
MIN_SLOPE_POINTS = 4  # accelerators (in vendors of two or more) to learn the compute slope from
LOAD_NOTE = (
    "p99 TTFT at the load of a {scenario} result is the submitter's choice under the {limit:g} ms "
    "limit "
    "(TPOT is the binding one): another system or round of the same accelerator may run it far "
    "nearer the limit or far below"
)
SWEEPS = 8

Cell = tuple[str, str]  # (model and scenario, canonical accelerator)


def limit_ms(
    family: str,
    benchmark: str,
    scenario: str,
    metric: str,
    round_name: str | None = None,
    fields: dict[str, str] = CAPPED,
) -> float | None:
    """The published p99 limit of ``metric`` for the benchmark and scenario in force in
    ``round_name`` (the newest when None); None when the catalogue has none."""
    field = fields.get(metric)
    entry = load_catalog().scenarios.get(scenario)
    if field is None or entry is None:
        return None
    found = entry.limits_for(benchmark, round_name)
    value = getattr(found, field) if found is not None else None
    return float(value) if value else None


def model_of(family: str, benchmark: str) -> str:
    """The model a benchmark runs (its accuracy variants share one), else the benchmark."""
    entry = load_catalog().benchmarks.get(f"{family}/{benchmark}")
    return entry.model if entry is not None and entry.model else benchmark


def log_compute(name: str) -> float | None:
    """log of the accelerator's published peak (INT8, else FP16), None where unpublished."""
    found = peak_figures(name)
    return math.log(found[0]) if found is not None else None


@dataclass
class LimitShares:
    """log(value / limit) per result of each cell, the accelerators' vendors and their log peak
    compute (where the catalogue publishes it)."""

    rows: dict[Cell, list[float]]
    vendor: dict[str, str]
    speed: dict[str, float] = field(default_factory=dict)
    _whole: tuple[dict[str, float], dict[str, float]] | None = field(default=None, repr=False)

    def fit(self, without: Cell | None = None) -> tuple[dict[str, float], dict[str, float]]:
        """(term per model and scenario, term per accelerator) by alternating medians of the
        cells' medians, ``without`` one cell; the fit of every cell is made once (each query
        asks it)."""
        if without is None:
            if self._whole is None:
                self._whole = self._fit(None)
            return self._whole
        return self._fit(without)

    def _fit(self, without: Cell | None) -> tuple[dict[str, float], dict[str, float]]:
        cells = {c: median(np.asarray(v)) for c, v in self.rows.items() if c != without and v}
        model: dict[str, float] = {}
        acc: dict[str, float] = defaultdict(float)
        for _ in range(SWEEPS):
            by_model: dict[str, list[float]] = defaultdict(list)
            for (m, a), v in cells.items():
                by_model[m].append(v - acc[a])
            model = {m: median(np.asarray(v)) for m, v in by_model.items()}
            by_acc: dict[str, list[float]] = defaultdict(list)
            for (m, a), v in cells.items():
                by_acc[a].append(v - model[m])
            acc = defaultdict(float, {a: median(np.asarray(v)) for a, v in by_acc.items()})
        return model, dict(acc)

    def slope(self, acc: dict[str, float]) -> float:
        """Least-squares slope of the accelerator terms on log peak compute, each vendor's
        centred on its own means (so a vendor's level does not count as a speed effect); 0 with
        fewer than ``MIN_SLOPE_POINTS`` accelerators in vendors of two or more."""
        xs: list[float] = []
        ys: list[float] = []
        for vendor in set(self.vendor.values()):
            group = [
                (self.speed[a], t)
                for a, t in acc.items()
                if self.vendor.get(a) == vendor and a in self.speed
            ]
            if len(group) < 2:
                continue
            x, y = np.asarray(group).T
            xs.extend(x - x.mean())
            ys.extend(y - y.mean())
        x, y = np.asarray(xs), np.asarray(ys)
        if len(x) < MIN_SLOPE_POINTS or not (x * x).sum():
            return 0.0
        return float((x * y).sum() / (x * x).sum())

    def predict(
        self,
        cell: Cell,
        without: Cell | None = None,
        vendor: str | None = None,
        speed: float | None = None,
    ) -> tuple[float, str, list[str]] | None:
        """(log share, where the accelerator's term came from, the accelerators it was read on)
        for ``cell``, None where the model
        has no other accelerator or the accelerator no term of its own or its vendor's. A vendor's
        term is moved by the learned slope for the part's peak compute (``speed``, log; else its
        own from ``self.speed``) against the median of the vendor's measured parts."""
        model, acc = self.fit(without)
        m, a = cell
        if m not in model:
            return None
        own = [
            v - model[mm]
            for (mm, aa), vals in self.rows.items()
            if aa == a and mm != m and (mm, aa) != without
            for v in [median(np.asarray(vals))]
            if vals and mm in model
        ]
        if own:
            share = model[m] + median(np.asarray(own))
            return share, f"its own results on {len(own)} other model(s)", [a]
        vendor = vendor or self.vendor.get(a)
        peers = {
            aa: t
            for aa, t in acc.items()
            if aa != a and self.vendor.get(aa) == vendor and vendor not in (None, "other")
        }
        if not peers:
            return None
        term, how = (
            median(np.asarray(list(peers.values()))),
            f"the median of {len(peers)} {vendor} accelerator(s)",
        )
        speed = self.speed.get(a) if speed is None else speed
        known = [self.speed[aa] for aa in peers if aa in self.speed]
        slope = self.slope({aa: t for aa, t in acc.items() if aa != a})
        if speed is not None and known and slope:
            shift = speed - median(np.asarray(known))
            term += slope * shift
            how += (
                f", moved by its peak compute ({math.exp(shift):.2g}x theirs) ^ {slope:.2f} "
                "(learned on the measured accelerators)"
            )
        return model[m] + term, how, sorted(peers)

    def residuals(self) -> np.ndarray:
        """Per-result log residuals of every cell predicted with itself left out."""
        out: list[float] = []
        for cell, values in self.rows.items():
            hit = self.predict(cell, without=cell)
            if hit is not None:
                out.extend(v - hit[0] for v in values)
        return np.asarray(out)


_SHARES: WeakKeyDictionary[
    EvidenceIndex, dict[tuple[str, str, str], tuple[LimitShares, np.ndarray]]
] = WeakKeyDictionary()


def shares(
    index: EvidenceIndex, family: str, metric: str, division: str
) -> tuple[LimitShares, np.ndarray]:
    """The shares of ``metric``'s slices with a published limit, and their replay residuals
    (once per index)."""
    cache = _SHARES.setdefault(index, {})
    key = (family, metric, division)
    if key not in cache:
        t = index.table
        rows: dict[Cell, list[float]] = defaultdict(list)
        vendor: dict[str, str] = {}
        speed: dict[str, float] = {}
        for (fam, bench, scen, met, div), by_acc in index.slices.items():
            if (fam, met, div) != key:
                continue
            for acc, members in by_acc.items():
                latest = members[index.round_no[members] == index.round_no[members].max()]
                for r in latest.tolist():
                    limit = limit_ms(
                        fam, bench, scen, met, t.round.vocab[int(t.round.codes[r])], METRIC_LIMITS
                    )
                    if limit is not None:
                        rows[(f"{model_of(fam, bench)} {scen}", acc)].append(
                            math.log(float(t.value[r]) / limit)
                        )
                        raw = t.accelerator.vocab[int(t.accelerator.codes[r])]
                        vendor.setdefault(acc, accelerator_class(raw))
                        if acc not in speed and (compute := log_compute(raw)) is not None:
                            speed[acc] = compute
        found = LimitShares(dict(rows), vendor, speed)
        cache[key] = (found, found.residuals())
    return cache[key]


def limit_share_estimate(index: EvidenceIndex, q: Query) -> Estimate | None:
    """``q``'s TTFT as a share of its limit (see the module docstring); None where the metric is
    not one the submitter's load sets, the catalogue publishes no limit, the evidence holds no
    term for the accelerator, or the replays are fewer than ``MIN_RESIDUALS``."""
    limit = limit_ms(q.family, q.benchmark, q.scenario, q.metric, fields=METRIC_LIMITS)
    if limit is None:
        return None
    found, residuals = shares(index, q.family, q.metric, q.division)
    raw = q.raw_accelerator or index.raw_names.get(q.accelerator, q.accelerator)
    hit = found.predict(
        (f"{model_of(q.family, q.benchmark)} {q.scenario}", q.accelerator),
        vendor=accelerator_class(raw),
        speed=log_compute(raw),
    )
    if hit is None or len(residuals) < MIN_RESIDUALS:
        return None
    log_share, source, references = hit
    lo, hi = conformal_bounds(residuals)
    value = min(limit, limit * math.exp(log_share))
    how = (
        f"{q.metric} / its {q.scenario} limit {limit:g} ms: model term from the "
        "accelerators that ran "
        f"{q.benchmark}, accelerator term from {source} (replayed on {len(residuals)} results)"
    )
    note = (
        f"p99 TTFT under the load of a {q.scenario} run is set by the submitter's load and serving "
        "stack, not the "
        "hardware's speed: read as a share of the published limit, not scaled by specs"
    )
    return Estimate(
        Basis.TRANSFERRED,
        value,
        value * math.exp(lo),
        min(limit, value * math.exp(hi)),
        factors=[("limit share", how, value / limit)],
        notes=[note],
        references=references,
    )


def capped(q: Query, est: Estimate) -> Estimate:
    """``est`` with its value and interval no higher than the published p99 limit of a closed-
    division serving latency (a valid result meets it). Where even the interval's low end is
    above the limit the estimate is kept as made, with a note: it says no valid run of this
    configuration is expected, which a cap would hide. Unchanged where no limit is published."""
    value = est.value
    limit = limit_ms(q.family, q.benchmark, q.scenario, q.metric)
    if value is None or q.division != "closed" or limit is None:
        return est
    notes = list(est.notes)
    if q.metric in METRIC_LIMITS and est.basis in (Basis.OBSERVED, Basis.INTERPOLATED):
        notes.append(LOAD_NOTE.format(scenario=q.scenario, limit=limit))
    if (est.high or 0) <= limit and value <= limit:
        return replace(est, notes=notes)
    if est.low is None or est.low > limit:
        notes.append(
            f"the whole estimate lies above the published {q.scenario} limit of {limit:g} ms: "
            "a valid run of this configuration is not expected"
        )
        return replace(est, notes=notes)
    high = None if est.high is None else min(est.high, limit)
    notes.append(f"capped at the published {q.scenario} limit of {limit:g} ms")
    return replace(est, value=min(value, limit), high=high, notes=notes)
