"""Multi-class gradient and newton boosting against XGBoost's and scikit-learn's."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hepbdt
from hepbdt.estimators import ParameterError
from hepbdt.model import ModelFormatError

from .test_xgboost_equivalence import _compare_tree

xgb = pytest.importorskip("xgboost")
sk_ensemble = pytest.importorskip("sklearn.ensemble")
sk_tree = pytest.importorskip("sklearn.tree")


def _data(seed=0, n=3000, m=5, k=4):
    """Integer-valued features (every library cuts between the same values) and k classes."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n, m)).astype(np.float32)
    logits = np.stack([0.5 * (X[:, 0] - 5.5) * (c - 1.5) + 0.4 * (X[:, c % m] > 6 + c % 3)
                       - 0.3 * np.abs(X[:, (c + 1) % m] - 6) * (c == 2) for c in range(k)], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return X, y, w


PARAMS = dict(max_depth=3, learning_rate=0.3, reg_lambda=1.5, min_child_weight=0.5)


def test_newton_softmax_matches_xgboost_softprob():
    # XGBoost's hessian is 2 p (1 - p), ours c p (1 - p) with c = K/(K-1): with lambda and
    # min_child_weight times 2/c, XGBoost's gains are ours times c/2 (the same splits) and
    # its leaves ours times c/2 at the same learning rate, so equal at 2/c times the rate.
    X, y, w = _data()
    rounds, c = 15, 4 / 3
    ours = hepbdt.BDTClassifier(boosting="newton", n_trees=rounds, **PARAMS).fit(X, y, w)
    base = np.asarray(ours.forest_.extra["base_scores"])
    scaled = dict(PARAMS, learning_rate=PARAMS["learning_rate"] * 2 / c,
                  reg_lambda=PARAMS["reg_lambda"] * 2 / c,
                  min_child_weight=PARAMS["min_child_weight"] * 2 / c)
    theirs = xgb.XGBClassifier(tree_method="hist", n_estimators=rounds, max_bin=256, n_jobs=1,
                               objective="multi:softprob", **scaled)
    theirs.fit(X, y, sample_weight=w, base_margin=np.tile(base, (X.shape[0], 1)))
    dumps = [json.loads(d) for d in theirs.get_booster().get_dump(dump_format="json")]
    values = np.arange(12, dtype=np.float32)
    forest = ours.forest_
    assert forest.n_classes == 4 and forest.n_trees == 4 * rounds
    for r in (0, 1, rounds - 1):  # XGBoost keeps the trees round by round, ours class by class
        for k in range(4):
            root = forest.tree_offsets[k * rounds + r]
            assert _compare_tree(forest, root, dumps[r * 4 + k], values) >= 2
    margin = theirs.get_booster().predict(
        xgb.DMatrix(X, base_margin=np.tile(base, (X.shape[0], 1))), output_margin=True)
    np.testing.assert_allclose(ours.decision_function(X), margin, atol=1e-4)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(
        X, base_margin=np.tile(base, (X.shape[0], 1))), atol=1e-5)


def test_gradient_multiclass_is_friedmans_treeboost_as_scikit_learn():
    # scikit-learn's GradientBoostingClassifier: K regression trees a round on the residuals
    # y_k - p_k, leaves (K-1)/K sum r / sum |r|(1-|r|): the same probabilities.
    X, y, w = _data(seed=1, k=3)
    ours = hepbdt.BDTClassifier(boosting="gradient", n_trees=20, max_depth=3,
                                learning_rate=0.2, min_node_size=0).fit(X, y, w)
    theirs = sk_ensemble.GradientBoostingClassifier(n_estimators=20, max_depth=3,
                                                    learning_rate=0.2, random_state=0)
    theirs.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=2e-5)
    assert np.array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.parametrize(("max_depth", "max_leaves"), [(3, None), (None, 8)])
def test_adaboost_multiclass_is_samme_as_scikit_learn(max_depth, max_leaves):
    # scikit-learn's AdaBoostClassifier (SAMME) of DecisionTreeClassifier on the multi-class
    # Gini index: the same trees, so the same tree weights, decisions and probabilities.
    rng = np.random.default_rng(3)
    X = rng.integers(0, 60, size=(4000, 6)).astype(np.float32)
    y = ((X[:, 0] > 25).astype(int) + (X[:, 1] > 30) + (X[:, 2] > 40) + (rng.random(4000) < 0.3)) % 4
    w = rng.uniform(0.5, 2.0, 4000)
    ours = hepbdt.BDTClassifier(boosting="adaboost", n_trees=20, max_depth=max_depth,
                                max_leaves=max_leaves, beta=0.5, min_node_size=0,
                                negative_weights="keep").fit(X, y, w)
    tree = sk_tree.DecisionTreeClassifier(max_depth=max_depth, max_leaf_nodes=max_leaves)
    theirs = sk_ensemble.AdaBoostClassifier(tree, n_estimators=20, learning_rate=0.5,
                                            random_state=0).fit(X, y, w)
    np.testing.assert_allclose(ours.forest_.extra["tree_weights"], theirs.estimator_weights_,
                               rtol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
    assert np.array_equal(ours.predict(X), theirs.predict(X))
    assert ours.n_trees_ == 20 and "rounds" not in ours.n_trees_reason_
    # scikit-learn kept every tree, and so did we: none is recorded as left out
    assert len(theirs.estimators_) == 20 and ours.forest_.extra["skipped_trees"] == 0
    # the training curve: each stage's weighted error rate, from scikit-learn's stages
    np.testing.assert_allclose(ours.train_loss_, [np.sum(w[stage != y]) / np.sum(w)
                                                  for stage in theirs.staged_predict(X)], rtol=1e-9)
    # each stage is the model of its first trees (it was the sum of those trees over the
    # alphas of all 20: off by up to 0.09 in probability at the first stage)
    stages = list(ours.staged_predict_proba(X))
    assert len(stages) == 20
    for m, (mine, sk) in enumerate(zip(stages, theirs.staged_predict_proba(X), strict=True)):
        np.testing.assert_allclose(mine, sk, atol=1e-12, err_msg=f"stage {m + 1}")
    np.testing.assert_allclose(ours.forest_.class_scores(X, 5), next(
        s for i, s in enumerate(ours.staged_decision_function(X)) if i == 4), rtol=1e-12)


def test_samme_refuses_chance_trees_and_its_files_round_trip(tmp_path):
    X, y, w = _data(seed=4, n=1500, k=3)
    # a tree that says one class everywhere errs on 1 - 1/K of equal classes: no boosting
    with pytest.raises(ValueError, match="first tree's weighted error rate"):
        hepbdt.BDTClassifier(boosting="adaboost", n_trees=5, max_depth=1).fit(
            X[:1200, :1] * 0, np.arange(1200) % 3, np.full(1200, 0.5))
    model = hepbdt.BDTClassifier(boosting="adaboost", n_trees=30, max_depth=2,
                                 subsample=0.5).fit(X, np.array(["a", "b", "c"])[y], w)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    loaded = hepbdt.load_model(model.save(tmp_path / "m.json") or tmp_path / "m.json")
    assert np.array_equal(loaded.predict_proba(X), proba)
    with pytest.raises(ValueError, match="positive sum of weights; these classes have none: 2 \\(0\\)"):
        hepbdt.BDTClassifier(boosting="adaboost", n_trees=3).fit(X, y, np.where(y == 2, 0.0, w))
    # the TMVA XML (multi-class Grad: softmax of summed leaves) reads back to the same numbers
    hepbdt.interop.to_tmva_xml(model, tmp_path / "m.weights.xml")
    back = hepbdt.interop.from_tmva_xml(tmp_path / "m.weights.xml")
    np.testing.assert_allclose(back.predict_proba(X), proba, atol=1e-6)


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_labels_probabilities_staging_and_files(boosting, tmp_path):
    X, y, w = _data(seed=2, n=4000)
    names = np.array(["ttbar", "qcd", "signal", "wjets"])
    model = hepbdt.BDTClassifier(boosting=boosting, random_state=0).fit(X, names[y], w)
    assert model.classes_.tolist() == sorted(names.tolist())
    proba = model.predict_proba(X)
    assert proba.shape == (X.shape[0], 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    assert 1 < model.n_trees_ < 2000 and "rounds of 4 trees" in model.n_trees_reason_
    assert model.forest_.n_trees == 4 * model.n_trees_
    staged = list(model.staged_predict_proba(X))
    assert len(staged) == model.n_trees_
    np.testing.assert_allclose(staged[-1], proba)
    loaded = hepbdt.load_model(model.save(tmp_path / "m.json") or tmp_path / "m.json")
    assert np.array_equal(loaded.predict_proba(X), proba)
    assert loaded.classes_.tolist() == model.classes_.tolist()
    for export in ("save_onnx", "save_cpp"):
        with pytest.raises(ValueError, match="4 classes"):
            getattr(model, export)(tmp_path / "out")


def _softmax_as_tmva(F):
    """TMVA's EvaluateMulticlass formula, written out: 1 / (1 + sum_{j != i} exp(F_j - F_i))."""
    K = F.shape[1]
    return np.stack([1.0 / (1.0 + sum(np.exp(F[:, j] - F[:, i]) for j in range(K) if j != i))
                     for i in range(K)], axis=1)


def test_tmva_multiclass_xml_layout_and_round_trip(tmp_path):
    import xml.etree.ElementTree as ET

    from hepbdt.interop import from_tmva_xml, tmva_response, to_tmva_xml

    X, y, w = _data(seed=3, n=2000, k=3)
    names = np.array(["bkg_a", "bkg_b", "sig"])
    model = hepbdt.BDTClassifier(n_trees=12, max_depth=3, random_state=0).fit(X, names[y], w)
    path = tmp_path / "m.weights.xml"
    to_tmva_xml(model, path)
    root = ET.parse(path).getroot()
    info = {i.get("name"): i.get("value") for i in root.find("GeneralInfo")}
    assert info["AnalysisType"] == "Multiclass"
    assert [c.get("Name") for c in root.find("Classes")] == ["bkg_a", "bkg_b", "sig"]
    trees = root.find("Weights").findall("BinaryTree")
    assert root.find("Weights").get("AnalysisType") == "1" and len(trees) == 36
    # tree t adds to class t mod 3: its leaves' sum per class, plus softmax, is predict_proba
    F = np.zeros((X.shape[0], 3))
    for t, bt in enumerate(trees):
        for i in range(X.shape[0]):
            n = bt.find("Node")
            while n.get("nType") == "0":
                right = X[i, int(n.get("IVar"))] >= np.float32(float(n.get("Cut")))
                n = next(c for c in n.findall("Node") if c.get("pos") == ("r" if right else "l"))
            F[i, t % 3] += float(np.float32(float(n.get("res"))))
    np.testing.assert_allclose(_softmax_as_tmva(F), model.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(tmva_response(model, X), model.predict_proba(X), atol=1e-6)
    back = from_tmva_xml(path)
    assert back.classes_.tolist() == ["bkg_a", "bkg_b", "sig"] and back.n_trees_ == 12
    np.testing.assert_allclose(tmva_response(back, X), tmva_response(model, X), atol=1e-6)
    assert np.array_equal(back.predict(X), model.predict(X))


def test_malformed_multiclass_tmva_files_are_refused(tmp_path):
    from hepbdt.interop import TMVAFormatError, from_tmva_xml, to_tmva_xml

    X, y, w = _data(seed=4, n=800, k=3)
    path = tmp_path / "m.weights.xml"
    to_tmva_xml(hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, y, w), path)
    text = path.read_text()
    bad = tmp_path / "bad.weights.xml"
    bad.write_text(text.replace('<Classes NClass="3">', '<Classes NClass="4">'))
    with pytest.raises(TMVAFormatError, match="NClass"):
        from_tmva_xml(bad)
    first_tree = text.index("<BinaryTree")
    bad.write_text((text[:first_tree] + text[text.index("</BinaryTree>") + len("</BinaryTree>"):])
                   .replace('NTrees="9"', 'NTrees="8"'))
    with pytest.raises(TMVAFormatError, match="whole rounds"):
        from_tmva_xml(bad)


def test_two_class_only_options_are_refused():
    X, y, w = _data(n=500, k=3)
    for boosting in ("realadaboost", "eps", "bagging"):
        with pytest.raises(ParameterError, match="two-class only"):
            hepbdt.BDTClassifier(boosting=boosting, n_trees=3).fit(X, y, w)
    with pytest.raises(ParameterError, match="multi-class Gini"):
        hepbdt.BDTClassifier(boosting="adaboost", criterion="misclassification").fit(X, y, w)
    with pytest.raises(ParameterError, match="use_yes_no_leaf=True"):
        hepbdt.BDTClassifier(boosting="adaboost", use_yes_no_leaf=False).fit(X, y, w)
    with pytest.raises(ParameterError, match="softmax"):
        hepbdt.BDTClassifier(loss="deviance", n_trees=3).fit(X, y, w)
    with pytest.raises(ParameterError, match="sig_to_bkg_fraction"):
        hepbdt.BDTClassifier(sig_to_bkg_fraction=1.0, n_trees=3).fit(X, y, w)
    with pytest.raises(ValueError, match="101 classes; at most 100"):
        hepbdt.BDTClassifier(n_trees=3).fit(X, np.arange(500) % 101)
    with pytest.raises(ValueError, match="positive sum of weights"):
        hepbdt.BDTClassifier(n_trees=3).fit(X, y, np.where(y == 2, 0.0, w))


def test_a_model_file_whose_classes_do_not_match_its_forest_is_refused(tmp_path):
    X, y, w = _data(n=600, k=3)
    path = tmp_path / "m.json"
    hepbdt.BDTClassifier(n_trees=4).fit(X, y, w).save(path)
    doc = json.loads(path.read_text())
    doc["classes"] = [0, 1]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="3 classes"):
        hepbdt.load_model(path)
    doc["classes"] = [0, 1, 2]
    doc["forest"]["extra"]["base_scores"] = [0.0, 1.0]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="base_scores"):
        hepbdt.load_model(path)


@pytest.mark.parametrize("boosting, g_factor, h_factor", [("gradient", 3 / 4, 1.0),
                                                          ("newton", 1.0, 4 / 3)])
def test_softmax_channels_and_loss_against_scipy(boosting, g_factor, h_factor):
    from scipy.special import log_softmax, softmax

    from hepbdt.boosting.losses import Softmax

    rng = np.random.default_rng(5)
    n, k = 10_000, 4
    scores = rng.normal(scale=3.0, size=(k, n))
    y = rng.integers(0, k, n).astype(np.int8)  # the fit's labels and weights, as it passes them
    w_tree = rng.uniform(0.0, 2.0, n).astype(np.float32)
    w = rng.uniform(0.5, 1.5, n).astype(np.float32)
    wg, wh, loss = Softmax(k, boosting).channels(y, scores, w_tree, w)
    p = softmax(scores, axis=0)
    onehot = np.arange(k)[:, None] == y.astype(int)[None, :]
    np.testing.assert_allclose(wg, w_tree * g_factor * (p - onehot), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(wh, w_tree * np.maximum(h_factor * p * (1 - p), 1e-16),
                               rtol=1e-6, atol=1e-7)
    w64 = w.astype(np.float64)
    expected = -np.sum(w64 * log_softmax(scores, axis=0)[y.astype(int), np.arange(n)]) / w64.sum()
    assert loss == pytest.approx(expected, rel=1e-12)
    assert Softmax(k, boosting).loss(y, w, scores) == pytest.approx(expected, rel=1e-12)


def test_inspect_names_each_class_and_its_trees(tmp_path, capsys):
    from hepbdt import cli
    from hepbdt.engine.predict import predict_raw

    X, y, w = _data(seed=6, n=900, k=3)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(X, np.array(["a", "b", "c"])[y], w)
    path = tmp_path / "m.json"
    model.save(path)
    assert cli.main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Classes (3): a (trees 0-4, base score" in out and "c (trees 10-14" in out
    assert "Trees: 15 (5 rounds of one tree a class)" in out
    # the ranges printed are the trees that score each class
    forest = model.forest_
    for k in range(3):
        raw = predict_raw(X, forest, 5 * k, 5 * k + 5) + forest.extra["base_scores"][k]
        np.testing.assert_allclose(raw, model.decision_function(X)[:, k])


def test_labels_that_do_not_sort_and_classes_without_weight_are_named():
    # np.unique's TypeError came out raw; a (n, 2) y read as a length mismatch; a class
    # without weight was named by its index, or with negative_weights='regress' not at all.
    X, y, w = _data(seed=5, n=600, k=3)
    names = np.array(["qcd", "signal", "ttbar"], dtype=object)[y]
    for bad in (np.where(np.arange(600) == 7, None, names), np.where(y == 0, 3, names)):
        with pytest.raises(ValueError, match="labels must be of one kind that sorts"):
            hepbdt.BDTClassifier(n_trees=2).fit(X, bad)
    with pytest.raises(ValueError, match=r"y must be 1-d.*\(600, 2\)"):
        hepbdt.BDTClassifier(n_trees=2).fit(X, np.column_stack([y, y]))
    for policy, weight in (("keep", 0.0), ("regress", -1.0), ("abs", 0.0)):
        with pytest.raises(ValueError, match=r"these classes have none: 'ttbar' \("):
            hepbdt.BDTClassifier(n_trees=2, negative_weights=policy).fit(
                X, names, np.where(names == "ttbar", weight, w))


def test_samme_tree_weights_are_checked_when_a_file_is_loaded(tmp_path):
    # A hand-edited file loaded; its staged probabilities came out wrong (too few weights),
    # NaN (NaN or zero weights), or a traceback (text, or no key) at predict time.
    import json

    X, y, w = _data(seed=6, n=900, k=3)
    model = hepbdt.BDTClassifier(boosting="adaboost", n_trees=6, max_depth=2).fit(X, y, w)
    path = tmp_path / "samme.json"
    model.save(path)
    assert hepbdt.load_model(path).predict_proba(X).shape == (900, 3)
    original = json.loads(path.read_text())
    edits = {"short": lambda a: a[:-1], "nan": lambda a: ["NaN"] * len(a),
             "zero": lambda a: [0.0] * len(a), "text": lambda a: "x", "missing": None}
    for name, edit in edits.items():
        d = json.loads(json.dumps(original))
        extra = d["forest"]["extra"] if "forest" in d else d["extra"]
        if edit is None:
            del extra["tree_weights"]
        else:
            extra["tree_weights"] = edit(extra["tree_weights"])
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps(d).replace('"NaN"', "NaN"))
        with pytest.raises(ValueError, match="tree_weights: SAMME's model needs"):
            hepbdt.load_model(bad)
