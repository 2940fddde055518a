"""Scoring held-out results (``stack_advisor.advisor.verbs.evaluate``): truth, prediction and
slice labels of every held-out row, and per slice the errors, interval coverage and top-1 regret
of the advisor next to the simple lookup's on the rows it covers.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.drift import benchmark_group
from stack_advisor.advisor.estimate.facts import accelerator_class, canonical_accelerator
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.results import Basis, EvaluationSlice, Prediction
from stack_advisor.schema.errors import InvalidInput


def top1_regret(
    groups: np.ndarray, actual: np.ndarray, pred: np.ndarray, count: np.ndarray
) -> tuple[float | None, int]:
    """Mean share of the best per-accelerator result lost by picking the predicted best, over
    groups (benchmark, scenario, metric) with at least two results."""
    regrets = []
    for g in np.unique(groups):
        sel = np.flatnonzero(groups == g)
        if len(sel) < 2:
            continue
        per_actual = actual[sel] / count[sel]
        per_pred = pred[sel] / count[sel]
        regrets.append(1 - per_actual[np.argmax(per_pred)] / per_actual.max())
    return (float(np.mean(regrets) * 100) if regrets else None), len(regrets)


def score_slice(
    sel: np.ndarray,
    actual: np.ndarray,
    pred: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    lookup: np.ndarray,
    groups: np.ndarray,
    count: np.ndarray,
    speed: np.ndarray,
) -> EvaluationSlice:
    """``speed``: +1 where a higher value is better, -1 where lower (a time): regret ranks by
    per-accelerator speed, value/count or 1/(value*count)."""
    actual_speed, pred_speed = actual**speed, pred**speed
    answered = sel & ~np.isnan(pred)
    refused = int((sel & np.isnan(pred)).sum())
    out: dict[str, Any] = {"predictions": int(answered.sum()), "refused": refused, "mape": None}
    if answered.any():
        ape = np.abs(pred[answered] - actual[answered]) / actual[answered] * 100
        regret, n_groups = top1_regret(
            groups[answered], actual_speed[answered], pred_speed[answered], count[answered]
        )
        ratio = np.maximum(pred[answered] / actual[answered], actual[answered] / pred[answered])
        out.update(
            mape=float(ape.mean()),
            median_ape=float(np.median(ape)),
            worst_ratio=float(ratio.max()),
            off_3x=int((ratio >= 3).sum()),
            interval_coverage=float(
                np.mean((actual[answered] >= lo[answered]) & (actual[answered] <= hi[answered]))
            ),
            top1_regret=regret,
            groups=n_groups,
        )
    covered = answered & ~np.isnan(lookup)
    out["lookup_rows"] = int((sel & ~np.isnan(lookup)).sum())
    if covered.any():
        ape = np.abs(pred[covered] - actual[covered]) / actual[covered] * 100
        lape = np.abs(lookup[covered] - actual[covered]) / actual[covered] * 100
        regret, _ = top1_regret(
            groups[covered], actual_speed[covered], pred_speed[covered], count[covered]
        )
        lregret, _ = top1_regret(
            groups[covered],
            actual_speed[covered],
            lookup[covered] ** speed[covered],
            count[covered],
        )
        out.update(
            mape_on_lookup_rows=float(ape.mean()),
            median_ape_on_lookup_rows=float(np.median(ape)),
            top1_regret_on_lookup_rows=regret,
            lookup_mape=float(lape.mean()),
            lookup_median_ape=float(np.median(lape)),
            lookup_top1_regret=lregret,
        )
    return EvaluationSlice(**out)


# common scales of every interval's width (its log distances from the answer) at which a round-
# ahead step's coverage is read: whether one calibration could hold every step (``width_scales``)
WIDTH_SCALES = tuple(round(0.5 + 0.05 * i, 2) for i in range(51))  # 0.5 .. 3.0
MIN_SCALED_ROWS = 20  # a step's basis with fewer answered rows is too few to read a coverage on


def width_scales(
    labels: np.ndarray, actual: np.ndarray, pred: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> dict[str, dict[str, float]]:
    """Per label (a round-ahead step and basis) with at least ``MIN_SCALED_ROWS`` answered rows,
    the 80% coverage when every interval's log distances from its answer are multiplied by each
    of ``WIDTH_SCALES``: one calibration for every step is one scale, so the scales that put
    each step in the goal band, intersected, say whether any calibration of these intervals'
    shape holds every step."""
    answered = ~np.isnan(pred) & ~np.isnan(lo) & ~np.isnan(hi) & (pred > 0) & (lo > 0)
    out: dict[str, dict[str, float]] = {}
    for label in sorted({str(v) for v in labels[answered].tolist()} - {""}):
        sel = answered & (labels == label)
        if sel.sum() < MIN_SCALED_ROWS:
            continue
        below = np.log(lo[sel] / pred[sel])  # <= 0 where the interval holds its answer
        above = np.log(hi[sel] / pred[sel])
        truth = np.log(actual[sel] / pred[sel])
        out[label] = {
            f"{s:.2f}": float(np.mean((truth >= s * below) & (truth <= s * above)))
            for s in WIDTH_SCALES
        }
        # an interval beside its answer (held to a part's peaks) moves as it is scaled: its rows
        # are counted, so that a coverage not rising with the scale can be read
        out[label]["beside"] = float(np.mean((below > 0) | (above < 0)))
    return out


def row_kind(table: ObservationTable, r: int, scenarios: set[tuple[str, str, str]] | None) -> str:
    """What a held-out row asks, for counting apart: a CPU-only system, a scenario the training
    split never recorded for its benchmark, or an accelerator system on a recorded scenario."""
    key = (
        table.family.vocab[int(table.family.codes[r])],
        table.bench_name.vocab[int(table.bench_name.codes[r])],
        table.scenario.vocab[int(table.scenario.codes[r])],
    )
    if scenarios is not None and key not in scenarios:
        return "scenario never seen in training"
    if accelerator_class(table.accelerator.vocab[int(table.accelerator.codes[r])]) == "cpu":
        return "CPU-only system"
    return "accelerator system"


class Scored:
    """Truth, prediction and slice labels of every held-out row, accumulated across folds."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = defaultdict(list)

    def add(
        self,
        table: ObservationTable,
        rows: np.ndarray,
        predictions: list[Prediction],
        lookup: np.ndarray,
        seen: set[str],
        scenarios: set[tuple[str, str, str]] | None = None,
        step: str = "",
    ) -> None:
        """``scenarios``: (family, benchmark, scenario) the training split holds (None: all)."""
        for r, p, lk in zip(rows.tolist(), predictions, lookup.tolist()):
            acc = canonical_accelerator(table.accelerator.vocab[int(table.accelerator.codes[r])])
            self.cols["kind"].append(row_kind(table, r, scenarios))
            self.cols["actual"].append(float(table.value[r]))
            self.cols["pred"].append(np.nan if p.value is None else p.value)
            self.cols["lo"].append(np.nan if p.interval is None else p.interval.low)
            self.cols["hi"].append(np.nan if p.interval is None else p.interval.high)
            self.cols["lookup"].append(lk)
            self.cols["count"].append(float(table.count[r]))
            self.cols["speed"].append(1.0 if table.higher_is_better[r] else -1.0)
            self.cols["basis"].append(p.basis.value)
            self.cols["reason"].append((p.reason or "").split(":")[0])
            self.cols["seen"].append("seen accelerator" if acc in seen else "unseen accelerator")
            self.cols["accelerator"].append(acc)
            self.cols["benchmark"].append(f"{p.query.benchmark} {p.query.scenario or ''}".strip())
            self.cols["metric"].append(p.query.metric)
            self.cols["group"].append(f"{p.query.benchmark}|{p.query.scenario}|{p.query.metric}")
            self.cols["bench_group"].append(benchmark_group(p.query.family, p.query.benchmark))
            self.cols["step"].append(step)
            self.cols["step_basis"].append(f"{step}, {p.basis.value}" if step else "")

    def report(self) -> dict[str, Any]:
        arrays = {
            k: np.asarray(
                v,
                dtype=np.float64
                if k in ("actual", "pred", "lo", "hi", "lookup", "count", "speed")
                else object,
            )
            for k, v in self.cols.items()
        }
        if not arrays:
            raise InvalidInput("evaluation: no held-out results to score")
        args = (
            arrays["actual"],
            arrays["pred"],
            arrays["lo"],
            arrays["hi"],
            arrays["lookup"],
            arrays["group"],
            arrays["count"],
            arrays["speed"],
        )
        every = np.ones(len(arrays["actual"]), dtype=bool)

        def by(name: str) -> dict[str, EvaluationSlice]:
            return {
                str(v): score_slice(arrays[name] == v, *args)
                for v in sorted(set(arrays[name].tolist()))
            }

        reasons: dict[str, int] = defaultdict(int)
        for b, reason in zip(arrays["basis"], arrays["reason"]):
            if b == Basis.UNSUPPORTED.value:
                reasons[str(reason)] += 1
        return {
            "overall": score_slice(every, *args),
            "by_basis": by("basis"),
            "by_seen": by("seen"),
            "by_kind": by("kind"),
            "by_benchmark": by("benchmark"),
            "by_accelerator": by("accelerator"),
            "by_metric": by("metric"),
            "by_group": by("bench_group"),
            "by_step": by("step"),
            "by_step_basis": by("step_basis"),
            "refused_reasons": dict(reasons),
            "holdout_count": len(arrays["actual"]),
            "coverage_by_width_scale": width_scales(
                arrays["step_basis"], arrays["actual"], arrays["pred"], arrays["lo"], arrays["hi"]
            ),
        }
