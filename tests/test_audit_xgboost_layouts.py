"""Audit of the XGBoost JSON import against XGBoost itself, for the layouts of older XGBoost
versions: a model of several trees a round (num_parallel_tree) written by XGBoost 1.4 or 1.5,
early-stopped or not (1.5 records best_iteration in every model), whose model does not say
the rounds' size (only best_ntree_limit does),
and a binary:logitraw model of XGBoost < 1.3.1, whose base_score is a probability.

The files in ``data/xgboost`` and their margins were written by XGBoost 1.5.2 and 1.0.2
(``data/xgboost/make_xgboost_*.py``). XGBoost sums the trees in float32 and hepbdt
in float64: the two agree to a few float32 steps of the margin (bound 2e-6 at |margin| < 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hepbdt.interop import XGBoostFormatError, from_xgboost_json

DATA = Path(__file__).parent / "data" / "xgboost"


def _fixture():
    ref = json.loads((DATA / "early_stopped_forest_1_5_2.margins.json").read_text())
    X = np.array([[np.nan if v is None else v for v in row] for row in ref["X"]], dtype=np.float32)
    return ref, X


def test_xgboost_1_5_forest_is_cut_at_best_ntree_limit():
    # Two trees a round, best_iteration=14: XGBoost predicts with 30 trees; hepbdt kept 15
    # (rounds taken as one tree each), 0.88 off the margin.
    ref, X = _fixture()
    model = from_xgboost_json(DATA / "early_stopped_forest_1_5_2.json")
    assert model.forest_.n_trees == ref["best_ntree_limit"] == 2 * (ref["best_iteration"] + 1)
    np.testing.assert_allclose(model.decision_function(X), ref["best_margin"], rtol=0, atol=2e-6)
    every = from_xgboost_json(DATA / "early_stopped_forest_1_5_2.json", use_best_iteration=False)
    np.testing.assert_allclose(every.decision_function(X), ref["every_margin"], rtol=0, atol=2e-6)



def test_xgboost_1_5_forest_without_early_stopping_keeps_every_tree():
    # XGBoost 1.5 records best_iteration (the last round) in every model: a forest of three
    # trees a round lost two thirds of its trees: 4 of 12 kept, 1.17 off the margin.
    ref = json.loads((DATA / "forest_1_5_2.margins.json").read_text())
    X = np.array([[np.nan if v is None else v for v in row] for row in ref["X"]], dtype=np.float32)
    model = from_xgboost_json(DATA / "forest_1_5_2.json")
    assert model.forest_.n_trees == 12
    np.testing.assert_allclose(model.decision_function(X), ref["margin"], rtol=0, atol=2e-6)

def _as_old_layout(doc: dict, best_ntree_limit: int | None) -> dict:
    """An XGBoost >= 2 model file rewritten to the layout of XGBoost 1.4-1.5 (no
    iteration_indptr, no num_parallel_tree; best_ntree_limit given) or < 1.4 (None: neither)."""
    model = doc["learner"]["gradient_booster"]["model"]
    model.pop("iteration_indptr", None)
    model["gbtree_model_param"].pop("num_parallel_tree", None)
    attributes = doc["learner"]["attributes"]
    attributes.pop("best_ntree_limit", None)
    if best_ntree_limit is None:
        doc["version"] = [1, 3, 3]
    else:
        doc["version"] = [1, 5, 2]
        attributes["best_ntree_limit"] = str(best_ntree_limit)
    return doc


def test_rounds_of_an_unrecorded_size_follow_best_ntree_limit_or_are_refused(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1200, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=1200) > 0).astype(int)
    est = xgb.XGBClassifier(n_estimators=100, learning_rate=0.3, max_depth=3, n_jobs=1,
                            num_parallel_tree=3, subsample=0.7, early_stopping_rounds=3)
    est.fit(X[:600], y[:600], eval_set=[(X[:600], y[:600]), (X[600:], y[600:])], verbose=False)
    assert est.best_iteration + 1 < est.get_booster().num_boosted_rounds()
    est.save_model(tmp_path / "new.json")
    doc = json.loads((tmp_path / "new.json").read_text())
    limit = 3 * (est.best_iteration + 1)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_as_old_layout(doc, limit)))
    model = from_xgboost_json(path)
    assert model.forest_.n_trees == limit
    np.testing.assert_allclose(model.decision_function(X), est.predict(X, output_margin=True),
                               rtol=0, atol=2e-6)
    np.testing.assert_allclose(model.predict_proba(X), est.predict_proba(X), rtol=0, atol=1e-6)

    path.write_text(json.dumps(_as_old_layout(doc, limit - 1)))
    with pytest.raises(XGBoostFormatError, match="best_ntree_limit=.* is not the tree count"):
        from_xgboost_json(path)
    path.write_text(json.dumps(_as_old_layout(doc, None)))
    with pytest.raises(XGBoostFormatError, match="use_best_iteration=False"):
        from_xgboost_json(path)
    every = from_xgboost_json(path, use_best_iteration=False)
    all_trees = est.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(every.decision_function(X), all_trees, rtol=0, atol=2e-6)


def test_best_ntree_limit_that_contradicts_the_rounds_is_refused(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    booster = xgb.train({"objective": "binary:logistic", "num_parallel_tree": 2, "nthread": 1},
                        xgb.DMatrix(X, (X[:, 0] > 0).astype(int)), 4)
    doc = json.loads(booster.save_raw("json"))
    doc["learner"]["attributes"] = {"best_iteration": "1", "best_ntree_limit": "2"}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match="best_ntree_limit=2"):
        from_xgboost_json(path)
    doc["learner"]["attributes"]["best_ntree_limit"] = "4"  # rounds 0 and 1 of two trees
    path.write_text(json.dumps(doc))
    assert from_xgboost_json(path).forest_.n_trees == 4


def test_logitraw_base_score_of_xgboost_before_1_3_1_is_a_probability():
    # XGBoost 1.0.2 took binary:logitraw's base_score 0.5 as the margin logit(0.5) = 0
    # (XGBoost >= 1.3.1 as the margin 0.5): hepbdt's margin was 0.5 above 1.0.2's.
    ref = json.loads((DATA / "logitraw_1_0_2.margins.json").read_text())
    X = np.array([[np.nan if v is None else v for v in row] for row in ref["X"]], dtype=np.float32)
    model = from_xgboost_json(DATA / "logitraw_1_0_2.json")
    np.testing.assert_allclose(model.decision_function(X), ref["margin"], rtol=0, atol=1e-6)


def test_logitraw_base_score_follows_the_writers_version(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    booster = xgb.train({"objective": "binary:logitraw", "base_score": 0.8, "eta": 0.0,
                         "nthread": 1}, xgb.DMatrix(X, y), 2)  # eta 0: the margin is the base
    doc = json.loads(booster.save_raw("json"))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    ref = booster.predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(from_xgboost_json(path).decision_function(X), ref, rtol=0, atol=1e-7)
    doc["version"] = [1, 2, 1]  # logit(0.8) in float32, as XGBoost 1.2's ProbToMargin
    path.write_text(json.dumps(doc))
    np.testing.assert_allclose(from_xgboost_json(path).decision_function(X),
                               np.float32(np.log(np.float32(4.0))), rtol=0, atol=1e-7)
    doc.pop("version")
    path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match="which XGBoost version"):
        from_xgboost_json(path)


def test_an_xgboost_file_given_to_the_command_line_names_the_reader(tmp_path, capsys):
    xgb = pytest.importorskip("xgboost")
    from hepbdt.cli import main

    X = np.random.default_rng(8).normal(size=(200, 2)).astype(np.float32)
    booster = xgb.train({"objective": "binary:logistic", "nthread": 1},
                        xgb.DMatrix(X, (X[:, 0] > 0).astype(int)), 2)
    booster.save_model(tmp_path / "xgb.json")
    assert main(["export", str(tmp_path / "xgb.json"), "--onnx", str(tmp_path / "m.onnx")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hepbdt: error: ")
    assert "from_xgboost_json" in err[0]


def test_one_round_and_a_best_last_round_keep_every_tree(tmp_path):
    """A model of one round (iteration_indptr [0, 2]) and an XGBoost 1.6-1.7 layout (rounds
    from num_parallel_tree, no iteration_indptr) early-stopped at its last round are read
    whole, with XGBoost's own margins; a round size of 0 is refused (audit GD: two surviving
    mutants of the round ends)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    params = {"objective": "binary:logistic", "num_parallel_tree": 2, "nthread": 1}
    for rounds in (1, 3):
        booster = xgb.train(params, xgb.DMatrix(X, (X[:, 0] > 0).astype(int)), rounds)
        doc = json.loads(booster.save_raw("json"))
        model = doc["learner"]["gradient_booster"]["model"]
        assert model["iteration_indptr"] == list(range(0, 2 * rounds + 1, 2))
        if rounds == 3:
            model.pop("iteration_indptr")
            doc["version"] = [1, 7, 6]
            doc["learner"]["attributes"] = {"best_iteration": "2", "best_ntree_limit": "6"}
        path = tmp_path / f"m{rounds}.json"
        path.write_text(json.dumps(doc))
        read = from_xgboost_json(path)
        assert read.forest_.n_trees == 2 * rounds
        np.testing.assert_allclose(read.decision_function(X),
                                   booster.predict(xgb.DMatrix(X), output_margin=True),
                                   rtol=0, atol=2e-6)
    model["gbtree_model_param"]["num_parallel_tree"] = "0"  # no round size: refused, not / 0
    path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match="not rounds of num_parallel_tree=0"):
        from_xgboost_json(path)
