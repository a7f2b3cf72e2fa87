"""Rounds in one compiled call (``boosting._exact_rounds``) must give the tree-by-tree loop's
model bit for bit: the loop (one-call trees, ``leaf_sums``, the boosters' ``leaf_values``,
``add_through_partition``, ``update_scores``, ``ForestBuilder.add``) is the reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hepbdt
from hepbdt.boosting import _exact_rounds, _loop
from hepbdt.engine import _types
from hepbdt.model import ForestBuilder

FIELDS = ("feature", "threshold", "bin_threshold", "left", "right", "missing_left", "value",
          "gain", "cover", "tree_offsets", "tree_weights")


def _data(n=2500, m=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.05] = np.nan
    t = np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1])) + rng.normal(size=n) * 0.4
    y = np.digitize(t, np.quantile(t, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y, t, rng.gamma(2.0, 1.0, n)


def _fit(make, X, target, w, fused: bool, monkeypatch, calls=None):
    """The model and how many rounds ran in compiled calls (``calls``: each call's rounds)."""
    calls = [] if calls is None else calls
    call = _exact_rounds.ExactRounds._call

    def counted(self, *a):
        done, ended = call(self, *a)
        calls.append(done)
        return done, ended

    with monkeypatch.context() as patch:
        if not fused:
            patch.setattr(_loop, "_exact_rounds", lambda *args, **kwargs: None)
        patch.setattr(_exact_rounds.ExactRounds, "_call", counted)
        model = make().fit(X, target, sample_weight=w)
    return model, sum(calls)


CASES = {
    "binary-default": (lambda: hepbdt.BDTClassifier(random_state=0), 2, False),
    # the defaults before the automatic leaf-wise trees: depth 5 at learning rate 0.1
    "binary-depth5-auto": (lambda: hepbdt.BDTClassifier(max_depth=5, random_state=0), 2, False),
    "binary-newton-l1": (lambda: hepbdt.BDTClassifier(boosting="newton", reg_alpha=2.0,
                                                      n_trees=25, random_state=0), 2, False),
    "binary-colsample": (lambda: hepbdt.BDTClassifier(n_trees=30, max_depth=4,
                                                      colsample_bytree=0.6, random_state=3), 2, False),
    "multiclass-newton-auto": (lambda: hepbdt.BDTClassifier(boosting="newton", n_trees="auto",
                                                            max_depth=3, random_state=0), 4, False),
    "multiclass-gradient": (lambda: hepbdt.BDTClassifier(boosting="gradient", n_trees=20,
                                                         max_depth=5, random_state=0), 3, False),
    "binary-subsample": (lambda: hepbdt.BDTClassifier(n_trees=30, subsample=0.5,
                                                      random_state=2), 2, False),
    "binary-poisson-auto": (lambda: hepbdt.BDTClassifier(
        n_trees="auto", subsample=0.7, subsample_mode="poisson", random_state=2), 2, False),
    "multiclass-weighted-draw": (lambda: hepbdt.BDTClassifier(
        boosting="newton", n_trees=20, subsample=0.6, subsample_mode="weighted",
        random_state=4), 3, False),
    "regression-default": (lambda: hepbdt.BDTRegressor(random_state=0), 0, True),
    "regression-newton": (lambda: hepbdt.BDTRegressor(boosting="newton", n_trees=30,
                                                      random_state=0), 0, True),
    # leaf-wise trees (grow_exact_leaves_serial in the rounds' call)
    "binary-leafwise-auto": (lambda: hepbdt.BDTClassifier(max_leaves=31, max_depth=None,
                                                          random_state=0), 2, False),
    "binary-leafwise-subsample": (lambda: hepbdt.BDTClassifier(
        n_trees=30, max_leaves=16, max_depth=4, subsample=0.5, random_state=2), 2, False),
    "multiclass-leafwise-newton": (lambda: hepbdt.BDTClassifier(
        boosting="newton", n_trees=20, max_leaves=12, max_depth=None, random_state=0), 3, False),
    "regression-leafwise": (lambda: hepbdt.BDTRegressor(n_trees=30, max_leaves=40,
                                                        max_depth=None, random_state=0), 0, True),
}


MANY_ROUNDS_A_CALL = {"binary-default", "binary-depth5-auto", "binary-newton-l1", "multiclass-newton-auto",
                      "multiclass-gradient", "regression-default", "regression-newton",
                      "binary-leafwise-auto", "multiclass-leafwise-newton",
                      "regression-leafwise"}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shared", [1, 2])
def test_rounds_in_one_call_give_the_loops_model(case, shared, monkeypatch):
    import numba

    if shared > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs two Numba threads (NUMBA_NUM_THREADS >= 2)")
    make, classes, regression = CASES[case]
    X, y, t, w = _data(classes=max(classes, 2))
    target = t if regression else y
    old = _types.set_serial_tree_threads(shared)  # 2: the levels shared over two threads
    try:
        reference, none = _fit(make, X, target, w, False, monkeypatch)
        calls = []
        fused, rounds = _fit(make, X, target, w, True, monkeypatch, calls)
    finally:
        _types.set_serial_tree_threads(old)
    assert none == 0 and rounds >= 20  # the fused path ran, every round
    # every event and feature: the channels and losses too, many rounds a call
    assert (max(calls) > 1) == (case in MANY_ROUNDS_A_CALL), calls
    for field in FIELDS:
        a, b = getattr(reference.forest_, field), getattr(fused.forest_, field)
        assert np.array_equal(a, b), field
    assert np.array_equal(np.signbit(reference.forest_.value), np.signbit(fused.forest_.value))
    assert np.array_equal(reference.train_loss_, fused.train_loss_)
    if getattr(reference, "validation_loss_", None) is not None:
        assert np.array_equal(reference.validation_loss_, fused.validation_loss_)
    assert reference.n_trees_ == fused.n_trees_


@pytest.mark.parametrize("make", [
    lambda: hepbdt.BDTClassifier(n_trees=5, max_leaves=6, max_depth=None, colsample_bylevel=0.5,
                                 random_state=0),
    lambda: hepbdt.BDTClassifier(n_trees=5, colsample_bynode=0.5, random_state=0),
    lambda: hepbdt.BDTRegressor(n_trees=5, loss="huber", random_state=0),
    lambda: hepbdt.BDTRegressor(boosting="newton", n_trees=5, loss="absolute", random_state=0),
], ids=["leaf-wise-colsample_bylevel", "colsample_bynode", "huber", "absolute"])
def test_fits_it_cannot_take_run_tree_by_tree(make, monkeypatch):
    X, y, t, w = _data()
    target = t if isinstance(make(), hepbdt.BDTRegressor) else y
    _, rounds = _fit(make, X, target, w, True, monkeypatch)
    assert rounds == 0


def test_negative_weights_run_tree_by_tree(monkeypatch):
    X, y, _, w = _data()
    w[::7] *= -0.2
    make = lambda: hepbdt.BDTClassifier(n_trees=5, negative_weights="keep", random_state=0)  # noqa: E731
    _, rounds = _fit(make, X, y, w, True, monkeypatch)
    assert rounds == 0


def test_trees_added_in_blocks_build_the_forest_of_trees_added_one_by_one():
    rng = np.random.default_rng(2)
    trees = []
    for _ in range(9):
        n = int(rng.integers(1, 8)) * 2 + 1
        left = np.where(np.arange(n) % 2 == 0, np.arange(n) + 1, -1)
        left[-1] = -1
        trees.append({"feature": rng.integers(-1, 4, n), "threshold": rng.normal(size=n),
                      "bin_threshold": rng.integers(0, 255, n), "left": left,
                      "right": np.where(left >= 0, left + 1, -1), "missing_left": rng.random(n) < 0.5,
                      "value": rng.normal(size=n), "gain": rng.random(n), "cover": rng.random(n)})
    weights = rng.random(9)
    one_by_one, blocks = ForestBuilder(4, 0.5), ForestBuilder(4, 0.5)
    for tree, weight in zip(trees, weights, strict=True):
        one_by_one.add(tree_weight=weight, **tree)
    blocks.add(tree_weight=weights[0], **trees[0])
    for lo, hi in ((1, 5), (5, 9)):
        blocks.add_trees([trees[i]["feature"].size for i in range(lo, hi)], weights[lo:hi],
                         **{k: np.concatenate([trees[i][k] for i in range(lo, hi)]) for k in trees[0]})
    assert len(blocks) == len(one_by_one) == 9
    for n_trees in (None, 0, 1, 3, 5, 7, 9, 20):
        a, b = one_by_one.build(n_trees), blocks.build(n_trees)
        # the reference: each tree's left/right shifted by the nodes before it
        cut = trees[:9 if n_trees is None else n_trees]
        first = np.cumsum([0] + [t["feature"].size for t in cut])
        expected = np.concatenate([np.where(t["left"] >= 0, t["left"] + first[i], -1)
                                   for i, t in enumerate(cut)]) if cut else np.empty(0)
        assert np.array_equal(b.left, expected)
        for field in FIELDS:
            assert np.array_equal(getattr(a, field), getattr(b, field)), (n_trees, field)


@pytest.mark.parametrize("store_nodes", [1, 100])
def test_a_store_flushed_every_few_rounds_builds_the_same_forest(store_nodes, monkeypatch):
    # The store hands its trees to the forest builder whenever another round might not fit
    # (STORE_NODES; 1: every round, each block of trees then one round's).
    make, classes, _ = CASES["multiclass-newton-auto"]
    X, y, _, w = _data(classes=classes)
    reference, _ = _fit(make, X, y, w, False, monkeypatch)
    monkeypatch.setattr(_exact_rounds, "STORE_NODES", store_nodes)
    fused, rounds = _fit(make, X, y, w, True, monkeypatch)
    assert rounds > 20 and reference.n_trees_ == fused.n_trees_
    for field in FIELDS:
        assert np.array_equal(getattr(reference.forest_, field), getattr(fused.forest_, field)), field


def _outcome(make, X, target, **fit):
    """(the fit's error or its trees and recorded losses, the warnings it gave) as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = make().fit(X, target, **fit)
            out = (model.n_trees_, model.train_loss_.tobytes(), model.best_iteration_,
                   None if model.validation_loss_ is None else model.validation_loss_.tobytes())
        except ValueError as error:
            out = str(error)
    return out, [str(w.message) for w in caught if not isinstance(w.message, RuntimeWarning)]


@pytest.mark.parametrize("case", ["overshoot", "diverged", "validation-overflow", "tol"])
def test_rounds_computing_their_losses_check_warn_and_stop_as_the_loop(case, monkeypatch):
    # The rounds that compute their channels and losses in the call record them after it:
    # the grown-loss warning, a loss that is not finite (the training one before the round
    # whose trees it would grow, the validation one after it) and early stopping with a
    # tolerance must come out as the tree-by-tree loop gives them, at the same round.
    X, y, t, _ = _data(n=2000, m=4)
    make, target, fit = {
        "overshoot": (lambda: hepbdt.BDTRegressor(n_trees=30, learning_rate=2.5, max_depth=2), t, {}),
        "diverged": (lambda: hepbdt.BDTRegressor(n_trees=300, learning_rate=10.0, max_depth=3), t, {}),
        "validation-overflow": (lambda: hepbdt.BDTRegressor(n_trees=30, early_stopping_rounds=5),
                                t * 1e9, {"eval_set": [(X, t * 1e9, np.full(t.size, 1e290))]}),
        "tol": (lambda: hepbdt.BDTClassifier(n_trees=300, early_stopping=True, tol=1e-3,
                                             n_iter_no_change=3), y, {}),
    }[case]
    with monkeypatch.context() as patch:
        patch.setattr(_loop, "_exact_rounds", lambda *args, **kwargs: None)
        reference = _outcome(make, X, target, **fit)
    calls = []
    run = _exact_rounds.ExactRounds.run
    monkeypatch.setattr(_exact_rounds.ExactRounds, "run",
                        lambda self, *a: calls.append(1) or run(self, *a))
    assert _outcome(make, X, target, **fit) == reference
    assert calls  # the rounds that compute their losses ran
    out, warned = reference
    if case == "overshoot":
        assert len(warned) == 1 and "more than 2x" in warned[0]
    elif case == "tol":
        assert isinstance(out, tuple) and out[0] < 300  # stopped early
    else:
        assert {"diverged": "training diverged", "validation-overflow": "validation events"}[case] in out


@pytest.mark.parametrize("limit", ["store_nodes=1", "store_nodes=300", "call_work=7"])
def test_calls_of_many_rounds_cut_short_build_the_same_forest(limit, monkeypatch):
    # A call grows the rounds the store takes (STORE_NODES; 1: a round, then a flush) and
    # CALL_WORK allows (here 7 rounds of the 2,250 training events x 5 features).
    make, _, _ = CASES["binary-depth5-auto"]
    X, y, _, w = _data()
    reference, _ = _fit(make, X, y, w, False, monkeypatch)
    name, value = limit.split("=")
    monkeypatch.setattr(_exact_rounds, name.upper(), int(value) * (2250 * 5 if name == "call_work" else 1))
    calls = []
    fused, rounds = _fit(make, X, y, w, True, monkeypatch, calls)
    assert rounds > 20 and len(calls) > 1 and reference.n_trees_ == fused.n_trees_
    assert max(calls) == {"store_nodes=1": 1, "store_nodes=300": 300 // 63, "call_work=7": 7}[limit]
    for field in FIELDS:
        assert np.array_equal(getattr(reference.forest_, field), getattr(fused.forest_, field)), field
    assert np.array_equal(reference.validation_loss_, fused.validation_loss_)
