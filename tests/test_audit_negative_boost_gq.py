"""Negative weights in the AdaBoost family (audit GQ): TMVA's InverseBoostNegWeights
written out by hand (MethodBDT::AdaBoost: a misclassified event of weight > 0 gets
w *= ((1 - err) / err)^beta, one of negative weight w /= that factor, then every weight is
renormalised to the sum before the boost), for discrete AdaBoost and SAMME, over one and
two trees; ``predict`` at a probability of exactly 0.5 against scikit-learn; "abs" and
"ignore" against "keep" on their weights; the flatness gradient with a cell of negative net
weight against finite differences of the documented loss; uBoost's step targets by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt._util import Progress
from hepbdt.boosting.adaboost import _AdaBoostRun, _TreeOptions, boost_trees
from hepbdt.boosting.samme import _samme_round, _SammeRun
from hepbdt.engine._types import CLASS_GINI, GINI
from hepbdt.engine.binning import BinMapper
from hepbdt.engine.predict import predict_per_tree
from hepbdt.engine.split import SplitParams

# One feature of a few values: every tree splits it into one leaf per value.
X_VALUE = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1], dtype=np.float32)
Y_TWO = np.array([1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0])
W_TWO = np.array([1.0, 1.0, -0.5, 2.0, 1.5, -0.3, 3.0, -0.4, 1.0, -0.2, 0.5, 0.7, 0.4])


def _codes(x: np.ndarray):
    mapper = BinMapper(max_bins=16).fit(x[:, None])
    return mapper.transform(x[:, None]), mapper


def _options(mapper, criterion: int, depth: int) -> _TreeOptions:
    return _TreeOptions(mapper.n_bins_, SplitParams(criterion), depth, 0.0, 1.0, "uniform",
                        1.0, 1.0, 1.0)


def _tmva_reweight(boost, w0, wrong, alpha):
    """TMVA's AdaBoost reweighting with InverseBoostNegWeights, renormalised to sum w0."""
    factor = math.exp(alpha)
    new = np.where(wrong, np.where(w0 > 0, boost * factor, boost / factor), boost)
    return new * (np.sum(w0 * boost) / np.sum(w0 * new))


def _reference_adaboost(x, y, w0, beta, n_trees):
    """The boosted weights w0 * boost after each tree, and each tree's error fraction."""
    boost, weights, errors = np.ones(w0.size), [], []
    for _ in range(n_trees):
        v = w0 * boost
        says_signal = np.empty(w0.size, dtype=bool)
        for value in np.unique(x):
            leaf = x == value
            s, b = v[leaf & (y == 1)].sum(), v[leaf & (y == 0)].sum()
            says_signal[leaf] = s + b > 0 and s / (s + b) > 0.5  # NodePurityLimit
        wrong = says_signal != (y == 1)
        err = abs(v[wrong].sum() / v.sum())
        alpha = beta * math.log((1 - err) / err)
        boost = _tmva_reweight(boost, w0, wrong, alpha)
        weights.append(w0 * boost)
        errors.append(err)
    return weights, errors


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_inverse_boost_reweights_as_tmva_over_two_trees(beta):
    codes, mapper = _codes(X_VALUE)
    run = _AdaBoostRun(codes, Y_TWO, W_TWO, mapper, "adaboost", True, beta, 0.01, True)
    options = _options(mapper, GINI, 1)
    expected, errors = _reference_adaboost(X_VALUE, Y_TWO, W_TWO, beta, 2)
    rng = np.random.default_rng(0)
    progress = Progress(2, "training", enabled=False, unit="trees")
    for it in range(2):
        assert boost_trees(run, options, 1, rng, progress, it) is None
        np.testing.assert_allclose(run.w0 * run.boost, expected[it], rtol=1e-12)
    np.testing.assert_allclose(run.errors, errors, rtol=1e-12)
    # the negative events moved against the positive ones of their leaf's verdict
    assert np.any((W_TWO < 0) & (np.abs(expected[0]) < np.abs(W_TWO) * 0.999))


def _reference_samme(x, y, w0, beta, n_classes, n_trees):
    """SAMME's boosted weights after each tree, with InverseBoostNegWeights."""
    boost, weights, errors = np.ones(w0.size), [], []
    for _ in range(n_trees):
        v = w0 * boost
        says = np.empty(w0.size, dtype=np.int64)
        for value in np.unique(x):
            leaf = x == value
            says[leaf] = np.argmax([v[leaf & (y == k)].sum() for k in range(n_classes)])
        wrong = says != y
        err = abs(v[wrong].sum() / v.sum())
        alpha = beta * (math.log((1 - err) / err) + math.log(n_classes - 1))
        boost = _tmva_reweight(boost, w0, wrong, alpha)
        weights.append(w0 * boost)
        errors.append(err)
    return weights, errors


def test_samme_inverse_boost_reweights_as_tmva_over_two_trees():
    x = np.repeat(np.arange(3), 6).astype(np.float32)
    y = np.array([0, 0, 0, 1, 2, 1,  1, 1, 1, 0, 2, 0,  2, 2, 2, 0, 1, 1])
    w0 = np.array([2.0, 1.0, -0.6, 1.0, 0.5, -0.3,  2.0, -0.4, 1.0, 0.8, 0.6, -0.2,
                   1.5, 1.0, -0.3, 0.7, 0.5, -0.1])
    codes, mapper = _codes(x)
    run = _SammeRun(codes, y, w0, 3, 0.5, True)
    options = _options(mapper, CLASS_GINI, 2)
    expected, errors = _reference_samme(x, y, w0, 0.5, 3, 2)
    rng = np.random.default_rng(0)
    progress = Progress(2, "training", enabled=False, unit="trees")
    for it in range(2):
        _samme_round(run, options, rng, it, progress)
        assert len(run.trees) == it + 1
        np.testing.assert_allclose(run.w0 * run.boost, expected[it], rtol=1e-12)
    np.testing.assert_allclose(run.errors, errors, rtol=1e-12)


@pytest.mark.parametrize("labels", [(0, 1), (-1, 1)])
def test_predict_sends_a_probability_of_exactly_one_half_to_the_first_class(labels):
    from sklearn.tree import DecisionTreeClassifier

    # x = 0 holds as much signal as background: its leaf's purity (the score of a one-tree
    # AdaBoost with purity leaves) and probability are exactly 0.5
    x = np.repeat([0.0, 0.0, 1.0, 2.0], 10).astype(np.float32)[:, None]
    y = np.repeat([labels[1], labels[0], labels[1], labels[0]], 10)
    clf = BDTClassifier(boosting="adaboost", use_yes_no_leaf=False, n_trees=1, max_depth=2,
                        min_node_size=0.0, sig_to_bkg_fraction=None).fit(x, y)
    reference = DecisionTreeClassifier(max_depth=2, random_state=0).fit(x, y)
    grid = np.array([[0.0], [1.0], [2.0]], dtype=np.float32)
    np.testing.assert_array_equal(clf.predict_proba(grid), reference.predict_proba(grid))
    assert clf.predict_proba(grid)[0, 1] == 0.5
    np.testing.assert_array_equal(clf.predict(grid), reference.predict(grid))
    assert clf.predict(grid)[0] == labels[0]


@pytest.mark.parametrize("boosting", ["gradient", "adaboost"])
def test_abs_and_ignore_train_what_keep_trains_on_their_weights(boosting):
    """"abs" is "keep" on |w|, "ignore" is "keep" on the events of weight >= 0, bit for bit."""
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(0, 1, n) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    w[rng.random(n) < 0.2] *= -0.6
    options = dict(boosting=boosting, n_trees=10, max_depth=3, sig_to_bkg_fraction=None,
                   random_state=1)
    kept = w >= 0
    for policy, (X_ref, y_ref, w_ref) in (("abs", (X, y, np.abs(w))),
                                         ("ignore", (X[kept], y[kept], w[kept]))):
        model = BDTClassifier(negative_weights=policy, **options).fit(X, y, w)
        reference = BDTClassifier(negative_weights="keep", **options).fit(X_ref, y_ref, w_ref)
        np.testing.assert_array_equal(model.decision_function(X), reference.decision_function(X))


def _documented_flatness(score, w, class_index, group):
    """sum_c sum_b W_b integral (F_b - F_c)^2 ds (psi = 1) over the cells b of positive net
    weight W_b (a cell of net weight <= 0 has no CDF: no term, and its events are not in
    F_c either)."""
    total = 0.0
    for c in np.unique(class_index[class_index >= 0]):
        cells = [g for g in np.unique(group[class_index == c]) if w[group == g].sum() > 0]
        mine = (class_index == c) & np.isin(group, cells)
        grid = np.unique(score[mine])
        for g in cells:
            inside = mine & (group == g)
            w_bin = w[inside].sum()
            for lo, hi in zip(grid[:-1], grid[1:], strict=True):
                f_bin = w[inside & (score <= lo)].sum() / w_bin
                f_class = w[mine & (score <= lo)].sum() / w[mine].sum()
                total += w_bin * (f_bin - f_class) ** 2 * (hi - lo)
    return total


@pytest.mark.filterwarnings("ignore::hepbdt.boosting.decorrelation.FlatnessBinsWarning")
def test_flatness_gradient_with_a_cell_of_negative_net_weight_is_the_documented_loss_s():
    from hepbdt.boosting.decorrelation import FlatnessLoss
    from hepbdt.boosting.losses import Deviance

    rng = np.random.default_rng(5)
    n = 45
    y = (np.arange(n) % 3 != 0).astype(np.float64)  # signal: two events in three
    m = rng.random((n, 1))
    w = rng.uniform(0.5, 1.5, n)
    w[(y == 1) & (m[:, 0] > 0.7)] *= -1.0  # the signal's top mass cell nets negative
    w[(y == 0) & (m[:, 0] > 0.7)] *= -0.2
    score = rng.normal(size=n)
    strength = 1.7
    loss = FlatnessLoss(Deviance(), strength, m, y, w, n_bins=3, target="signal", tail_floor=None)
    cell_totals = np.bincount(loss.group[loss.group >= 0], weights=w[loss.group >= 0])
    assert np.any(cell_totals < 0) and np.all(np.bincount(y.astype(int), weights=w) > 0)
    analytic, _ = loss.flatness_terms(score, w)
    eps = 1e-7
    numeric = np.array([strength * (
        _documented_flatness(score + eps * (np.arange(n) == i), w, loss.class_index, loss.group)
        - _documented_flatness(score - eps * (np.arange(n) == i), w, loss.class_index,
                               loss.group)) / (2 * eps) for i in range(n)])
    np.testing.assert_allclose(analytic, numeric, atol=1e-6)
    negative_cell = np.isin(loss.group, np.flatnonzero(cell_totals <= 0))
    assert negative_cell.any() and np.all(analytic[negative_cell] == 0)
    assert np.abs(analytic[~negative_cell]).max() > 0.05


def test_uboost_steps_target_one_over_k_plus_one_to_k_over_k_plus_one():
    from hepbdt.boosting.uboost import efficiency_steps
    from hepbdt.demo_data import sculpting_arrays

    np.testing.assert_allclose(efficiency_steps(4), [0.2, 0.4, 0.6, 0.8], rtol=1e-15)
    np.testing.assert_allclose(efficiency_steps(1), [0.5], rtol=1e-15)
    a = sculpting_arrays(200, 300, seed=2)
    X = np.column_stack([a[f] for f in ("mjj", "tau21", "balance", "width")])
    y, w, mass = a["label"], a["weight"], a["mjj"].astype(np.float64)
    model = BDTClassifier(boosting="adaboost", n_trees=4, max_depth=3, random_state=0,
                          decorrelation="uboost", decorrelation_steps=3,
                          decorrelation_strength=1.0).fit(X, y, w, decorrelate=mass)
    spec = model.forest_.extra["uboost"]
    np.testing.assert_allclose(spec["efficiencies"], [0.25, 0.5, 0.75], rtol=1e-15)
    # each step's last cut: of the midpoints between the background's distinct step scores,
    # the highest whose background fraction below it is nearest the step's target
    leaves = predict_per_tree(X.astype(np.float32), model.forest_)
    bounds = np.concatenate([[0], np.cumsum(spec["step_trees"])])
    background = y == 0
    for k, target in enumerate((0.25, 0.5, 0.75)):
        alpha = model.forest_.tree_weights[bounds[k]:bounds[k + 1]]
        step = leaves[:, bounds[k]:bounds[k + 1]] @ alpha / alpha.sum()
        values = np.unique(step[background])
        midpoints = 0.5 * (values[:-1] + values[1:])[::-1]  # ties: the highest, as signed
        below = [w[background & (step < c)].sum() / w[background].sum() for c in midpoints]
        nearest = midpoints[int(np.argmin(np.abs(np.array(below) - target)))]
        assert spec["cuts"][k][-1] == pytest.approx(nearest, abs=1e-9)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_neighbour_ties_go_to_the_smaller_index_as_a_stable_sort_of_all_distances(k):
    """Integer features tie most distances: the k nearest are numpy's stable argsort of the
    full distance matrix (the smaller index first at equal distance), also at the k-th."""
    from hepbdt.boosting.negative_weights import _nearest

    rng = np.random.default_rng(k)
    queries = rng.integers(0, 3, (40, 2)).astype(np.float32)
    candidates = rng.integers(0, 3, (3000, 2)).astype(np.float32)  # beyond one block of 2048
    distance = ((queries[:, None, :] - candidates[None, :, :]) ** 2).sum(axis=2)
    expected = np.argsort(distance, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(_nearest(queries, candidates, k), expected)
