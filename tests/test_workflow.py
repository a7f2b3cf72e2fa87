"""Training workflows: k-fold by event number (no event is scored by a model that trained on
it), the k-fold manifest and report, regression outputs, a refused TMVA export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.analysis import load_config, report_from_scores, train
from hepbdt.kfold import KFoldModel
from hepbdt.persistence import load_model as load
from hepbdt.scoring import apply

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "analyses" / "demo.toml"
DATA = ROOT / "data"
FEW = ["preselection='(nJet >= 2) & (event % 5 == 0)'", "method.n_trees=15"]


@pytest.fixture(scope="module")
def kfold(tmp_path_factory):
    out = tmp_path_factory.mktemp("kfold")
    config = load_config(DEMO, [*FEW, "split.kfold=3", "output.figures=false"], output=out)
    return train(config)


def test_no_event_is_scored_by_a_model_that_trained_on_it(kfold):
    out = kfold.output_dir
    model = load(out / "model.json")
    assert isinstance(model, KFoldModel) and model.k == 3 and model.by == "event"
    with uproot.open(out / "scores.root") as file:
        train_tree = file["TrainTree"].arrays(library="np")
        test_tree = file["TestTree"].arrays(library="np")
    events = test_tree["event"]
    assert len(np.unique(events)) == len(events)  # every event scored once
    np.testing.assert_array_equal(test_tree["fold"], np.mod(events, 3))
    X = np.column_stack([test_tree[name] for name in list(test_tree)[:11]])
    for i, fold_model in enumerate(model.models):
        trained_on = train_tree["event"][train_tree["fold"] == i]
        # Model i trained on exactly the events of the other folds ...
        assert np.all(np.mod(trained_on, 3) != i)
        assert set(trained_on.tolist()) == set(events[np.mod(events, 3) != i].tolist())
        # ... and every event it scored is one it never saw.
        scored = np.mod(events, 3) == i
        assert not np.isin(events[scored], trained_on).any()
        np.testing.assert_array_equal(fold_model.decision_function(X[scored]),
                                      test_tree["bdt_score"][scored])
    np.testing.assert_array_equal(model.decision_function(X, events), test_tree["bdt_score"])


def test_kfold_manifest_apply_and_report(kfold, tmp_path):
    out = kfold.output_dir
    manifest = json.loads((out / "model.json").read_text())
    assert manifest["kind"] == "kfold" and manifest["k"] == 3 and manifest["by"] == "event"
    assert manifest["models"] == [f"model_fold{i}.json" for i in range(3)]
    assert all((out / f"model_fold{i}.weights.xml").is_file() for i in range(3))
    model = load(out / "model.json")
    assert type(hepbdt.load_model(out / "model.json")) is type(model)  # one loader for both kinds
    friend = tmp_path / "friend.root"
    apply(out / "model.json", str(DATA / "background_ttbar.root"), friend, event_branch=model.by)
    with uproot.open(friend) as file:
        applied = file["Events"].arrays(library="np")
    with uproot.open(out / "scores.root") as file:
        test = file["TestTree"].arrays(["event", "bdt_score"], library="np")
    score_of = dict(zip(applied["event"].tolist(), applied["bdt_score"].tolist(), strict=True))
    ttbar = test["event"] >= 3_000_000
    np.testing.assert_array_equal([score_of[e] for e in test["event"][ttbar].tolist()],
                                  test["bdt_score"][ttbar])

    text = (out / "report.html").read_text()
    assert '<table id="kfold-table">' in text and 'id="fig-kfold-roc"' in text
    assert text.count("<tr><td>") >= 4  # a row per fold and the mean
    assert "Per fold:" in kfold.summary and "over 3 folds" in kfold.summary
    again = report_from_scores(out / "model.json", out / "scores.root", tmp_path / "r.html")
    assert '<table id="kfold-table">' in again.read_text()


def test_regression_workflow(tmp_path):
    config_text = (ROOT / "analyses" / "regression" / "mass_regression.toml").read_text()
    config_text = config_text.replace('"../../data/', f'"{DATA}/')
    path = tmp_path / "regression.toml"
    path.write_text(config_text)
    config = load_config(path, ["preselection='(nJet >= 2) & (mjj > 30) & (event % 10 == 0)'",
                                "method.n_trees=10", "output.report=false"], output=tmp_path)
    result = train(config)
    assert config.task == "regression"
    with uproot.open(tmp_path / "scores.root") as file:
        test = file["TestTree"].arrays(["target", "bdt_score", "mjj"], library="np")
    np.testing.assert_allclose(test["target"], result.test.y)
    assert "RMSE" in result.summary and "resolution" in result.summary
    assert (tmp_path / "figures" / "predicted_vs_true.png").is_file()
    assert (tmp_path / "figures" / "resolution.png").is_file()


def test_refused_tmva_export_is_a_warning(tmp_path, monkeypatch):
    import hepbdt.analysis.outputs

    def refuse(model, path, **options):
        raise ValueError("this model has no TMVA equivalent")

    monkeypatch.setattr(hepbdt.analysis.outputs, "to_tmva_xml", refuse)
    config = load_config(DEMO, [*FEW, "method.n_trees=3", "output.report=false",
                                "output.figures=false"], output=tmp_path)
    result = train(config)
    assert not (tmp_path / "model.weights.xml").exists()
    assert "warning: no TMVA XML written: this model has no TMVA equivalent" in result.summary
    assert (tmp_path / "model.json").is_file() and (tmp_path / "scores.root").is_file()
