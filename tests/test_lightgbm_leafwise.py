"""Leaf-wise newton trees against LightGBM's ``num_leaves`` trees on the same bins (integer
features 0..B-1, which both bin one value a bin), tree by tree, and the one place where
they differ by design: LightGBM stops searching a feature below a leaf where that feature
had no split of positive gain, and hepbdt (like a brute-force best-first grower) does not
(audit FD, 2026-12-05)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.engine._types import NEWTON
from hepbdt.engine.grower import grow_tree
from hepbdt.engine.split import SplitParams
from tests.test_leafwise import naive_leafwise

lgb = pytest.importorskip("lightgbm")

LGB_SAME_BINS = dict(max_depth=-1, lambda_l1=0.0, min_data_in_leaf=0, max_bin=255,
                     min_data_in_bin=1, bin_construct_sample_cnt=10**7, num_threads=1,
                     verbose=-1, deterministic=True, force_row_wise=True,
                     feature_pre_filter=False)


def _integers(seed, n=800, m=4, n_values=12, nan=0.0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n, m)).astype(np.float64)
    z = 0.4 * X[:, 0] - 0.3 * X[:, 1] + 0.2 * (X[:, 2] % 3) - 2 + rng.normal(0, 1, n)
    if nan:
        X[rng.random((n, m)) < nan] = np.nan
    return X, z


def _per_tree(model, X):
    """Each tree's contribution to every event's raw score."""
    staged = np.array(list(model.forest_.staged_raw_score(X.astype(np.float32))))
    return np.diff(np.vstack([np.full(len(X), model.forest_.base_score), staged]), axis=0)


def _lightgbm_per_tree(booster, X, base):
    out = np.array([booster.predict(X, start_iteration=t, num_iteration=1, raw_score=True)
                    for t in range(booster.num_trees())])
    out[0] -= base  # LightGBM puts the initial score into the first tree's leaves
    return out


@pytest.mark.parametrize("kind", ["binary", "regression"])
@pytest.mark.parametrize("max_leaves,max_depth", [(2, None), (9, None), (31, None), (12, 3)])
def test_newton_leaf_wise_trees_are_lightgbm_num_leaves_trees(kind, max_leaves, max_depth):
    # reg_lambda 0: every feature of a leaf has a split of gain >= 0, so LightGBM's
    # unsplittable-feature shortcut (below) never applies and the trees must be the same.
    X, z = _integers(1, nan=0.05)
    settings = dict(boosting="newton", n_trees=6, max_depth=max_depth, max_leaves=max_leaves,
                    learning_rate=0.3, reg_lambda=0.0, min_child_weight=1e-3, min_node_size=0.0,
                    quantised_histograms=False, n_jobs=1)
    params = dict(LGB_SAME_BINS, num_leaves=max_leaves, learning_rate=0.3, lambda_l2=0.0,
                  min_sum_hessian_in_leaf=1e-3, objective=kind,
                  max_depth=-1 if max_depth is None else max_depth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "binary":
            y = (z > 0).astype(int)
            model = BDTClassifier(**settings).fit(X, y)
        else:
            y = z
            model = BDTRegressor(**settings, loss="squared").fit(X, y)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=6)
    ours, theirs = _per_tree(model, X), _lightgbm_per_tree(booster, X, model.forest_.base_score)
    for t in range(6):
        f = model.forest_
        leaves = int(np.sum(f.feature[f.tree_slice(t)] < 0))
        assert leaves == booster.dump_model()["tree_info"][t]["num_leaves"]
        np.testing.assert_allclose(ours[t], theirs[t], rtol=0, atol=2e-6)


def test_lightgbm_skips_a_feature_that_hepbdt_and_brute_force_split_on():
    X, z = _integers(0, n=1500)
    y = (z > 0).astype(int)
    codes = np.ascontiguousarray(X.T, dtype=np.uint8)  # feature-major, C order: the fits' layout
    n_value_bins = np.full(X.shape[1], 12, np.int32)
    p = float(np.float32(y.mean()))
    base = np.log(p / (1 - p))
    g = (1 / (1 + np.exp(-base)) - y).astype(np.float32)
    h = np.full(y.size, 1 / (1 + np.exp(-base)) * (1 - 1 / (1 + np.exp(-base))), np.float32)
    w = np.ones(y.size, np.float32)
    tree = grow_tree(codes, np.arange(y.size, dtype=np.int32), g, h, w, n_value_bins,
                     SplitParams(NEWTON, reg_lambda=1.0, min_child_hessian=1e-3), None,
                     max_leaves=31)
    reference = naive_leafwise(codes, g, h, w, n_value_bins,
                               dict(reg_lambda=1.0, reg_alpha=0.0, min_child_hessian=1e-3,
                                    min_child_weight=0.0, min_split_gain=0.0), 31)
    ours = [np.sort(tree.partition[tree.start[k]:tree.stop[k]]) for k in range(tree.n_nodes)
            if tree.feature[k] < 0]
    expected = [rows for k, rows in enumerate(reference[-1]) if reference[0][k] < 0]
    assert sorted(map(tuple, ours)) == sorted(map(tuple, expected))
    booster = lgb.train(dict(LGB_SAME_BINS, objective="binary", num_leaves=31, learning_rate=1.0,
                             lambda_l2=1.0, min_sum_hessian_in_leaf=1e-3),
                        lgb.Dataset(X, y), num_boost_round=1)
    leaf = booster.predict(X, pred_leaf=True).ravel()
    theirs = [tuple(np.flatnonzero(leaf == k)) for k in np.unique(leaf)]
    assert sorted(theirs) != sorted(map(tuple, expected))  # LightGBM's shortcut, not ours
