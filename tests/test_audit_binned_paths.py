"""Binned paths against float paths: a BinnedMatrix made from floats, and every prediction on
one, must give the float path's numbers or refuse what the float path refuses.

References: the float path (``check_X``'s refusals, predictions on the float features) and
``np.searchsorted`` for the codes.
"""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.binned import MISSING_CODE, BinnedMatrix
from hepbdt.io.dataset import FeatureMatrix


def _data(n=600, m=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    return X, y


def _named(values, names):
    out = np.ascontiguousarray(values, dtype=np.float32).view(FeatureMatrix)
    out.feature_names = tuple(names)
    return out


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e39])
def test_from_features_refuses_what_the_float_path_refuses(bad):
    X, y = _data()
    model = BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    Xb = X[:4].astype(np.float64)
    Xb[1, 2] = bad
    with pytest.raises(ValueError) as float_error:
        model.decision_function(Xb)
    # before: +-inf and 1e39 (inf in float32) were put in the first or last bin and scored
    with pytest.raises(ValueError) as binned_error:
        BinnedMatrix.from_features(Xb, model.bin_edges_)
    assert str(binned_error.value) == str(float_error.value)
    # the finite values are binned as before: code = number of edges <= x, 255 for NaN
    Xn = X[:50].copy()
    Xn[3, 0] = np.nan
    codes = BinnedMatrix.from_features(Xn, model.bin_edges_).codes
    for f, e in enumerate(model.bin_edges_):
        want = np.searchsorted(e, Xn[:, f], side="right")
        want[np.isnan(Xn[:, f])] = MISSING_CODE
        np.testing.assert_array_equal(codes[:, f], want)


def test_from_features_keeps_the_column_names():
    X, y = _data()
    model = BDTClassifier(n_trees=3, max_depth=2).fit(_named(X, "abc"), y)
    swapped = _named(X[:40, ::-1], "cba")  # the same events, columns named in another order
    binned = BinnedMatrix.from_features(swapped, model.bin_edges_[::-1])
    assert binned.feature_names == ("c", "b", "a")
    np.testing.assert_array_equal(model.decision_function(binned),
                                  model.decision_function(X[:40]))
    assert BinnedMatrix.from_features(np.empty((0, 3), np.float32), model.bin_edges_).shape == (0, 3)


def test_a_model_other_than_hepbdts_is_not_given_bin_codes():
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    from hepbdt.evaluation import learning_curve, permutation_importance

    X, y = _data()
    edges = BDTClassifier(n_trees=2, max_depth=2).fit(X, y).bin_edges_
    binned = BinnedMatrix.from_features(X, edges)
    foreign = LogisticRegression().fit(X, y)
    # the reference: what the model gives on the events' values, which a BinnedMatrix lacks
    assert not np.array_equal(foreign.decision_function(np.asarray(binned)),
                              foreign.decision_function(X))
    # before: the ranking scored each value at its bin's lower edge (0.2769 for 0.2792)
    with pytest.raises(ValueError, match="not hepbdt's"):
        permutation_importance(foreign, binned, y, n_repeats=2)
    staged = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="not hepbdt's"):
        learning_curve(staged, (binned[:300], y[:300]), (binned[300:], y[300:]))
    # a hepbdt model trained on these bins still takes them, and ranks as on the floats
    model = BDTClassifier(n_trees=3, max_depth=2).fit(binned, y)
    np.testing.assert_array_equal(
        permutation_importance(model, binned, y, n_repeats=2).importances,
        permutation_importance(model, X, y, n_repeats=2).importances)
