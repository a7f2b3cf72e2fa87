"""Audit DR (2026-12-05): the regularisation options of gradient and newton boosting against
brute-force split searches (XGBoost's loss change, without its factor 1/2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor


def _xor(n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """An XOR of two features (8 values each): the root's best split gains little."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 8, size=(n, 2)).astype(np.float32)
    y = ((X[:, 0] < 4) ^ (X[:, 1] < 4)).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return X, y


def _best_root_gain(X: np.ndarray, g: np.ndarray, h: np.ndarray, lam: float) -> float:
    """The largest G_L^2/(H_L+lam) + G_R^2/(H_R+lam) - G^2/(H+lam) over every cut."""
    score = lambda s: g[s].sum() ** 2 / (h[s].sum() + lam)  # noqa: E731
    everything = np.ones(len(g), dtype=bool)
    best = -np.inf
    for j in range(X.shape[1]):
        for t in np.unique(X[:, j])[1:]:
            left = X[:, j] < t
            best = max(best, score(left) + score(~left) - score(everything))
    return best


def _no_split_message(model, X, y) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    assert not np.any(model.forest_.feature >= 0)
    texts = [str(w.message) for w in caught if "no tree made a single split" in str(w.message)]
    assert len(texts) == 1
    return texts[0]


@pytest.mark.parametrize("boosting", ["newton", "gradient"])
def test_no_split_warning_names_min_split_gain(boosting):
    # the root's best gain (brute force) is below min_split_gain: that option, not the
    # weights' scale or min_child_weight, is why nothing split
    X, y = _xor()
    base = np.log(y.mean() / (1 - y.mean()))
    p = 1 / (1 + np.exp(-base))
    if boosting == "newton":
        best = _best_root_gain(X, p - y, np.full(y.size, p * (1 - p)), 1.0)
    else:  # deviance pseudo-residuals, variance gain with B = the weight
        ys = 2.0 * y - 1.0
        r = 2.0 * ys / (1.0 + np.exp(2.0 * ys * 0.5 * base))
        best = _best_root_gain(X, r, np.ones(y.size), 0.0)
    gamma = 2.0 * best
    model = BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, min_node_size=0.0,
                          min_split_gain=gamma)
    text = _no_split_message(model, X, y)
    assert "min_split_gain=" in text
    assert "allow no child" not in text


def test_no_split_warning_names_reg_alpha():
    # every node's |sum of gradients| is below reg_alpha: every soft-thresholded score is 0
    rng = np.random.default_rng(4)
    X = rng.integers(0, 8, size=(300, 2)).astype(np.float32)
    y = X[:, 0] + rng.normal(0, 1, 300)
    alpha = float(np.sum(np.abs(y - y.mean()))) + 1.0  # above any node's |G|
    model = BDTRegressor(boosting="newton", n_trees=2, max_depth=2, min_node_size=0.0,
                         reg_alpha=alpha)
    assert "reg_alpha=" in _no_split_message(model, X, y)
