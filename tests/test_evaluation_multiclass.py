"""Multi-class evaluation against scikit-learn and scipy: one-against-rest AUC, the weighted
confusion matrix, the per-class overtraining check and the per-class permutation ranking."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from sklearn.metrics import roc_auc_score

from hepbdt.evaluation import (
    confusion_matrix,
    multiclass_overtraining_test,
    one_vs_rest_auc,
    one_vs_rest_roc,
    per_class_permutation_importance,
)


def _sample(n: int, k: int, seed: int, ties: bool = False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]
    if ties:
        logits = np.round(logits, 1)
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, proba, rng.uniform(0.2, 3.0, n)


@pytest.mark.parametrize(("k", "ties"), [(3, False), (4, True), (5, False)])
def test_one_vs_rest_auc_equals_sklearn_weighted(k, ties):
    y, proba, w = _sample(3000, k, k, ties)
    ours = one_vs_rest_auc(y, proba, w)
    reference = roc_auc_score(y, proba, multi_class="ovr", average=None, sample_weight=w)
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-12)
    for j in range(k):
        assert ours[j] == pytest.approx(roc_auc_score(y == j, proba[:, j], sample_weight=w),
                                        abs=1e-12)
    unit = one_vs_rest_auc(y, proba)
    np.testing.assert_allclose(unit, roc_auc_score(y, proba, multi_class="ovr", average=None),
                               atol=1e-12)


def test_one_vs_rest_roc_ends_at_full_efficiency():
    y, proba, w = _sample(500, 3, 1)
    for j, (eff, eff_rest, thresholds) in enumerate(one_vs_rest_roc(y, proba, w)):
        assert eff[0] == 0 and eff[-1] == pytest.approx(1.0)
        assert eff_rest[-1] == pytest.approx(1.0)
        keep = proba[:, j] >= thresholds[5]
        assert eff[5] == pytest.approx(w[keep & (y == j)].sum() / w[y == j].sum())


@pytest.mark.parametrize("k", [3, 4])
def test_confusion_matrix_equals_sklearn_weighted(k):
    y, proba, w = _sample(2000, k, 10 + k)
    ours = confusion_matrix(y, proba, w, classes=[f"c{j}" for j in range(k)])
    predicted = np.argmax(proba, axis=1)
    np.testing.assert_allclose(
        ours.weights, sk_confusion_matrix(y, predicted, labels=range(k), sample_weight=w),
        rtol=1e-12)
    np.testing.assert_array_equal(ours.counts, sk_confusion_matrix(y, predicted,
                                                                   labels=range(k)))
    np.testing.assert_allclose(
        ours.fractions(), sk_confusion_matrix(y, predicted, labels=range(k), sample_weight=w,
                                              normalize="true"), rtol=1e-12)
    assert ours.accuracy == pytest.approx(np.sum(w * (predicted == y)) / w.sum())
    assert ours.classes == [f"c{j}" for j in range(k)]


def test_confusion_matrix_counts_no_event_of_weight_zero():
    # Events of weight 0 are no events: the counts are scikit-learn's unweighted matrix of
    # the other events (the weights and fractions do not see them either).
    y, proba, w = _sample(600, 3, 5)
    w[::4] = 0.0
    ours = confusion_matrix(y, proba, w)
    kept = w != 0
    predicted = np.argmax(proba, axis=1)
    np.testing.assert_array_equal(ours.counts, sk_confusion_matrix(
        y[kept], predicted[kept], labels=range(3)))
    assert ours.counts.sum() == kept.sum() < y.size


def test_confusion_matrix_class_without_events_has_nan_fractions():
    y, proba, _ = _sample(300, 3, 2)
    proba = np.column_stack([proba, np.zeros(len(y))])  # a fourth class, never true
    fractions = confusion_matrix(y, proba).fractions()
    assert np.all(np.isnan(fractions[3])) and np.allclose(fractions[:3].sum(axis=1), 1.0)


def test_overtraining_per_class_equals_scipy_ks_at_unit_weights():
    y_tr, p_tr, _ = _sample(1500, 3, 20)
    y_te, p_te, _ = _sample(1200, 3, 21)
    # the weights as given: unit weights, so scipy's unweighted test (by default the
    # training weights are first given the test's class mix, no longer all 1 in the rest)
    result = multiclass_overtraining_test(p_tr, y_tr, None, p_te, y_te, None,
                                          classes=["a", "b", "c"], match_class_mix=False)
    matched = multiclass_overtraining_test(p_tr, y_tr, None, p_te, y_te, None)
    assert result.classes == ["a", "b", "c"] and len(result.per_class) == 3
    for own, check in zip(matched.per_class, result.per_class, strict=True):
        assert own.signal.ks_pvalue == pytest.approx(check.signal.ks_pvalue, abs=1e-12)
    for j, check in enumerate(result.per_class):
        ref_in = ks_2samp(p_tr[y_tr == j, j], p_te[y_te == j, j], method="asymp")
        ref_out = ks_2samp(p_tr[y_tr != j, j], p_te[y_te != j, j], method="asymp")
        assert check.signal.ks_statistic == pytest.approx(ref_in.statistic, abs=1e-12)
        assert check.signal.ks_pvalue == pytest.approx(ref_in.pvalue, abs=1e-9)
        assert check.background.ks_pvalue == pytest.approx(ref_out.pvalue, abs=1e-9)
    worst = min(min(c.signal.ks_pvalue, c.background.ks_pvalue, c.signal.chi2_pvalue,
                    c.background.chi2_pvalue) for c in result.per_class)
    assert result.verdict == ("overtrained" if worst < 0.01 else "warning" if worst < 0.05
                              else "ok")


def test_overtraining_detects_a_shifted_class():
    y_tr, p_tr, _ = _sample(3000, 3, 30)
    y_te, p_te, _ = _sample(3000, 3, 31)
    p_tr = p_tr.copy()
    p_tr[y_tr == 1, 1] = np.clip(p_tr[y_tr == 1, 1] + 0.2, 0, 1)  # training scores too good
    result = multiclass_overtraining_test(p_tr, y_tr, None, p_te, y_te, None)
    assert result.per_class[1].verdict == "overtrained" and result.verdict == "overtrained"
    assert not result.passed


def test_bad_labels_are_refused():
    _, proba, _ = _sample(10, 3, 3)
    with pytest.raises(ValueError, match="class indices 0..2"):
        one_vs_rest_auc(np.full(10, 3), proba)
    with pytest.raises(ValueError, match=r"\(n, K\)"):
        confusion_matrix(np.zeros(10), proba[:, 0])
    with pytest.raises(ValueError, match="class indices 0..2 .* got <U1 values"):
        one_vs_rest_auc(np.array(list("abcabcabca")), proba)
    with pytest.raises(ValueError, match="class 2 against the rest: the total signal weight"):
        one_vs_rest_auc(np.tile([0, 1], 5), proba)  # class 2 has no events


class _LinearSoftmax:
    """A known model: class scores depend on feature 0 (class 1) and feature 1 (class 2)."""

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        logits = np.column_stack([np.zeros(len(X)), 3 * X[:, 0], 3 * X[:, 1]])
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def test_per_class_permutation_ranks_each_class_by_its_feature():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    model = _LinearSoftmax()
    proba = model.predict_proba(X)
    y = np.array([rng.choice(3, p=p) for p in proba])
    w = rng.uniform(0.5, 2.0, len(y))
    rankings = per_class_permutation_importance(model, X, y, w, n_repeats=2,
                                                feature_names=["a", "b", "noise"])
    assert len(rankings) == 3
    np.testing.assert_allclose([r.baseline for r in rankings], one_vs_rest_auc(y, proba, w))
    assert rankings[1].ranked()[0][0] == "a" and rankings[2].ranked()[0][0] == "b"
    for ranking in rankings:
        assert ranking.importances_mean[2] == pytest.approx(0.0, abs=1e-12)  # unused
    # The shuffle of one repeat, replayed: the AUC drop of class 1 when feature a is shuffled.
    rng_replay = np.random.default_rng(0)
    shuffled = X.copy()
    shuffled[:, 0] = X[rng_replay.permutation(len(X)), 0]
    drop = roc_auc_score(y == 1, proba[:, 1], sample_weight=w) - roc_auc_score(
        y == 1, model.predict_proba(shuffled)[:, 1], sample_weight=w)
    assert rankings[1].importances[0, 0] == pytest.approx(drop, abs=1e-12)


def test_multiclass_learning_curve_is_sklearns_weighted_log_loss():
    from sklearn.metrics import log_loss

    from hepbdt import BDTClassifier
    from hepbdt.evaluation import learning_curve

    rng = np.random.default_rng(8)
    X = rng.normal(size=(600, 3))
    y = rng.integers(0, 3, 600)
    X[:, 0] += y
    w = rng.uniform(0.5, 2.0, 600)
    model = BDTClassifier(n_trees=12, max_depth=2).fit(X[:400], np.array(["a", "b", "c"])[y[:400]],
                                                       w[:400])
    curve = learning_curve(model, (X[:400], y[:400], w[:400]), (X[400:], y[400:], w[400:]))
    assert curve.n_trees.tolist() == list(range(1, 13)) and curve.test_auc is None
    proba = model.predict_proba(X[400:])
    assert curve.test_loss[-1] == pytest.approx(
        log_loss(y[400:], proba, sample_weight=w[400:], labels=[0, 1, 2]), rel=1e-12)
    assert curve.train_loss[-1] < curve.train_loss[0]


def test_confusion_matrix_refuses_weighted_sums_beyond_float64():
    """Weights of 1e307 summed to inf in a cell: fractions of 0 and NaN where
    scikit-learn's on the same events divided by 1e307 give the right ones."""
    y, proba, w = _sample(300, 3, 5)
    predicted = np.argmax(proba, axis=1)
    right = sk_confusion_matrix(y, predicted, labels=range(3), sample_weight=w,
                                normalize="true")
    assert np.all(np.isfinite(right))
    with pytest.raises(ValueError, match="overflow float64.*divide sample_weight"):
        confusion_matrix(y, proba, w * 1e307)


def test_accuracy_of_weights_summing_to_one_is_scikit_learns():
    """Weights normalised to a unit total: the accuracy is scikit-learn's weighted
    accuracy_score (not NaN), and one column of probabilities is refused (K >= 2)."""
    from sklearn.metrics import accuracy_score

    y, proba, _ = _sample(256, 3, 7)
    w = np.full(256, 1 / 256)  # sums to exactly 1
    got = confusion_matrix(y, proba, w).accuracy
    assert got == pytest.approx(accuracy_score(y, np.argmax(proba, axis=1), sample_weight=w),
                                rel=1e-12)
    with pytest.raises(ValueError, match="K >= 2"):
        confusion_matrix(np.zeros(5, int), np.ones((5, 1)))


def test_combined_folds_verdict_is_the_worst_class():
    """Two folds of three classes, class 1's training probabilities shifted in one fold:
    that class's combined KS p-value is scipy's smallest fold p-value times 2 (below
    0.01), the others' above 0.05, and the overall verdict is the worst class's."""
    from hepbdt.evaluation import multiclass_combined_over_folds

    checks, pvalues = [], []
    for seed, shift in ((31, 0.0), (32, 0.08)):
        y_tr, p_tr, _ = _sample(1500, 3, seed)
        y_te, p_te, _ = _sample(1500, 3, seed + 100)
        p_tr = p_tr.copy()
        p_tr[:, 1] = np.clip(p_tr[:, 1] + shift * (y_tr == 1), 0.0, 1.0)
        checks.append(multiclass_overtraining_test(p_tr, y_tr, None, p_te, y_te, None))
        pvalues.append([ks_2samp(p_tr[y_tr == j, j], p_te[y_te == j, j],
                                 method="asymp").pvalue for j in range(3)])
    combined = multiclass_combined_over_folds(checks)
    ks = np.minimum(1.0, 2 * np.min(pvalues, axis=0))
    got = [part.signal.ks_pvalue for part in combined.per_class]
    np.testing.assert_allclose(got, ks, rtol=1e-6)
    assert ks[1] < 0.01 and min(ks[0], ks[2]) > 0.05
    assert combined.per_class[1].verdict == "overtrained"
    assert combined.verdict == "overtrained"
