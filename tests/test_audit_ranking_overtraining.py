"""Audit of the rankings, the overtraining tests and the multi-class evaluation against
independent references: each test fails on a number that used to be silently wrong."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import ks_2samp

from hepbdt.evaluation import (
    permutation_importance,
    tmva_importance,
    weighted_correlation,
    weighted_ks_2samp,
)
from hepbdt.evaluation.multiclass import per_class_permutation_importance
from hepbdt.evaluation.ranking import weighted_correlations


class _Linear:
    """A scorer of fixed coefficients: a classifier (decision_function, predict_proba of
    K classes) or a regressor (predict)."""

    def __init__(self, coef, kind="classifier", n_classes=2):
        self.coef = np.asarray(coef, dtype=np.float64)
        self._estimator_type = kind
        self.n_classes = n_classes

    def decision_function(self, X):
        return np.asarray(X, dtype=np.float64) @ self.coef

    def predict(self, X):
        return self.decision_function(X)

    def predict_proba(self, X):
        s = self.decision_function(X)[:, None] * np.arange(self.n_classes)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _sample(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(0, 1, n) > 0).astype(int)
    return X, y, rng


def test_labels_or_weights_of_other_events_are_refused_before_subsampling():
    # Before: y (or w) longer than X was indexed by the drawn subset and silently paired
    # the events with other events' labels.
    X, y, _ = _sample()
    model = _Linear([1.0, 0.0, 0.0])
    longer_y = np.concatenate([y, y[:100]])
    with pytest.raises(ValueError, match="y has shape"):
        permutation_importance(model, X, longer_y, n_repeats=1, max_samples=50)
    with pytest.raises(ValueError, match="600 entries, expected 400"):
        permutation_importance(model, X, y, np.ones(600), n_repeats=1, max_samples=50)
    with pytest.raises(ValueError, match="y has shape"):
        per_class_permutation_importance(_Linear([1.0, 0, 0], n_classes=3), X,
                                         np.concatenate([y, y[:100]]), n_repeats=1,
                                         max_samples=50)


def test_regression_permutation_importance_refuses_what_makes_its_mse_meaningless():
    X, _, rng = _sample()
    target = 2.0 * X[:, 0] + rng.normal(0, 0.3, X.shape[0])
    model = _Linear([2.0, 0.0, 0.0], kind="regressor")
    cancelling = rng.normal(size=X.shape[0])
    cancelling -= cancelling.mean()  # sums to ~1e-14: the MSE was ~1e15, silently
    with pytest.raises(ValueError, match="positive total weight"):
        permutation_importance(model, X, target, cancelling, n_repeats=1)
    with pytest.raises(ValueError, match="y has shape"):  # broadcast: all importances 0
        permutation_importance(model, X, target[:1], n_repeats=1)
    bad = target.copy()
    bad[3] = np.nan  # all importances NaN
    with pytest.raises(ValueError, match="NaN or infinite targets"):
        permutation_importance(model, X, bad, n_repeats=1)
    ok = permutation_importance(model, X, target, n_repeats=2)
    assert ok.importances_mean[0] > 1 and np.all(ok.importances_mean[1:] == 0)


def test_feature_names_of_the_wrong_length_are_refused():
    X, y, _ = _sample()
    with pytest.raises(ValueError, match="1 feature names for the 3 columns"):
        permutation_importance(_Linear([1.0, 0, 0]), X, y, n_repeats=1, feature_names=["a"])
    with pytest.raises(ValueError, match="1 feature names for the 3 columns"):
        per_class_permutation_importance(_Linear([1.0, 0, 0], n_classes=3), X,
                                         np.minimum(y + (X[:, 1] > 0), 2), n_repeats=1,
                                         feature_names=["a"])


def _forest(gains):
    # one tree: root on feature 0, its left child on feature 1, three leaves
    return SimpleNamespace(feature=np.array([0, 1, -1, -1, -1], np.int32),
                           gain=np.array(gains, dtype=np.float64), cover=np.ones(5),
                           tree_offsets=np.array([0, 5]), tree_weights=np.array([1.0]),
                           n_features=3)


def test_split_gains_that_cannot_be_normalised_are_refused():
    # Before: gains (1, -3) were divided by their sum -2, ranking the feature of the
    # negative gain first with importance +1.5; an infinite gain gave NaN importances.
    with pytest.raises(ValueError, match="summed importance of -2"):
        tmva_importance(_forest([1.0, -3.0, 0, 0, 0]))
    with pytest.raises(ValueError, match="split gains must be finite"):
        tmva_importance(_forest([np.inf, 1.0, 0, 0, 0]))
    with pytest.raises(ValueError, match="all zero"):
        tmva_importance(_forest([0.0, 0.0, 0, 0, 0]), quadrature=True)
    ranking = tmva_importance(_forest([3.0, 1.0, 0, 0, 0]))
    np.testing.assert_allclose(ranking.importance, [0.75, 0.25, 0.0])


def test_correlation_of_a_column_without_spread_or_of_negative_variance_is_nan():
    # Before: the negative weighted variance (signed weights) was clipped to 0 and the
    # correlation -inf clipped to exactly -1; two constant columns, whose centred values are
    # rounding errors of their means, had correlation 1.
    X = np.array([[0, 0], [1, 1], [2, 3]], dtype=np.float32)
    corr = weighted_correlation(X, [-1.0, 3.0, -1.0])  # variances -2 and -6
    assert np.isnan(corr[0, 1]) and np.all(np.diag(corr) == 1)
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.normal(size=100), np.full(100, 0.3), np.full(100, 0.7)])
    corr = weighted_correlation(X.astype(np.float32), rng.uniform(0.5, 2.0, 100))
    off_diagonal = ~np.eye(3, dtype=bool)
    assert np.all(np.isnan(corr[off_diagonal]))


def test_correlation_groups_outside_their_range_are_refused():
    # Before: events of group 2 with n_groups=2 were silently left out, and 0.7 was group 0.
    X = np.random.default_rng(6).normal(size=(100, 2))
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        weighted_correlations(X, None, np.repeat([0, 1, 2, 1], 25), 2)
    with pytest.raises(ValueError, match=r"integers in \[0, 1\)"):
        weighted_correlations(X, None, np.full(100, 0.7))


@pytest.mark.parametrize(("n1", "n2"), [(1, 36), (1, 2), (4, 1)])
def test_ks_of_one_event_against_several_is_scipys(n1, n2):
    # Before: NaN ("undetermined") whenever n1 n2 / (n1 + n2) < 1, where scipy's asymptotic
    # p-value (which the docstring says is reproduced) uses round() of it: 1.
    rng = np.random.default_rng(n1 * 100 + n2)
    a, b = rng.normal(size=n1), rng.normal(size=n2)
    ours = weighted_ks_2samp(a, b)
    ref = ks_2samp(a, b, method="asymp")
    assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    # a single weighted event is one effective event, whatever its weight
    weighted = weighted_ks_2samp(a, b, np.full(n1, 0.3), None)
    assert weighted.pvalue == pytest.approx(ours.pvalue, abs=1e-12)


def test_ks_below_one_event_a_side_still_has_no_pvalue():
    assert np.isnan(weighted_ks_2samp([0.1], [0.4]).pvalue)  # round(1/2) = 0 events
    assert np.isnan(weighted_ks_2samp([0.1, 0.2], [0.4, 0.5, 0.6], [1.0, -0.5]).pvalue)
