"""The subsampling audit's findings: UseNvars draws from all the variables (with a tree or
level fraction it drew fewer than asked), and ``min_node_size="auto"`` counts 20 events of
each tree's sample (with row subsampling it allowed leaves of 20 x subsample events)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.estimators import ParameterError


@pytest.mark.parametrize("option", [{"colsample_bytree": 0.5}, {"colsample_bylevel": 0.5}])
def test_use_nvars_with_a_tree_or_level_fraction_is_refused(option):
    X = np.random.default_rng(0).normal(size=(200, 10)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ParameterError, match="n_vars_per_node=2 draws its variables from all"):
        BDTClassifier(n_vars_per_node=2, n_trees=2, **option).fit(X, y)


@pytest.mark.parametrize("boosting", ["gradient", "adaboost"])
def test_use_nvars_of_every_feature_warns_and_randomises_nothing(boosting):
    # TMVA's node loop would draw forever; hepbdt drew every variable without a word
    from hepbdt.estimators import IdleOptionWarning

    X = np.random.default_rng(1).normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    options = dict(boosting=boosting, n_trees=5, max_depth=3, random_state=4)
    plain = BDTClassifier(**options).fit(X, y)
    for nvars in (5, 9):
        with pytest.warns(IdleOptionWarning, match=f"n_vars_per_node={nvars} draws every one "
                          "of the 5 features"):
            every = BDTClassifier(n_vars_per_node=nvars, **options).fit(X, y)
        np.testing.assert_array_equal(every.decision_function(X), plain.decision_function(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        fewer = BDTClassifier(n_vars_per_node=4, **options).fit(X, y)
    assert not np.array_equal(fewer.decision_function(X), plain.decision_function(X))


def _smallest_leaf_weights(model, X, y):
    """Each tree's smallest leaf weight of its sample (the forest's leaf covers: the tree's
    own weights, a Poisson event counted with its copies), whichever way it grew."""
    forest = model.fit(X, y).forest_
    leaf = forest.feature < 0
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.tree_offsets))
    return np.array([forest.cover[leaf & (tree_of == t)].min() for t in range(forest.n_trees)])


@pytest.mark.parametrize("mode", ["uniform", "poisson"])
@pytest.mark.parametrize("estimator", [BDTClassifier, BDTRegressor])
def test_auto_node_size_counts_events_of_each_trees_sample(estimator, mode):
    rng = np.random.default_rng(1)
    n = 12_000
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = X[:, 0] + rng.normal(size=n)
    if estimator is BDTClassifier:
        y = (y > 0).astype(int)
    model = estimator(max_depth=12, random_state=0, subsample=0.3, subsample_mode=mode,
                      quantised_histograms=False)
    smallest = _smallest_leaf_weights(model, X, y)  # unit weights: events
    assert smallest.size > 5
    # each leaf holds at least 20 drawn events (a Poisson event counts its copies), and the
    # floor binds: the deepest trees reach it
    assert smallest.min() >= 20 - 1e-3
    assert smallest.min() < 25


def _weighted_draw_data(classes: int):
    rng = np.random.default_rng(7)
    n = 3000
    y = rng.integers(0, classes, n)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 0] += 0.6 * y
    w = rng.lognormal(0, 0.3, n)  # distinct weights, none tied
    w[rng.random(n) < 0.15] *= -1
    return X, y, w


@pytest.mark.parametrize("boosting,policy,classes", [
    ("adaboost", "keep", 2), ("adaboost", "inverse_boost", 2), ("realadaboost", "keep", 2),
    ("realadaboost", "inverse_boost", 2), ("eps", "inverse_boost", 2),
    ("adaboost", "inverse_boost", 3)])
def test_a_weighted_draw_does_not_depend_on_the_weights_scale(boosting, policy, classes):
    """The weighted draw's events weighed count x the mean |w|, rounded to float32 an
    event at a time: sums of equal counts came out a float32 step apart at one scale and
    equal at another, so a leaf of equal signal and background, or a split of no gain,
    went one way or the other with the weights' unit (scores moved by up to 0.23 at x 0.3
    or x 1e6). The AdaBoost family is scale-invariant: the scores must not move."""
    X, y, w = _weighted_draw_data(classes)
    if policy == "keep":
        w = np.abs(w)
    options = dict(n_trees=15, max_depth=3, random_state=0, boosting=boosting, subsample=0.5,
                   subsample_mode="weighted", negative_weights=policy,
                   sig_to_bkg_fraction=None)
    reference = BDTClassifier(**options).fit(X, y, w).predict_proba(X)
    for scale in (0.3, 1e6, 2.0**-5):
        scaled = BDTClassifier(**options).fit(X, y, w * scale).predict_proba(X)
        np.testing.assert_allclose(scaled, reference, rtol=0, atol=1e-6)
