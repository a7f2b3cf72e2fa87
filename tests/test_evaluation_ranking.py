"""TMVA-style ranking, permutation importance and weighted correlation matrices."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier

from hepbdt import BDTClassifier
from hepbdt.evaluation import (
    correlation_matrices,
    permutation_importance,
    tmva_importance,
    weighted_correlation,
)

INFORMATIVE = (1, 4)


def _two_of_six(n, seed):
    """Six features; only features 1 and 4 differ between signal and background."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[:, 1] += 1.0 * y
    X[:, 4] -= 0.8 * y
    w = rng.uniform(0.5, 1.5, n)
    return X, y, w


def _forest_from_sklearn(gbc):
    """The flat forest layout of hepbdt, filled from scikit-learn's regression trees.

    gain = impurity decrease times the weighted events in the node (TMVA's separation gain
    times events, as hepbdt's engine stores it), cover = weighted events in the node.
    """
    feature, gain, cover, offsets = [], [], [], [0]
    for est in gbc.estimators_[:, 0]:
        t = est.tree_
        f = np.where(t.children_left >= 0, t.feature, -1)
        left, right = t.children_left, t.children_right
        wn = t.weighted_n_node_samples
        g = np.zeros(t.node_count)
        split = left >= 0
        g[split] = wn[split] * t.impurity[split] - (
            wn[left[split]] * t.impurity[left[split]] + wn[right[split]] * t.impurity[right[split]]
        )
        feature.append(f)
        gain.append(g)
        cover.append(wn)
        offsets.append(offsets[-1] + t.node_count)
    n_trees = len(offsets) - 1
    return SimpleNamespace(
        feature=np.concatenate(feature).astype(np.int32),
        gain=np.concatenate(gain),
        cover=np.concatenate(cover),
        tree_offsets=np.array(offsets, dtype=np.int64),
        tree_weights=np.full(n_trees, gbc.learning_rate),
        n_features=6,
    )


def test_tmva_importance_on_hand_built_forest():
    # Two trees: tree 0 splits on 2 then 0; tree 1 (boost weight 2) splits on 2.
    forest = SimpleNamespace(
        feature=np.array([2, 0, -1, -1, -1, 2, -1, -1], dtype=np.int32),
        gain=np.array([0.5, 0.1, 0, 0, 0, 0.2, 0, 0]),
        cover=np.array([100.0, 60, 30, 30, 40, 100, 50, 50]),
        tree_offsets=np.array([0, 5, 8], dtype=np.int64),
        tree_weights=np.array([1.0, -2.0]),
        n_features=3,
    )
    model = SimpleNamespace(forest_=forest, feature_names_in_=["a", "b", "c"], n_trees_=2)
    r = tmva_importance(model)
    raw = np.array([0.1, 0.0, 0.5 + 2 * 0.2])
    np.testing.assert_allclose(r.importance, raw / raw.sum())
    np.testing.assert_array_equal(r.split_count, [1, 0, 2])
    np.testing.assert_allclose(r.total_gain, [0.1, 0.0, 0.7])
    np.testing.assert_allclose(r.cover, [60.0, 0.0, 200.0])
    assert r.ranked()[0][0] == "c" and r.feature_names == ["a", "b", "c"]
    # TMVA (MethodBDT::GetVariableImportance): each tree's squared gains as fractions of
    # their sum, added with weight |boost weight|, then the square root.
    quad = tmva_importance(forest, quadrature=True)
    tree0 = np.array([0.1**2, 0.0, 0.5**2]) / (0.1**2 + 0.5**2)
    tree1 = np.array([0.0, 0.0, 1.0])
    q = np.sqrt(1.0 * tree0 + 2.0 * tree1)
    np.testing.assert_allclose(quad.importance, q / q.sum())
    # Only the kept trees count.
    first = tmva_importance(SimpleNamespace(forest_=forest, n_trees_=1))
    np.testing.assert_array_equal(first.split_count, [1, 0, 1])


def test_tmva_importance_rejects_unfitted():
    with pytest.raises(TypeError, match="forest_"):
        tmva_importance(object())


def test_two_informative_features_rank_first_on_sklearn_forest():
    X, y, w = _two_of_six(3000, seed=1)
    gbc = GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0)
    gbc.fit(X, y, sample_weight=w)
    ranking = tmva_importance(_forest_from_sklearn(gbc))
    assert set(ranking.order()[:2]) == set(INFORMATIVE)
    model = SimpleNamespace(decision_function=gbc.decision_function, _estimator_type="classifier")
    Xt, yt, wt = _two_of_six(2000, seed=2)
    perm = permutation_importance(model, Xt, yt, wt, n_repeats=3, random_state=0)
    assert set(perm.order()[:2]) == set(INFORMATIVE)
    assert perm.metric == "roc_auc" and perm.importances.shape == (6, 3)


@pytest.mark.skipif(importlib.util.find_spec("hepbdt.estimators") is None,
                    reason="hepbdt.estimators (the engine) is not there yet")
@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_two_informative_features_rank_first_on_hepbdt_model(boosting):
    import hepbdt

    X, y, w = _two_of_six(4000, seed=3)
    model = hepbdt.BDTClassifier(boosting=boosting, n_trees=40, max_depth=3,
                                 learning_rate=0.2, random_state=0)
    model.fit(X, y, sample_weight=w)
    ranking = tmva_importance(model)
    assert set(ranking.order()[:2]) == set(INFORMATIVE)
    assert ranking.importance.sum() == pytest.approx(1.0)
    Xt, yt, wt = _two_of_six(2000, seed=4)
    perm = permutation_importance(model, Xt, yt, wt, n_repeats=3, random_state=0)
    assert set(perm.order()[:2]) == set(INFORMATIVE)


def test_permutation_importance_is_seeded_and_handles_regression():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 3))
    y = 2.0 * X[:, 0] + 0.1 * rng.normal(size=500)
    model = SimpleNamespace(predict=lambda data: 2.0 * data[:, 0], _estimator_type="regressor")
    a = permutation_importance(model, X, y, n_repeats=4, random_state=7)
    b = permutation_importance(model, X, y, n_repeats=4, random_state=7)
    np.testing.assert_array_equal(a.importances, b.importances)
    assert a.metric == "mse" and a.importances_mean[0] > 1.0
    np.testing.assert_allclose(a.importances_mean[1:], 0.0, atol=1e-6)
    assert np.all(a.importances_std >= 0)


def test_weighted_correlation():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(4000, 3))
    X[:, 1] = X[:, 0] + 0.5 * X[:, 1]
    np.testing.assert_allclose(weighted_correlation(X), np.corrcoef(X, rowvar=False),
                               atol=1e-12)
    k = rng.integers(1, 4, 4000)
    np.testing.assert_allclose(weighted_correlation(X, k),
                               np.corrcoef(np.repeat(X, k, axis=0), rowvar=False), atol=1e-12)
    y = np.r_[np.ones(2000), np.zeros(2000)]
    Xs = X.copy()
    Xs[2000:, 2] = -Xs[2000:, 0]
    sig, bkg = correlation_matrices(Xs, y)
    assert abs(sig[0, 2]) < 0.1 and bkg[0, 2] == pytest.approx(-1.0)


def test_correlations_block_by_block_match_numpy_and_binned(monkeypatch):
    import hepbdt.evaluation.ranking as ranking
    from hepbdt.binned import BinnedMatrix

    monkeypatch.setattr(ranking, "CORRELATION_BLOCK", 1000)  # many blocks, the last partial
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4321, 3)).astype(np.float32)
    X[:, 1] += X[:, 0]
    y = (rng.random(4321) < 0.4).astype(int)
    k = rng.integers(1, 4, 4321)
    sig, bkg = correlation_matrices(X, y, k)
    for matrix, mask in ((sig, y == 1), (bkg, y == 0)):
        reference = np.corrcoef(np.repeat(X[mask].astype(np.float64), k[mask], axis=0),
                                rowvar=False)
        np.testing.assert_allclose(matrix, reference, atol=1e-12)
    edges = [np.quantile(X[:, j], np.linspace(0.01, 0.99, 40)).astype(np.float32)
             for j in range(3)]
    binned = BinnedMatrix.from_features(X, edges)
    np.testing.assert_allclose(weighted_correlation(binned, k),
                               np.corrcoef(np.repeat(np.asarray(binned, np.float64), k, axis=0),
                                           rowvar=False), atol=1e-12)


def test_correlations_with_missing_values_are_over_the_events_both_have(monkeypatch):
    """A column missing (NaN, or infinite) in 41 % of the events made its whole row NaN;
    each pair is now numpy's correlation over the events where both columns are present."""
    import hepbdt.evaluation.ranking as ranking

    monkeypatch.setattr(ranking, "CORRELATION_BLOCK", 700)
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 4))
    X[:, 1] += X[:, 0]
    X[:, 3] = 0.5 * X[:, 1] + rng.normal(size=3000)
    X[rng.random(3000) < 0.41, 2] = np.nan
    X[rng.random(3000) < 0.2, 3] = np.nan
    X[rng.random(3000) < 0.01, 3] = np.inf
    X[:, 2] += 0.8 * X[:, 0]
    k = rng.integers(1, 4, 3000)
    got = weighted_correlation(X, k)
    for i in range(4):
        for j in range(4):
            both = np.isfinite(X[:, i]) & np.isfinite(X[:, j])
            pair = np.repeat(X[both][:, [i, j]], k[both], axis=0)
            assert got[i, j] == pytest.approx(np.corrcoef(pair, rowvar=False)[0, 1], abs=1e-12)
    assert np.isfinite(got).all() and got[0, 2] > 0.5
    # a column far from its own mean where the other is present (1e6 +- 0.01 there, ~0
    # elsewhere): centred on the column's mean, one-pass sums lost every digit (NaN)
    b = rng.normal(size=3000)
    gone = rng.random(3000) < 0.5
    a = np.where(gone, rng.normal(size=3000), 1e6 + 0.01 * (0.6 * b + 0.8 * rng.normal(size=3000)))
    b[gone] = np.nan
    pair = np.repeat(np.column_stack([a, b])[~gone], k[~gone], axis=0)
    assert weighted_correlation(np.column_stack([a, b]), k)[0, 1] == pytest.approx(
        np.corrcoef(pair, rowvar=False)[0, 1], abs=1e-9)
    # constant over the pair's events (varying elsewhere): no spread, NaN, not rounding noise
    a = np.where(gone, rng.normal(5, 1, 3000), 0.3)
    assert np.isnan(weighted_correlation(np.column_stack([a, b]), k)[0, 1])


def test_permutation_importance_of_binned_events_equals_their_values():
    from hepbdt import BDTClassifier
    from hepbdt.binned import BinnedMatrix

    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] + 0.3 * X[:, 1] + rng.normal(size=3000) > 0).astype(int)
    binned = BinnedMatrix.from_features(X, [np.quantile(X[:, j], np.linspace(0.02, 0.98, 30))
                                            for j in range(3)])
    model = BDTClassifier(n_trees=20, max_depth=3).fit(binned, y)
    codes = binned.codes.copy()
    by_codes = permutation_importance(model, binned, y, n_repeats=2, random_state=3)
    by_values = permutation_importance(model, np.asarray(binned), y, n_repeats=2, random_state=3)
    np.testing.assert_array_equal(by_codes.importances, by_values.importances)
    assert by_codes.importances_mean[0] > by_codes.importances_mean[2]
    np.testing.assert_array_equal(binned.codes, codes)  # the caller's codes are not shuffled


def test_permutation_importance_on_a_random_subset_equals_the_subset_by_hand():
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, 3000)
    model = BDTClassifier(n_trees=10, max_depth=2).fit(X, y, w)
    whole = permutation_importance(model, X, y, w, n_repeats=2, random_state=4)
    part = permutation_importance(model, X, y, w, n_repeats=2, random_state=4, max_samples=1000)
    keep = np.sort(np.random.default_rng(4).choice(3000, 1000, replace=False))
    by_hand = permutation_importance(model, X[keep], y[keep], w[keep], n_repeats=2,
                                     random_state=4)
    np.testing.assert_array_equal(part.importances, by_hand.importances)
    assert (whole.n_events, part.n_events) == (3000, 1000)
    assert part.order()[0] == 0 and whole.order()[0] == 0
    same = permutation_importance(model, X, y, w, n_repeats=2, random_state=4, max_samples=5000)
    np.testing.assert_array_equal(same.importances, whole.importances)
    with pytest.raises(ValueError, match="max_samples must be a whole number of events >= 1"):
        permutation_importance(model, X, y, w, max_samples=0)


@pytest.mark.parametrize("quadrature", [True, False])
def test_the_ranking_does_not_depend_on_the_weights_scale(quadrature):
    # TMVA drops a tree whose squared gains sum to at most double's epsilon in the units of
    # its weights: with weights of 1e-9 the late trees dropped out and the ranking moved
    # (0.31 -> 0.336 for var1 on the tutorial sample); with 1e24-scaled classes the squares
    # underflowed to 0 and the ranking was refused (a traceback after training)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * X[:, 3] * X[:, 2] + rng.normal(size=4000) > 0)
    rankings, scores = [], []
    for scale in (1.0, 1e-9, 1e-30):
        model = BDTClassifier(boosting="gradient", n_trees=300, max_depth=3,
                              random_state=1).fit(X, y.astype(int), np.full(4000, scale))
        scores.append(model.decision_function(X))
        rankings.append(tmva_importance(model, quadrature=quadrature).importance)
        gains = model.forest_.gain[model.forest_.feature >= 0]
        assert gains.min() ** 2 < np.finfo(np.float64).eps or scale == 1.0  # tiny gains
    np.testing.assert_allclose(scores[1], scores[0], rtol=0, atol=1e-6)  # the same model, to float32
    np.testing.assert_allclose(scores[2], scores[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(rankings[1], rankings[0], rtol=1e-6)
    np.testing.assert_allclose(rankings[2], rankings[0], rtol=1e-6)


def test_permutation_repeats_are_bounded_as_in_a_configuration() -> None:
    """n_repeats=1e9 asked for a 22 GiB array (a MemoryError; given the memory, it would
    run for ever), where the configuration's permutation_repeats is at most 1,000; 2.5
    failed in numpy. Both rankings refuse them before copying X, naming the valid range."""
    from hepbdt import BDTClassifier
    from hepbdt.evaluation import per_class_permutation_importance
    from hepbdt.evaluation.ranking import MAX_PERMUTATION_REPEATS

    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    model = BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    model3 = BDTClassifier(n_trees=3, max_depth=2).fit(X, y3)
    for bad in (10**9, MAX_PERMUTATION_REPEATS + 1, 0, 2.5, True):
        with pytest.raises(ValueError, match=rf"n_repeats={bad!r} is not valid; expected an "
                                             r"integer in \[1, 1000\]"):
            permutation_importance(model, X, y, n_repeats=bad)
        with pytest.raises(ValueError, match=r"expected an integer in \[1, 1000\]"):
            per_class_permutation_importance(model3, X, y3, n_repeats=bad)
    result = permutation_importance(model, X, y, n_repeats=2)
    assert result.importances.shape == (3, 2)


@pytest.mark.parametrize("shape", [(5,), (2, 2, 2)])
def test_correlations_refuse_x_that_is_not_2d(shape):
    """A 1-d X failed with IndexError, a 3-d one inside numpy's broadcasting, without the
    refusal that names the shape."""
    from hepbdt.evaluation import weighted_correlation

    with pytest.raises(ValueError, match=r"X must be 2-d \(events x features\), got shape"):
        weighted_correlation(np.ones(shape))
