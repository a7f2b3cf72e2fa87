"""XGBoost JSON import: raw scores equal XGBoost's margins (NaN included); refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor, load_model
from hepbdt._util import model_scores
from hepbdt.interop import (
    XGBoostFormatError,
    from_tmva_xml,
    from_xgboost_json,
    tmva_response,
    to_tmva_xml,
)

xgb = pytest.importorskip("xgboost")


def _data(seed=0, n=3000, m=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] ** 2 - 0.5 * Z[:, 2] + rng.normal(size=n) > 0.7).astype(int)
    yr = 3.0 * Z[:, 0] + Z[:, 2] ** 2 + rng.normal(size=n) + 10.0
    Xt = rng.normal(scale=1.3, size=(4000, m)).astype(np.float32)
    Xt[rng.random(Xt.shape) < 0.2] = np.nan
    Xt[:20] = np.nan
    return X, y, yr, Xt


def _train(objective, tmp_path, n_trees=25, **params):
    X, y, yr, Xt = _data()
    target = yr if objective.startswith("reg") else y
    booster = xgb.train({"objective": objective, "tree_method": "hist", "max_depth": 4, "eta": 0.3,
                         "nthread": 1, **params}, xgb.DMatrix(X, target), n_trees)
    path = tmp_path / "model.json"
    booster.save_model(path)
    return booster, path, Xt


@pytest.mark.parametrize("objective", ["binary:logistic", "binary:logitraw", "reg:squarederror"])
def test_raw_score_equals_xgboost_margin(objective, tmp_path):
    booster, path, Xt = _train(objective, tmp_path)
    model = from_xgboost_json(path)
    assert isinstance(model, BDTRegressor if objective.startswith("reg") else BDTClassifier)
    ref = booster.predict(xgb.DMatrix(Xt), output_margin=True).astype(np.float64)
    got = model_scores(model, Xt)  # decision_function of a classifier, predict of a regressor
    # XGBoost sums in float32: agreement to float32 rounding of the margin.
    assert np.all(np.abs(got - ref) <= 1e-5 * np.maximum(1.0, np.abs(ref)))
    assert np.max(np.abs(got - ref)) < 1e-4
    if objective == "binary:logistic":
        np.testing.assert_allclose(model.predict_proba(Xt)[:, 1], booster.predict(xgb.DMatrix(Xt)),
                                   atol=2e-6)
    assert model.forest_.n_trees == 25
    assert list(model.feature_names_in_) == [f"f{i}" for i in range(5)]
    assert np.all(model.forest_.gain[model.forest_.feature >= 0] >= 0)


def test_feature_names_and_save_load(tmp_path):
    X, y, _, Xt = _data(1)
    names = ["pt", "eta", "phi", "mass", "dr"]
    dtrain = xgb.DMatrix(X, y, feature_names=names)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3}, dtrain, 10)
    booster.save_model(tmp_path / "m.json")
    model = from_xgboost_json(tmp_path / "m.json")
    assert list(model.feature_names_in_) == names
    model.save(tmp_path / "hep.json")
    again = load_model(tmp_path / "hep.json")
    np.testing.assert_array_equal(again.decision_function(Xt), model.decision_function(Xt))


def test_xgboost_to_tmva(tmp_path):
    booster, path, Xt = _train("binary:logistic", tmp_path, n_trees=15)
    model = from_xgboost_json(path)
    to_tmva_xml(model, tmp_path / "m.weights.xml")
    p = booster.predict(xgb.DMatrix(Xt)).astype(np.float64)
    finite = ~np.isnan(Xt).any(axis=1)  # EvaluateMVA gives -999 for an event with a NaN input
    response = tmva_response(model, Xt)
    np.testing.assert_allclose(response[finite], 2.0 * p[finite] - 1.0, atol=1e-5)
    assert np.all(response[~finite] == -999.0)
    np.testing.assert_allclose(tmva_response(from_tmva_xml(tmp_path / "m.weights.xml"), Xt),
                               tmva_response(model, Xt), atol=1e-6)


def test_unsupported_models_are_refused(tmp_path):
    X, y, _, _ = _data(2)
    cases = [
        ({"objective": "multi:softprob", "num_class": 3}, np.arange(y.size) % 3, "multi-class"),
        ({"objective": "binary:logistic", "booster": "gblinear"}, y, "'gblinear'"),
        ({"objective": "count:poisson"}, y, "objective 'count:poisson'"),
    ]
    for params, target, message in cases:
        booster = xgb.train(params, xgb.DMatrix(X, target), 3)
        booster.save_model(tmp_path / "m.json")
        with pytest.raises(XGBoostFormatError, match=message):
            from_xgboost_json(tmp_path / "m.json")


def _dart_layouts(doc):
    """The same DART model in each version's layout: XGBoost < 3.3 writes a "dart" booster
    holding the gbtree, weight_drop beside it; 3.3 a gbtree with weight_drop beside its
    model; 3.4 a gbtree whose model holds weight_drop."""
    booster = doc["learner"]["gradient_booster"]
    if booster["name"] == "dart":
        gbtree, drop = booster["gbtree"], booster["weight_drop"]
    else:
        gbtree = booster
        drop = gbtree.pop("weight_drop", None) or gbtree["model"].pop("weight_drop")
    layouts = []
    for make in (lambda g: {"name": "dart", "gbtree": g, "weight_drop": drop},
                 lambda g: {**g, "weight_drop": drop},
                 lambda g: {**g, "model": {**g["model"], "weight_drop": drop}}):
        copy = json.loads(json.dumps(doc))
        copy["learner"]["gradient_booster"] = make(json.loads(json.dumps(gbtree)))
        layouts.append(copy)
    return layouts


def _dart_files(path, tmp_path):
    """The DART model file as XGBoost wrote it, and its copies in the three layouts."""
    files = [path]
    for i, doc in enumerate(_dart_layouts(json.loads(path.read_text()))):
        files.append(tmp_path / f"layout{i}.json")
        files[-1].write_text(json.dumps(doc))
    return files


@pytest.mark.parametrize("objective", ["binary:logistic", "binary:logitraw", "reg:squarederror"])
def test_dart_models_score_as_xgboost_in_every_layout(objective, tmp_path):
    # XGBoost >= 3.3 writes DART's dropout tree weights into a "gbtree" booster; hepbdt read
    # 3.4's as a plain gbtree (probabilities off by up to 0.09), where XGBoost 3.2's "dart"
    # booster was refused: each leaf now takes its tree's weight, as XGBoost predicts
    booster, path, Xt = _train(objective, tmp_path, booster="dart", rate_drop=0.3, skip_drop=0.1)
    ref = booster.predict(xgb.DMatrix(Xt), output_margin=True).astype(np.float64)
    files = _dart_files(path, tmp_path)
    dart = json.loads(files[1].read_text())["learner"]["gradient_booster"]
    assert np.any(np.array(dart["weight_drop"]) != 1.0)  # dropout happened: weights matter
    for model in map(from_xgboost_json, files):
        scores = model_scores(model, Xt)
        assert np.all(np.abs(scores - ref) <= 1e-5 * np.maximum(1.0, np.abs(ref)))
        if objective == "binary:logistic":
            np.testing.assert_allclose(model.predict_proba(Xt)[:, 1],
                                       booster.predict(xgb.DMatrix(Xt)), atol=2e-6)


def test_early_stopped_dart_model_is_cut_as_xgboost_predicts(tmp_path):
    # the rounds up to best_iteration, each tree with its weight, in every layout (the
    # "dart" layout first looked for the rounds where a gbtree keeps them: a KeyError)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    est = xgb.XGBClassifier(booster="dart", rate_drop=0.3, n_estimators=300, learning_rate=0.3,
                            max_depth=3, n_jobs=1, early_stopping_rounds=3)
    est.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])], verbose=False)
    path = tmp_path / "m.json"
    est.save_model(path)
    assert 0 < est.best_iteration < est.get_booster().num_boosted_rounds() - 1
    for file in _dart_files(path, tmp_path):
        model = from_xgboost_json(file)
        assert model.forest_.n_trees == est.best_iteration + 1
        np.testing.assert_allclose(model.decision_function(X), est.predict(X, output_margin=True),
                                   rtol=0, atol=2e-6)


@pytest.mark.parametrize("drop, message", [
    ([1.0, 0.5], "expected 25 values"),
    ("0.5", "expected a list"),
    ([1e39] * 25, "finite float32"),
    ([None] * 25, "wrong type"),
])
def test_malformed_dart_weights_are_refused(drop, message, tmp_path):
    _, path, _ = _train("binary:logistic", tmp_path, booster="dart", rate_drop=0.3)
    for doc in _dart_layouts(json.loads(path.read_text())):
        booster = doc["learner"]["gradient_booster"]
        holder = booster.get("model") if "weight_drop" in booster.get("model", {}) else booster
        holder["weight_drop"] = drop
        path.write_text(json.dumps(doc))
        with pytest.raises(XGBoostFormatError, match=message):
            from_xgboost_json(path)


@pytest.mark.parametrize("place", ["learner_model_param", "gradient_booster", "model", "tree"])
def test_fields_of_a_later_xgboost_are_refused(place, tmp_path):
    # A field the reader does not know may carry the scores (XGBoost 3.3 put DART's tree
    # weights into a gbtree booster): refused, where it was passed over
    _, path, _ = _train("binary:logistic", tmp_path, n_trees=3)
    doc = json.loads(path.read_text())
    from_xgboost_json(path)  # as XGBoost wrote it
    learner = doc["learner"]
    holder = {"learner_model_param": learner["learner_model_param"],
              "gradient_booster": learner["gradient_booster"],
              "model": learner["gradient_booster"]["model"],
              "tree": learner["gradient_booster"]["model"]["trees"][-1]}[place]
    holder["leaf_scale"] = [0.5]
    path.write_text(json.dumps(doc))
    with pytest.raises(XGBoostFormatError, match=r"field 'leaf_scale' is not one hepbdt knows"):
        from_xgboost_json(path)


def test_categorical_splits_are_refused(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.normal(size=500),
                       "c": pd.Categorical(rng.choice(["x", "y", "z"], size=500))})
    y = ((df["c"] == "y") ^ (df["a"] > 0)).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "max_cat_to_onehot": 1},
                        xgb.DMatrix(df, y, enable_categorical=True), 3)
    booster.save_model(tmp_path / "m.json")
    with pytest.raises(XGBoostFormatError, match="categorical"):
        from_xgboost_json(tmp_path / "m.json")


def test_malformed_files_are_refused(tmp_path):
    booster, path, _ = _train("binary:logistic", tmp_path, n_trees=2)
    p = tmp_path / "bad.json"
    p.write_bytes(b"{\x00\x01 not json")
    with pytest.raises(XGBoostFormatError, match="not a JSON file"):
        from_xgboost_json(p)
    booster.save_model(tmp_path / "m.ubj")
    with pytest.raises(XGBoostFormatError, match="not a JSON file"):
        from_xgboost_json(tmp_path / "m.ubj")
    doc = json.loads(path.read_text())

    def write(mutate):
        d = json.loads(json.dumps(doc))
        mutate(d)
        p.write_text(json.dumps(d))
        return p

    tree = ("learner", "gradient_booster", "model", "trees")

    def at(d):
        for k in tree:
            d = d[k]
        return d[0]

    with pytest.raises(XGBoostFormatError, match="missing key 'learner'"):
        from_xgboost_json(write(lambda d: d.pop("learner")))
    with pytest.raises(XGBoostFormatError, match="outside"):
        from_xgboost_json(write(lambda d: at(d)["split_indices"].__setitem__(0, 99)))
    with pytest.raises(XGBoostFormatError, match="out of range or reused"):
        from_xgboost_json(write(lambda d: at(d)["left_children"].__setitem__(0, 0)))
    with pytest.raises(XGBoostFormatError, match="expected"):
        from_xgboost_json(write(lambda d: at(d)["right_children"].pop()))
    with pytest.raises(XGBoostFormatError, match="base_score"):
        from_xgboost_json(write(lambda d: d["learner"]["learner_model_param"].__setitem__("base_score", "x")))
    with pytest.raises(FileNotFoundError):
        from_xgboost_json(tmp_path / "nothing.json")
