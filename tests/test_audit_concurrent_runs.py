"""Audit of several runs at once on the same paths, with forced interleavings: each test
pauses one writer at a chosen point (a hook) and runs the other there."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt import persistence
from hepbdt.analysis import load_config, outputs, report_from_scores, train
from hepbdt.io.errors import InputError
from hepbdt.kfold import KFoldModel
from hepbdt.model import ModelFormatError
from hepbdt.output_set import OutputSet, OutputSetError, _swap
from hepbdt.persistence import load_model
from tests.ntuples import write_ttree


def _folds(n_trees: int, seed: int, k: int = 2) -> list[hepbdt.BDTClassifier]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.8, size=400) > 0).astype(int)
    part = np.arange(len(y)) % k
    return [hepbdt.BDTClassifier(n_trees=n_trees, max_depth=2, random_state=seed)
            .fit(X[part != i], y[part != i]) for i in range(k)]


def _pausing(model: hepbdt.BDTClassifier, hook: Any) -> hepbdt.BDTClassifier:
    """``model``, whose next ``save`` runs ``hook`` once its file is written."""
    save = model.save

    def save_then_pause(path: Any) -> None:
        save(path)
        del model.save  # once
        hook()

    model.save = save_then_pause
    return model


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_kfold_save_of_the_same_files_fails_at_once(tmp_path):
    """Two KFoldModel.save of one path interleaving (the second between the first's fold
    files) left fold 0 of one model and fold 1 of the other under a manifest whose digests,
    read back from the files, accepted both: a mixed k-fold model loaded without a word."""
    first, second = _folds(5, seed=1), _folds(7, seed=2)
    path = tmp_path / "model.json"
    raised: list[BaseException] = []

    def second_save() -> None:
        try:
            KFoldModel(second, by="event").save(path)
        except OutputSetError as exc:
            raised.append(exc)

    KFoldModel([_pausing(first[0], second_save), first[1]], by="event").save(path)
    assert raised and "is being saved by another hepbdt run" in str(raised[0])
    loaded = load_model(path)
    assert [m.n_trees for m in loaded.models] == [5, 5]
    assert not list(tmp_path.glob(".*"))  # no lock or temporary left


def test_a_fold_file_replaced_during_the_save_is_refused_on_load(tmp_path, monkeypatch):
    """The manifest records the digest of the bytes its save wrote, not of whatever file is
    at the fold's path when the manifest is written (another writer's: here between the
    fold files' renames and the manifest's, since the save renames them all at its end)."""
    first, other = _folds(5, seed=1), _folds(7, seed=2)
    path = tmp_path / "model.json"
    stranger = tmp_path / "elsewhere.json"
    other[0].save(stranger)
    replace = os.replace

    def replace_then_overwrite_fold0(source: Any, target: Any) -> None:
        replace(source, target)
        if Path(target) == tmp_path / "model_fold0.json":
            (tmp_path / "model_fold0.json").write_bytes(stranger.read_bytes())

    monkeypatch.setattr(os, "replace", replace_then_overwrite_fold0)
    KFoldModel(first, by="event").save(path)
    monkeypatch.undo()
    with pytest.raises(ModelFormatError, match="model_fold0.json' is not the file this manifest"):
        load_model(path)
    # an undisturbed save still loads, and records its files' digests
    KFoldModel(first, by="event").save(path)
    assert [m.n_trees for m in load_model(path).models] == [5, 5]
    assert '"sha256"' in path.read_text()
    assert _sha(tmp_path / "model_fold1.json") in path.read_text()


# -- a training swapping a new set into the folder of a model being read -------------------


def _set_of(folder: Path, model: Any) -> None:
    """An output set at ``folder`` holding ``model`` as model.json."""
    out = OutputSet(folder)
    with out as staging:
        model.save(staging / "model.json")
        out.commit()


def _swap_in_after_loading(monkeypatch: pytest.MonkeyPatch, folder: Path, new: Path,
                           after_calls: int) -> None:
    """A training's swap of ``new`` into ``folder`` once load_model has built
    ``after_calls`` estimators (the whole model: every fold of a k-fold one)."""
    build = persistence._estimator_from_file
    calls = []

    def build_then_swap(*args: Any) -> Any:
        estimator = build(*args)
        calls.append(1)
        if len(calls) == after_calls:
            shutil.rmtree(_swap(new, folder))
        return estimator

    monkeypatch.setattr(persistence, "_estimator_from_file", build_then_swap)


def _ntuple(path: Path) -> Path:
    rng = np.random.default_rng(5)
    write_ttree(path, "Events", {"event": np.arange(300, dtype=np.int64),
                                 **{name: rng.normal(size=300).astype(np.float32)
                                    for name in "abc"}})
    return path


@pytest.mark.parametrize("kfold", [False, True])
def test_apply_records_the_model_it_loaded_when_a_training_replaces_its_folder(
        tmp_path, monkeypatch, kfold):
    """apply read the model file again for the SHA-256 in its trees' titles: a training's
    swap in between recorded the new model beside the old model's scores."""
    names = ["a", "b", "c"]
    models = {seed: _named_folds(seed) for seed in (1, 2)}
    make = (lambda folds: KFoldModel(folds, by="event")) if kfold else (lambda folds: folds[0])
    folder, new = tmp_path / "results", tmp_path / "new"
    _set_of(folder, make(models[1]))
    _set_of(new, make(models[2]))
    loaded_sha = hashlib.sha256(b"".join(
        (folder / n).read_bytes() for n in (["model.json", "model_fold0.json", "model_fold1.json"]
                                            if kfold else ["model.json"]))).hexdigest()
    _swap_in_after_loading(monkeypatch, folder, new, 2 if kfold else 1)
    source = _ntuple(tmp_path / "in.root")
    (written,) = hepbdt.apply(folder / "model.json", source, tmp_path / "scores.root",
                              event_branch=None if kfold else "event")
    with uproot.open(written) as f:
        title, scores = f["Events"].title, f["Events"]["bdt_score"].array(library="np")
    assert title.endswith(f"model sha256 {loaded_sha}")
    with uproot.open(source) as f:
        X = np.column_stack([f["Events"][n].array(library="np") for n in names])
    expected = (make(models[1]).decision_function(X, np.arange(300)) if kfold
                else models[1][0].decision_function(X))
    np.testing.assert_allclose(scores, expected, rtol=1e-6)


def _named_folds(seed: int) -> list[hepbdt.BDTClassifier]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.8, size=400) > 0).astype(int)
    data = hepbdt.Dataset(X, y, feature_names=["a", "b", "c"])
    part = np.arange(len(y)) % 2
    return [hepbdt.BDTClassifier(n_trees=3 + seed, max_depth=2, random_state=seed)
            .fit(data.X[part != i], data.y[part != i]) for i in range(2)]


def _train(tmp_path: Path, name: str, seed: int) -> Path:
    """A 3-tree training of the shipped signal against QCD; its output folder."""
    data = Path(__file__).resolve().parents[1] / "data"
    (tmp_path / f"{name}.toml").write_text(f"""
tree = "Events"
event = "event"
preselection = "event % 8 == 0"
features = ["HT", "MET_pt", "nJet"]
[samples.signal]
files = "{data / 'signal.root'}"
label = "signal"
[samples.qcd]
files = "{data / 'background_qcd.root'}"
label = "background"
[split]
seed = {seed}
[method]
n_trees = 3
max_depth = 2
[output]
report = false
figures = false
tmva_xml = false
""")
    train(load_config(tmp_path / f"{name}.toml", output=tmp_path / name))
    return tmp_path / name


def test_report_does_not_record_the_files_of_a_set_swapped_in_after_its_read(
        tmp_path, monkeypatch):
    """report_from_scores read the model file and scores.root again for the SHA-256s of
    its provenance: a training's swap after the trees were read recorded the new set's
    files beside the old set's numbers. Now the files read are the ones recorded, and a
    scores.root replaced while the report read it is refused."""
    folder, new = _train(tmp_path, "a", 1), _train(tmp_path, "b", 2)
    digests = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest()
               for n in ("model.json", "scores.root")}
    read = outputs.read_scores
    calls = []

    def read_then_swap(*args: Any, **kwargs: Any) -> Any:
        trees = read(*args, **kwargs)
        calls.append(1)
        if len(calls) == 2:  # both trees read: the new set arrives
            shutil.rmtree(_swap(new, folder))
        return trees

    monkeypatch.setattr(outputs, "read_scores", read_then_swap)
    report = tmp_path / "r.html"
    try:
        report_from_scores(folder / "model.json", folder / "scores.root", report)
    except InputError as exc:
        assert "changed while it was read" in str(exc)
        assert not report.exists()
    else:
        text = report.read_text()
        assert all(digest in text for digest in digests.values())
