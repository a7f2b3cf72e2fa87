"""A weight of 0 is no event, in every rule, count and binning (the sibling audit of
2026-12-04, after min_node_size="auto" counted such rows). The reference of each test is
the same events without their rows of weight 0."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.evaluation import (
    decorrelation_measures,
    overtraining_test,
    resolution_vs_target,
    significance_scan,
)
from hepbdt.io.dataset import Dataset


def _separable(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("norm", ["num_events", "equal_num_events"])
def test_split_norm_counts_events_of_non_zero_weight(norm: str) -> None:
    # 2,000 signal rows of weight 0 took the signal/background ratio of num_events from
    # 0.94 to 2.88 (scores moved by 0.82); equal_num_events scaled both classes by 3
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    y = (rng.random(2000) < 0.5).astype(np.int8)
    Z = rng.normal(size=(2000, 3)).astype(np.float32)
    plain = Dataset(X, y, np.ones(2000)).normalize(norm)
    padded = Dataset(np.r_[X, Z], np.r_[y, np.ones(2000, np.int8)],
                     np.r_[np.ones(2000), np.zeros(2000)]).normalize(norm)
    np.testing.assert_array_equal(padded.w[:2000], plain.w)
    assert not padded.w[2000:].any()


def test_regress_leaves_events_of_weight_zero_at_zero() -> None:
    # the default policy made targets of 0 of them and calibrated 500 of 1,000 such rows
    # to positive weights (13.5 in all): the mean score at x0 = -3 went from -1.10 to +0.59
    X, y = _separable(4000, 2)
    rng = np.random.default_rng(3)
    w = np.where(rng.random(4000) < 0.15, -1.0, 1.0)
    Z = rng.normal(size=(1000, 3)).astype(np.float32)
    Z[:, 0] = -3.0
    options = dict(n_trees=10, max_depth=3, random_state=0, negative_weights="regress")
    plain = BDTClassifier(**options).fit(X, y, w)
    padded = BDTClassifier(**options).fit(np.r_[X, Z], np.r_[y, np.ones(1000, int)],
                                          np.r_[w, np.zeros(1000)])
    np.testing.assert_array_equal(padded.decision_function(X), plain.decision_function(X))


@pytest.mark.parametrize("boosting", ["adaboost", "realadaboost"])
def test_adaboost_min_node_size_counts_events_of_non_zero_weight(boosting: str) -> None:
    # TMVA's MinNodeSize counts events: 3,000 rows of weight 0 beside 3,000 events halved
    # the smallest node (scores by up to 0.23, realadaboost 1.27)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(size=3000) > 0).astype(int)
    Z = rng.normal(size=(3000, 4)).astype(np.float32)
    options = dict(boosting=boosting, n_trees=20, max_depth=4, min_node_size=0.05,
                   random_state=0)
    plain = BDTClassifier(**options).fit(X, y)
    padded = BDTClassifier(**options).fit(np.r_[X, Z], np.r_[y, rng.integers(0, 2, 3000)],
                                          np.r_[np.ones(3000), np.zeros(3000)])
    np.testing.assert_allclose(padded.decision_function(X), plain.decision_function(X),
                               rtol=0, atol=1e-12)


def test_overtraining_bins_and_counts_are_of_events() -> None:
    # 8,000 test rows of weight 0: ndf 19 -> 10, the chi2 p-value 0.61 -> 0.84
    rng = np.random.default_rng(6)
    s_tr, s_te = rng.normal(1, 1, 2000), rng.normal(1, 1, 2000)
    b_tr, b_te = rng.normal(-1, 1, 2000), rng.normal(-1, 1, 2000)
    y = np.r_[np.ones(2000, int), np.zeros(2000, int)]
    plain = overtraining_test(np.r_[s_tr, b_tr], y, np.ones(4000),
                              np.r_[s_te, b_te], y, np.ones(4000))
    zeros = rng.normal(3, 1, 8000)
    padded = overtraining_test(np.r_[s_tr, b_tr], y, np.ones(4000),
                               np.r_[s_te, b_te, zeros],
                               np.r_[y, np.ones(4000, int), np.zeros(4000, int)],
                               np.r_[np.ones(4000), np.zeros(8000)])
    for a, b in ((plain.signal, padded.signal), (plain.background, padded.background)):
        assert (a.ndf, a.chi2, a.ks_pvalue) == (b.ndf, b.chi2, b.ks_pvalue)
        np.testing.assert_array_equal(a.bin_edges, b.bin_edges)


def test_decorrelation_mass_bins_span_the_background_events() -> None:
    # one background row of weight 0 at m = 2000 stretched the bins from [50, 55, ..., 200]
    # to [50, 115, ..., 2000] and understated the sculpting (JSD 0.438 -> 0.338)
    rng = np.random.default_rng(4)
    m_b = rng.uniform(50, 200, 20000)
    score = np.r_[rng.normal(size=5000) + 2, rng.normal(size=20000) + 0.02 * (m_b - 125)]
    y = np.r_[np.ones(5000, int), np.zeros(20000, int)]
    mass = np.r_[rng.normal(125, 10, 5000), m_b]
    plain = decorrelation_measures(score, y, mass, np.ones(25000))
    padded = decorrelation_measures(np.r_[score, 0.0], np.r_[y, 0], np.r_[mass, 2000.0],
                                    np.r_[np.ones(25000), 0.0])
    np.testing.assert_array_equal(padded.mass_edges, plain.mass_edges)
    np.testing.assert_array_equal(padded.background_jsd, plain.background_jsd)


def test_resolution_bins_and_counts_are_of_events() -> None:
    # equal-count target bins were quantiles of every row: edges [0, 21.7, ...] became
    # [0, 41.1, ...], the first bin's RMSE 1.51 -> 2.11, each count doubled
    rng = np.random.default_rng(7)
    t = rng.uniform(0, 100, 5000)
    p = t + rng.normal(0, 1 + t / 20)
    plain = resolution_vs_target(t, p, np.ones(5000), bins=5)
    zt = rng.uniform(0, 40, 5000)
    padded = resolution_vs_target(np.r_[t, zt], np.r_[p, zt + 9], np.r_[np.ones(5000),
                                                                         np.zeros(5000)], bins=5)
    np.testing.assert_array_equal(padded.edges, plain.edges)
    np.testing.assert_array_equal(padded.count, plain.count)
    np.testing.assert_allclose(padded.rmse, plain.rmse, rtol=1e-12)  # sums' order only


def test_significance_scan_counts_monte_carlo_events_of_non_zero_weight() -> None:
    # 5,000 background rows of weight 0 at high score: 3,729 'background MC events' at the
    # best cut instead of 49
    rng = np.random.default_rng(9)
    score = np.r_[rng.normal(1.5, 1, 500), rng.normal(0, 1, 5000)]
    y = np.r_[np.ones(500, int), np.zeros(5000, int)]
    plain = significance_scan(y, score, np.ones(5500)).best_cuts["s_over_sqrt_b"]
    padded = significance_scan(np.r_[y, np.zeros(5000, int)],
                               np.r_[score, rng.normal(2.5, 0.3, 5000)],
                               np.r_[np.ones(5500), np.zeros(5000)]).best_cuts["s_over_sqrt_b"]
    assert (padded.threshold, padded.value) == (plain.threshold, plain.value)
    assert (padded.n_signal_mc, padded.n_background_mc) == (plain.n_signal_mc,
                                                            plain.n_background_mc)
