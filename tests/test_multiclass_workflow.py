"""Multi-class analyses end to end: configuration, --check refusals, training, score trees,
apply, summary and report, checked against the model's own predict_proba and scikit-learn."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest
import uproot
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from sklearn.metrics import roc_auc_score

from hepbdt import BDTClassifier, load_model
from hepbdt.analysis import load_config
from hepbdt.analysis.config import MULTICLASS_BOOSTINGS, ConfigError
from hepbdt.cli import main
from hepbdt.io import read_class_names, read_scores
from hepbdt.scoring import apply
from tests.ntuples import write_ttree

ANALYSES = Path(__file__).resolve().parents[1] / "analyses"
MULTICLASS_DATA = ANALYSES.parents[1] / "shared" / "data" / "tmva_multiclass_example.root"
CLASSES = {"qcd": 0.0, "signal": 1.5, "ttbar": -1.5}  # class -> mean shift of x


@pytest.fixture(scope="module")
def ntuple(tmp_path_factory) -> Path:
    """One file, a TTree a class: x and y shifted per class, a weight branch."""
    path = tmp_path_factory.mktemp("mc") / "events.root"
    rng = np.random.default_rng(5)
    with uproot.recreate(path) as file:
        for i, (name, shift) in enumerate(CLASSES.items()):
            n = 600
            write_ttree(file, name, {"x": rng.normal(shift, 1.0, n).astype(np.float32),
                                     "y": rng.normal(shift * (i - 1), 1.0, n).astype(np.float32),
                                     "w": rng.uniform(0.5, 1.5, n),
                                     "event": np.arange(n) + 1000 * i})
    return path


def write_config(folder: Path, ntuple: Path, labels: dict[str, str] | None = None,
                 extra: str = "") -> Path:
    labels = labels or {name: name for name in CLASSES}
    samples = "\n".join(f'[samples.{name}]\nfiles = "{ntuple}:{name}"\nlabel = "{label}"\n'
                        'weight = "w"\n' for name, label in labels.items())
    path = folder / "mc.toml"
    path.write_text(f'features = ["x", "y"]\nevent = "event"\n{samples}\n[method]\n'
                    f'boosting = "gradient"\nn_trees = 15\nmax_depth = 2\n{extra}\n'
                    f'[output]\ndirectory = "{folder / "out"}"\ntmva_xml = false\n'
                    "figures = false\n")
    return path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_classes_sorted_and_labelled_by_index(tmp_path, ntuple):
    config = load_config(write_config(tmp_path, ntuple))
    assert config.multiclass and config.classes == ["qcd", "signal", "ttbar"]
    assert {s.name: s.label for s in config.samples} == {"qcd": 0, "signal": 1, "ttbar": 2}
    assert config.class_branches()["ttbar"] == ("bdt_score_ttbar", "bdt_prob_ttbar")


def test_names_that_extend_signal_or_background_are_classes(tmp_path, ntuple):
    """Not near misses: a name that holds 'signal' or 'background' whole is its own class."""
    config = load_config(write_config(tmp_path, ntuple, {"signal": "signal", "qcd": "signal2",
                                                         "ttbar": "Background_tt"}))
    assert config.classes == ["Background_tt", "signal", "signal2"]


def test_two_classes_keep_signal_and_background(tmp_path, ntuple):
    config = load_config(write_config(tmp_path, ntuple, {"signal": "sig", "qcd": "background",
                                                         "ttbar": "bkg"}))
    assert not config.multiclass and config.classes == ["background", "signal"]
    assert {s.name: s.label for s in config.samples} == {"signal": 1, "qcd": 0, "ttbar": 0}


@pytest.mark.parametrize(("labels", "words"), [
    ({"signal": "signal", "qcd": "qcd"}, "two classes are label = 'signal' and label = "
     "'background'"),
    ({"signal": "signal", "qcd": "signal"}, "no background sample"),
    ({"signal": "signal", "qcd": "t t", "ttbar": "ttbar"}, "'t t' cannot name a class"),
    # one class written two ways silently made a multi-class training (or two classes)
    ({"signal": "signal", "qcd": "background", "ttbar": "backgroud"},
     "'backgroud' looks like 'background' misspelt: .* a training of 3 classes"),
    ({"signal": "singal", "qcd": "qcd", "ttbar": "ttbar"}, "'singal' looks like 'signal'"),
    ({"signal": "signal", "qcd": "Ttbar", "ttbar": "ttbar"},
     r"\['Ttbar', 'ttbar'\] differ only in case"),
])
def test_bad_class_configurations_are_one_error(tmp_path, ntuple, labels, words):
    with pytest.raises(ConfigError, match=words):
        load_config(write_config(tmp_path, ntuple, labels))


@pytest.mark.parametrize(("option", "key"), [('boosting = "eps"', "boosting"),
                                             ('tmva_options = "BoostType=Bagging"',
                                              "tmva_options"),
                                             ('loss = "deviance"', "loss"),
                                             ("sig_to_bkg_fraction = 1.0",
                                              "sig_to_bkg_fraction"),
                                             ('boosting = "adaboost"\ncriterion = "cross_entropy"',
                                              "criterion"),
                                             ('boosting = "adaboost"\nuse_yes_no_leaf = false',
                                              "use_yes_no_leaf")])
def test_two_class_options_are_refused_at_check(tmp_path, ntuple, capsys, option, key):
    path = write_config(tmp_path, ntuple, extra=option)
    text = path.read_text().replace('boosting = "gradient"\n', "")
    path.write_text(text)
    status, out, err = run(["train", str(path), "--check"], capsys)
    assert status == 2 and out == ""
    assert err.startswith("hepbdt: error: ") and f"[method] {key}" in err
    if key in ("boosting", "tmva_options"):
        assert "'gradient', 'newton', 'adaboost'" in err and "two-class only" in err


def test_multiclass_boosters_mirror_the_estimator():
    """MULTICLASS_BOOSTINGS is what BDTClassifier trains with three classes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.repeat(["a", "b", "c"], 20)
    for boosting in ("gradient", "newton", "adaboost", "realadaboost", "eps", "bagging"):
        try:
            BDTClassifier(boosting=boosting, n_trees=2, max_depth=1).fit(X, y)
            trains = True
        except ValueError:
            trains = False
        assert trains == (boosting in MULTICLASS_BOOSTINGS), boosting


def test_clashing_branches_are_refused(tmp_path, ntuple):
    path = write_config(tmp_path, ntuple)
    with pytest.raises(ConfigError, match="would clash"):
        load_config(path, ["output.probability_branch=bdt_score"])


@pytest.mark.parametrize(("override", "words"), [
    ("samples.ttbar.cut=x > 100", "sample 'ttbar': cut 'x > 100' selects no event"),
    # (a constant weight = 0 is refused by the configuration's check: audit FI; a weight
    # of 0 for every event read, by the sample's check after the read)
    ("samples.qcd.weight=x * 0", "sample 'qcd': every one of its 600 selected events has "
                                 "weight 0 (weight 'x * 0')"),
    ("samples.qcd.weight=-1", "the weights of class 'qcd' (samples qcd) sum to -600"),
])
def test_a_class_without_events_or_weight_is_one_error(tmp_path, ntuple, capsys, override,
                                                       words):
    status, out, err = run(["train", str(write_config(tmp_path, ntuple)), "--set", override],
                           capsys)
    assert status == 1 and err.startswith("hepbdt: error: ") and words in err
    assert err.count("\n") == 1


def test_train_scores_apply_summary_and_report(tmp_path, ntuple, capsys):
    path = write_config(tmp_path, ntuple)
    status, out, err = run(["train", str(path)], capsys)
    assert status == 0, err
    folder = tmp_path / "out"
    model = load_model(folder / "model.json")
    assert model.classes_.tolist() == ["qcd", "signal", "ttbar"]
    test, scores = read_scores(folder / "scores.root", "TestTree", ["x", "y"])
    assert list(scores) == [f"bdt_score_{c}" for c in model.classes_] + [
        f"bdt_prob_{c}" for c in model.classes_]
    assert read_class_names(folder / "scores.root", "TestTree") == ["qcd", "signal", "ttbar"]
    proba = model.predict_proba(test.X)
    raw = model.decision_function(test.X)
    for k, name in enumerate(model.classes_):
        np.testing.assert_allclose(scores[f"bdt_prob_{name}"], proba[:, k], rtol=1e-12)
        np.testing.assert_allclose(scores[f"bdt_score_{name}"], raw[:, k], rtol=1e-12)
    # label is the index of the sample's class in classes_ (the samples are the classes here)
    np.testing.assert_array_equal(test.y, test.sample_index)

    # The summary's numbers, against scikit-learn on the written TestTree.
    auc = roc_auc_score(test.y, proba, multi_class="ovr", average=None, sample_weight=test.w)
    for name, value in zip(model.classes_, auc, strict=True):
        assert f"  {name:20} {value:>8.4f}" in out
    fractions = sk_confusion_matrix(test.y, proba.argmax(axis=1), sample_weight=test.w,
                                    normalize="true")
    assert "  signal              " + "".join(f"{v:>8.3f}" for v in fractions[1]) in out
    assert "verdict:" in out and (folder / "summary.txt").read_text().strip() in out

    report = (folder / "report.html").read_text()
    for marker in ('id="confusion-fractions"', 'id="confusion-weights"', 'id="fig-roc"',
                   'id="fig-overtraining-2"', "AUC drop (ttbar)", 'id="overtraining-table"'):
        assert marker in report
    assert 'id="significance-table"' not in report and "<td>signal, qcd" not in report
    # 15 rounds grew a tree a class: the report counts 45 trees as rounds, as the summary does
    assert model.forest_.tree_offsets.size - 1 == 45 and model.n_trees_ == 15
    assert "gradient boosting: 15 rounds of 3 trees (" in report
    assert "boosting: 15 trees" not in report
    assert "<td>15 rounds of 3 trees</td>" in report  # the options' "trees kept" row

    # apply: the same branches, from the model alone
    friend = tmp_path / "friend.root"
    apply(folder / "model.json", f"{ntuple}:ttbar", friend, event_branch="event")
    with uproot.open(friend) as file:
        tree = file["ttbar"]
        assert tree.keys() == [*scores, "event"]
        arrays = tree.arrays(library="np")
    with uproot.open(ntuple) as file:
        X = np.column_stack([file["ttbar"][b].array(library="np") for b in ("x", "y")])
    expected = model.predict_proba(X)
    for k, name in enumerate(model.classes_):
        np.testing.assert_allclose(arrays[f"bdt_prob_{name}"], expected[:, k], rtol=1e-12)


def test_kfold_multiclass(tmp_path, ntuple, capsys):
    path = write_config(tmp_path, ntuple, extra="")
    path.write_text(path.read_text() + "[split]\nkfold = 3\n")
    status, out, err = run(["train", str(path)], capsys)
    assert status == 0, err
    assert "Per fold:" in out and "test AUC (ttbar)" in out
    # each fold's model checked on its own events, not the pooled copies against themselves
    assert "the smallest of the 3 folds' x 3 (Bonferroni)" in out
    folder = tmp_path / "out"
    test, scores = read_scores(folder / "scores.root", "TestTree", ["x", "y"])
    fold_model = load_model(folder / "model_fold1.json")
    mask = scores["fold"] == 1
    np.testing.assert_allclose(scores["bdt_prob_ttbar"][mask],
                               fold_model.predict_proba(test.X[mask])[:, 2], rtol=1e-12)
    status, _, err = run(["report", str(folder / "model.json"), str(folder / "scores.root"),
                          "--output", str(tmp_path / "again.html")], capsys)
    assert status == 0, err
    again = (tmp_path / "again.html").read_text()
    assert 'id="confusion-fractions"' in again
    # both reports carry the summary's verdict over the folds, each class's line as printed
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Overtraining ("))
    for text in ((folder / "report.html").read_text(), again):
        block = re.search(r'<pre id="kfold-overtraining">(.*?)</pre>', text, re.S)
        assert block is not None
        assert html.unescape(block.group(1)).splitlines() == lines[start:start + 5]


@pytest.mark.skipif(not MULTICLASS_DATA.is_file(), reason="../shared/data is not present")
def test_worked_example_tmva_multiclass(tmp_path, capsys):
    """analyses/multiclass/multiclass.toml, the TMVA tutorial's four classes, with fewer
    trees: every class separates from the rest."""
    status, out, err = run(["train", str(ANALYSES / "multiclass" / "multiclass.toml"),
                            "--set", "method.n_trees=100", "--output", str(tmp_path)], capsys)
    assert status == 0, err
    model = load_model(tmp_path / "model.json")
    assert model.classes_.tolist() == ["bg0", "bg1", "bg2", "signal"]
    test, scores = read_scores(tmp_path / "scores.root", "TestTree", list(model.feature_names_in_))
    assert len(test) == 4000
    auc = roc_auc_score(test.y, np.column_stack([scores[f"bdt_prob_{c}"] for c in model.classes_]),
                        multi_class="ovr", average=None, sample_weight=test.w)
    assert np.all(auc > 0.85), auc
    assert (tmp_path / "report.html").is_file()
