"""Weighted KS and chi2 comparisons of training and test scores."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import chi2_contingency, ks_2samp

from hepbdt.evaluation import (
    combined_over_folds,
    effective_sample_size,
    overtraining_test,
    weighted_ks_2samp,
)
from hepbdt.evaluation.overtraining import chi2_test


@pytest.mark.parametrize(("n1", "n2", "ties"), [(300, 500, False), (1000, 1000, True),
                                                (57, 2000, True), (5000, 3100, False)])
def test_unweighted_ks_equals_scipy_asymp(n1, n2, ties):
    rng = np.random.default_rng(n1 + n2)
    a = rng.normal(0.0, 1.0, n1)
    b = rng.normal(0.1, 1.1, n2)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)
    ours = weighted_ks_2samp(a, b)
    ref = ks_2samp(a, b, method="asymp")
    assert ours.statistic == pytest.approx(ref.statistic, abs=1e-6)
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-6)


def test_integer_weights_equal_repeated_events():
    rng = np.random.default_rng(11)
    a = np.round(rng.normal(0.0, 1.0, 400), 2)
    b = np.round(rng.normal(0.2, 1.0, 300), 2)
    ka = rng.integers(1, 5, a.size)
    kb = rng.integers(1, 5, b.size)
    weighted = weighted_ks_2samp(a, b, ka, kb, effective_size="sum")
    repeated = ks_2samp(np.repeat(a, ka), np.repeat(b, kb), method="asymp")
    assert weighted.statistic == pytest.approx(repeated.statistic, abs=1e-12)
    assert weighted.pvalue == pytest.approx(repeated.pvalue, abs=1e-9)
    # The default (Kish) p-value uses the smaller effective sizes, so it is larger.
    kish = weighted_ks_2samp(a, b, ka, kb)
    assert kish.statistic == weighted.statistic
    assert kish.n_eff_1 == pytest.approx(effective_sample_size(ka))
    assert kish.n_eff_1 < ka.sum()
    assert kish.pvalue > weighted.pvalue


def test_negative_weights_are_handled():
    rng = np.random.default_rng(12)
    a, b = rng.normal(size=500), rng.normal(size=500)
    wa = np.where(rng.random(500) < 0.1, -1.0, 1.0)
    res = weighted_ks_2samp(a, b, wa, None)
    assert 0 < res.statistic < 1 and 0 <= res.pvalue <= 1


def test_chi2_is_calibrated_under_the_null():
    rng = np.random.default_rng(13)
    edges = np.linspace(-3, 3, 16)
    pvalues = []
    for _ in range(200):
        a, b = rng.normal(size=2000), rng.normal(size=1500)
        res = chi2_test(a, rng.uniform(0.5, 1.5, 2000), b, None, edges)
        assert res.ndf == 14
        pvalues.append(res.pvalue)
    assert 0.01 < np.mean(np.array(pvalues) < 0.05) < 0.12
    assert 0.4 < np.median(pvalues) < 0.6


def test_the_checks_chi2_bins_hold_ten_effective_events_so_its_false_alarms_are_calibrated():
    """A few heavy events (2 % at weight 200): 1,000 rows a class but about 36 effective
    events. Bins counted by rows (20 of them, under 2 effective events each) made the
    chi2 p-value fall below 0.01 in 6.5 % of identical samples; by effective events the
    false-alarm rate is the nominal one, as the KS test's."""
    rng = np.random.default_rng(5)
    chi2_p = []
    for _ in range(300):
        samples = []
        for _ in range(2):
            y = (rng.random(2000) < 0.5).astype(int)
            samples += [rng.normal(size=2000), y, np.where(rng.random(2000) < 0.02, 200.0, 1.0)]
        result = overtraining_test(*samples).background
        assert result.ndf + 1 <= max(2, min(result.n_eff_train, result.n_eff_test) // 10)
        chi2_p.append(result.chi2_pvalue)
    chi2_p = np.array(chi2_p)
    assert np.isfinite(chi2_p).all()
    assert np.mean(chi2_p < 0.01) < 0.03 and np.mean(chi2_p < 0.05) < 0.09


@pytest.mark.parametrize("n1, n2, n_edges", [(500, 80, 7), (3000, 3000, 21), (40, 2000, 4)])
def test_chi2_of_unit_weights_is_pearsons_of_the_table(n1, n2, n_edges):
    rng = np.random.default_rng(n1 + n2)
    a, b = rng.normal(size=n1), rng.normal(0.1, 1.0, size=n2)
    edges = np.quantile(np.r_[a, b], np.linspace(0, 1, n_edges))
    table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
    expected = chi2_contingency(table, correction=False)
    result = chi2_test(a, None, b, None, edges)
    assert result.ndf == expected.dof
    np.testing.assert_allclose([result.chi2, result.pvalue],
                               [expected.statistic, expected.pvalue], rtol=1e-10)


def _null_rates(rng, draws, n_train, n_test, weight):
    """P(p < 0.01) and P(p < 0.05) of each test over identical samples (both classes)."""
    p = {"ks": [], "chi2": []}
    for _ in range(draws):
        samples = []
        for n in (n_train, n_test):
            x = rng.normal(size=2 * n)
            samples += [x, np.r_[np.ones(n), np.zeros(n)], weight(rng, x)]
        result = overtraining_test(*samples)
        for part in (result.signal, result.background):
            p["ks"].append(part.ks_pvalue)
            p["chi2"].append(part.chi2_pvalue)
    return {k: (np.mean(np.array(v) < 0.01), np.mean(np.array(v) < 0.05)) for k, v in p.items()}


@pytest.mark.parametrize("case, n_train, n_test, weight", [
    # the chi2's own variances of the smaller sample: 10 % below 0.01
    ("unit, 5000 against 200", 5000, 200, lambda rng, x: np.ones(x.size)),
    # weights that grow with the score: Kish's sizes (KS 6 %) and the normalisation's
    # spread left out of the chi2 (20 %)
    ("weights exp(1.5 x)", 1000, 1000, lambda rng, x: np.exp(1.5 * x)),
    # half the tail at weight 50 carries most of the weight: chi2 32 %
    ("heavy tail", 1000, 1000,
     lambda rng, x: np.where((x > 1.5) & (rng.random(x.size) < 0.5), 50.0, 1.0)),
    # lognormal weights, k-fold's 4 to 1: chi2 3.7 % with each sample's own mean w^2
    ("lognormal, 4 to 1", 2400, 600, lambda rng, x: rng.lognormal(0.0, 1.5, x.size)),
])
def test_identical_samples_read_overtrained_no_more_often_than_the_threshold(
        case, n_train, n_test, weight):
    """Both tests' false alarms on identical samples, by simulation (400 comparisons a
    case): at most the nominal rate within its Monte Carlo error (about 0.005 at 0.01)."""
    rates = _null_rates(np.random.default_rng(21), 200, n_train, n_test, weight)
    for test, (below_1, below_5) in rates.items():
        assert below_1 <= 0.025 and below_5 <= 0.08, (case, test, rates)


def _scores(rng, n, shift_signal=0.0):
    y = rng.integers(0, 2, n)
    s = rng.normal(np.where(y == 1, 1.0 + shift_signal, -1.0), 1.0)
    return s, y, rng.uniform(0.5, 1.5, n)


def test_overtraining_verdicts():
    rng = np.random.default_rng(14)
    train = _scores(rng, 4000)
    test = _scores(rng, 4000)
    res = overtraining_test(*train, *test)
    for part in (res.signal, res.background):
        assert 0 <= part.ks_statistic <= 1
        assert 0 <= part.ks_pvalue <= 1 and 0 <= part.chi2_pvalue <= 1
        assert part.ndf >= 1 and part.chi2 >= 0
    assert res.verdict in ("ok", "warning")  # same distribution
    overtrained = overtraining_test(*_scores(rng, 4000, shift_signal=0.4), *test)
    assert overtrained.verdict == "overtrained" and not overtrained.passed
    assert overtrained.signal.ks_pvalue < 1e-6
    assert overtrained.background.verdict in ("ok", "warning")


def test_overtraining_input_errors():
    with pytest.raises(ValueError, match="train_y has 2 entries"):
        overtraining_test([0.1, 0.2, 0.3], [0, 1], None, [0.1], [1], None)
    with pytest.raises(ValueError, match="no signal events"):
        overtraining_test([0.1, 0.2], [0, 0], None, [0.1, 0.3], [1, 0], None)
    # A score that is not a number is refused, not binned into a test that cannot fail.
    scores = np.linspace(0.0, 1.0, 40)
    labels = np.tile([0, 1], 20)
    bad = scores.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="train_scores has NaN"):
        overtraining_test(bad, labels, None, scores, labels, None)
    with pytest.raises(ValueError, match="x1 has NaN"):
        weighted_ks_2samp([0.1, np.nan, 0.3], [0.2, 0.4])
    with pytest.raises(ValueError, match="w1 sums to -1"):
        weighted_ks_2samp([0.1, 0.2], [0.2, 0.4], [1.0, -2.0])


def test_ks_below_one_effective_event_has_no_pvalue():
    # Weights that cancel to 1e-9 make the weighted ECDF jump by 1e9: the asymptotic p-value
    # would be 0 ("overtrained") on no information. Kish's n_eff is 5e-19 here.
    ks = weighted_ks_2samp([0.1, 0.2, 0.3], [0.2, 0.4, 0.6], [1.0, -1.0, 1e-9], [1.0, 1.0, 1.0])
    assert ks.n_eff_1 < 1e-18 and np.isnan(ks.pvalue)
    from hepbdt.evaluation.overtraining import _verdict

    assert _verdict([np.nan, np.nan], 0.01, 0.05) == "undetermined"
    assert _verdict([np.nan, 0.2], 0.01, 0.05) == "ok"


def test_too_few_effective_events_give_no_pvalue_not_a_wrong_one():
    """One test event above 60 training scores: the asymptotic KS p-value is 0
    ("overtrained"), scipy's exact test says 2/61; below MIN_EFFECTIVE_EVENTS (10) of a
    class's training or test events the check gives no p-value, and a k-fold combination
    is then decided by the folds that have them."""
    train = np.linspace(0.0, 1.0, 60)
    assert weighted_ks_2samp(train, [2.0]).pvalue == 0.0
    assert ks_2samp(train, [2.0], method="exact").pvalue == pytest.approx(2 / 61)
    y_train = np.repeat([1, 0], 60)
    tiny = overtraining_test(np.r_[train, train], y_train, None, np.array([2.0, 0.5]),
                             np.array([1, 0]), None)
    assert tiny.verdict == "undetermined"
    from hepbdt.analysis.summary import overtraining_lines

    lines = overtraining_lines(tiny)
    assert "fewer than 10 effective training or test events: 1;" in lines[1]
    for part in (tiny.signal, tiny.background):
        assert np.isnan(part.ks_pvalue) and np.isnan(part.chi2_pvalue)
        assert part.ks_statistic > 0 and part.n_eff_test == pytest.approx(1.0)
    # ten effective test events (weights of equal size) are enough; nine are not
    for n_test, has_pvalue in ((10, True), (9, False)):
        test = np.linspace(0.02, 0.98, n_test)
        check = overtraining_test(np.r_[train, train], y_train, None, np.r_[test, test],
                                  np.repeat([1, 0], n_test), np.full(2 * n_test, 3.0))
        assert np.isfinite(check.signal.ks_pvalue) == has_pvalue
        assert check.verdict == ("ok" if has_pvalue else "undetermined")
    fold = _fold_check(np.random.default_rng(5), 0.0)[0]
    combined = combined_over_folds([tiny, fold])
    for part in ("signal", "background"):
        for pvalue in ("ks_pvalue", "chi2_pvalue"):
            got, one = getattr(getattr(combined, part), pvalue), getattr(getattr(fold, part), pvalue)
            assert got == pytest.approx(min(1.0, 2 * one), rel=1e-12)


def _fold_check(rng, shift, n=800):
    """One fold's check: training and test scores of signal (shifted by ``shift`` in the
    training) and background, unit weights."""
    tr = np.concatenate([rng.normal(shift, 1, n), rng.normal(-1, 1, n)])
    te = np.concatenate([rng.normal(0, 1, n), rng.normal(-1, 1, n)])
    y = np.repeat([1, 0], n)
    return overtraining_test(tr, y, None, te, y, None), tr, te, y


def test_folds_combine_by_bonferroni_over_scipy_pvalues():
    """Each p-value of the combined check is the smallest of the folds' scipy p-values
    times k (at most 1), with that fold's statistic; a NaN fold does not hide the others."""
    rng = np.random.default_rng(5)
    folds = [_fold_check(rng, shift) for shift in (0.0, 0.12, 0.02)]
    combined = combined_over_folds([c for c, *_ in folds])
    for part, label in (("signal", 1), ("background", 0)):
        ks = [ks_2samp(tr[y == label], te[y == label], method="asymp") for _, tr, te, y in folds]
        best = min(range(3), key=lambda i: ks[i].pvalue)
        got = getattr(combined, part)
        assert got.ks_pvalue == pytest.approx(min(1.0, 3 * ks[best].pvalue), rel=1e-6)
        assert got.ks_statistic == pytest.approx(ks[best].statistic, abs=1e-9)
        chi2 = min(getattr(c, part).chi2_pvalue for c, *_ in folds)
        assert got.chi2_pvalue == pytest.approx(min(1.0, 3 * chi2), rel=1e-12)
    assert combined.signal.ks_pvalue < 0.01 and combined.verdict == "overtrained"
    first = folds[0][0]
    nan_fold = dataclasses.replace(first, signal=dataclasses.replace(
        first.signal, ks_pvalue=float("nan")))
    again = combined_over_folds([nan_fold, folds[1][0], folds[2][0]])
    assert again.signal.ks_pvalue == combined.signal.ks_pvalue


def test_combined_folds_keep_the_false_alarm_rate():
    """With no model overtrained, the combined verdict says "overtrained" at most about as
    often as one fold's check (below 0.01 in at most ~1% of trials, not k times more)."""
    rng = np.random.default_rng(9)
    alarms = sum(combined_over_folds([_fold_check(rng, 0.0, 200)[0] for _ in range(5)]
                                     ).signal.ks_pvalue < 0.05 for _ in range(300))
    assert alarms <= 0.05 * 300 + 3 * np.sqrt(0.05 * 0.95 * 300)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_effective_sample_size_refuses_weights_that_are_not_numbers(bad):
    """[1, 2, nan] gave 0.0 and [1, 2, inf] NaN; the other checks refuse them."""
    assert effective_sample_size([1.0, 2.0, 3.0]) == pytest.approx(36 / 14)
    with pytest.raises(ValueError, match="NaN or infinite"):
        effective_sample_size([1.0, 2.0, bad])


def test_the_checks_chi2_uses_the_asked_equal_count_bins_and_is_pearsons():
    """Unit weights, 300 training against 200 test events a class, bins=8 (fewer than the
    20 the 200 effective events allow): 8 bins of the pooled scores, each holding 500/8
    events, and the chi2 Pearson's of the 2 x 8 table (scipy)."""
    rng = np.random.default_rng(8)
    tr_s, te_s = rng.normal(size=600), rng.normal(size=400)
    tr_y, te_y = np.repeat([0, 1], 300), np.repeat([0, 1], 200)
    result = overtraining_test(tr_s, tr_y, None, te_s, te_y, None, bins=8)
    for label, part in ((1, result.signal), (0, result.background)):
        a, b = tr_s[tr_y == label], te_s[te_y == label]
        edges = part.bin_edges
        assert edges.size == 9 and edges[0] == min(a.min(), b.min())
        assert edges[-1] == max(a.max(), b.max())
        pooled_counts = np.histogram(np.r_[a, b], edges)[0]
        assert pooled_counts.min() >= 62 and pooled_counts.max() <= 63
        table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
        expected = chi2_contingency(table, correction=False)
        assert part.ndf == expected.dof == 7
        np.testing.assert_allclose([part.chi2, part.chi2_pvalue],
                                   [expected.statistic, expected.pvalue], rtol=1e-9)


def test_combined_verdict_is_the_worse_class_whichever_it_is():
    """Two folds, the signal of one trained on scores shifted by 0.3: scipy's KS p-values
    times 2 put signal below 0.01 and background above 0.05, so the combined verdict is
    "overtrained" whichever class is the overtrained one (labels swapped)."""
    rng = np.random.default_rng(2)
    folds = [_fold_check(rng, shift, 400) for shift in (0.0, 0.3)]
    for swap in (False, True):
        checks = []
        for _, tr, te, y in folds:
            yy = 1 - y if swap else y
            checks.append(overtraining_test(tr, yy, None, te, yy, None))
        combined = combined_over_folds(checks)
        bad, good = ("background", "signal") if swap else ("signal", "background")
        ks = {label: min(ks_2samp(tr[y == label], te[y == label], method="asymp").pvalue
                         for _, tr, te, y in folds) for label in (0, 1)}
        assert 2 * ks[1] < 0.01 < 0.05 < 2 * ks[0]
        assert getattr(combined, bad).ks_pvalue == pytest.approx(2 * ks[1], rel=1e-6)
        assert getattr(combined, bad).verdict == "overtrained"
        assert getattr(combined, good).verdict == "ok"
        assert combined.verdict == "overtrained" and not combined.passed


def test_ks_of_a_sample_under_one_kish_event_has_no_pvalue_on_either_side():
    """Weights 3 and -0.2: Kish's (2.8)^2 / 9.04 = 0.867 effective events, against 50 unit
    events (whose size alone would round the p-value's to one event): no p-value, whichever
    sample it is."""
    rng = np.random.default_rng(0)
    other = rng.normal(size=50)
    few, weights = np.array([-0.1, 0.3]), np.array([3.0, -0.2])
    first = weighted_ks_2samp(few, other, weights, None)
    second = weighted_ks_2samp(other, few, None, weights)
    assert first.n_eff_1 == second.n_eff_2 == pytest.approx(2.8 ** 2 / 9.04, rel=1e-12)
    assert np.isnan(first.pvalue) and np.isnan(second.pvalue)
    assert first.statistic == pytest.approx(second.statistic, abs=1e-12)


def test_ks_pvalue_of_score_independent_weights_uses_kishs_sizes():
    """1,500 unit events against 1,500 of lognormal weights (sigma 1) drawn apart from the
    scores: the p-value is scipy's kstwo at round(k1 k2 / (k1 + k2)) events, with Kish's
    sizes by hand, within 20 % of that size (the sizes are estimated at three quantiles),
    and D the brute-force largest gap of the weighted ECDFs."""
    from scipy.stats import kstwo

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=1500), rng.normal(0.05, 1.0, size=1500)
    wb = rng.lognormal(0.0, 1.0, size=1500)
    for x1, x2, w1, w2 in ((a, b, None, wb), (b, a, wb, None)):
        got = weighted_ks_2samp(x1, x2, w1, w2)
        u1 = np.ones_like(x1) if w1 is None else w1
        u2 = np.ones_like(x2) if w2 is None else w2
        grid = np.r_[x1, x2]
        cdf1 = (u1[None, :] * (x1[None, :] <= grid[:, None])).sum(axis=1) / u1.sum()
        cdf2 = (u2[None, :] * (x2[None, :] <= grid[:, None])).sum(axis=1) / u2.sum()
        d = np.abs(cdf1 - cdf2).max()
        assert got.statistic == pytest.approx(d, abs=1e-12)
        k1, k2 = u1.sum() ** 2 / (u1 ** 2).sum(), u2.sum() ** 2 / (u2 ** 2).sum()
        en = k1 * k2 / (k1 + k2)
        assert kstwo.sf(d, round(1.2 * en)) <= got.pvalue <= kstwo.sf(d, round(en / 1.2))
