"""Audit of apply (hepbdt.scoring) and k-fold routing (hepbdt.kfold): every written score
is checked against a brute-force reference: the branches read back with uproot, the
features computed here with NumPy/Awkward in the model's order, each event's fold taken as
``int(event) % k`` with Python integers and scored by that fold's own model."""

from __future__ import annotations

import json
import re

import awkward as ak
import numpy as np
import pandas as pd
import pytest
import uproot

import hepbdt
from hepbdt import BDTClassifier, BDTRegressor, KFoldModel
from hepbdt.binned import BinnedMatrix
from hepbdt.io import Dataset
from hepbdt.io.errors import InputError
from hepbdt.persistence import ModelFormatError, load_model
from hepbdt.scoring import ApplyOptionError
from tests.ntuples import KINDS, tree_types, write_ntuple, write_rntuple

K = 3
FEATURES = ["x2", "x1*2", "log(abs(x3)+1)", "jet_pt[:, 0]", "num(jet_pt)"]
ALIASES = ["x1", "twice", "lg", "lead", "nj"]  # 'x1' stands for the branch x2


def _columns(n: int, seed: int, event: np.ndarray | None = None, order: list[str] | None = None
             ) -> dict:
    rng = np.random.default_rng(seed)
    jets = rng.integers(0, 4, n)
    columns = {"x1": rng.normal(size=n).astype(np.float32), "x2": rng.normal(size=n),
               "x3": rng.integers(-5, 5, n).astype(np.int32),
               "jet_pt": ak.unflatten(rng.exponential(30, jets.sum()).astype(np.float32), jets),
               "event": np.arange(n, dtype=np.int64) * 7 + seed if event is None else event,
               "extra": rng.normal(size=n)}
    return {name: columns[name] for name in order or list(columns)}


def _write(path, trees: dict, basket: int | None = None, kind: str = "ttree") -> None:
    """Trees of ``kind`` written in baskets (a TTree's) or clusters (an RNTuple's) of
    ``basket`` entries, one extend each."""
    with uproot.recreate(path) as file:
        for name, columns in trees.items():
            n = len(columns["event"])
            step = basket or max(n, 1)
            if kind == "ttree":
                file.mktree(name, tree_types(columns))
                first = 0
            else:
                write_rntuple(file, name, {k: v[:step] for k, v in columns.items()})
                first = step
            for start in range(first, n, step):
                file[name].extend({k: v[start:start + step] for k, v in columns.items()})


def _reference_X(path, tree: str) -> np.ndarray:
    """The features of FEATURES, computed here from the branches."""
    with uproot.open(path) as file:
        a = file[tree].arrays(["x1", "x2", "x3", "jet_pt"])
    jets = a["jet_pt"]
    lead = ak.to_numpy(ak.fill_none(ak.firsts(jets), np.nan)).astype(np.float64)
    return np.column_stack([
        ak.to_numpy(a["x2"]), ak.to_numpy(a["x1"]).astype(np.float64) * 2,
        np.log(np.abs(ak.to_numpy(a["x3"]).astype(np.float64)) + 1), lead,
        ak.to_numpy(ak.num(jets)).astype(np.float64)]).astype(np.float32)


def _events(path, tree: str) -> list[int]:
    with uproot.open(path) as file:
        return [int(e) for e in file[tree]["event"].array(library="np").tolist()]


def _out_of_fold(models: list, X: np.ndarray, events: list[int], score=None) -> np.ndarray:
    """Each event scored by models[int(event) % k]."""
    folds = np.array([e % len(models) for e in events])
    out = None
    for i, model in enumerate(models):
        if (folds == i).any():
            part = (score or (lambda m, x: m.decision_function(x)))(model, X[folds == i])
            out = np.full((len(X), *part.shape[1:]), np.nan) if out is None else out
            out[folds == i] = part
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A binary, a multi-class and a regression model and two k-fold manifests, trained on
    features read under alias names."""
    folder = tmp_path_factory.mktemp("models")
    _write(folder / "train.root", {"sig": _columns(600, 1), "bkg": _columns(600, 2)})
    samples = [hepbdt.Sample("sig", f"{folder}/train.root:sig", label=1),
               hepbdt.Sample("bkg", f"{folder}/train.root:bkg", label=0)]
    data = hepbdt.read(samples, FEATURES, event="event")
    data = data.replace(feature_names=ALIASES, feature_definitions=dict(
        zip(ALIASES, FEATURES, strict=True)))
    three = np.array(["a-b", "c d", "e"])[(data.X[:, 0] > 0).astype(int) + data.y.astype(int)]
    options = {"n_trees": 6, "max_depth": 3, "random_state": 0}
    BDTClassifier(**options).fit(data.X, data.y).save(folder / "bin.json")
    BDTClassifier(**options).fit(data.X, three).save(folder / "mc.json")
    BDTRegressor(**options).fit(data.X, data.X[:, 1] * 3.0).save(folder / "reg.json")
    folds = data.kfold(K)
    KFoldModel([BDTClassifier(**options).fit(tr.X, tr.y) for tr, _ in folds], by="event").save(
        folder / "kf.json")
    KFoldModel([BDTClassifier(**options).fit(tr.X, (tr.X[:, 0] > 0) + tr.y.astype(int))
                for tr, _ in folds], by="event").save(folder / "kfmc.json")
    return folder


@pytest.fixture(scope="module", params=KINDS)
def inputs(tmp_path_factory, request):
    """Three inputs for one chain: branches in another order with negative event numbers,
    an empty tree, and uint64 event numbers beyond 2**62; baskets (clusters) that chunks
    split. TTrees, and RNTuples."""
    folder = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(5)
    first = rng.integers(-10**15, 10**15, 230)
    first[:6] = [-2**63, 2**63 - 1, 2**53 + 1, -(2**53) - 1, -1, 0]
    _write(folder / "a.root", {"Events": _columns(
        230, 10, first, ["extra", "event", "jet_pt", "x3", "x1", "x2"])}, basket=61,
        kind=request.param)
    _write(folder / "c.root", {"Events": _columns(0, 11)}, kind=request.param)
    third = np.arange(97, dtype=np.uint64) * np.uint64(1000003) + np.uint64(2**62)
    _write(folder / "b.root", {"Events": _columns(97, 12, third)}, basket=40,
           kind=request.param)
    return [folder / "a.root", folder / "c.root", folder / "b.root"]


def _class_suffix(label) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", str(label)).strip("_")


@pytest.mark.parametrize("name", ["bin", "reg", "mc", "kf", "kfmc"])
def test_every_written_score_is_the_brute_force_one(trained, inputs, tmp_path, name):
    model = load_model(trained / f"{name}.json")
    X = np.concatenate([_reference_X(p, "Events") for p in inputs])
    events = [e for p in inputs for e in _events(p, "Events")]
    if isinstance(model, KFoldModel):
        want = _out_of_fold(model.models, X, events)
        classes = model.models[0].classes_
    else:
        want = model.predict(X) if name == "reg" else model.decision_function(X)
        classes = model.classes_ if name == "mc" else None
    for step in (7, "2 kB", 100_000):
        out = tmp_path / f"{name}_{step}.root"
        hepbdt.apply(trained / f"{name}.json", inputs, out, step_size=step,
                     event_branch="event")
        with uproot.open(out) as file:
            got = file["Events"].arrays(library="np")
        assert [int(e) for e in got["event"].tolist()] == events
        if want.ndim == 1:
            np.testing.assert_array_equal(got["bdt_score"], want)
            continue
        proba = np.exp(want - want.max(axis=1, keepdims=True))
        proba /= proba.sum(axis=1, keepdims=True)
        for j, label in enumerate(classes):
            np.testing.assert_array_equal(got[f"bdt_score_{_class_suffix(label)}"], want[:, j])
            np.testing.assert_allclose(got[f"bdt_prob_{_class_suffix(label)}"], proba[:, j],
                                       rtol=1e-12, atol=1e-300)


def test_entry_numbers_chain_the_inputs_and_an_empty_input_keeps_the_shape(trained, inputs,
                                                                            tmp_path):
    hepbdt.apply(trained / "bin.json", inputs, tmp_path / "chain.root", step_size=17)
    hepbdt.apply(trained / "bin.json", inputs[1], tmp_path / "empty.root")
    with uproot.open(tmp_path / "chain.root") as chain, uproot.open(tmp_path / "empty.root") as e:
        assert chain["Events"]["entry"].array(library="np").tolist() == list(range(230 + 97))
        assert e["Events"].num_entries == 0
        assert [(k, e["Events"][k].typename) for k in e["Events"].keys()] == [
            (k, chain["Events"][k].typename) for k in chain["Events"].keys()]


def _event_file(tmp_path, event) -> str:
    path = tmp_path / "events.root"
    _write(path, {"Events": _columns(len(event), 3, event)})
    return str(path)


@pytest.mark.parametrize("event", [
    np.arange(20, dtype=np.uint64) + np.uint64(2**63 - 10),  # beyond int64
    np.where(np.arange(20) == 7, np.nan, np.arange(20.0)),  # NaN
    np.arange(20.0) + 0.5,  # fractions
])
def test_event_numbers_that_are_not_int64_integers_are_refused_and_nothing_is_written(
        trained, inputs, tmp_path, event):
    out = tmp_path / "out.root"
    with pytest.raises(InputError, match="not an integer event number"):
        hepbdt.apply(trained / "kf.json", [inputs[0], _event_file(tmp_path, event)], out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.root"]


def test_float_event_numbers_beyond_2_53_are_refused(trained, tmp_path):
    """A double from 2**53 on may be another event number rounded (the int64 it came from
    is in another fold): refused, not routed by its rounded value; below 2**53 exact."""
    event = np.array([2.0**53 - 1, -(2.0**53 - 1), -5.0, 7.0] * 5)
    path = _event_file(tmp_path, event)
    hepbdt.apply(trained / "kf.json", path, tmp_path / "out.root", step_size=3)
    model = load_model(trained / "kf.json")
    want = _out_of_fold(model.models, _reference_X(path, "Events"), [int(e) for e in event])
    with uproot.open(tmp_path / "out.root") as file:
        np.testing.assert_array_equal(file["Events"]["bdt_score"].array(library="np"), want)
    for big in (2.0**60 + 768, 2.0**53):  # 2**53 may be 2**53 + 1 rounded
        path = _event_file(tmp_path, np.array([7.0, big] * 5))
        with pytest.raises(InputError, match=r"float of 2\*\*53 or beyond"):
            hepbdt.apply(trained / "kf.json", path, tmp_path / "big.root", step_size=3)
        assert not (tmp_path / "big.root").exists()


def test_a_missing_branch_is_refused_before_anything_is_written(trained, inputs, tmp_path):
    columns = _columns(30, 4)
    del columns["x3"]
    _write(tmp_path / "nox3.root", {"Events": columns})
    (tmp_path / "out.root").write_bytes(b"previous")
    with pytest.raises(InputError, match="'x3', which is not a branch"):
        hepbdt.apply(trained / "bin.json", [inputs[0], tmp_path / "nox3.root"],
                     tmp_path / "out.root")
    assert (tmp_path / "out.root").read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nox3.root", "out.root"]


# -- KFoldModel.decision_function: named and binned X, as each fold model takes them --------


@pytest.fixture(scope="module")
def folds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)).astype(np.float32) * [1.0, 3.0]
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    event = rng.integers(-10**6, 10**6, 300)
    data = Dataset(X, y, event=event, feature_names=["a", "b"])
    models = [BDTClassifier(n_trees=5, max_depth=2).fit(tr.X, tr.y) for tr, _ in data.kfold(K)]
    return X, event, models


def test_kfold_scores_named_columns_by_name(folds):
    X, event, models = folds
    want = _out_of_fold(models, X, event.tolist())
    model = KFoldModel(models)
    swapped = pd.DataFrame({"b": X[:, 1], "a": X[:, 0]})
    np.testing.assert_array_equal(model.decision_function(swapped, event), want)
    np.testing.assert_array_equal(model.decision_function({"b": X[:, 1], "a": X[:, 0]}, event),
                                  want)
    reversed_set = Dataset(X[:, ::-1].copy(), feature_names=["b", "a"], event=event)
    np.testing.assert_array_equal(model.decision_function(reversed_set.X, event), want)
    with pytest.raises(ValueError, match=r"lacks the features \['b'\]"):
        model.decision_function(swapped[["a"]], event)


def test_kfold_scores_binned_X_as_its_fold_models_do(folds):
    X, event, models = folds
    other_bins = BinnedMatrix.from_features(X, [np.linspace(-2, 2, 5, dtype=np.float32)] * 2)
    with pytest.raises(ValueError, match="not one of its bin edges"):
        models[0].decision_function(other_bins)
    with pytest.raises(ValueError, match="not one of its bin edges"):
        KFoldModel(models).decision_function(other_bins, event)
    binned = BinnedMatrix.from_features(X, [np.linspace(-6, 6, 25, dtype=np.float32)] * 2)
    fold_of = np.array([int(e) % K for e in event.tolist()])
    fitted = [BDTClassifier(n_trees=5, max_depth=2).fit(binned[fold_of != i], (X[:, 0] > 0)[
        fold_of != i]) for i in range(K)]
    want = _out_of_fold(fitted, binned, event.tolist())
    np.testing.assert_array_equal(KFoldModel(fitted).decision_function(binned, event), want)


@pytest.mark.parametrize("by", ["", "  ", 3])
def test_kfold_model_needs_its_event_expression(folds, by):
    with pytest.raises(ValueError, match="by must be the event-number expression"):
        KFoldModel(folds[2], by=by)


def test_fold_models_reading_a_name_from_different_expressions_are_refused(trained, tmp_path):
    manifest = json.loads((trained / "kf.json").read_text())
    manifest.pop("sha256")  # the fold files are edited below
    for i, name in enumerate(manifest["models"]):
        doc = json.loads((trained / name).read_text())
        if i == 1:  # fold 1 was trained on 'lead' = the second jet
            doc["feature_definitions"]["lead"] = "jet_pt[:, 1]"
        (tmp_path / name).write_text(json.dumps(doc))
    (tmp_path / "kf.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFormatError, match="different feature definitions"):
        load_model(tmp_path / "kf.json")
    models = [load_model(tmp_path / name) for name in manifest["models"]]
    with pytest.raises(ValueError, match="different feature definitions"):
        KFoldModel(models)


# -- multi-class branch names: a branch named for a class holds that class's score --------


def _three_class_apply(tmp_path, labels, kind="ttree"):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 2)).astype(np.float32)
    y = np.asarray(labels)[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = BDTClassifier(n_trees=3, max_depth=2).fit(Dataset(X, feature_names=["u", "v"]).X, y)
    write_ntuple(tmp_path / "in.root", "Events", {"v": X[:, 1], "u": X[:, 0]}, kind)
    hepbdt.apply(model, tmp_path / "in.root", tmp_path / "out.root")
    with uproot.open(tmp_path / "out.root") as file:
        return model, X, file["Events"].arrays(library="np")


@pytest.mark.parametrize("kind", KINDS)
def test_a_negative_class_label_does_not_take_the_name_of_another_class(tmp_path, kind):
    model, X, got = _three_class_apply(tmp_path, [-1, 0, 1], kind)
    raw = model.decision_function(X)
    columns = {int(label): j for j, label in enumerate(model.classes_.tolist())}
    np.testing.assert_array_equal(got["bdt_score_1"], raw[:, columns[1]])
    np.testing.assert_array_equal(got["bdt_score_0"], raw[:, columns[0]])
    np.testing.assert_array_equal(got["bdt_score_m1"], raw[:, columns[-1]])


def test_class_names_keep_their_own_underscores_in_their_branches(tmp_path):
    # the branches hepbdt train names <score_branch>_<class>: apply names them alike
    model, X, got = _three_class_apply(tmp_path, ["_qcd", "signal_", "tt"])
    raw = model.decision_function(X)
    for j, label in enumerate(model.classes_.tolist()):
        np.testing.assert_array_equal(got[f"bdt_score_{label}"], raw[:, j])


def test_index_names_that_would_be_another_class_are_refused(tmp_path):
    with pytest.raises(ApplyOptionError, match="class 'a b' the name of class '1'"):
        _three_class_apply(tmp_path, ["1", "a b", "a_b"])
    assert not (tmp_path / "out.root").exists()
