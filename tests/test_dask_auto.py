"""The Dask estimators' ``n_trees="auto"``, early stopping, ``eval_set`` and row subsampling
on a LocalCluster of two worker processes: the held-out events, the validation losses,
the stop, the best iteration and each round's drawn events are memory's, so the models
are the in-memory ones bit for bit at the same bin edges."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

from hepbdt import BDTClassifier, BDTRegressor  # noqa: E402
from hepbdt.boosting._loop import _draw  # noqa: E402
from hepbdt.dask import DaskBDTClassifier, DaskBDTRegressor  # noqa: E402
from hepbdt.dask._estimators import DASK_DEFAULTS  # noqa: E402
from hepbdt.dask._parts import held_out, tree_weights  # noqa: E402
from hepbdt.estimators import ParameterError  # noqa: E402

from .test_dask import _assert_same_forest, _dask, _data  # noqa: E402
from .test_dask_boosters import _classes  # noqa: E402


@pytest.fixture
def task_path(monkeypatch):
    """The Dask fit's task path: parts as tasks, not actors, and sums on the workers."""
    from hepbdt.dask import _cluster, _estimators

    monkeypatch.setattr(_estimators, "ACTOR_PARTS", 0)
    monkeypatch.setattr(_cluster, "CLIENT_SUM_PARTS", 1)


def _assert_same_fit(memory, dist):
    """The forest, the validation record and every saved attribute but the training loss
    (float partial sums per part on a cluster, not part of the model)."""
    _assert_same_forest(memory.forest_, dist.forest_)
    assert dist.n_trees_reason_ == memory.n_trees_reason_
    assert dist.best_iteration_ == memory.best_iteration_
    assert dist.best_score_ == memory.best_score_
    assert dist.evals_result_ == memory.evals_result_
    if memory.validation_loss_ is None:
        assert dist.validation_loss_ is None
    else:
        assert np.array_equal(dist.validation_loss_, memory.validation_loss_)
    assert dist.min_node_size_ == memory.min_node_size_
    assert dist.validation_draw_ == memory.validation_draw_  # held_out_mask's events
    if memory.validation_draw_ is not None and memory.validation_draw_["state"] is not None:
        assert np.array_equal(dist.to_local().held_out_mask(), memory.held_out_mask())
    saved, expected = dist.to_dict(), memory.to_dict()
    assert {k: v for k, v in saved.items() if k != "train_loss"} == {
        k: v for k, v in expected.items() if k != "train_loss"}
    assert np.allclose(dist.train_loss_, memory.train_loss_, rtol=1e-9)


def _fit_both(local, dask_cls, arrays, client, chunk, fit=None, **options):
    memory = local(**options).fit(*arrays, **(fit or {}))
    dist = dask_cls(**options).fit(*_dask(*arrays, chunk=chunk), client=client, **(fit or {}))
    return memory, dist


# -- n_trees="auto" and early stopping on held-out events -------------------------------------

@pytest.mark.parametrize("options", [
    {"boosting": "gradient", "learning_rate": 0.5, "n_iter_no_change": 3},
    {"boosting": "newton", "learning_rate": 0.7, "n_iter_no_change": 2, "tol": 1e-3,
     "colsample_bytree": 0.8, "colsample_bynode": 0.7},
])
def test_auto_trees_stop_as_in_memory(client, options):
    X, y, w = _data(n=6_000)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_500,
                             n_trees="auto", max_depth=3, random_state=3,
                             quantised_histograms=True, **options)
    assert memory.best_iteration_ is not None
    assert memory.n_trees_ < len(memory.validation_loss_)  # stopped early, cut at the best
    _assert_same_fit(memory, dist)


def test_leafwise_auto_trees_stop_as_in_memory(client):
    X, y, w = _data(n=6_000, seed=1)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_500,
                             n_trees="auto", max_leaves=10, max_depth=None, random_state=3,
                             boosting="gradient", learning_rate=0.5, n_iter_no_change=3,
                             subsample=0.8, quantised_histograms=True)
    assert memory.n_trees_ < len(memory.validation_loss_)  # stopped early, cut at the best
    _assert_same_fit(memory, dist)


def test_held_out_losses_in_chunks_across_parts(client):
    """10,000 held-out events: the loss's chunks of 4,096 lie within a part and across
    the two parts; the chunks' sums and numpy's sum of them are memory's."""
    X, y, w = _data(n=20_000, m=3, seed=2)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 3_000,
                             n_trees=6, early_stopping=True, validation_fraction=0.5,
                             n_iter_no_change=2, max_depth=2, random_state=5,
                             quantised_histograms=True)
    assert [count for _, count in dist.dask_parts_] and len(dist.validation_loss_) >= 1
    _assert_same_fit(memory, dist)


def test_regressor_auto_trees(client):
    X, _, w = _data(n=5_000, seed=4)
    target = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2
    for boosting in ("gradient", "newton"):
        memory, dist = _fit_both(BDTRegressor, DaskBDTRegressor, (X, target, w), client, 1_200,
                                 boosting=boosting, n_trees="auto", max_depth=3, random_state=1,
                                 learning_rate=0.6, n_iter_no_change=2,
                                 quantised_histograms=True)
        _assert_same_fit(memory, dist)


def test_multiclass_auto_rounds(client):
    X, y, w = _classes(n=6_000, seed=3)
    for boosting in ("gradient", "newton"):
        memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 2_000,
                                 boosting=boosting, n_trees="auto", max_depth=2, random_state=2,
                                 learning_rate=0.8, n_iter_no_change=2,
                                 quantised_histograms=True)
        assert "rounds of 3 trees" in memory.n_trees_reason_
        _assert_same_fit(memory, dist)


def test_event_numbers_choose_the_held_out_events(client):
    X, y, w = _data(n=4_000, seed=6)
    event = np.arange(10_000, 14_000, dtype=np.int64)[::-1].copy()
    options = dict(n_trees=4, early_stopping=True, max_depth=3, random_state=0,
                   quantised_histograms=True)
    memory = BDTClassifier(**options).fit(X, y, w, event=event)
    dist = DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1_000),
                                            event=_dask(event, chunk=1_000)[0], client=client)
    _assert_same_fit(memory, dist)


def test_event_numbers_that_are_not_integers_are_refused_as_in_memory(client):
    X, y, w = _data(n=2_000)
    event = np.arange(2_000, dtype=np.float64)
    with pytest.raises(ValueError) as in_memory:
        BDTClassifier(n_trees=2, early_stopping=True).fit(X, y, w, event=event)
    with pytest.raises(ValueError) as on_cluster:
        DaskBDTClassifier(n_trees=2, early_stopping=True).fit(
            *_dask(X, y, w), event=_dask(event)[0], client=client)
    assert str(on_cluster.value) == str(in_memory.value)


@pytest.mark.parametrize("options", [
    {"sig_to_bkg_fraction": "tmva", "negative_weights": "keep"},
    {"sig_to_bkg_fraction": 0.5, "negative_weights": "abs"},
    {"negative_weights": "ignore"},
    {"negative_weights": "keep", "boosting": "newton"},
])
def test_held_out_weights_and_policies_as_in_memory(client, options):
    """The held-out events keep their given weights (with a class ratio, normalised to it
    over themselves); the normalisation and the policy then see the training events only."""
    X, y, w = _data(n=5_000, seed=8, negative=0.1)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_300,
                             n_trees="auto", max_depth=3, random_state=4, learning_rate=0.6,
                             n_iter_no_change=2, quantised_histograms=True, **options)
    _assert_same_fit(memory, dist)


def test_held_out_classes_far_apart_keep_each_own_rounding_bound(client):
    """The held-out ratio's rounding bound of a class is that class's n eps sum |w|: with the
    held-out background's weights 1e-16 of the rest, its held-out sum (after the whole
    sample's normalisation) lies beyond its own bound but below the signal's; memory trains."""
    X, y, w = _data(n=2_000, seed=8)
    held = np.random.default_rng(4).random(y.size) < 0.25  # memory's hold-out draw
    w[held & (y == 0)] *= 1e-16
    scaled = np.where(y == 1, w / w[y == 1].sum(), w / w[y == 0].sum())
    b, s = scaled[held & (y == 0)], scaled[held & (y == 1)]
    eps = np.finfo(np.float64).eps
    assert b.size * eps * np.abs(b).sum() < b.sum() < b.size * eps * s.sum()
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 700,
                             n_trees="auto", max_depth=2, random_state=4, learning_rate=0.6,
                             validation_fraction=0.25, n_iter_no_change=1,
                             sig_to_bkg_fraction=1.0, quantised_histograms=True)
    assert memory.validation_loss_ is not None
    _assert_same_fit(memory, dist)


def test_auto_trees_on_the_task_path(client, task_path):
    X, y, w = _data(n=5_000, seed=9)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_000,
                             n_trees="auto", max_depth=3, random_state=6, learning_rate=0.7,
                             n_iter_no_change=2, quantised_histograms=True)
    _assert_same_fit(memory, dist)


def test_small_samples_grow_the_fixed_count(client, monkeypatch):
    import hepbdt.estimators

    monkeypatch.setattr(hepbdt.estimators, "AUTO_SMALL_TREES", 3)
    X, y, w = _data(n=900, seed=1)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 300,
                             n_trees="auto", max_depth=2, random_state=0,
                             quantised_histograms=True)
    assert dist.n_trees_ == 3 and dist.validation_loss_ is None
    _assert_same_fit(memory, dist)


def test_held_out_events_without_positive_weight_are_refused_as_in_memory(client):
    X, y, w = _data(n=3_000)
    state = np.random.default_rng(0).bit_generator.state
    w[held_out(3_000, {"state": state, "row": 0, "fraction": 0.1}, None)] = -1.0
    options = dict(n_trees=3, early_stopping=True, validation_fraction=0.1, random_state=0,
                   negative_weights="keep", max_depth=2)
    with pytest.raises(ValueError) as in_memory:
        BDTClassifier(**options).fit(X, y, w)
    with pytest.raises(ValueError) as on_cluster:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    assert str(on_cluster.value) == str(in_memory.value)
    assert "held out of 3000" in str(in_memory.value)


def test_held_out_draw_is_the_whole_sample_draw():
    rng = np.random.default_rng(11)
    state = rng.bit_generator.state
    whole = rng.random(1_000) < 0.3
    parts = [held_out(n, {"state": state, "row": row, "fraction": 0.3}, None)
             for row, n in ((0, 0), (0, 370), (370, 1), (371, 629))]
    assert np.array_equal(np.concatenate(parts), whole)


def test_adaboost_early_stopping_is_refused_as_in_memory(client):
    X, y, w = _data(n=2_000)
    with pytest.raises(ParameterError) as in_memory:
        BDTClassifier(boosting="adaboost", n_trees=3, early_stopping=True).fit(X, y, w)
    with pytest.raises(ParameterError) as on_cluster:
        DaskBDTClassifier(boosting="adaboost", n_trees=3, early_stopping=True).fit(
            *_dask(X, y, w), client=client)
    assert str(on_cluster.value) == str(in_memory.value)


# -- eval_set -----------------------------------------------------------------------------------

def test_eval_sets_watched_on_the_client(client):
    X, y, w = _data(n=6_000, seed=12)
    Xv, yv, wv = _data(n=1_500, seed=13)
    Xo, yo, _ = _data(n=800, seed=14)
    options = dict(n_trees=25, early_stopping_rounds=2, max_depth=3, random_state=1,
                   learning_rate=0.8, quantised_histograms=True)
    memory = BDTClassifier(**options).fit(X, y, w, eval_set=[(Xo, yo), (Xv, yv, wv)])
    for last in ((Xv, yv, wv), tuple(_dask(Xv, yv, wv, chunk=700))):
        dist = DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1_500),
                                                eval_set=[(Xo, yo), last], client=client)
        _assert_same_fit(memory, dist)
    assert set(memory.evals_result_) == {"validation_0", "validation_1"}


# -- row subsampling ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["uniform", "poisson", "weighted"])
def test_a_parts_tree_weights_are_its_share_of_memorys_draw(mode):
    rng = np.random.default_rng(3)
    w = rng.uniform(-0.5, 2.0, 2_000).astype(np.float32)
    rows, w_tree, counts = _draw(w, 0.6, mode, np.random.default_rng(7))
    for a, b in ((0, 0), (0, 777), (777, 778), (778, 2_000)):
        if counts is None:
            drawn = np.zeros(w.size, np.bool_)
            drawn[rows] = True
            share = ("uniform", np.packbits(drawn[a:b]))
        else:
            share = (mode, counts[a:b].astype(np.uint8), float(np.abs(w).sum() / counts.sum()))
        got = tree_weights(w[a:b], share)
        assert got.dtype == w_tree.dtype and np.array_equal(got, w_tree[a:b])


@pytest.mark.parametrize("options", [
    {"boosting": "gradient", "subsample": 0.6},
    {"boosting": "newton", "subsample": 0.7, "subsample_mode": "poisson"},
    {"boosting": "gradient", "subsample": 0.5, "subsample_mode": "weighted",
     "colsample_bylevel": 0.7},
    {"boosting": "newton", "subsample": 1.0, "subsample_mode": "poisson"},
])
def test_subsampled_trees_equal_in_memory_bit_for_bit(client, options):
    X, y, w = _data(n=5_000, seed=15, negative=0.05)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_300,
                             n_trees=5, max_depth=3, random_state=7, quantised_histograms=True,
                             negative_weights="keep", min_node_size=0.0, **options)
    _assert_same_fit(memory, dist)


def test_subsampling_with_auto_trees_multiclass_and_regression(client):
    X, y, w = _classes(n=5_000, seed=16)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_700,
                             n_trees="auto", subsample=0.7, max_depth=2, random_state=3,
                             learning_rate=0.8, n_iter_no_change=2, quantised_histograms=True)
    _assert_same_fit(memory, dist)
    X, _, w = _data(n=4_000, seed=17)
    target = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 2])
    memory, dist = _fit_both(BDTRegressor, DaskBDTRegressor, (X, target, w), client, 1_000,
                             n_trees=4, subsample=0.5, subsample_mode="weighted", max_depth=3,
                             random_state=2, quantised_histograms=True)
    _assert_same_fit(memory, dist)


def test_subsampling_on_the_task_path(client, task_path):
    X, y, w = _data(n=4_000, seed=18)
    memory, dist = _fit_both(BDTClassifier, DaskBDTClassifier, (X, y, w), client, 1_000,
                             n_trees=3, subsample=0.5, subsample_mode="poisson", max_depth=3,
                             random_state=8, quantised_histograms=True)
    _assert_same_fit(memory, dist)


# -- the AdaBoost family's resampling and bagging ------------------------------------------------

@pytest.mark.parametrize("options", [
    {"boosting": "bagging"},
    {"boosting": "bagging", "subsample": 0.6, "use_yes_no_leaf": False},
    {"boosting": "adaboost", "subsample": 0.5},
    {"boosting": "adaboost", "subsample": 0.8, "subsample_mode": "poisson", "min_node_size": 0.05,
     "colsample_bylevel": 0.7},
    {"boosting": "realadaboost", "subsample": 0.7, "negative_weights": "keep"},
    {"boosting": "eps", "subsample_mode": "poisson", "negative_weights": "inverse_boost"},
])
def test_adaboost_family_resampled_equals_in_memory_bit_for_bit(client, options):
    from .test_dask_boosters import _assert_same_adaboost, _two_classes

    X, y, w = _two_classes(n=5_000, seed=19, negative=0.05)
    opts = {"n_trees": 6, "max_depth": 3, "random_state": 4, "negative_weights": "abs",
            **options}
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_300), client=client)
    _assert_same_adaboost(memory, dist)


def test_bootstrap_of_small_nodes_takes_the_smaller_child_by_events(client):
    """Deep bagged trees of few events: a child with fewer events can carry the larger
    multiplicity (W), and memory builds the one of fewer events (the parts count them)."""
    from .test_dask_boosters import _assert_same_adaboost, _two_classes

    X, y, w = _two_classes(n=1_200, seed=19, negative=0.05)
    opts = dict(boosting="bagging", n_trees=4, max_depth=7, random_state=4,
                negative_weights="abs")
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=300), client=client)
    _assert_same_adaboost(memory, dist)


def test_resampled_chance_trees_are_left_out_as_in_memory(client):
    """On a resample a tree at chance's error is left out and another drawn
    (``skipped_trees``); SAMME resampled too."""
    from .test_dask_boosters import _assert_same_adaboost

    opts = _resampled_chance_trees_as_in_memory(client)
    X, y, w = _classes(n=3_000, k=4, seed=20)
    opts.update(n_trees=4, subsample=0.3)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    assert memory.forest_.extra["algorithm"] == "SAMME"
    _assert_same_adaboost(memory, dist)


def test_a_kept_tree_restarts_the_count_of_chance_trees_in_a_row(client, monkeypatch):
    """With one chance tree allowed in a row, a kept tree restarts the count at 0: each
    chance tree after a kept one is left out, a second in a row stops, as in memory."""
    import hepbdt.boosting.adaboost

    monkeypatch.setattr(hepbdt.boosting.adaboost, "MAX_SKIPPED_IN_A_ROW", 1)
    _resampled_chance_trees_as_in_memory(client)


def _resampled_chance_trees_as_in_memory(client) -> dict:
    """Poisson-resampled stumps of two classes in memory and on the cluster, at least one
    tree left out at chance's error, the same AdaBoost; returns their options."""
    from .test_dask_boosters import _assert_same_adaboost, _two_classes

    X, y, w = _two_classes(n=3_000, seed=22)
    opts = dict(boosting="adaboost", n_trees=12, max_depth=1, random_state=2, beta=1.0,
                subsample=0.1, subsample_mode="poisson")
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    assert memory.forest_.extra["skipped_trees"] >= 1
    _assert_same_adaboost(memory, dist)
    return opts


def test_resampled_adaboost_on_the_task_path(client, task_path):
    from .test_dask_boosters import _assert_same_adaboost, _two_classes

    X, y, w = _two_classes(n=4_000, seed=21)
    opts = dict(boosting="bagging", n_trees=4, max_depth=3, random_state=5)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_adaboost(memory, dist)


# -- the defaults -------------------------------------------------------------------------------

def test_dask_default_tree_count_is_memorys_auto(client):
    assert "n_trees" not in DASK_DEFAULTS
    assert DaskBDTClassifier().n_trees == BDTClassifier().n_trees == "auto"
    assert DaskBDTRegressor().n_trees == BDTRegressor().n_trees == "auto"


def test_ratio_kept_by_eval_sets_and_refused_for_a_hold_out_as_in_memory(client):
    """With sig_to_bkg_fraction an eval_set is watched in the training's class ratio, and a
    hold-out whose class has no positive given weight is refused, as in memory."""
    X, y, w = _data(n=4_000, seed=21)
    Xv, yv, wv = _data(n=1_000, seed=22)
    wv = np.where(yv == 1, 0.01 * wv, wv)
    options = dict(n_trees=20, early_stopping_rounds=2, max_depth=3, random_state=1,
                   learning_rate=0.8, sig_to_bkg_fraction=1.0, negative_weights="abs",
                   quantised_histograms=True)
    memory = BDTClassifier(**options).fit(X, y, w, eval_set=(Xv, yv, wv))
    dist = DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1_000),
                                            eval_set=(Xv, yv, wv), client=client)
    _assert_same_fit(memory, dist)
    w = np.where(y == 1, -np.abs(w), w)
    auto = dict(options, n_trees="auto")
    del auto["early_stopping_rounds"]
    with pytest.raises(ValueError, match="cannot be weighed in the training's class ratio"):
        BDTClassifier(**auto).fit(X, y, w)
    with pytest.raises(ValueError, match="cannot be weighed in the training's class ratio"):
        DaskBDTClassifier(**auto).fit(*_dask(X, y, w, chunk=1_000), client=client)


@pytest.mark.parametrize("cls, options", [
    (DaskBDTRegressor, dict(n_trees=5, early_stopping_rounds=5)),
    (DaskBDTClassifier, dict(n_trees=5, early_stopping_rounds=5)),
    (DaskBDTClassifier, dict(tol=-0.1)),
    (DaskBDTClassifier, dict(boosting="adaboost", early_stopping=True)),
])
def test_stopping_options_memory_refuses_cost_no_cluster_work(client, monkeypatch, cls, options):
    # early_stopping_rounds without an eval_set was refused after every part was loaded
    # on the workers; the classifier computed its labels before any option was checked
    import distributed

    calls = []
    compute = distributed.Client.compute
    monkeypatch.setattr(distributed.Client, "compute",
                        lambda self, *a, **k: calls.append("compute") or compute(self, *a, **k))
    X, y, w = _data(n=2_000)
    with pytest.raises(ParameterError):
        memory = BDTRegressor if cls is DaskBDTRegressor else BDTClassifier
        memory(**options).fit(X, y, w)
    with pytest.raises(ParameterError):
        cls(**options).fit(*_dask(X, y, w, chunk=500), client=client)
    assert calls == []


def test_a_first_tree_that_grows_the_loss_warns_on_a_cluster_too(client):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)).astype(np.float32)
    y = X[:, 0] * 3.0 + 0.1 * rng.standard_normal(2000)
    options = dict(boosting="newton", n_trees=3, max_depth=3, learning_rate=2.5, reg_lambda=0.0,
                   quantised_histograms=True, random_state=0)
    with pytest.warns(UserWarning, match="after 1 tree the training loss") as memory:
        BDTRegressor(**options).fit(X, y)
    with pytest.warns(UserWarning, match="after 1 tree the training loss") as dist:
        DaskBDTRegressor(**options).fit(*_dask(X, y, chunk=500), client=client)
    assert [str(w.message) for w in dist if "after 1 tree" in str(w.message)] == \
        [str(w.message) for w in memory if "after 1 tree" in str(w.message)]
    assert all(w.filename == __file__ for w in dist if "after 1 tree" in str(w.message))
