"""Audit EH (2026-12-05): model files damaged or edited by mutation load as the model that
was saved or are refused; never a model that scores other numbers without complaint."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hepbdt
from hepbdt.model import ModelFormatError
from hepbdt.persistence import load_model

RNG = np.random.default_rng(5)
X = RNG.normal(size=(300, 3)).astype(np.float32)
Y = (X[:, 0] + 0.5 * X[:, 2] + RNG.normal(size=300) > 0).astype(int)


def _saved(tmp_path, model):
    path = tmp_path / "m.json"
    model.save(path)
    return path, json.loads(path.read_text())


def _write(tmp_path, doc):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("key", ["base_score", "aggregation"])
@pytest.mark.parametrize("kind", ["regressor", "adaboost"])
def test_a_forest_without_its_base_score_or_aggregation_is_refused(tmp_path, kind, key):
    if kind == "regressor":
        model = hepbdt.BDTRegressor(n_trees=3, max_depth=2).fit(X, 2 * X[:, 0] + 1)
    else:
        model = hepbdt.BDTClassifier(boosting="adaboost", n_trees=3, max_depth=2).fit(X, Y)
    path, doc = _saved(tmp_path, model)
    # the file as saved scores as the model did
    again = load_model(path)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    del doc["forest"][key]
    with pytest.raises(ModelFormatError, match=key):
        load_model(_write(tmp_path, doc))


def _newton():
    return hepbdt.BDTClassifier(boosting="newton", n_trees=3, max_depth=2).fit(X, Y)


def _purity_adaboost():
    return hepbdt.BDTClassifier(boosting="adaboost", use_yes_no_leaf=False, n_trees=3,
                                max_depth=2).fit(X, Y)


def _realadaboost():
    return hepbdt.BDTClassifier(boosting="realadaboost", n_trees=3, max_depth=2).fit(X, Y)


def _set(path, value):
    def edit(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return edit


@pytest.mark.parametrize("make, edit", [
    (_newton, _set(("forest", "extra", "loss"), KeyError)),  # P = 1/(1+e^-2F), not e^-F
    (_newton, _set(("forest", "extra", "loss"), "deviance")),
    (_newton, _set(("forest", "aggregation"), "weighted_mean")),
    (_purity_adaboost, _set(("forest", "extra", "score_min"), KeyError)),  # clip [-1, 1]
    (_purity_adaboost, _set(("forest", "extra", "score_min"), -1.0)),
    (_purity_adaboost, _set(("forest", "aggregation"), "sum")),
    (_realadaboost, _set(("forest", "extra", "loss"), "logistic")),
    (_realadaboost, _set(("forest", "aggregation"), "weighted_mean")),
])
def test_a_forest_whose_link_contradicts_its_params_is_refused(tmp_path, make, edit):
    model = make()
    path, doc = _saved(tmp_path, model)
    np.testing.assert_array_equal(load_model(path).predict_proba(X), model.predict_proba(X))
    edit(doc)
    with pytest.raises(ModelFormatError, match="probability link"):
        load_model(_write(tmp_path, doc))


def test_a_link_the_params_give_still_loads(tmp_path):
    """Entries that do not change the link (a realadaboost's loss named deviance: both
    1/(1+e^-2F)) load and score as saved."""
    model = _realadaboost()
    path, doc = _saved(tmp_path, model)
    doc["forest"]["extra"]["loss"] = "deviance"
    p = model.decision_function(X)
    np.testing.assert_array_equal(load_model(_write(tmp_path, doc)).predict_proba(X)[:, 1],
                                  1.0 / (1.0 + np.exp(-2.0 * p)))


@pytest.mark.parametrize("attribute", ["pos", "depth"])
@pytest.mark.parametrize("node", [".//BinaryTree/Node", ".//BinaryTree/Node/Node"])
def test_a_tmva_node_without_pos_or_depth_is_refused(tmp_path, attribute, node):
    """TMVA::Reader stops at such a node ('Trying to read non-existing attribute'; checked
    with the real Reader in test_tmva_reader.py); from_tmva_xml loaded and scored it."""
    import xml.etree.ElementTree as ET

    from hepbdt.interop import from_tmva_xml

    model = hepbdt.BDTClassifier(boosting="adaboost", n_trees=2, max_depth=2).fit(X, Y)
    path = tmp_path / "m.weights.xml"
    model.save_tmva(path)
    tree = ET.parse(path)
    del tree.getroot().find(node).attrib[attribute]
    tree.write(path)
    with pytest.raises(ModelFormatError, match=f"lacks \\['{attribute}'\\]|pos='l'"):
        from_tmva_xml(path)


def test_a_best_iteration_beyond_the_rounds_evaluated_is_refused(tmp_path):
    """A damaged best_iteration of 10**12 loaded and the report printed it; the rounds the
    model grew or evaluated (its validation loss) bound it. The fit's own value loads."""
    model = hepbdt.BDTClassifier(n_trees=30, early_stopping=True, n_iter_no_change=3,
                                 validation_fraction=0.3, random_state=0).fit(X, Y)
    path, doc = _saved(tmp_path, model)
    assert load_model(path).best_iteration_ == model.best_iteration_ < len(doc["validation_loss"])
    for bad in (10**12, len(doc["validation_loss"])):
        doc["best_iteration"] = bad
        with pytest.raises(ModelFormatError, match="best_iteration .* beyond the"):
            load_model(_write(tmp_path, doc))


def test_a_validation_loss_that_is_no_list_is_refused_before_it_is_counted(tmp_path):
    """The best_iteration check counted len(validation_loss) first: a number there ended
    in a TypeError, not the file's error."""
    model = hepbdt.BDTClassifier(n_trees=5, random_state=0).fit(X, Y)
    _, doc = _saved(tmp_path, model)
    doc["validation_loss"] = 5
    with pytest.raises(ModelFormatError, match="validation_loss must be a list"):
        load_model(_write(tmp_path, doc))
