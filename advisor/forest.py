"""A fitted ``HistGradientBoostingRegressor`` as flat numpy arrays, so a persisted model predicts
without importing scikit-learn (whose import, through scipy, costs one to three seconds: more
than a whole warm CLI answer may take).

Only what ``predict`` needs is kept: the baseline, every tree's nodes (one flat array, children
offset per tree), the categorical split bitsets, and the ordinal encoding scikit-learn applies to
categorical columns before its trees see them. ``compile_regressor`` checks the compiled forest
against the regressor on sample rows and refuses (returns None) when they disagree, so a change
in scikit-learn's internals falls back to the regressor instead of answering differently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class CompiledForest:
    """Sum of tree leaves plus a baseline, scikit-learn's raw-data traversal, vectorised."""

    baseline: float
    roots: np.ndarray  # (trees,) index of each tree's root in the flat node arrays
    feature: np.ndarray  # per node: column of the transformed matrix
    threshold: np.ndarray  # numeric split: go left when value <= threshold
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray
    value: np.ndarray
    missing_left: np.ndarray
    is_categorical: np.ndarray
    bitset_row: np.ndarray  # per node: row of ``left_bitsets`` (categorical splits)
    left_bitsets: np.ndarray  # (rows, 8) uint32: categories that go left
    known_bitsets: np.ndarray  # (categorical features, 8) uint32: categories seen in training
    known_row: np.ndarray  # per transformed column: row of ``known_bitsets``
    max_depth: int
    n_features: int
    # scikit-learn's preprocessing: input column → transformed column; categorical inputs are
    # replaced by their index among the categories seen in training (unknown → NaN)
    column_map: np.ndarray
    categories: dict[int, np.ndarray]  # input column → sorted known categories

    def transform(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected a matrix with {self.n_features} columns, got shape {X.shape}")
        out = np.empty_like(X)
        for j in range(self.n_features):
            col = X[:, j]
            cats = self.categories.get(j)
            if cats is not None:
                pos = np.searchsorted(cats, col)
                safe = np.minimum(pos, max(len(cats) - 1, 0))
                known = (pos < len(cats)) & (cats[safe] == col) if len(cats) else np.zeros(len(col), bool)
                col = np.where(known, pos, np.nan)
            out[:, self.column_map[j]] = col
        return out

    def predict(self, X: np.ndarray) -> np.ndarray:
        Xt = self.transform(X)
        n = len(Xt)
        out = np.full(n, self.baseline, dtype=np.float64)
        if n == 0 or len(self.roots) == 0:
            return out
        rows = np.arange(n)[None, :]
        node = np.repeat(self.roots[:, None], n, axis=1)
        for _ in range(self.max_depth + 1):
            leaf = self.is_leaf[node]
            if leaf.all():
                break
            val = Xt[rows, self.feature[node]]
            nan = np.isnan(val)
            miss = self.missing_left[node]
            go_left = val <= self.threshold[node]
            cat = self.is_categorical[node] & ~nan
            if cat.any():
                code = np.where(cat & (val >= 0), val, 0).astype(np.int64) & 0xFF  # uint8, as sklearn
                word, bit = code // 32, (code % 32).astype(np.uint32)
                in_left = (self.left_bitsets[self.bitset_row[node], word] >> bit) & 1
                known = (self.known_bitsets[self.known_row[self.feature[node]], word] >> bit) & 1
                cat_left = np.where(val < 0, miss, np.where(in_left == 1, True, np.where(known == 1, False, miss)))
                go_left = np.where(cat, cat_left, go_left)
            go_left = np.where(nan, miss, go_left)
            node = np.where(leaf, node, np.where(go_left, self.left[node], self.right[node]))
        for t in range(len(self.roots)):  # tree by tree, as scikit-learn sums them
            out += self.value[node[t]]
        return out


def compile_regressor(model: Any, sample: np.ndarray, *, atol: float = 1e-9) -> CompiledForest | None:
    """The regressor as a ``CompiledForest``, or None when it cannot be compiled or the compiled
    forest's predictions on ``sample`` differ from the regressor's by more than ``atol``."""
    try:
        forest = _compile(model)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
        log.info("the regressor cannot be compiled (%s: %s); keeping scikit-learn's", type(exc).__name__, exc)
        return None
    if len(sample):
        want = model.predict(sample)
        got = forest.predict(sample)
        worst = float(np.max(np.abs(want - got)))
        if not np.isfinite(worst) or worst > atol:
            log.warning("the compiled forest disagrees with scikit-learn by %.3g; keeping scikit-learn's", worst)
            return None
    return forest


def _compile(model: Any) -> CompiledForest:
    if getattr(model, "n_trees_per_iteration_", 1) != 1:
        raise ValueError("only single-output regressors are compiled")
    link = type(model._loss.link).__name__
    if link != "IdentityLink":
        raise ValueError(f"link {link} is not compiled")
    n_features = int(model.n_features_in_)
    column_map = np.arange(n_features)
    categories: dict[int, np.ndarray] = {}
    pre = getattr(model, "_preprocessor", None)
    if pre is not None:
        cat_inputs = np.flatnonzero(model.is_categorical_)
        num_inputs = np.flatnonzero(~model.is_categorical_)
        enc_slice, num_slice = pre.output_indices_["encoder"], pre.output_indices_["numerical"]
        column_map[cat_inputs] = np.arange(enc_slice.start, enc_slice.stop)
        column_map[num_inputs] = np.arange(num_slice.start, num_slice.stop)
        encoder = pre.named_transformers_["encoder"]
        for col, cats in zip(cat_inputs.tolist(), encoder.categories_):
            cats = np.asarray(cats, dtype=np.float64)
            categories[col] = cats[~np.isnan(cats)]
    known_bitsets, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    fields = ("feature_idx", "num_threshold", "left", "right", "is_leaf", "value",
              "missing_go_to_left", "is_categorical", "bitset_idx", "depth")
    parts: dict[str, list[np.ndarray]] = {f: [] for f in fields}
    roots, bitsets = [], []
    offset = bit_offset = 0
    for (tree,) in model._predictors:
        nodes = tree.nodes
        roots.append(offset)
        for f in fields:
            col = np.asarray(nodes[f])
            if f in ("left", "right"):
                col = col.astype(np.int64) + offset
            elif f == "bitset_idx":
                col = col.astype(np.int64) + bit_offset
            parts[f].append(col)
        raw = np.asarray(tree.raw_left_cat_bitsets, dtype=np.uint32).reshape(-1, 8)
        bitsets.append(raw)
        offset += len(nodes)
        bit_offset += len(raw)
    cat = lambda f, dtype: np.concatenate(parts[f]).astype(dtype) if parts[f] else np.zeros(0, dtype)
    left_bitsets = np.concatenate(bitsets) if bitsets else np.zeros((0, 8), np.uint32)
    known = np.asarray(known_bitsets, dtype=np.uint32).reshape(-1, 8)
    is_categorical = cat("is_categorical", bool)
    bitset_row = np.where(is_categorical, cat("bitset_idx", np.int64), 0)
    return CompiledForest(
        baseline=float(np.asarray(model._baseline_prediction).ravel()[0]),
        roots=np.asarray(roots, dtype=np.int64),
        feature=cat("feature_idx", np.int64), threshold=cat("num_threshold", np.float64),
        left=cat("left", np.int64), right=cat("right", np.int64), is_leaf=cat("is_leaf", bool),
        value=cat("value", np.float64), missing_left=cat("missing_go_to_left", bool),
        is_categorical=is_categorical, bitset_row=bitset_row,
        # a zero row keeps the gathers valid where a forest has no categorical split at all
        left_bitsets=left_bitsets if len(left_bitsets) else np.zeros((1, 8), np.uint32),
        known_bitsets=known if len(known) else np.zeros((1, 8), np.uint32),
        known_row=np.asarray(f_idx_map, dtype=np.int64) if len(known) else np.zeros(n_features, np.int64),
        max_depth=int(cat("depth", np.int64).max(initial=0)),
        n_features=n_features, column_map=column_map, categories=categories,
    )
