"""Audit EL (2026-12-05): damaged XGBoost JSON models, mutated one field at a time from files
the installed XGBoost wrote. Each must load to XGBoost's own margins or be refused with an
XGBoostFormatError; never load to other numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hepbdt.interop import XGBoostFormatError, from_xgboost_json

xgb = pytest.importorskip("xgboost")


def _model(tmp_path, objective="reg:squarederror", rounds=6):
    """A small XGBoost model file, its document and test inputs (NaN included)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + 1 if objective.startswith("reg") else \
        (np.nan_to_num(X[:, 0]) > 0).astype(int)
    booster = xgb.train({"objective": objective, "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y), rounds)
    path = tmp_path / "m.json"
    booster.save_model(path)
    return path, json.loads(path.read_text()), X


def _xgboost_margin(path, X):
    """XGBoost's own margins for the file, or None where XGBoost refuses it."""
    booster = xgb.Booster()
    try:
        booster.load_model(path)
    except xgb.core.XGBoostError:
        return None
    return booster.predict(xgb.DMatrix(X), output_margin=True)


def _hepbdt_margin(path, X):
    model = from_xgboost_json(path)
    return model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)


@pytest.mark.parametrize("text", ["1_0", "0.2_5", "[1_0]", "\u0661.\u0665", "[,0.5]"])
def test_base_score_text_python_reads_otherwise_is_refused(text, tmp_path):
    # Python's float takes "1_0" as 10.0; XGBoost reads 1 (its margins 9 below hepbdt's were)
    path, doc, X = _model(tmp_path)
    doc["learner"]["learner_model_param"]["base_score"] = text
    path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match="base_score .* is not a number"):
        _hepbdt_margin(path, X)


def test_base_score_underscore_is_not_what_xgboost_reads(tmp_path):
    # the reference: XGBoost reads "1_0" as 1, not as Python's 10
    path, doc, X = _model(tmp_path)
    doc["learner"]["learner_model_param"]["base_score"] = "1E0"
    path.write_text(json.dumps(doc))
    one = _xgboost_margin(path, X)
    doc["learner"]["learner_model_param"]["base_score"] = "1_0"
    path.write_text(json.dumps(doc))
    np.testing.assert_allclose(_xgboost_margin(path, X), one, rtol=0, atol=1e-6)


@pytest.mark.parametrize("key, text", [("num_feature", "\u0664"), ("num_class", "0_0")])
def test_integer_text_python_reads_otherwise_is_refused(key, text, tmp_path):
    path, doc, X = _model(tmp_path)
    doc["learner"]["learner_model_param"][key] = text
    path.write_text(json.dumps(doc))
    assert _xgboost_margin(path, X) is None  # XGBoost refuses these
    with pytest.raises(XGBoostFormatError, match="is not an integer"):
        _hepbdt_margin(path, X)


def test_base_score_texts_xgboost_writes_still_load(tmp_path):
    path, doc, X = _model(tmp_path)
    for text in ["5E-1", "[5E-1]", "[5E-1,]", " 0.5", "1e-40", "-0.0"]:
        doc["learner"]["learner_model_param"]["base_score"] = text
        path.write_text(json.dumps(doc))
        np.testing.assert_allclose(_hepbdt_margin(path, X), _xgboost_margin(path, X),
                                   rtol=1e-6, atol=1e-6)


def _drop_trees(doc, keep):
    """The document with only its first ``keep`` trees, the rest of the file unchanged."""
    model = doc["learner"]["gradient_booster"]["model"]
    model["trees"] = model["trees"][:keep]
    model["tree_info"] = model["tree_info"][:keep]
    return model


@pytest.mark.parametrize("also_indptr", [False, True])
def test_trees_lost_from_the_list_are_refused(also_indptr, tmp_path):
    # 4 of 6 trees left, num_trees still 6: XGBoost refuses; hepbdt scored the 4
    path, doc, X = _model(tmp_path)
    model = _drop_trees(doc, 4)
    if also_indptr:
        model["iteration_indptr"] = model["iteration_indptr"][:5]
    path.write_text(json.dumps(doc))
    assert _xgboost_margin(path, X) is None
    with pytest.raises(XGBoostFormatError, match="num_trees=6 but the file holds 4 trees"):
        _hepbdt_margin(path, X)


def test_rounds_that_do_not_split_the_trees_are_refused_without_early_stopping(tmp_path):
    path, doc, X = _model(tmp_path)
    doc["learner"]["gradient_booster"]["model"]["iteration_indptr"][-1] = 7
    path.write_text(json.dumps(doc))
    assert _xgboost_margin(path, X) is None
    with pytest.raises(XGBoostFormatError, match="iteration_indptr does not split"):
        _hepbdt_margin(path, X)


def test_trees_listed_out_of_id_order_are_refused(tmp_path):
    # XGBoost places each tree by its id; an early-stopped model whose last tree is listed
    # first kept that tree (and lost the first) under hepbdt's cut at best_iteration
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    est = xgb.XGBClassifier(n_estimators=40, learning_rate=0.5, max_depth=4, n_jobs=1,
                            early_stopping_rounds=2)
    est.fit(X[:200], y[:200], eval_set=[(X[200:], rng.integers(0, 2, 200))], verbose=False)
    path = tmp_path / "m.json"
    est.save_model(path)
    doc = json.loads(path.read_text())
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    assert est.best_iteration < len(trees) - 1
    trees[0], trees[-1] = trees[-1], trees[0]
    path.write_text(json.dumps(doc))
    reloaded = xgb.XGBClassifier()
    try:  # XGBoost 3.2 places each tree by its id; 3.4 refuses the file
        reloaded.load_model(path)
    except xgb.core.XGBoostError:
        reference = None
    else:
        reference = reloaded.predict(X, output_margin=True)
        np.testing.assert_allclose(reference, est.predict(X, output_margin=True), rtol=0,
                                   atol=1e-6)
    try:
        margin = _hepbdt_margin(path, X)
    except XGBoostFormatError as exc:
        assert "has id=" in str(exc)
    else:
        assert reference is not None, "hepbdt read a file XGBoost refuses"
        np.testing.assert_allclose(margin, reference, rtol=0, atol=2e-6)


@pytest.mark.parametrize("xgboost_1_layout", [False, True])
def test_model_of_zero_rounds_is_refused(xgboost_1_layout, tmp_path):
    # Audit EP (2026-12-05): a booster trained for 0 rounds; XGBoost's margin is base_score
    # itself (0.5), not its logit (0): hepbdt read 0 from a file without iteration_indptr
    # (the layout of XGBoost < 2), and refused XGBoost 3's own file for a wrong reason
    path, doc, X = _model(tmp_path, "binary:logistic", rounds=0)
    np.testing.assert_array_equal(_xgboost_margin(path, X), np.full(len(X), 0.5, np.float32))
    if xgboost_1_layout:
        del doc["learner"]["gradient_booster"]["model"]["iteration_indptr"]
        path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match=r"no trees \(trained for 0 rounds\)"):
        _hepbdt_margin(path, X)
