"""k-fold scoring that is right or refused: apply takes a k-fold model's own event
expression, a training records the one its samples used (or is refused), event numbers and
fold numbers that are not integers in range are refused, and apply's error for an infinite
feature names apply's own remedy (``--inf-as-missing``).

Expected folds are computed with Python integers (``int(e) % k``), never with
:func:`hepbdt.kfold.fold_of`.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.analysis import ConfigError, load_config, train
from hepbdt.cli import main
from hepbdt.io import Dataset
from hepbdt.io.errors import BadValueError, InputError
from hepbdt.kfold import KFoldModel, fold_of
from hepbdt.scoring import FoldExpressionWarning, apply
from tests.ntuples import KINDS, write_ntuple, write_ttree

K = 3


class FoldStandIn:
    """A stand-in fold model whose score is its own fold number: the score says which
    model scored the event."""

    def __init__(self, fold: int) -> None:
        self.fold = fold
        self.feature_names_in_ = np.array(["x1"], dtype=object)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), float(self.fold))


def _write_events(path: Path, event: np.ndarray, seed: int, x2: np.ndarray | None = None
                  ) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = len(event)
    columns = {"x1": rng.normal(size=n).astype(np.float32),
               "x2": rng.normal(size=n).astype(np.float32) if x2 is None else x2,
               "w": rng.uniform(0.5, 1.5, n), "event": event.astype(np.int64)}
    write_ttree(path, "Events", columns)
    return columns


@pytest.fixture(scope="module")
def ntuple(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """One file whose event numbers are not its entry numbers (negatives, beyond 2**53)."""
    path = tmp_path_factory.mktemp("ntuple") / "events.root"
    rng = np.random.default_rng(11)
    event = rng.permutation(np.r_[rng.integers(-10**15, 10**15, 140), 2**60 + 7, -5, 0])
    _write_events(path, event, seed=1)
    return path, event


def _out_of_fold(event: np.ndarray, shift: int) -> np.ndarray:
    """The fold of each event, as Python integers: (event + shift) % K."""
    return np.array([(int(e) + shift) % K for e in event.tolist()], dtype=np.float64)


# -- 1. apply with a k-fold model takes the model's own event expression --------------------


@pytest.mark.parametrize("by, shift", [("event", 0), ("event + 1", 1)])
def test_python_apply_of_a_kfold_model_scores_by_its_by_expression(ntuple, tmp_path, by, shift):
    path, event = ntuple
    model = KFoldModel([FoldStandIn(i) for i in range(K)], by=by)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the model's own expression is used
        apply(model, path, tmp_path / "friend.root")
    with uproot.open(tmp_path / "friend.root") as file:
        got = file["Events"].arrays(library="np")
    np.testing.assert_array_equal(got["bdt_score"], _out_of_fold(event, shift))
    assert "entry" not in got


def test_a_kfold_model_without_its_expression_is_applied_only_by_a_given_one(ntuple, tmp_path):
    """KFoldModel(models) made from a Dataset read without event= (folded by entry numbers)
    was applied by the file's 'event' branch: 2 in 5 events scored by a model that trained
    on them. Without ``by`` it is refused, until the event branch is given."""
    path, event = ntuple
    model = KFoldModel([FoldStandIn(i) for i in range(K)])
    with pytest.raises(InputError, match="does not record the event-number expression"):
        apply(model, path, tmp_path / "friend.root")
    with pytest.raises(ValueError, match="saving it needs it"):
        model.save(tmp_path / "model.json")
    assert not (tmp_path / "friend.root").exists() and not (tmp_path / "model.json").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to disagree with
        apply(model, path, tmp_path / "friend.root", event_branch="event")
    with uproot.open(tmp_path / "friend.root") as file:
        got = file["Events"].arrays(library="np")
    np.testing.assert_array_equal(got["bdt_score"], _out_of_fold(event, 0))


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> tuple[Path, list]:
    """A saved k-fold manifest of real fold models whose folds are by ``event + 1``."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 1)).astype(np.float32)
    y = (X[:, 0] + rng.normal(0, 1, 600) > 0).astype(int)
    data = Dataset(X, y, feature_names=["x1"])
    folds = [hepbdt.BDTClassifier(n_trees=4, max_depth=2).fit(data.X[i::K], data.y[i::K])
             for i in range(K)]
    path = tmp_path_factory.mktemp("manifest") / "model.json"
    KFoldModel(folds, by="event + 1").save(path)
    return path, folds


def _expected_scores(folds: list, path: Path, shift: int) -> np.ndarray:
    with uproot.open(path) as file:
        columns = file["Events"].arrays(["x1", "event"], library="np")
    per_model = np.column_stack([m.decision_function(columns["x1"][:, None]) for m in folds])
    fold = _out_of_fold(columns["event"], shift).astype(int)
    assert np.mean(per_model[:, 0] != per_model[:, 1]) > 0.5  # a wrong fold would show
    return per_model[np.arange(len(fold)), fold]


def test_apply_of_a_manifest_python_and_cli_agree_on_its_by(ntuple, manifest, tmp_path, capsys):
    path, event = ntuple
    model_path, folds = manifest
    expected = _expected_scores(folds, path, shift=1)
    apply(str(model_path), path, tmp_path / "py.root")
    assert main(["apply", str(model_path), str(path), "-o", str(tmp_path / "cli.root"),
                 "--no-progress"]) == 0
    assert "note" not in capsys.readouterr().err
    for name in ("py.root", "cli.root"):
        with uproot.open(tmp_path / name) as file:
            got = file["Events"].arrays(library="np")
        np.testing.assert_array_equal(got["bdt_score"], expected)
        np.testing.assert_array_equal(got["event_plus_1"], event + 1)  # the identifier it used


def test_an_event_expression_other_than_by_is_used_with_a_warning_or_note(
        ntuple, manifest, tmp_path, capsys):
    path, _ = ntuple
    model_path, folds = manifest
    expected = _expected_scores(folds, path, shift=0)  # scored as asked: by event % k
    with pytest.warns(FoldExpressionWarning, match=r"made with 'event \+ 1'; scoring by 'event'"):
        apply(str(model_path), path, tmp_path / "py.root", event_branch="event")
    assert main(["apply", str(model_path), str(path), "-o", str(tmp_path / "cli.root"),
                 "--event", "event", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("hepbdt: note: the folds of the k-fold model were made with "
                     "'event + 1'; scoring by 'event'") == 1
    assert "Warning" not in err
    for name in ("py.root", "cli.root"):
        with uproot.open(tmp_path / name) as file:
            np.testing.assert_array_equal(file["Events"]["bdt_score"].array(library="np"),
                                          expected)


def test_a_list_of_fold_models_needs_the_event_expression(ntuple, manifest, tmp_path):
    path, event = ntuple
    models = [FoldStandIn(i) for i in range(K)]
    with pytest.raises(InputError, match="give event_branch"):
        apply(models, path, tmp_path / "friend.root")
    assert not (tmp_path / "friend.root").exists()
    apply(models, path, tmp_path / "friend.root", event_branch="event + 1")
    with uproot.open(tmp_path / "friend.root") as file:
        np.testing.assert_array_equal(file["Events"]["bdt_score"].array(library="np"),
                                      _out_of_fold(event, 1))
    # A manifest among other models would change k, so every fold: refused.
    with pytest.raises(InputError, match="pass the k-fold manifest"):
        apply([str(manifest[0]), FoldStandIn(0)], path, tmp_path / "other.root",
              event_branch="event")


# -- 2. the training records the samples' event expression, or refuses ---------------------


def _config(folder: Path, sig_event: str, bkg_event: str) -> Path:
    rng = np.random.default_rng(2)
    events = rng.permutation(4000)
    _write_events(folder / "sig.root", events[:300], seed=3,
                  x2=rng.normal(1.0, 1.0, 300).astype(np.float32))
    _write_events(folder / "bkg.root", events[300:600], seed=4)
    path = folder / "kfold.toml"
    path.write_text(f"""title = "kfold per-sample event"
tree = "Events"
weight = "w"
features = ["x1", "x2"]
[samples.sig]
files = "sig.root"
label = "signal"
event = "{sig_event}"
[samples.bkg]
files = "bkg.root"
label = "background"
event = "{bkg_event}"
[split]
kfold = {K}
[method]
n_trees = 4
max_depth = 2
[output]
report = false
figures = false
tmva_xml = false
""")
    return path


def test_kfold_training_records_the_samples_event_expression(tmp_path, capsys):
    config = load_config(_config(tmp_path, "event + 1", "event + 1"), output=tmp_path / "out")
    train(config)
    model = hepbdt.load_model(tmp_path / "out" / "model.json")
    assert model.by == "event + 1"
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        test = file["TestTree"].arrays(["event", "fold", "bdt_score"], library="np")
    # The TestTree's event is the samples' expression: event + 1.
    np.testing.assert_array_equal(test["fold"], _out_of_fold(test["event"], 0))
    # hepbdt apply on the training's own files gives each event its out-of-fold score.
    assert main(["apply", str(tmp_path / "out" / "model.json"), str(tmp_path / "sig.root"),
                 str(tmp_path / "bkg.root"), "-o", str(tmp_path / "friend.root"),
                 "--no-progress"]) == 0
    with uproot.open(tmp_path / "friend.root") as file:
        applied = file["Events"].arrays(library="np")
    score_of = dict(zip(applied["event_plus_1"].tolist(), applied["bdt_score"].tolist(), strict=True))
    np.testing.assert_array_equal([score_of[e] for e in test["event"].tolist()],
                                  test["bdt_score"])


def test_kfold_samples_with_different_event_expressions_are_refused_before_any_work(tmp_path):
    config = load_config(_config(tmp_path, "event + 1", "event"), output=tmp_path / "out")
    with pytest.raises(ConfigError, match=r"\[split\] kfold: the samples' event expressions "
                       r"differ \('event' in bkg; 'event \+ 1' in sig\).*one event expression"):
        train(config)
    assert not (tmp_path / "out").exists()


# -- 3. event numbers that are not integers in int64's range are refused --------------------


def test_float_event_numbers_beyond_their_exact_integers_are_refused():
    """From 2**53 on (float32: 2**24) a float event number may be another integer rounded:
    2**62 + 12345, + 12346, + 12347 are in folds 1, 2, 0 but read as float64 all in fold 1,
    and 2**53 + 1 (fold 0) and float32 2**24 + 1 (fold 2) are 2**53 and 2**24 (folds 2, 1)."""
    assert [float(2**53 + 1), float(np.float32(2**24 + 1))] == [2.0**53, 2.0**24]
    assert [(2**53 + 1) % K, (2**24 + 1) % K, 2**53 % K, 2**24 % K] == [0, 2, 2, 1]
    exact = np.array([2**62 + 12345, 2**62 + 12346, 2**62 + 12347], dtype=np.int64)
    assert [int(e) % K for e in exact.tolist()] == [1, 2, 0]
    assert fold_of(exact, K).tolist() == [1, 2, 0]
    for rounded in (exact.astype(np.float64), np.array([5.0, 2.0**53 + 2]),
                    np.array([1.0, 2.0**24 + 2], dtype=np.float32), [3, 2.0**60],
                    np.array([2.0**53]), np.array([-(2.0**53)]),
                    np.array([2.0**24], dtype=np.float32)):
        with pytest.raises(ValueError, match=r"float of 2\*\*53 or beyond \(float32: 2\*\*24\)"):
            fold_of(rounded, K)
        with pytest.raises(InputError, match="read event numbers as integers"):
            Dataset(np.zeros((len(rounded), 1)), event=rounded)


@pytest.mark.parametrize("event", [
    np.array([1.0, 1.5, 2.0]),                         # fractional: would be truncated to 1
    np.array([3.0, -0.5, 4.0]),                        # negative fractional: would be 0
    np.array([5, 2**63 + 1, 6], dtype=np.uint64),      # beyond int64: would wrap around
    np.array([7.0, np.nan, 8.0]),
])
def test_kfold_model_refuses_events_that_are_not_int64_integers(event):
    model = KFoldModel([FoldStandIn(i) for i in range(K)])
    X = np.zeros((3, 1), np.float32)
    with pytest.raises(ValueError, match=r"event numbers must be integers in int64's range.*"
                       r"1 of 3 are not.*the first, event\[1\]"):
        model.decision_function(X, event)
    with pytest.raises(ValueError, match="event numbers must be integers"):
        fold_of(event, K)


def test_kfold_model_takes_every_integer_event_number():
    event = [np.array([-7, 2**63 - 1, -(2**63), 9007199254740993], dtype=np.int64),
             np.array([2**62 + 5, 3, 2**63 - 1], dtype=np.uint64),
             np.array([-3.0, 2.0**53 - 1, -(2.0**53 - 1), 0.0]),
             np.array([7.0, 2.0**24 - 1], dtype=np.float32),
             np.array([4, 5], dtype=np.int32)]
    model = KFoldModel([FoldStandIn(i) for i in range(K)])
    for values in event:
        expected = [int(e) % K for e in values.tolist()]
        np.testing.assert_array_equal(fold_of(values, K), expected)
        np.testing.assert_array_equal(
            model.decision_function(np.zeros((len(values), 1), np.float32), values), expected)


# -- 4. Dataset.kfold(by=array) takes fold numbers in 0..k-1 only ---------------------------


@pytest.mark.parametrize("by, first", [
    ([0, 1, 0, 3, 1, 0], "by[3], is 3"),     # not below k
    ([0, 1, -1, 1, 0, 1], "by[2], is -1"),   # negative
    ([0, 1, 0, 1.7, 0, 1], "by[3], is 1.7"),  # fractional
    ([0, 1, 0, 1, np.nan, 1], "by[4], is nan"),
])
def test_dataset_kfold_refuses_fold_numbers_outside_0_to_k_minus_1(by, first):
    data = Dataset(np.zeros((6, 1)), [1, 0, 1, 0, 1, 0])
    with pytest.raises(InputError, match=r"fold numbers must be integers in 0\.\.1 \(k = 2\): "
                       rf"1 of 6 are not; the first, {re.escape(first)}"):
        data.kfold(2, by=np.array(by))


def test_dataset_kfold_by_array_of_valid_folds():
    data = Dataset(np.zeros((6, 1)), [1, 0, 1, 0, 1, 0])
    by = np.array([2.0, 0.0, 1.0, 2.0, 0.0, 1.0])  # floats that are integers are fine
    pairs = data.kfold(3, by=by)
    assert [te.event.tolist() for _, te in pairs] == [[1, 4], [2, 5], [0, 3]]
    assert [tr.event.tolist() for tr, _ in pairs] == [[0, 2, 3, 5], [0, 1, 3, 4], [1, 2, 4, 5]]
    with pytest.raises(InputError, match="k must be an integer >= 2"):
        data.kfold(2.5, by=np.zeros(6))


# -- 5. apply's error for an infinite feature names apply's remedy --------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_apply_of_an_infinite_feature_names_inf_as_missing_for_apply(tmp_path, capsys, kind):
    x1 = np.array([0.5, np.inf, -1.0, -np.inf], np.float32)
    write_ntuple(tmp_path / "inf.root", "Events", {"x1": x1, "event": np.arange(4, dtype=np.int64)},
                 kind)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 1)).astype(np.float32)
    X[::10] = np.nan
    data = Dataset(X, (rng.normal(size=300) > 0).astype(int), feature_names=["x1"])
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(data.X, data.y)
    model.save(tmp_path / "model.json")

    with pytest.raises(BadValueError) as refused:
        apply(str(tmp_path / "model.json"), tmp_path / "inf.root", tmp_path / "py.root")
    message = str(refused.value)
    assert "feature 'x1' is infinite" in message and "2 event(s), the first at entry 1" in message
    assert "--inf-as-missing" in message and "inf_as_missing=True" in message
    assert "top of the configuration" not in message
    assert main(["apply", str(tmp_path / "model.json"), str(tmp_path / "inf.root"),
                 "-o", str(tmp_path / "cli.root"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "--inf-as-missing" in err and "top of the configuration" not in err

    assert main(["apply", str(tmp_path / "model.json"), str(tmp_path / "inf.root"),
                 "-o", str(tmp_path / "cli.root"), "--no-progress", "--inf-as-missing"]) == 0
    expected = model.decision_function(np.where(np.isinf(x1), np.nan, x1)[:, None])
    with uproot.open(tmp_path / "cli.root") as file:
        np.testing.assert_array_equal(file["Events"]["bdt_score"].array(library="np"), expected)


def test_a_kfold_model_gives_each_events_probabilities_and_class_from_its_fold_model():
    """``predict_proba``, ``predict`` and ``classes_`` of a multi-class KFoldModel (it had
    ``decision_function`` only): each event's row is its own fold model's, found by hand."""
    from hepbdt.kfold import KFoldModel, fold_of

    rng = np.random.default_rng(3)
    n = 900
    y = np.array(["QCD", "W+jets", "ttbar"])[rng.integers(0, 3, n)]
    X = rng.normal(size=(n, 3)) + (y == "ttbar")[:, None] * 0.8 - (y == "QCD")[:, None] * 0.5
    event = rng.permutation(10 * n)[:n]
    folds = fold_of(event, 3)
    models = [hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(
        X[folds != i], y[folds != i]) for i in range(3)]
    kfold = KFoldModel(models, by="event")
    np.testing.assert_array_equal(kfold.classes_, ["QCD", "W+jets", "ttbar"])
    expected = np.array([models[f].predict_proba(X[j:j + 1])[0] for j, f in enumerate(folds)])
    np.testing.assert_array_equal(kfold.predict_proba(X, event), expected)
    np.testing.assert_array_equal(kfold.predict(X, event),
                                  kfold.classes_[np.argmax(expected, axis=1)])
    regressors = KFoldModel([hepbdt.BDTRegressor(n_trees=3).fit(X[folds != i], X[folds != i, 0])
                             for i in range(3)])
    np.testing.assert_array_equal(
        regressors.predict(X, event),
        [regressors.models[f].predict(X[j:j + 1])[0] for j, f in enumerate(folds)])
    with pytest.raises(AttributeError, match="regressors"):
        regressors.predict_proba(X, event)


def test_fold_of_and_the_event_number_rule_against_python_integers() -> None:
    """fold_of is Python's ``int(e) % k`` for every integer type and for exact floats below
    the end of their unbroken run of integers (2**53, float32 2**24); fractions, NaN, +-inf,
    floats from the run's end on, uint64 beyond 2**63 - 1 and objects that are no int64 are
    refused, and so is a k that is not an integer >= 2."""
    from hepbdt.kfold import event_numbers, invalid_event_numbers

    ints = [-(2**63), -7, -1, 0, 1, 5, 2**53 + 1, 2**63 - 1]
    for k in (2, 3, 7):
        assert fold_of(np.array(ints, dtype=np.int64), k).tolist() == [e % k for e in ints]
    assert fold_of(np.array([0, 2**63 - 1], dtype=np.uint64), K).tolist() == [0, (2**63 - 1) % K]
    for dtype, run in ((np.float64, 2**53), (np.float32, 2**24)):
        good = np.array([1 - run, -3.0, 0.0, 4.0, run - 1], dtype=dtype)
        assert fold_of(good, K).tolist() == [int(e) % K for e in good.tolist()]
        # run itself is refused: it may be run + 1 rounded, in another fold
        bad = np.array([0.5, np.nan, np.inf, -np.inf, run + 2, -run - 2, run, -run], dtype=dtype)
        assert invalid_event_numbers(bad).tolist() == [True] * 8
        with pytest.raises(ValueError, match="8 of 8 are not"):
            event_numbers(bad)
    assert invalid_event_numbers(np.array([2**63 - 1, 2**63], dtype=np.uint64)).tolist() == [
        False, True]
    mixed = np.array([3, -(2**63), 2**63 - 1, 2**63, -(2**63) - 1, 2.0, 2.5, "7", None],
                     dtype=object)
    assert invalid_event_numbers(mixed).tolist() == [False, False, False, True, True, False,
                                                    True, True, True]
    for k in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="integer >= 2"):
            fold_of(np.arange(3), k)
    assert fold_of(np.arange(6), 2.0).tolist() == [0, 1, 0, 1, 0, 1]
