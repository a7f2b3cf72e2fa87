"""Audit of the prediction kernels and the flat forest against an independent tree walk."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import hepbdt
from hepbdt.engine import apply_bins
from hepbdt.engine.predict import MAX_DENSE_DEPTH, predict_per_tree, predict_raw
from hepbdt.model import ClassForestBuilder, ForestBuilder

VALS = np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, 0.25, 3.0], np.float32)


def _tree(rng, depth, m, p_leaf):
    """Local node arrays of a random tree: children follow parents, some branches cut short."""
    cols: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right",
                                              "missing_left", "value")}

    def node(d):
        k = len(cols["feature"])
        for name, v in zip(cols, (-1, 0.0, -1, -1, False, float(rng.normal())), strict=True):
            cols[name].append(v)
        if d < depth and (d == 0 or rng.random() > p_leaf):
            cols["feature"][k] = int(rng.integers(m))
            cols["threshold"][k] = float(rng.choice(VALS))
            cols["missing_left"][k] = bool(rng.random() < 0.5)
            cols["left"][k] = node(d + 1)
            cols["right"][k] = node(d + 1)
        return k

    node(0)
    n = len(cols["feature"])
    return dict(cols, bin_threshold=np.zeros(n), gain=np.zeros(n), cover=np.ones(n))


def _forest(rng, n_trees, depth, m=4, p_leaf=0.0, aggregation="sum"):
    b = ForestBuilder(m, base_score=float(rng.normal()), aggregation=aggregation)
    for _ in range(n_trees):
        d = depth if p_leaf < 0.5 else int(rng.integers(0, depth + 1))
        b.add(tree_weight=float(rng.uniform(0.1, 2.0)), **_tree(rng, d, m, p_leaf))
    forest = b.build()
    forest.validate()
    return forest


def _leaf(f, x, node):
    if f.feature[node] < 0:
        return f.value[node]
    v = x[f.feature[node]]
    go_left = bool(f.missing_left[node]) if v != v else bool(v < f.threshold[node])
    return _leaf(f, x, f.left[node] if go_left else f.right[node])


def _sum(f, X, t0=0, t1=None):
    """sum_t w_t leaf_t(x) in tree order from 0.0, X cast to float32 first."""
    X = np.asarray(X, np.float32)
    t1 = f.n_trees if t1 is None else t1
    out = np.zeros(len(X))
    for i, x in enumerate(X):
        s = 0.0
        for t in range(t0, t1):
            s += f.tree_weights[t] * _leaf(f, x, int(f.tree_offsets[t]))
        out[i] = s
    return out


def _events(rng, n, m, nan=True):
    X = rng.choice(np.concatenate([VALS, [np.nan, 0.1, 2.0]]), size=(n, m)).astype(np.float32)
    if not nan:
        X[np.isnan(X)] = 0.5
    return X


@pytest.mark.parametrize("depth", range(13))
def test_hand_built_forests_match_the_walk_bit_for_bit(depth):
    rng = np.random.default_rng(depth)
    for p_leaf, n_trees in ((0.0, 9), (0.4, 5), (0.9, 40)):
        f = _forest(rng, n_trees, depth, p_leaf=p_leaf)
        for n in (1, 255, 256, 257):
            for nan in (True, False):
                X = _events(rng, n, 4, nan)
                raw = _sum(f, X)
                for threads in (1, 2):
                    numba.set_num_threads(threads)
                    assert np.array_equal(f.raw_score(X), raw + f.base_score)
                    assert np.array_equal(predict_raw(X, f), raw)
                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
                per_tree = predict_per_tree(X, f)
                assert np.array_equal(f.tree_weights[0] * per_tree[:, 0], _sum(f, X, 0, 1))


def test_dense_and_node_walk_agree_on_many_events_and_tree_ranges():
    rng = np.random.default_rng(7)
    for depth in (2, 3, 5, 7, MAX_DENSE_DEPTH):
        f = _forest(rng, 6, depth)
        assert f.dense() is not None
        X = _events(rng, 10001, 4)
        want = predict_raw(X, f, 1, 4)
        assert np.array_equal(want, predict_raw(X, f, 1, 4, dense=f.dense()))
        assert np.array_equal(want[::997], _sum(f, X[::997], 1, 4))


def test_staged_scores_and_weighted_mean_match_the_walk():
    rng = np.random.default_rng(11)
    f = _forest(rng, 7, 4, p_leaf=0.3, aggregation="weighted_mean")
    X = _events(rng, 300, 4)
    for t, stage in enumerate(f.staged_raw_score(X), 1):
        total = f.tree_weights[:t].sum()
        assert np.array_equal(stage, _sum(f, X, 0, t) / total)
        assert np.array_equal(stage, f.raw_score(X, n_trees=t))


def test_float64_inputs_are_cast_to_float32_first():
    rng = np.random.default_rng(5)
    f = _forest(rng, 4, 3)
    X = np.full((3, 4), 1.5) + np.array([[0.0], [1e-12], [-1e-12]])
    assert np.array_equal(f.raw_score(X), _sum(f, X) + f.base_score)


def test_multiclass_class_scores_at_every_round():
    rng = np.random.default_rng(3)
    b = ClassForestBuilder(4, np.array([0.1, -0.2, 0.3]))
    for _ in range(5):
        for cb in b.classes:
            cb.add(tree_weight=float(rng.uniform(0.5, 1.5)), **_tree(rng, 3, 4, 0.3))
    f = b.build()
    X = _events(rng, 257, 4)
    for r, stage in enumerate(f.staged_class_scores(X), 1):
        want = np.column_stack([_sum(f, X, k * 5, k * 5 + r) + base
                                for k, base in enumerate([0.1, -0.2, 0.3])])
        assert np.array_equal(stage, want)
        assert np.array_equal(f.class_scores(X, n_rounds=r), want)


def test_too_few_columns_or_negative_tree_counts_are_refused():
    rng = np.random.default_rng(2)
    f = _forest(rng, 3, 3, m=6)
    with pytest.raises(ValueError, match="features"):
        f.raw_score(np.zeros((5, 2), np.float32))
    with pytest.raises(ValueError, match="features"):
        next(f.staged_raw_score(np.zeros((5, 5), np.float32)))
    with pytest.raises(ValueError, match="2-D"):
        f.raw_score(np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="n_trees"):
        f.raw_score(np.zeros((5, 6), np.float32), n_trees=-1)


_BOOSTERS = [dict(boosting="gradient"), dict(boosting="newton", max_depth=5),
             dict(boosting="adaboost"), dict(boosting="realadaboost"), dict(boosting="eps"),
             dict(boosting="bagging", subsample=0.6), dict(boosting="gradient", max_leaves=9,
                                                           max_depth=None)]


@pytest.mark.parametrize("params", _BOOSTERS, ids=lambda p: p["boosting"] + str(len(p)))
def test_trained_models_match_the_walk_and_their_codes(params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    model = hepbdt.BDTClassifier(**{"n_trees": 12, "max_depth": 3, **params}).fit(X, y)
    f = model.forest_
    Xt = X[:257]
    raw = _sum(f, Xt)
    want = raw / f.tree_weights.sum() if f.aggregation == "weighted_mean" else raw + f.base_score
    np.testing.assert_allclose(f.raw_score(Xt), want, rtol=0, atol=1e-12)
    codes = apply_bins(Xt, model.bin_edges_)
    if f.aggregation in ("sum", "weighted_mean"):
        *_, last = f.staged_raw_score_codes(codes)
        assert np.array_equal(last, f.raw_score(Xt))


def test_trained_regressor_and_multiclass_match_the_walk():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 3)).astype(np.float32)
    reg = hepbdt.BDTRegressor(n_trees=10, max_depth=4).fit(X, X[:, 0] * 2 + X[:, 1])
    f = reg.forest_
    np.testing.assert_allclose(f.raw_score(X[:100]), _sum(f, X[:100]) + f.base_score, atol=1e-12)
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    clf = hepbdt.BDTClassifier(n_trees=6, max_depth=3).fit(X, y)
    f = clf.forest_
    r = f.n_rounds
    want = np.column_stack([_sum(f, X[:100], k * r, (k + 1) * r) + b
                            for k, b in enumerate(f.extra["base_scores"])])
    np.testing.assert_allclose(f.class_scores(X[:100]), want, atol=1e-12)


def test_codes_with_too_few_features_are_refused():
    rng = np.random.default_rng(2)
    f = _forest(rng, 3, 3, m=6)
    with pytest.raises(ValueError, match="features"):
        next(f.staged_raw_score_codes(np.zeros((2, 5), np.uint8)))


def test_uboost_score_and_stages_match_the_walk():
    rng = np.random.default_rng(9)
    f = _forest(rng, 5, 3, p_leaf=0.3)
    f.aggregation = "uboost"
    cuts, widths = [[0.1, -0.2, 0.3], [0.0, 0.5]], [0.7, 1.3]
    f.extra["uboost"] = dict(step_trees=[3, 2], step_aggregation="weighted_mean", cuts=cuts,
                             widths=widths)
    f.validate()
    X = _events(rng, 300, 4)

    def score(used):
        out = np.zeros(len(X))
        for k, (s, size) in enumerate(((0, 3), (3, 2))):
            u = min(used, size)
            step = _sum(f, X, s, s + u) / f.tree_weights[s:s + u].sum()
            out += 0.5 * (1.0 + np.tanh(0.5 * (step - cuts[k][u - 1]) / widths[k]))
        return out / 2

    np.testing.assert_allclose(f.raw_score(X), score(3), rtol=0, atol=1e-12)
    for r, stage in enumerate(f.staged_raw_score(X), 1):
        np.testing.assert_allclose(stage, score(r), rtol=0, atol=1e-12)
        np.testing.assert_allclose(f.raw_score(X, n_trees=r), score(r), rtol=0, atol=1e-12)


def test_no_trees_of_a_mean_median_or_uboost_score_is_refused():
    # uBoost scored n_trees=0 with one tree a step, a weighted mean gave 0 and a weighted
    # median an unrelated error; a sum of no trees is the base score
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    ada = hepbdt.BDTClassifier(boosting="adaboost", n_trees=3, max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="n_trees=0: a 'weighted_mean' score of no trees"):
        ada.forest_.raw_score(X, 0)
    uboost = hepbdt.BDTClassifier(boosting="adaboost", n_trees=3, max_depth=2,
                                  decorrelation="uboost", decorrelation_steps=2).fit(
        X, y, decorrelate=X[:, 2])
    with pytest.raises(ValueError, match="n_trees=0: a 'uboost' score"):
        uboost.forest_.raw_score(X, 0)
    gradient = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    np.testing.assert_array_equal(gradient.forest_.raw_score(X, 0),
                                  np.full(X.shape[0], gradient.forest_.base_score))


def test_read_only_inputs_use_the_writable_inputs_compiled_kernels():
    # Numba compiles a kernel again for a read-only array (9 s for the dense predictor);
    # the kernels that only read X take read-only views, so a read-only X (a Dask chunk,
    # np.frombuffer) reuses what a writable one compiled, with the same scores and codes;
    # so do the infinity scan of every X and the column copy of the bin edges' fit.
    from hepbdt.engine import binning, predict

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=3).fit(X, y)
    frozen = X.copy()
    frozen.flags.writeable = False
    forest = model.forest_
    kernels = (predict._predict_dense, binning._apply_bins, predict._predict_raw,
               predict._predict_per_tree, binning._first_infinite, binning._gather_columns)

    def outputs(data):  # the dense kernel, the binning, the node walk and the per-tree leaves
        refit = hepbdt.BDTClassifier(n_trees=5, max_depth=3).fit(data, y)
        return (model.decision_function(data), apply_bins(data, model.bin_edges_),
                predict_raw(data, forest), predict_per_tree(data, forest),
                refit.decision_function(X), refit.bin_edges_)

    expected = outputs(X)
    compiled = [len(kernel.signatures) for kernel in kernels]
    for got, want in zip(outputs(frozen), expected, strict=True):
        assert np.array_equal(got, want)
    assert [len(kernel.signatures) for kernel in kernels] == compiled
