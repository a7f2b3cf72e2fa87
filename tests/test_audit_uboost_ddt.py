"""Audit of uBoost and the DDT map against independent references: hep_ml's uBoost
reweighting, a separable sample's labels, the direction of the reweighting with negative
weights, and brute-force weighted CDFs of the map's mass bins."""

from __future__ import annotations

import numpy as np
import pytest
from hep_ml.uboost import uBoostBDT

from hepbdt import BDTClassifier
from hepbdt.boosting.ddt import LEVELS, apply_quantile_map, fit_quantile_map
from hepbdt.boosting.uboost import UniformityWeights


@pytest.mark.parametrize("target,label", [("background", 0), ("signal", 1)])
def test_uniformity_factor_and_cut_match_hep_ml(target, label):
    # unit weights, distinct scores, 4 bins of 30 events: hep_ml's cut (interpolated
    # quantile) and neighbour groups (the bin's events) are then hepbdt's cut and bins
    rng = np.random.default_rng(3)
    n_class, n_bins, e, rate = 120, 4, 0.25, 1.3
    y = np.r_[np.full(n_class, label), np.full(40, 1 - label)]
    m = rng.permutation(n_class + 40).astype(np.float64)
    score = rng.normal(size=y.size)
    boosted = rng.uniform(0.5, 2.0, y.size)
    uw = UniformityWeights(m, y, np.ones(y.size), e, rate, n_bins, target)
    uw.measure(score)
    mine = np.flatnonzero(y == label)
    rank = np.argsort(np.argsort(m[mine]))
    group = rank // (n_class // n_bins)
    members = [np.flatnonzero(group == g) for g in range(n_bins)]
    ref = uBoostBDT(uniform_features=None, uniform_label=label, target_efficiency=e,
                    uniforming_rate=rate, smoothing=0.0)
    ref.signed_uniform_label = 2 * label - 1
    ref.knn_indices = np.array([members[g] for g in group])
    multipliers, cut = ref._compute_uboost_multipliers(boosted[mine].copy(), score[mine],
                                                       np.full(n_class, label))
    assert uw.cuts[-1] == pytest.approx(cut, abs=1e-12)
    np.testing.assert_allclose(uw.factor(boosted), multipliers, rtol=1e-12)


def _separable(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    X = np.column_stack([y + 0.1 * rng.random(n), rng.random(n)]).astype(np.float32)
    return X, y, rng.uniform(0, 1, n)


@pytest.mark.parametrize("target", ["background", "signal"])
def test_a_class_of_one_score_is_not_cut_through(target):
    # a perfect first tree gives each class one score: the old cut sat on it, so every
    # targeted event scored sigmoid(0) = 0.5 and predict said background for all signal
    X, y, m = _separable()
    model = BDTClassifier(boosting="adaboost", n_trees=5, max_depth=2, decorrelation="uboost",
                          decorrelation_steps=3, decorrelation_target=target)
    model.fit(X, y, decorrelate=m)
    np.testing.assert_array_equal(model.predict(X), y)
    spec = model.forest_.extra["uboost"]
    assert spec["step_trees"] == [1, 1, 1]  # each step stopped at its perfect first tree
    label, sign = (1, 1.0) if target == "signal" else (0, -1.0)
    raw = 2.0 * y - 1.0  # the one tree's score: +1 signal, -1 background
    for e, cuts in zip(spec["efficiencies"], spec["cuts"], strict=True):
        passed = sign * raw[y == label] > sign * cuts[-1]
        assert np.all(passed) if e >= 0.5 else not np.any(passed)  # the side nearest e
        assert np.min(np.abs(raw - cuts[-1])) > 0.1


def test_negative_weights_do_not_reverse_the_reweighting():
    # two bins of the signal class, net efficiencies 3 and -2 at the cut 0: a bin passing
    # too rarely must gain weight (Stevens and Williams), whatever the signed sums say
    m = np.array([0.1, 0.2, 0.8, 0.9, 0.5, 0.6])
    score = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    w = np.array([3.0, -2.0, -2.0, 3.0, 1.0, 1.0])
    y = np.array([1, 1, 1, 1, 0, 0])
    uw = UniformityWeights(m, y, w, 0.5, 1.0, 2, "signal")
    uw.measure(score)
    assert uw.cuts[-1] == 0.0
    signal = y == 1
    passed = (score > 0) & signal
    net = [w[passed & (m < 0.5)].sum() / w[signal & (m < 0.5)].sum(),
           w[passed & (m > 0.5)].sum() / w[signal & (m > 0.5)].sum()]
    assert net == [3.0, -2.0]  # outside [0, 1]: the case under test
    factor = uw.factor(w)
    assert np.all(factor[2:] > 1.0) and np.all(factor[:2] < 1.0)
    assert np.all((uw.local >= 0) & (uw.local <= 1))


def _brute_cdf(score, w, at):
    """The weighted CDF P(S <= at) of a bin's events."""
    return np.array([w[score <= a].sum() / w.sum() for a in np.atleast_1d(at)])


def _net_cdf(score, w, at):
    """The net (signed) CDF made non-decreasing (its running maximum over the scores) and
    clipped to [0, 1]: the inverse of the first score at which the net sum reaches q."""
    grid = np.sort(score)
    running = np.clip(np.maximum.accumulate(_brute_cdf(score, w, grid)), 0.0, 1.0)
    return np.array([running[grid <= a][-1] if np.any(grid <= a) else 0.0 for a in at])


def test_zero_weight_events_do_not_change_the_map():
    rng = np.random.default_rng(5)
    n, zeros = 600, 2000
    m = rng.uniform(0, 1, n)
    score = rng.normal(size=n) + 2 * m
    w = rng.uniform(0.5, 1.5, n)
    spec = fit_quantile_map(score, m, w, None)
    padded = fit_quantile_map(np.r_[score, rng.normal(size=zeros) - 9], np.r_[m, rng.uniform(
        0, 1, zeros)], np.r_[w, np.zeros(zeros)], None)
    probe_s, probe_m = rng.normal(size=50) + 1, rng.uniform(0, 1, 50)
    np.testing.assert_array_equal(apply_quantile_map(padded, probe_s, probe_m),
                                  apply_quantile_map(spec, probe_s, probe_m))
    # 2 bins (600 events): each centre's F is the bin's weighted CDF up to a level step
    median = np.sort(m)[np.searchsorted(np.cumsum(w[np.argsort(m)]), 0.5 * w.sum())]
    for c, inside in enumerate((m <= median, m > median)):
        got = apply_quantile_map(spec, probe_s, np.full(50, spec["centres"][c]))
        assert np.max(np.abs(got - _brute_cdf(score[inside], w[inside], probe_s))) < 0.012
    with pytest.raises(ValueError, match="5 of non-zero weight are too few"):
        fit_quantile_map(score[:25], m[:25], np.r_[np.ones(5), np.zeros(20)], None)


def test_a_bin_of_negative_net_weight_is_merged_not_read_with_abs_weights():
    # the weight-200 event fixes the one edge; the events above it net -60: that bin has no
    # CDF of its own (it was read with |w|), so it joins the bin below
    rng = np.random.default_rng(6)
    m = np.r_[rng.uniform(0, 0.4, 20), 0.5, rng.uniform(0.6, 1.0, 140)]
    w = np.r_[np.ones(20), 200.0, np.ones(40), -np.ones(100)]
    score = rng.normal(size=m.size)
    above = m > 0.5
    assert w[above].sum() < 0 < w[~above].sum()
    spec = fit_quantile_map(score, m, w, None)
    assert len(spec["centres"]) == 1  # one region of positive net weight: all events
    probe = np.linspace(-2, 2, 9)
    got = apply_quantile_map(spec, probe, np.full(9, 0.8))
    level_step = np.max(np.diff(LEVELS))
    assert np.max(np.abs(got - _net_cdf(score, w, probe))) <= level_step + 1e-12
    with pytest.raises(ValueError, match="weights sum to -"):
        fit_quantile_map(score, m, -np.abs(w), None)


def test_apply_refuses_missing_masses_and_mismatched_shapes():
    rng = np.random.default_rng(7)
    spec = fit_quantile_map(rng.normal(size=600), rng.uniform(0, 1, 600), np.ones(600), None)
    with pytest.raises(ValueError, match="m are NaN or infinite"):
        apply_quantile_map(spec, np.zeros(3), np.array([0.5, np.nan, 0.2]))
    with pytest.raises(ValueError, match="one score and one m per event"):
        apply_quantile_map(spec, np.zeros(3), np.array(0.5))
    with pytest.raises(ValueError, match="score are NaN or infinite"):
        fit_quantile_map(np.r_[np.nan, np.zeros(599)], np.zeros(600), np.ones(600), None)


def test_a_uboost_model_is_described_by_all_its_trees():
    """n_trees_ of a uBoost model counts the trees of one efficiency step: the summary, the
    report and the learning curve said "4 trees" for 3 steps of 4 (12 trees)."""
    import importlib

    from hepbdt.analysis.summary import _trees_text
    from hepbdt.evaluation import learning_curve

    report = importlib.import_module("hepbdt.report")
    X, y, _ = _separable(600, seed=3)
    X[:, 0] += np.random.default_rng(1).normal(0, 0.6, X.shape[0]).astype(np.float32)
    model = BDTClassifier(boosting="adaboost", decorrelation="uboost", decorrelation_steps=3,
                          n_trees=4, max_depth=2).fit(X, y, decorrelate=X[:, 1])
    assert model.forest_.tree_offsets.size - 1 == 12 and model.n_trees_ == 4
    words = "4 trees a step, 3 uBoost efficiency steps (12 trees)"
    assert _trees_text([model]) == words
    assert f"adaboost boosting: {words} (" in report._describe_model(model, 2)
    assert learning_curve(model, (X, y), (X, y)).unit.endswith("(12 trees)")


def test_a_uboost_fit_that_left_trees_out_counts_them_over_its_steps():
    """Steps of unequal sizes (resampled trees left out): the reason said "kept 196 trees"
    (the largest step) beside 56 left out of 5 x 200, and the unit "196 trees a step"."""
    from hepbdt.estimators import tree_unit

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1000)
    X = rng.normal(size=(1000, 3)).astype(np.float32)
    X[:, 0] += y
    mass = rng.uniform(50, 200, 1000) + 20 * y
    model = BDTClassifier(boosting="adaboost", decorrelation="uboost", n_trees=40,
                          subsample=0.1, max_depth=3, random_state=1).fit(X, y, decorrelate=mass)
    steps = model.forest_.extra["uboost"]["step_trees"]
    assert min(steps) < max(steps) and model.forest_.n_trees == sum(steps)
    reason = model.n_trees_reason_
    assert f"kept {sum(steps)} of {40 * len(steps)} trees over {len(steps)} uBoost" in reason
    assert f"; {40 * len(steps) - sum(steps)} resampled tree(s) left out" in reason
    assert tree_unit(model) == (f"trees in the largest of {len(steps)} uBoost efficiency steps "
                                f"({min(steps)}-{max(steps)} a step, {sum(steps)} trees)")
