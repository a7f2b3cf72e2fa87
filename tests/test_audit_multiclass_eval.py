"""Audit of multi-class evaluation and SAMME against scikit-learn and brute force: the
boost-weighted ranking of SAMME trees, refused inputs (a learning rate that is not
positive, class names not one a column, infinite or non-numeric labels and scores)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import AdaBoostClassifier
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeClassifier

import hepbdt
import hepbdt.estimators as estimators_module
from hepbdt.evaluation import (
    confusion_matrix,
    multiclass_overtraining_test,
    one_vs_rest_auc,
    tmva_importance,
)
from hepbdt.evaluation.multiclass import class_mix_weights


def _samme_data(seed: int, n: int, k: int):
    """Integer-valued features (hepbdt's bins and scikit-learn's cuts part them alike)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, 5)).astype(np.float32)
    y = ((X[:, 0] > 15).astype(int) + (X[:, 1] > 20) + 2 * (X[:, 2] > 25)
         + (rng.random(n) < 0.3)) % k
    return X, y, rng.uniform(0.5, 2.0, n)


def _sklearn_gains(tree: DecisionTreeClassifier, n_features: int) -> np.ndarray:
    """Per feature, the summed W_parent I_parent - W_left I_left - W_right I_right of a tree."""
    t = tree.tree_
    w, imp = t.weighted_n_node_samples, t.impurity
    out = np.zeros(n_features)
    for node in np.flatnonzero(t.children_left >= 0):
        left, right = t.children_left[node], t.children_right[node]
        out[t.feature[node]] += w[node] * imp[node] - w[left] * imp[left] - w[right] * imp[right]
    return out


@pytest.mark.parametrize(("k", "depth"), [(3, 2), (5, 3)])
def test_samme_ranking_weighs_each_tree_by_its_alpha_as_sklearn_trees(k, depth):
    # The TMVA ranking sums each tree's split gains times its boost weight. SAMME trees were
    # stored with weight 1 (alpha folded into the leaves): every tree counted alike.
    X, y, w = _samme_data(k, 3000, k)
    labels = np.array([10, 30, 20, 70, 50])[:k]
    ours = hepbdt.BDTClassifier(boosting="adaboost", n_trees=12, max_depth=depth, beta=0.5,
                                min_node_size=0, negative_weights="keep").fit(X, labels[y], w)
    theirs = AdaBoostClassifier(DecisionTreeClassifier(max_depth=depth), n_estimators=12,
                                learning_rate=0.5, random_state=0).fit(X, labels[y], w)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
    alphas = theirs.estimator_weights_
    assert np.ptp(alphas) > 0.05  # trees of different weights: the weighting shows
    gains = sum(a * _sklearn_gains(t, X.shape[1]) for a, t in zip(alphas, theirs.estimators_,
                                                                  strict=True))
    np.testing.assert_allclose(tmva_importance(ours).importance, gains / gains.sum(),
                               rtol=1e-5, atol=1e-9)


def test_samme_refuses_a_learning_rate_that_is_not_positive(monkeypatch):
    # beta = 0 made every alpha 0: uniform probabilities 1/K for every event, no error.
    real = estimators_module.run_samme

    def with_beta(beta):
        def run(*args, **kwargs):
            return real(*args, **{**kwargs, "beta": beta})
        return run

    X, y, w = _samme_data(1, 600, 3)
    for beta in (0.0, -0.5, float("nan")):
        monkeypatch.setattr(estimators_module, "run_samme", with_beta(beta))
        with pytest.raises(ValueError, match="beta .*finite number > 0"):
            hepbdt.BDTClassifier(boosting="adaboost", n_trees=3, max_depth=2).fit(X, y, w)


def _probabilities(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + np.eye(k)[y]
    return y, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), rng.uniform(0.5, 2, n)


@pytest.mark.parametrize("names", [["a", "b"], ["a", "b", "c", "d", "e"]])
def test_overtraining_refuses_class_names_that_are_not_one_a_column(names):
    # Two or five names for four classes were taken: results labelled with the wrong names.
    y, p, w = _probabilities(400, 4, 0)
    with pytest.raises(ValueError, match="class names for 4 columns"):
        multiclass_overtraining_test(p, y, w, p, y, w, classes=names)
    with pytest.raises(ValueError, match="class names for 4 columns"):
        confusion_matrix(y, p, w, classes=names)


def test_class_mix_weights_equal_the_reference_mix_and_refuse_bad_input():
    y, _, w = _probabilities(500, 4, 1)
    y_ref, _, w_ref = _probabilities(300, 4, 2)
    w_ref = w_ref * np.array([5.0, 1.0, 0.2, 3.0])[y_ref]
    mixed = class_mix_weights(y, w, y_ref, w_ref)
    np.testing.assert_allclose(np.bincount(y, mixed) / mixed.sum(),
                               np.bincount(y_ref, w_ref) / w_ref.sum(), rtol=1e-12)
    assert mixed.sum() == pytest.approx(w.sum(), rel=1e-12)
    # the weighted AUC of the mixed sample is scikit-learn's with those weights
    _, p, _ = _probabilities(500, 4, 1)
    np.testing.assert_allclose(one_vs_rest_auc(y, p, mixed),
                               roc_auc_score(y, p, multi_class="ovr", average=None,
                                             sample_weight=mixed), atol=1e-12)
    # an infinite label was cast to a negative integer ("no negative elements" from numpy)
    with pytest.raises(ValueError, match="y must be a 1-d array of class indices.*inf"):
        class_mix_weights([0.0, 1.0, np.inf], [1.0, 1.0, 1.0], [0, 1], [1.0, 1.0])
    with pytest.raises(ValueError, match="^w has 2 entries, expected 3"):
        class_mix_weights([0, 1, 2], [1.0, 1.0], [0, 1], [1.0, 1.0])


def test_non_numeric_probabilities_are_refused_by_name():
    with pytest.raises(ValueError, match="proba must be numbers"):
        one_vs_rest_auc([0, 1, 2], [["a", "b", "c"]] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="train_proba must be numbers"):
            multiclass_overtraining_test([[0.2, 0.8], [0.5]], [0, 1], None,
                                         np.eye(2), [0, 1], None)
