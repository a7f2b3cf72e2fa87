"""Leaf-wise (best-first) growth with ``max_leaves``: against an independent brute-force
best-first grower, its limits and ties, every booster, the parameter checks, and the
model files and exports of leaf-wise trees. (XGBoost's lossguide trees are compared in
test_xgboost_equivalence.py.)"""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest

import hepbdt
from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.engine import grower
from hepbdt.engine._types import MISSING_BIN, NEWTON
from hepbdt.engine.grower import grow_tree
from hepbdt.engine.histogram import Quantiser
from hepbdt.engine.predict import predict_naive
from hepbdt.engine.split import SplitParams
from hepbdt.estimators import MAX_LEAVES, ParameterError
from hepbdt.interop import from_tmva_xml, tmva_response, to_tmva_xml
from hepbdt.persistence import estimator_from_dict
from hepbdt.tmva_options import TMVAOptionError

# -- an independent best-first grower in plain numpy -----------------------------------------


def _score(a: float, b: float, lam: float, alpha: float) -> float:
    """XGBoost's structure score T_alpha(G)^2 / (H + lambda), 0 where H + lambda <= 0."""
    t = np.copysign(max(abs(a) - alpha, 0.0), a)
    d = b + lam
    return t * t / d if d > 0 else 0.0


def _best_split(codes, rows, a, b, w, n_value_bins, p):
    """Every (feature, missing side, cut) tried on the events themselves: (gain, f, bin, ml).

    Scan order and ties as documented in split.py: features in order, missing values
    right before left, cuts upwards; a later candidate must gain strictly more."""
    lam, alpha = p["reg_lambda"], p["reg_alpha"]
    sa, sb, sw = a[rows].sum(), b[rows].sum(), w[rows].sum()
    parent = _score(sa, sb, lam, alpha)
    best = (-np.inf, -1, 0, False)
    for f in range(codes.shape[0]):
        c = codes[f, rows]
        missing = c == MISSING_BIN
        for missing_left in (False, True) if missing.any() else (False,):
            for t in range(n_value_bins[f]):
                left = np.where(missing, missing_left, c <= t)
                la, lb, lw = a[rows[left]].sum(), b[rows[left]].sum(), w[rows[left]].sum()
                ra, rb, rw = sa - la, sb - lb, sw - lw
                if not all(ww > 0 and ww >= p["min_child_weight"] and bb >= p["min_child_hessian"]
                           and bb + lam > 0 for bb, ww in ((lb, lw), (rb, rw))):
                    continue
                gain = _score(la, lb, lam, alpha) + _score(ra, rb, lam, alpha) - parent
                if gain > p["min_split_gain"] and gain > best[0]:
                    best = (gain, f, t, missing_left)
    return best


def naive_leafwise(codes, a, b, w, n_value_bins, p, max_leaves, max_depth=None):
    """Brute-force best-first tree: node arrays (feature, bin, missing_left, left, right) and
    each node's sorted events. Children get the next two ids, left first; the waiting leaf
    of the largest gain is split next, the lowest id on ties."""
    a, b, w = (np.asarray(v, np.float64) for v in (a, b, w))
    rows = [np.arange(codes.shape[1])]
    feature, threshold, missing_left, left, right, depth = [-1], [0], [False], [-1], [-1], [0]
    queue = []

    def consider(k):
        if max_depth is not None and depth[k] >= max_depth:
            return
        gain, f, t, ml = _best_split(codes, rows[k], a, b, w, n_value_bins, p)
        if f >= 0:
            heapq.heappush(queue, (-gain, k, f, t, ml))

    consider(0)
    n_leaves = 1
    while queue and n_leaves < max_leaves:
        _, k, f, t, ml = heapq.heappop(queue)
        c = codes[f, rows[k]]
        goes_left = np.where(c == MISSING_BIN, ml, c <= t)
        feature[k], threshold[k], missing_left[k] = f, t, ml
        left[k], right[k] = len(rows), len(rows) + 1
        for side in (goes_left, ~goes_left):
            rows.append(rows[k][side])
            feature.append(-1), threshold.append(0), missing_left.append(False)
            left.append(-1), right.append(-1), depth.append(depth[k] + 1)
        n_leaves += 1
        consider(left[k])
        consider(right[k])
    return (np.array(feature), np.array(threshold), np.array(missing_left), np.array(left),
            np.array(right), rows)



def naive_depthwise(codes, a, b, w, n_value_bins, p, max_depth, rows=None):
    """Brute-force depth-wise tree: every node of a level (in node order) takes its
    ``_best_split``; its children get the next two ids, left first. Node arrays as
    ``naive_leafwise`` returns them, each node's events in increasing order."""
    a, b, w = (np.asarray(v, np.float64) for v in (a, b, w))
    rows = [np.arange(codes.shape[1]) if rows is None else np.asarray(rows)]
    feature, threshold, missing_left, left, right = [-1], [0], [False], [-1], [-1]
    level = [0]
    for _ in range(max_depth):
        children = []
        for k in level:
            _, f, t, ml = _best_split(codes, rows[k], a, b, w, n_value_bins, p)
            if f < 0:
                continue
            c = codes[f, rows[k]]
            goes_left = np.where(c == MISSING_BIN, ml, c <= t)
            feature[k], threshold[k], missing_left[k] = f, t, ml
            left[k], right[k] = len(rows), len(rows) + 1
            children += [len(rows), len(rows) + 1]
            for side in (goes_left, ~goes_left):
                rows.append(rows[k][side])
                feature.append(-1), threshold.append(0), missing_left.append(False)
                left.append(-1), right.append(-1)
        level = children
    return (np.array(feature), np.array(threshold), np.array(missing_left), np.array(left),
            np.array(right), rows)


def assert_brute_force_tree(tree, reference, a, b, w):
    """``tree`` is the brute-force ``reference``: its nodes, each leaf's events in the
    reference's (increasing) order, and its exact sums of the dyadic channels a, b, w."""
    _assert_same_tree(tree, reference)
    rows = reference[-1]
    for k in np.flatnonzero(tree.feature < 0):
        np.testing.assert_array_equal(tree.partition[tree.start[k]:tree.stop[k]], rows[k])
    for field, v in (("sum_a", a), ("sum_b", b), ("sum_w", w)):
        expected = [np.sum(np.asarray(v, np.float64)[r]) for r in rows]
        np.testing.assert_array_equal(getattr(tree, field), expected, err_msg=field)

def _assert_same_tree(tree, reference):
    feature, threshold, missing_left, left, right, rows = reference
    np.testing.assert_array_equal(tree.feature, feature)
    np.testing.assert_array_equal(tree.left, left)
    np.testing.assert_array_equal(tree.right, right)
    internal = feature >= 0
    np.testing.assert_array_equal(tree.bin_threshold[internal], threshold[internal])
    np.testing.assert_array_equal(tree.missing_left[internal], missing_left[internal])
    for k in range(tree.n_nodes):
        np.testing.assert_array_equal(np.sort(tree.partition[tree.start[k]:tree.stop[k]]), rows[k])


def _tiny(seed, n=400, m=4, n_bins=12, missing=0.08):
    """Binned data whose channels are multiples of 1/8: every sum is exact in any order, so
    ties are real ties and both growers must break them alike."""
    rng = np.random.default_rng(seed)
    n_value_bins = rng.integers(3, n_bins + 1, m).astype(np.int32)
    codes = np.stack([rng.integers(0, k, n) for k in n_value_bins]).astype(np.uint8)
    codes[rng.random(codes.shape) < missing] = MISSING_BIN
    signal = (codes[0] > n_value_bins[0] // 2) ^ (codes[1] % 3 == 0)
    g = (np.where(signal, -6, 6) + rng.integers(-10, 11, n)).astype(np.float32) / 8
    h = rng.integers(1, 9, n).astype(np.float32) / 8
    w = rng.integers(1, 5, n).astype(np.float32) / 4
    return codes, g, h, w, n_value_bins


SETTINGS = [
    dict(reg_lambda=1.0, reg_alpha=0.0, min_child_hessian=1.0, min_child_weight=0.0, min_split_gain=0.0),
    dict(reg_lambda=0.0, reg_alpha=0.5, min_child_hessian=0.0, min_child_weight=3.0, min_split_gain=0.5),
]


def _params(p):
    return SplitParams(NEWTON, p["reg_lambda"], p["reg_alpha"], p["min_child_hessian"],
                       p["min_child_weight"], p["min_split_gain"])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
@pytest.mark.parametrize("max_leaves,max_depth", [(2, None), (9, None), (40, None), (16, 3)])
def test_exact_grower_equals_brute_force_best_first(seed, setting, max_leaves, max_depth):
    codes, g, h, w, nvb = _tiny(seed)
    p = SETTINGS[setting]
    tree = grow_tree(codes, np.arange(codes.shape[1], dtype=np.int32), g, h, w, nvb, _params(p),
                     max_depth, max_leaves=max_leaves)
    _assert_same_tree(tree, naive_leafwise(codes, g, h, w, nvb, p, max_leaves, max_depth))


def _exactly_quantisable(n, seed):
    """Channels that the quantiser packs without rounding: multiples of 2**-18 with a largest
    |value| of (2**bits - 1) * 2**-18, so its scale is 2**18 and decoded sums are exact."""
    bits = max(6, min(24, 30 - int(np.ceil(np.log2(n + 1)))))
    top = (2**bits - 1) / 2**18
    codes, g, h, w, nvb = _tiny(seed, n=n)
    g[0], h[1] = top, top
    assert np.all(np.abs(g) <= top) and np.all(h <= top)
    return codes, g, h, nvb


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("max_leaves,max_depth", [(12, None), (30, 4)])
def test_quantised_grower_equals_brute_force_best_first(seed, max_leaves, max_depth):
    codes, g, h, nvb = _exactly_quantisable(400, seed)
    quantiser = Quantiser(g, h, g.size)
    assert quantiser.scale_a == quantiser.scale_b == 2.0**18
    p = SETTINGS[0]
    tree = grow_tree(np.ascontiguousarray(codes.T), np.arange(g.size, dtype=np.int32), g, h, h, nvb,
                     _params(p), max_depth, quantised=True, max_leaves=max_leaves)
    # The packed histograms carry no weight: the hessian stands in for it.
    _assert_same_tree(tree, naive_leafwise(codes, g, h, h, nvb, p, max_leaves, max_depth))


@pytest.mark.parametrize("quantised", [False, True])
def test_bounded_histogram_memory_gives_the_same_tree(monkeypatch, quantised):
    codes, g, h, nvb = _exactly_quantisable(400, 3)
    c = np.ascontiguousarray(codes.T) if quantised else codes
    rows = np.arange(g.size, dtype=np.int32)

    def grow():
        return grow_tree(c, rows, g, h, h, nvb, _params(SETTINGS[0]), None, quantised=quantised,
                         max_leaves=40)

    unbounded = grow()
    per_leaf = codes.shape[0] * 256 * (8 if quantised else 24)
    monkeypatch.setattr(grower, "LEVEL_HISTOGRAM_BYTES", 3 * per_leaf)  # three leaves held
    bounded = grow()
    assert unbounded.is_leaf.sum() == 40
    for name in ("feature", "bin_threshold", "missing_left", "left", "right", "start", "stop"):
        np.testing.assert_array_equal(getattr(bounded, name), getattr(unbounded, name))


# -- limits, ties, threads ---------------------------------------------------------------------


def _higgs_like(n=3000, m=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    logit = 1.5 * X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3] + 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    return X, y, w


def _leaves_per_tree(forest):
    return np.array([np.sum(forest.feature[forest.tree_slice(t)] < 0) for t in range(forest.n_trees)])


def _depths_per_tree(forest):
    depths = forest.node_depths()
    return np.array([depths[forest.tree_slice(t)].max() for t in range(forest.n_trees)])


@pytest.mark.parametrize("quantised", [False, True])
def test_leaf_counts_and_depth_limit(quantised):
    X, y, w = _higgs_like()
    free = BDTClassifier(boosting="newton", n_trees=5, max_depth=None, max_leaves=24,
                         quantised_histograms=quantised, random_state=0).fit(X, y, w)
    assert np.all(_leaves_per_tree(free.forest_) == 24)
    assert _depths_per_tree(free.forest_).max() > 4  # unbalanced: deeper than log2(24)
    limited = BDTClassifier(boosting="newton", n_trees=5, max_depth=3, max_leaves=24,
                            quantised_histograms=quantised, random_state=0).fit(X, y, w)
    assert np.all(_leaves_per_tree(limited.forest_) == 8) and np.all(_depths_per_tree(limited.forest_) == 3)
    capped = BDTClassifier(boosting="newton", n_trees=5, max_depth=4, max_leaves=11,
                           quantised_histograms=quantised, random_state=0).fit(X, y, w)
    assert np.all(_leaves_per_tree(capped.forest_) == 11) and _depths_per_tree(capped.forest_).max() <= 4


def test_constraints_stop_growth_before_max_leaves():
    X, y, w = _higgs_like(n=300)
    model = BDTClassifier(boosting="newton", n_trees=3, max_depth=None, max_leaves=500,
                          min_child_weight=5.0).fit(X, y, w)
    leaves = _leaves_per_tree(model.forest_)
    assert np.all(leaves < 500) and np.all(leaves > 4)


def _quadrants(n_each, gains):
    """Four equal groups (x0, x1) in {0, 1}^2 whose gradients make the root split on x0 and
    each half then split on x1 with gains in the ratio ``gains`` (left half, right half)."""
    x0 = np.repeat([0, 0, 1, 1], n_each).astype(np.float32)
    x1 = np.repeat([0, 1, 0, 1], n_each).astype(np.float32)
    step = np.where(x0 == 0, gains[0], gains[1])
    g = (np.where(x0 == 0, -8.0, 8.0) + np.where(x1 == 0, -step, step)).astype(np.float32)
    codes = np.stack([x0, x1]).astype(np.uint8)
    return codes, g, np.ones_like(g), np.array([2, 2], np.int32)


@pytest.mark.parametrize("gains,split_first", [((1, 1), 1), ((1, 2), 2), ((2, 1), 1)])
def test_the_larger_gain_and_on_ties_the_lower_node_id_is_split_first(gains, split_first):
    codes, g, h, nvb = _quadrants(8, gains)
    params = SplitParams(NEWTON, reg_lambda=0.0)
    tree = grow_tree(codes, np.arange(g.size, dtype=np.int32), g, h, h, nvb, params, None,
                     max_leaves=3)
    assert tree.feature[0] == 0 and tree.feature[split_first] == 1
    assert tree.feature[3 - split_first] == -1
    both = grow_tree(codes, np.arange(g.size, dtype=np.int32), g, h, h, nvb, params, None,
                     max_leaves=5)
    assert both.left[split_first] == 3 and both.left[3 - split_first] == 5  # split order
    assert (both.gain[1] == both.gain[2]) == (gains[0] == gains[1])


@pytest.mark.parametrize("quantised", [False, True])
def test_results_do_not_depend_on_the_thread_count(quantised):
    X, y, w = _higgs_like(n=6000, m=8)
    models = [BDTClassifier(boosting="newton", n_trees=6, max_depth=None, max_leaves=31,
                            quantised_histograms=quantised, colsample_bylevel=0.8,
                            colsample_bynode=0.8, subsample=0.8, random_state=3,
                            n_jobs=jobs).fit(X, y, w) for jobs in (1, 2)]
    assert models[0].forest_.to_dict() == models[1].forest_.to_dict()


def test_colsample_bylevel_draws_one_feature_set_per_depth():
    X, y, w = _higgs_like(n=4000, m=10)
    forest = BDTClassifier(boosting="newton", n_trees=4, max_depth=None, max_leaves=30,
                           colsample_bylevel=0.2, random_state=1).fit(X, y, w).forest_
    depths = forest.node_depths()
    for t in range(forest.n_trees):
        sl = forest.tree_slice(t)
        feature, depth = forest.feature[sl], depths[sl]
        for d in np.unique(depth[feature >= 0]):
            assert np.unique(feature[(depth == d) & (feature >= 0)]).size <= 2


def test_depth_wise_growth_is_unchanged_when_max_leaves_is_none():
    X, y, w = _higgs_like()
    for boosting in ("gradient", "newton", "adaboost"):
        ours = BDTClassifier(boosting=boosting, n_trees=4, max_depth=4, random_state=0)
        explicit = BDTClassifier(boosting=boosting, n_trees=4, max_depth=4, max_leaves=None,
                                 random_state=0)
        assert ours.fit(X, y, w).forest_.to_dict() == explicit.fit(X, y, w).forest_.to_dict()


def test_enough_leaves_reproduce_the_depth_wise_partition():
    """With no leaf limit below 2**depth and no constraint, both policies split every node to
    the same depth: the same leaves (as event sets), in another node order."""
    codes, g, h, w, nvb = _tiny(5, n=300, missing=0.0)
    rows = np.arange(g.size, dtype=np.int32)
    params = SplitParams(NEWTON, reg_lambda=1.0)
    depth_wise = grow_tree(codes, rows, g, h, w, nvb, params, 3)
    leaf_wise = grow_tree(codes, rows, g, h, w, nvb, params, 3, max_leaves=8)

    def leaf_sets(tree):
        return sorted(tuple(np.sort(tree.partition[tree.start[k]:tree.stop[k]]))
                      for k in np.flatnonzero(tree.is_leaf))

    assert depth_wise.is_leaf.sum() == 8
    assert leaf_sets(depth_wise) == leaf_sets(leaf_wise)


# -- every booster ------------------------------------------------------------------------------


def _naive_score(forest, X):
    walked = predict_naive(X, forest)
    if forest.aggregation == "weighted_mean":
        return walked / forest.tree_weights.sum()
    return forest.base_score + walked


CLASSIFIERS = [dict(boosting="gradient"), dict(boosting="newton"),
               dict(boosting="gradient", quantised_histograms=True),
               dict(boosting="newton", quantised_histograms=True, colsample_bylevel=0.7),
               dict(boosting="adaboost", min_node_size=0.01), dict(boosting="realadaboost"),
               dict(boosting="eps", use_yes_no_leaf=False), dict(boosting="bagging", subsample=0.6)]


@pytest.mark.parametrize("params", CLASSIFIERS, ids=lambda p: "-".join(map(str, p.values())))
def test_every_booster_grows_leaf_wise(params):
    X, y, w = _higgs_like(n=2000)
    X[::37, 2] = np.nan
    model = BDTClassifier(n_trees=6, max_depth=None, max_leaves=13, random_state=0, **params)
    forest = model.fit(X, y, w).forest_
    leaves = _leaves_per_tree(forest)
    assert np.all(leaves <= 13) and leaves.max() == 13
    np.testing.assert_allclose(forest.raw_score(X), _naive_score(forest, X), rtol=0, atol=1e-12)
    assert model.predict_proba(X).shape == (X.shape[0], 2)


@pytest.mark.parametrize("params", [dict(boosting="gradient", loss="huber"),
                                    dict(boosting="newton", loss="squared"),
                                    dict(boosting="gradient", loss="absolute",
                                         quantised_histograms=True)])
def test_regressors_grow_leaf_wise(params):
    X, _, w = _higgs_like(n=2000)
    target = 2 * X[:, 0] + X[:, 1] ** 2
    model = BDTRegressor(n_trees=6, max_depth=5, max_leaves=10, random_state=0, **params)
    forest = model.fit(X, target, w).forest_
    assert _leaves_per_tree(forest).max() == 10 and forest.max_depth <= 5
    np.testing.assert_allclose(model.predict(X), _naive_score(forest, X), rtol=0, atol=1e-12)


# -- options, files, exports --------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, -4, MAX_LEAVES + 1, 2.0, True, "64"])
def test_max_leaves_must_be_an_integer_from_2(value):
    with pytest.raises(ParameterError, match="max_leaves") as info:
        BDTClassifier(max_leaves=value).check_params()
    assert info.value.param == "max_leaves"


def test_max_depth_none_needs_max_leaves():
    with pytest.raises(ParameterError, match="max_depth=None is not valid") as info:
        BDTClassifier(max_depth=None).check_params()
    assert info.value.param == "max_depth" and "max_leaves" in str(info.value)
    with pytest.raises(ParameterError, match="max_depth"):
        BDTRegressor(max_depth=0, max_leaves=8).check_params()
    BDTRegressor(max_depth=None, max_leaves=MAX_LEAVES).check_params()
    BDTClassifier(max_depth=30, max_leaves=2).check_params()


def test_max_leaves_beyond_what_max_depth_allows_warns(tmp_path, capsys):
    """BDTClassifier(max_leaves=64) kept the default max_depth=5: trees of at most 32
    leaves, without a word (the leaf-wise audit); a warning says so, and how to reach 64."""
    import warnings

    from hepbdt.cli import main
    from hepbdt.estimators import LeafLimitWarning
    from tests.faults import tiny_config

    X, y, w = _higgs_like()
    with pytest.warns(LeafLimitWarning, match=r"max_leaves=64 cannot be reached: max_depth=5 .*"
                      r"at most 32 leaves.*max_depth=None \(no depth limit\) or max_depth >= 6"):
        model = BDTClassifier(boosting="newton", n_trees=2, max_leaves=64).fit(X, y, w)
    assert _leaves_per_tree(model.forest_).max() <= 32
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeafLimitWarning)
        for depth, leaves in ((5, 32), (6, 33), (None, 64), (3, 5)):
            BDTClassifier(max_depth=depth, max_leaves=leaves).check_params()
    with pytest.warns(LeafLimitWarning, match="max_depth >= 4"):
        BDTRegressor(max_depth=3, max_leaves=9).check_params()
    # the command line: one 'hepbdt: note:' line, not Python's warning with a source line
    config = tiny_config(tmp_path, method="n_trees = 3\nmax_depth = 2\nmax_leaves = 5")
    assert main(["train", str(config), "--check"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: note: max_leaves=5 cannot be reached: max_depth=2")
    assert "LeafLimitWarning" not in err and err.count("\n") == 1


def test_to_tmva_refuses_leaf_wise_growth_and_inspect_says_why():
    model = BDTClassifier(boosting="gradient", n_trees=3, max_depth=None, max_leaves=6,
                          min_node_size=0.05)
    with pytest.raises(TMVAOptionError, match="max_leaves=6 has no TMVA equivalent"):
        model.to_tmva()
    X, y, w = _higgs_like(n=500)
    from hepbdt.cli import describe_model  # the command line's text, as `hepbdt inspect`

    text = describe_model(model.fit(X, y, w))
    assert "TMVA options: none (max_leaves=6 has no TMVA equivalent" in text


def test_model_files_keep_max_leaves_and_old_files_load(tmp_path):
    X, y, w = _higgs_like(n=1000)
    model = BDTClassifier(boosting="newton", n_trees=4, max_depth=None, max_leaves=9).fit(X, y, w)
    model.save(tmp_path / "model.json")
    again = hepbdt.load_model(tmp_path / "model.json")
    assert again.get_params()["max_leaves"] == 9 and again.get_params()["max_depth"] is None
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    old = BDTClassifier(n_trees=3, max_depth=3).fit(X, y, w).to_dict()
    del old["params"]["max_leaves"]  # written before the option existed
    loaded = estimator_from_dict(old)
    assert loaded.max_leaves == "auto" and loaded.max_leaves_ is None and loaded.max_depth == 3


def test_analysis_configuration_takes_max_leaves(tmp_path):
    from hepbdt.analysis import ConfigError, load_config

    data = Path(__file__).resolve().parents[1] / "data"
    text = f"""
event = "event"
tree = "Events"
features = ["HT", "MET_pt"]

[samples.signal]
files = "{data / 'signal.root'}"
label = "signal"

[samples.qcd]
files = "{data / 'background_qcd.root'}"
label = "background"

[method]
boosting = "newton"
max_depth = 8
max_leaves = 64
"""
    path = tmp_path / "analysis.toml"
    path.write_text(text)
    config = load_config(path)
    assert config.make_estimator().get_params()["max_leaves"] == 64
    assert load_config(path, ["method.max_leaves=16"]).params["max_leaves"] == 16
    path.write_text(text.replace("max_leaves = 64", "max_leaves = 1"))
    with pytest.raises(ConfigError, match="max_leaves"):
        load_config(path)


@pytest.mark.parametrize("kind,params", [
    ("classifier", dict(boosting="gradient")), ("classifier", dict(boosting="adaboost")),
    ("classifier", dict(boosting="newton")), ("regressor", dict(boosting="gradient", loss="huber"))])
def test_tmva_export_of_leaf_wise_trees_reads_back_equal(tmp_path, kind, params):
    X, y, w = _higgs_like(n=2000)
    X[::29, 1] = np.nan
    if kind == "classifier":
        model = BDTClassifier(n_trees=8, max_depth=None, max_leaves=15, random_state=0, **params)
        with pytest.warns(UserWarning, match="NaN"):  # the Reader's -999 for NaN events
            to_tmva_xml(model.fit(X, y, w), tmp_path / "leafwise.weights.xml")
    else:
        model = BDTRegressor(n_trees=8, max_depth=None, max_leaves=15, random_state=0, **params)
        to_tmva_xml(model.fit(X, X[:, 0] + np.nan_to_num(X[:, 1]) ** 2, w),
                    tmp_path / "leafwise.weights.xml")
    assert model.forest_.max_depth > 4  # unbalanced trees
    again = from_tmva_xml(tmp_path / "leafwise.weights.xml")
    ours = tmva_response(model, X)
    np.testing.assert_allclose(tmva_response(again, X), ours, rtol=0,
                               atol=1e-6 * max(1.0, float(np.abs(ours).max())))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_compiled_packed_splits_grow_the_per_kernel_trees(monkeypatch, n_jobs):
    # The packed leaf-wise splits in three compiled calls against the kernels called one by
    # one from Python: nodes above and below the one-thread sizes, missing values, a
    # constraint that refuses splits, the histogram pool bounded so both paths take turns.
    rng = np.random.default_rng(5)
    X, y, w = _higgs_like(n=40_000, m=7, seed=2)
    X[rng.random(X.shape) < 0.03] = np.nan

    def fit(**extra):
        return BDTClassifier(boosting="newton", n_trees=4, max_depth=None, max_leaves=48,
                             quantised_histograms=True, min_child_weight=5.0, random_state=1,
                             n_jobs=n_jobs, **extra).fit(X, y, w).forest_.to_dict()

    compiled = fit()
    with monkeypatch.context() as patch:
        patch.setattr(grower._PackedSplits, "applies", staticmethod(lambda *args: False))
        assert fit() == compiled
    per_leaf = X.shape[1] * 256 * 8
    monkeypatch.setattr(grower, "LEVEL_HISTOGRAM_BYTES", 5 * per_leaf)  # five leaves held
    assert fit() == compiled


def test_spinning_threads_search_in_parallel_with_the_same_trees(monkeypatch):
    # With spinning OpenMP threads leaf-wise growth searches two children on every thread
    # (sleeping ones: on one); the trees must not change.
    X, y, w = _higgs_like(n=20_000, m=8)

    def fit():
        return BDTClassifier(boosting="newton", n_trees=3, max_depth=None, max_leaves=24,
                             quantised_histograms=True, random_state=1).fit(X, y, w).forest_.to_dict()

    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert grower._serial_scans() == grower.SERIAL_SCANS
    sleeping = fit()
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert grower._serial_scans() == grower.SERIAL_SCANS_SPINNING
    assert fit() == sleeping


def _compiled_against_per_split(monkeypatch, switch, original, fit, label, equal_nan=False):
    """Fit with ``grower.<switch>`` spied (every tree must take the compiled path it
    guards), then with it off (the per-split path), and assert the same forests."""
    taken: list[bool] = []

    def spy(*args):
        taken.append(original(*args))
        return taken[-1]

    monkeypatch.setattr(grower, switch, spy)
    fast = fit()
    assert taken and all(taken), label  # every tree took the compiled path
    monkeypatch.setattr(grower, switch, lambda *a: False)
    slow = fit()
    assert fast.n_nodes == slow.n_nodes >= 4 * 3, label
    for name in ("feature", "threshold", "left", "right", "value", "gain", "cover"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name), equal_nan=equal_nan), (
            label, name)


def test_the_compiled_leafwise_loop_grows_the_per_split_trees(monkeypatch):
    # packed leaf-wise trees grow in one compiled call (_packed_leaves); the per-split
    # Python path (_PackedSplits) is the reference, bit for bit, on one and two threads
    import hepbdt.engine.grower as grower
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(0)
    n = 60_000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random((n, 6)) < 0.02] = np.nan
    y = ((X[:, 0] + np.sin(3 * X[:, 1]) * X[:, 2] + rng.normal(size=n)) > 0).astype(int)
    w = rng.gamma(2, size=n)
    compiled = grower._leaves_compiled
    for jobs, options in ((1, {"max_leaves": 40}), (1, {"max_leaves": 2}),
                          (2, {"max_leaves": 64, "max_depth": 5}),
                          (2, {"max_leaves": 150, "min_child_weight": 0})):
        kw = dict(boosting="newton", n_trees=4, random_state=0, n_jobs=jobs,
                  quantised_histograms=True, **{"max_depth": None, **options})
        _compiled_against_per_split(monkeypatch, "_leaves_compiled", compiled,
                                    lambda kw=kw: BDTClassifier(**kw).fit(X, y, w).forest_,
                                    options)


def test_the_compiled_exact_leafwise_tree_grows_the_per_split_trees(monkeypatch):
    # small leaf-wise trees on exact histograms grow in one compiled call
    # (grow_exact_leaves_serial); the per-split Python path is the reference, bit for bit.
    # The rounds run tree by tree here (tests/test_exact_rounds.py: many in one call).
    import hepbdt.engine.grower as grower
    from hepbdt import BDTClassifier, BDTRegressor
    from hepbdt.boosting import _loop

    monkeypatch.setattr(_loop, "_exact_rounds", lambda *args, **kwargs: None)

    rng = np.random.default_rng(3)
    n = 3_000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random((n, 6)) < 0.03] = np.nan
    y = ((X[:, 0] + np.sin(3 * X[:, 1]) * X[:, 2] + rng.normal(size=n)) > 0).astype(int)
    y3 = np.digitize(np.nan_to_num(X[:, 0]) + rng.normal(size=n), [-0.5, 0.5])
    target = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 3]) ** 2 + rng.normal(size=n)
    w = rng.gamma(2, size=n)
    signed = w * np.where(rng.random(n) < 0.2, -0.5, 1.0)
    compiled = grower._exact_leaves_compiled
    cases = [
        (BDTClassifier, y, w, {"boosting": "newton", "max_leaves": 31}),
        (BDTClassifier, y, w, {"max_leaves": 8, "max_depth": 3}),
        (BDTClassifier, y, w, {"max_leaves": 2}),
        (BDTClassifier, y, w, {"boosting": "adaboost", "max_leaves": 20}),
        (BDTClassifier, y, w, {"max_leaves": 300, "min_child_weight": 0}),
        (BDTClassifier, y, w, {"max_leaves": 31, "subsample": 0.5}),
        (BDTClassifier, y, signed, {"max_leaves": 16, "negative_weights": "keep"}),
        (BDTClassifier, y3, w, {"max_leaves": 12}),
        (BDTRegressor, target, w, {"max_leaves": 31}),
    ]
    for cls, labels, weights, options in cases:
        kw = {"n_trees": 4, "random_state": 0, "n_jobs": 1, "max_depth": None, **options}
        _compiled_against_per_split(
            monkeypatch, "_exact_leaves_compiled", compiled,
            lambda cls=cls, kw=kw, labels=labels, weights=weights:
                cls(**kw).fit(X, labels, weights).forest_,
            options, equal_nan=True)
