"""Learning curves from staged scores."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

from hepbdt.evaluation import learning_curve, roc_auc
from hepbdt.evaluation.curves import binomial_deviance


class _StagedModel:
    """Stand-in classifier: score after k trees is 0.04 k (x0 - 1/2 + noise)."""

    _estimator_type = "classifier"

    def __init__(self, n_trees, best_iteration=None):
        self.n_trees_ = n_trees
        self.best_iteration_ = best_iteration
        self.train_loss_ = np.linspace(0.7, 0.3, n_trees)
        self.validation_loss_ = None

    def staged_decision_function(self, X):
        rng = np.random.default_rng(0)
        score = np.zeros(X.shape[0])
        for _ in range(self.n_trees_):
            score = score + 0.04 * (X[:, 0] - 0.5 + 0.3 * rng.normal(size=X.shape[0]))
            yield score


def _data(seed, n=400):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(y[:, None] * 1.0, 1.0, size=(n, 2))
    return X, y, rng.uniform(0.5, 1.5, n)


def test_learning_curve_classifier():
    model = _StagedModel(30, best_iteration=19)
    train, test = _data(1), _data(2)
    curve = learning_curve(model, train, SimpleNamespace(X=test[0], y=test[1], w=test[2],
                                                         feature_names=["a", "b"]))
    np.testing.assert_array_equal(curve.n_trees, np.arange(1, 31))
    assert curve.best_n_trees == 20
    last = list(model.staged_decision_function(test[0]))[-1]
    assert curve.test_auc[-1] == pytest.approx(roc_auc(test[1], last, test[2]))
    assert curve.test_loss[-1] == pytest.approx(binomial_deviance(test[1], last, test[2]))
    assert curve.train_loss[0] > curve.train_loss[-1]
    assert curve.recorded_train_loss.shape == (30,) and curve.recorded_validation_loss is None


def test_learning_curve_thins_long_runs_and_keeps_the_last_stage():
    curve = learning_curve(_StagedModel(95), _data(3), _data(4), max_points=10)
    assert curve.n_trees[0] == 1 and curve.n_trees[-1] == 95
    assert curve.n_trees.size <= 12


def test_learning_curve_regressor():
    X = np.linspace(0, 1, 50)[:, None]
    y = 3 * X[:, 0]

    class Reg:
        _estimator_type = "regressor"
        n_trees_ = 3
        loss = "squared"

        def staged_predict(self, data):
            for k in range(1, 4):
                yield k * data[:, 0]

    curve = learning_curve(Reg(), (X, y), (X, y))
    assert curve.train_auc is None
    np.testing.assert_allclose(curve.test_loss, [np.mean((k * X[:, 0] - y) ** 2)
                                                 for k in (1, 2, 3)])


@pytest.mark.skipif(importlib.util.find_spec("hepbdt.estimators") is None,
                    reason="hepbdt.estimators (the engine) is not there yet")
def test_learning_curve_on_hepbdt_model_with_early_stopping():
    import hepbdt

    X, y, w = _data(5, n=1500)
    Xt, yt, wt = _data(6, n=800)
    model = hepbdt.BDTClassifier(n_trees=25, max_depth=2, learning_rate=0.3, random_state=0,
                                 early_stopping_rounds=10)
    model.fit(X, y, sample_weight=w, eval_set=(Xt, yt, wt))
    curve = learning_curve(model, (X, y, w), (Xt, yt, wt))
    assert curve.n_trees[-1] == model.n_trees_
    assert curve.loss_name == "log loss"
    if model.best_iteration_ is not None:
        assert curve.best_n_trees == model.best_iteration_ + 1 == model.n_trees_
    proba = model.predict_proba(Xt)[:, 1]
    expected = -np.sum(wt * np.where(yt == 1, np.log(proba), np.log1p(-proba))) / wt.sum()
    assert curve.test_loss[-1] == pytest.approx(expected, rel=1e-9)
    assert curve.test_auc[-1] == pytest.approx(roc_auc(yt, model.decision_function(Xt), wt))


def test_an_eval_set_watched_without_early_stopping_marks_no_early_stop():
    # 60 trees kept, best_iteration_ 4: the figure's legend read "early stop (5 trees)"
    # (the auto-trees audit); a model cut at its best iteration keeps the mark
    import hepbdt

    X, y, w = _data(5, n=1500)
    Xt, yt, wt = _data(6, n=800)
    options = dict(max_depth=4, learning_rate=0.5, random_state=0)
    kept = hepbdt.BDTClassifier(n_trees=60, **options).fit(X, y, w, eval_set=(Xt, yt, wt))
    assert kept.n_trees_ == 60 and kept.best_iteration_ + 1 < 60
    assert learning_curve(kept, (X, y, w), (Xt, yt, wt)).best_n_trees is None
    cut = hepbdt.BDTClassifier(n_trees=60, early_stopping_rounds=5, **options).fit(
        X, y, w, eval_set=(Xt, yt, wt))
    assert cut.n_trees_ == cut.best_iteration_ + 1 < 60
    assert learning_curve(cut, (X, y, w), (Xt, yt, wt)).best_n_trees == cut.n_trees_


def test_learning_curve_on_large_samples_evaluates_fewer_stages_with_the_same_values():
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(11)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=2000) > 0).astype(int)
    model = BDTClassifier(n_trees=60, max_depth=2).fit(X[:1000], y[:1000])
    train, test = (X[:1000], y[:1000]), (X[1000:], y[1000:])
    every = learning_curve(model, train, test)
    fewer = learning_curve(model, train, test, max_event_stages=1000 * 25)
    assert every.n_trees.size == 60 and fewer.n_trees.size < 30 and fewer.n_trees[-1] == 60
    at = np.searchsorted(every.n_trees, fewer.n_trees)
    np.testing.assert_array_equal(every.n_trees[at], fewer.n_trees)
    np.testing.assert_array_equal(every.test_loss[at], fewer.test_loss)
    np.testing.assert_array_equal(every.test_auc[at], fewer.test_auc)


def test_a_multiclass_learning_curve_counts_rounds_of_k_trees():
    """Its stages are rounds of one tree a class: the figure says so, as the summary does
    (it said "Number of trees" under 12 rounds of 3 trees, 36 trees)."""
    from sklearn.metrics import log_loss as sk_log_loss

    from hepbdt import BDTClassifier
    from hepbdt.plotting import plot_learning_curve

    rng = np.random.default_rng(7)
    y = np.repeat([0, 1, 2], 100)
    X = rng.normal(y[:, None] * 0.8, 1.0, size=(300, 2))
    model = BDTClassifier(n_trees=12, max_depth=2).fit(X, y)
    assert model.forest_.tree_offsets.size - 1 == 36
    curve = learning_curve(model, (X, y), (X, y))
    assert curve.n_trees[-1] == 12 and curve.unit == "rounds of 3 trees"
    assert curve.test_loss[-1] == pytest.approx(sk_log_loss(y, model.predict_proba(X)))
    figure = plot_learning_curve(curve)
    assert figure.axes[-1].get_xlabel() == "Number of rounds of 3 trees"


def test_a_fit_that_ran_to_n_trees_marks_no_early_stop():
    """early_stopping on, but the validation loss still falling at the last of n_trees=5:
    the best tree is the last, nothing was evaluated beyond it, so the fit did not stop
    early (the legend read "early stop (5 trees)")."""
    import hepbdt

    X, y, w = _data(5, n=3000)
    model = hepbdt.BDTClassifier(boosting="gradient", n_trees=5, early_stopping=True,
                                 random_state=0).fit(X, y, w)
    losses = np.asarray(model.validation_loss_)
    assert losses.size == 5 and int(np.argmin(losses)) == 4  # still improving at the cap
    assert learning_curve(model, (X, y, w), _data(6, n=800)).best_n_trees is None


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_staged_aucs_at_extreme_weight_scales_are_scikit_learns():
    """Each class's weights scaled by its own power of ten (1e200 and 1e-250): products of
    the two classes' sums pass float64's range, yet each stage's AUC is scikit-learn's on
    the unscaled weights (the AUC does not depend on a class's scale), with no overflow
    warning (one class's weights in the other's units overflowed, then were discarded)."""
    metrics = pytest.importorskip("sklearn.metrics")
    model = _StagedModel(12)
    train, (X, y, w) = _data(5), _data(6, n=300)
    scaled = np.where(y == 1, w * 1e200, w * 1e-250)
    curve = learning_curve(model, train, (X, y, scaled))
    stages = list(model.staged_decision_function(X))
    expected = [metrics.roc_auc_score(y, s, sample_weight=w) for s in stages]
    np.testing.assert_allclose(curve.test_auc, expected, rtol=1e-12)


def test_a_staged_auc_without_background_weight_is_refused():
    model = _StagedModel(5)
    X, y, w = _data(7)
    with pytest.raises(ValueError, match="background"):
        learning_curve(model, _data(8), (X, y, np.where(y == 1, w, 0.0)))


def test_binomial_deviance_is_scikit_learns_log_loss_of_the_sigmoid():
    metrics = pytest.importorskip("sklearn.metrics")
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 500)
    score = rng.normal(0.8 * (2 * y - 1), 2.0)
    w = rng.uniform(0.1, 3.0, 500)
    expected = metrics.log_loss(y, special.expit(score), sample_weight=w)
    assert binomial_deviance(y, score, w) == pytest.approx(expected, rel=1e-9)


def test_a_scikit_learn_classifier_gets_log_loss_and_auc_of_its_own_stages():
    """A model without hepbdt's link (scikit-learn's GradientBoostingClassifier) and without
    n_trees_: every stage evaluated, the test loss scikit-learn's weighted log_loss of
    column 1 of staged_predict_proba and the AUC roc_auc_score of its staged decision
    function (equal test class weights: the class-mix factors are 1)."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import log_loss as sk_log_loss
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, 200)
    model = GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0)
    model.fit(X[:100], y[:100])
    curve = learning_curve(model, (X[:100], y[:100]), (X[100:], y[100:], w[100:]),
                           match_class_mix=False)
    np.testing.assert_array_equal(curve.n_trees, [1, 2, 3, 4])
    probas = [p[:, 1] for p in model.staged_predict_proba(X[100:])]
    raws = list(model.staged_decision_function(X[100:]))
    np.testing.assert_allclose(curve.test_loss, [
        sk_log_loss(y[100:], p, sample_weight=w[100:]) for p in probas], rtol=1e-12)
    np.testing.assert_allclose(curve.test_auc, [
        roc_auc_score(y[100:], r.ravel(), sample_weight=w[100:]) for r in raws], rtol=1e-12)


def test_a_regressor_fitted_with_the_absolute_loss_gets_scikit_learns_weighted_mae():
    """model.loss = "absolute": each stage's loss is scikit-learn's weighted
    mean_absolute_error (the squared error read 1.58 where the MAE is 1.12 at stage 3)."""
    from sklearn.metrics import mean_absolute_error

    X = np.linspace(0, 1, 50)[:, None]
    y, w = 3 * X[:, 0], np.linspace(1.0, 2.0, 50)

    class Reg:
        _estimator_type = "regressor"
        n_trees_ = 3

        def get_params(self):
            return {"loss": "absolute"}

        def staged_predict(self, data):
            for k in range(1, 4):
                yield (k + 2) * data[:, 0]

    curve = learning_curve(Reg(), (X, y, w), (X, y, w))
    assert curve.loss_name == "absolute error"
    expected = [mean_absolute_error(y, (k + 2) * X[:, 0], sample_weight=w) for k in (1, 2, 3)]
    np.testing.assert_allclose(curve.test_loss, expected, rtol=1e-12)
    np.testing.assert_allclose(curve.train_loss, expected, rtol=1e-12)


def test_loss_weights_summing_to_zero_are_refused_naming_the_sample():
    X = np.linspace(0, 1, 4)[:, None]
    y = X[:, 0]

    class Reg:
        _estimator_type = "regressor"
        n_trees_ = 1

        def staged_predict(self, data):
            yield data[:, 0]

    with pytest.raises(ValueError, match=r"test\.w: the summed weight is 0\.0"):
        learning_curve(Reg(), (X, y), (X, y, [1.0, -1.0, 2.0, -2.0]))
