"""Audit of the estimators and the boosting loop: staged scores, the recorded losses, the
stop rule and its bookkeeping, the class normalisation under a hold-out, and the checks
that refuse what would give a wrong number."""

from __future__ import annotations

import numpy as np
import pytest

import hepbdt.estimators as estimators
from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.boosting.losses import Huber
from hepbdt.estimators import ParameterError


def _data(n: int, seed: int = 2, m: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0).astype(int)
    return X, y, rng


@pytest.mark.parametrize("boosting", ["adaboost", "eps"])
def test_staged_scores_end_at_the_decision_function_bit_for_bit(boosting):
    # weighted-mean forests: the staged totals were summed one by one, raw_score with numpy
    X, y, _ = _data(3000, seed=1)
    model = BDTClassifier(boosting=boosting, n_trees=30, max_depth=3, random_state=0).fit(X, y)
    staged = list(model.staged_decision_function(X))
    assert len(staged) == 30
    np.testing.assert_array_equal(staged[-1], model.decision_function(X))
    for k in (1, 7, 30):
        np.testing.assert_array_equal(staged[k - 1], model.forest_.truncate(k).raw_score(X))
    np.testing.assert_array_equal(list(model.staged_predict_proba(X))[-1], model.predict_proba(X))


def test_validation_loss_is_the_loss_of_the_staged_scores_bit_for_bit():
    X, y, rng = _data(4000)
    w = rng.uniform(0.5, 2, X.shape[0])
    Xv, yv, _ = _data(1500, seed=3)
    wv = rng.uniform(0.5, 2, yv.size)
    model = BDTClassifier(n_trees=40, max_depth=3, random_state=0).fit(
        X, y, w, eval_set=[(Xv, yv, wv)])
    loss = model._make_loss()
    staged = [loss.loss(yv.astype(np.int8), wv, s) for s in model.staged_decision_function(Xv)]
    np.testing.assert_array_equal(model.validation_loss_, staged)
    assert model.best_iteration_ == int(np.argmin(staged))
    assert model.best_score_ == min(staged)


def test_multiclass_evals_result_is_cut_to_the_rounds_kept():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.7 * rng.normal(size=3000), [-0.5, 0.5])
    Xv, yv = X[:800], y[:800]
    model = BDTClassifier(n_trees=300, max_depth=3, learning_rate=0.7, early_stopping_rounds=5,
                          random_state=0).fit(X[800:], y[800:], eval_set=[(Xv, yv), (Xv, yv)])
    assert model.n_trees_ < len(model.validation_loss_)
    first = model.evals_result_["validation_0"]["softmax"]
    last = model.evals_result_["validation_1"]["softmax"]
    assert len(first) == len(last) == model.n_trees_ == model.best_iteration_ + 1
    np.testing.assert_allclose(first, last, rtol=1e-14)


def test_huber_losses_are_recorded_at_one_delta():
    # Huber's delta is refreshed from the training residuals each round: losses at each
    # round's own delta fell with the delta alone, and two copies of one eval set differed
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = 2 * X[:, 0] + 0.3 * rng.standard_cauchy(size=3000)
    w = rng.uniform(0.5, 2, 3000)
    Xv, yv = X[:1000], y[:1000]
    model = BDTRegressor(loss="huber", n_trees=15, random_state=0).fit(
        X[1000:], y[1000:], w[1000:], eval_set=[(Xv, yv), (Xv, yv)])
    a = model.evals_result_["validation_0"]["huber"]
    b = model.evals_result_["validation_1"]["huber"]
    np.testing.assert_allclose(a, b, rtol=1e-14)
    metric = Huber(0.9)  # the first round's delta, from the residuals of the initial score
    w_train = w[1000:].astype(np.float32)
    metric.begin_round(y[1000:], w_train, np.full(2000, metric.init_score(y[1000:], w_train)))
    np.testing.assert_array_equal(
        model.validation_loss_, [metric.loss(yv, np.ones(1000), s) for s in model.staged_predict(Xv)])
    np.testing.assert_allclose(
        model.train_loss_, [metric.loss(y[1000:], w_train, s) for s in model.staged_predict(X[1000:])],
        rtol=1e-12)


@pytest.mark.parametrize("tol, depth, rate, n_train", [(0.0, 4, 0.3, 400),
                                                       (0.001, 3, 0.1, 2000)])
def test_best_iteration_is_the_lowest_validation_loss_whatever_tol(tol, depth, rate, n_train):
    # tol > 0 kept the last improvement by more than tol (tree 29, 0.50458) though tree 33
    # was lower (0.50400). (tol < 0, which counted worse losses as improvements, is refused.)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_train + 1000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=X.shape[0]) > 0).astype(int)
    model = BDTClassifier(n_trees=60, max_depth=depth, learning_rate=rate, early_stopping_rounds=5,
                          tol=tol, random_state=0).fit(X[:n_train], y[:n_train],
                                                       eval_set=(X[n_train:], y[n_train:]))
    losses = model.validation_loss_
    assert model.best_iteration_ == int(np.argmin(losses))
    assert model.best_score_ == losses.min()
    assert model.n_trees_ == model.best_iteration_ + 1


def test_a_validation_loss_that_overflows_is_refused():
    X, _, _ = _data(1500, seed=3, m=3)
    y = X[:, 0].astype(np.float64)
    with pytest.raises(ValueError, match="validation events .* is inf after tree 1"), \
            np.errstate(over="ignore"):
        BDTRegressor(n_trees=20, early_stopping_rounds=3).fit(
            X, y, eval_set=(X, np.full(y.size, 1e30), np.full(y.size, 1e300)))


def test_validation_weights_need_a_positive_total():
    X, y, _ = _data(1500, seed=5)
    cancel = np.r_[np.ones(250), -np.ones(250)]  # the loss was 0 at every tree: 1 tree kept
    with pytest.raises(ValueError, match=r"eval_set\[0\] sample_weight: the weights sum to 0"):
        BDTClassifier(n_trees=50, early_stopping_rounds=5).fit(
            X[500:], y[500:], eval_set=(X[:500], y[:500], cancel))
    # no event held out (random_state=2 draws none below 0.0005 of 1500)
    with pytest.raises(ValueError, match=r"the 0 event\(s\) that validation_fraction=0.0005"):
        BDTClassifier(validation_fraction=0.0005, random_state=2).fit(X, y)


def test_class_normalisation_holds_on_the_training_events_of_a_hold_out(monkeypatch):
    X, y, rng = _data(3000, seed=0, m=3)
    w = rng.exponential(size=y.size)
    seen = {}
    run = estimators.run_boosting

    def spy(booster, codes, y01, w_train, *args, **kwargs):
        w64 = w_train.astype(np.float64)
        seen["ratio"] = w64[y01 == 1].sum() / w64[y01 == 0].sum()
        seen["total"], seen["n"] = w64.sum(), y01.size
        kwargs["n_trees"] = 2
        return run(booster, codes, y01, w_train, *args, **kwargs)

    monkeypatch.setattr(estimators, "run_boosting", spy)
    BDTClassifier(sig_to_bkg_fraction=2.0, random_state=0).fit(X, y, w)
    assert seen["n"] < y.size  # events were held out
    assert seen["ratio"] == pytest.approx(2.0, rel=1e-6)
    assert seen["total"] == pytest.approx(seen["n"], rel=1e-6)


def test_score_refuses_what_it_cannot_score():
    X, y, _ = _data(300, seed=0, m=2)
    clf = BDTClassifier(n_trees=3).fit(X, y)
    with pytest.raises(ValueError, match="300 events but y has 1"):
        clf.score(X, [1])  # broadcast to an "accuracy" of 92 (out of 1)
    with pytest.raises(ValueError, match="sums to 0"):
        clf.score(X, y, np.zeros(300))
    reg = BDTRegressor(n_trees=3).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="R\\^2 is not defined"):
        reg.score(X, np.ones(300))  # was -inf
    assert 0 < reg.score(X, X[:, 0]) < 1


def test_eval_set_as_a_tuple_of_sets():
    X, y, _ = _data(300, seed=0, m=2)
    model = BDTClassifier(n_trees=3).fit(X, y, eval_set=((X[:100], y[:100]), (X[100:], y[100:])))
    assert list(model.evals_result_) == ["validation_0", "validation_1"]


@pytest.mark.parametrize("params, name", [
    (dict(max_depth=True), "max_depth"), (dict(n_cuts=True), "n_cuts"),
    (dict(early_stopping="yes"), "early_stopping"), (dict(n_jobs=0), "n_jobs"),
    (dict(n_jobs="all"), "n_jobs"),
    (dict(n_trees=50, early_stopping=True, n_iter_no_change=None), "n_iter_no_change"),
])
def test_options_of_the_wrong_kind_are_refused(params, name):
    with pytest.raises(ParameterError) as info:
        BDTClassifier(**params).check_params()
    assert info.value.param == name


def test_tree_count_reasons_say_what_happened(monkeypatch):
    X, y, _ = _data(1500, seed=5)
    model = BDTClassifier(validation_fraction=0.0005, random_state=0).fit(X, y)
    assert "the 0.05% of the training events held out" in model.n_trees_reason_
    monkeypatch.setattr(estimators, "AUTO_MAX_TREES", 12)
    model = BDTClassifier(learning_rate=0.5, random_state=0).fit(
        X[:1000], y[:1000], eval_set=(X[1000:], y[1000:]))
    kept, evaluated = model.n_trees_, len(model.validation_loss_)
    assert evaluated == 12 and kept < 12 and 12 - kept < 10
    assert model.n_trees_reason_.endswith(f"the limit of 12 came {12 - kept} tree(s) later")


@pytest.mark.parametrize("value", ["0.1", [0.1], None, float("nan")])
def test_a_learning_rate_that_is_not_a_number_is_a_parameter_error(value):
    from hepbdt.estimators import ParameterError

    with pytest.raises(ParameterError, match=r"learning_rate=.* is not valid; expected a number"):
        BDTClassifier(learning_rate=value).check_params()


@pytest.mark.parametrize("option,value,loss", [
    ("huber_alpha", 1.5, "huber"), ("huber_delta", -1.0, "huber"),
    ("huber_alpha", 1.5, "squared"), ("huber_delta", 0.0, "squared")])
def test_huber_options_out_of_range_are_refused_by_name(tmp_path, capsys, option, value, loss):
    """A bad huber_alpha or huber_delta was blamed on loss (ParameterError('loss'), the CLI's
    "[method] loss:"), and with another loss saved with the model unchecked (scikit-learn's
    GradientBoostingRegressor refuses alpha=1.5 whatever the loss)."""
    from hepbdt.cli import main

    X, _, rng = _data(300)
    boosting = "newton" if option == "huber_delta" else "gradient"
    with pytest.raises(ParameterError) as error:
        BDTRegressor(n_trees=3, boosting=boosting, loss=loss, **{option: value}).fit(X, X[:, 0])
    assert error.value.param == option
    config = tmp_path / "reg.toml"
    config.write_text(f'title = "t"\ntree = "T"\nfeatures = ["x"]\n[samples.a]\nfiles = "a.root"\n'
                      f'target = "x * 2"\n[method]\nboosting = "{boosting}"\nloss = "{loss}"\n'
                      f'{option} = {value}\n')
    assert main(["train", str(config), "--check"]) == 2
    assert f"[method] {option}:" in capsys.readouterr().err


def test_auto_node_size_is_20_events_at_most_a_quarter_of_the_sample():
    # LightGBM's min_child_samples=20 as a share of the events, capped at a quarter: 1/4 of
    # 60 events (20/60 is more), 20/200 of 200
    X, y, _ = _data(200, seed=0)
    assert BDTClassifier(random_state=0).fit(X[:60], y[:60]).min_node_size_ == 0.25
    assert BDTClassifier(random_state=0).fit(X, y).min_node_size_ == 20 / 200


@pytest.mark.parametrize("boosting", ["adaboost", "eps"])
def test_adaboost_probability_maps_the_score_range_onto_0_1(boosting):
    # an AdaBoost score lies in [-1, 1]: P(signal) = (F + 1) / 2 by hand
    X, y, _ = _data(400, seed=1)
    model = BDTClassifier(boosting=boosting, n_trees=5, max_depth=2, random_state=0).fit(X, y)
    score = model.decision_function(X)
    assert score.min() < 0 < score.max()
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], (score + 1) / 2, rtol=1e-15)
    np.testing.assert_allclose(list(model.staged_predict_proba(X))[-1][:, 0], (1 - score) / 2,
                               rtol=1e-15)


def test_predict_is_the_more_probable_class_as_scikit_learn_takes_it():
    # scikit-learn's classifiers predict classes_[argmax(predict_proba)]; probabilities
    # within 0.005 of 0.5 (three trees of rate 0.01) decide it as well
    X, y, _ = _data(2000, seed=3)
    model = BDTClassifier(n_trees=3, learning_rate=0.01, random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    assert np.any((proba[:, 1] > 0.5) & (proba[:, 1] <= 0.505))
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
