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
from hepbdt.evaluation.metrics import _halves


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
    # the cuts keeping at least e and at most five points more of the signal
    within = [(b_s >= e - 1e-12) & (b_s <= e + 0.05 + 1e-12) for e in sig_targets]
    expected_rej = [1 - b_b[m].min() if m.any() else np.nan for m in within]
    # the cuts keeping at most b and at least b - min(0.05, b / 2) of the background
    near = [(b_b <= e + 1e-12) & (b_b >= e - min(0.05, e / 2) - 1e-12) for e in bkg_targets]
    expected_eff = [b_s[m].max() if m.any() else np.nan for m in near]
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
    # A deficit (negative S, from negative weights) is a negative significance, never an excess.
    b = 5.0 + 10.0
    assert ams(-3.0, 5.0) == pytest.approx(-np.sqrt(2 * ((b - 3) * np.log(1 - 3 / b) + 3)))


FIGURES = ("s_over_sqrt_b", "s_over_sqrt_s_plus_b", "ams")


def _brute_scan(y, score, w, scale=1.0, min_background=10, b_reg=10.0, need_positive_b=True):
    """Every cut score >= t (descending t) by direct numpy sums, and the best cut of each
    figure of merit among the cuts with >= min_background background MC events, counted
    and effective (Kish's (sum w)^2 / sum w^2), and B > 0 unless need_positive_b is False."""
    ts = np.unique(score)[::-1]
    cols = {k: [] for k in ("t", "S", "B", "dS", "dB", "nS", "nB", "effB")}
    for t in ts:
        sig, bkg = (score >= t) & (y == 1), (score >= t) & (y == 0)
        for key, value in (("t", t), ("S", scale * w[sig].sum()), ("B", scale * w[bkg].sum()),
                           ("dS", scale * np.sqrt(np.sum(w[sig] ** 2))),
                           ("dB", scale * np.sqrt(np.sum(w[bkg] ** 2))),
                           ("nS", np.count_nonzero(sig)), ("nB", np.count_nonzero(bkg)),
                           ("effB", w[bkg].sum() ** 2 / np.sum(w[bkg] ** 2) if bkg.any() else 0)):
            cols[key].append(value)
    cols = {k: np.array(v) for k, v in cols.items()}
    s, b = cols["S"], cols["B"]
    with np.errstate(divide="ignore", invalid="ignore"):
        fom = {"s_over_sqrt_b": np.where(b > 0, s / np.sqrt(b), np.nan),
               "s_over_sqrt_s_plus_b": np.where(s + b > 0, s / np.sqrt(s + b), np.nan),
               "ams": np.sqrt(2 * ((s + b + b_reg) * np.log(1 + s / (b + b_reg)) - s))}
    ok = (cols["nB"] >= min_background) & (cols["effB"] >= min_background * (1 - 1e-9))
    if need_positive_b:
        ok &= b > 0
    best = {}
    for name, values in fom.items():
        good = ok & np.isfinite(values)
        best[name] = None if not good.any() else int(np.argmax(np.where(good, values, -np.inf)))
    return cols, fom, best


def _assert_best_is_brute(scan, cols, fom, best):
    for name in FIGURES:
        k, cut = best[name], scan.best_cuts[name]
        assert k is not None and cut.found, name
        assert cut.threshold == cols["t"][k], name
        assert cut.value == pytest.approx(fom[name][k], rel=1e-12), name
        assert (cut.signal, cut.background) == pytest.approx((cols["S"][k], cols["B"][k]),
                                                             rel=1e-12), name
        assert (cut.signal_error, cut.background_error) == pytest.approx(
            (cols["dS"][k], cols["dB"][k]), rel=1e-12), name
        assert (cut.n_signal_mc, cut.n_background_mc) == (cols["nS"][k], cols["nB"][k]), name
        assert scan.best[name] == (cut.threshold, cut.value, cut.signal, cut.background)


def _few_background_at_the_top(rng):
    """30 signal events in [0.5, 1); 2 background events of tiny weight at the very top,
    200 of weight 1 in [0, 0.9): without a floor the best S/sqrt(B) keeps just the 2."""
    score = np.r_[rng.uniform(0.5, 1.0, 30), 0.985, 0.995, rng.uniform(0.0, 0.9, 200)]
    y = np.r_[np.ones(30), np.zeros(202)].astype(int)
    w = np.r_[np.ones(30), 0.01, 0.01, np.ones(200)]
    return y, score, w


def test_best_cut_leaves_the_minimum_of_background_mc_events():
    y, score, w = _few_background_at_the_top(np.random.default_rng(11))
    unconstrained = significance_scan(y, score, w, min_background_events=0)
    assert unconstrained.best_cuts["s_over_sqrt_b"].n_background_mc == 2  # today's pick
    scan = significance_scan(y, score, w)  # default: at least 10 background MC events
    assert scan.min_background_events == 10
    for name in FIGURES:
        assert scan.best_cuts[name].n_background_mc >= 10, name
        assert np.count_nonzero((score >= scan.best[name][0]) & (y == 0)) >= 10, name
    _assert_best_is_brute(scan, *_brute_scan(y, score, w))
    strict = significance_scan(y, score, w, min_background_events=50)
    _assert_best_is_brute(strict, *_brute_scan(y, score, w, min_background=50))
    cols = _brute_scan(y, score, w, min_background=50)[0]
    np.testing.assert_array_equal(strict.qualifies, (cols["nB"] >= 50) & (cols["effB"] >= 50)
                                  & (cols["B"] > 0))


def test_a_cut_with_no_positive_background_is_never_best():
    rng = np.random.default_rng(12)
    # 12 background events at the top with weights -1, +0.5, -1, ...: B < 0 at every cut
    # among them, with enough MC events; 300 ordinary ones below.
    score = np.r_[rng.uniform(0.5, 1.0, 30), np.linspace(0.95, 0.99, 12),
                  rng.uniform(0.0, 0.9, 300)]
    y = np.r_[np.ones(30), np.zeros(312)].astype(int)
    w = np.r_[np.ones(30), np.tile([-1.0, 0.5], 6), np.ones(300)]
    cols, fom, anywhere = _brute_scan(y, score, w, min_background=0, need_positive_b=False)
    assert cols["B"][anywhere["ams"]] <= 0  # unguarded, the AMS picks B <= 0
    assert cols["B"][anywhere["s_over_sqrt_s_plus_b"]] <= 0
    for floor in (0, 10):
        scan = significance_scan(y, score, w, min_background_events=floor)
        for name in FIGURES:
            assert scan.best[name][3] > 0, (floor, name)
        _assert_best_is_brute(scan, *_brute_scan(y, score, w, min_background=floor))
    # B == 0 exactly (+1, -1 pairs) is not positive either.
    w_zero = np.r_[np.ones(30), np.tile([1.0, -1.0], 6), np.ones(300)]
    scan = significance_scan(y, score, w_zero, min_background_events=0)
    assert all(scan.best[name][3] > 0 for name in FIGURES)
    _assert_best_is_brute(scan, *_brute_scan(y, score, w_zero, min_background=0))


@pytest.mark.parametrize("test_fraction", [1.0, 0.5, 0.25])
def test_yields_and_uncertainties_scale_with_the_inverse_test_fraction(test_fraction):
    rng = np.random.default_rng(13)
    y, score, w = _sample(rng, n=3000, negative=True)
    scale = 1.0 / test_fraction
    scan = significance_scan(y, score, w, yield_scale=scale)
    cols, fom, best = _brute_scan(y, score, w, scale=scale)
    np.testing.assert_array_equal(scan.thresholds, cols["t"])
    np.testing.assert_allclose(scan.signal, cols["S"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scan.background, cols["B"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(scan.signal_error, cols["dS"], rtol=1e-12)
    np.testing.assert_allclose(scan.background_error, cols["dB"], rtol=1e-12)
    np.testing.assert_array_equal(scan.n_signal_mc, cols["nS"])
    np.testing.assert_array_equal(scan.n_background_mc, cols["nB"])
    assert scan.signal_scale == scan.background_scale == scale
    _assert_best_is_brute(scan, cols, fom, best)
    # The whole-sample yield before any cut is the test sum x 1 / test_fraction.
    assert scan.signal[-1] == pytest.approx(w[y == 1].sum() / test_fraction, rel=1e-12)


def test_given_yields_scale_the_uncertainties_alike():
    rng = np.random.default_rng(14)
    y, score, w = _sample(rng, n=2000)
    scan = significance_scan(y, score, w, signal_yield=50.0, background_yield=1000.0,
                             yield_scale=3.0)  # the given yields win over the scale
    c_s, c_b = 50.0 / w[y == 1].sum(), 1000.0 / w[y == 0].sum()
    assert (scan.signal_scale, scan.background_scale) == pytest.approx((c_s, c_b))
    signal_only = significance_scan(y, score, w, signal_yield=50.0, yield_scale=3.0)
    assert signal_only.background_scale == 3.0
    # S = 50 x eff_S: the efficiency's error (delta method), passing and failing events
    ws = w[y == 1]
    eff = np.array([ws[score[y == 1] >= t].sum() for t in scan.thresholds]) / ws.sum()
    sig_err = np.array([np.sqrt((1 - e) ** 2 * np.sum(ws[score[y == 1] >= t] ** 2)
                                + e**2 * np.sum(ws[score[y == 1] < t] ** 2))
                        for t, e in zip(scan.thresholds, eff, strict=True)])
    np.testing.assert_allclose(scan.signal_error, c_s * sig_err, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(scan.signal[-1], 50.0, rtol=1e-12)


def test_no_qualifying_cut_gives_nan_not_an_invented_cut():
    y, score, w = _few_background_at_the_top(np.random.default_rng(15))
    scan = significance_scan(y, score, w, min_background_events=203)  # only 202 exist
    assert not scan.qualifies.any()
    for name in FIGURES:
        assert not scan.best_cuts[name].found
        assert np.isnan(scan.best[name]).all()
    with pytest.raises(ValueError, match="min_background_events must be an integer >= 0"):
        significance_scan(y, score, w, min_background_events=-1)
    with pytest.raises(ValueError, match="min_background_events must be an integer >= 0"):
        significance_scan(y, score, w, min_background_events=2.5)
    with pytest.raises(ValueError, match="yield_scale must be a positive number"):
        significance_scan(y, score, w, yield_scale=0.0)


def test_bad_labels_and_weights_are_named():
    with pytest.raises(ValueError, match="1 for signal and 0 for background"):
        roc_auc([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="sample_weight has 2 entries"):
        roc_auc([0, 1, 1], [0.1, 0.2, 0.3], [1.0, 1.0])
    with pytest.raises(ValueError, match="signal weight"):
        roc_auc([0, 0], [0.1, 0.2])
    with pytest.raises(ValueError, match="no events"):
        roc_auc([], [])
    with pytest.raises(ValueError, match="background_eff must be efficiencies"):
        signal_efficiency_at([0, 1, 0, 1], [0.1, 0.5, 0.2, 0.9], background_eff=np.nan)
    with pytest.raises(ValueError, match="signal_eff must be efficiencies"):
        background_rejection_at([0, 1, 0, 1], [0.1, 0.5, 0.2, 0.9], signal_eff=-0.1)


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


def test_a_tight_cut_beside_heavy_background_events_is_not_taken_for_zero():
    """B = 0.041 (50 events of weight 1e-3) counted as zero because it was below 1e-12 of
    the whole background's |weights| (QCD slices of weight 1e9): the scan chose a cut
    of S/sqrt(B) = 6e-6. The best cut is the brute-force one over cuts with B > 0."""
    rng = np.random.default_rng(0)
    score = np.r_[rng.uniform(0.5, 1.0, 50), rng.uniform(0.0, 0.3, 100), rng.uniform(0.6, 1, 20)]
    y = np.r_[np.zeros(150), np.ones(20)]
    w = np.r_[np.full(50, 1e-3), np.full(100, 1e9), np.full(20, 1e-2)]
    scan = significance_scan(y, score, w, b_reg=0.0, min_background_events=10)
    brute = []
    for t in np.unique(score):
        passing = score >= t
        b, n_b = w[passing & (y == 0)].sum(), np.count_nonzero(passing & (y == 0))
        effective = b * b / np.sum(w[passing & (y == 0)] ** 2) if n_b else 0.0
        if n_b >= 10 and effective >= 10 * (1 - 1e-9) and b > 0:
            brute.append((w[passing & (y == 1)].sum() / np.sqrt(b), t))
    best = scan.best_cuts["s_over_sqrt_b"]
    assert (best.value, best.threshold) == pytest.approx(max(brute), rel=1e-12)
    assert int(scan.qualifies.sum()) == len(brute)


def test_masked_and_complex_inputs_are_refused_and_a_perfect_auc_is_one():
    """A masked weight array trained and evaluated on its hidden values, complex weights
    and labels on their real parts (numpy's warning only); a perfectly separating score
    with positive weights had AUC 1.0000000000000002."""
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    w = rng.random(300) + 0.5
    assert roc_auc(y, X[:, 0], w) == 1.0
    assert roc_auc(y, -X[:, 0], w) == 0.0
    for bad_y, bad_w, match in ((y, np.ma.masked_greater(w, 1.2), "masked"),
                                (np.ma.masked_equal(y, 1), w, "masked"),
                                (y, w + 1j, "complex"), (y + 0j, w, "complex")):
        with pytest.raises(ValueError, match=match):
            BDTClassifier(n_trees=2).fit(X, bad_y, bad_w)
        with pytest.raises(ValueError, match=match):
            roc_auc(bad_y, X[:, 0], bad_w)
    with pytest.raises(ValueError, match="complex"):
        roc_auc(y, X[:, 0] + 1j, w)


def test_the_printed_best_cut_selects_the_events_it_counts():
    # few trees give few distinct scores: "score >= 0.5669" printed for 0.56688873 dropped
    # the 58 test events on the cut, more signal than its printed uncertainty
    from hepbdt._util import cut_text
    from hepbdt.evaluation import significance_scan

    rng = np.random.default_rng(4)
    levels = np.sort(rng.uniform(-1, 1, 40))
    for _ in range(20):
        n = 3000
        y = (rng.random(n) < 0.3).astype(int)
        score = levels[np.clip((rng.normal(size=n) + 1.2 * y) * 6 + 20, 0, 39).astype(int)]
        w = rng.uniform(0.5, 1.5, n)
        scan = significance_scan(y, score, w, min_background_events=5)
        for key, best in scan.best_cuts.items():
            if best.found:
                printed = float(scan.threshold_text(key))
                np.testing.assert_array_equal(score >= printed, score >= best.threshold)
    assert cut_text(0.587042, 0.58) == "0.587"  # rounded down: digits as before
    assert cut_text(0.5668887319619006, 0.5) == "0.5668887"


def test_a_best_cut_needs_effective_background_events_not_rows():
    """Nine heavy background events (weight 100) and thirty light ones (0.01) above a cut
    are 39 MC events but 9 effective ones: B there rests on nine events, and the cut is
    not a best cut; with a tenth heavy event it is (the brute-force rule)."""
    score = np.r_[np.linspace(0.90, 0.99, 9), np.linspace(0.91, 0.98, 30), [0.85],
                  np.linspace(0.0, 0.5, 200), np.linspace(0.86, 1.0, 50)]
    y = np.r_[np.zeros(9 + 30 + 1 + 200), np.ones(50)]
    w = np.r_[np.full(9, 100.0), np.full(30, 0.01), [100.0], np.ones(200), np.ones(50)]
    scan = significance_scan(y, score, w)
    at_09 = scan.thresholds == 0.9
    assert scan.n_background_mc[at_09][0] == 39 and not scan.qualifies[at_09][0]
    assert scan.qualifies[scan.thresholds == 0.85][0]
    _assert_best_is_brute(scan, *_brute_scan(y, score, w))
    assert scan.best_cuts["s_over_sqrt_b"].threshold <= 0.85


def test_other_half_is_each_halfs_brute_force_best_cut_measured_on_the_other():
    """Half of each class (``_halves``: every other event of a shuffle of their order by
    score and weight, seeded by those values) chooses its best cut (brute force, half the
    minimum of background MC events, yields scaled to the whole); the other half measures
    it; the two ways averaged. Weighted and signed events, a per-event yield scale."""
    rng = np.random.default_rng(31)
    n = 3000
    y = (rng.random(n) < 0.2).astype(int)
    score = np.round(rng.normal(y * 1.2, 1.0), 3)  # ties
    w = rng.lognormal(0.0, 0.7, n) * np.where(rng.random(n) < 0.1, -0.5, 1.0)
    scale = np.where(rng.random(n) < 0.5, 2.0, 3.0)
    scan = significance_scan(y, score, w, yield_scale=scale, b_reg=5.0,
                             min_background_events=12)
    half = _halves(y == 1, score, w * scale)  # the draw; the rest is brute force
    for label in (0, 1):
        assert abs(np.sum(half[y == label] == 0) - np.sum(half[y == label] == 1)) <= 1
    expected = {name: [] for name in FIGURES}
    for chosen in (0, 1):
        a, b = half == chosen, half != chosen
        factor = {k: [np.count_nonzero(y == k) / np.count_nonzero((y == k) & m) for m in (a, b)]
                  for k in (0, 1)}
        wa = w * scale * np.where(y == 1, factor[1][0], factor[0][0])
        wb = w * scale * np.where(y == 1, factor[1][1], factor[0][1])
        cols, _, best = _brute_scan(y[a], score[a], wa[a], min_background=6, b_reg=5.0)
        for name in FIGURES:
            t = cols["t"][best[name]]
            s_b = wb[b & (y == 1) & (score >= t)].sum()
            b_b = wb[b & (y == 0) & (score >= t)].sum()
            expected[name].append({"s_over_sqrt_b": s_b / np.sqrt(b_b),
                                   "s_over_sqrt_s_plus_b": s_b / np.sqrt(s_b + b_b),
                                   "ams": ams(s_b, b_b, 5.0)}[name])
    for name in FIGURES:
        assert scan.other_half[name] == pytest.approx(np.mean(expected[name]), rel=1e-9), name
        assert scan.other_half[name] < scan.best_cuts[name].value, name


def test_bin_counts_are_bounded_before_any_allocation() -> None:
    """separation(bins=1e9) and resolution_vs_target(bins=1e9) on 1,000 events asked for
    7.45 GiB (a MemoryError, or the memory where there is that much); refused now, with the
    bins that are valid, while the largest count allowed still gives the right number."""
    import tracemalloc

    rng = np.random.default_rng(4)
    y = (rng.random(1000) < 0.4).astype(int)
    s = rng.normal(size=1000) + y
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"bins=1,000,000,000 is more bins than the 10,000 "
                                         r"allowed .*whole number in \[1, 10,000\]"):
        separation(y, s, bins=10**9)
    with pytest.raises(ValueError, match=r"more target bins than the 10,000 allowed"):
        resolution_vs_target(s, s + 1, bins=10**9)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 << 20
    # 10,000 bins: TMVA's separation, brute force with numpy's histogram
    edges = np.linspace(s.min(), s.max(), 10_001)
    sig = np.histogram(s[y == 1], edges)[0] / np.sum(y == 1)
    bkg = np.histogram(s[y == 0], edges)[0] / np.sum(y == 0)
    ok = sig + bkg > 0
    expected = 0.5 * np.sum((sig[ok] - bkg[ok]) ** 2 / (sig[ok] + bkg[ok]))
    assert separation(y, s, bins=10_000) == pytest.approx(expected, rel=1e-12)
    assert resolution_vs_target(s, s + 1, bins=10_000).bias[0] == pytest.approx(1.0)


def test_signal_efficiency_at_a_background_efficiency_tied_scores_cannot_reach_is_not_a_number():
    """Scores of three values: the cuts keep 0, 10 %, 40 % or all of the background. The
    signal efficiency "at 30 %" was that of the cut keeping 10 % (audit ED); at 10 % and
    40 % it is those cuts', by brute force."""
    y = np.repeat([1, 1, 1, 0, 0, 0], [20, 60, 20, 10, 30, 60])
    score = np.repeat([2.0, 1.0, 0.0, 2.0, 1.0, 0.0], [20, 60, 20, 10, 30, 60])
    values = signal_efficiency_at(y, score, background_eff=(0.1, 0.3, 0.4))
    brute = {t: np.mean(score[y == 1] >= t) for t in (2.0, 1.0)}
    assert np.isnan(values[1])
    np.testing.assert_allclose(values[[0, 2]], [brute[2.0], brute[1.0]])


def test_signal_efficiency_at_a_small_background_efficiency_takes_half_its_window():
    """At eff_B = 1 % the window is [0.5 %, 1 %] (half the target): 1,000 background events,
    6 above the signal's middle and 10 tied below, so the only cuts in it keep 0.6 % of the
    background (with or without the signal between); the signal efficiency there, by brute
    force (a window of a third of the
    target, [0.67 %, 1 %], held no cut and gave NaN)."""
    y = np.repeat([1, 1, 0, 0, 0], [50, 50, 6, 10, 984])
    score = np.repeat([3.0, 1.0, 2.0, 0.5, 0.0], [50, 50, 6, 10, 984])
    eff_s, eff_b, _ = _brute_effs(y, score, np.ones(y.size))
    near = (eff_b <= 0.01) & (eff_b >= 0.005)
    np.testing.assert_allclose(eff_b[near], 0.006)
    assert signal_efficiency_at(y, score, background_eff=0.01)[0] == eff_s[near].max()


def test_ams_of_a_deficit_that_empties_the_poisson_mean_is_its_limit():
    """s = -(b + b_reg): (1 + x) ln(1 + x) -> 0 at x = -1, so AMS = -sqrt(2 (b + b_reg));
    scipy's xlogy(0, 0) = 0 gives the same limit."""
    from scipy.special import xlogy

    s, b, b_reg = -30.0, 20.0, 10.0
    x = s / (b + b_reg)
    expected = -np.sqrt(2 * (b + b_reg) * (xlogy(1 + x, 1 + x) - x))
    assert ams(s, b, b_reg) == pytest.approx(expected, rel=1e-15)


def test_the_printed_best_cut_stays_above_the_next_lower_score_not_the_lowest():
    """Best cut 0.566851, next lower score 0.56685 (30 background events), lowest 0.1:
    "0.56685" would select those 30 too; the text must keep exactly the events counted."""
    score = np.repeat([0.566851, 0.566851, 0.56685, 0.1], [100, 20, 30, 500])
    y = np.repeat([1, 0, 0, 0], [100, 20, 30, 500])
    scan = significance_scan(y, score, other_half=False)
    best = scan.best_cuts["s_over_sqrt_b"]
    assert best.threshold == 0.566851
    printed = float(scan.threshold_text("s_over_sqrt_b"))
    assert np.count_nonzero(score >= printed) == np.count_nonzero(score >= 0.566851) == 120


def test_a_perfect_auc_with_an_event_of_weight_zero_is_not_above_one():
    """Every signal score above every background one: the AUC is exactly 1 (scikit-learn:
    1 - 1e-16). With these weights the sums' rounding gave 1.0000000000000002; an event of
    weight 0 (weights >= 0, not > 0) must not turn the clipping off."""
    y = [1, 1, 0, 0, 0, 0, 0, 0, 0]
    s = [1.0178914208969752, 1.5799701805640947, 0.0955551367300374, 0.4877664892134102,
         0.05373861419307363, 0.2260443941635542, 0.19732989853548, 0.11615573764276549,
         0.37437786250196753]
    w = [0.00026672281499629354, 0.0003822741486895814, 5.678399551921301e-07,
         4.389112856244731e-05, 0.0001404726333633951, 7.770205183549866e-05,
         6.701029843657122e-08, 7.304484316654513e-06, 0.0]
    assert roc_auc(y, s, w) == 1.0
    assert roc_auc_score(y, s, sample_weight=w) == pytest.approx(1.0, abs=1e-15)


def test_regression_resolutions_and_target_bins_by_brute_force():
    """IQR / 1.349 from numpy's weighted inverted-CDF quantiles; the truncated RMS of 10
    unit residuals at 0.9: the central 9 of 10 units, the two ends at half weight
    (numpy's weighted std); per-bin RMSE and the bins' centres on given edges."""
    rng = np.random.default_rng(11)
    r = rng.normal(0.0, 1.0, 10)
    m = regression_metrics(np.zeros(10), r)
    order = np.sort(r)
    half_ends = np.r_[0.5, np.ones(8), 0.5]
    mean = np.average(order, weights=half_ends)
    assert m.resolution_trms == pytest.approx(
        np.sqrt(np.average((order - mean) ** 2, weights=half_ends)), rel=1e-12)
    w = rng.uniform(0.5, 2.0, 10)
    q25, q75 = np.quantile(r, [0.25, 0.75], weights=w, method="inverted_cdf")
    assert regression_metrics(np.zeros(10), r, w).resolution_iqr == pytest.approx(
        (q75 - q25) / 1.3489795003921634, rel=1e-12)
    t = rng.uniform(0.0, 6.0, 300)
    p = t + rng.normal(0.0, 1.0, 300) * (1 + t)
    binned = resolution_vs_target(t, p, bins=[0.0, 1.0, 3.0, 6.0])
    np.testing.assert_array_equal(binned.centers, [0.5, 2.0, 4.5])
    inside = [(t >= a) & (t < b) for a, b in ((0, 1), (1, 3), (3, 6))]
    np.testing.assert_allclose(binned.rmse, [np.sqrt(np.mean((p - t)[k] ** 2)) for k in inside],
                               rtol=1e-12)
    np.testing.assert_array_equal(binned.count, [k.sum() for k in inside])


def test_a_perfect_regression_has_zero_errors_and_unequal_lengths_are_refused():
    """MAE and RMSE of y_pred == y_true are 0 (scikit-learn's), not NaN; one target for
    three predictions is refused, not broadcast."""
    from sklearn.metrics import mean_absolute_error

    t = np.array([1.0, 2.0, 4.0])
    m = regression_metrics(t, t, [1.0, 2.0, 3.0])
    assert m.mae == mean_absolute_error(t, t, sample_weight=[1.0, 2.0, 3.0]) == 0.0
    assert m.rmse == 0.0
    with pytest.raises(ValueError, match="y_true has 1 entries but y_pred has 3"):
        regression_metrics([1.0], t)


def test_other_half_is_the_brute_force_of_two_halves():
    """Unit weights: each class's events alternate between two halves (``_halves``) in a
    shuffle of their order by score (and weight); a half's yields are
    scaled to the class's whole, its best S/sqrt(B) cut (at least 5 background events of
    its own, half of 10 rounded up: a third, 4, survived) is measured on the other half,
    and the two ways are averaged (brute force)."""
    rng = np.random.default_rng(2)
    y = (rng.random(600) < 0.3).astype(int)
    score = np.round(rng.normal(2.5 * y, 1.0), 1)
    halves = _halves(y == 1, score, np.ones(y.size))  # the draw; the rest is brute force

    def yields(h, t):
        return [np.sum((halves == h) & (y == c) & (score >= t)) * np.sum(y == c)
                / np.sum((halves == h) & (y == c)) for c in (1, 0)]

    values = []
    for chosen in (0, 1):
        best, best_z = None, -np.inf
        for t in np.unique(score[halves == chosen]):
            s, b = yields(chosen, t)
            if np.sum((halves == chosen) & (y == 0) & (score >= t)) >= 5 and s / np.sqrt(b) > best_z:
                best, best_z = t, s / np.sqrt(b)
        s, b = yields(1 - chosen, best)
        values.append(s / np.sqrt(b))
    scan = significance_scan(y, score, min_background_events=10)
    assert scan.other_half["s_over_sqrt_b"] == pytest.approx(np.mean(values), rel=1e-12)


def test_a_cut_keeping_exactly_five_points_more_is_within_the_tolerance():
    """3 of 4 signal events pass a cut: 75 % is within five points of 70 % (0.75 - 0.7 is
    0.05000000000000004 in float64); the rejection there is brute force's 1 - 1/4."""
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    score = np.array([3.0, 3.0, 3.0, 0.0, 3.0, 0.0, 0.0, 0.0])
    assert background_rejection_at(y, score, signal_eff=0.7)[0] == 1 - np.mean(score[y == 0] >= 3)
