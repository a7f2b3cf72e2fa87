"""Audit of KFoldModel in Python: each event scored by the fold model ``event % k`` that did
not train on it, checked against a brute-force reference (Python integers, each fold
model's own method on the event's row)."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier, KFoldModel

N = 400


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=N) > 0).astype(int)
    event = rng.permutation(10 * N)[:N]
    return X, y, event, np.array([int(e) % 2 for e in event.tolist()])


def _fit(sample, fold, **options):
    X, y, _, folds = sample
    return BDTClassifier(n_trees=10, max_depth=2, **options).fit(X[folds != fold],
                                                                  y[folds != fold])


@pytest.mark.parametrize("first, second", [
    ({"boosting": "adaboost"}, {"boosting": "gradient"}),  # weighted mean in [-1, 1] vs sum
    ({"boosting": "adaboost"}, {"boosting": "adaboost", "use_yes_no_leaf": False}),  # [0, 1]
    ({"boosting": "newton", "loss": "logistic"}, {"boosting": "gradient"}),  # F vs F/2
])
def test_fold_models_whose_scores_mean_different_things_are_refused(sample, first, second):
    """A score of 0.5 is P = 0.75 for TMVA's AdaBoost and 0.731 for gradient boosting: folds
    of both gave one score array whose cut meant other probabilities in other folds."""
    models = [_fit(sample, 0, **first), _fit(sample, 1, **second)]
    p = [m.predict_proba(np.zeros((1, 2)))[0, 1] for m in models]
    link = [m._link(np.array([0.5]))[0] for m in models]
    assert link[0] != pytest.approx(link[1]) or p[0] != pytest.approx(p[1])
    with pytest.raises(ValueError, match="different scores"):
        KFoldModel(models, by="event")


def test_fold_models_of_one_kind_of_score_score_out_of_fold(sample):
    X, _, event, folds = sample
    models = [_fit(sample, i, boosting="adaboost") for i in range(2)]
    want = np.array([models[f].decision_function(X[j:j + 1])[0] for j, f in enumerate(folds)])
    np.testing.assert_array_equal(KFoldModel(models, by="event").decision_function(X, event),
                                  want)


@pytest.mark.parametrize("unit", ["s", "ns"])
def test_timedelta_event_numbers_are_refused_with_the_event_number_message(sample, unit):
    """A timedelta64 is an np.integer to numpy but no number to int(): the message naming
    the first bad value raised TypeError from int() instead of the ValueError."""
    X, _, event, _ = sample
    models = [_fit(sample, i) for i in range(2)]
    with pytest.raises(ValueError, match=r"event numbers must be integers.*event\[0\]"):
        KFoldModel(models, by="event").decision_function(X, event.astype(f"m8[{unit}]"))
