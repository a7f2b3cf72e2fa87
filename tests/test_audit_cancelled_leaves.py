"""Leaves whose signed weights cancel (the regression and multi-class audits, 2026-12-02):
with negative weights kept, a leaf's step is its net gradient over its net hessian, and a
leaf whose positive and negative weights nearly cancel took steps without bound (regression
scores of 1e40, then NaN; classifier scores of -3.7e10), silently. Such a leaf now gets no
step, as one of net hessian <= 0 did; a fit whose scores overflow anyway is refused.
References: leaf values computed by hand with numpy from each leaf's events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.boosting._loop import CANCELLED_LEAF


def _one_split_data():
    # feature 0 < 0: weights +1 and -0.98 (net 2 % of |w|), target 10; >= 0: weights 1, target 1
    n = 400
    x = np.r_[np.full(n, -1.0), np.full(n, 1.0)]
    X = np.c_[x, np.zeros(2 * n)]
    w = np.r_[np.where(np.arange(n) % 2 == 0, 1.0, -0.98), np.ones(n)]
    y = np.r_[np.full(n, 10.0), np.ones(n)] + np.r_[np.linspace(-1, 1, n), np.zeros(n)]
    return X, y, w


@pytest.mark.parametrize("boosting, params", [("gradient", {}), ("newton", {"reg_lambda": 0.0})])
def test_a_cancelled_leaf_takes_no_step(boosting, params):
    X, y, w = _one_split_data()
    model = BDTRegressor(boosting=boosting, n_trees=1, max_depth=1, learning_rate=1.0,
                         negative_weights="keep", n_cuts=0, **params).fit(X, y, w)
    base = model.forest_.base_score
    left, right = model.predict(np.array([[-1.0, 0.0], [1.0, 0.0]])) - base
    cancelled = X[:, 0] < 0
    net, absolute = w[cancelled].sum(), np.abs(w[cancelled]).sum()
    assert net <= CANCELLED_LEAF * absolute  # the left leaf's weights cancel
    assert left == 0.0
    # the right leaf: the weighted mean residual, by hand
    assert right == pytest.approx(np.sum(w[~cancelled] * (y[~cancelled] - base)) / w[~cancelled].sum(),
                                  rel=1e-6)


def test_without_negative_weights_nothing_changes():
    X, y, w = _one_split_data()
    w = np.abs(w)
    model = BDTRegressor(n_trees=1, max_depth=1, learning_rate=1.0, n_cuts=0).fit(X, y, w)
    base = model.forest_.base_score
    left = model.predict(np.array([[-1.0, 0.0]]))[0] - base
    mine = X[:, 0] < 0
    assert left == pytest.approx(np.sum(w[mine] * (y[mine] - base)) / w[mine].sum(), rel=1e-6)


def test_signed_regression_stays_within_its_targets():
    # the audit's case: TMVA-like smooth target, 7.7 % of the weights negative (net positive)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, size=(10000, 2))
    y = 20 * X[:, 0] + 10 * X[:, 1] ** 2 + rng.normal(size=10000)
    w = np.where(X[:, 0] < 2.5, X[:, 1] - 0.7, 1.0)
    for loss in ("squared", "huber"):
        model = BDTRegressor(loss=loss, n_trees=30, max_depth=3, learning_rate=0.3, random_state=0,
                             negative_weights="keep").fit(X, y, w)
        p = model.predict(X)
        assert np.all(np.isfinite(p)) and p.min() > y.min() - 50 and p.max() < y.max() + 50


def test_signed_classifier_scores_stay_bounded():
    # the multi-class audit's case: raw scores reached -609.8 after 12 rounds at learning
    # rate 0.1, where newton's stay within [-2.8, 0.66]
    rng = np.random.default_rng(5)
    n = 6000
    y = rng.choice([10, -1, 2], n)
    X = rng.normal(size=(n, 3)) + np.searchsorted([-1, 2, 10], y)[:, None] * 0.4
    w = rng.uniform(0.5, 2, n)
    w[rng.random(n) < 0.2] *= -1
    model = BDTClassifier(n_trees=12, max_depth=2, negative_weights="keep",
                          random_state=1).fit(X, y, w)
    assert np.abs(model.decision_function(X)).max() < 3


def test_a_fit_whose_scores_overflow_is_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 2))
    y = 3 * X[:, 0] + rng.normal(size=500)
    with pytest.raises(ValueError, match="training diverged: .* after tree 41"):
        BDTRegressor(n_trees=100, learning_rate=10, max_depth=1).fit(X, y)


def _flipped_sample(n=6000, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + y[:, None] * 0.8
    w = rng.uniform(0.5, 2, n)
    w[rng.random(n) < 0.15] *= -1  # the net sample is the same density at 70 % of the weight
    return X, y, w


def test_a_signed_loss_that_runs_away_is_refused():
    # the combinations audit: leaves above the 5 % rule still fit the negative events'
    # fluctuations; 81 trees took the signed log-loss from 0.667 to -5.8e4
    X, y, w = _flipped_sample()
    with pytest.raises(ValueError, match=r"training diverged: the signed loss .* fell to -"):
        BDTClassifier(n_trees=150, max_depth=3, negative_weights="keep",
                      random_state=1).fit(X, y, w)
    # the held-out loss of n_trees="auto" stops the same fit in time
    model = BDTClassifier(max_depth=3, negative_weights="keep", random_state=1).fit(X, y, w)
    assert model.train_loss_.min() > 0 and np.abs(model.decision_function(X)).max() < 5


def test_a_regression_whose_signed_loss_runs_away_is_refused():
    # the audit's regression: the demo's backgrounds, 5 % negative genWeight, true_mass of
    # 0.8-3926 GeV predicted up to 2.3e10 GeV after 300 trees, training MSE -2.2e16
    import awkward as ak
    import uproot

    data = Path(__file__).resolve().parents[1] / "data"
    X, y, w = [], [], []
    for name in ("background_qcd", "background_ttbar"):
        a = uproot.open(data / f"{name}.root")["Events"].arrays(
            ["HT", "MET_pt", "Jet_pt", "Jet_btag", "nJet", "genWeight", "true_mass"])
        a = a[a.nJet >= 2]
        X.append(np.column_stack([ak.to_numpy(a.HT), ak.to_numpy(a.MET_pt),
                                  ak.to_numpy(a.Jet_pt[:, 0]), ak.to_numpy(a.Jet_pt[:, 1]),
                                  ak.to_numpy(a.Jet_btag[:, 0])]).astype(np.float32))
        y.append(ak.to_numpy(a.true_mass).astype(np.float64))
        w.append(ak.to_numpy(a.genWeight).astype(np.float64))
    X, y, w = map(np.concatenate, (X, y, w))
    with pytest.raises(ValueError, match="training diverged"):
        BDTRegressor(n_trees=300, max_depth=3, random_state=1,
                     negative_weights="keep").fit(X, y, w)


@pytest.mark.parametrize("positive, negative", [(21.0, 19.0), (1055.5, 954.5)])
def test_the_cancelled_leaf_rule_at_its_threshold(positive, negative):
    """A leaf whose net weight is exactly 5 % of its |w| (2 of 40) takes no step; one at
    5.02 % (101 of 2010) takes the weighted mean residual of its events, by hand."""
    n = 400
    X = np.c_[np.r_[np.full(n, -1.0), np.full(n, 1.0)], np.zeros(2 * n)]
    w = np.r_[np.where(np.arange(n) % 2 == 0, positive, -negative), np.ones(n)]
    y = np.r_[np.full(n, 10.0), np.ones(n)] + np.r_[np.linspace(-1, 1, n), np.zeros(n)]
    model = BDTRegressor(n_trees=1, max_depth=1, learning_rate=1.0, negative_weights="keep",
                         n_cuts=0).fit(X, y, w)
    base = model.forest_.base_score
    left = model.predict(np.array([[-1.0, 0.0]]))[0] - base
    mine = X[:, 0] < 0
    ratio = (positive - negative) / (positive + negative)
    if ratio <= 0.05:
        assert left == 0.0
    else:
        assert left == pytest.approx(np.sum(w[mine] * (y[mine] - base)) / w[mine].sum(), rel=1e-6)
