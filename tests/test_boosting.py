"""Boosters against independent references: losses by finite differences, scikit-learn's
GradientBoostingClassifier on the same binned data, XGBoost's AUC on the TMVA tutorial data."""

from __future__ import annotations

import numpy as np
import pytest

import hepbdt
from hepbdt._util import threads
from hepbdt.boosting.losses import Absolute, Deviance, Huber, Logistic, PseudoHuber, Squared

LOSSES = [Deviance(), Logistic(), Squared(), PseudoHuber(1.3)]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_gradients_match_finite_differences(loss):
    rng = np.random.default_rng(0)
    n = 200
    # the fit's labels and weights (int8 classes, float32 weights), as it passes them
    y = (rng.random(n) < 0.5).astype(np.int8) if loss.is_classification else rng.normal(size=n) * 3
    score = rng.normal(size=n)
    eps = 1e-5
    g, h = loss.gradients(y, score)
    num_g = (loss.pointwise(y, score + eps) - loss.pointwise(y, score - eps)) / (2 * eps)
    num_h = (loss.pointwise(y, score + eps) - 2 * loss.pointwise(y, score)
             + loss.pointwise(y, score - eps)) / eps**2
    np.testing.assert_allclose(g, num_g, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, num_h, rtol=1e-3, atol=1e-4)
    w = rng.uniform(0.5, 2, n).astype(np.float32)
    wg, wh, mean_loss = loss.channels(y, score, w, w)
    np.testing.assert_allclose(wg, w * g, rtol=1e-6)
    np.testing.assert_allclose(wh, w * h, rtol=1e-6)
    assert mean_loss == pytest.approx(np.average(loss.pointwise(y, score), weights=w))
    for s in (score, 40 * score):  # the weighted mean loss, also far in the tails
        assert loss.loss(y, w, s) == pytest.approx(np.average(loss.pointwise(y, s), weights=w), rel=1e-12)


def test_piecewise_losses_gradients():
    rng = np.random.default_rng(1)
    y, score = rng.normal(size=100), rng.normal(size=100)
    g, _ = Absolute().gradients(y, score)
    np.testing.assert_array_equal(g, np.sign(score - y))
    hub = Huber(0.5)
    hub.begin_round(y, np.ones(100), score)
    assert hub.delta == pytest.approx(np.quantile(np.abs(y - score), 0.5), rel=0.05)
    g, _ = hub.gradients(y, score)
    np.testing.assert_allclose(g, -np.clip(y - score, -hub.delta, hub.delta))


def test_initial_scores():
    y = np.array([1, 1, 0, 0, 0.0])
    w = np.array([1, 2, 1, 1, 1.0])
    assert Deviance().init_score(y, w) == pytest.approx(0.5 * np.log(3 / 3))
    assert Logistic().init_score(y, np.array([1, 3, 1, 1, 2.0])) == pytest.approx(np.log(4 / 4))
    assert Logistic().init_score(y, w * [2, 1, 1, 1, 1]) == pytest.approx(np.log(4 / 3))


def test_gradient_matches_sklearn_gradient_boosting_on_binned_data():
    """Same binned data, same settings. scikit-learn's log-loss score G relates to ours by
    G = 2F (we use TMVA's ln(1 + exp(-2yF))): same trees, leaves scaled by two. The only
    differences are float32 per-event channels in hepbdt against float64 in scikit-learn,
    a relative 1e-7 per tree, hence the 1e-5 tolerance after 30 trees."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(2)
    n = 1500
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0.3).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    ours = hepbdt.BDTClassifier(boosting="gradient", n_trees=30, max_depth=3, learning_rate=0.2,
                                max_bins=32).fit(X, y, sample_weight=w)
    codes = np.column_stack([np.searchsorted(e, X[:, f], side="right")
                             for f, e in enumerate(ours.bin_edges_)]).astype(np.float64)
    ref = ensemble.GradientBoostingClassifier(n_estimators=30, max_depth=3, learning_rate=0.2,
                                              random_state=0)
    ref.fit(codes, y, sample_weight=w)
    np.testing.assert_allclose(2 * ours.decision_function(X), ref.decision_function(codes),
                               atol=1e-5)


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_tmva_example_auc_close_to_xgboost(boosting, tmva_class_split):
    xgb = pytest.importorskip("xgboost")
    from hepbdt.evaluation import roc_auc

    Xtr, ytr, wtr, Xte, yte, wte = tmva_class_split
    settings = dict(n_estimators=300, max_depth=3, learning_rate=0.1)
    ref = xgb.XGBClassifier(tree_method="hist", max_bin=255, n_jobs=2, **settings)
    ref.fit(Xtr, ytr, sample_weight=wtr)
    auc_ref = roc_auc(yte, ref.predict_proba(Xte)[:, 1], wte)
    ours = hepbdt.BDTClassifier(boosting=boosting, n_trees=300, max_depth=3, learning_rate=0.1)
    ours.fit(Xtr, ytr, sample_weight=wtr)
    auc = roc_auc(yte, ours.decision_function(Xte), wte)
    assert auc > 0.9
    assert abs(auc - auc_ref) < 0.005, (auc, auc_ref)


@pytest.mark.parametrize("loss", ["squared", "absolute", "huber"])
@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_regression_losses_learn(boosting, loss):
    rng = np.random.default_rng(3)
    n = 3000
    X = rng.uniform(-2, 2, size=(n, 3)).astype(np.float32)
    truth = 3 * np.sin(X[:, 0]) + X[:, 1] ** 2
    y = truth + rng.standard_t(3, n) * 0.3  # heavy tails: where absolute and Huber matter
    model = hepbdt.BDTRegressor(boosting=boosting, loss=loss, n_trees=150, max_depth=4,
                                learning_rate=0.2).fit(X[:2000], y[:2000])
    pred = model.predict(X[2000:])
    assert np.median(np.abs(pred - truth[2000:])) < 0.25
    assert model.train_loss_[-1] < model.train_loss_[0]


def test_absolute_loss_leaves_are_weighted_medians():
    X = np.zeros((7, 1), np.float32)
    y = np.array([0, 1, 2, 3, 100, 101, 102.0])
    w = np.array([1, 1, 1, 1, 1, 1, 5.0])
    with pytest.warns(UserWarning, match="no tree made a single split"):  # X is constant
        model = hepbdt.BDTRegressor(loss="absolute", n_trees=1, learning_rate=1.0).fit(X, y, w)
    assert model.predict(X)[0] == pytest.approx(101.0)


@pytest.mark.parametrize("boosting", ["gradient", "newton"])  # (AdaBoost balances its classes)
def test_classes_too_far_apart_for_double_precision_are_refused(boosting):
    # signal weights 1e19 times the demo's background: p rounds to 1, the background's
    # share vanishes from the gradients, and the gradient model's test AUC was 0.21
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=4000) > 0).astype(int)
    model = hepbdt.BDTClassifier(boosting=boosting, n_trees=5, max_depth=3)
    with pytest.raises(ValueError, match=r"a ratio of \d\.\d+e\+2\d: beyond 1e\+15"):
        model.fit(X, y, np.where(y == 1, 1e24, 1.0))
    model.fit(X, y, np.where(y == 1, 1e12, 1.0))  # far apart, but within reach
    from scipy.stats import rankdata

    score = rankdata(model.decision_function(X))
    n1 = int(y.sum())
    auc = (score[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * (y.size - n1))  # Mann-Whitney
    assert auc > 0.7


def _leaves_in_event_order(rng, n, n_leaves, left_out=0):
    """Random leaves, a stable partition holding each leaf's events in increasing order (as
    the grower's is), and the leaf of each event (255: in no leaf, ``left_out`` of them)."""
    leaf_of = rng.integers(0, n_leaves, n).astype(np.uint8)
    leaf_of[rng.choice(n, left_out, replace=False)] = 255
    partition = np.argsort(leaf_of, kind="stable").astype(np.int32)
    counts = np.bincount(leaf_of, minlength=256)[:n_leaves]
    stop = np.cumsum(counts)
    return leaf_of, partition, stop - counts, stop


def test_sums_by_leaf_are_slice_sums_over_the_partition():
    # The event-order sums against the partition-order ones (the independent reference),
    # bit for bit, with events in no leaf and mixed dtypes.
    from hepbdt.engine.grower import slice_sums, sums_by_leaf

    rng = np.random.default_rng(4)
    n = 40_000
    for n_leaves, left_out in ((1, 0), (7, 0), (64, 5000)):
        leaf_of, partition, start, stop = _leaves_in_event_order(rng, n, n_leaves, left_out)
        a = (rng.normal(size=n) * 1e3).astype(np.float32)
        b = rng.gamma(1.0, 1.0, n)
        assert np.array_equal(sums_by_leaf(leaf_of, n_leaves, a, b),
                              slice_sums(partition, start, stop, a, b))
    # slice_sums itself against numpy's sequential sums (cumsum adds left to right).
    leaf_of, partition, start, stop = _leaves_in_event_order(rng, n, 9, 100)
    values = [(rng.normal(size=n) * 10 ** k).astype(np.float32) for k in range(5)]
    for n_values in (1, 3, 5):
        initial = rng.normal(size=(n_values, 9))
        expected = np.array([[np.cumsum(np.concatenate([[initial[v, j]], values[v][
            partition[start[j]:stop[j]]].astype(np.float64)]))[-1] for j in range(9)]
            for v in range(n_values)])
        got = slice_sums(partition, start, stop, *values[:n_values], initial=initial)
        assert np.array_equal(got, expected), n_values
    # One, three and five values on one and two threads (a thread sums up to three in a
    # pass: five are 3 + 2 on one, 3 and 2 on two, three 2 and 1: every kind of pass and
    # more than one a thread; each count more compiles the kernels again, 3-6 s, and
    # test_engine's test of every grouping takes the others), continuing from running sums.
    leaf_of, partition, start, stop = _leaves_in_event_order(rng, n, 64, 3000)
    values = [(rng.normal(size=n) * 10 ** k).astype(np.float32) for k in range(5)]
    for n_values in (1, 3, 5):
        initial = rng.normal(size=(n_values, 64))
        expected = slice_sums(partition, start, stop, *values[:n_values], initial=initial)
        for n_threads in (1, 2):
            with threads(n_threads):
                got = sums_by_leaf(leaf_of, 64, *values[:n_values], initial=initial)
            assert np.array_equal(got, expected), (n_values, n_threads)


@pytest.mark.parametrize("left_out", [0, 5000])
@pytest.mark.parametrize("loss", [Deviance(), Logistic()], ids=lambda l: type(l).__name__)
def test_channel_leaf_sums_are_the_sums_of_the_stored_channels(loss, left_out):
    # The lean path sums the channels again from the events; the reference is slice_sums
    # of the channels that ``channels`` stores, in the partition's order, bit for bit.
    from hepbdt.engine.grower import slice_sums

    rng = np.random.default_rng(5)
    n = 50_000
    y = (rng.random(n) < 0.4).astype(np.int8)
    score = rng.normal(size=n) * 3
    score[:10] = [0.0, -0.0, 40, -40, 1e-300, 800, -800, 5e-8, 1, -1]  # tails and signs
    w_tree = rng.gamma(2.0, 1.0, n).astype(np.float32) * rng.choice([-1, 1], n, p=[0.1, 0.9])
    wg, wh, _ = loss.channels(y, score, w_tree, w_tree)
    leaf_of, partition, start, stop = _leaves_in_event_order(rng, n, 30, left_out)
    expected = slice_sums(partition, start, stop, wg, wh, w_tree)
    got = loss.channel_leaf_sums(leaf_of, 30, y, score, w_tree)
    assert np.array_equal(got, expected)
    inside = leaf_of < 30  # events in no leaf (a subsample's) add to no leaf: np.bincount
    for v, channel in enumerate((wg, wh, w_tree)):
        reference = np.bincount(leaf_of[inside], channel[inside].astype(np.float64), 30)
        np.testing.assert_allclose(got[v], reference, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("settings", [
    {"boosting": "newton", "min_node_size": 0},
    {"boosting": "gradient"},
    {"boosting": "newton", "min_node_size": 0, "subsample": 0.6},
    {"boosting": "gradient", "subsample": 0.7, "subsample_mode": "poisson"},
    {"boosting": "newton", "min_node_size": 0, "max_leaves": 12, "max_depth": None},
    {"boosting": "newton", "min_node_size": 0, "n_trees": "auto"},
], ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_a_lean_fit_is_the_ordinary_fit(monkeypatch, settings):
    # Beyond the feature-major copy's size the quantised fit keeps no channel arrays while a
    # tree grows (QuantisedRows.lean): the model must not change, and the lean path must run.
    import hepbdt.engine.grower as grower
    from hepbdt.boosting.losses import _LogisticFamily

    rng = np.random.default_rng(2)
    n = 20_000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=n) > 1).astype(int)
    w = rng.gamma(2.0, 1.0, n)
    w[:200] *= -1
    params = {"n_trees": 12, "max_depth": 4, "random_state": 3, "quantised_histograms": True,
              **settings}
    ordinary = hepbdt.BDTClassifier(**params).fit(X, y, w).forest_.to_dict()
    calls = []
    original = _LogisticFamily.channel_leaf_sums
    monkeypatch.setattr(_LogisticFamily, "channel_leaf_sums",
                        lambda self, *a: calls.append(1) or original(self, *a))
    monkeypatch.setattr(grower, "COLUMN_COPY_BYTES", 0)
    lean = hepbdt.BDTClassifier(**params).fit(X, y, w).forest_.to_dict()
    assert calls and lean == ordinary


@pytest.mark.parametrize("settings", [
    {"boosting": "newton", "quantised_histograms": False},
    {"boosting": "gradient", "quantised_histograms": True, "subsample": 0.6},
    {"boosting": "newton", "subsample": 0.5, "quantised_histograms": False},
    {"boosting": "gradient", "max_leaves": 300, "max_depth": None},
], ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_leaf_sums_in_event_order_are_the_partition_walk(monkeypatch, settings):
    # Large samples sum each leaf reading the events in order, small ones walk the
    # partition (the reference): the same models, bit for bit, also with events left out
    # of a tree's sample and with more than 255 leaves (uint16 leaf numbers).
    import hepbdt.boosting._loop as loop

    rng = np.random.default_rng(8)
    n = 30_000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(size=n) > 0).astype(int)
    w = rng.gamma(2.0, 1.0, n)
    params = {"n_trees": 8, "max_depth": 5, "random_state": 4, **settings}
    monkeypatch.setattr(loop, "ORDERED_SUMS_FROM", n + 1)
    walked = hepbdt.BDTClassifier(**params).fit(X, y, w).forest_.to_dict()
    monkeypatch.setattr(loop, "ORDERED_SUMS_FROM", 0)
    ordered = hepbdt.BDTClassifier(**params).fit(X, y, w).forest_.to_dict()
    assert ordered == walked


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_call_leaf_sums_are_the_sums_leaf_by_leaf(monkeypatch, dtype):
    # Small trees sum their leaves and nodes in one compiled call: each leaf's events in
    # partition order from zero (a Python loop here), each internal node its leaves'
    # sums; the per-leaf kernel of larger trees must agree bit for bit.
    import hepbdt.boosting._loop as loop
    from hepbdt.engine._types import VARIANCE
    from hepbdt.engine.grower import grow_tree
    from hepbdt.engine.split import SplitParams

    rng = np.random.default_rng(11)
    n = 3000
    codes = rng.integers(0, 40, (4, n)).astype(np.uint8)
    a = rng.normal(size=n).astype(np.float32)
    w = rng.gamma(2.0, 1.0, n).astype(np.float32)
    tree = grow_tree(codes, None, a * w, w, w, np.full(4, 40, np.int32), SplitParams(VARIANCE), 4)
    three = [(rng.normal(size=n) * 1e3).astype(dtype), rng.gamma(1.0, 1.0, n).astype(dtype),
             (rng.normal(size=n) * 1e-3).astype(dtype)]
    for values in (three[:2], three):  # three values take a pass of their own
        one_call = loop.leaf_sums(tree, *values)
        expected = np.zeros_like(one_call)
        for k in np.flatnonzero(tree.is_leaf):
            for v, values_v in enumerate(values):
                total = 0.0
                for i in tree.partition[tree.start[k]:tree.stop[k]]:
                    total += float(values_v[i])
                expected[v, k] = total
        for k in range(tree.n_nodes - 1, -1, -1):
            if not tree.is_leaf[k]:
                expected[:, k] = expected[:, tree.left[k]] + expected[:, tree.right[k]]
        assert tree.n_nodes > 9 and np.array_equal(one_call, expected)
    monkeypatch.setattr(loop, "SERIAL_LEAF_SUMS", 0)
    assert np.array_equal(loop.leaf_sums(tree, *values), one_call)


@pytest.mark.parametrize("loss", [Deviance(), Logistic()], ids=lambda l: type(l).__name__)
def test_channel_maxima_are_the_quantisers(loss):
    # The channels' kernel finds (max |wg|, max |wh|) for the quantiser: numpy's maxima over
    # every chunk, NaN where a value is NaN, infinity where one is infinite, -0.0 as 0.
    from hepbdt.engine.histogram import Quantiser

    rng = np.random.default_rng(9)
    n = 3 * 4096 + 17
    y = (rng.random(n) < 0.4).astype(np.int8)
    score = rng.normal(size=n) * 3
    w_tree = (rng.gamma(2.0, 1.0, n) * rng.choice([-1, 1], n)).astype(np.float32)
    for case in ("plain", "nan", "inf", "zero"):
        s, wt = score.copy(), w_tree.copy()
        if case == "nan":
            s[5000] = np.nan
        elif case == "inf":
            wt[9000] = np.inf
        elif case == "zero":
            wt[:] = -0.0
        maxima = np.empty(2)
        with np.errstate(invalid="ignore"):  # the loss of an infinite weight is NaN
            wg, wh, _ = loss.channels(y, s, wt, wt.astype(np.float64), maxima=maxima)
        np.testing.assert_array_equal(maxima, Quantiser.max_abs(wg, wh))
        assert np.isnan(maxima[0]) == (case == "nan") and np.isinf(maxima[0]) == (case == "inf")


def test_squared_channels_and_loss_are_numpys_operations_bit_for_bit():
    # The compiled squared-error channels against the formula written with numpy: the same
    # float32 channels and the same double loss, with negative and zero weights, float32
    # and float64 targets, values over seven decades, and the fit's reused storage.
    rng = np.random.default_rng(5)
    loss = Squared()
    for trial in range(60):
        n = int(rng.integers(1, 5000))
        y = (rng.normal(size=n) * 10 ** rng.uniform(-3, 4)).astype([np.float64, np.float32][trial % 2])
        score = rng.normal(size=n) * 10 ** rng.uniform(-3, 4)
        w = rng.uniform(-1, 3, n).astype([np.float32, np.float64][trial % 3 == 0])
        w_tree = w.astype(np.float32)
        w_tree[rng.random(n) < 0.2] = 0.0
        out = (np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)) if trial % 2 else None
        wg, wh, value = loss.channels(y, score, w_tree, w, **({} if out is None else {"out": out}))
        expected_wg = (w_tree * (score - y)).astype(np.float32)
        expected_wh = (w_tree * np.ones_like(score)).astype(np.float32)
        expected = np.sum(w * (0.5 * (y - score) ** 2)) / np.sum(w, dtype=np.float64)
        assert np.array_equal(wg.view(np.uint32), expected_wg.view(np.uint32)), trial
        assert np.array_equal(wh.view(np.uint32), expected_wh.view(np.uint32)), trial
        assert value == float(expected), trial
        terms = loss.loss_terms(y, w, score)  # the held-out losses' terms
        assert np.array_equal(terms, w * (0.5 * (y - score) ** 2)), trial
        assert loss.loss(y, w, score) == float(expected), trial
        if out is not None:
            assert wg is out[0] and wh is out[1]


def test_child_weight_floor_is_the_documented_rule_in_exact_fractions():
    """A tree's minimum child weight against its rule written out in fractions: a share
    of the tree's weight, or the weight of 20 of the events drawn capped at a quarter of
    it (a draw of no event: no floor), raised to 2^-24 of the sum of |w| only where that
    sum exceeds the net one (negative weights)."""
    from fractions import Fraction

    from hepbdt.boosting._loop import child_weight_floor

    eps = Fraction(2) ** -53

    def rule(share, w_total, drawn, events=None, abs_total=None):
        w = Fraction(w_total)
        floor = (Fraction(share) * w if events is None
                 else min(Fraction(1, 4), Fraction(events, max(drawn, 1))) * w)
        if abs_total is not None and abs_total > w_total:
            floor = max(floor, Fraction(abs_total) / 2**24)
        return floor

    cases = [(0.01, 300.0, 1000), (0.0, 5.0, 10, 20), (0.0, 40.0, 40, 20),
             (0.0, 96.0, 80, 20), (0.0, 96.0, 96, 20), (0.0, 0.0, 0, 20),
             (0.0, 3.0, 50, None, 3.0), (0.0, 3.0, 50, None, 3.5),
             (0.25, 3.0, 50, None, 1e8), (0.0, 96.0, 200, 20, 1e9)]
    for case in cases:  # within the two roundings of a quotient and a product
        exact = rule(*case)
        assert abs(Fraction(child_weight_floor(*case)) - exact) <= exact * 2 * eps, case


def test_starting_scores_and_real_adaboost_leaves_do_not_take_numpys_logarithm(monkeypatch):
    # numpy's vectorised logarithm rounds some arguments one bit otherwise from one numpy
    # version to another; the models' logarithms are the C library's (math.log), so a
    # numpy whose np.log is off by a bit everywhere trains the same starting scores and
    # real AdaBoost leaves. The reference is math.log, applied by hand.
    import math

    from hepbdt.boosting import adaboost, losses

    sums = {"signal": 0.3, "background": 0.7}
    priors = np.array([0.2, 0.5, 0.3])
    purity = np.array([0.1, 0.35, 0.8, 0.999])
    real = np.log

    def off_by_a_bit(x, *args, **kwargs):
        value = real(x, *args, **kwargs)
        return np.nextafter(value, np.inf)

    monkeypatch.setattr(np, "log", off_by_a_bit)
    assert losses.Deviance().init_score_of_sums(sums) == 0.5 * math.log(0.3 / 0.7)
    assert losses.Logistic().init_score_of_sums(sums) == math.log(0.3 / 0.7)
    y = np.repeat(np.arange(3), [2, 5, 3])
    scores = losses.Softmax(3, "gradient").init_scores(y, np.ones(10))
    expected = np.array([math.log(p) for p in priors / priors.sum()])
    assert np.array_equal(scores, expected - expected.mean())
    leaves = adaboost._leaf_output("realadaboost", True, purity)
    assert np.array_equal(leaves, [0.5 * math.log(p / (1 - p)) for p in purity])
    monkeypatch.undo()
    with np.errstate(divide="ignore", invalid="ignore"):  # numpy's answers where math.log raises
        odd = losses.log_each(np.array([0.0, -1.0, np.nan, 4.0]))
    assert np.array_equal(odd, [-np.inf, np.nan, np.nan, math.log(4.0)], equal_nan=True)
