"""The newton booster reproduces XGBoost on integer-valued features (same candidate cuts)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hepbdt

xgb = pytest.importorskip("xgboost")


def _data(seed=0, n=3000, m=5):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n, m)).astype(np.float32)
    logit = 0.6 * (X[:, 0] - 5.5) - 0.4 * np.abs(X[:, 1] - 6) + 0.3 * X[:, 2] * (X[:, 3] > 6) - 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-0.5 * logit))).astype(int)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return X, y, w


PARAMS = dict(max_depth=3, learning_rate=0.3, reg_lambda=1.5, min_child_weight=2.0)


def _fit_both(X, y, w, n_trees, gamma, **extra):
    ours = hepbdt.BDTClassifier(boosting="newton", n_trees=n_trees, min_split_gain=gamma,
                                **PARAMS, **extra).fit(X, y, sample_weight=w)
    p0 = float(np.sum(w[y == 1], dtype=np.float64) / np.sum(w, dtype=np.float64))
    theirs = xgb.XGBClassifier(tree_method="hist", n_estimators=n_trees, max_bin=256,
                               base_score=p0, gamma=gamma, n_jobs=1, **PARAMS)
    theirs.fit(X, y, sample_weight=w)
    return ours, theirs


def _compare_tree(forest, node, xnode, values):
    """Same structure (same integer values on each side), leaf values within 1e-5."""
    if "leaf" in xnode:
        assert forest.feature[node] == -1
        assert forest.value[node] == pytest.approx(xnode["leaf"], abs=1e-5)
        return 1
    assert forest.feature[node] == int(xnode["split"][1:])
    ours_left = values < forest.threshold[node]
    theirs_left = values < xnode["split_condition"]
    assert np.array_equal(ours_left, theirs_left)
    children = {c["nodeid"]: c for c in xnode["children"]}
    return (_compare_tree(forest, forest.left[node], children[xnode["yes"]], values)
            + _compare_tree(forest, forest.right[node], children[xnode["no"]], values))


@pytest.mark.parametrize("quantised", [False, True])
@pytest.mark.parametrize("gamma", [0.0, 2.0])
def test_first_tree_and_scores_match_xgboost(gamma, quantised):
    X, y, w = _data()
    ours, theirs = _fit_both(X, y, w, 20, gamma, quantised_histograms=quantised)
    dumps = theirs.get_booster().get_dump(dump_format="json")
    values = np.arange(12, dtype=np.float32)
    leaves = _compare_tree(ours.forest_, 0, json.loads(dumps[0]), values)
    assert leaves >= 4
    if gamma > 0:  # gamma prunes: fewer nodes than without it
        assert ours.forest_.n_nodes < _fit_both(X, y, w, 20, 0.0)[0].forest_.n_nodes
    margin = theirs.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(ours.decision_function(X), margin, atol=1e-4)


def test_regression_matches_xgboost_squared_error():
    X, _, w = _data(seed=1)
    target = (X[:, 0] * 1.5 - X[:, 1] + 0.2 * X[:, 2] * X[:, 3]).astype(np.float64)
    ours = hepbdt.BDTRegressor(boosting="newton", n_trees=20, **PARAMS).fit(X, target, sample_weight=w)
    base = float(np.average(target, weights=w))
    theirs = xgb.XGBRegressor(tree_method="hist", n_estimators=20, max_bin=256, base_score=base,
                              n_jobs=1, **PARAMS).fit(X, target, sample_weight=w)
    margin = theirs.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(ours.predict(X), margin, atol=1e-4 * np.abs(target).max())


@pytest.mark.parametrize("quantised", [False, True])
@pytest.mark.parametrize("max_leaves,max_depth", [(8, None), (31, None), (12, 4)])
def test_leaf_wise_trees_match_xgboost_lossguide(max_leaves, max_depth, quantised):
    """grow_policy="lossguide": the same trees, split for split, and the same scores."""
    X, y, w = _data()
    params = dict(learning_rate=0.3, reg_lambda=1.5, min_child_weight=2.0)
    ours = hepbdt.BDTClassifier(boosting="newton", n_trees=20, max_depth=max_depth,
                                max_leaves=max_leaves, quantised_histograms=quantised,
                                **params).fit(X, y, sample_weight=w)
    p0 = float(np.sum(w[y == 1], dtype=np.float64) / np.sum(w, dtype=np.float64))
    theirs = xgb.XGBClassifier(tree_method="hist", grow_policy="lossguide", max_leaves=max_leaves,
                               max_depth=max_depth or 0, n_estimators=20, max_bin=256,
                               base_score=p0, n_jobs=1, **params).fit(X, y, sample_weight=w)
    dumps = theirs.get_booster().get_dump(dump_format="json")
    values = np.arange(12, dtype=np.float32)
    forest = ours.forest_
    for t in range(forest.n_trees):
        leaves = _compare_tree(forest, forest.tree_offsets[t], json.loads(dumps[t]), values)
        assert leaves == max_leaves or t > 0
    margin = theirs.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(ours.decision_function(X), margin, atol=1e-4)


def test_a_child_of_exactly_min_child_weight_hessian_is_a_valid_split():
    # XGBoost keeps a child whose hessian sum equals min_child_weight (it refuses only
    # less): squared error, unit weights, 3 | 3 events at min_child_weight=3.
    X = np.arange(6, dtype=np.float32).reshape(-1, 1)
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    settings = dict(n_estimators=1, max_depth=1, learning_rate=1.0, reg_lambda=0.0,
                    min_child_weight=3.0)
    theirs = xgb.XGBRegressor(tree_method="exact", base_score=0.5, n_jobs=1, **settings).fit(X, y)
    ours = hepbdt.BDTRegressor(boosting="newton", n_trees=1, max_depth=1, learning_rate=1.0,
                               reg_lambda=0.0, min_child_weight=3.0, min_node_size=0.0).fit(X, y)
    np.testing.assert_allclose(theirs.predict(X), y, atol=1e-6)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-6)
