"""TMVA XML: import of ROOT-written weight files, export of every model kind, refusals.

The fixtures in ``shared/tmva`` come with ``TMVA::Reader``'s output for every event; the
tests also walk the XML with an independent, literal implementation of the Reader's rules
(``reader_score``) so that exported files are checked against TMVA's semantics, not only
against our own importer.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor, load_model
from hepbdt._util import model_scores
from hepbdt.estimators import from_forest
from hepbdt.interop import (
    TMVAExportError,
    TMVAFormatError,
    from_tmva_xml,
    tmva_response,
    to_tmva_xml,
)
from hepbdt.model import ForestBuilder

from .conftest import tmva_inputs

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TMVA_DIR = SHARED / "tmva"
DATA_DIR = SHARED / "data"
needs_fixtures = pytest.mark.skipif(not (TMVA_DIR / "README.md").is_file(),
                                    reason="shared/tmva fixtures are not available")

CLASS_FIXTURES = ["ClassExample_BDT", "ClassExample_BDTG", "ClassExample_BDTRealAda",
                  "ClassExample_BDTPurity", "ClassExample_BDTBagging"]
REG_FIXTURES = ["Regression_BDTG", "Regression_BDT"]
FIXTURES = CLASS_FIXTURES + REG_FIXTURES


def fixture_scores(name: str) -> np.ndarray:
    return np.loadtxt(TMVA_DIR / f"{name}.reader.csv", delimiter=",", skiprows=1, usecols=2)


# -- an independent TMVA::Reader (README rules, one event at a time) ------------------------

def reader_score(path: Path, X: np.ndarray) -> np.ndarray:
    root = ET.parse(path).getroot()
    options = {o.get("name"): (o.text or "").strip() for o in root.find("Options")}
    info = {i.get("name"): i.get("value") for i in root.find("GeneralInfo")}
    regression = info["AnalysisType"] == "Regression"
    boost = options["BoostType"]
    yes_no = options.get("UseYesNoLeaf", "True") == "True"
    weights = root.find("Weights")
    regression_trees = weights.get("AnalysisType") == "1"
    trees = weights.findall("BinaryTree")
    a = np.array([np.float32(float(t.get("boostWeight"))) for t in trees], dtype=np.float64)

    def walk(node, x):
        while int(node.get("nType")) == 0:
            v = np.float32(x[int(node.get("IVar"))])
            goes_right = bool(v >= np.float32(float(node.get("Cut"))))
            if node.get("cType") == "0":
                goes_right = not goes_right
            node = next(c for c in node.findall("Node") if c.get("pos") == ("r" if goes_right else "l"))
        if regression_trees:
            return float(np.float32(float(node.get("res"))))
        if yes_no:
            return float(int(node.get("nType")))
        return float(np.float32(float(node.get("purity"))))

    roots = [t.find("Node") for t in trees]
    out = np.empty(X.shape[0])
    n = len(trees)
    for i, x in enumerate(X):
        if not regression and np.isnan(x).any():  # EvaluateMVA refuses NaN inputs
            out[i] = -999.0
            continue
        r = [walk(node, x) for node in roots]
        if boost == "Grad" and not regression:
            s = 0.0
            for v in r:
                s += v
            out[i] = 2.0 / (1.0 + np.exp(-2.0 * s)) - 1.0
        elif boost == "Grad":
            s = 0.0
            for v in r:
                s += v
            out[i] = np.float32(s + a[0])
        elif boost == "AdaBoostR2":
            pairs = sorted(zip(r, a, strict=True), key=lambda p: p[0])
            total = 0.0
            for w in a:
                total += w
            k, cum = 0, 0.0
            while cum <= total / 2.0:
                cum += pairs[k][1]
                k += 1
            lo, hi = max(0, k - n // 6 - 1), min(n, k + n // 6)
            s = 0.0
            for j in range(lo, hi):
                s += pairs[j][0]
            out[i] = np.float32(s / (hi - lo))
        else:
            s = norm = 0.0
            for v, w in zip(r, a, strict=True):
                s += w * v
                norm += w
            out[i] = s / norm if norm > np.finfo(float).eps else 0.0
            if regression:
                out[i] = np.float32(out[i])
    return out


def structure(path: Path) -> set[tuple[str, tuple[str, ...]]]:
    """(element tag, sorted attribute names) of every element in the file."""
    return {(el.tag, tuple(sorted(el.attrib))) for el in ET.parse(path).getroot().iter()}


def option_names(path: Path) -> list[str]:
    return [o.get("name") for o in ET.parse(path).getroot().find("Options")]


# -- import of ROOT-written files ----------------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("name", FIXTURES)
def test_import_reproduces_reader_output(name):
    model = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml")
    X = tmva_inputs(name)
    ref = fixture_scores(name)
    got = tmva_response(model, X)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    assert np.max(np.abs(got - ref)) < 1e-12
    # The literal reader agrees with the CSV too (on a subset: it is slow).
    idx = np.arange(0, X.shape[0], X.shape[0] // 60)
    np.testing.assert_allclose(reader_score(TMVA_DIR / f"{name}.weights.xml", X[idx]), ref[idx],
                               rtol=0, atol=1e-12)


@needs_fixtures
@pytest.mark.parametrize("name", FIXTURES)
def test_imported_model_is_a_fitted_hepbdt_model(name, tmp_path):
    model = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml")
    regression = name.startswith("Regression")
    assert isinstance(model, BDTRegressor if regression else BDTClassifier)
    assert list(model.feature_names_in_) == (["var1", "var2"] if regression
                                             else ["var1", "var2", "var3", "var4"])
    X = tmva_inputs(name)[:500]
    raw = model_scores(model, X)
    if not regression:
        p = model.predict_proba(X)
        assert p.shape == (500, 2) and np.all((p >= 0) & (p <= 1))
    model.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(model_scores(again, X), raw)
    np.testing.assert_array_equal(tmva_response(again, X), tmva_response(model, X))


@needs_fixtures
@pytest.mark.parametrize("name, value", [("useyesnoleaf", "True"), ("BOOSTTYPE", "Grad")])
def test_recorded_options_are_written_as_the_trees_are_in_any_case(tmp_path, name, value):
    """A model file whose recorded TMVA options also spell BoostType or UseYesNoLeaf in
    another case (TMVA matches names in any case, the last winning) was exported with them:
    the Reader then read AdaBoost purity leaves as yes/no leaves (1.37 off) or as Grad."""
    model = from_tmva_xml(TMVA_DIR / "ClassExample_BDTPurity.weights.xml")
    model.save(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["forest"]["extra"]["tmva"]["options"].append([name, True, value])
    (tmp_path / "m.json").write_text(json.dumps(doc))
    to_tmva_xml(load_model(tmp_path / "m.json"), tmp_path / "m.weights.xml")
    X = tmva_inputs("ClassExample")
    np.testing.assert_array_equal(tmva_response(from_tmva_xml(tmp_path / "m.weights.xml"), X),
                                  tmva_response(model, X))
    doc["forest"]["extra"]["tmva"]["options"].append(["dopreselection", True, "T"])
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(TMVAExportError, match="DoPreselection='t'"):
        to_tmva_xml(load_model(tmp_path / "m.json"), tmp_path / "p.weights.xml")
    assert not (tmp_path / "p.weights.xml").exists()


@needs_fixtures
def test_imported_kinds():
    g = from_tmva_xml(TMVA_DIR / "ClassExample_BDTG.weights.xml")
    assert g.forest_.aggregation == "sum" and g.forest_.extra["loss"] == "deviance"
    X = tmva_inputs("ClassExample_BDTG")[:100]
    np.testing.assert_allclose(tmva_response(g, X), np.tanh(g.decision_function(X)), atol=1e-14)
    ada = from_tmva_xml(TMVA_DIR / "ClassExample_BDT.weights.xml")
    assert ada.forest_.aggregation == "weighted_mean"
    assert set(np.unique(ada.forest_.value[ada.forest_.feature < 0])) == {-1.0, 1.0}
    bag = from_tmva_xml(TMVA_DIR / "ClassExample_BDTBagging.weights.xml")
    assert np.all(bag.forest_.tree_weights == 1.0)
    r = from_tmva_xml(TMVA_DIR / "Regression_BDTG.weights.xml")
    assert r.forest_.base_score == pytest.approx(128.0356, abs=1e-4)
    assert from_tmva_xml(TMVA_DIR / "Regression_BDT.weights.xml").forest_.aggregation == "weighted_median"


# -- export: fixtures round trip -----------------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_export_round_trip(name, tmp_path):
    model = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml")
    out = tmp_path / f"{name}.weights.xml"
    info = to_tmva_xml(model, out)
    # leaves exact in float32: the bound is only that of the double sums (2 n eps sum|leaf|)
    assert info["n_residual_trees"] == 0 and info["max_response_error"] < 1e-8
    X = tmva_inputs(name)
    again = from_tmva_xml(out)
    np.testing.assert_array_equal(tmva_response(again, X), tmva_response(model, X))
    np.testing.assert_allclose(tmva_response(again, X), fixture_scores(name), rtol=0, atol=1e-12)
    assert structure(out) == structure(TMVA_DIR / f"{name}.weights.xml")
    assert option_names(out) == option_names(TMVA_DIR / f"{name}.weights.xml")


# -- export of hepbdt models ---------------------------------------------------------------

def _data(seed=0, n=3000, nan_fraction=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.3 * X[:, 2] + rng.normal(size=n) > 0.5).astype(int)
    yr = 3.0 * X[:, 0] + X[:, 1] ** 2 + rng.normal(size=n) + 50.0
    Xn = X.copy()
    Xn[rng.random(X.shape) < nan_fraction] = np.nan
    return X, Xn, y, yr


def _eval_points(seed=5, n=2000):
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=1.5, size=(n, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:50] = np.nan  # all missing
    return X


def _assert_classifier_response(model, X, link):
    """The Reader's response: link(decision_function) for finite events, -999 (EvaluateMVA's
    answer) for events with a NaN input."""
    response = tmva_response(model, X)
    nan = np.isnan(X).any(axis=1)
    assert nan.any() and np.all(response[nan] == -999.0)
    np.testing.assert_allclose(response[~nan], link(model.decision_function(X[~nan])),
                               atol=1e-15)


def _check_export(model, tmp_path, regression=False, reader_events=150, **options):
    out = tmp_path / "model.weights.xml"
    info = to_tmva_xml(model, out, **options)
    X = _eval_points()
    ours = tmva_response(model, X)
    again = tmva_response(from_tmva_xml(out), X)
    tol = 1e-6 * np.maximum(1.0, np.abs(ours)) if regression else 1e-6
    assert np.all(np.abs(again - ours) <= tol)
    # The file evaluates the same under the literal Reader rules.
    literal = reader_score(out, X[:reader_events])
    np.testing.assert_allclose(literal, again[:reader_events], rtol=1e-12, atol=1e-12)
    return out, info


@pytest.mark.parametrize("nan_in_training", [False, True])
def test_export_gradient_classifier(tmp_path, nan_in_training):
    X, Xn, y, _ = _data()
    model = BDTClassifier(n_trees=60, max_depth=3, random_state=0).fit(Xn if nan_in_training else X, y)
    out, info = _check_export(model, tmp_path)
    Xe = _eval_points()
    _assert_classifier_response(model, Xe, np.tanh)
    assert info["max_response_error"] <= 1e-6
    fx = TMVA_DIR / "ClassExample_BDTG.weights.xml"
    if fx.is_file():
        assert structure(out) == structure(fx)
        assert option_names(out) == option_names(fx)


def test_export_newton_classifier_response_is_2p_minus_1(tmp_path):
    _, Xn, y, _ = _data(1)
    model = BDTClassifier(boosting="newton", n_trees=50, max_depth=4, random_state=0).fit(Xn, y)
    assert model.forest_.base_score != 0.0
    out, _ = _check_export(model, tmp_path)
    Xe = _eval_points()
    _assert_classifier_response(model, Xe, lambda f: 2.0 / (1.0 + np.exp(-f)) - 1.0)
    # read back, it is the newton model its parameters say: its own score (it was half of
    # it), its probabilities, and the same file again
    back = from_tmva_xml(out)
    assert back.get_params()["boosting"] == "newton"
    finite = Xe[~np.isnan(Xe).any(axis=1)]  # a two-class file's Reader walks no NaN event
    np.testing.assert_allclose(back.decision_function(finite), model.decision_function(finite),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(back.predict_proba(finite), model.predict_proba(finite),
                               atol=1e-6)
    again = tmp_path / "again.weights.xml"
    to_tmva_xml(back, again)
    np.testing.assert_array_equal(tmva_response(from_tmva_xml(again), Xe), tmva_response(back, Xe))
    np.testing.assert_array_equal(reader_score(again, Xe[:150]), reader_score(out, Xe[:150]))


@pytest.mark.parametrize("loss", ["squared", "huber", "absolute"])
def test_export_gradient_regressor(tmp_path, loss):
    _, Xn, _, yr = _data(2)
    model = BDTRegressor(n_trees=40, max_depth=3, loss=loss, random_state=0).fit(Xn, yr)
    out, _ = _check_export(model, tmp_path, regression=True)
    root = ET.parse(out).getroot()
    a0 = float(root.find("Weights").find("BinaryTree").get("boostWeight"))
    assert a0 == float(np.float32(model.forest_.base_score))
    Xe = _eval_points()
    np.testing.assert_array_equal(tmva_response(model, Xe),
                                  model.predict(Xe).astype(np.float32).astype(np.float64))
    fx = TMVA_DIR / "Regression_BDTG.weights.xml"
    if fx.is_file():
        assert structure(out) == structure(fx)


def test_export_node_counts_and_cuts(tmp_path):
    """Without NaN handling the file holds exactly the model's trees, nodes and cuts."""
    X, _, y, _ = _data(3)
    model = BDTClassifier(n_trees=20, max_depth=3, random_state=0).fit(X, y)
    out = tmp_path / "m.xml"
    to_tmva_xml(model, out, missing="none")
    forest = model.forest_
    trees = ET.parse(out).getroot().find("Weights").findall("BinaryTree")
    assert len(trees) == forest.n_trees
    for t, bt in enumerate(trees):
        nodes = list(bt.iter("Node"))  # document order = preorder, left first
        sl = forest.tree_slice(t)
        assert len(nodes) == sl.stop - sl.start
        # hepbdt's preorder: walk node, left, right
        order, stack = [], [sl.start]
        while stack:
            k = stack.pop()
            order.append(k)
            if forest.feature[k] >= 0:
                stack += [forest.right[k], forest.left[k]]
        for el, k in zip(nodes, order, strict=True):
            assert int(el.get("IVar")) == forest.feature[k]
            if forest.feature[k] >= 0:
                assert np.float32(float(el.get("Cut"))) == forest.threshold[k]
                assert el.get("nType") == "0" and el.get("cType") == "1"
            else:
                expected = forest.tree_weights[t] * forest.value[k] + (forest.base_score if t == 0 else 0.0)
                assert np.float32(float(el.get("res"))) == np.float32(expected)
    # A classifier's default writes no NaN nodes (EvaluateMVA gives -999 for NaN inputs):
    out_default = tmp_path / "m1.xml"
    to_tmva_xml(model, out_default)
    assert len(list(ET.parse(out_default).getroot().iter("Node"))) == forest.n_nodes
    # With exact NaN handling, extra nodes cut at -FLT_MAX appear and the model's cuts remain.
    out2 = tmp_path / "m2.xml"
    to_tmva_xml(model, out2, missing="exact")
    nodes = ET.parse(out2).getroot().iter("Node")
    cuts = {float(np.float32(float(n.get("Cut")))) for n in nodes if n.get("nType") == "0"}
    assert set(forest.threshold[forest.feature >= 0].tolist()) <= cuts
    assert float(-np.finfo(np.float32).max) in cuts


def test_residual_trees_make_the_file_exact(tmp_path):
    X, _, y, _ = _data(4)
    model = BDTClassifier(n_trees=30, max_depth=3, random_state=0).fit(X, y)
    out = tmp_path / "m.xml"
    info = to_tmva_xml(model, out, tolerance=1e-13)
    assert info["n_residual_trees"] > 0 and info["max_response_error"] <= 1e-13
    Xe = _eval_points()
    np.testing.assert_allclose(tmva_response(from_tmva_xml(out), Xe), tmva_response(model, Xe),
                               rtol=0, atol=1e-13)


@pytest.mark.parametrize("params,boost_type,yes_no", [
    ({"boosting": "adaboost"}, "AdaBoost", "True"),
    ({"boosting": "adaboost", "use_yes_no_leaf": False}, "AdaBoost", "False"),
    ({"boosting": "eps"}, "AdaBoost", "True"),
    ({"boosting": "bagging"}, "Bagging", "True"),
    ({"boosting": "realadaboost"}, "Grad", None),
])
def test_export_adaboost_family(tmp_path, params, boost_type, yes_no):
    _, Xn, y, _ = _data(7)
    model = BDTClassifier(n_trees=30, max_depth=3, random_state=0, **params).fit(Xn, y)
    out, _ = _check_export(model, tmp_path)
    options = {o.get("name"): o.text for o in ET.parse(out).getroot().find("Options")}
    assert options["BoostType"] == boost_type
    Xe = _eval_points()
    if yes_no is not None:
        assert options["UseYesNoLeaf"] == yes_no
        _assert_classifier_response(model, Xe, lambda f: f)
    else:  # Friedman's real AdaBoost: P = 1/(1+exp(-2F)), so the response is tanh(F)
        _assert_classifier_response(model, Xe, np.tanh)


# -- AdaBoost-type forests (built by hand) -------------------------------------------------

def _random_tree(rng, kind, n_features, max_depth):
    arr = {k: [] for k in ("feature", "threshold", "left", "right", "missing_left", "value")}

    def grow(depth):
        k = len(arr["feature"])
        for key in arr:
            arr[key].append(0)
        if depth == max_depth or (depth > 0 and rng.random() < 0.25):
            arr["feature"][k], arr["left"][k], arr["right"][k] = -1, -1, -1
            arr["missing_left"][k] = False
            arr["value"][k] = {"pm1": float(rng.choice([-1.0, 1.0])), "purity": rng.uniform(),
                               "median": rng.normal(50, 10), "mean": rng.normal(50, 10)}[kind]
            return k
        arr["feature"][k] = int(rng.integers(n_features))
        arr["threshold"][k] = np.inf if rng.random() < 0.05 else float(np.float32(rng.normal()))
        arr["missing_left"][k] = bool(rng.random() < 0.5)
        arr["value"][k] = 0.0
        arr["left"][k] = grow(depth + 1)
        arr["right"][k] = grow(depth + 1)
        return k

    grow(0)
    return {k: np.asarray(v) for k, v in arr.items()}


def random_model(kind, seed=0, n_trees=25, n_features=4, max_depth=4, regression=False):
    """A fitted estimator around random trees; random NaN directions; some inf cuts."""
    rng = np.random.default_rng(seed)
    aggregation = {"pm1": "weighted_mean", "purity": "weighted_mean", "median": "weighted_median",
                   "mean": "weighted_mean"}[kind]
    builder = ForestBuilder(n_features, aggregation=aggregation)
    purity_all = []
    for _ in range(n_trees):
        arr = _random_tree(rng, kind, n_features, max_depth)
        n = arr["feature"].size
        weight = float(rng.uniform(0.1, 2.0))
        if kind == "median":  # AdaBoostR2 weights must be float32 values (see _check_median_weights)
            weight = float(np.float32(weight))
        builder.add(tree_weight=weight, bin_threshold=np.zeros(n, np.uint8),
                    gain=np.ones(n), cover=np.ones(n), **arr)
        purity_all.append(rng.uniform(size=n))
    forest = builder.build()
    if kind in ("pm1", "purity"):
        forest.extra["score_min"] = -1.0 if kind == "pm1" else 0.0
        forest.extra["node_purity"] = np.concatenate(purity_all).tolist()
    names = [f"x{i}" for i in range(n_features)]
    return from_forest("regressor" if regression else "classifier", forest, names, {})


@pytest.mark.parametrize("kind,fixture", [("pm1", "ClassExample_BDT"), ("purity", "ClassExample_BDTRealAda")])
def test_export_adaboost_classifiers(tmp_path, kind, fixture):
    model = random_model(kind)
    out, info = _check_export(model, tmp_path)
    assert info["max_response_error"] <= 1e-6
    Xe = _eval_points()
    _assert_classifier_response(model, Xe, lambda f: f)
    if (TMVA_DIR / f"{fixture}.weights.xml").is_file():
        assert structure(out) == structure(TMVA_DIR / f"{fixture}.weights.xml")
    options = {o.get("name"): o.text for o in ET.parse(out).getroot().find("Options")}
    assert options["BoostType"] == "AdaBoost"
    assert options["UseYesNoLeaf"] == ("True" if kind == "pm1" else "False")


def test_export_adaboost_r2_regressor(tmp_path):
    model = random_model("median", regression=True, n_trees=30)
    out, _ = _check_export(model, tmp_path, regression=True)
    fx = TMVA_DIR / "Regression_BDT.weights.xml"
    if fx.is_file():
        assert structure(out) == structure(fx)


def test_export_bagging_regressor(tmp_path):
    model = random_model("mean", regression=True)
    _check_export(model, tmp_path, regression=True)


def test_save_tmva_method(tmp_path):
    X, _, y, _ = _data(6)
    model = BDTClassifier(n_trees=10, random_state=0).fit(X, y)
    info = model.save_tmva(tmp_path / "m.xml", method_name="MyBDT")
    assert info["n_trees"] >= 10
    root = ET.parse(tmp_path / "m.xml").getroot()
    assert root.get("Method") == "BDT::MyBDT"
    assert [v.get("Expression") for v in root.find("Variables")] == ["x0", "x1", "x2", "x3"]


# -- refusals ------------------------------------------------------------------------------

def test_export_refusals(tmp_path):
    model = random_model("median", regression=False)  # a classifier with a median: no TMVA form
    with pytest.raises(TMVAExportError, match="weighted_median"):
        to_tmva_xml(model, tmp_path / "a.xml")
    big = random_model("mean", regression=False)
    big.forest_.value[big.forest_.feature < 0] += 1e3 + 1e-4  # not float32-exact, response ~1e3
    with pytest.raises(TMVAExportError, match="tolerance"):
        to_tmva_xml(big, tmp_path / "b.xml")
    assert not (tmp_path / "b.xml").exists()
    with pytest.raises(TypeError, match="fitted"):
        to_tmva_xml(BDTClassifier(), tmp_path / "c.xml")
    with pytest.raises(ValueError, match="missing"):
        to_tmva_xml(random_model("pm1"), tmp_path / "d.xml", missing="sometimes")


MINIMAL = """<?xml version="1.0"?>
<MethodSetup Method="BDT::BDT">
  <GeneralInfo><Info name="AnalysisType" value="Classification"/></GeneralInfo>
  <Options><Option name="BoostType" modified="Yes">{boost}</Option></Options>
  <Variables NVar="2">
    <Variable VarIndex="0" Expression="a" Label="a" Type="F" Min="0" Max="1"/>
    <Variable VarIndex="1" Expression="b" Label="b" Type="F" Min="0" Max="1"/>
  </Variables>
  <Classes NClass="2"><Class Name="Signal" Index="0"/><Class Name="Background" Index="1"/></Classes>
  <Transformations NTransformations="{ntrans}"/>
  <Weights NTrees="1" AnalysisType="0">
    <BinaryTree type="DecisionTree" boostWeight="1.0" itree="0">
      <Node pos="s" depth="0" NCoef="0" IVar="{ivar}" Cut="{cut}" cType="0" purity="0.5" nType="0">
        <Node pos="l" depth="1" NCoef="0" IVar="-1" Cut="0" cType="1" purity="0.9" nType="1"/>
        {right}
      </Node>
    </BinaryTree>
  </Weights>
</MethodSetup>
"""
RIGHT = '<Node pos="r" depth="1" NCoef="0" IVar="-1" Cut="0" cType="1" purity="0.1" nType="-1"/>'


def _minimal(tmp_path, **kw):
    fields = {"boost": "AdaBoost", "ntrans": "0", "ivar": "1", "cut": "0.5", "right": RIGHT} | kw
    p = tmp_path / "w.xml"
    p.write_text(MINIMAL.format(**fields))
    return p


def test_minimal_file_and_ctype0(tmp_path):
    model = from_tmva_xml(_minimal(tmp_path))
    X = np.array([[0, 0.2], [0, 0.5], [0, 0.7], [0, np.nan]], dtype=np.float32)
    # cType=0: x >= 0.5 goes to 'l' (nType=1); x < 0.5 goes to 'r' (nType=-1); an event
    # with a NaN input gets EvaluateMVA's -999.
    np.testing.assert_array_equal(tmva_response(model, X), [-1, 1, 1, -999])
    np.testing.assert_array_equal(reader_score(tmp_path / "w.xml", X), [-1, 1, 1, -999])


@pytest.mark.parametrize("fields,message", [
    ({"boost": "AdaCost"}, "BoostType='AdaCost'"),
    ({"ntrans": "1"}, "transformations"),
    ({"ivar": "2"}, "IVar=2"),
    ({"cut": "abc"}, "Cut='abc' is not a number"),
    ({"cut": "nan"}, "Cut is not finite"),
    ({"right": ""}, "two daughters"),
    ({"right": RIGHT.replace(' nType="-1"', "")}, r"lacks \['nType'\], which TMVA::Reader"),
    # the Reader stops at a node, leaves too, without one of these; hepbdt read 0.5 or IVar -1
    ({"right": RIGHT.replace(' purity="', ' p="')}, r"neither purity nor nS and nB"),
    ({"right": RIGHT.replace(' purity="', ' nS="0" nB="0" p="')}, r"nS / \(nS \+ nB\).*not a number"),
    ({"right": RIGHT.replace(' IVar="-1"', "")}, r"lacks \['IVar'\]"),
])
def test_malformed_files_are_refused(tmp_path, fields, message):
    with pytest.raises(TMVAFormatError, match=message) as err:
        from_tmva_xml(_minimal(tmp_path, **fields))
    assert "w.xml" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_general_info_is_checked(tmp_path):
    """An AnalysisType the Reader does not know is refused (not read as Classification), and
    'Training events' must be a count in int64's range."""
    p = _minimal(tmp_path)
    text = p.read_text()
    p.write_text(text.replace('value="Classification"', 'value="Classifcation"'))
    with pytest.raises(TMVAFormatError, match="AnalysisType='Classifcation'"):
        from_tmva_xml(p)
    info = '<Info name="AnalysisType" value="Classification"/>'
    for events, expected in (("6000", 6000), (str(np.iinfo(np.int64).max - 1023), 2**63 - 1024),
                             (str(2**63), None), ("1e19", None), ("-1", None)):
        p.write_text(text.replace(info, f'{info}<Info name="Training events" value="{events}"/>'))
        if expected is None:
            with pytest.raises(TMVAFormatError, match="'Training events'.*out of range"):
                from_tmva_xml(p)
        else:
            assert from_tmva_xml(p).forest_.extra["tmva"]["training_events"] == expected


def test_other_refusals(tmp_path):
    p = tmp_path / "x.xml"
    p.write_text("not xml at all")
    with pytest.raises(TMVAFormatError, match="not an XML file"):
        from_tmva_xml(p)
    p.write_text('<?xml version="1.0"?><Other/>')
    with pytest.raises(TMVAFormatError, match="MethodSetup"):
        from_tmva_xml(p)
    p.write_text('<MethodSetup Method="MLP::MLP"/>')
    with pytest.raises(TMVAFormatError, match="not a BDT"):
        from_tmva_xml(p)
    p.write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><MethodSetup Method="BDT::B"/>')
    with pytest.raises(TMVAFormatError, match="ENTITY"):
        from_tmva_xml(p)
    p.write_text(MINIMAL.format(boost="AdaBoost", ntrans="0", ivar="1", cut="0.5", right=RIGHT)
                 .replace("<Weights", "<Nothing").replace("</Weights>", "</Nothing>"))
    with pytest.raises(TMVAFormatError, match="no <Weights>"):
        from_tmva_xml(p)
    p.write_text(MINIMAL.format(boost="AdaBoost", ntrans="0", ivar="1", cut="0.5", right=RIGHT)
                 .replace('value="Classification"', 'value="Multiclass"'))
    with pytest.raises(TMVAFormatError, match="multi-class file needs NClass >= 3"):
        from_tmva_xml(p)
    with pytest.raises(FileNotFoundError):
        from_tmva_xml(tmp_path / "missing.xml")


@needs_fixtures
def test_multiclass_file_is_refused(tmp_path):
    text = (TMVA_DIR / "ClassExample_BDTBagging.weights.xml").read_text()
    p = tmp_path / "m.xml"
    p.write_text(text.replace('<Classes NClass="2">', '<Classes NClass="3">'))
    with pytest.raises(TMVAFormatError, match="NClass=3"):
        from_tmva_xml(p)


def test_a_classifier_trained_on_nan_is_exported_with_a_warning_and_no_nan_nodes(tmp_path):
    """EvaluateMVA never walks the trees for a NaN input, so the NaN nodes would only make
    the file bigger; the warning says what the Reader returns instead."""
    _, Xn, y, yr = _data(4)
    model = BDTClassifier(n_trees=30, max_depth=4, random_state=0).fit(Xn, y)
    with pytest.warns(UserWarning, match="returns -999 for any event with a NaN input"):
        to_tmva_xml(model, tmp_path / "default.xml")
    with pytest.warns(UserWarning):
        to_tmva_xml(model, tmp_path / "exact.xml", missing="exact")
    assert (tmp_path / "exact.xml").stat().st_size > 1.5 * (tmp_path / "default.xml").stat().st_size
    regressor = BDTRegressor(n_trees=30, max_depth=4, random_state=0).fit(Xn, yr)
    to_tmva_xml(regressor, tmp_path / "regression.xml")  # the Reader evaluates NaN: kept
    cuts = {float(n.get("Cut")) for n in ET.parse(tmp_path / "regression.xml").getroot().iter("Node")}
    assert float(-np.finfo(np.float32).max) in cuts


def test_a_tree_deeper_than_the_written_limit_is_refused_beside_a_shallow_one(tmp_path):
    """The depth limit of the nested <Node> elements is the deepest tree's, not the first's
    or the shallowest's: a single leaf before a chain of 201 splits hid it (audit GD)."""
    from hepbdt.estimators import from_forest
    from hepbdt.interop.tmva_export import MAX_TMVA_DEPTH, TMVAExportError
    from hepbdt.model import NODE_ARRAYS, ForestBuilder

    builder = ForestBuilder(1)
    builder.add(1.0, **{k: np.zeros(1) for k in NODE_ARRAYS} | {"feature": [-1], "left": [-1],
                                                                  "right": [-1]})
    depth = MAX_TMVA_DEPTH + 1  # node 2j splits, 2j + 1 is its left leaf, 2j + 2 goes on
    n = 2 * depth + 1
    internal = (np.arange(n) % 2 == 0) & (np.arange(n) < n - 1)
    builder.add(1.0, feature=np.where(internal, 0, -1), threshold=np.arange(n, dtype=float),
                bin_threshold=np.zeros(n), left=np.where(internal, np.arange(n) + 1, -1),
                right=np.where(internal, np.arange(n) + 2, -1), missing_left=internal,
                value=np.where(internal, 0.0, 0.5), gain=np.zeros(n), cover=np.zeros(n))
    model = from_forest("regressor", builder.build(), ["x"])
    assert model.forest_.max_depth == depth
    with pytest.raises(TMVAExportError, match=f"depth {depth} is deeper than the {MAX_TMVA_DEPTH}"):
        to_tmva_xml(model, tmp_path / "deep.xml")
    assert not (tmp_path / "deep.xml").exists()


def test_a_tmva_file_written_again_keeps_its_variables_ranges(tmp_path):
    """Min and Max of each variable are the TMVA-written file's own, as TMVA wrote them
    (its training ranges), not the span of the cuts (audit GD, a surviving mutant)."""
    import xml.etree.ElementTree as ET

    source = TMVA_DIR / "ClassExample_BDTG.weights.xml"
    if not source.is_file():
        pytest.skip("../shared/tmva is not present")
    to_tmva_xml(from_tmva_xml(source), tmp_path / "again.xml")

    def ranges(path):
        return [(float(v.get("Min")), float(v.get("Max")))
                for v in ET.parse(path).getroot().iter("Variable")]

    assert len(ranges(source)) == 4
    assert ranges(tmp_path / "again.xml") == ranges(source)



def _infinite_threshold_regressor():
    """Two trees whose roots split at +-inf (finite values one way, NaN the other) above a
    missing-goes-right split, so that every NaN branch of the export is written."""
    from hepbdt.model import NODE_ARRAYS

    builder = ForestBuilder(2)
    for root_threshold, nan_left in ((np.inf, False), (-np.inf, True)):
        # node 0 splits feature 0 at +-inf, node 1 feature 1 at 0.5 (NaN right), 2-4 leaves
        inner = 1 if root_threshold > 0 else 2  # the split node
        left, right = [1, 3, -1, -1, -1], [2, 4, -1, -1, -1]
        if inner == 2:
            left, right = [2, -1, 3, -1, -1], [1, -1, 4, -1, -1]
        builder.add(1.0, **{k: np.zeros(5) for k in NODE_ARRAYS} | {
            "feature": np.where(np.arange(5) == 0, 0, np.where(np.arange(5) == inner, 1, -1)),
            "threshold": [root_threshold] + [0.5 if k == inner else 0.0 for k in range(1, 5)],
            "left": left, "right": right,
            "missing_left": [nan_left, False, False, False, False],
            "value": [0.0, 1.0, 2.0, 4.0, 8.0]})
    return from_forest("regressor", builder.build(), ["a", "b"])


def test_every_node_depth_is_its_nesting_depth(tmp_path):
    """Each <Node>'s depth attribute is its nesting depth in the XML (ElementTree's), also
    under the NaN branches written for infinite thresholds and missing-goes-right nodes
    (audit GX: depth + 0 under an infinite threshold's NaN branch survived)."""
    model = _infinite_threshold_regressor()
    to_tmva_xml(model, tmp_path / "m.xml", missing="exact")
    checked = 0

    def walk(node, depth):
        nonlocal checked
        assert int(node.get("depth")) == depth
        checked += 1
        for child in node.findall("Node"):
            walk(child, depth + 1)

    for tree in ET.parse(tmp_path / "m.xml").getroot().iter("BinaryTree"):
        walk(tree.find("Node"), 0)
    assert checked > 2 * 5


@needs_fixtures
def test_purity_leaves_have_the_ntype_tmva_writes(tmp_path):
    """TMVA's own purity file marks a leaf nType 1 when its purity is above
    NodePurityLimit (0.5), else -1; an exported purity AdaBoost follows that rule (audit GX:
    every leaf written nType 1 survived, the Reader scoring purity leaves by purity)."""
    def leaves(path):
        return [(float(n.get("purity")), int(n.get("nType")))
                for n in ET.parse(path).getroot().iter("Node") if n.get("nType") != "0"]

    tmva = leaves(TMVA_DIR / "ClassExample_BDTPurity.weights.xml")
    to_tmva_xml(random_model("purity"), tmp_path / "purity.xml")
    ours = leaves(tmp_path / "purity.xml")
    for found in (tmva, ours):
        assert {t for _, t in found} == {-1, 1}
        assert all(t == (1 if p > 0.5 else -1) for p, t in found)


@needs_fixtures
def test_yes_no_leaves_without_stored_purity_have_the_purity_tmva_writes(tmp_path):
    """TMVA's own yes/no file (ClassExample_BDT) writes every leaf's purity in [0, 1], nType
    1 above NodePurityLimit 0.5, else -1; an exported +-1 AdaBoost without stored node
    purities writes purity 1 or 0 by its leaf (audit HC: (v + 1) / 2 -> (v - 1) / 2,
    purities 0 and -1, survived)."""
    def leaves(path):
        return [(float(n.get("purity")), int(n.get("nType")))
                for n in ET.parse(path).getroot().iter("Node") if n.get("nType") != "0"]

    model = random_model("pm1")
    del model.forest_.extra["node_purity"]
    to_tmva_xml(model, tmp_path / "pm1.xml")
    for found in (leaves(TMVA_DIR / "ClassExample_BDT.weights.xml"), leaves(tmp_path / "pm1.xml")):
        assert {t for _, t in found} == {-1, 1}
        assert all(0.0 <= p <= 1.0 and t == (1 if p > 0.5 else -1) for p, t in found)


@needs_fixtures
@pytest.mark.parametrize(("kind", "fixture"), [("pm1", "ClassExample_BDT"), ("median", "Regression_BDT")])
def test_classes_block_is_the_one_tmva_writes(tmp_path, kind, fixture):
    """The Classes block of an export is TMVA's own: Signal index 0 and Background index 1
    for two classes, one class Regression with one target for a regressor (audit HC: a file
    naming both classes Background survived)."""
    def classes(path):
        root = ET.parse(path).getroot()
        targets = root.find("Targets")
        return (root.find("Classes").get("NClass"),
                [(c.get("Name"), c.get("Index")) for c in root.find("Classes")],
                None if targets is None else targets.get("NTrgt"))

    to_tmva_xml(random_model(kind, regression=kind == "median"), tmp_path / "m.xml")
    assert classes(tmp_path / "m.xml") == classes(TMVA_DIR / f"{fixture}.weights.xml")


def test_the_returned_counts_are_the_files(tmp_path):
    """to_tmva_xml's n_trees and n_nodes count the file's BinaryTree and Node elements (audit
    HC: n_nodes one too many survived)."""
    info = to_tmva_xml(random_model("pm1", n_trees=7), tmp_path / "m.xml")
    root = ET.parse(tmp_path / "m.xml").getroot()
    assert info["n_trees"] == len(root.findall("Weights/BinaryTree")) == 7
    assert info["n_nodes"] == len(list(root.iter("Node")))


def _multiclass_stumps(leaves: list[float]):
    """A one-round multi-class classifier: class k's tree is a stump of two leaves leaves[k]."""
    builder = ForestBuilder(1)
    for leaf in leaves:
        builder.add(1.0, feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False], value=[0.0, leaf, leaf],
                    bin_threshold=np.zeros(3), gain=np.zeros(3), cover=np.zeros(3))
    forest = builder.build()
    forest.extra.update(n_classes=len(leaves), base_scores=[0.0] * len(leaves))
    return from_forest("classifier", forest, ["a"], classes=[f"c{k}" for k in range(len(leaves))])


def test_multiclass_residual_bound_covers_what_the_residual_leaves_lose(tmp_path):
    """Below the first pass's bound the residual rounds are written; what they still lose,
    |v - f32(v) - f32(v - f32(v))| in exact rationals, moves a probability by up to half
    that, which max_response_error must cover (audit HC: the largest loss over a tree's
    nodes taken as the smallest, 0 at its split, survived); and a tolerance equal to the
    first pass's bound needs no residual rounds ('more than tolerance' refuses)."""
    from fractions import Fraction

    leaves = [16.0 + 0.3 * 2.0**-19, 1.0 / 3.0, -2.0]
    model = _multiclass_stumps(leaves)
    first = to_tmva_xml(model, tmp_path / "a.xml")
    assert first["n_residual_trees"] == 0
    again = to_tmva_xml(model, tmp_path / "b.xml", tolerance=first["max_response_error"])
    assert again["n_residual_trees"] == 0
    fine = to_tmva_xml(model, tmp_path / "c.xml", tolerance=1e-12)
    assert fine["n_residual_trees"] == 3

    def f32(x: Fraction) -> Fraction:
        return Fraction(float(np.float32(float(x))))

    lost = []
    for leaf in map(Fraction, leaves):
        rest = leaf - f32(leaf)
        lost.append(abs(rest - f32(rest)))
    assert max(lost) > 0
    assert fine["max_response_error"] >= float(max(lost)) / 2


def test_variables_min_max_are_the_span_of_the_cuts(tmp_path):
    """Without bin edges, each Variable's Min and Max are the smallest and largest finite cut
    of its feature (README: the model keeps no training range); audit HC: min -> max there
    survived."""
    model = random_model("pm1", n_trees=10)
    to_tmva_xml(model, tmp_path / "m.xml")
    forest = model.forest_
    for f, var in enumerate(ET.parse(tmp_path / "m.xml").getroot().find("Variables")):
        cuts = forest.threshold[(forest.feature == f) & np.isfinite(forest.threshold)]
        assert cuts.size > 1
        assert (float(var.get("Min")), float(var.get("Max"))) == (
            float(f"{cuts.min():.8e}"), float(f"{cuts.max():.8e}"))
