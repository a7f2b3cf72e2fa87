"""write_scores and apply: trees read back with uproot (and RDataFrame when ROOT exists)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.io import Dataset, InputError, Sample, read, read_scores, write_scores
from hepbdt.scoring import apply

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CLASS_FILE = DATA / "tmva_class_example.root"
needs_data = pytest.mark.skipif(not CLASS_FILE.exists(), reason="../shared/data is absent")
HAS_ROOT = importlib.util.find_spec("ROOT") is not None


class LinearModel:
    """A stand-in for a fitted estimator: a linear score of the features."""

    def __init__(self, features: list[str], coef: list[float], offset: float = 0.0) -> None:
        self.feature_names_in_ = np.array(features, dtype=object)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.offset = offset
        self.calls = 0

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        assert X.dtype == np.float32 and X.flags["C_CONTIGUOUS"]
        self.calls += 1
        return np.nan_to_num(X.astype(np.float64), nan=-1.0) @ self.coef + self.offset


def _dataset(n: int = 50) -> Dataset:
    rng = np.random.default_rng(3)
    return Dataset(
        rng.normal(size=(n, 2)).astype(np.float32),
        y=rng.integers(0, 2, n),
        w=rng.uniform(0.5, 1.5, n),
        event=np.arange(n) * 3 + 1,
        feature_names=["log(lep_pt)", "Jet_pt[:, 0]"],
        sample_names=["s"],
    )


def test_write_scores_reads_back(tmp_path: Path) -> None:
    ds = _dataset()
    scores = ds.X[:, 0] * 2.0 + 0.25
    out = tmp_path / "out" / "scores.root"
    assert write_scores(out, ds, scores, tree="TestTree") == str(out)
    with uproot.open(out) as file:
        arrays = file["TestTree"].arrays(library="np")
    assert set(arrays) == {"log_lep_pt", "Jet_pt_0", "classID", "label", "weight", "event",
                           "sample", "bdt_score"}
    np.testing.assert_array_equal(arrays["log_lep_pt"], ds.X[:, 0])
    np.testing.assert_array_equal(arrays["Jet_pt_0"], ds.X[:, 1])
    np.testing.assert_array_equal(arrays["label"], ds.y)
    np.testing.assert_array_equal(arrays["classID"], 1 - ds.y)  # TMVA: 0 is signal
    np.testing.assert_array_equal(arrays["weight"], ds.w)
    np.testing.assert_array_equal(arrays["event"], ds.event)
    np.testing.assert_array_equal(arrays["bdt_score"], scores.astype(np.float64))
    assert not [p for p in os.listdir(out.parent) if ".tmp" in p]
    # the Dataset keeps labels and sample indices in int8; the branches stay int32
    assert ds.y.dtype == ds.sample_index.dtype == np.int8
    with uproot.open(out) as file:
        types = {k: file["TestTree"][k].typename for k in ("classID", "label", "sample")}
    assert types == dict.fromkeys(("classID", "label", "sample"), "int32_t")


@pytest.mark.parametrize("name, valid", [("bdt_", True), ("_bdt", True), ("BDT_2", True),
                                         ("2bdt", False), ("bdt score", False),
                                         ("bdt_\u00e9", False), ("", False)])
def test_score_branch_names_are_c_identifiers(tmp_path: Path, name: str, valid: bool) -> None:
    from hepbdt.io.writers import is_branch_name

    assert is_branch_name(name) == valid
    ds = _dataset()
    out = tmp_path / "scores.root"
    if not valid:
        with pytest.raises(InputError, match="is not a valid branch name"):
            write_scores(out, ds, {name: ds.X[:, 0]})
        assert not out.exists()
        return
    write_scores(out, ds, {name: ds.X[:, 0]})
    with uproot.open(out) as file:
        np.testing.assert_array_equal(file["TestTree"][name].array(library="np"), ds.X[:, 0])


def test_write_scores_update_and_multiple_outputs(tmp_path: Path) -> None:
    ds = _dataset()
    train, test = ds.split("alternate")
    out = tmp_path / "tmva_like.root"
    write_scores(out, test, np.zeros(len(test)), tree="TestTree")
    write_scores(out, train, np.column_stack([np.ones(len(train)), np.arange(len(train))]),
                 tree="TrainTree", update=True, score_branch="mva")
    write_scores(out, test, np.full(len(test), 7.0), tree="TestTree", update=True)
    with uproot.open(out) as file:
        assert sorted(file.keys(cycle=False, filter_classname="TTree")) == ["TestTree", "TrainTree"]
        assert sorted(file.keys(cycle=False)) == ["TestTree", "TestTree_features",
                                                 "TestTree_samples", "TrainTree",
                                                 "TrainTree_features", "TrainTree_samples"]
        names = ";".join(f"{i}={n}" for i, n in enumerate(test.sample_names))
        assert str(file["TestTree_samples"]) == names  # the names behind the sample index
        assert f"sample: {names}" in file["TestTree"].title
        np.testing.assert_array_equal(file["TrainTree"]["mva_1"].array(library="np"),
                                      np.arange(len(train)))
        np.testing.assert_array_equal(file["TestTree"]["bdt_score"].array(library="np"), 7.0)
        assert file["TestTree"].num_entries == len(test)
    with pytest.raises(InputError, match=r"shape \(3,\)"):
        write_scores(out, ds, np.zeros(3))


@needs_data
def test_apply_writes_friend_trees_of_every_input_tree(tmp_path: Path) -> None:
    model = LinearModel(["var1", "var2 * var3", "abs(var4)"], [1.0, -0.5, 2.0], 0.1)
    out = tmp_path / "friends.root"
    written = apply(model, CLASS_FILE, out, tree=["TreeS", "TreeB"], step_size=1000)
    assert written == [str(out)] and model.calls == 12
    with uproot.open(CLASS_FILE) as source, uproot.open(out) as friend:
        for name in ("TreeS", "TreeB"):
            v = source[name].arrays(["var1", "var2", "var3", "var4"], library="np")
            X = np.column_stack([v["var1"], v["var2"] * v["var3"], np.abs(v["var4"])])
            expected = X.astype(np.float32).astype(np.float64) @ model.coef + 0.1
            got = friend[name].arrays(library="np")
            assert friend[name].num_entries == source[name].num_entries
            np.testing.assert_array_equal(got["bdt_score"], expected)
            np.testing.assert_array_equal(got["entry"], np.arange(6000))


def _jagged_file(path: Path, n: int, seed: int) -> ak.Array:
    rng = np.random.default_rng(seed)
    n_jet = rng.poisson(1.0, n)
    jets = ak.unflatten(rng.uniform(20, 200, n_jet.sum()).astype(np.float32), n_jet)
    event = rng.permutation(10 * n)[:n].astype(np.int64)
    with uproot.recreate(path) as file:
        file.mktree("Events", {"Jet_pt": "var * float32", "event": np.int64})
        file["Events"].extend({"Jet_pt": jets, "event": event})
    return ak.Array({"Jet_pt": jets, "event": event})


def test_apply_kfold_models_by_event_number(tmp_path: Path) -> None:
    events = _jagged_file(tmp_path / "in.root", 500, seed=1)
    features = ["Jet_pt[:, 0]", "num(Jet_pt)"]
    models = [LinearModel(features, [1.0, 0.0]), LinearModel(features, [0.0, 1.0], 1000.0)]
    apply(models, tmp_path / "in.root", tmp_path / "out.root", branch="score",
          event_branch="event", step_size=128)
    with uproot.open(tmp_path / "out.root") as file:
        got = file["Events"].arrays(library="np")
    lead = ak.to_numpy(ak.fill_none(ak.firsts(events["Jet_pt"]), np.nan)).astype(np.float64)
    lead = np.where(np.isnan(lead), -1.0, lead)  # the stand-in model's missing value
    n_jet = ak.num(events["Jet_pt"]).to_numpy()
    event = events["event"].to_numpy()
    expected = np.where(event % 2 == 0, lead, n_jet + 1000.0)
    np.testing.assert_array_equal(got["event"], event)
    np.testing.assert_allclose(got["score"], expected, rtol=1e-6)


def test_apply_one_output_per_input_and_model_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(2):
        _jagged_file(tmp_path / f"part{i}.root", 40 + i, seed=i)
    model = LinearModel(["num(Jet_pt)"], [1.0])
    model_file = tmp_path / "model.json"
    model_file.write_text("{}")
    monkeypatch.setattr(hepbdt.scoring, "load_model_digest", lambda path, read: (model, read))
    written = apply(str(model_file), str(tmp_path / "part*.root"),
                    str(tmp_path / "{stem}_scores.root"))
    assert written == [str(tmp_path / "part0_scores.root"), str(tmp_path / "part1_scores.root")]
    with uproot.open(written[1]) as file:
        assert file["Events"].num_entries == 41
    with pytest.raises(InputError, match="is one of the input files"):
        apply(model, tmp_path / "part0.root", tmp_path / "part0.root")


def test_interrupted_apply_leaves_no_file(tmp_path: Path) -> None:
    _jagged_file(tmp_path / "in.root", 1000, seed=2)
    out = tmp_path / "out.root"
    with uproot.recreate(out) as previous:  # an earlier run's friend tree, replaceable
        tree = previous.mktree("Events", {"bdt_score": np.float64, "entry": np.int64},
                               title="hepbdt scores (bdt_score)")  # as apply titles its trees
        tree.extend({"bdt_score": np.zeros(3), "entry": np.arange(3)})
    before = out.read_bytes()

    class Failing(LinearModel):
        def decision_function(self, X: np.ndarray) -> np.ndarray:
            if self.calls == 2:
                raise KeyboardInterrupt
            return super().decision_function(X)

    with pytest.raises(KeyboardInterrupt):
        apply(Failing(["num(Jet_pt)"], [1.0]), tmp_path / "in.root", out, step_size=100)
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["in.root", "out.root"]


ROOT_CHECK = """
import json, sys
import ROOT
scores, friend, source = sys.argv[1:4]
frame = ROOT.RDataFrame("TestTree", scores)
out = {"count": int(frame.Count().GetValue()), "sum": float(frame.Sum("bdt_score").GetValue())}
tfile = ROOT.TFile.Open(source)
tree = tfile.Get("TreeS")
tree.AddFriend("scores", friend)
joined = ROOT.RDataFrame(tree)
out["entries"] = int(joined.Count().GetValue())
out["equal"] = int(joined.Filter("abs(scores.bdt_score - var1) < 1e-6").Count().GetValue())
print(json.dumps(out))
"""


def _root_python() -> str:
    """A Python with ROOT (the TMVA::Reader tests' ``TMVA_READER_PYTHON``, or this one);
    skip locally, fail in CI, when there is none."""
    if HAS_ROOT:
        return sys.executable
    python = os.environ.get("TMVA_READER_PYTHON")
    if python and Path(python).exists():
        return python
    if os.environ.get("CI") == "true":
        pytest.fail("CI must open the written trees with ROOT: TMVA_READER_PYTHON is not set")
    pytest.skip("ROOT is not importable: run `HEPBDT_TMVA_READER=1 bash scripts/test` (it "
                "installs root==0.1a12 into .rootenv) or set TMVA_READER_PYTHON to its Python")


@needs_data
def test_written_trees_open_in_rdataframe(tmp_path: Path) -> None:
    python = _root_python()
    ds = read([Sample("s", f"{CLASS_FILE}:TreeS", label=1)], ["var1", "var2"])
    scores = ds.X[:, 0].astype(np.float64)
    write_scores(tmp_path / "scores.root", ds, scores)
    model = LinearModel(["var1"], [1.0])
    apply(model, f"{CLASS_FILE}:TreeS", tmp_path / "friend.root", output_tree="scores")
    done = subprocess.run([python, "-c", ROOT_CHECK, str(tmp_path / "scores.root"),
                           str(tmp_path / "friend.root"), str(CLASS_FILE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["count"] == len(ds)
    assert np.isclose(seen["sum"], scores.sum(), rtol=1e-12)
    assert seen["entries"] == 6000 and seen["equal"] == 6000


def test_training_scores_say_their_weights_are_normalised(tmp_path: Path) -> None:
    from hepbdt.analysis import load_config, train

    demo = Path(__file__).resolve().parents[1] / "analyses" / "demo.toml"
    config = load_config(demo, ["method.n_trees=3", "output.report=false", "output.figures=false",
                                "output.tmva_xml=false"], output=tmp_path / "out")
    train(config)
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        assert "normalised per class (norm = equal_num_events)" in file["TrainTree"].title
        assert "physical event weights" in file["TestTree"].title
        assert str(file["TestTree_samples"]) == "0=signal;1=qcd;2=ttbar"
        sample = file["TestTree"]["sample"].array(library="np")
    assert set(np.unique(sample)) == {0, 1, 2}


def test_features_are_read_back_by_the_names_written_whatever_their_order(tmp_path: Path) -> None:
    """Branch names were rebuilt from the names asked for: with features ["log(x)", "log_x"]
    written as branches log_x and log_x_2, asking for ["log_x", "log(x)"] read each
    other's values, and ["log_x"] alone read log(x)'s."""
    X = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]], np.float32)
    data = Dataset(X, y=np.array([1, 0, 1]), feature_names=["log(x)", "log_x"])
    write_scores(tmp_path / "s.root", data, np.zeros(3), tree="TestTree")
    for asked in (["log_x", "log(x)"], ["log_x"], ["log(x)", "log_x"]):
        read, _ = read_scores(tmp_path / "s.root", "TestTree", asked)
        for j, name in enumerate(asked):
            np.testing.assert_array_equal(read.X[:, j], X[:, ["log(x)", "log_x"].index(name)])
    with pytest.raises(InputError, match="no branches"):
        read_scores(tmp_path / "s.root", "TestTree", ["log(y)"])


def test_a_branch_named_as_an_input_branch_holds_that_branch(tmp_path: Path) -> None:
    """Dropping operators named the feature "-nj" as the branch nj (and the feature nj
    itself nj_2), "!flag" as flag though no feature is flag, and "x*2" as x_2: read by name
    (TTree::Draw, RDataFrame, uproot) they gave -nj, !flag, x*2. Every branch named as
    a variable the expressions read now holds that variable, and read_scores finds each
    feature (by the record beside the tree, and, for files written before it, by the names
    written then)."""
    rng = np.random.default_rng(0)
    nj, x = rng.integers(0, 6, 40).astype(np.float32), rng.normal(size=40).astype(np.float32)
    flag = (rng.random(40) < 0.4).astype(np.float32)
    columns = {"-nj": -nj, "x": x, "nj": nj, "!flag": 1 - flag, "x*2": 2 * x, "x**2": x * x,
               "x_2": x + 7}
    data = Dataset(np.column_stack(list(columns.values())), y=np.arange(40) % 2,
                   feature_names=list(columns))
    write_scores(tmp_path / "s.root", data, np.zeros(40), tree="TestTree")
    with uproot.open(tmp_path / "s.root") as file:
        arrays = file["TestTree"].arrays(library="np")
    variables = {"nj": nj, "x": x, "flag": flag, "x_2": x + 7}
    for name, values in arrays.items():
        if name in variables:
            np.testing.assert_array_equal(values, variables[name], err_msg=name)
    assert "flag" not in arrays and {"nj", "x", "x_2"} <= set(arrays)
    for asked in (list(columns), ["x*2", "-nj", "x_2"]):
        read, _ = read_scores(tmp_path / "s.root", "TestTree", asked)
        for j, name in enumerate(asked):
            np.testing.assert_array_equal(read.X[:, j], columns[name], err_msg=name)

    legacy = tmp_path / "legacy.root"  # as written before the record: operators dropped
    branches = {"log_x": x, "Jet_pt_0": nj, "label": (np.arange(40) % 2).astype(np.int32),
                "weight": np.ones(40), "event": np.arange(40), "sample": np.zeros(40, np.int32),
                "bdt_score": np.zeros(40)}
    with uproot.recreate(legacy) as file:
        file.mktree("TestTree", {k: v.dtype for k, v in branches.items()}).extend(branches)
    read, _ = read_scores(legacy, "TestTree", ["log(x)", "Jet_pt[:, 0]"])
    np.testing.assert_array_equal(read.X, np.column_stack([x, nj]))


ROOT_PACKED = """
import json, sys
import ROOT
ROOT.gInterpreter.Declare(r'''
void hepbdt_packed(const char* path) {
  TFile f(path, "RECREATE"); TTree t("Events", "Events");
  struct { Float_t a; Int_t b; Double_t c; } ll;
  Int_t n; Double32_t s, a[3], v[4], u[3]; Float16_t h[3];
  t.Branch("n", &n, "n/I"); t.Branch("s", &s, "s/d[0,10,8]"); t.Branch("u", u, "u[3]/d");
  t.Branch("a", a, "a[3]/d[0,10,8]"); t.Branch("v", v, "v[n]/d[0,10,8]");
  t.Branch("h", h, "h[3]/f[0,10,8]"); t.Branch("ll", &ll, "a/F:b/I:c/D");
  for (int k = 0; k < 500; k++) {
    n = k % 4; s = 0.013 * k; ll.a = k; ll.b = k; ll.c = k;
    for (int j = 0; j < 3; j++) { a[j] = 0.01 * ((7 * k + j) % 1000); u[j] = 0.37 * k + j; h[j] = 0.01 * k; }
    for (int j = 0; j < n; j++) v[j] = 0.01 * ((3 * k + j) % 1000);
    t.Fill();
  }
  t.Write(); f.Close();
}''')
ROOT.hepbdt_packed(sys.argv[1])
tfile = ROOT.TFile.Open(sys.argv[1])  # kept: the tree lives in it
tree = tfile.Get("Events")
tree.SetEstimate(1000)
out = {}
for name in ("s", "u[1]"):
    count = tree.Draw(name, "", "goff")
    out[name] = [tree.GetV1()[i] for i in range(count)]
print(json.dumps(out))
"""


def test_root_written_packed_floats_are_read_as_root_reads_them_or_refused(tmp_path) -> None:
    """uproot reads a Double32_t or Float16_t array with a range (``a[3]/d[0,10,8]``) as
    float32, where ROOT stored packed integers: hepbdt read 2.8e-45 for 0.078125 in 998 of
    1,000 entries without a word. Such arrays, Float16_t ones and leaf lists of several
    leaves (a traceback at train) are refused by name; the scalar Double32_t and an array
    of no range (stored as float) are read as ROOT's TTree::Draw gives them."""
    from hepbdt.io import BranchTypeError

    path = tmp_path / "packed.root"
    done = subprocess.run([_root_python(), "-c", ROOT_PACKED, str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout.strip().splitlines()[-1])
    data = read([Sample("s", f"{path}:Events", label=1)], ["s", "u[:, 1]"], progress=False)
    np.testing.assert_array_equal(data.X[:, 0], np.float32(drawn["s"]))
    np.testing.assert_array_equal(data.X[:, 1], np.float32(drawn["u[1]"]))
    for feature, words in (("a[:, 0]", "a Double32_t array stored packed ('a[3]/d[0,10,8]'"),
                           ("v[:, 0]", "a Double32_t array stored packed ('v[n]/d[0,10,8]'"),
                           ("h[:, 0]", "a Float16_t array stored packed ('h[3]/f[0,10,8]'"),
                           ("ll", "a leaf list of 3 leaves ('a/F:b/I:c/D'")):
        with pytest.raises(BranchTypeError, match=re.escape(words)):
            read([Sample("s", f"{path}:Events", label=1)], [feature], progress=False)


ROOT_DOUBLE32_EVENTS = """
import json, sys
import ROOT
ROOT.gInterpreter.Declare(r'''
void hepbdt_d32_events(const char* path, Long64_t first) {
  TFile f(path, "RECREATE"); TTree t("Events", "Events");
  Double32_t event; Float_t x;
  t.Branch("event", &event, "event/d"); t.Branch("x", &x, "x/F");
  for (Long64_t k = 0; k < 100; k++) { event = first + k; x = k; t.Fill(); }
  t.Write(); f.Close();
}''')
ROOT.hepbdt_d32_events(sys.argv[1], int(sys.argv[2]))
tfile = ROOT.TFile.Open(sys.argv[1])
tree = tfile.Get("Events")
count = tree.Draw("event", "", "goff")
print(json.dumps([tree.GetV1()[i] for i in range(count)]))
"""


def test_double32_event_numbers_beyond_2_24_are_refused_as_float32_ones(tmp_path) -> None:
    """A Double32_t without a range is stored as float32 and read by uproot as double: the
    float64 bound let ROOT's roundings of 2**24 + k through (one number for two events: a
    3-fold training assigned folds by them silently), where a Float_t branch is refused:
    from 2**24 on (2**24 itself may be 2**24 + 1 rounded), 90 of 2**24 - 10 ... + 89."""
    from hepbdt.io.errors import BadValueError

    drawn = {}
    for name, first in (("low", 2**24 - 100), ("high", 2**24 - 10)):
        done = subprocess.run([_root_python(), "-c", ROOT_DOUBLE32_EVENTS,
                               str(tmp_path / f"{name}.root"), str(first)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        drawn[name] = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(set(drawn["high"])) < 100  # ROOT itself reads some numbers twice
    data = read([Sample("s", f"{tmp_path / 'low.root'}:Events", label=1)], ["x"],
                event="event", progress=False)
    np.testing.assert_array_equal(data.event, np.array(drawn["low"], dtype=np.int64))
    with pytest.raises(BadValueError, match=r"event expression 'event' is not an integer event "
                                            r"number .* for 90 event\(s\)"):
        read([Sample("s", f"{tmp_path / 'high.root'}:Events", label=1)], ["x"], event="event",
             progress=False)


def test_a_new_write_replaces_the_file_and_repeated_names_take_2_and_3(tmp_path: Path) -> None:
    """Without update the file holds only the new tree (uproot lists its keys); features
    whose branch names repeat get _2 and _3 (the write_scores rule), read back by uproot;
    read_scores refuses a tree written without its features; a long double score that
    float64 would round is refused."""
    path = tmp_path / "scores.root"
    data = Dataset(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 0, 1]),
                   feature_names=["x", "x"])
    write_scores(path, data, np.zeros(3), tree="Old")
    write_scores(path, data.replace(X=np.c_[data.X, data.X[:, 0]], feature_names=["x"] * 3),
                 np.ones(3), tree="New")
    with uproot.open(path) as file:
        assert sorted({key.split(";")[0] for key in file.keys()}) == [
            "New", "New_features", "New_samples"]
        new = file["New"].arrays(library="np")
    assert list(new)[:3] == ["x", "x_2", "x_3"]
    np.testing.assert_array_equal(new["x_2"], [1.0, 3.0, 5.0])
    write_scores(path, data, np.zeros(3), tree="Bare", features=False, update=True)
    with pytest.raises(InputError, match="lacks the feature or bookkeeping branches"):
        read_scores(path, "Bare")
    if np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant:
        fine = np.longdouble(1) + np.longdouble(2) ** -60
        with pytest.raises(InputError, match="cannot hold exactly"):
            write_scores(path, data, np.array([fine, 0, 0], dtype=np.longdouble))


def test_read_scores_returns_the_scores_alone_and_refuses_labels_beyond_two_classes(
        tmp_path: Path) -> None:
    """read_scores gives the score branches only (uproot's branches after ``sample``), reads
    a two-class tree that names its classes, and refuses a label of 2 in a tree of two
    classes and a classID that is not 1 - label (written again by uproot with that one
    value changed)."""
    path = tmp_path / "scores.root"
    data = Dataset(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 0, 1]),
                   feature_names=["a", "b"])
    write_scores(path, data, np.array([0.1, 0.2, 0.3]), class_names=["bkg", "sig"])
    back, scores = read_scores(path, "TestTree")
    assert list(scores) == ["bdt_score"]
    np.testing.assert_array_equal(back.y, [1, 0, 1])
    write_scores(path, data, np.array([0.1, 0.2, 0.3]))
    with uproot.open(path) as file:
        arrays = file["TestTree"].arrays(library="np")
        samples = str(file["TestTree_samples"])
        features = str(file["TestTree_features"])
    damaged = tmp_path / "damaged.root"
    for branch, value, message in (("label", 2, "label branch holds indices 0..2"),
                                   ("classID", 1, "classID and label disagree in 1 of 3")):
        changed = {k: v.copy() for k, v in arrays.items()}
        changed[branch][0] = value
        with uproot.recreate(damaged) as file:
            file["TestTree_samples"], file["TestTree_features"] = samples, features
            file.mktree("TestTree", {k: v.dtype for k, v in changed.items()}).extend(changed)
        with pytest.raises(InputError, match=message):
            read_scores(damaged, "TestTree")
