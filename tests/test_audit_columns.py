"""The column-order audit's findings (2026-12-03): a list of fold model files out of fold
order, unnamed columns given to a k-fold model or an evaluation function without the
warning a single model gives, permutation importances named in the input's order after
the columns were put in the model's, and a column found by a name the input defines as
another quantity."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt import BDTClassifier, KFoldModel
from hepbdt.evaluation import per_class_permutation_importance, permutation_importance
from hepbdt.io.dataset import Dataset
from hepbdt.io.errors import InputError
from tests.ntuples import write_ttree

pd = pytest.importorskip("pandas")


def _folds(tmp_path, k=3):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(900, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(int)
    event = np.arange(900)
    named = pd.DataFrame({f"x{j}": X[:, j] for j in range(3)})
    folds = [BDTClassifier(n_trees=3, max_depth=2, random_state=0)
             .fit(named[event % k != i], y[event % k != i]) for i in range(k)]
    KFoldModel(folds, by="event").save(tmp_path / "model.json")
    write_ttree(tmp_path / "events.root", "Events",
                {"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2], "event": event})
    return named, event, folds


def test_a_list_of_fold_files_out_of_fold_order_is_refused(tmp_path):
    """apply() of [fold1, fold0, fold2] scored the events of folds 0 and 1 with the models
    trained on them (scores off by up to 0.37), where the manifest refuses that order."""
    named, event, folds = _folds(tmp_path)
    names = [tmp_path / f"model_fold{i}.json" for i in (1, 0, 2)]
    with pytest.raises(InputError, match="lists .*model_fold1.json' for fold 0"):
        hepbdt.apply(names, str(tmp_path / "events.root"), str(tmp_path / "out.root"),
                     tree="Events", event_branch="event")
    assert not (tmp_path / "out.root").exists()
    hepbdt.apply([tmp_path / f"model_fold{i}.json" for i in range(3)],
                 str(tmp_path / "events.root"), str(tmp_path / "out.root"), tree="Events",
                 event_branch="event")
    with uproot.open(tmp_path / "out.root") as file:
        scores = file["Events"]["bdt_score"].array(library="np")
    expected = np.choose(event % 3, [m.decision_function(named) for m in folds])
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


def _named_model():
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"strong": rng.normal(size=n), "noise": rng.normal(size=n)})
    y = (frame.strong + 0.1 * rng.normal(size=n) > 0).astype(int).to_numpy()
    return frame, y, BDTClassifier(n_trees=10, max_depth=3, random_state=0).fit(frame, y)


def _warned(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [type(w.message).__name__ for w in caught]


def test_unnamed_columns_warn_through_a_kfold_model_and_the_evaluation():
    """A fold model warns of unnamed columns; a KFoldModel of them and
    permutation_importance took reversed columns silently (a ranking of a near-perfect
    model at AUC 0.49)."""
    frame, y, model = _named_model()
    event = np.arange(len(y))
    kfold = KFoldModel([model, copy.deepcopy(model)], by="event")
    reversed_columns = frame.to_numpy()[:, ::-1].astype(np.float32)
    assert "FeatureNamesWarning" in _warned(lambda: model.decision_function(reversed_columns))
    assert "FeatureNamesWarning" in _warned(
        lambda: kfold.decision_function(reversed_columns, event))
    assert "FeatureNamesWarning" in _warned(
        lambda: permutation_importance(model, reversed_columns, y, n_repeats=1))
    # named input, in any order, is taken by name: no warning
    assert _warned(lambda: kfold.decision_function(frame[["noise", "strong"]], event)) == []
    assert _warned(lambda: permutation_importance(model, frame[["noise", "strong"]], y,
                                                  n_repeats=1)) == []


def test_permutation_importances_keep_the_names_of_the_columns_given():
    """Names given for X's columns stayed in X's order after the columns were put in the
    model's: the strong feature's importance was reported as the noise's."""
    frame, y, model = _named_model()
    swapped = frame[["noise", "strong"]]
    reference = permutation_importance(model, frame, y, n_repeats=2)
    ranked = permutation_importance(model, swapped, y, n_repeats=2,
                                    feature_names=list(swapped.columns))
    assert dict(zip(ranked.feature_names, ranked.importances_mean, strict=True)) == dict(
        zip(reference.feature_names, reference.importances_mean, strict=True))
    assert ranked.importances_mean[ranked.feature_names.index("strong")] > 0.3
    three = np.digitize(frame.strong, [-0.5, 0.5])
    model3 = BDTClassifier(n_trees=5, max_depth=3, random_state=0).fit(frame, three)
    per_class = per_class_permutation_importance(model3, swapped, three, n_repeats=1,
                                                 feature_names=list(swapped.columns))
    for ranking in per_class:
        assert ranking.importances_mean[ranking.feature_names.index("strong")] > \
            ranking.importances_mean[ranking.feature_names.index("noise")]


def test_a_column_the_input_defines_as_another_quantity_is_refused():
    """Dataset X whose 'pt1' was read as the second jet's pT was scored as the model's
    'pt1' (the leading jet's): scores moved by up to 2."""
    rng = np.random.default_rng(0)
    lead = rng.exponential(50, 2000) + 30
    y = (lead + rng.normal(0, 20, 2000) > 80).astype(int)
    train = Dataset(np.column_stack([lead, 2 * lead]).astype(np.float32), y=y,
                    feature_names=["pt1", "HT"], feature_definitions={"pt1": "Jet_pt[:, 0]"})
    model = BDTClassifier(n_trees=5, max_depth=3, random_state=0).fit(train.X, train.y)
    # the same expression, written otherwise (log((HT)) beside log(HT) was refused too)
    for spelling in ("Jet_pt[:,0]", "(Jet_pt[:, 0])", "Jet_pt[ : , 0 ]"):
        same = Dataset(train.X.view(np.ndarray).copy(), y=y, feature_names=["pt1", "HT"],
                       feature_definitions={"pt1": spelling})
        np.testing.assert_array_equal(model.decision_function(same.X),
                                      model.decision_function(train.X))
    other = Dataset(train.X.view(np.ndarray).copy(), y=y, feature_names=["pt1", "HT"],
                    feature_definitions={"pt1": "Jet_pt[:, 1]"})
    for call in (lambda: model.decision_function(other.X),
                 lambda: KFoldModel([model, copy.deepcopy(model)], by="event").decision_function(
                     other.X, np.arange(2000)),
                 lambda: permutation_importance(model, other.X, y, n_repeats=1)):
        with pytest.raises(ValueError, match="'pt1' was read as 'Jet_pt\\[:, 1\\]'"):
            call()
