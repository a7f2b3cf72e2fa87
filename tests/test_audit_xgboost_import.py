"""Audit of the XGBoost JSON import against XGBoost itself: the binary:logistic base margin
(computed in float32, bounded as XGBoost >= 3.2 does) and early-stopped models (cut at
best_iteration, as XGBoost's scikit-learn predict)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hepbdt._util import model_scores
from hepbdt.interop import XGBoostFormatError, from_xgboost_json

xgb = pytest.importorskip("xgboost")
XGB_VERSION = tuple(int(p) for p in xgb.__version__.split(".")[:2] if p.isdigit())


def _data(seed=0, n=600, m=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n) > 0.2).astype(int)
    return X, y


def _base_margin_model(tmp_path, base_score=None, y=None):
    """A binary:logistic model whose margin is its base margin alone (eta=0: zero leaves)."""
    X, y0 = _data()
    params = {"objective": "binary:logistic", "eta": 0.0, "max_depth": 1, "nthread": 1}
    if base_score is not None:
        params["base_score"] = base_score
    booster = xgb.train(params, xgb.DMatrix(X, y0 if y is None else y), 2)
    path = tmp_path / "m.json"
    booster.save_model(path)
    return booster, path, X


@pytest.mark.parametrize("base_score", [0.99999, 1e-5, 0.7, 0.999])
def test_logistic_base_margin_is_xgboosts_float32_logit(base_score, tmp_path):
    # 0.99999 is 0.99998999 in float32: its logit is 11.51157, not the 11.51292 of the
    # decimal (1.3e-3 off before the fix, 0.07 for 0.999999).
    booster, path, X = _base_margin_model(tmp_path, base_score)
    ref = booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    model = from_xgboost_json(path)
    np.testing.assert_allclose(model.decision_function(X), ref, rtol=2e-7, atol=0)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], booster.predict(xgb.DMatrix(X)),
                               rtol=1e-6)


@pytest.mark.skipif(XGB_VERSION < (3, 2), reason="XGBoost >= 3.2 bounds base_score")
@pytest.mark.parametrize("base_score", [1e-7, 0.9999999])
def test_logistic_base_score_bounded_as_xgboost_3_2(base_score, tmp_path):
    # XGBoost 3.2 bounds base_score to [1e-6, 1 - 1e-6]: 1e-7 gives margin -13.8155, not
    # -16.1181 (2.3 off before the fix).
    booster, path, X = _base_margin_model(tmp_path, base_score)
    ref = booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    np.testing.assert_allclose(from_xgboost_json(path).decision_function(X), ref, rtol=2e-7)


@pytest.mark.skipif(XGB_VERSION < (3, 2), reason="XGBoost >= 3.2 writes base_score 0 or 1")
@pytest.mark.parametrize("label", [0, 1])
def test_constant_labels_read(label, tmp_path):
    # All labels equal: XGBoost stores base_score 0 (or 1) and predicts; it was refused.
    X, _ = _data()
    booster, path, X = _base_margin_model(tmp_path, y=np.full(len(X), label))
    doc = json.loads(path.read_text())
    assert float(doc["learner"]["learner_model_param"]["base_score"].strip("[]")) == label
    model = from_xgboost_json(path)
    ref = booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    np.testing.assert_allclose(model.decision_function(X), ref, rtol=2e-7)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], booster.predict(xgb.DMatrix(X)),
                               atol=1e-9)


def test_base_score_near_0_or_1_follows_writer_version(tmp_path):
    _, path, _ = _base_margin_model(tmp_path, 0.5)
    doc = json.loads(path.read_text())
    doc["learner"]["learner_model_param"]["base_score"] = "[1E-7]"
    p = tmp_path / "v.json"
    doc["version"] = [2, 1, 4]  # no bound before 3.2: -logf(1/1e-7 - 1)
    p.write_text(json.dumps(doc))
    assert from_xgboost_json(p).forest_.base_score == pytest.approx(-16.118095, abs=2e-6)
    doc["version"] = [3, 2, 0]
    p.write_text(json.dumps(doc))
    assert from_xgboost_json(p).forest_.base_score == pytest.approx(-13.815510, abs=2e-6)
    doc.pop("version")
    p.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match="which version wrote it"):
        from_xgboost_json(p)


@pytest.mark.parametrize("estimator", ["XGBClassifier", "XGBRegressor"])
def test_early_stopped_model_predicts_with_best_iteration(estimator, tmp_path):
    X, y = _data(1, n=1200)
    target = y if estimator == "XGBClassifier" else np.nan_to_num(X[:, 0]) + 0.1 * y
    est = getattr(xgb, estimator)(n_estimators=200, learning_rate=0.8, max_depth=6, n_jobs=1,
                                  num_parallel_tree=2, subsample=0.8, early_stopping_rounds=3)
    est.fit(X[:600], target[:600], eval_set=[(X[600:], target[600:])], verbose=False)
    rounds = est.get_booster().num_boosted_rounds()
    assert est.best_iteration + 1 < rounds  # early stopping kept trees after the best round
    est.save_model(tmp_path / "es.json")
    model = from_xgboost_json(tmp_path / "es.json")
    assert model.forest_.n_trees == 2 * (est.best_iteration + 1)
    assert "best_iteration" in model.n_trees_reason_
    ref = est.predict(X, output_margin=True).astype(np.float64)  # best_iteration + 1 rounds
    np.testing.assert_allclose(model_scores(model, X), ref, atol=1e-5)
    if estimator == "XGBClassifier":
        np.testing.assert_allclose(model.predict_proba(X), est.predict_proba(X), atol=1e-6)
        np.testing.assert_array_equal(model.predict(X), est.predict(X))
    every = from_xgboost_json(tmp_path / "es.json", use_best_iteration=False)
    assert every.forest_.n_trees == 2 * rounds
    all_trees = est.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(model_scores(every, X), all_trees, atol=1e-5)


def test_bad_best_iteration_refused(tmp_path):
    _, path, _ = _base_margin_model(tmp_path, 0.5)
    doc = json.loads(path.read_text())
    for value in ("2", "-1", "x"):
        doc["learner"]["attributes"] = {"best_iteration": value}
        path.write_text(json.dumps(doc))
        with pytest.raises(XGBoostFormatError, match="best_iteration"):
            from_xgboost_json(path)
