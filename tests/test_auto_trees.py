"""n_trees="auto": grow until a held-out loss stops improving, cut at the best tree.

The references are independent of the stopping code: scikit-learn's log loss and squared
error of staged predictions on the held-out events, and models trained with an explicit
tree count on the events that "auto" kept for training.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import log_loss, mean_squared_error

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt._util import hash_fraction
from hepbdt.estimators import AUTO_FIXED_TREES, AUTO_SMALL_TREES, AUTO_TREES_FROM, max_trees
from hepbdt.persistence import estimator_from_dict


def _events(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    logit = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] - 0.3 * X[:, 3] ** 2
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


def test_hash_fraction_is_uniform_and_keyed_by_the_number_alone() -> None:
    numbers = np.arange(-50_000, 150_000)
    u = hash_fraction(numbers)
    assert u.min() >= 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert abs(np.mean(u[1:] < 0.5) - np.mean(u[:-1] < 0.5)) < 0.01  # neighbours unrelated
    perm = np.random.default_rng(1).permutation(numbers.size)
    np.testing.assert_array_equal(hash_fraction(numbers[perm]), u[perm])


def test_auto_stops_at_the_held_out_minimum_of_an_independent_loss() -> None:
    n = 14_000
    X, y = _events(n)
    event = np.arange(n) * 7 + 3
    params = dict(max_depth=3, learning_rate=0.5, random_state=0)
    model = BDTClassifier(**params).fit(X, y, event=event)
    held = hash_fraction(event) < model.validation_fraction
    # min_node_size="auto": a child holds at least the weight of 20 training events
    assert model.min_node_size_ == pytest.approx(20 / np.count_nonzero(~held))
    params["min_node_size"] = model.min_node_size_
    kept, rounds = model.n_trees_, model.n_iter_no_change
    assert kept == model.best_iteration_ + 1 and kept < 2000
    assert "held out" in model.n_trees_reason_ and f"after tree {kept}" in model.n_trees_reason_
    # The same options with a fixed count on the events "auto" trained on: the same first
    # trees, and scikit-learn's log loss on the held-out events is lowest at tree `kept`
    # and no lower in the next `rounds`.
    longer = BDTClassifier(n_trees=kept + rounds, **params).fit(X[~held], y[~held])
    np.testing.assert_array_equal(model.decision_function(X),
                                  list(longer.staged_decision_function(X))[kept - 1])
    curve = [log_loss(y[held], p[:, 1]) for p in longer.staged_predict_proba(X[held])]
    assert int(np.argmin(curve)) == kept - 1
    assert min(curve[kept:]) >= curve[kept - 1]


def test_held_out_mask_names_the_events_no_tree_trained_on() -> None:
    # the mask is checked by training on the other events with a fixed count: the same
    # trees; a drawn hold-out (no event numbers) and a hashed one alike
    n = 12_000
    X, y = _events(n, seed=4)
    event = np.arange(n) * 3 + 1
    params = dict(max_depth=3, learning_rate=0.5, random_state=2)
    for numbers in (None, event):
        model = BDTClassifier(**params).fit(X, y, event=numbers)
        held = model.held_out_mask(numbers)
        assert held.shape == (n,) and 0.08 < held.mean() < 0.12
        fixed = BDTClassifier(n_trees=model.n_trees_, min_node_size=model.min_node_size_,
                              **params).fit(X[~held], y[~held])
        np.testing.assert_array_equal(model.decision_function(X), fixed.decision_function(X))
    assert np.array_equal(held, hash_fraction(event) < 0.1)
    with pytest.raises(ValueError, match="give its 12000 event numbers"):
        model.held_out_mask()
    assert BDTClassifier(n_trees=5).fit(X, y).held_out_mask() is None
    with pytest.raises(ValueError, match="loaded from a file"):
        estimator_from_dict(model.to_dict()).held_out_mask(event)


def test_auto_regressor_stops_on_the_squared_error() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12_000, 3)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(0, 0.5, X.shape[0])
    event = np.arange(X.shape[0])
    model = BDTRegressor(learning_rate=0.5, random_state=0).fit(X, y, event=event)
    held = hash_fraction(event) < 0.1
    longer = BDTRegressor(n_trees=model.n_trees_ + 10, learning_rate=0.5, random_state=0,
                          min_node_size=model.min_node_size_).fit(X[~held], y[~held])
    curve = [mean_squared_error(y[held], p) for p in longer.staged_predict(X[held])]
    assert int(np.argmin(curve)) == model.n_trees_ - 1


def test_small_samples_and_adaboost_grow_the_fixed_count_on_every_event() -> None:
    X, y = _events(AUTO_TREES_FROM - 1)
    auto = BDTClassifier(max_depth=2, random_state=0).fit(X, y)
    fixed = BDTClassifier(n_trees=AUTO_SMALL_TREES, max_depth=2, random_state=0,
                          min_node_size=20 / X.shape[0]).fit(X, y)
    np.testing.assert_array_equal(auto.decision_function(X), fixed.decision_function(X))
    assert auto.n_trees_ == AUTO_SMALL_TREES and "fewer than" in auto.n_trees_reason_
    assert max_trees({"n_trees": "auto"}, AUTO_TREES_FROM - 1) == AUTO_SMALL_TREES
    X, y = _events(AUTO_TREES_FROM + 500)
    ada = BDTClassifier(boosting="adaboost", max_depth=2).fit(X, y)
    assert ada.n_trees_ == AUTO_FIXED_TREES and "AdaBoost" in ada.n_trees_reason_
    assert max_trees({"n_trees": "auto", "boosting": "adaboost"}, 10**6) == AUTO_FIXED_TREES
    assert max_trees({"n_trees": 17}, 10) == 17


def test_an_explicit_count_holds_nothing_out() -> None:
    X, y = _events(AUTO_TREES_FROM + 2000)
    short = BDTClassifier(n_trees=30, max_depth=3, random_state=0).fit(X, y)
    longer = BDTClassifier(n_trees=40, max_depth=3, random_state=0).fit(X, y)
    assert short.n_trees_ == 30 and short.validation_loss_ is None
    assert short.n_trees_reason_ == "n_trees=30" and short.min_node_size_ == 0.0  # as before
    np.testing.assert_array_equal(short.decision_function(X),
                                  list(longer.staged_decision_function(X))[29])


def test_eval_set_is_watched_instead_of_holding_out() -> None:
    X, y = _events(6000, seed=4)
    model = BDTClassifier(learning_rate=0.5, max_depth=3).fit(X[:4000], y[:4000],
                                                             eval_set=(X[4000:], y[4000:]))
    assert "eval_set" in model.n_trees_reason_
    assert model.n_trees_ == model.best_iteration_ + 1


def test_the_reason_survives_saving_and_bad_event_numbers_are_refused() -> None:
    X, y = _events(AUTO_TREES_FROM + 100)
    model = BDTClassifier(max_depth=2, learning_rate=0.5).fit(X, y)
    again = estimator_from_dict(model.to_dict())
    assert again.n_trees_reason_ == model.n_trees_reason_ and again.n_trees_ == model.n_trees_
    with pytest.raises(ValueError, match="integer event numbers"):
        BDTClassifier().fit(X, y, event=np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="integer event numbers"):
        BDTClassifier().fit(X, y, event=np.zeros(X.shape[0]))


@pytest.mark.parametrize("policy", ["regress", "pair", "ignore"])
def test_event_numbers_follow_the_events_a_negative_weight_policy_keeps(policy: str) -> None:
    # Policies drop events (weights that become zero); the event numbers must be dropped
    # alike, or the held-out selection would not line up with the events (or fail).
    X, y = _events(3000, seed=5)
    w = np.where(np.random.default_rng(5).random(y.size) < 0.1, -1.0, 1.0)
    model = BDTClassifier(negative_weights=policy, max_depth=2, learning_rate=0.5,
                          random_state=0).fit(X, y, w, event=np.arange(y.size) + 10)
    assert "held out" in model.n_trees_reason_


def test_held_out_fit_bins_the_training_events_without_copying_the_features() -> None:
    """n_trees="auto" holds out events; the training ones are binned from X directly (their
    float copy doubled a fit's memory: 8.1 against 4.0 bytes a value at 1M x 28), and the
    model is the one a fit on that copy gives."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n, m = 300_000, 28
    X = rng.normal(size=(n, m)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.normal(size=n) > 0).astype(int)
    params = dict(n_trees="auto", n_iter_no_change=1, tol=1e9, max_depth=3, random_state=0)
    for n_trees in (2, "auto"):  # every kernel of both fits compiled outside the measurement
        BDTClassifier(**dict(params, n_trees=n_trees)).fit(X[:60_000], y[:60_000])
    peaks = []
    for n_trees in (2, "auto"):  # the explicit count holds nothing out
        tracemalloc.start()
        model = BDTClassifier(**dict(params, n_trees=n_trees)).fit(X, y)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # held out: a copy of the tenth held out and its scoring (0.25-0.35 of X measured),
    # not of the nine tenths trained on (1.08 of X)
    assert peaks[1] - peaks[0] < 0.5 * X.nbytes, (peaks[1] - peaks[0]) / X.nbytes
    # the same split made by hand (the estimator's draw: rng.random(n) < 0.1, its first use
    # of the generator), the held-out events given as the eval set: the same model
    held = np.random.default_rng(0).random(n) < 0.1
    by_hand = BDTClassifier(**params).fit(X[~held], y[~held], eval_set=(X[held], y[held]))
    assert model.to_dict()["forest"] == by_hand.to_dict()["forest"]


def test_to_tmva_gives_a_multiclass_auto_model_its_rounds() -> None:
    # NTrees counts rounds, as the TMVA XML's options do; "auto" gave the forest's trees,
    # K times too many, so that from_tmva would have trained K times the rounds.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = np.digitize(X[:, 0] + rng.normal(size=3000), [-0.5, 0.5])
    tmva_like = dict(negative_weights="keep", n_cuts=20, min_node_size=0.01, random_state=0,
                     max_depth=5)  # depth-wise: TMVA has no leaf-wise trees
    model = BDTClassifier(**tmva_like).fit(X, y)
    assert model.forest_.n_trees == 3 * model.n_trees_
    fixed = BDTClassifier(n_trees=model.n_trees_, **tmva_like).fit(X, y)
    assert f"NTrees={model.n_trees_}:" in model.to_tmva()
    assert f"NTrees={model.n_trees_}:" in fixed.to_tmva()


def test_the_reason_names_the_last_improvement_by_more_than_tol() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=3000) > 0.5).astype(int)
    tol = 0.005
    model = BDTClassifier(tol=tol, random_state=0).fit(X, y)
    losses, counted, best = model.validation_loss_, 0, np.inf
    for i, value in enumerate(losses):  # the rule, recomputed from the recorded losses
        if value < best - tol:
            best, counted = value, i + 1
    assert len(losses) - counted == model.n_iter_no_change
    assert model.n_trees_ == int(np.argmin(losses)) + 1
    assert model.n_trees_ != counted, "the case needs a best tree after the last counted gain"
    assert f"after tree {model.n_trees_};" in model.n_trees_reason_
    assert f"by more than tol={tol:g} after tree {counted}," in model.n_trees_reason_


@pytest.mark.parametrize("params, name", [
    (dict(boosting="adaboost", early_stopping=True), "early_stopping"),
    (dict(boosting="adaboost", n_trees=50, early_stopping_rounds=3), "early_stopping_rounds"),
    (dict(boosting="eps", n_trees=50, early_stopping=True, n_iter_no_change=3), "early_stopping"),
    (dict(n_trees=50, early_stopping_rounds=5), "eval_set"),
    (dict(tol=-0.01), "tol"),
])
def test_stopping_options_that_cannot_act_are_refused(params: dict, name: str) -> None:
    X, y = _events(2000)
    with pytest.raises(ValueError, match=name):
        BDTClassifier(**params).fit(X, y)


def test_early_stopping_holds_out_small_samples_under_auto() -> None:
    n = 800
    assert n < AUTO_TREES_FROM
    X, y = _events(n, seed=2)
    model = BDTClassifier(early_stopping=True, random_state=0).fit(X, y)
    assert "held out" in model.n_trees_reason_
    assert model.n_trees_ == int(np.argmin(model.validation_loss_)) + 1
    plain = BDTClassifier(random_state=0).fit(X, y)  # without the option: the fixed count
    assert plain.n_trees_ == AUTO_SMALL_TREES and "fixed count" in plain.n_trees_reason_


def test_a_hold_out_that_takes_a_whole_class_is_named() -> None:
    X, _ = _events(2000)
    event = np.arange(2000)
    y = np.full(2000, "bkg", dtype=object)
    y[np.flatnonzero(hash_fraction(event) < 0.1)[:3]] = "signal"
    with pytest.raises(ValueError, match="held out .* of class 'signal'"):
        BDTClassifier().fit(X, y.astype(str), event=event)


def test_the_held_out_events_watch_the_training_class_ratio_as_an_eval_set_does():
    # sig_to_bkg_fraction=2 with lognormal weights: the held-out events kept the whole
    # sample's class factors, a signal/background ratio of 2.41 of their own, and stopped
    # elsewhere than the same events given as an eval_set (the auto-trees audit); the
    # reference loss is scikit-learn's log_loss of the staged scores at ratio 2 exactly
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    event = np.arange(3000)
    held = hash_fraction(event) < 0.1
    for seed in range(3):
        w = np.random.default_rng(seed).lognormal(0, 1.5, 3000)
        options = dict(sig_to_bkg_fraction=2.0, learning_rate=0.3, max_depth=3, random_state=0)
        auto = BDTClassifier(**options).fit(X, y, w, event=event)
        given = BDTClassifier(min_node_size=auto.min_node_size_, **options).fit(
            X[~held], y[~held], w[~held], eval_set=(X[held], y[held], w[held]))
        assert auto.n_trees_ == given.n_trees_
        np.testing.assert_allclose(auto.validation_loss_, given.validation_loss_, rtol=1e-12)
        wv = np.where(y[held] == 1, 2.0 / w[held][y[held] == 1].sum(),
                      1.0 / w[held][y[held] == 0].sum()) * w[held]
        staged = [log_loss(y[held], p[:, 1], sample_weight=wv)
                  for p in auto.staged_predict_proba(X[held])]
        np.testing.assert_allclose(auto.validation_loss_[:len(staged)], staged, rtol=1e-6)


def test_equal_validation_losses_stop_as_xgboost_does() -> None:
    """A first tree that fits exactly leaves every later loss equal (0): the best tree is
    the first of them and a tie is no improvement, so the fit stops after the first tree
    and n_iter_no_change more, as XGBoost's early stopping does on the same trees."""
    xgb = pytest.importorskip("xgboost")
    x = np.tile([0.0, 1.0], 50)
    X, y = np.c_[x, np.zeros(x.size)], 5.0 * x
    model = BDTRegressor(n_trees=10, early_stopping_rounds=3, learning_rate=1.0,
                         max_depth=1).fit(X, y, eval_set=[(X, y)])
    reference = xgb.XGBRegressor(n_estimators=10, early_stopping_rounds=3, learning_rate=1.0,
                                 max_depth=1, reg_lambda=0.0, min_child_weight=0,
                                 base_score=2.5, tree_method="exact")
    reference.fit(X, y, eval_set=[(X, y)], verbose=False)
    assert reference.evals_result()["validation_0"]["rmse"] == [0.0] * 4
    assert np.array_equal(model.validation_loss_, np.zeros(4))
    assert model.best_iteration_ == reference.best_iteration == 0
    assert model.n_trees_ == 1


_FOREST_FIELDS = ("feature", "threshold", "left", "right", "value", "missing_left")


def _same_forest(a, b) -> bool:
    return all(np.array_equal(getattr(a.forest_, f), getattr(b.forest_, f)) for f in _FOREST_FIELDS)


def test_auto_growth_is_the_leafwise_model_and_everything_else_the_former_defaults() -> None:
    # The automatic tree shape is exactly the explicit leaf-wise model; an integer n_trees,
    # another booster or any of the three options given trains the former depth-5 defaults.
    X, y = _events(4000)
    auto = BDTClassifier().fit(X, y)
    explicit = BDTClassifier(max_leaves=15, max_depth=None, learning_rate=0.15).fit(X, y)
    assert _same_forest(auto, explicit) and auto.n_trees_ == explicit.n_trees_
    assert (auto.max_depth_, auto.max_leaves_, auto.learning_rate_) == (None, 15, 0.15)
    leaves = _leaf_counts(auto)  # leaf-wise: at most 15 leaves, and deeper than 4 somewhere
    assert max(leaves) == 15 and auto.forest_.max_depth > 4
    former = {"max_depth": 5, "max_leaves": None, "learning_rate": 0.1}
    for given in ({"n_trees": 30}, {"boosting": "newton"}, {"max_depth": 5},
                  {"learning_rate": 0.1}, {"n_trees": 30, "max_leaves": None}):
        model = BDTClassifier(**given).fit(X, y)
        reference = BDTClassifier(**{**former, **given}).fit(X, y)
        assert _same_forest(model, reference), given
        assert model.max_leaves_ is None and model.max_depth_ == 5, given
    # a regressor's "auto" is its own defaults
    r = BDTRegressor(n_trees=20, max_depth="auto", learning_rate="auto", max_leaves="auto")
    assert _same_forest(r.fit(X, X[:, 0]), BDTRegressor(n_trees=20).fit(X, X[:, 0]))


def _leaf_counts(model) -> list[int]:
    forest = model.forest_
    return [int(np.count_nonzero(forest.feature[forest.tree_slice(t)] < 0))
            for t in range(forest.n_trees)]


def test_auto_growth_survives_saving_and_explains_the_tmva_refusal(tmp_path) -> None:
    X, y = _events(3000)
    model = BDTClassifier().fit(X, y)
    model.save(tmp_path / "m.json")
    from hepbdt import load_model

    again = load_model(tmp_path / "m.json")
    assert (again.max_depth_, again.max_leaves_, again.learning_rate_) == (None, 15, 0.15)
    assert again.get_params()["max_leaves"] == "auto"
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))
    with pytest.raises(ValueError, match="max_leaves=15 has no TMVA equivalent"):
        model.to_tmva()
    from hepbdt.cli import describe_model  # `hepbdt inspect` names what "auto" chose

    assert "Tree growth ('auto'): 15 leaves, learning rate 0.15" in describe_model(again)
    model.save_tmva(tmp_path / "m.xml")  # the XML export writes leaf-wise trees, and their rate
    text = (tmp_path / "m.xml").read_text()
    options = dict(re.findall(r'<Option name="(\w+)" modified="Yes">([^<]*)<', text))
    assert float(options["Shrinkage"]) == 0.15 and int(options["MaxDepth"]) == model.forest_.max_depth


@pytest.mark.parametrize("option", ["max_depth", "max_leaves", "learning_rate"])
@pytest.mark.parametrize("value", [np.array([3, 4]), "Auto", "auto ", [5]])
def test_only_the_string_auto_is_auto(option, value) -> None:
    from hepbdt.estimators import ParameterError

    X, y = _events(300)
    with pytest.raises(ParameterError, match=rf"{option}=.* is not valid; expected .*'auto'"):
        BDTClassifier(**{option: value}).fit(X, y)
