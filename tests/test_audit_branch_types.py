"""Branch types that change between productions: a model trained where ``flag`` was a
``Bool_t`` and ``c`` a fixed ``c[3]`` scored files where they were an ``Int_t`` and a
``std::vector<float>`` of the same numbers without a word (``~flag`` is ``!flag`` of a
boolean and ``-1 - flag`` of an integer; ``num(c)`` of a fixed array is 3): 591 of 2,000
scores changed, by up to 1.06. The model now records the types its features read and
``apply`` refuses a change that can alter a value; a read refuses trees whose types differ
so (the two classes would get other values for the same flag).

The reference is the same model's scores on the file of the training's types (same
numbers), and, for what ``~`` gives, numpy's ``~`` and ``!`` on the stored numbers.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.analysis import ConfigError, check_inputs, load_config
from hepbdt.io import BranchTypeError
from hepbdt.io.expressions import Expression
from hepbdt.scoring import MissingValueWarning, apply
from tests.ntuples import write_ttree

N = 400
FEATURES = ["~flag", "x", "num(c)", "c[:, 0]"]


def _write(path: Path, seed: int, *, flag: str = "bool", x: str = "float32",
           c: str = "fixed") -> None:
    """A tree 'Events' of N entries whose numbers depend on ``seed`` alone, in the types
    asked: the same numbers whatever the types."""
    rng = np.random.default_rng(seed)
    label = rng.random(N) < 0.5
    flags = rng.random(N) < np.where(label, 0.8, 0.2)
    lengths = rng.integers(0, 4, N)
    padded = np.where(np.arange(3) < lengths[:, None],
                      rng.normal(label[:, None] * 0.7, 1, (N, 3)), 0).astype(np.float32)
    branches = {"flag": flags.astype(flag), "x": rng.normal(label * 0.5, 1, N).astype(x),
                "label": label.astype(np.int32), "event": np.arange(N, dtype=np.int64)}
    if c == "fixed":
        branches["c"] = padded
    else:
        branches["c"] = ak.Array([row[:n].tolist() for row, n in zip(padded, lengths,
                                                                       strict=True)])
        branches["c"] = ak.values_astype(branches["c"], np.float32)
    write_ttree(path, "Events", branches)  # a TTree: Bool_t, Int_t, c[3] or a jagged c[]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("productions")
    _write(folder / "train.root", 1)
    samples = [hepbdt.Sample("s", f"{folder / 'train.root'}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{folder / 'train.root'}:Events", cut="label == 0", label=0)]
    data = hepbdt.read(samples, FEATURES, event="event", progress=False)
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, random_state=0).fit(
        data.X, data.y, data.w)
    model.save(folder / "model.json")
    return folder, model, data


def _scores(path: Path) -> np.ndarray:
    with uproot.open(path) as file:
        return file["Events"]["bdt_score"].array(library="np")


def test_the_model_records_the_types_its_features_read(trained):
    folder, model, data = trained
    expected = {"c": "float32[3]", "flag": "bool", "x": "float32"}
    assert data.branch_types == expected
    assert model.branch_types_ == expected
    assert json.loads((folder / "model.json").read_text())["branch_types"] == expected
    assert hepbdt.load_model(folder / "model.json").branch_types_ == expected


@pytest.mark.parametrize("change, words", [
    ({"flag": "int32"}, "branch 'flag' is int32 (one value an event) here but was bool"),
    ({"flag": "uint64"}, "branch 'flag' is uint64 (one value an event) here but was bool"),
    ({"c": "jagged"}, "branch 'c' is float32[] (a variable-size array) here but was "
                      "float32[3] (a fixed-size array of 3)"),
])
def test_apply_refuses_a_type_that_changes_a_features_values(trained, tmp_path, change, words):
    folder, _, _ = trained
    _write(tmp_path / "same.root", 2)
    apply(folder / "model.json", tmp_path / "same.root", tmp_path / "same_scores.root",
          event_branch="event")
    kwargs = {"c": "jagged"} if "c" in change else {"flag": change["flag"]}
    _write(tmp_path / "other.root", 2, **kwargs)
    with pytest.raises(BranchTypeError, match=words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        apply(folder / "model.json", tmp_path / "other.root", tmp_path / "other_scores.root",
              event_branch="event")
    assert not (tmp_path / "other_scores.root").exists()
    # a model saved before the record applies as it did
    old = json.loads((folder / "model.json").read_text())
    del old["branch_types"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingValueWarning)  # c[:, 0] of an empty list
        apply(tmp_path / "old.json", tmp_path / "other.root", tmp_path / "old_scores.root",
              event_branch="event")
    # ... and gives the same numbers other scores: ~ of an integer is -1 - flag, not !flag,
    # num(c) of a list its length, not 3 (what the check now refuses)
    changed = _scores(tmp_path / "old_scores.root") != _scores(tmp_path / "same_scores.root")
    assert changed.sum() > N // 10


def test_apply_takes_a_change_of_width_and_of_kind_outside_a_complement(trained, tmp_path):
    folder, model, _ = trained
    _write(tmp_path / "same.root", 3)
    apply(folder / "model.json", tmp_path / "same.root", tmp_path / "same_scores.root",
          event_branch="event")
    reference = _scores(tmp_path / "same_scores.root")
    _write(tmp_path / "wide.root", 3, x="float64")  # Float_t -> Double_t of float32 numbers
    apply(folder / "model.json", tmp_path / "wide.root", tmp_path / "wide_scores.root",
          event_branch="event")
    np.testing.assert_array_equal(_scores(tmp_path / "wide_scores.root"), reference)
    # !flag of a bool and of an int32 are one number: a model reading flag only so takes both
    samples = [hepbdt.Sample("s", f"{folder / 'train.root'}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{folder / 'train.root'}:Events", cut="label == 0", label=0)]
    data = hepbdt.read(samples, ["!flag", "x"], event="event", progress=False)
    plain = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(data.X, data.y)
    apply(plain, tmp_path / "same.root", tmp_path / "plain_same.root", event_branch="event")
    _write(tmp_path / "int.root", 3, flag="int32")
    apply(plain, tmp_path / "int.root", tmp_path / "plain_int.root", event_branch="event")
    np.testing.assert_array_equal(_scores(tmp_path / "plain_int.root"),
                                  _scores(tmp_path / "plain_same.root"))


def test_a_read_refuses_trees_whose_types_give_one_expression_other_values(tmp_path):
    _write(tmp_path / "sig.root", 4)
    _write(tmp_path / "bkg.root", 5, flag="int32")
    samples = [hepbdt.Sample("s", f"{tmp_path / 'sig.root'}:Events", label=1),
               hepbdt.Sample("b", f"{tmp_path / 'bkg.root'}:Events", label=0)]
    with pytest.raises(BranchTypeError, match="branch 'flag' is int32 .* but was bool"):
        hepbdt.read(samples, ["~flag", "x"], progress=False)
    data = hepbdt.read(samples, ["!flag", "x"], progress=False)  # the same numbers either way
    assert data.branch_types == {"flag": "bool", "x": "float32"}
    config = tmp_path / "a.toml"
    config.write_text('features = ["~flag", "x"]\ntree = "Events"\n[samples.s]\nfiles = '
                      '"sig.root"\nlabel = "signal"\n[samples.b]\nfiles = "bkg.root"\n'
                      'label = "background"\n')
    with pytest.raises(ConfigError, match="branch 'flag' is int32"):
        check_inputs(load_config(config))


def test_complemented_names_are_those_whose_type_decides_what_tilde_gives():
    cases = {"~flag": {"flag"}, "!flag": set(), "~(a & b) + c": {"a", "b"},
             "~(x > 0)": set(), "x[~sel]": {"sel"}, "~Jet_id[Jet_pt > 30]": {"Jet_id"},
             "~where(flag, 1, 0)": set(), "~where(x > 0, flag, n)": {"flag", "n"},
             "~(!flag)": set(), "~(not flag) + n": set()}
    for text, names in cases.items():
        assert set(Expression(text).complemented) == names, text


def _write_flags(path: Path, kind: str) -> np.ndarray:
    """A tree 'Events' of N events whose list branch ``flags`` holds the same 0/1 numbers in
    ``kind``; returns each event's count of ones."""
    rng = np.random.default_rng(7)
    rows = [list(rng.random(rng.integers(0, 5)) < 0.5) for _ in range(N)]
    label = np.arange(N) % 2
    branches = {"flags": ak.values_astype(ak.Array(rows), kind),
                "x": rng.normal(label * 0.5, 1, N).astype(np.float32),
                "label": label.astype(np.int32), "event": np.arange(N, dtype=np.int64)}
    write_ttree(path, "Events", branches)  # a TTree, as _write's
    return np.array([sum(r) for r in rows])


def test_complement_of_a_sum_of_flags_is_the_same_whatever_their_kind(tmp_path):
    """~sum(flags) of UChar_t flags was 2**64 - 1 - n (Awkward sums unsigned integers in
    uint64), -1 - n for Bool_t or Int_t ones; and apply refused a model of ~sum(flags) on a
    file whose flags changed kind, whose values it gives alike."""
    features = ["~sum(flags)", "x"]
    for kind in ("bool", "uint8", "int32", "int16"):
        ones = _write_flags(tmp_path / f"{kind}.root", kind)
        data = hepbdt.read([hepbdt.Sample("all", f"{tmp_path / f'{kind}.root'}:Events", label=1)],
                           features, progress=False)
        assert np.array_equal(data.X[:, 0], (-1 - ones).astype(np.float32)), kind
    source = f"{tmp_path / 'bool.root'}:Events"
    samples = [hepbdt.Sample("s", source, cut="label == 1", label=1),
               hepbdt.Sample("b", source, cut="label == 0", label=0)]
    data = hepbdt.read(samples, features, event="event", progress=False)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=3).fit(data.X, data.y, data.w)
    model.save(tmp_path / "model.json")
    for kind in ("bool", "uint8"):
        apply(tmp_path / "model.json", tmp_path / f"{kind}.root", tmp_path / f"{kind}_s.root",
              event_branch="event")
    assert np.array_equal(_scores(tmp_path / "uint8_s.root"), _scores(tmp_path / "bool_s.root"))


def test_a_complement_of_where_does_not_follow_its_conditions_type(trained, tmp_path):
    """~where(flag, 1, 0) is -2 or -1 whether flag is a Bool_t or an Int_t of 0 and 1:
    apply scores both files alike (it refused the Int_t one as it refuses ~flag)."""
    folder, _, _ = trained
    samples = [hepbdt.Sample("s", f"{folder / 'train.root'}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{folder / 'train.root'}:Events", cut="label == 0", label=0)]
    data = hepbdt.read(samples, ["~where(flag, 1, 0)", "x"], event="event", progress=False)
    np.testing.assert_array_equal(np.unique(data.X[:, 0]), [-2.0, -1.0])
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(data.X, data.y)
    _write(tmp_path / "same.root", 3)
    _write(tmp_path / "int.root", 3, flag="int32")
    apply(model, tmp_path / "same.root", tmp_path / "same_scores.root", event_branch="event")
    apply(model, tmp_path / "int.root", tmp_path / "int_scores.root", event_branch="event")
    np.testing.assert_array_equal(_scores(tmp_path / "int_scores.root"),
                                  _scores(tmp_path / "same_scores.root"))


def _read(path: Path, features=FEATURES, **kwargs):
    samples = [hepbdt.Sample("s", f"{path}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{path}:Events", cut="label == 0", label=0)]
    return hepbdt.read(samples, features, event="event", progress=False, **kwargs)


def test_python_scoring_refuses_a_read_whose_types_change_a_features_values(trained, tmp_path):
    # Where apply refused, model.decision_function(hepbdt.read(...).X) of the same file
    # scored it without a word: 'flag' an Int_t where training read a Bool_t makes ~flag
    # -1 - flag, not !flag (the reference: numpy's ~ of the stored numbers, and the scores
    # of the same numbers in the training's types).
    folder, model, _ = trained
    _write(tmp_path / "same.root", 6)
    _write(tmp_path / "int.root", 6, flag="int32")
    same, other = _read(tmp_path / "same.root"), _read(tmp_path / "int.root")
    flags = other.X[:, 0] != same.X[:, 0]
    assert flags.all() and set(np.unique(other.X[:, 0])) == {-2.0, -1.0}  # ~1, ~0 of int32
    reference = model.decision_function(same.X)
    words = r"X: branch 'flag' is int32 \(one value an event\) here but was bool"
    loaded = hepbdt.load_model(folder / "model.json")
    folds = hepbdt.KFoldModel([model, loaded], by="event")
    for score in (model.decision_function, model.predict_proba, model.predict,
                  loaded.decision_function, lambda X: folds.decision_function(X, other.event),
                  lambda X: hepbdt.interop.tmva_response(model, X)):
        with pytest.raises(BranchTypeError, match=words):
            score(other.X)
    # the read's rows keep the record; a plain array of the numbers is the user's to vouch for
    with pytest.raises(BranchTypeError, match=words):
        model.decision_function(other.X[:10])
    assert np.any(model.decision_function(np.asarray(other.X)) != reference)
    # a change of width, and a kind changed outside ~, score as the training's types
    _write(tmp_path / "wide.root", 6, x="float64")
    np.testing.assert_array_equal(model.decision_function(_read(tmp_path / "wide.root").X),
                                  reference)
    plain_train = _read(folder / "train.root", ["!flag", "x"])
    plain = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(plain_train.X, plain_train.y)
    np.testing.assert_array_equal(
        plain.decision_function(_read(tmp_path / "int.root", ["!flag", "x"]).X),
        plain.decision_function(_read(tmp_path / "same.root", ["!flag", "x"]).X))


def test_an_eval_set_read_with_other_types_is_refused(trained, tmp_path):
    # The eval set's loss (and early stopping) would be taken on other values of ~flag.
    folder, _, data = trained
    _write(tmp_path / "int.root", 7, flag="int32")
    _write(tmp_path / "same.root", 7)
    other, same = _read(tmp_path / "int.root"), _read(tmp_path / "same.root")
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2)
    with pytest.raises(BranchTypeError, match="eval_set.0. X: branch 'flag' is int32"):
        model.fit(data.X, data.y, data.w, eval_set=(other.X, other.y, other.w))
    model.fit(data.X, data.y, data.w, eval_set=(same.X, same.y, same.w))
    assert len(model.evals_result_) == 1


def test_a_binned_read_whose_types_change_a_features_values_is_refused(trained, tmp_path):
    folder, _, _ = trained
    train = _read(folder / "train.root", binned=True)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(train.X, train.y, train.w)
    _write(tmp_path / "int.root", 8, flag="int32")
    _write(tmp_path / "same.root", 8)
    edges = [np.asarray(e) for e in train.X.edges]
    model.decision_function(_read(tmp_path / "same.root", binned=True, bin_edges=edges).X)
    with pytest.raises(BranchTypeError, match="X: branch 'flag' is int32"):
        model.decision_function(_read(tmp_path / "int.root", binned=True, bin_edges=edges).X)

