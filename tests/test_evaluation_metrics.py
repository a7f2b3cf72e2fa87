"""Weighted ROC, AUC, efficiency tables, separation, significance and regression metrics."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from hepbdt.evaluation import (
    ams,
    background_rejection_at,
    efficiency_table,
    regression_metrics,
    resolution_vs_target,
    roc_auc,
    roc_curve,
    separation,
    signal_efficiency_at,
    significance_scan,
)


def _sample(rng, n=2000, n_levels=50, negative=False):
    """Labels, heavily tied scores and weights (a fraction negative when asked)."""
    y = rng.integers(0, 2, n)
    score = np.round(rng.normal(0.6 * y, 1.0) * n_levels / 6) / n_levels
    w = rng.uniform(0.1, 2.0, n)
    if negative:
        w[rng.random(n) < 0.15] *= -0.5
    return y, score, w


def _brute_effs(y, score, w):
    """(eff_s, eff_b) for the empty cut and every cut score >= t, by direct sums."""
    ts = np.r_[np.inf, np.unique(score)[::-1]]
    sig, bkg = y == 1, y == 0
    eff_s = np.array([w[sig & (score >= t)].sum() for t in ts]) / w[sig].sum()
    eff_b = np.array([w[bkg & (score >= t)].sum() for t in ts]) / w[bkg].sum()
    return eff_s, eff_b, ts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_equals_sklearn_with_ties_and_weights(seed):
    rng = np.random.default_rng(seed)
    y, score, w = _sample(rng)
    assert np.unique(score).size < 100  # many ties
    assert roc_auc(y, score, w) == pytest.approx(roc_auc_score(y, score, sample_weight=w),
                                                 abs=1e-9)
    assert roc_auc(y, score) == pytest.approx(roc_auc_score(y, score), abs=1e-9)


def test_auc_with_negative_weights_is_weighted_mann_whitney():
    rng = np.random.default_rng(3)
    y, score, w = _sample(rng, n=600, negative=True)
    s, b = y == 1, y == 0
    diff = score[s][:, None] - score[b][None, :]
    pair = np.outer(w[s], w[b])
    expected = (pair * ((diff > 0) + 0.5 * (diff == 0))).sum() / (w[s].sum() * w[b].sum())
    assert roc_auc(y, score, w) == pytest.approx(expected, abs=1e-12)
    eff_s, eff_b, _ = roc_curve(y, score, w)
    assert np.any(np.diff(eff_b) < 0)  # really not monotone: sklearn's auc() would refuse


def test_roc_curve_matches_brute_force_and_ties_form_one_step():
    rng = np.random.default_rng(4)
    y, score, w = _sample(rng, n=500, negative=True)
    eff_s, eff_b, thr = roc_curve(y, score, w)
    b_s, b_b, b_t = _brute_effs(y, score, w)
    assert thr.size == np.unique(score).size + 1
    np.testing.assert_array_equal(thr, b_t)
    np.testing.assert_allclose(eff_s, b_s, atol=1e-12)
    np.testing.assert_allclose(eff_b, b_b, atol=1e-12)


@pytest.mark.parametrize("negative", [False, True])
def test_efficiency_tables_equal_brute_force_count(negative):
    rng = np.random.default_rng(5)
    y, score, w = _sample(rng, n=3000, n_levels=400, negative=negative)
    b_s, b_b, _ = _brute_effs(y, score, w)
    sig_targets = [0.3, 0.5, 0.7, 0.9]
    bkg_targets = [0.001, 0.01, 0.1, 0.3]
    expected_rej = [1 - b_b[b_s >= e - 1e-12].min() for e in sig_targets]
    expected_eff = [b_s[b_b <= e + 1e-12].max() for e in bkg_targets]
    np.testing.assert_allclose(background_rejection_at(y, score, w, sig_targets), expected_rej,
                               atol=1e-12)
    np.testing.assert_allclose(signal_efficiency_at(y, score, w, bkg_targets), expected_eff,
                               atol=1e-12)


def test_efficiency_table_unit_weights_counts():
    # 1000 background events with distinct scores: eff_B = 0.01 keeps exactly the top 10.
    y = np.r_[np.ones(100), np.zeros(1000)]
    score = np.r_[np.linspace(0.5, 2.0, 100), np.linspace(-1.0, 1.0, 1000)]
    table = efficiency_table(y, score)
    top10 = np.sort(score[100:])[-10]
    assert table.signal_efficiency[1] == pytest.approx(np.mean(score[:100] >= top10))
    labels = [label for label, _ in table.rows()]
    assert labels[0] == "ROC AUC" and len(labels) == 10


def test_separation_limits():
    rng = np.random.default_rng(6)
    x = rng.normal(size=20000)
    y = np.r_[np.ones(10000), np.zeros(10000)]
    assert separation(y, x) < 0.01
    assert separation(y, np.r_[x[:10000] + 100, x[10000:]]) == pytest.approx(1.0)


def test_significance_scan_best_cut_and_ams():
    rng = np.random.default_rng(7)
    y, score, w = _sample(rng, n=4000)
    scan = significance_scan(y, score, w, signal_yield=50.0, background_yield=1000.0)
    b_s, b_b, ts = _brute_effs(y, score, w)
    s_exp, b_exp = 50.0 * b_s[1:], 1000.0 * b_b[1:]
    np.testing.assert_allclose(scan.signal, s_exp, rtol=1e-12)
    np.testing.assert_allclose(scan.background, b_exp, rtol=1e-12)
    k = np.argmax(s_exp / np.sqrt(s_exp + b_exp))
    assert scan.best["s_over_sqrt_s_plus_b"][0] == ts[1:][k]
    assert scan.best["ams"][1] == pytest.approx(np.nanmax(scan.ams))
    # AMS -> s / sqrt(b) for s << b, and AMS is 0 without signal
    assert ams(1.0, 1e6, b_reg=0.0) == pytest.approx(1e-3, rel=1e-3)
    assert ams(0.0, 10.0) == 0.0


def test_bad_labels_and_weights_are_named():
    with pytest.raises(ValueError, match="1 for signal and 0 for background"):
        roc_auc([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="sample_weight has 2 entries"):
        roc_auc([0, 1, 1], [0.1, 0.2, 0.3], [1.0, 1.0])
    with pytest.raises(ValueError, match="signal weight"):
        roc_auc([0, 0], [0.1, 0.2])


def test_regression_metrics_match_numpy_and_repeated_events():
    rng = np.random.default_rng(8)
    t = rng.uniform(0, 10, 5000)
    p = t + rng.normal(0.2, 0.5, t.size)
    m = regression_metrics(t, p)
    r = p - t
    assert m.rmse == pytest.approx(np.sqrt(np.mean(r**2)))
    assert m.mae == pytest.approx(np.mean(np.abs(r)))
    assert m.bias == pytest.approx(np.mean(r))
    assert m.resolution_iqr == pytest.approx(0.5, rel=0.05)
    assert 0.35 < m.resolution_trms < 0.5  # central 90% of a Gaussian: sigma * 0.79
    k = rng.integers(1, 4, t.size)
    mw = regression_metrics(t, p, k)
    mr = regression_metrics(np.repeat(t, k), np.repeat(p, k))
    for field in ("rmse", "mae", "bias", "resolution_iqr", "resolution_trms"):
        assert getattr(mw, field) == pytest.approx(getattr(mr, field), rel=1e-9)
    binned = resolution_vs_target(t, p, bins=5)
    assert binned.centers.size == 5 and binned.count.sum() == t.size
    np.testing.assert_allclose(binned.bias, 0.2, atol=0.05)
