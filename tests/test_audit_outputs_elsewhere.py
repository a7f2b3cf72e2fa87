"""Audit of outputs away from their output set: `hepbdt report` of a copied scores.root
(another training's, k-fold trees of another k, k-fold trees for one model, a
classification's trees for a regressor: refused; the reference is which training wrote
the copy, not anything the copy says), a linked one (its set's settings), and `hepbdt
export` of k-fold models into a folder holding an earlier export of more folds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hepbdt.analysis import load_config, report_from_scores, train
from hepbdt.io.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data"


def _train(tmp_path: Path, name: str, split: str, task: str = 'label = "background"') -> Path:
    """A 3-tree training of the shipped signal against QCD; its output folder."""
    (tmp_path / f"{name}.toml").write_text(f"""
tree = "Events"
event = "event"
preselection = "event % 4 == 0"
features = ["HT", "MET_pt", "nJet"]
[samples.signal]
files = "{DATA / 'signal.root'}"
{'label = "signal"' if 'label' in task else 'target = "MET_pt * 2"'}
[samples.qcd]
files = "{DATA / 'background_qcd.root'}"
{task}
[split]
{split}
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


def _moved(folder: Path, tmp_path: Path) -> Path:
    """The folder's scores.root copied out of it (no manifest beside it)."""
    (tmp_path / "archive").mkdir(exist_ok=True)
    return Path(shutil.copy(folder / "scores.root", tmp_path / "archive" / f"{folder.name}.root"))


def test_a_copy_of_another_trainings_scores_is_refused(tmp_path):
    a = _train(tmp_path, "a", "mode = \"random\"\nseed = 1")
    b = _train(tmp_path, "b", "mode = \"random\"\nseed = 2")
    copy = _moved(a, tmp_path)
    report_from_scores(a / "model.json", copy, tmp_path / "a.html")  # its own model: fine
    with pytest.raises(InputError, match="was written by another model"):
        report_from_scores(b / "model.json", copy, tmp_path / "mixed.html")


def test_kfold_trees_of_another_k_or_for_one_model_are_refused(tmp_path):
    k5 = _moved(_train(tmp_path, "k5", "kfold = 5"), tmp_path)
    k3 = _train(tmp_path, "k3", "kfold = 3")
    one = _train(tmp_path, "one", "mode = \"random\"\nseed = 1")
    with pytest.raises(InputError, match="folds up to 4, and the model has 3"):
        report_from_scores(k3 / "model.json", k5, tmp_path / "r.html")
    with pytest.raises(InputError, match="written by a k-fold training"):
        report_from_scores(one / "model.json", k5, tmp_path / "r.html")
    with pytest.raises(InputError, match="not a k-fold one"):
        report_from_scores(k3 / "model.json", _moved(one, tmp_path), tmp_path / "r.html")


def test_a_classifications_trees_for_a_regressor_are_refused(tmp_path):
    regression = _train(tmp_path, "reg", "mode = \"random\"\nseed = 1", 'target = "HT / 2"')
    classification = _moved(_train(tmp_path, "cls", "mode = \"random\"\nseed = 1"), tmp_path)
    with pytest.raises(InputError, match="classification's events, and the model is a regressor"):
        report_from_scores(regression / "model.json", classification, tmp_path / "r.html")


def test_a_linked_scores_root_keeps_its_trainings_settings(tmp_path):
    """A link to a set's scores.root finds the settings of that set's manifest (the model
    check follows the link; the settings did not, and the report took the defaults)."""
    from hepbdt.output_set import recorded_settings

    folder = _train(tmp_path, "a", "mode = \"random\"\nseed = 1")
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "elsewhere" / "linked.root"
    link.symlink_to(folder / "scores.root")
    assert recorded_settings(folder / "scores.root")  # the set records its settings
    assert recorded_settings(link) == recorded_settings(folder / "scores.root")


def test_kfold_export_over_more_folds_is_refused(tmp_path):
    """Exporting a 3-fold model where a 5-fold export lies would leave folds 3 and 4 of the
    other training beside the new files: refused, and the old files stay as they were."""
    from hepbdt.cli import main

    k5, k3 = _train(tmp_path, "k5", "kfold = 5"), _train(tmp_path, "k3", "kfold = 3")
    deploy = tmp_path / "deploy"
    assert main(["export", str(k5 / "model.json"), "--tmva", str(deploy / "bdt.weights.xml")]) == 0
    before = {p.name: p.read_bytes() for p in deploy.iterdir()}
    assert sorted(before) == [f"bdt_fold{i}.weights.xml" for i in range(5)]
    assert main(["export", str(k3 / "model.json"), "--tmva", str(deploy / "bdt.weights.xml")]) == 2
    assert {p.name: p.read_bytes() for p in deploy.iterdir()} == before
    assert main(["export", str(k3 / "model.json"), "--tmva", str(tmp_path / "new" / "bdt.weights.xml")]) == 0
