"""Tree weights of a weighted mean that add up to a positive total at or below DBL_EPSILON.

hepbdt divides by any positive total, so its own model files load again (AdaBoost with a
tiny ``beta`` trains such trees); TMVA::Reader scores every event 0 at or below
DBL_EPSILON (``MethodBDT::PrivateGetMvaValue``), so a TMVA file of such weights is refused
on import and such a model is refused by the TMVA export. References: a weighted mean
walked here from the saved file's arrays, and the Reader's recorded scores.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from hepbdt import BDTClassifier, load_model
from hepbdt.interop import TMVAFormatError, from_tmva_xml, tmva_response
from hepbdt.interop.tmva_export import TMVAExportError

from .conftest import SHARED, tmva_inputs

TMVA_DIR = SHARED / "tmva"
needs_fixtures = pytest.mark.skipif(not (TMVA_DIR / "README.md").is_file(),
                                    reason="shared/tmva fixtures are not available")


def _tiny_beta_model() -> tuple[BDTClassifier, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
    return BDTClassifier(boosting="adaboost", beta=1e-17, n_trees=6, max_depth=2).fit(X, y), X


def _walked_mean(forest: dict, X: np.ndarray) -> np.ndarray:
    """sum_t w_t leaf_t(x) / sum_t w_t, walking the file's arrays (x < threshold: left)."""
    feature, threshold = forest["feature"], forest["threshold"]
    left, right, value = forest["left"], forest["right"], forest["value"]
    weights, offsets = forest["tree_weights"], forest["tree_offsets"]
    out = np.zeros(len(X))
    for i, x in enumerate(X):
        for t, w in enumerate(weights):
            node = offsets[t]
            while feature[node] >= 0:
                node = left[node] if float(x[feature[node]]) < threshold[node] else right[node]
            out[i] += w * value[node]
    return out / sum(weights)


def test_a_model_of_tiny_positive_tree_weights_loads_and_scores_their_mean(tmp_path):
    model, X = _tiny_beta_model()
    path = tmp_path / "m.json"
    model.save(path)
    forest = json.loads(path.read_text())["forest"]
    assert 0 < sum(forest["tree_weights"]) <= np.finfo(np.float64).eps
    loaded = load_model(path)  # refused before: 'they add up to 1.85e-16'
    np.testing.assert_allclose(loaded.decision_function(X), _walked_mean(forest, X),
                               rtol=0, atol=1e-12)


def test_the_tmva_export_refuses_tree_weights_the_reader_scores_0(tmp_path):
    model, X = _tiny_beta_model()
    assert np.ptp(model.decision_function(X)) > 1  # the Reader would answer 0 for each
    with pytest.raises(TMVAExportError, match="TMVA::Reader scores every event 0"):
        model.save_tmva(tmp_path / "m.weights.xml")


def _scaled(tmp_path, scale: float):
    text = (TMVA_DIR / "ClassExample_BDT.weights.xml").read_text()
    path = tmp_path / f"scaled_{scale}.xml"
    path.write_text(re.sub(r'boostWeight="([^"]*)"',
                           lambda m: f'boostWeight="{float(m.group(1)) * scale!r}"', text))
    return path


@needs_fixtures
def test_a_tmva_file_of_boost_weights_the_reader_scores_0_is_refused(tmp_path):
    with pytest.raises(TMVAFormatError, match=r"at most DBL_EPSILON .*scores every event 0"):
        from_tmva_xml(_scaled(tmp_path, 1e-18))  # total 1.2e-16


@needs_fixtures
def test_a_tmva_file_of_small_boost_weights_above_dbl_epsilon_scores_as_the_reader(tmp_path):
    recorded = np.loadtxt(TMVA_DIR / "ClassExample_BDT.reader.csv", delimiter=",",
                          skiprows=1, usecols=2, max_rows=300)
    got = tmva_response(from_tmva_xml(_scaled(tmp_path, 1e-14)), tmva_inputs("ClassExample_BDT")[:300])
    np.testing.assert_allclose(got, recorded, rtol=0, atol=1e-7)
