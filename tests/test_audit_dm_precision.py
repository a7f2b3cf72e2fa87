"""Audit DM (2026-12-05): precision at scale, in event counts and in the weights' range.

Each test compares with an independent reference (numpy in float64 on unit weights, or
an exact computation), never with hepbdt's own earlier output.
"""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt.evaluation import weighted_correlation


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e-170, 1e170])
def test_weighted_correlation_does_not_depend_on_the_weights_scale(scale):
    # Only the weights' ratios matter to a correlation; every other weighted measure scales
    # its weights by a power of two first. Here weights of 1e300 overflowed the sums of
    # w x^2 (0.0 was returned for a correlation of 0.73), and weights of 1e-170 made the
    # product of the two variances underflow to 0 (1.0 returned: inf, clipped).
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 3))
    X[:, 1] += X[:, 0]
    X[::7, 2] = np.nan  # a column with missing values: its pairs' own sums
    reference = np.corrcoef(X[:, :2].T)[0, 1]
    present = ~np.isnan(X[:, 2])
    reference_missing = np.corrcoef(X[present][:, [0, 2]].T)[0, 1]
    got = weighted_correlation(X, np.full(1000, scale))
    assert got[0, 1] == pytest.approx(reference, rel=1e-12)
    assert got[0, 2] == pytest.approx(reference_missing, rel=1e-9, abs=1e-12)


def test_weighted_correlation_of_tiny_and_huge_values():
    # The two variances' product under- or overflowed for columns of values near 1e-140 or
    # 1e140 (float64 input), though each variance and the covariance were fine.
    rng = np.random.default_rng(2)
    x = rng.normal(size=500)
    z = x + rng.normal(size=500)
    reference = np.corrcoef(x, z)[0, 1]
    for factor in (1e-140, 1e140):
        got = weighted_correlation(np.column_stack([x * factor, z * factor]))
        assert got[0, 1] == pytest.approx(reference, rel=1e-12)


def test_scores_and_permutation_importance_do_not_depend_on_the_weights_scale():
    # Weights of 1e306 (only their ratios matter) summed to inf: R^2 came out 1.0 (0.986
    # by scikit-learn), the accuracy NaN and the permutation baseline MSE 0.0.
    from sklearn.metrics import accuracy_score, r2_score

    from hepbdt import BDTClassifier, BDTRegressor
    from hepbdt.evaluation import permutation_importance

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    labels = (y > 0).astype(int)
    w = np.full(400, 1e306)
    reg = BDTRegressor(n_trees=20, max_depth=2).fit(X, y)
    assert reg.score(X, y, w) == pytest.approx(r2_score(y, reg.predict(X)), rel=1e-12)
    clf = BDTClassifier(n_trees=5, max_depth=2).fit(X, labels)
    assert clf.score(X, labels, w) == pytest.approx(accuracy_score(labels, clf.predict(X)),
                                                    rel=1e-12)
    ranking = permutation_importance(reg, X, y, w, n_repeats=2)
    assert ranking.baseline == pytest.approx(np.mean((reg.predict(X) - y) ** 2), rel=1e-12)
    assert np.all(np.isfinite(ranking.importances))


def test_classifier_weights_whose_sum_overflows_are_refused_by_their_range():
    """Weights of 1e305 sum to inf: the refusal named the classes' sums ("signal inf,
    background inf"), as if they were not positive; it names the float32 range, as a
    regressor's does."""
    from hepbdt import BDTClassifier

    X = np.random.default_rng(0).normal(size=(4000, 2))
    y = np.arange(4000) % 2  # 2,000 weights of 1e305 a class: above float64's 1.8e308
    with pytest.raises(ValueError, match=r"outside 1e-30 to 1e\+30 in magnitude \(the first "
                                         r"is 1e\+305\)"):
        BDTClassifier(n_trees=2).fit(X, y, np.full(4000, 1e305))
