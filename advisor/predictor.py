"""The prediction model: gradient boosting on the log of the metric, with a split-conformal
interval (p10..p90 of the residuals on a held-back fifth of the training rows).

Throughput-like metrics (higher is better) are modelled per accelerator (value / count) and
scaled back; latency-like metrics are modelled as they are. Both are modelled relative to the
accelerator's published peak (INT8 TOPS, else FP16 TFLOP/s) where the spec table knows it:
the trees learn an efficiency, which carries over to an accelerator they never saw (trees cannot
extrapolate a raw value beyond the range they were trained on). Trained on a table of one store
generation and labelled with it, so a stale model can be recognised.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.features import (
    CATEGORICAL,
    FACTOR_GROUPS,
    FEATURES,
    Encoder,
    table_frames,
)
from advisor.table import ObservationTable

if TYPE_CHECKING:  # scikit-learn is imported only to fit: a persisted model predicts without it
    from sklearn.ensemble import HistGradientBoostingRegressor

log = logging.getLogger(__name__)
QUANTILES = (0.1, 0.5, 0.9)
SWAPPABLE = ("accelerator", "accelerator_count", "placement", "software_stack")


@dataclass
class FittedModel:
    generation: int
    encoder: Encoder
    model: HistGradientBoostingRegressor
    residual_quantiles: tuple[float, float]
    unseen_residual_quantiles: tuple[float, float]
    train_rows: int
    seen_accelerators: set[str]
    fit_seconds: float
    params: dict[str, Any] = field(default_factory=dict)

    def predict_log(self, X: np.ndarray, higher: np.ndarray | bool) -> np.ndarray:
        """(n, 3) log-space low / centre / high of the per-accelerator value (``higher``: the
        rows' metrics are higher-is-better); rows whose accelerator the model never saw get the
        wider interval calibrated on held-out accelerators."""
        mid = self.model.predict(X) + peak_offset(X, higher)
        unseen = np.isnan(X[:, FEATURES.index("accel_key")])
        lo = np.where(unseen, self.unseen_residual_quantiles[0], self.residual_quantiles[0])
        hi = np.where(unseen, self.unseen_residual_quantiles[1], self.residual_quantiles[1])
        return np.column_stack([mid + lo, mid, mid + hi])

    def factor_effects(self, X: np.ndarray, reference: np.ndarray, higher: bool,
                       top: int = 3) -> list[list[tuple[str, float]]]:
        """Per row: the feature groups whose swap for the reference row's values changes the
        prediction most, with exp(delta) as a multiplicative effect (candidate vs reference)."""
        if len(X) == 0:
            return []
        base = self.model.predict(X) + peak_offset(X, higher)
        groups = [(g, names) for g, names in FACTOR_GROUPS.items() if g in SWAPPABLE]
        stacked = []
        for _, names in groups:
            Xg = X.copy()
            for name in names:
                j = FEATURES.index(name)
                Xg[:, j] = reference[j]
            stacked.append(Xg)
        Xs = np.vstack(stacked)
        preds = (self.model.predict(Xs) + peak_offset(Xs, higher)).reshape(len(groups), len(X))
        out = []
        for i in range(len(X)):
            deltas = [(groups[g][0], float(np.exp(base[i] - preds[g, i]))) for g in range(len(groups))]
            deltas.sort(key=lambda t: -abs(np.log(t[1])))
            out.append(deltas[:top])
        return out


def peak_offset(X: np.ndarray, higher: np.ndarray | bool) -> np.ndarray:
    """log of the accelerator's published peak (INT8, else FP16), signed: + for throughput, -
    for latency; 0 where the spec table has neither (CPUs, unknown parts)."""
    i8 = X[:, FEATURES.index("log_int8")]
    f16 = X[:, FEATURES.index("log_fp16")]
    peak = np.where(np.isnan(i8), f16, i8)
    peak = np.where(np.isnan(peak), 0.0, peak)
    return np.where(higher, peak, -peak)


def target(table: ObservationTable, rows: np.ndarray, X: np.ndarray) -> np.ndarray:
    """log(value) (per accelerator for higher-is-better metrics) less the peak offset."""
    values = np.log(np.maximum(table.value[rows], 1e-12))
    per_acc = table.higher_is_better[rows]
    values = values - np.where(per_acc, np.log(table.count[rows].astype(np.float64)), 0.0)
    return values - peak_offset(X, per_acc)


def _regressor(seed: int, max_iter: int) -> HistGradientBoostingRegressor:
    from sklearn.ensemble import HistGradientBoostingRegressor

    cat_mask = np.array([name in CATEGORICAL for name in FEATURES])
    return HistGradientBoostingRegressor(
        loss="squared_error", max_iter=max_iter, learning_rate=0.15, max_leaf_nodes=31,
        min_samples_leaf=5, early_stopping=False, categorical_features=cat_mask,
        random_state=seed,
    )


def _fit(model: HistGradientBoostingRegressor, X: np.ndarray, y: np.ndarray) -> HistGradientBoostingRegressor:
    """Fit, with all-missing columns made constant (scikit-learn cannot bin an all-NaN column;
    a constant one is simply never split on)."""
    empty = np.isnan(X).all(axis=0)
    if empty.any():
        X = X.copy()
        X[:, empty] = 0.0
    return model.fit(X, y)


def _calibrate(X: np.ndarray, y: np.ndarray, calib: np.ndarray, seed: int, max_iter: int, *,
               drop_accelerator: bool = False) -> tuple[float, float]:
    """p10/p90 of the residuals on ``calib`` rows of a model fit on the others."""
    if calib.sum() < 20 or (~calib).sum() < 20:
        return (0.0, 0.0)
    Xc = X[calib]
    if drop_accelerator:  # the probe never saw these accelerators: as served, their key is unknown
        Xc = Xc.copy()
        Xc[:, FEATURES.index("accel_key")] = np.nan
    probe = _fit(_regressor(seed, max_iter), X[~calib], y[~calib])
    resid = y[calib] - probe.predict(Xc)
    return (float(np.quantile(resid, QUANTILES[0])), float(np.quantile(resid, QUANTILES[2])))


def fit(table: ObservationTable, rows: np.ndarray | None = None, *, max_iter: int = 150,
        seed: int = 0) -> FittedModel:
    """Fit on ``rows`` (default: every positive-valued row): a calibration fit on four fifths
    gives the residual interval, then the served model is fit on all of them."""
    start = time.perf_counter()
    if rows is None:
        rows = np.flatnonzero(table.value > 0)
    else:
        rows = rows[table.value[rows] > 0]
    frames = table_frames(table, rows)
    encoder = Encoder.fit(frames)
    X = encoder.matrix(frames)
    y = target(table, rows, X)
    # A feature the training rows never record (e.g. no MLPerf round in our own measurements)
    # cannot be binned; as a constant it is simply never split on.
    X[:, np.isnan(X).all(axis=0)] = 0.0
    rng = np.random.default_rng(seed)
    quantiles = _calibrate(X, y, rng.random(len(rows)) < 0.2, seed, max_iter)
    keys = np.asarray(frames["accel_key"], dtype=object)
    uniq = np.unique(keys.astype(str))
    held = set(uniq[rng.random(len(uniq)) < 0.2].tolist())
    unseen_q = _calibrate(X, y, np.array([str(k) in held for k in keys]), seed, max_iter,
                          drop_accelerator=True)
    unseen_q = (min(unseen_q[0], quantiles[0]), max(unseen_q[1], quantiles[1]))
    model = _fit(_regressor(seed, max_iter), X, y)
    seen = set(frames["accel_key"])
    elapsed = time.perf_counter() - start
    log.info("fitted the prediction model on %d rows in %.1fs", len(rows), elapsed)
    return FittedModel(
        generation=table.generation, encoder=encoder, model=model, residual_quantiles=quantiles,
        unseen_residual_quantiles=unseen_q,
        train_rows=len(rows), seen_accelerators=seen, fit_seconds=elapsed,
        params={"kind": "HistGradientBoostingRegressor(squared_error) on log(value)",
                "interval": "split-conformal residual p10..p90 (random rows; held-out accelerators "
                            "for unseen ones)", "max_iter": max_iter,
                "target": "log(value) (per accelerator for higher-is-better metrics) less "
                          "log(published peak INT8/FP16) where known"},
    )
