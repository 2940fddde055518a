"""Hold out part of the knowledge base, train on the rest, and measure the model: MAPE of the
predicted metric and top-1 regret (how much worse the predicted-best candidate really is than the
truly best one), overall and for accelerators never seen in training."""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from advisor import predictor
from advisor.features import table_frames
from advisor.names import matching_accelerators
from advisor.results import EvaluationReport, EvaluationSlice
from advisor.table import ObservationTable
from graph_schema.errors import InvalidInput

FILTER_FIELDS = {
    "round": "round", "accelerator": "accelerator", "benchmark": "bench_name", "metric": "metric",
    "scenario": "scenario", "source": "source", "submitter": "submitter", "division": "division",
    "family": "family", "placement": "placement",
}


def parse_filter(table: ObservationTable, expr: str) -> np.ndarray:
    """``round=v3.0`` or ``round=v3.0,benchmark=resnet50`` (AND); ``field=a|b`` for any of several;
    ``round`` accepts ``3.0`` or ``v3.0``."""
    mask = np.ones(table.n, dtype=bool)
    for part in filter(None, (p.strip() for p in expr.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in FILTER_FIELDS or not value.strip():
            raise InvalidInput(f"holdout filter: {part!r} is not field=value with field one of "
                               f"{', '.join(sorted(FILTER_FIELDS))} (e.g. 'round=v3.0')")
        col = getattr(table, FILTER_FIELDS[name])
        wanted = [v.strip() for v in value.split("|")]
        if name == "round":
            wanted = [v if v.startswith("v") else f"v{v}" for v in wanted]
        if name == "accelerator":
            allowed = sorted({a for w in wanted for a in matching_accelerators(col.vocab, w)})
        else:
            allowed = [a for a in col.vocab if str(a).lower() in {w.lower() for w in wanted}]
        mask &= col.mask(allowed)
    return mask


def _slice(table: ObservationTable, rows: np.ndarray, pred: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> EvaluationSlice:
    if len(rows) == 0:
        return EvaluationSlice(predictions=0, mape=None, groups=0, top1_regret=None)
    actual = table.value[rows]
    ape = np.abs(pred - actual) / actual * 100
    coverage = float(np.mean((actual >= lo) & (actual <= hi)))
    # top-1 regret per (round, benchmark, metric) group with >= 2 candidates
    regrets = []
    keys = np.column_stack([table.round.codes[rows], table.benchmark.codes[rows], table.metric.codes[rows]])
    cands = table.candidate.codes[rows]
    per = np.where(table.higher_is_better[rows], table.count[rows], 1).astype(np.float64)
    for key in np.unique(keys, axis=0):
        sel = np.flatnonzero((keys == key).all(axis=1))
        uc = np.unique(cands[sel])
        if len(uc) < 2:
            continue
        act = np.array([np.median(actual[sel][cands[sel] == c] / per[sel][cands[sel] == c]) for c in uc])
        prd = np.array([np.median(pred[sel][cands[sel] == c] / per[sel][cands[sel] == c]) for c in uc])
        # regret as the share of the best candidate's speed lost by trusting the prediction
        # (speed = throughput, or 1 / latency), so both kinds of metric read the same way
        if table.higher_is_better[rows[sel[0]]]:
            regrets.append(1 - act[np.argmax(prd)] / act.max())
        else:
            regrets.append(1 - act.min() / act[np.argmin(prd)])
    return EvaluationSlice(
        predictions=len(rows), mape=float(np.mean(ape)), median_ape=float(np.median(ape)),
        groups=len(regrets), top1_regret=float(np.mean(regrets) * 100) if regrets else None,
        interval_coverage=coverage,
    )


def evaluate(table: ObservationTable, holdout_filter: str | None, *, holdout_share: float = 0.2,
             seed: int = 0) -> EvaluationReport:
    """Train on the rest, predict the holdout (the filter's slice, or a random share of the
    candidates), and score. Raises InvalidInput for a bad filter or an empty split."""
    start = time.perf_counter()
    positive = table.value > 0
    if holdout_filter:
        hold = parse_filter(table, holdout_filter)
    else:
        if not 0 < holdout_share < 1:
            raise InvalidInput(f"holdout_share must be between 0 and 1, got {holdout_share}")
        rng = np.random.default_rng(seed)
        pick = rng.random(len(table.candidate.vocab)) < holdout_share
        hold = pick[table.candidate.codes]
    train_rows = np.flatnonzero(~hold & positive)
    hold_rows = np.flatnonzero(hold & positive)
    if len(hold_rows) == 0:
        raise InvalidInput(f"holdout filter {holdout_filter!r} selects no observations")
    if len(train_rows) < 20:
        raise InvalidInput(f"holdout filter {holdout_filter!r} leaves only {len(train_rows)} observations to train on")
    with threadpool_limits(1):
        model = predictor.fit(table, train_rows)
    frames = table_frames(table, hold_rows)
    logs = model.predict_log(model.encoder.matrix(frames), table.higher_is_better[hold_rows])
    scale = np.where(table.higher_is_better[hold_rows], table.count[hold_rows], 1).astype(np.float64)
    lo, pred, hi = (np.exp(logs[:, j]) * scale for j in range(3))
    unseen_mask = np.array([k not in model.seen_accelerators for k in frames["accel_key"]])
    classes = np.array(frames["accel_class"], dtype=object)
    by_class = {}
    for cls in sorted(set(classes.tolist())):
        sel = classes == cls
        by_class[str(cls)] = _slice(table, hold_rows[sel], pred[sel], lo[sel], hi[sel])
    by_metric = {}
    for m in np.unique(table.metric.codes[hold_rows]):
        sel = table.metric.codes[hold_rows] == m
        by_metric[table.metric.vocab[int(m)]] = _slice(table, hold_rows[sel], pred[sel], lo[sel], hi[sel])
    return EvaluationReport(
        holdout_filter=holdout_filter, train_count=len(train_rows), holdout_count=len(hold_rows),
        overall=_slice(table, hold_rows, pred, lo, hi),
        unseen_accelerators=_slice(table, hold_rows[unseen_mask], pred[unseen_mask], lo[unseen_mask], hi[unseen_mask]),
        seen_accelerators=_slice(table, hold_rows[~unseen_mask], pred[~unseen_mask], lo[~unseen_mask], hi[~unseen_mask]),
        unseen_accelerator_names=sorted({table.accelerator.vocab[int(c)] for c in table.accelerator.codes[hold_rows[unseen_mask]]}),
        by_metric=by_metric, by_accelerator_class=by_class, model={**model.params, "train_rows": model.train_rows, "fit_seconds": round(model.fit_seconds, 2)},
        elapsed_s=time.perf_counter() - start,
    )
