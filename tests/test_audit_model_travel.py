"""Audit of a fitted model's life outside its fit (2026-12-05): what its files, exports and
descriptions say after ``set_params`` changed the estimator's options since the fit.

scikit-learn's contract: ``set_params`` after a fit acts on the next fit; the fitted trees
stay. The model file, the TMVA XML and ``hepbdt inspect`` described the new options instead
of the trees (a 20-tree model at learning rate 0.1 saved as NTrees=5, Shrinkage=0.5), and a
file saved after ``set_params(boosting="adaboost")`` on a gradient model was refused at load
as "damaged or edited". The references here are the options the estimator was built with.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

import hepbdt
from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.evaluation import learning_curve

OPTIONS = "NTrees=20:MaxDepth=3:BoostType=Grad:Shrinkage=0.1:nCuts=20"


def _data(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] + rng.normal(size=n) > 0).astype(int)


def _xml_option(path, name: str) -> str:
    options = ET.parse(path).getroot().find("Options")
    return next(o.text for o in options if o.get("name") == name)


def test_files_describe_the_fitted_trees_after_set_params(tmp_path):
    """Model file, TMVA XML, option string and inspect give the fit's options; a refit the new."""
    X, y = _data()
    model = BDTClassifier.from_tmva(OPTIONS).fit(X, y)
    built = BDTClassifier.from_tmva(OPTIONS).get_params()
    score = model.decision_function(X)
    model.set_params(n_trees=5, learning_rate=0.5)
    model.save(tmp_path / "m.json")
    model.save_tmva(tmp_path / "m.weights.xml")
    loaded = hepbdt.load_model(tmp_path / "m.json")
    assert loaded.get_params() == built
    np.testing.assert_array_equal(loaded.decision_function(X), score)
    assert int(_xml_option(tmp_path / "m.weights.xml", "NTrees")) == 20 == model.forest_.n_rounds
    assert float(_xml_option(tmp_path / "m.weights.xml", "Shrinkage")) == 0.1
    assert model.to_tmva() == BDTClassifier.from_tmva(OPTIONS).to_tmva()
    shown = subprocess.run([sys.executable, "-m", "hepbdt", "inspect", str(tmp_path / "m.json")],
                           capture_output=True, text=True, check=True).stdout
    assert any(line.split() == ["n_trees", "20"] for line in shown.splitlines())
    assert any(line.split() == ["learning_rate", "0.1"] for line in shown.splitlines())
    model.fit(X, y)  # the next fit takes the new options
    assert model.forest_.n_rounds == 5
    model.save(tmp_path / "again.json")
    assert hepbdt.load_model(tmp_path / "again.json").n_trees == 5


def test_file_saved_after_another_boosting_is_set_loads(tmp_path):
    """set_params(boosting=...) after the fit: the saved file loads and scores as the model."""
    X, y = _data(seed=1)
    model = BDTClassifier(n_trees=10, max_depth=2).fit(X, y)
    expected = model.predict_proba(X)
    model.set_params(boosting="adaboost")
    model.save(tmp_path / "m.json")
    loaded = hepbdt.load_model(tmp_path / "m.json")
    assert loaded.boosting == "gradient"
    np.testing.assert_array_equal(loaded.predict_proba(X), expected)


def test_learning_curve_loss_is_the_fitted_models():
    """A regressor fitted with the squared loss is scored by the squared error after
    set_params(loss="absolute"), as numpy computes it for the final stage."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 2))
    y = 2 * X[:, 0] + rng.normal(size=600)
    model = BDTRegressor(n_trees=8, max_depth=2).fit(X[:400], y[:400])
    model.set_params(loss="absolute")
    curve = learning_curve(model, (X[:400], y[:400]), (X[400:], y[400:]))
    test_mse = np.mean((y[400:] - model.predict(X[400:])) ** 2)
    assert curve.loss_name == "squared error"
    np.testing.assert_allclose(curve.test_loss[-1], test_mse, rtol=1e-12)
