"""The statistics hepbdt prints, against independent references (audit DG, 2026-12-05):
scipy's KS test, brute-force sums over events."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp

from hepbdt.analysis.result import FoldScores, kfold_table
from hepbdt.evaluation import weighted_ks_2samp
from hepbdt.io.dataset import Dataset


def test_kfold_smallest_ks_pvalue_skips_a_class_without_one():
    # three classes, the first with 6 events a fold (too few for a p-value): Python's
    # min(nan, p) kept the NaN, and the per-fold table's "smallest KS p" read n/a where
    # class c's training and test scores differ (p ~ 1e-11)
    rng = np.random.default_rng(0)
    n = 2000
    y = np.r_[np.zeros(12, int), rng.integers(1, 3, n - 12)]
    event = np.arange(n)
    raw = rng.normal(size=(n, 3))
    raw_train = raw.copy()
    raw_train[y == 2, 2] += 0.8
    train_fold = 1 - event % 2  # each event's training copy belongs to the other fold
    data = Dataset(np.zeros((n, 1)), y, np.ones(n), y, event, ["x"], ["a", "b", "c"])
    folds = FoldScores(2, False, data, data, raw_train, raw, train_fold, classes=["a", "b", "c"])
    proba_train = np.exp(raw_train) / np.exp(raw_train).sum(axis=1, keepdims=True)
    proba_test = np.exp(raw) / np.exp(raw).sum(axis=1, keepdims=True)
    for i, row in enumerate(kfold_table(folds)):
        trained, tested = train_fold == i, event % 2 == i
        expected = min(
            ks_2samp(proba_train[trained & mine, k], proba_test[tested & mine, k],
                     method="asymp").pvalue
            for k in (1, 2) for mine in (y == k, y != k))  # class a's own: 6 events, none
        assert np.isfinite(row["smallest KS p"]), row
        assert abs(row["smallest KS p"] - expected) <= 1e-9 * expected, (row, expected)


def test_weighted_ks_pvalue_leaves_out_events_of_weight_0():
    # events of weight 0 are no events: with the other weights 1 the test is scipy's on the
    # events of weight 1; the zeros made the weights unequal and moved the p-value's sizes
    # (half of x1 at weight 0, independent of the score: p 0.0196 for scipy's 0.0155)
    rng = np.random.default_rng(4)
    for fraction in (0.5, 0.9):
        a, b = rng.normal(size=400), rng.normal(0.2, size=300)
        wa = (rng.random(400) > fraction).astype(float)
        wb = np.where(rng.random(300) < 0.3, 0.0, 2.5)
        result = weighted_ks_2samp(a, b, wa, wb)
        expected = ks_2samp(a[wa != 0], b[wb != 0], method="asymp")
        assert result.statistic == pytest.approx(expected.statistic, rel=1e-12)
        assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-9), fraction
        assert result.n_eff_1 == pytest.approx(np.count_nonzero(wa))


def test_figures_bins_span_the_events_of_non_zero_weight():
    # a regression row of weight 0 with target -999 (a placeholder) stretched the
    # predicted-against-true bins over [-999, 3]: every weighted event in 2 of the cells
    from hepbdt import plotting

    rng = np.random.default_rng(0)
    t = rng.normal(size=1000)
    p = t + rng.normal(0, 0.3, 1000)
    w = np.ones(1000)
    t[0], p[0], w[0] = -999.0, 0.0, 0.0
    keep = w != 0
    lo, hi = min(t[keep].min(), p[keep].min()), max(t[keep].max(), p[keep].max())
    edges = np.linspace(lo, hi, 51)
    expected = np.histogram2d(t[keep], p[keep], bins=[edges, edges])[0]
    mesh = plotting.plot_predicted_vs_true(t, p, w).axes[0].collections[0]
    drawn = mesh.get_array()
    assert np.count_nonzero(~np.ma.getmaskarray(drawn)) == np.count_nonzero(expected)
    np.testing.assert_allclose(np.ma.filled(drawn, 0.0).reshape(50, 50), expected.T)
    # the score figures alike: a signal event of weight 0 at score 50
    y = np.r_[np.ones(500), np.zeros(500)]
    s = np.r_[50.0, rng.normal(1, 1, 499), rng.normal(-1, 1, 500)]
    sw = np.r_[0.0, np.ones(999)]
    for fig in (plotting.plot_score_distributions(y, s, sw),
                plotting.plot_overtraining(s, y, sw, s[::-1], y[::-1], sw[::-1])):
        assert fig.axes[0].get_xlim()[1] < 10, fig.axes[0].get_xlim()


def test_kfold_table_rows_are_each_folds_own_events():
    # each row's test AUC and test events are of the fold's out-of-fold events alone
    # (sklearn's weighted AUC on event % 3 == i), its training AUC of that model's copies
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    n, k = 600, 3
    event, y = np.arange(n), rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    fold = event % k
    s_test = rng.normal(size=n) + y * (0.3 + fold)  # a different separation in each fold
    copies = np.concatenate([np.flatnonzero(fold != i) for i in range(k)])
    train_fold = np.concatenate([np.full(np.count_nonzero(fold != i), i) for i in range(k)])
    s_train = rng.normal(size=len(copies)) + y[copies] * (1.0 + train_fold)
    test = Dataset(np.zeros((n, 1)), y, w, y, event, ["x"], ["b", "s"])
    train = Dataset(np.zeros((len(copies), 1)), y[copies], w[copies], y[copies], event[copies],
                    ["x"], ["b", "s"])
    rows = kfold_table(FoldScores(k, False, train, test, s_train, s_test, train_fold))
    for i, row in enumerate(rows):
        te, tr = fold == i, train_fold == i
        assert row["test events"] == np.count_nonzero(te) == 200
        assert row["test AUC"] == pytest.approx(roc_auc_score(y[te], s_test[te], sample_weight=w[te]))
        assert row["train events"] == np.count_nonzero(tr)
        assert row["train AUC"] == pytest.approx(
            roc_auc_score(y[copies][tr], s_train[tr], sample_weight=w[copies][tr]))
