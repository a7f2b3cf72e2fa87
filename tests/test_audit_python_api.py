"""The public Python API against its documented contract: inputs the estimators take are
taken by the evaluation functions that score them, checked against brute force."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import hepbdt
from hepbdt.evaluation import per_class_permutation_importance, permutation_importance
from hepbdt.io import Dataset


@pytest.fixture(scope="module")
def named_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.3 * X[:, 2] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(
            Dataset(X, y, feature_names=["a", "b", "c"]).X, y)
    return model, X, y


def _brute_force_drops(model, X, y, n_repeats, seed=0):
    """Mean AUC drop per column, shuffling as permutation_importance documents."""
    rng = np.random.default_rng(seed)
    base = roc_auc_score(y, model.decision_function(X))
    out = []
    for j in range(X.shape[1]):
        drops = []
        for _ in range(n_repeats):
            shuffled = X.copy()
            shuffled[:, j] = X[rng.permutation(len(X)), j]
            drops.append(base - roc_auc_score(y, model.decision_function(shuffled)))
        out.append(np.mean(drops))
    return np.array(out)


def test_permutation_importance_takes_a_dict_of_arrays_by_name(named_model):
    # a dict of arrays is put in the model's order by name, as the estimators do (README);
    # it failed with an IndexError (np.asarray of a dict is one object)
    model, X, y = named_model
    given = {"c": X[:, 2], "a": X[:, 0], "b": X[:, 1]}
    result = permutation_importance(model, given, y, n_repeats=2,
                                    feature_names=["C", "A", "B"])
    assert result.feature_names == ["A", "B", "C"]
    np.testing.assert_allclose(result.importances_mean,
                               _brute_force_drops(model, X, y, 2), atol=1e-12)


def _three_classes(seed, n, n_trees):
    """Two features, three classes cut on the first, and a classifier fitted on them."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return X, y, hepbdt.BDTClassifier(n_trees=n_trees, max_depth=2).fit(X, y)


def test_per_class_permutation_importance_takes_a_dict_of_arrays():
    X, y, model = _three_classes(1, 600, 3)
    from_dict = per_class_permutation_importance(model, {"x0": X[:, 0], "x1": X[:, 1]}, y,
                                                 n_repeats=2)
    from_array = per_class_permutation_importance(model, X, y, n_repeats=2)
    for a, b in zip(from_dict, from_array, strict=True):
        np.testing.assert_array_equal(a.importances_mean, b.importances_mean)


def _per_class_brute_force(model, X, columns, w, n_repeats, seed=0):
    """Class j's mean AUC drop per feature, as per_class_permutation_importance documents
    (one shuffle scores every class), with scikit-learn's weighted AUC."""
    rng = np.random.default_rng(seed)
    proba = model.predict_proba(X)
    k = proba.shape[1]
    base = [roc_auc_score(columns == j, proba[:, j], sample_weight=w) for j in range(k)]
    drops = np.zeros((k, X.shape[1]))
    for f in range(X.shape[1]):
        for _ in range(n_repeats):
            shuffled = X.copy()
            shuffled[:, f] = X[rng.permutation(len(X)), f]
            p = model.predict_proba(shuffled)
            drops[:, f] += [base[j] - roc_auc_score(columns == j, p[:, j], sample_weight=w)
                            for j in range(k)]
    return drops / n_repeats


def test_per_class_permutation_importance_reads_labels_as_permutation_importance_does():
    """Labels 1, 2, 3 were read as columns and refused (3 is no column of three), where
    permutation_importance and the other functions given a model read y as its labels."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(900, 2))
    columns = np.digitize(X[:, 0], [-0.5, 0.5])
    w = rng.uniform(0.5, 1.5, 900)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, columns + 1, w)
    want = _per_class_brute_force(model, X, columns, w, 2)
    for y in (columns + 1, columns):  # the labels, and the columns (0 is no label)
        got = per_class_permutation_importance(model, X, y, w, n_repeats=2)
        for j in range(3):
            np.testing.assert_allclose(got[j].importances_mean, want[j], atol=1e-12)


def test_permutation_importance_of_a_multiclass_model_names_the_per_class_function():
    X, y, model = _three_classes(3, 300, 2)
    with pytest.raises(ValueError, match="the model has 3 classes: .* use "
                                         "per_class_permutation_importance"):
        permutation_importance(model, X, y)
