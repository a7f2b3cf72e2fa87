"""The scikit-learn audit (2026-12-02): a signal label that sorts first is flagged, since
scikit-learn's tools take the larger label as the positive class; a fit that fails leaves
the estimator as it was. References: scikit-learn's roc_auc_score and its
HistGradientBoostingClassifier's behaviour on a failed refit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.estimators import ClassOrderWarning


def _data(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] + 0.5 * rng.normal(size=n) > 0


@pytest.mark.parametrize("labels, signal_label", [
    (("ttbar", "signal"), None),  # "signal" sorts before "ttbar"
    ((2, 1), None),  # 1 is the signal by default
    ((1, 0), 0),  # TMVA's classID: 0 is the signal
])
def test_signal_label_sorting_first_warns_and_sklearn_reads_it_inverted(labels, signal_label):
    X, is_signal = _data()
    y = np.where(is_signal, labels[1], labels[0])
    with pytest.warns(ClassOrderWarning, match="positive class"):
        model = BDTClassifier(n_trees=10, signal_label=signal_label).fit(X, y)
    assert model.classes_.tolist() == [labels[0], labels[1]]
    # what the warning says: scikit-learn's AUC takes the larger label as positive
    auc = roc_auc_score(y, model.decision_function(X))
    assert auc < 0.5 and roc_auc_score(is_signal, model.decision_function(X)) == pytest.approx(1 - auc)


def test_a_loaded_model_whose_signal_label_sorts_first_warns_again(tmp_path):
    """Saved and loaded, it said nothing, and scikit-learn's roc_auc scorer gave 0.09 for
    an AUC of 0.91."""
    from hepbdt import load_model

    X, is_signal = _data()
    y = np.where(is_signal, "signal", "ttbar")
    with pytest.warns(ClassOrderWarning):
        model = BDTClassifier(n_trees=10).fit(X, y)
    model.save(tmp_path / "model.json")
    with pytest.warns(ClassOrderWarning, match="soft VotingClassifier"):
        loaded = load_model(tmp_path / "model.json")
    assert roc_auc_score(y, loaded.decision_function(X)) < 0.5  # what it warns of
    plain = BDTClassifier(n_trees=10).fit(X, is_signal.astype(int))
    plain.save(tmp_path / "plain.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClassOrderWarning)
        load_model(tmp_path / "plain.json")


@pytest.mark.parametrize("labels", [(0, 1), ("background", "signal"), ("qcd", "signal"), (-1, 1)])
def test_signal_label_sorting_last_does_not_warn(labels):
    X, is_signal = _data()
    y = np.where(is_signal, labels[1], labels[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClassOrderWarning)
        model = BDTClassifier(n_trees=10).fit(X, y)
    assert roc_auc_score(y, model.decision_function(X)) > 0.9


def test_failed_refit_keeps_the_fitted_model():
    X, is_signal = _data()
    model = BDTClassifier(n_trees=10, random_state=0).fit(X, is_signal.astype(int))
    before = (model.classes_.copy(), model.predict_proba(X), model.n_features_in_)
    strings = np.where(is_signal, "signal", "background")
    with pytest.raises(ValueError, match="all weights are zero"):
        model.fit(X, strings, sample_weight=np.zeros(len(X)))
    with pytest.raises(ValueError, match="all weights are zero"):
        model.fit(np.c_[X, X], is_signal.astype(int), sample_weight=np.zeros(len(X)))
    assert model.classes_.tolist() == before[0].tolist() and model.n_features_in_ == before[2]
    np.testing.assert_array_equal(model.predict_proba(X), before[1])


def test_failed_first_fit_leaves_an_unfitted_regressor():
    X, is_signal = _data()
    model = BDTRegressor(n_trees=5)
    with pytest.raises(ValueError):
        model.fit(X, X[:, 0], sample_weight=np.zeros(len(X)))
    assert not hasattr(model, "forest_") and not hasattr(model, "n_features_in_")


def test_adaboost_tree_count_names_the_trees_left_out_not_a_best_iteration():
    # the worked-analyses audit: a resampled AdaBoost fit keeping fewer trees said "cut at
    # its best iteration", which AdaBoost has none of
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = rng.random(2000) < 0.5  # noise: many resampled trees have error >= 0.5
    model = BDTClassifier(boosting="adaboost", n_trees=60, max_depth=1, subsample=0.5,
                          subsample_mode="poisson", random_state=0).fit(X, y)
    skipped = model.forest_.extra["skipped_trees"]
    assert skipped > 0 and model.forest_.n_trees == 60 - skipped
    assert model.n_trees_reason_ == (f"n_trees=60, {skipped} resampled tree(s) left out (error "
                                     ">= 0.5, or a resample without positive net weight)")
    assert "best iteration" not in model.n_trees_reason_
