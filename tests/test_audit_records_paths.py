"""What a model records at training, checked on every path that scores it (audit of
2026-12-05). ``model.decision_function(read.X)`` refuses a read whose branch types change a
feature's values (an Int_t ``flag`` where training read a Bool_t: ``~flag`` is -1 - flag,
not !flag), but the evaluation functions that first put X's columns in the model's order or
copy them to shuffle (``permutation_importance``, ``per_class_permutation_importance``, the
report) dropped the read's records and scored it without a word. The reference is the
model's own refusal, and numpy's ``~`` of the stored numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hepbdt
from hepbdt.evaluation import permutation_importance, roc_auc
from hepbdt.evaluation._data import in_model_order
from hepbdt.io import BranchTypeError
from tests.ntuples import write_ttree

N = 400
FEATURES = ["~flag", "x"]
WORDS = r"branch 'flag' is int32 \(one value an event\) here but was bool"


def _write(path: Path, seed: int, flag: str = "bool") -> np.ndarray:
    """A tree 'Events' of N entries whose numbers depend on ``seed`` alone; ``flag`` stored
    as ``flag`` (Bool_t or Int_t); returns the flags."""
    rng = np.random.default_rng(seed)
    label = rng.random(N) < 0.5
    flags = rng.random(N) < np.where(label, 0.8, 0.2)
    write_ttree(path, "Events", {"flag": flags.astype(flag),
                                 "x": rng.normal(label * 0.5, 1, N).astype(np.float32),
                                 "label": label.astype(np.int32),
                                 "event": np.arange(N, dtype=np.int64)})
    return flags


def _read(path: Path, features=FEATURES, **options):
    samples = [hepbdt.Sample("s", f"{path}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{path}:Events", cut="label == 0", label=0)]
    return hepbdt.read(samples, features, event="event", progress=False, **options)


@pytest.fixture(scope="module")
def productions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    _write(folder / "train.root", 1)
    _write(folder / "same.root", 2)
    _write(folder / "int.root", 2, flag="int32")
    train = _read(folder / "train.root")
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, random_state=0).fit(
        train.X, train.y, train.w)
    return folder, model


def test_permutation_rankings_refuse_what_the_model_refuses(productions):
    folder, model = productions
    same, other = _read(folder / "same.root"), _read(folder / "int.root")
    # the read's ~flag of the Int_t flag is numpy's int32 ~: -1 - flag, not the training's !flag
    flag = (same.X[:, 0] == 0).astype(np.int32)  # the Bool_t read's ~flag is !flag
    np.testing.assert_array_equal(other.X[:, 0], np.invert(flag).astype(np.float32))
    with pytest.raises(BranchTypeError, match=WORDS):
        model.decision_function(other.X)
    # the silent score it gave: the baseline AUC of other numbers than the model's features
    reference = roc_auc(same.y, model.decision_function(same.X))
    with pytest.warns(hepbdt.estimators.FeatureNamesWarning):  # a plain array: no record
        wrong = roc_auc(other.y, model.decision_function(np.asarray(other.X)))
    assert abs(wrong - reference) > 0.1
    with pytest.raises(BranchTypeError, match=WORDS):
        permutation_importance(model, other.X, other.y, n_repeats=1)
    ranking = permutation_importance(model, same.X, same.y, n_repeats=1)
    assert ranking.baseline == pytest.approx(reference, abs=1e-12)


def test_columns_put_in_the_models_order_keep_its_checks(productions):
    # a read of the features in another order is put in the model's order by name; the
    # rebuilt columns had no record left for the model to check
    folder, model = productions
    other = _read(folder / "int.root", FEATURES[::-1])
    with pytest.raises(BranchTypeError, match=WORDS):
        in_model_order(model, other.X)
    with pytest.raises(BranchTypeError, match=WORDS):
        permutation_importance(model, other.X, other.y, n_repeats=1)
    same = _read(folder / "same.root", FEATURES[::-1])
    X, names = in_model_order(model, same.X)
    assert names == FEATURES
    np.testing.assert_array_equal(model.decision_function(X),
                                  model.decision_function(_read(folder / "same.root").X))


def test_binning_a_read_keeps_the_records_a_model_checks(productions):
    # BinnedMatrix.from_features(read.X, edges) kept the read's names and definitions but
    # not its branch types: the Int_t flag's ~flag (numpy's -1 - flag, not the training's
    # !flag) was scored from its bins without a word
    from hepbdt.binned import BinnedMatrix

    folder, model = productions
    other = _read(folder / "int.root")
    flag = np.asarray(_read(folder / "same.root").X[:, 0]) == 0  # the same flags, read as bool
    np.testing.assert_array_equal(other.X[:, 0], np.invert(flag.astype(np.int32)))
    binned = BinnedMatrix.from_features(other.X, model.bin_edges_)
    assert binned.branch_types == {"flag": "int32", "x": "float32"}
    assert binned.event_sources == ("event",)
    with pytest.raises(BranchTypeError, match=WORDS):
        model.decision_function(binned)
    renamed = BinnedMatrix.from_features(np.asarray(other.X), model.bin_edges_, FEATURES)
    assert renamed.branch_types is None  # a plain array: no record to keep


def _write_jets(path: Path, seed: int, no_jet: float) -> np.ndarray:
    """A tree 'Events' of N entries with a jagged ``jet``; a fraction ``no_jet`` of the
    events has none (``jet[:, 0]`` missing). Returns which events have none."""
    import awkward as ak

    rng = np.random.default_rng(seed)
    label = rng.random(N) < 0.5
    counts = rng.integers(1, 4, N)
    counts[rng.random(N) < no_jet] = 0
    jets = ak.Array([list(rng.normal(s * 0.7, 1, k)) for s, k in zip(label, counts,
                                                                      strict=True)])
    write_ttree(path, "Events", {"jet": ak.values_astype(jets, np.float32),
                                 "x": rng.normal(label * 0.5, 1, N).astype(np.float32),
                                 "label": label.astype(np.int32),
                                 "event": np.arange(N, dtype=np.int64)})
    return counts == 0


def test_python_scoring_notes_missing_values_the_training_had_none_of(tmp_path):
    """hepbdt apply notes the events scored with a missing value where the training had
    none (each goes to every split's default side, that of the largest values); Python's
    decision_function of the same read said nothing. The reference: apply's count, and
    numpy's count of the events without a jet."""
    import warnings

    from hepbdt.scoring import MissingValueWarning, apply

    features = ["jet[:, 0]", "x"]
    _write_jets(tmp_path / "train.root", 1, 0.0)
    empty = _write_jets(tmp_path / "app.root", 2, 0.3)
    train = _read(tmp_path / "train.root", features)
    assert not np.isnan(train.X).any()
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, random_state=0).fit(
        train.X, train.y, train.w)
    words = rf"'jet\[:, 0\]' in {int(empty.sum())} events"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply(model, tmp_path / "app.root", tmp_path / "s.root", event_branch="event")
    assert [str(w.message) for w in caught if w.category is MissingValueWarning] != []
    assert len([w for w in caught if w.category is MissingValueWarning]) == 1  # apply's own
    app = _read(tmp_path / "app.root", features)
    assert np.isnan(app.X[:, 0]).sum() == empty.sum()
    # the score given: that of the largest value (+inf's side of every split)
    largest = app.X.copy()  # a copy keeps the read's names
    largest[np.isnan(largest)] = np.finfo(np.float32).max
    folds = hepbdt.KFoldModel([model, hepbdt.load_model(_saved(model, tmp_path))], by="event")
    binned = _read(tmp_path / "app.root", features, binned=True, bin_edges=model.bin_edges_)
    for score in (model.decision_function, model.predict_proba, model.predict,
                  lambda X: list(model.staged_decision_function(X))[-1],
                  lambda X: folds.decision_function(X, np.zeros(len(X), np.int64))):
        with pytest.warns(MissingValueWarning, match=words):
            score(app.X)
    with pytest.warns(MissingValueWarning, match=words):
        model.decision_function(binned.X)
    with pytest.warns(MissingValueWarning, match=words):
        scores = model.decision_function(app.X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)  # no missing value: no note
        np.testing.assert_array_equal(scores, model.decision_function(largest))
        # a model whose training had missing values says nothing
        both = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(app.X, app.y, app.w)
        both.decision_function(app.X)


def _saved(model, folder: Path) -> Path:
    model.save(folder / "model.json")
    return folder / "model.json"


def test_a_tmva_two_class_import_refuses_missing_codes_as_it_refuses_nan(tmp_path):
    """A model read from a TMVA two-class file refuses NaN inputs (the Reader answers -999
    without walking the trees); the same events as a binned read's missing codes were
    walked and scored (126 of 400 events, none at -999)."""
    from hepbdt.interop import from_tmva_xml, tmva_response

    _write_jets(tmp_path / "t.root", 3, 0.4)
    features = ["jet[:, 0]", "x"]
    data = _read(tmp_path / "t.root", features)
    missing = np.isnan(data.X).any(axis=1)
    assert missing.sum() > N // 10
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, boosting="adaboost",
                                 random_state=0).fit(data.X, data.y, data.w)
    with pytest.warns(UserWarning, match="NaN inputs"):
        model.save_tmva(tmp_path / "w.xml")
    imported = from_tmva_xml(tmp_path / "w.xml")
    np.testing.assert_array_equal(tmva_response(imported, data.X)[missing], -999.0)
    words = rf"X has NaN inputs in {int(missing.sum())} event\(s\)"
    with pytest.raises(ValueError, match=words):
        imported.decision_function(data.X)
    binned = _read(tmp_path / "t.root", features, binned=True, bin_edges=model.bin_edges_)
    for score in (imported.decision_function, imported.predict_proba,
                  lambda X: list(imported.staged_decision_function(X))):
        with pytest.raises(ValueError, match=words):
            score(binned.X)
    kept = binned.X[~missing]  # no missing value: scored as the floats are
    np.testing.assert_array_equal(imported.decision_function(kept),
                                  imported.decision_function(data.X[~missing]))


def test_a_ddt_map_on_binned_input_refuses_a_mass_of_other_bins():
    """A model whose DDT map reads its variable from X's column refuses a ``decorrelate=``
    that differs from that column (float X); on a binned X it took any, the trees reading
    X's mass bins and the map another mass (scores moved by 0.23). The reference: the
    float path's refusal, and numpy's bins of the two masses."""
    from hepbdt.binned import BinnedMatrix
    from hepbdt.estimators import ParameterError

    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.5).astype(int)
    mass = rng.uniform(50, 150, 600).astype(np.float32)
    X = np.column_stack([rng.normal(y * 0.8, 1, 600), mass + 10 * y]).astype(np.float32)
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, decorrelation_map="ddt",
                                 random_state=0).fit(X, y, decorrelate=X[:, 1].astype(float))
    other = X[::-1, 1].astype(np.float64)
    with pytest.raises(ParameterError, match="decorrelate differs from it"):
        model.decision_function(X, decorrelate=other)
    binned = BinnedMatrix.from_features(X, model.bin_edges_)
    edges = np.asarray(model.bin_edges_[1], np.float32)
    bins = np.searchsorted(edges, X[:, 1], side="right")
    np.testing.assert_array_equal(binned.codes[:, 1], bins)  # the codes numpy gives
    moved = np.count_nonzero(np.searchsorted(edges, other.astype(np.float32), "right") != bins)
    assert moved > 0
    with pytest.raises(ParameterError, match=f"another of its bins at {moved} event"):
        model.decision_function(binned, decorrelate=other)
    # within each bin the mass is not known: X's own values, or any of the same bins, pass
    own = model.decision_function(binned, decorrelate=X[:, 1].astype(float))
    np.testing.assert_array_equal(own, model.decision_function(X))
    low = np.concatenate([[-np.inf], edges])[bins]  # each bin's lower edge, in the bin
    model.decision_function(binned, decorrelate=np.where(np.isfinite(low), low, X[:, 1]))


class _CountedCodes(np.ndarray):
    """Bin codes that note the size of every array compared with ``==``."""

    compared: list[int] = []

    def __eq__(self, other):
        _CountedCodes.compared.append(self.size)
        return np.asarray(self) == other


def test_binned_scoring_counts_missing_codes_only_when_it_may_warn(monkeypatch):
    """Python scoring of a BinnedMatrix counted its missing codes on every call, a mask of
    the codes whole (a byte a value; the blockwise ``missing_any`` exists to avoid it), even
    for a model that trained with missing values, which never warns. The reference:
    numpy's count of the NaN in the floats binned."""
    import warnings

    import hepbdt._util
    from hepbdt.binned import MISSING_CODE, BinnedMatrix
    from hepbdt.scoring import MissingValueWarning

    monkeypatch.setattr(hepbdt._util, "NAN_BLOCK_VALUES", 1000)  # blocks of 250 rows
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 1] > 0).astype(int)
    X[rng.random(X.shape) < 0.1] = np.nan
    expected = np.isnan(X).sum(axis=0)
    trained_with = hepbdt.BDTClassifier(n_trees=5, max_depth=3, random_state=0).fit(X, y)
    trained_without = hepbdt.BDTClassifier(n_trees=5, max_depth=3, random_state=0).fit(
        np.nan_to_num(X), y)
    for model, warns in ((trained_with, False), (trained_without, True)):
        binned = BinnedMatrix.from_features(X, model.bin_edges_)
        binned.codes = binned.codes.view(_CountedCodes)
        _CountedCodes.compared.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.decision_function(binned)
        noted = [str(w.message) for w in caught if w.category is MissingValueWarning]
        assert max(_CountedCodes.compared, default=0) <= 1000  # block by block, if at all
        if not warns:
            assert noted == [] and _CountedCodes.compared == []
            continue
        shown = ", ".join(f"'feature {j}' in {c:,}" for j, c in enumerate(expected))
        assert len(noted) == 1 and f"({shown} events)" in noted[0]
        assert np.count_nonzero(binned.codes.view(np.ndarray) == MISSING_CODE) == expected.sum()


def test_a_kfold_model_notes_the_missing_values_of_all_its_folds_once():
    """KFoldModel's fold models each noted the missing values of their fold's events (two
    warnings, 70 and 61, for X's 131); the k-fold model notes X's count once, leaving out
    the events of a fold model whose training had missing values. The reference: numpy's
    count of the NaN in the events each fold model scores."""
    import warnings

    from hepbdt.binned import BinnedMatrix
    from hepbdt.scoring import MissingValueWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2)).astype(np.float32)
    event = np.arange(600)
    y = (X[:, 0] > 0).astype(int)
    train = [X[event % 2 != i] for i in range(2)]
    train[1] = train[1].copy()
    train[1][::9, 0] = np.nan  # fold model 1 trained with missing values
    models = [hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(
        t, y[event % 2 != i]) for i, t in enumerate(train)]
    Xa = X.copy()
    Xa[rng.random(600) < 0.2, 0] = np.nan

    def noted(folds, X):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            folds.decision_function(X, event)
        return [str(w.message) for w in caught if w.category is MissingValueWarning]

    both_without = hepbdt.KFoldModel([models[0], models[0].__class__(
        n_trees=5, max_depth=2, random_state=1).fit(train[0], y[event % 2 != 0])], by="event")
    all_nan = int(np.isnan(Xa[:, 0]).sum())
    for given in (Xa, BinnedMatrix.from_features(Xa, models[0].bin_edges_)):
        got = noted(both_without, given)
        assert len(got) == 1 and f"'feature 0' in {all_nan} events" in got[0]
    fold0 = int(np.isnan(Xa[event % 2 == 0, 0]).sum())  # scored by fold model 0 alone
    assert 0 < fold0 < all_nan
    got = noted(hepbdt.KFoldModel(models, by="event"), Xa)
    assert len(got) == 1 and f"'feature 0' in {fold0} events" in got[0]


def test_the_report_notes_missing_values_the_training_had_none_of(tmp_path):
    """``hepbdt.report`` scored test events with a NaN the training never saw (each on every
    split's default side) and said nothing, where ``decision_function`` called by the user
    notes them: the report now warns and says so atop the page, per sample, on floats and on
    binned codes. The reference count is numpy's."""
    import html

    import matplotlib

    matplotlib.use("Agg")
    from hepbdt.binned import BinnedMatrix
    from hepbdt.scoring import MissingValueWarning

    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 3))
    y = (X[:, 0] + rng.normal(size=800) > 0).astype(int)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(X[:400], y[:400])
    X_test = X[400:].copy()
    X_test[rng.random(400) < 0.1, 1] = np.nan
    expected = f"'x1' in {int(np.isnan(X_test[:, 1]).sum()):,} events"
    for test in (X_test, BinnedMatrix.from_features(X_test, model.bin_edges_)):
        path = tmp_path / "report.html"
        with pytest.warns(MissingValueWarning, match=f"test sample: .*{expected}"):
            hepbdt.report(model, (X[:400], y[:400]), (test, y[400:]), path)
        page = path.read_text()
        assert 'id="unseen-missing"' in page and html.escape(expected) in page
        assert "training sample:" not in page
    trained_on_nan = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(X_test, y[400:])
    hepbdt.report(trained_on_nan, (X_test, y[400:]), (X_test, y[400:]), tmp_path / "r.html")
    assert 'id="unseen-missing"' not in (tmp_path / "r.html").read_text()
