"""TMVA options as TMVA uses them: ``[method]`` keys beside ``tmva_options``, the TMVA XML
export's ``<Options>`` block and its read-back, the values ``MethodBDT::ProcessOptions``
sets without marking them modified, nCuts <= 0, and the multi-class BDTG option string."""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.analysis.config import _method_config, _Problems, apply_overrides
from hepbdt.estimators import ParameterError
from hepbdt.interop import from_tmva_xml
from hepbdt.tmva_options import TMVAOptionError, parse_tmva_options, to_tmva_options

TMVA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "tmva"
needs_fixtures = pytest.mark.skipif(not (TMVA_DIR / "README.md").is_file(),
                                    reason="shared/tmva fixtures are not available")


def method_config(table: dict, n_classes: int = 2, task: str = "classification"):
    """(parameters, problem lines) of a ``[method]`` table."""
    problems = _Problems("analysis.toml", set())
    params, _ = _method_config(table, task, problems, n_classes)
    return params, problems.lines


def written_options(path: Path) -> dict[str, tuple[bool, str]]:
    """The file's options: name -> (modified, value)."""
    return {o.get("name"): (o.get("modified") == "Yes", (o.text or "").strip())
            for o in ET.parse(path).getroot().find("Options")}


def classification_data(n_classes: int = 2, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(900, 4)).astype(np.float32)
    if n_classes == 2:
        y = (X[:, 0] + 0.5 * X[:, 1] + 0.7 * rng.normal(size=900) > 0).astype(int)
    else:
        y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=900), [-0.5, 0.5])
    return X, y, rng.uniform(0.5, 2.0, size=900)


# -- 1. a [method] key and tmva_options: one or the other ---------------------------------

def test_a_key_that_tmva_options_gives_too_is_refused_naming_both():
    _, lines = method_config({"tmva_options": "NTrees=100:MaxDepth=2:BoostType=Grad:Shrinkage=0.5",
                              "n_trees": 300, "max_depth": 3, "min_node_size": 0.025,
                              "random_state": 1})
    assert len(lines) == 2, lines
    assert lines[0].startswith("analysis.toml: [method] n_trees: given twice: n_trees = 300 "
                               "here and NTrees=100 in tmva_options")
    assert lines[1].startswith("analysis.toml: [method] max_depth: given twice: max_depth = 3 "
                               "here and MaxDepth=2 in tmva_options")
    _, lines = method_config({"tmva_options": "BoostType=AdaBoost:UseBaggedBoost:"
                              "BaggedSampleFraction=0.5", "subsample": 0.3})
    assert len(lines) == 1 and "subsample = 0.3 here and BaggedSampleFraction=0.5:" in lines[0]


def test_tmva_options_from_set_beside_keys_is_refused():
    doc = {"method": {"boosting": "adaboost", "n_trees": 300, "max_depth": 3,
                      "min_node_size": 0.025}}
    done = apply_overrides(doc, ["method.tmva_options=NTrees=100:MaxDepth=2:BoostType=Grad:"
                                 "Shrinkage=0.5"])
    problems = _Problems("analysis.toml", done)
    _method_config(doc["method"], "classification", problems)
    assert [line.split(": ")[1] for line in problems.lines] == [
        "[method] boosting", "[method] n_trees", "[method] max_depth"]
    assert all("in tmva_options (from --set)" in line for line in problems.lines)


def test_boosting_beside_tmva_options_is_refused():
    _, lines = method_config({"tmva_options": "NTrees=100:BoostType=Grad:Shrinkage=0.5",
                              "boosting": "adaboost"})
    assert len(lines) == 1 and "[method] boosting: given twice: boosting = 'adaboost' here and " \
        "BoostType=Grad in tmva_options" in lines[0]
    _, lines = method_config({"tmva_options": "NTrees=100", "boosting": "gradient"})
    assert len(lines) == 1 and "[method] boosting:" in lines[0] and "BoostType" in lines[0]


def test_keys_for_options_the_string_leaves_out_are_taken():
    params, lines = method_config({"tmva_options": "NTrees=100:BoostType=Grad:Shrinkage=0.5",
                                   "min_node_size": 0.025, "negative_weights": "pair",
                                   "random_state": 3})
    assert lines == []
    assert (params["n_trees"], params["learning_rate"], params["min_node_size"],
            params["negative_weights"], params["random_state"]) == (100, 0.5, 0.025, "pair", 3)


# -- 2. the export's <Options> describe the trained model, and read back ------------------

EXPORTED = [
    ("classifier", "NTrees=15:MaxDepth=2:MinNodeSize=1%:nCuts=40:BoostType=AdaBoost:"
     "AdaBoostBeta=1.0:SeparationType=CrossEntropy:UseBaggedBoost:BaggedSampleFraction=0.5:"
     "NegWeightTreatment=PairNegWeightsGlobal"),
    ("classifier", "NTrees=12:MaxDepth=3:MinNodeSize=2.5%:BoostType=RealAdaBoost:nCuts=-1:"
     "SeparationType=MisClassificationError:UseRandomisedTrees:UseNvars=2:UsePoissonNvars=False"),
    ("classifier", "NTrees=10:MaxDepth=4:MinNodeSize=3%:BoostType=Bagging:"
     "BaggedSampleFraction=0.7:SeparationType=SDivSqrtSPlusB:SkipNormalization"),
    ("classifier", "NTrees=12:MaxDepth=2:MinNodeSize=1.5%:BoostType=Grad:Shrinkage=0.3:nCuts=30:"
     "UseBaggedBoost:BaggedSampleFraction=0.8:NegWeightTreatment=IgnoreNegWeightsInTraining:"
     "SigToBkgFraction=2"),
    ("regressor", "NTrees=12:MaxDepth=4:MinNodeSize=1%:BoostType=Grad:Shrinkage=0.123456789:"
     "nCuts=-1:RegressionLossFunctionBDTG=Huber:HuberQuantile=0.9"),
]


@pytest.mark.parametrize("kind, options", EXPORTED)
def test_export_reads_back_the_models_parameters(tmp_path, kind, options):
    X, y, w = classification_data()
    cls = BDTRegressor if kind == "regressor" else BDTClassifier
    model = cls.from_tmva(options, random_state=0).fit(X, X[:, 0] ** 2 + y if kind == "regressor"
                                                       else y, w)
    path = tmp_path / "m.weights.xml"
    model.save_tmva(path)
    expected = {k: v for k, v in model.get_params().items() if k != "random_state"}
    back = from_tmva_xml(path).get_params()
    assert {k: v for k, v in back.items() if k != "random_state"} == expected
    # Every option of the model's string is written as set (modified="Yes"), and the old
    # name of the bagged fraction repeats it, not modified, as TMVA writes it.
    written = written_options(path)
    for token in model.to_tmva().split(":"):
        name = token.lstrip("!").partition("=")[0]
        assert written[name][0], name
    assert written["GradBaggingFraction"] == (False, written["BaggedSampleFraction"][1])


def test_export_writes_the_options_of_the_p3_audit(tmp_path):
    X, y, _ = classification_data()
    model = BDTClassifier.from_tmva(EXPORTED[0][1], random_state=0).fit(X, y)
    path = tmp_path / "ada.weights.xml"
    model.save_tmva(path)
    written = written_options(path)
    assert written["MinNodeSize"] == (True, "1%") and written["nCuts"] == (True, "40")
    assert written["AdaBoostBeta"] == (True, "1.000000e+00")
    assert written["SeparationType"] == (True, "crossentropy")
    assert written["UseBaggedBoost"] == (True, "True")
    assert written["BaggedSampleFraction"] == (True, "5.000000e-01")
    assert "SigToBkgFraction" not in written or written["SigToBkgFraction"][1] in ("1", "1.000000e+00")
    assert written["NegWeightTreatment"] == (True, "pairnegweightsglobal")
    # Grad uses SigToBkgFraction once, as hepbdt does: written as set
    grad = BDTClassifier.from_tmva(EXPORTED[3][1], random_state=0).fit(X, y)
    grad.save_tmva(tmp_path / "grad.weights.xml")
    assert written_options(tmp_path / "grad.weights.xml")["SigToBkgFraction"] == (True,
                                                                                  "2.000000e+00")


@pytest.mark.parametrize("boost", ["AdaBoost", "RealAdaBoost"])
def test_adaboost_sig_to_bkg_fraction_is_refused_both_ways(boost):
    # TMVA's AdaBoost multiplies the signal weights by SigToBkgFraction after every tree
    # (MethodBDT::AdaBoost: ScaleBoostWeight(globalNormWeight * fSigToBkgFraction)), a factor
    # that compounds; hepbdt's sig_to_bkg_fraction scales the classes once
    with pytest.raises(TMVAOptionError, match="SigToBkgFraction=2.0: TMVA's AdaBoost"):
        BDTClassifier.from_tmva(f"BoostType={boost}:SigToBkgFraction=2")
    model = BDTClassifier(boosting="adaboost", n_trees=10, min_node_size=0.05, negative_weights="keep",
                          sig_to_bkg_fraction=2.0)
    with pytest.raises(TMVAOptionError, match="sig_to_bkg_fraction=2.0 has no TMVA equivalent"):
        model.to_tmva()
    assert "SigToBkgFraction" not in BDTClassifier(boosting="adaboost", n_trees=10,
                                                  min_node_size=0.05,
                                                  negative_weights="keep").to_tmva()


def test_export_of_a_regressor_writes_its_depth_and_tmvas_regression_defaults(tmp_path):
    X, _, _ = classification_data()
    X[::5, 1] = np.nan  # NaN routing adds nodes below the model's depth
    model = BDTRegressor(n_trees=6, max_depth=3, learning_rate=0.1, loss="squared",
                         negative_weights="keep").fit(X, X[:, 0] + np.nan_to_num(X[:, 1]))
    path = tmp_path / "r.weights.xml"
    model.save_tmva(path)
    depths = [int(n.get("depth")) for n in ET.parse(path).getroot().iter("Node")]
    assert max(depths) > 3
    written = written_options(path)
    assert written["MaxDepth"] == (True, "3")
    assert written["RegressionLossFunctionBDTG"] == (True, "LeastSquares")
    # min_node_size 0 and the quantile bins alone have no TMVA spelling: TMVA's regression
    # defaults stay, not modified (not classification's 5%, depth 3, yes/no leaves).
    assert written["MinNodeSize"] == (False, "0.2%")
    assert written["nCuts"] == (False, "20")
    assert written["UseYesNoLeaf"] == (False, "False")
    assert written["SeparationType"] == (False, "regressionvariance")
    assert written["UseNvars"] == (False, "2")  # int(sqrt(4) + 0.6), TMVA's default


def test_export_of_a_multiclass_bdtg_reads_back(tmp_path):
    X, y, _ = classification_data(3)
    model = BDTClassifier.from_tmva("NTrees=5:BoostType=Grad:Shrinkage=0.1:MaxDepth=2:"
                                    "MinNodeSize=2%:nCuts=30").fit(X, y)
    path = tmp_path / "mc.weights.xml"
    model.save_tmva(path)
    back = from_tmva_xml(path)
    assert back.get_params() == model.get_params()
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X), rtol=0, atol=1e-6)


# -- 3. the values ProcessOptions sets are the ones read ----------------------------------

@needs_fixtures
@pytest.mark.parametrize("name, expected", [
    ("ClassExample_BDT", {"boosting": "adaboost", "use_yes_no_leaf": True, "n_trees": 850,
                          "subsample": 0.5, "criterion": "gini", "n_cuts": 20}),
    ("ClassExample_BDTRealAda", {"boosting": "adaboost", "use_yes_no_leaf": False,
                                 "criterion": "cross_entropy", "n_trees": 200}),
    ("ClassExample_BDTPurity", {"use_yes_no_leaf": False, "criterion": "misclassification",
                                "beta": 1.0, "n_cuts": 40, "max_depth": 4}),
    ("ClassExample_BDTBagging", {"boosting": "bagging", "subsample": 0.6,
                                 "subsample_mode": "poisson", "use_yes_no_leaf": True}),
    ("ClassExample_BDTG", {"boosting": "gradient", "loss": None, "learning_rate": 0.1,
                           "max_depth": 2, "negative_weights": "ignore"}),
    ("Regression_BDTG", {"boosting": "gradient", "loss": "huber", "huber_alpha": 0.7,
                         "n_trees": 2000, "min_node_size": 0.002, "n_cuts": 20,
                         "negative_weights": "ignore"}),
])
def test_tmva_files_give_the_parameters_tmva_trained_with(name, expected):
    params = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml").get_params()
    assert {k: params[k] for k in expected} == expected


@needs_fixtures
@pytest.mark.parametrize("name, kind, options", [
    ("ClassExample_BDTG", "classifier", "NTrees=1000:MinNodeSize=2.5%:BoostType=Grad:"
     "Shrinkage=0.10:UseBaggedBoost:BaggedSampleFraction=0.5:nCuts=20:MaxDepth=2"),
    ("Regression_BDTG", "regressor", "NTrees=2000:BoostType=Grad:Shrinkage=0.1:UseBaggedBoost:"
     "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=3"),
    ("ClassExample_BDT", "classifier", "NTrees=850:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:"
     "AdaBoostBeta=0.5:UseBaggedBoost:BaggedSampleFraction=0.5:SeparationType=GiniIndex:nCuts=20"),
])
def test_default_negative_weight_treatment_is_the_one_root_wrote(name, kind, options):
    # The string the fixture was trained with (shared/tmva/README.md) leaves NegWeightTreatment
    # at its default; ROOT writes the treatment that training used after ProcessOptions.
    root = ET.parse(TMVA_DIR / f"{name}.weights.xml").getroot()
    written = next(o.text for o in root.iter("Option") if o.get("name") == "NegWeightTreatment")
    as_written = parse_tmva_options(f"{options}:NegWeightTreatment={written}", kind)
    assert parse_tmva_options(options, kind)["negative_weights"] == as_written["negative_weights"]
    assert as_written["negative_weights"] == ("ignore" if "Grad" in options else "inverse_boost")


def _edited_fixture(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (TMVA_DIR / f"{name}.weights.xml").read_text()
    assert old in text
    path = tmp_path / f"{name}.weights.xml"
    path.write_text(text.replace(old, new))
    return path


@needs_fixtures
def test_realadaboost_file_gives_purity_leaves(tmp_path):
    # BoostType=RealAdaBoost: ProcessOptions writes BoostType=AdaBoost and sets
    # UseYesNoLeaf=False without marking it modified.
    path = _edited_fixture(tmp_path, "ClassExample_BDTRealAda",
                           '<Option name="UseYesNoLeaf" modified="Yes">False</Option>',
                           '<Option name="UseYesNoLeaf" modified="No">False</Option>')
    model = from_tmva_xml(path)
    assert model.get_params()["use_yes_no_leaf"] is False
    assert "UseYesNoLeaf=False" in model.to_tmva()


@needs_fixtures
@pytest.mark.parametrize("name, old, new", [
    # Regression trees use RegressionVariance whatever SeparationType says (fSepType = NULL).
    ("Regression_BDTG", '<Option name="SeparationType" modified="No">regressionvariance</Option>',
     '<Option name="SeparationType" modified="Yes">giniindex</Option>'),
    # Grad does no pruning whatever PruneMethod says (fPruneMethod = kNoPruning).
    ("ClassExample_BDTG", '<Option name="PruneMethod" modified="No">nopruning</Option>',
     '<Option name="PruneMethod" modified="Yes">costcomplexity</Option>'),
])
def test_options_that_processoptions_overrides_are_not_read(tmp_path, name, old, new):
    original = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml").get_params()
    assert from_tmva_xml(_edited_fixture(tmp_path, name, old, new)).get_params() == original


@needs_fixtures
def test_an_older_tmvas_defaults_are_read_as_written(tmp_path):
    # TMVA before 4.2 had other defaults (NTrees 200 in 4.0's InitBDT, 400 in 4.1's Init);
    # its file writes the value training used, modified="No", and the Reader sets every
    # written option (Configurable::ReadOptionsFromXML). The 200-tree RealAdaBoost fixture
    # as such a TMVA writes it: NTrees=200 not given.
    path = _edited_fixture(tmp_path, "ClassExample_BDTRealAda",
                           '<Option name="NTrees" modified="Yes">200</Option>',
                           '<Option name="NTrees" modified="No">200</Option>')
    model = from_tmva_xml(path)
    assert model.forest_.n_rounds == int(written_options(path)["NTrees"][1]) == 200
    assert model.get_params()["n_trees"] == 200  # was 800, today's default
    assert "NTrees=200:" in model.to_tmva()
    # before 4.2 NNodesMax (default 100000) limited the nodes beside MaxDepth; since then it
    # is converted into a depth (100000 nodes: 11): no option string says the old meaning
    old = _edited_fixture(tmp_path, "ClassExample_BDTRealAda",
                          '<Option name="NNodesMax" modified="No">0</Option>',
                          '<Option name="NNodesMax" modified="No">100000</Option>')
    params = from_tmva_xml(old).get_params()
    assert params["max_depth"] == 3 and params["n_trees"] == 200


# -- 4. nCuts <= 0: the grid TMVA uses, both ways ------------------------------------------

@pytest.mark.parametrize("options, kind, n_cuts", [
    ("BoostType=Grad:MaxDepth=3:nCuts=-1", "regressor", 20),  # ProcessOptions: nCuts<0 -> 20
    ("BoostType=Grad:MaxDepth=3:nCuts=0", "regressor", 200),  # DecisionTree: nCuts<=0 -> 200
    ("BoostType=Grad:nCuts=-1", "classifier", 200),  # Grad trees have no separation type
    ("BoostType=Grad:nCuts=0", "classifier", 200),
    ("BoostType=Grad:nCuts=20", "classifier", 20),
    ("BoostType=AdaBoost:nCuts=-1", "classifier", 0),  # the full scan: quantile bins alone
    ("BoostType=Bagging:nCuts=0", "classifier", 0),
])
def test_ncuts_is_the_grid_tmva_uses(options, kind, n_cuts):
    params = parse_tmva_options(options, kind)
    assert params["n_cuts"] == n_cuts
    assert parse_tmva_options(to_tmva_options(params, kind), kind) == params


def test_quantile_bins_alone_have_no_tmva_spelling_for_grad_and_regression():
    for cls, kind in ((BDTClassifier, "classifier"), (BDTRegressor, "regressor")):
        params = cls(boosting="gradient", n_trees=10, max_depth=3, min_node_size=0.01,
                     negative_weights="keep", n_cuts=0).get_params()
        with pytest.raises(TMVAOptionError, match="n_cuts=0 has no TMVA equivalent"):
            to_tmva_options(params, kind)
    ada = BDTClassifier(boosting="adaboost", n_trees=10, max_depth=3, min_node_size=0.01,
                        negative_weights="keep", n_cuts=0)
    assert "nCuts=-1" in ada.to_tmva()


# -- 5. the multi-class BDTG option string ----------------------------------------------------

BDTG = "NTrees=8:BoostType=Grad:Shrinkage=0.1:MaxDepth=3:MinNodeSize=2%"


def test_multiclass_bdtg_string_trains_tmvas_model():
    X, y, w = classification_data(3)
    model = BDTClassifier.from_tmva(BDTG, random_state=0).fit(X, y, w)
    # TMVA's multi-class BDTG: softmax, no class reweighting (InitEventSample).
    native = BDTClassifier(boosting="gradient", n_trees=8, learning_rate=0.1, max_depth=3,
                           min_node_size=0.02, n_cuts=20, negative_weights="keep",
                           sig_to_bkg_fraction=None, random_state=0).fit(X, y, w)
    np.testing.assert_array_equal(model.predict_proba(X), native.predict_proba(X))
    with pytest.raises(ParameterError, match="sig_to_bkg_fraction"):  # given: two-class only
        BDTClassifier.from_tmva(BDTG + ":SigToBkgFraction=2").fit(X, y, w)


def test_binary_bdtg_string_is_unchanged():
    X, y, w = classification_data(2)
    model = BDTClassifier.from_tmva(BDTG, random_state=0).fit(X, y, w)
    before = BDTClassifier(**{**parse_tmva_options(BDTG), "loss": "deviance",
                              "sig_to_bkg_fraction": 1.0}, random_state=0).fit(X, y, w)
    np.testing.assert_array_equal(model.decision_function(X), before.decision_function(X))


def test_multiclass_configuration_takes_the_bdtg_string():
    params, lines = method_config({"tmva_options": "NTrees=200:BoostType=Grad:Shrinkage=0.1:"
                                   "MaxDepth=3"}, n_classes=3)
    assert lines == [] and params["loss"] is None and params["sig_to_bkg_fraction"] == "tmva"


# -- 5. a hepbdt export records the parameters TMVA's options cannot say ----------------------

def test_export_records_parameters_that_tmva_cannot_express(tmp_path):
    # the tmva-options audit (2026-12-02): Options hold TMVA's defaults for these (nCuts=20,
    # MinNodeSize=5%), which read back were another model's parameters
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 3))
    y = (X[:, 0] + rng.normal(size=800) > 0).astype(int)
    w = np.where(rng.random(800) < 0.1, -0.5, 1.0)
    model = BDTClassifier(n_trees=20, max_depth=3, n_cuts=0, random_state=1).fit(X, y, w)
    path = tmp_path / "m.weights.xml"
    model.save_tmva(path)
    options = {o.get("name"): (o.get("modified"), o.text) for o in ET.parse(path).iter("Option")}
    assert options["nCuts"] == ("No", "20") and options["NegWeightTreatment"][0] == "No"
    assert options["NegWeightTreatment"][1] == "ignorenegweightsintraining"  # as ROOT writes Grad
    back = from_tmva_xml(path)
    assert back.get_params() == model.get_params()
    refit, again = back.fit(X, y, w), BDTClassifier(**model.get_params()).fit(X, y, w)
    np.testing.assert_array_equal(refit.decision_function(X), again.decision_function(X))


@pytest.mark.parametrize("labels, signal_label", [((0, 1), 0), (("bkg", "sig"), "sig"),
                                                  ((1, 2), None)])
def test_export_keeps_the_labels_a_tmva_file_cannot(tmp_path, labels, signal_label):
    # the exports audit (2026-12-02): read back, classes_ were [0, 1] under the recorded
    # signal_label, and predict() disagreed with the model on every event
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=600) > 0, labels[1], labels[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BDTClassifier(n_trees=10, signal_label=signal_label).fit(X, y)
    model.save_tmva(tmp_path / "m.weights.xml")
    back = from_tmva_xml(tmp_path / "m.weights.xml")
    assert back.classes_.tolist() == model.classes_.tolist()
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    # the file's leaves are float32 (README: within the export's tolerance, 1e-6)
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("record, why", [
    ("{not json", "not a record of parameters"),
    ('{"params": {"n_trees": -3}, "classes": [0, 1]}', "n_trees"),
    ('{"params": {"no_such_option": 1}, "classes": [0, 1]}', "unknown options"),
    ('{"params": {"n_trees": 5, "n_trees": 6}, "classes": [0, 1]}', "twice"),
    ('{"params": {}, "classes": [1, 1]}', "different labels"),
    ('{"params": {}, "classes": null}', "classifier's labels"),
    ('{"n_trees": 5}', "'params' and 'classes'"),
])
def test_a_bad_parameters_record_is_refused(tmp_path, record, why):
    from hepbdt.interop.tmva import TMVAFormatError
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    model = BDTClassifier(n_trees=3).fit(X, (X[:, 0] > 0).astype(int))
    path = tmp_path / "m.weights.xml"
    model.save_tmva(path)
    root = ET.parse(path)
    info = next(i for i in root.iter("Info") if i.get("name") == "hepbdt parameters")
    info.set("value", record)
    root.write(path)
    with pytest.raises(TMVAFormatError, match=why):
        from_tmva_xml(path)


def test_a_newton_record_on_adaboost_trees_leaves_them_as_the_reader_reads_them(tmp_path):
    """The record's newton doubles a Grad file's leaves (its export halved them); an
    AdaBoost file's trees are the Reader's weighted mean whatever a record says."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(int)
    model = BDTClassifier(boosting="adaboost", n_trees=5, max_depth=2).fit(X, y)
    path = tmp_path / "m.weights.xml"
    model.save_tmva(path)
    root = ET.parse(path)
    info = next(i for i in root.iter("Info") if i.get("name") == "hepbdt parameters")
    record = json.loads(info.get("value"))
    record["params"]["boosting"] = "newton"
    info.set("value", json.dumps(record))
    root.write(path)
    back = from_tmva_xml(path)
    np.testing.assert_allclose(back.decision_function(X), model.decision_function(X),
                               rtol=0, atol=1e-6)


# -- 6. options TMVA sets aside for a method are set aside, with a warning ----------------------

@pytest.mark.parametrize("kind, base, extra", [
    # MethodBDT::ProcessOptions: regression sets fUseYesNoLeaf, fSepType, fUseFisherCuts aside
    ("regressor", "BoostType=Grad:MaxDepth=3", "UseYesNoLeaf=True"),
    ("regressor", "BoostType=Grad:MaxDepth=3", "SeparationType=GiniIndex"),
    ("regressor", "BoostType=Grad:MaxDepth=3", "UseFisherCuts"),
    # Grad and randomised trees: fPruneMethod = kNoPruning
    ("classifier", "BoostType=Grad", "PruneMethod=CostComplexity:PruneStrength=5"),
    ("classifier", "UseRandomisedTrees:UsePoissonNvars=False", "PruneMethod=ExpectedError"),
    ("classifier", "BoostType=Grad", "NodePurityLimit=0.6"),  # Grad scores by responses
])
def test_options_processoptions_sets_aside_are_accepted_as_tmva_accepts_them(kind, base, extra):
    from hepbdt.tmva_options import TMVAOptionWarning
    with pytest.warns(TMVAOptionWarning, match="set aside, as TMVA does"):
        params = parse_tmva_options(f"{base}:{extra}", kind)
    assert params == parse_tmva_options(base, kind)


@pytest.mark.parametrize("options", ["BoostType=AdaBoost:PruneMethod=CostComplexity",
                                     "BoostType=AdaBoost:NodePurityLimit=0.6"])
def test_options_that_would_change_an_adaboost_model_are_still_refused(options):
    with pytest.raises(TMVAOptionError):
        parse_tmva_options(options, "classifier")
