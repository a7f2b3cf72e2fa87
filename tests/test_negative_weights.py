"""Negative event weights: pairing, the regress policy, every booster under every policy,
NLO-like cancellation, degenerate cases under a deadline."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.boosting.negative_weights import (
    pair_negative_weights,
    pair_weights,
    regress_negative_weights,
    regress_weights,
)

POLICIES = ("pair", "regress", "keep", "ignore", "abs")
BOOSTINGS = ("gradient", "newton", "adaboost", "realadaboost", "eps", "bagging")


def test_pair_annihilates_with_nearest_same_class_neighbours():
    X = np.array([[0.0], [0.1], [0.15], [5.0], [0.12]], dtype=np.float32)
    y = np.array([0, 0, 0, 0, 1])
    w = np.array([1.0, -1.5, 1.0, 1.0, 1.0])
    Xp, yp, wp = pair_negative_weights(X, y, w)
    # The -1.5 at 0.1 eats its nearest background neighbour at 0.15 (not the signal at
    # 0.12), then 0.5 of the next one at 0.0; the far event at 5.0 is untouched.
    assert Xp[:, 0].tolist() == pytest.approx([0.0, 5.0, 0.12])
    assert wp.tolist() == pytest.approx([0.5, 1.0, 1.0])
    assert yp.tolist() == [0, 0, 1]


@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_pair_keeps_class_sums_and_leaves_no_negative_weight(fraction):
    rng = np.random.default_rng(3)
    n = 5000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[rng.random((n, 5)) < 0.02] = np.nan
    y = rng.integers(0, 2, n)
    w = rng.gamma(3.0, 1.0, n)
    w[rng.random(n) < fraction] *= -1
    Xp, yp, wp = pair_negative_weights(X, y, w)
    assert np.all(wp > 0) and Xp.shape == (wp.size, 5)
    for c in (0, 1):
        assert wp[yp == c].sum() == pytest.approx(w[y == c].sum(), rel=1e-12)
    # A tiny candidate list forces the second pass for many events: same invariants.
    again = pair_weights(X[y == 0], w[y == 0], n_neighbours=1)
    assert np.all(again >= 0) and again.sum() == pytest.approx(w[y == 0].sum(), rel=1e-12)


@pytest.mark.parametrize("n_neg, n_pos, k", [(37, 5000, 16), (5, 3, 8), (20, 2049, 1)])
def test_neighbour_search_equals_a_full_distance_matrix(n_neg, n_pos, k):
    from hepbdt.boosting.negative_weights import KNN_BLOCK, KNN_TILE, _nearest

    assert n_pos > KNN_BLOCK or n_neg % KNN_TILE or k > n_pos  # blocks, tiles, short lists
    rng = np.random.default_rng(n_neg)
    Z_neg, Z_pos = rng.normal(size=(n_neg, 6)), rng.normal(size=(n_pos, 6))
    d = ((Z_neg[:, None, :] - Z_pos[None, :, :]) ** 2).sum(axis=-1)
    ref = np.argsort(d, axis=1, kind="stable")[:, :min(k, n_pos)]
    found = _nearest(Z_neg, Z_pos, k)
    assert found.shape == ref.shape
    # Single-precision distances may swap near-ties: compare the distances found.
    np.testing.assert_allclose(np.take_along_axis(d, found, 1), np.take_along_axis(d, ref, 1),
                               rtol=1e-5)


def test_pair_refuses_a_class_with_negative_net_weight():
    X = np.zeros((3, 1), np.float32)
    with pytest.raises(ValueError, match="net weight"):
        pair_negative_weights(X, np.zeros(3), np.array([1.0, -2.0, 0.5]))


# Summed in this order the net weight is +1.1e-16, but the negative event, meeting its
# neighbours 0.2, 0.6 and 0.001 in that order, is left at -8.7e-19 with every positive
# weight used up: the pairing used to widen its search forever.
ROUNDING_X = np.array([[1.0], [2.0], [3.0], [0.0]], np.float32)
ROUNDING_W = np.array([0.2, 0.6, 0.001, -0.8009999999999999])


@pytest.mark.timeout(20)  # a policy that loops forever fails, not hangs
def test_pair_refuses_a_net_weight_within_rounding():
    assert ROUNDING_W.sum() > 0
    with pytest.raises(ValueError, match="beyond the rounding"):
        pair_weights(ROUNDING_X, ROUNDING_W)


@pytest.mark.timeout(20)
def test_pair_ends_when_every_positive_weight_is_used_up(monkeypatch):
    import hepbdt.boosting.negative_weights as nw

    monkeypatch.setattr(nw, "_rounding", lambda w: 1e-17)  # let the net weight pass
    w = pair_weights(ROUNDING_X, ROUNDING_W)  # the -8.7e-19 left is within it: dropped
    assert np.all(w >= 0) and w.sum() == 0
    # The -8.7e-19 is the rounding of the three sums that made it (eps x 3 x 1.6 bounds it):
    # the pairing now cancels it to exact zeros itself, with no slack from _rounding.
    monkeypatch.setattr(nw, "_rounding", lambda w: 0.0)
    w = pair_weights(ROUNDING_X, ROUNDING_W)
    assert np.all(w == 0.0)


@pytest.mark.timeout(20)
def test_pair_with_ties_and_one_class_all_negative():
    X = np.zeros((400, 3), np.float32)  # every distance ties
    w = np.tile([1.0, -0.5, 2.0, -1.5], 100)
    first = pair_weights(X, w)
    assert np.array_equal(first, pair_weights(X, w))  # ties broken the same way every time
    assert np.all(first >= 0) and first.sum() == pytest.approx(w.sum(), rel=1e-12)
    y = np.repeat([0, 1], 200)
    w_classes = np.where(y == 1, -np.abs(w), np.abs(w))  # the signal class all negative
    with pytest.raises(ValueError, match="net weight"):
        pair_negative_weights(X, y, w_classes)


def _negative_sample(fraction, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.7, n) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    w[rng.random(n) < fraction] *= -1
    return X, y, w


@pytest.mark.parametrize("boosting", BOOSTINGS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_every_booster_trains_with_negative_weights(boosting, policy, fraction):
    X, y, w = _negative_sample(fraction)
    clf = BDTClassifier(boosting=boosting, negative_weights=policy, n_trees=15, max_depth=3,
                        min_node_size=0.02 if boosting != "newton" else 0.0,
                        random_state=0).fit(X, y, w)
    s = clf.decision_function(X)
    p = clf.predict_proba(X)
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(p))
    assert np.all(np.isfinite(clf.forest_.value)) and np.all(np.isfinite(clf.forest_.tree_weights))
    if policy == "keep" and boosting in ("realadaboost", "adaboost", "eps"):
        # The exponential loss is unbounded below with signed weights: boosting stops at
        # the first round whose reweighting would make the net weight non-positive.
        return
    assert clf.score(X, y) > 0.6


@pytest.mark.parametrize("boosting", ["adaboost", "eps"])
def test_inverse_boost_policy(boosting):
    X, y, w = _negative_sample(0.2)
    clf = BDTClassifier(boosting=boosting, negative_weights="inverse_boost", n_trees=20,
                        min_node_size=0.02, random_state=0).fit(X, y, w)
    assert np.all(np.isfinite(clf.decision_function(X)))


@pytest.mark.parametrize("policy", POLICIES)
def test_regressor_with_negative_weights(policy):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    t = 2 * X[:, 0] + np.sin(X[:, 1]) + rng.normal(0, 0.1, 2000)
    w = rng.uniform(0.5, 1.5, 2000)
    w[rng.random(2000) < 0.2] *= -1
    reg = BDTRegressor(n_trees=30, negative_weights=policy, random_state=0).fit(X, t, w)
    pred = reg.predict(X)
    assert np.all(np.isfinite(pred))
    if policy != "keep":  # signed weights: finite, but leaves with tiny net weight are noisy
        assert np.corrcoef(pred, t)[0, 1] > 0.9


def nlo_sample(n, seed):
    """Signal N((1,1)), background N((-1,-1)), plus a signal-like component at (1.5, 0.5)
    in the background with weight +1 and an identical one with weight -1 (net: none)."""
    rng = np.random.default_rng(seed)
    k = n // 2
    X = np.vstack([rng.normal([1.0, 1.0, 0.0], 1.0, size=(n, 3)),
                   rng.normal([-1.0, -1.0, 0.0], 1.0, size=(n, 3)),
                   rng.normal([1.5, 0.5, 0.0], 0.5, size=(k, 3)),
                   rng.normal([1.5, 0.5, 0.0], 0.5, size=(k, 3))]).astype(np.float32)
    y = np.r_[np.ones(n), np.zeros(n + 2 * k)]
    w = np.r_[np.ones(2 * n + k), -np.ones(k)]
    is_net = np.r_[np.ones(2 * n, bool), np.zeros(2 * k, bool)]
    return X, y, w, is_net


@pytest.mark.parametrize("boosting", ["gradient", "adaboost"])
def test_nlo_cancellation_needs_the_negative_weights(boosting):
    from sklearn.metrics import roc_auc_score

    X, y, w, is_net = nlo_sample(8000, 1)
    Xt, yt, _, net_t = nlo_sample(8000, 2)
    Xt, yt = Xt[net_t], yt[net_t]
    kw = dict(boosting=boosting, n_trees=100, max_depth=3, min_node_size=0.01, random_state=0)
    auc = {"net": roc_auc_score(yt, BDTClassifier(**kw).fit(X[is_net], y[is_net], w[is_net])
                                .decision_function(Xt))}
    auc["default"] = roc_auc_score(yt, BDTClassifier(**kw).fit(X, y, w).decision_function(Xt))
    for policy in ("ignore", "abs"):
        clf = BDTClassifier(negative_weights=policy, **kw).fit(X, y, w)
        auc[policy] = roc_auc_score(yt, clf.decision_function(Xt))
    print(boosting, {k: round(v, 4) for k, v in auc.items()})
    assert auc["default"] >= auc["net"] - 0.005
    assert auc["default"] >= auc["ignore"] + 0.01  # dropping leaves the contamination in
    assert auc["default"] >= auc["abs"] + 0.02  # |w| doubles it
    assert auc["ignore"] > auc["abs"]


def test_random_flips_on_tutorial_data_lose_little(tmva_class_data):
    from sklearn.metrics import roc_auc_score

    X, y, w, train = tmva_class_data
    flip = np.random.default_rng(0).random(y.size) < 0.1
    w_flip = np.where(flip, -w, w)
    tr, te = train, ~train
    kw = dict(boosting="gradient", n_trees=200, max_depth=3, min_node_size=0.025, random_state=1)
    dropped = BDTClassifier(**kw).fit(X[tr & ~flip], y[tr & ~flip], w[tr & ~flip])
    flipped = BDTClassifier(**kw).fit(X[tr], y[tr], w_flip[tr])
    a_drop = roc_auc_score(y[te], dropped.decision_function(X[te]), sample_weight=w[te])
    a_flip = roc_auc_score(y[te], flipped.decision_function(X[te]), sample_weight=w[te])
    print(f"random flips: dropped {a_drop:.4f}, default policy {a_flip:.4f}")
    assert a_flip >= a_drop - 0.01  # the benchmark measures the 0.005 bar over several draws


def _flip_sample(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(0, 1.0, n) > 0).astype(int)
    return X, y


def test_real_adaboost_does_not_collapse_on_random_negative_weights():
    """10 % of the events at weight -1 (nothing to learn from them): real AdaBoost used to
    stop at tree 11 with 0.13 of test AUC lost, its leaves' log-ratios of cancelling class
    sums at the clip's extreme; it must lose no more than discrete AdaBoost does."""
    from sklearn.metrics import roc_auc_score

    X, y = _flip_sample(8000, 0)
    Xt, yt = _flip_sample(8000, 1)
    flip = np.random.default_rng(2).random(y.size) < 0.1
    w = np.where(flip, -1.0, 1.0)
    loss = {}
    for boosting in ("adaboost", "realadaboost"):
        kw = dict(boosting=boosting, n_trees=100, max_depth=3, min_node_size=0.025, random_state=0)
        dropped = BDTClassifier(**kw).fit(X[~flip], y[~flip])
        kept = BDTClassifier(negative_weights="keep", **kw).fit(X, y, w)
        assert "stopped" not in kept.forest_.extra
        loss[boosting] = (roc_auc_score(yt, dropped.decision_function(Xt))
                          - roc_auc_score(yt, kept.decision_function(Xt)))
    print({k: round(v, 4) for k, v in loss.items()})
    assert loss["realadaboost"] <= loss["adaboost"] + 0.002


def test_real_adaboost_without_negative_weights_is_unchanged():
    """The |w| purities equal the signed ones without a negative weight: same leaf values."""
    from types import SimpleNamespace

    from hepbdt.boosting.adaboost import _real_purity, node_purity

    tree = SimpleNamespace(sum_a=np.array([3.0, 1.0]), sum_b=np.array([1.0, 2.0]))
    assert np.array_equal(_real_purity(tree, np.ones(2, bool), np.ones(2, np.float32)),
                          node_purity(tree.sum_a, tree.sum_b))


def _mixed_sample(n=3000, fraction=0.3, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[rng.random((n, 5)) < 0.02] = np.nan
    y = rng.integers(0, 2, n)
    w = rng.gamma(3.0, 1.0, n)
    w[rng.random(n) < fraction] *= -1
    return X, y, w


def test_regress_keeps_class_sums_and_leaves_no_negative_weight():
    X, y, w = _mixed_sample()
    Xr, yr, wr = regress_negative_weights(X, y, w)
    assert np.all(wr > 0) and Xr.shape == (wr.size, 5) and yr.size == wr.size
    for c in (0, 1):
        assert wr[yr == c].sum() == pytest.approx(w[y == c].sum(), rel=1e-12)
    # The classifier-based variant (positive against negative events): same invariants.
    wc = regress_weights(X[y == 0], w[y == 0], method="classify")
    assert np.all(wc >= 0) and wc.sum() == pytest.approx(w[y == 0].sum(), rel=1e-12)


def test_the_classify_variant_boosts_on_the_classifiers_compiled_loss():
    # Its labels (1 for a negative weight) go to the deviance kernels as the classifier's
    # int8 labels, not as float64 values: a float label compiled the kernels once more
    # (about 2 s) and gave the same weights.
    from hepbdt.boosting import losses

    X, y, w = _mixed_sample(n=600)
    BDTClassifier(n_trees=2, max_depth=2).fit(X, y, np.abs(w))
    compiled = len(losses._logistic_channels.signatures)
    regress_weights(X, w, method="classify")
    assert len(losses._logistic_channels.signatures) == compiled


def test_regress_leaves_a_class_without_negative_weights_alone():
    X, y, w = _mixed_sample()
    w[y == 1] = np.abs(w[y == 1])
    Xr, yr, wr = regress_negative_weights(X, y, w)
    assert np.array_equal(wr[yr == 1], w[y == 1]) and np.array_equal(Xr[yr == 1], X[y == 1], equal_nan=True)


def test_regress_is_cross_fitted():
    """An event's prediction comes from a model that never saw it: changing its own weight
    (by a lot) leaves its prediction as it was, while the other folds' models move."""
    from hepbdt.boosting.negative_weights import _cross_fitted

    X, _, w = _mixed_sample(n=1500)
    ones = np.ones(w.size)
    before, fold = _cross_fitted(X, w, ones, "regress", 3, np.random.default_rng(5))
    changed = w.copy()
    changed[7] += 1000.0
    after, _ = _cross_fitted(X, changed, ones, "regress", 3, np.random.default_rng(5))
    assert after[7] == before[7]
    moved = after != before
    assert 0 < moved.sum() < w.size  # the two folds that trained on it, not its own
    assert np.all(fold[moved] != fold[7])


def test_regress_calibration_is_cross_fitted():
    """The calibrated local weight of an event comes from a map that never saw its weight:
    changing it (by a lot) leaves the event's own local weight as it was."""
    from hepbdt.boosting.negative_weights import _calibrated, _cross_fitted

    X, _, w = _mixed_sample(n=1500)
    score, fold = _cross_fitted(X, w, np.ones(w.size), "regress", 3, np.random.default_rng(5))
    before = _calibrated(score, w, fold, np.random.default_rng(6))
    changed = w.copy()
    changed[7] += 1000.0
    after = _calibrated(score, changed, fold, np.random.default_rng(6))
    assert after[7] == before[7]
    assert np.any(after != before)  # the other half of its fold is calibrated with it


@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_isotonic_map_equals_scikit_learn(n):
    """Against scikit-learn's IsotonicRegression, with tied scores and negative targets."""
    from sklearn.isotonic import IsotonicRegression

    from hepbdt.boosting.negative_weights import isotonic_map

    rng = np.random.default_rng(n)
    score = rng.integers(0, max(1, n // 3), n).astype(np.float64)  # ties
    target = score / 10 + rng.normal(0.0, 1.0, n) * rng.choice([-1.0, 1.0], n)
    knots, values = isotonic_map(score, target)
    reference = IsotonicRegression(out_of_bounds="clip").fit(score, target)
    probe = np.r_[score, np.linspace(score.min() - 1, score.max() + 1, 50)]
    np.testing.assert_allclose(np.interp(probe, knots, values), reference.predict(probe),
                               rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(values) >= 0)


def _true_local_net_weight(X, n, k):
    """The generator's E[w | x] in the background of ``nlo_sample``: the clean density over
    the clean plus both cancelling components."""
    clean = -0.5 * ((X[:, 0] + 1.0) ** 2 + (X[:, 1] + 1.0) ** 2 + X[:, 2] ** 2)
    extra = (-0.5 * ((X[:, 0] - 1.5) ** 2 + (X[:, 1] - 0.5) ** 2 + X[:, 2] ** 2) / 0.25
             - 3 * np.log(0.5))
    return 1.0 / (1.0 + (2 * k / n) * np.exp(extra - clean))


def test_regress_weights_approach_the_true_local_net_weight():
    """Against the generator's truth: the new weights are closer to E[w | x] than the
    uncalibrated regression (clipped and rescaled, the policy before the calibration), and
    calibrated: in each tenth of the events ranked by new weight, the mean true weight is
    near the mean new weight."""
    from hepbdt.boosting.negative_weights import _cross_fitted

    n = 4000
    X, y, w, _ = nlo_sample(n, 1)
    Xb, wb = X[y == 0], w[y == 0]
    truth = _true_local_net_weight(Xb, n, n // 2)
    new = regress_weights(Xb, wb)
    score, _ = _cross_fitted(Xb, wb, np.ones(wb.size), "regress", 3, np.random.default_rng(0))
    raw = np.maximum(score, 0.0) * wb.sum() / np.maximum(score, 0.0).sum()

    def calibration_error(v):
        tenth = np.minimum((np.argsort(np.argsort(v, kind="stable")) * 10) // v.size, 9)
        return np.mean([abs(v[tenth == j].mean() - truth[tenth == j].mean()) for j in range(10)])

    print({"mae": (np.mean(np.abs(new - truth)), np.mean(np.abs(raw - truth))),
           "calibration": (calibration_error(new), calibration_error(raw))})
    assert np.mean(np.abs(new - truth)) < np.mean(np.abs(raw - truth))
    assert np.mean(np.abs(new - truth)) < 0.06  # the true weights spread over [0, 1]
    assert calibration_error(new) < calibration_error(raw)
    assert calibration_error(new) < 0.05
    # the default (the cancellation likelihood) against the least-squares score, calibrated
    squares = regress_weights(Xb, wb, method="regress")
    print({"mae default, regress": (np.mean(np.abs(new - truth)), np.mean(np.abs(squares - truth)))})
    assert np.mean(np.abs(new - truth)) < 0.8 * np.mean(np.abs(squares - truth))


def test_cancellation_loss_is_the_likelihood_of_the_signs():
    """Against its definition: L = -ln P(y) with P(negative) = e^F / (1 + 2 e^F), written
    directly; g its numerical derivative; h the Fisher information E[g^2] while that is
    at least |g| / max_step, and |g| / max_step beyond."""
    from hepbdt.boosting.losses import Cancellation

    loss = Cancellation()
    F = np.linspace(-30.0, 30.0, 241)
    p_negative = np.exp(F) / (1.0 + 2.0 * np.exp(F))
    g = {}
    for y, p in ((1, p_negative), (0, 1.0 - p_negative)):
        labels = np.full(F.size, y, np.int8)
        np.testing.assert_allclose(loss.pointwise(labels, F), -np.log(p), rtol=1e-12, atol=1e-14)
        step = 1e-5
        numerical = (loss.pointwise(labels, F + step) - loss.pointwise(labels, F - step)) / (2 * step)
        g[y], h = loss.gradients(labels, F)
        np.testing.assert_allclose(g[y], numerical, rtol=1e-6, atol=1e-9)
    fisher = p_negative * g[1] ** 2 + (1.0 - p_negative) * g[0] ** 2
    for y in (0, 1):
        _, h = loss.gradients(np.full(F.size, y, np.int8), F)
        floor = np.abs(g[y]) / loss.max_step
        np.testing.assert_allclose(h, np.maximum(fisher, floor), rtol=1e-12, atol=0)
        assert np.any(floor > fisher) and np.any(floor < fisher)  # both sides are tested
    np.testing.assert_allclose(loss.net_share(F), 1.0 - 2.0 * p_negative, rtol=1e-12, atol=1e-15)


def test_cancellation_loss_starts_at_the_best_constant():
    from scipy.optimize import minimize_scalar

    from hepbdt.boosting.losses import Cancellation

    rng = np.random.default_rng(1)
    y = (rng.random(500) < 0.3).astype(np.int8)
    w = rng.gamma(2.0, 1.0, 500)
    loss = Cancellation()
    best = minimize_scalar(lambda f: float(np.dot(w, loss.pointwise(y, np.full(500, f)))),
                           bracket=(-3.0, 3.0), tol=1e-12).x
    assert loss.init_score(y, w) == pytest.approx(best, abs=1e-6)
    with pytest.raises(ValueError, match="negative weight < positive weight"):
        loss.init_score(np.array([1, 1, 0], np.int8), np.ones(3))


def test_share_map_recovers_a_known_rescaling_and_never_sees_the_event_it_weighs():
    """Signs drawn with P(negative) = e^G / (1 + 2 e^G), G = 1.7 F - 0.3: the map fitted on
    them gives back (1.7, -0.3); each event's share comes from the other half of its fold,
    so flipping its own sign leaves its new weight as it was."""
    from scipy.optimize import minimize

    from hepbdt.boosting.losses import Cancellation
    from hepbdt.boosting.negative_weights import _share_map, _shares

    rng = np.random.default_rng(2)
    n = 200_000
    F = rng.normal(0.0, 1.5, n)
    G = 1.7 * F - 0.3
    negative = (rng.random(n) < np.exp(G) / (1.0 + 2.0 * np.exp(G))).astype(np.float64)
    a, b = _share_map(F, negative, np.ones(n))
    assert a == pytest.approx(1.7, abs=0.05) and b == pytest.approx(-0.3, abs=0.03)
    loss = Cancellation()
    reference = minimize(lambda ab: float(np.mean(loss.pointwise(negative, ab[0] * F + ab[1]))),
                         np.array([1.0, 0.0]), method="Nelder-Mead",
                         options=dict(xatol=1e-9, fatol=1e-15, maxiter=2000)).x
    np.testing.assert_allclose((a, b), reference, atol=2e-5)  # scipy's optimum, found otherwise
    m = 3000
    weight, fold = rng.uniform(0.5, 1.5, m), rng.permutation(m) % 3
    before = _shares(F[:m], negative[:m], weight, fold, np.random.default_rng(6))
    share = before / weight  # the net share falls as F rises, and lies in (0, 1)
    assert np.all((share > 0) & (share < 1))
    assert np.corrcoef(share, Cancellation.net_share(G[:m]))[0, 1] > 0.97
    for i in range(0, m, 101):
        flipped = negative[:m].copy()
        flipped[i] = 1.0 - flipped[i]
        after = _shares(F[:m], flipped, weight, fold, np.random.default_rng(6))
        assert after[i] == before[i]
        assert np.any(after != before)  # the other half of its fold is mapped with it


def test_regress_is_deterministic():
    X, y, w = _mixed_sample(n=800)
    first = regress_weights(X[y == 0], w[y == 0], random_state=4)
    assert np.array_equal(first, regress_weights(X[y == 0], w[y == 0], random_state=4))
    assert not np.array_equal(first, regress_weights(X[y == 0], w[y == 0], random_state=5))
    kw = dict(n_trees=5, negative_weights="regress", random_state=2)
    a = BDTClassifier(**kw).fit(X, y, w).decision_function(X)
    assert np.array_equal(a, BDTClassifier(**kw).fit(X, y, w).decision_function(X))


def test_regress_errors_name_the_option():
    X = np.zeros((6, 1), np.float32)
    with pytest.raises(ValueError, match="negative_weights='regress'.*net weight"):
        regress_negative_weights(X, np.zeros(6), np.array([1.0, -2.0, 0.5, 0.1, 0.1, 0.1]))
    with pytest.raises(ValueError, match="negative_weights='regress'.*folds"):
        regress_weights(X[:5], np.array([2.0, -1.0, 1.0, 1.0, 1.0]), n_folds=3)
    with pytest.raises(ValueError, match="n_folds"):
        regress_weights(X, np.array([2.0, -1.0, 1, 1, 1, 1]), n_folds=1)
    with pytest.raises(ValueError, match="method"):
        regress_weights(X, np.array([2.0, -1.0, 1, 1, 1, 1]), method="knn")
    with pytest.raises(ValueError, match="negative_weights='regress'.*net weight"):
        BDTClassifier(negative_weights="regress", n_trees=2).fit(
            X, np.r_[np.zeros(3), np.ones(3)], np.array([1.0, 1.0, 1.0, -1.0, -1.0, 0.5]))


@pytest.mark.parametrize("policy", POLICIES)
def test_policies_change_nothing_without_negative_weights(policy):
    X, y, w = _mixed_sample(n=800)
    w = np.abs(w)
    kw = dict(n_trees=5, random_state=0)
    reference = BDTClassifier(negative_weights="keep", **kw).fit(X, y, w).decision_function(X)
    scores = BDTClassifier(negative_weights=policy, **kw).fit(X, y, w).decision_function(X)
    assert np.array_equal(scores, reference)


def test_regress_learns_the_net_background_where_dropping_does_not():
    """Planted: a signal-like background component with weight +1 that an identical one at
    -1 cancels. The reference is a model trained on the net sample; dropping the negative
    events leaves the contamination in."""
    from sklearn.metrics import roc_auc_score

    X, y, w, is_net = nlo_sample(4000, 1)
    Xt, yt, _, net_t = nlo_sample(4000, 2)
    Xt, yt = Xt[net_t], yt[net_t]
    kw = dict(boosting="gradient", n_trees=60, max_depth=3, min_node_size=0.01, random_state=0)
    net = BDTClassifier(**kw).fit(X[is_net], y[is_net], w[is_net])
    keep = w >= 0
    dropped = BDTClassifier(**kw).fit(X[keep], y[keep], w[keep])
    regressed = BDTClassifier(negative_weights="regress", **kw).fit(X, y, w)
    auc = {name: roc_auc_score(yt, m.decision_function(Xt))
           for name, m in (("net", net), ("drop", dropped), ("regress", regressed))}
    print({k: round(v, 4) for k, v in auc.items()})
    assert auc["regress"] >= auc["net"] - 0.01
    assert auc["regress"] >= auc["drop"] + 0.01


@pytest.mark.timeout(20)
@pytest.mark.parametrize("policy", ["pair", "regress"])
def test_no_policy_hangs_on_degenerate_cases(policy):
    """Every positive weight used up, one class all negative, all features tied: each ends
    (a refusal naming the option, or weights that keep the net sum), within the deadline."""
    remove = pair_negative_weights if policy == "pair" else regress_negative_weights
    with pytest.raises(ValueError, match="beyond the rounding"):  # the net weight is 1e-16
        remove(ROUNDING_X, np.zeros(4), ROUNDING_W)
    X = np.zeros((400, 3), np.float32)
    w = np.tile([1.0, -0.5, 2.0, -1.5], 100)
    tied = remove(X, np.zeros(400), w)[2]
    assert np.all(tied > 0) and tied.sum() == pytest.approx(w.sum(), rel=1e-12)
    y = np.repeat([0, 1], 200)
    with pytest.raises(ValueError, match=f"negative_weights='{policy}'.*net weight"):
        remove(X, y, np.where(y == 1, -np.abs(w), np.abs(w)))
    # Nearly all the weight cancels: a net weight of 0.5 over 400 events.
    cancelling = np.tile([1.0, -1.0], 200)
    cancelling[0] += 0.5
    left = remove(np.random.default_rng(0).normal(size=(400, 3)).astype(np.float32),
                  np.zeros(400), cancelling)[2]
    assert np.all(left > 0) and left.sum() == pytest.approx(0.5, rel=1e-9)


def test_pairs_standardise_as_numpy_without_float64_copies() -> None:
    """The pair policy's standardised features equal numpy's nanmean/nanstd on a float64
    copy, to the bit, NaN as the mean and a constant column left unscaled; the work takes
    a fraction of the float64 copies' memory."""
    import tracemalloc

    from hepbdt.boosting.negative_weights import _standardised

    rng = np.random.default_rng(0)
    X = rng.gamma(2.0, 1e3, size=(150_001, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 2] = 7.0
    Xd = X.astype(np.float64)
    mean, std = np.nanmean(Xd, axis=0), np.nanstd(Xd, axis=0)
    expected = np.where(np.isnan(Xd), 0.0, (Xd - mean) / np.where(std > 0, std, 1.0))
    del Xd
    _standardised(X[:10])  # compiled (or loaded) outside the measurement
    tracemalloc.start()
    Z = _standardised(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert Z.dtype == np.float32 and np.array_equal(Z, expected.astype(np.float32))
    # Z itself and one block's float64 temporaries; float64 copies of X took about 8x X
    assert peak < 2.5 * X.nbytes
