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


def test_a_read_of_other_event_numbers_than_the_folds_warns(tmp_path):
    """A read without event= gives entry numbers: KFoldModel(by="event") then scored 381 of
    600 events with a fold model that trained on them, without a word, where apply warns
    (FoldExpressionWarning). The read's event expressions now travel with its X. The
    reference: each event's fold from its stored event number, event % k in Python ints."""
    import warnings

    import hepbdt
    from hepbdt.kfold import FoldExpressionWarning, KFoldModel
    from tests.ntuples import write_ttree

    rng = np.random.default_rng(0)
    n, k = 600, 3
    x = rng.normal(size=n).astype(np.float32)
    label = x + rng.normal(size=n) > 0
    event = rng.permutation(10**6)[:n].astype(np.int64)
    write_ttree(tmp_path / "f.root", "Events", {"x": x, "event": event})
    models = [hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(
        {"x": x[event % k != i]}, label[event % k != i]) for i in range(k)]
    kfold = KFoldModel(models, by="event")
    want = np.array([models[int(e) % k].decision_function({"x": x[j:j + 1]})[0]
                     for j, e in enumerate(event.tolist())])
    sample = hepbdt.Sample("s", f"{tmp_path / 'f.root'}:Events")
    entries = hepbdt.read(sample, ["x"], progress=False)
    with pytest.warns(FoldExpressionWarning, match=r"entry numbers \(no event=\).* event='event'"):
        got = kfold.decision_function(entries.X, entries.event)
    assert np.count_nonzero(got != want) > n // 3  # what the warning is about
    other = hepbdt.read(sample, ["x"], event="event + 0", progress=False)
    with pytest.warns(FoldExpressionWarning, match="'event \\+ 0'"):
        kfold.predict(other.X, other.event)
    binned = hepbdt.read(sample, ["x"], progress=False, binned=True)
    assert binned.X.event_sources == (None,) == binned.X[:10].event_sources
    right = hepbdt.read(sample, ["x"], event="event", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FoldExpressionWarning)
        np.testing.assert_array_equal(kfold.decision_function(right.X, right.event), want)
        np.testing.assert_array_equal(kfold.decision_function(right.X[::2], right.event[::2]),
                                      want[::2])  # rows of the read keep the record


def test_the_permutation_rankings_say_what_to_give_instead_of_a_kfold_model():
    """They called KFoldModel.decision_function without event numbers: Python's bare
    "missing 1 required positional argument: 'event'"."""
    import hepbdt
    from hepbdt.evaluation import permutation_importance
    from hepbdt.evaluation.multiclass import per_class_permutation_importance
    from hepbdt.kfold import KFoldModel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    kfold = KFoldModel([hepbdt.BDTClassifier(n_trees=3).fit(X[i::2], y[i::2]) for i in (0, 1)],
                       by="event")
    for rank in (permutation_importance, per_class_permutation_importance):
        with pytest.raises(TypeError, match=r"give one fold model \(kfold.models\[i\]\)"):
            rank(kfold, X, y)
    permutation_importance(kfold.models[0], X[0::2], y[0::2], n_repeats=1)  # as it says


def test_a_kfold_model_is_the_kind_of_its_fold_models(sample):
    """A KFoldModel of regressors is a regressor where hepbdt asks (it has a
    ``predict_proba`` method, which had made it a classifier), and one of classifiers a
    classifier: scikit-learn's tag, as each fold model carries it."""
    from hepbdt import BDTRegressor
    from hepbdt._util import is_classifier

    X, y, _, folds = sample
    regressors = [BDTRegressor(n_trees=5, max_depth=2).fit(X[folds != i], X[folds != i, 0])
                  for i in range(2)]
    classifiers = [_fit(sample, i) for i in range(2)]
    assert [m._estimator_type for m in regressors] == ["regressor"] * 2
    assert not is_classifier(KFoldModel(regressors))
    assert is_classifier(KFoldModel(classifiers))


def test_a_dask_read_computed_keeps_its_event_expressions(tmp_path):
    """A Dask read without event= gives entry numbers too; its ``compute()`` (and a persisted
    copy) made a Dataset without the read's event expressions, so KFoldModel(by="event")
    scored its entry numbers' folds without the warning an in-memory read gives."""
    pytest.importorskip("dask.array")
    import hepbdt
    from hepbdt.kfold import FoldExpressionWarning
    from tests.ntuples import write_ttree

    rng = np.random.default_rng(1)
    x = rng.normal(size=300).astype(np.float32)
    write_ttree(tmp_path / "f.root", "Events", {"x": x, "event": np.arange(300) * 7})
    models = [hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit({"x": x}, x > i * 0.1)
              for i in range(2)]
    sample = hepbdt.Sample("s", f"{tmp_path / 'f.root'}:Events")
    lazy = hepbdt.read(sample, ["x"], dask=True, step_size=100)
    assert lazy.event_sources == (None,)
    for data in (lazy.compute(scheduler="sync"), lazy.persist(scheduler="sync").compute()):
        assert data.event_sources == (None,)
        with pytest.warns(FoldExpressionWarning, match=r"entry numbers \(no event=\)"):
            KFoldModel(models, by="event").decision_function(data.X, data.event)
    named = hepbdt.read(sample, ["x"], event="event", dask=True, step_size=100)
    assert named.compute(scheduler="sync").X.event_sources == ("event",)


def test_one_model_at_two_folds_is_refused(sample):
    """Model i scores the events model j trained on: one model at both folds would score
    every event with a model that trained on half of them (audit GD, a surviving mutant)."""
    model = _fit(sample, 0)
    with pytest.raises(ValueError, match="fold models 0 and 1 are the same model"):
        KFoldModel([model, model])


def test_a_ddt_mapped_fold_beside_a_plain_one_is_refused(sample):
    """A DDT-mapped score is a quantile, the plain one a probability: one array of both
    would mean other cuts in other folds (audit GD, a surviving mutant)."""
    X, y, _, folds = sample
    mapped = BDTClassifier(n_trees=10, max_depth=2, decorrelation_map="ddt").fit(
        X[folds != 0], y[folds != 0], decorrelate=X[folds != 0, 0])
    with pytest.raises(ValueError, match=r"different scores.*through a DDT map"):
        KFoldModel([mapped, _fit(sample, 1)])


@pytest.mark.parametrize("value", [-(2**63) - 1, 2**63, 3**40 * 2**10])
def test_python_integers_beyond_int64_are_refused(sample, value):
    """An object array of Python ints beyond int64's range (checked with Python's exact
    integers against np.iinfo) is refused as event numbers, not wrapped or overflowed."""
    from hepbdt.kfold import fold_of
    info = np.iinfo(np.int64)
    assert not info.min <= value <= info.max
    with pytest.raises(ValueError, match=r"event numbers must be integers.*event\[1\]"):
        fold_of(np.array([4, value], dtype=object), 2)
    assert fold_of(np.array([4, info.min, info.max], dtype=object), 3).tolist() == [
        4 % 3, info.min % 3, info.max % 3]
