"""Audit of TMVA weight-file reading and of hepbdt's JSON model files.

TMVA files are read as ``TMVA::Reader`` reads them (TMVA 4.2.1's ``Configurable``,
``MethodBase::ReadStateFromXML``, ``MethodBDT``, ``DecisionTree::CheckEvent``): option names
in any case, TMVA's boolean words, every ``<Transform>``, the tree's ``AnalysisType`` deciding
what a leaf answers, numbers read as C++ streams read them (float32 by ``strtof``). The
references are the Reader's recorded scores in ``shared/tmva`` and a literal tree walk
written here; what the Reader cannot read the same way is refused. Model files must
not let binned and unbinned events be scored differently, nor name a key twice, and a
k-fold manifest must list its fold files in fold order.
"""

from __future__ import annotations

import copy
import json
import math
import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor, load_model
from hepbdt.binned import BinnedMatrix
from hepbdt.interop import TMVAFormatError, from_tmva_xml, tmva_response
from hepbdt.kfold import KFoldModel
from hepbdt.model import ModelFormatError

from .conftest import SHARED, tmva_inputs

TMVA_DIR = SHARED / "tmva"
needs_fixtures = pytest.mark.skipif(not (TMVA_DIR / "README.md").is_file(),
                                    reason="shared/tmva fixtures are not available")
EVENTS = 400  # fixture events compared (the first of TreeS or TreeR)


def _recorded(name: str) -> np.ndarray:
    return np.loadtxt(TMVA_DIR / f"{name}.reader.csv", delimiter=",", skiprows=1,
                      usecols=2, max_rows=EVENTS)


def _edited(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = (TMVA_DIR / f"{name}.weights.xml").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.edited.xml"
    path.write_text(text)
    return path


def _set_option(tmp_path: Path, name: str, option: str, value: str,
                new_name: str | None = None) -> Path:
    text = (TMVA_DIR / f"{name}.weights.xml").read_text()
    pattern = rf'<Option name="{option}" modified="(\w+)">[^<]*</Option>'
    assert re.search(pattern, text), option
    text = re.sub(pattern, rf'<Option name="{new_name or option}" modified="\1">{value}</Option>',
                  text)
    path = tmp_path / f"{name}.option.xml"
    path.write_text(text)
    return path


def _trees(path: Path) -> list[ET.Element]:
    return list(ET.parse(path).getroot().find("Weights"))


def _reached_leaves(trees: list[ET.Element], x: np.ndarray):
    """The leaf <Node> that each tree sends x to, by DecisionTree::CheckEvent's walk:
    right when x >= Cut (float32) for cType=1, the other way for cType=0."""
    for bt in trees:
        node = bt.find("Node")
        while int(node.get("nType")) == 0:
            right = bool(np.float32(x[int(node.get("IVar"))]) >= np.float32(float(node.get("Cut"))))
            if node.get("cType") == "0":
                right = not right
            node = next(c for c in node if c.get("pos") == ("r" if right else "l"))
        yield bt, node


# -- options as the Reader parses them ----------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("name, option, value, new_name", [
    ("ClassExample_BDTRealAda", "UseYesNoLeaf", "False", "useyesnoleaf"),  # was: default True
    ("ClassExample_BDTG", "BoostType", "Grad", "BOOSTTYPE"),  # was: default AdaBoost
    ("ClassExample_BDT", "UseYesNoLeaf", "kTRUE", None),  # was: not true, purity leaves
    ("ClassExample_BDTRealAda", "UseYesNoLeaf", "kFALSE", None),
    ("ClassExample_BDT", "BoostType", "RealAdaBoost", None),  # the Reader keeps UseYesNoLeaf
])
def test_options_are_read_as_the_reader_reads_them(tmp_path, name, option, value, new_name):
    path = _set_option(tmp_path, name, option, value, new_name)
    got = tmva_response(from_tmva_xml(path), tmva_inputs(name)[:EVENTS])
    np.testing.assert_allclose(got, _recorded(name), rtol=0, atol=1e-12)


@needs_fixtures
@pytest.mark.parametrize("option, value, message", [
    ("UseYesNoLeaf", "yes", r"UseYesNoLeaf='yes' is not a boolean.*ktrue"),
    ("DoPreselection", "kTRUE", "DoPreselection=True"),  # was: read as False
    ("NTrees", "850:UseYesNoLeaf=False", "holds no ':'"),  # the Reader splits it in two
])
def test_options_the_reader_reads_otherwise_are_refused(tmp_path, option, value, message):
    path = _set_option(tmp_path, "ClassExample_BDT", option, value)
    with pytest.raises(TMVAFormatError, match=message):
        from_tmva_xml(path)


def _purity_as_ns_nb(tmp_path: Path, name: str) -> Path:
    """The fixture as TMVA of 2009-2010 (ROOT 5.24-5.28) wrote its nodes: nS and nB (the
    node's signal and background weights), no purity."""
    text = (TMVA_DIR / f"{name}.weights.xml").read_text()
    path = tmp_path / f"{name}.nSnB.xml"
    path.write_text(re.sub(r'purity="([^"]*)"', lambda m: (
        f'nS="{float(m.group(1)) * 123.4:.9g}" nB="{(1 - float(m.group(1))) * 123.4:.9g}"'), text))
    return path


@needs_fixtures
def test_nodes_of_ns_and_nb_without_purity_are_read_as_the_reader_reads_them(tmp_path):
    """DecisionTreeNode::ReadAttributes takes purity = nS / (nS + nB), in float, where a
    node has no purity (refused before: 'lacks purity, which TMVA::Reader requires'; the
    real Reader scores these files, tmva_ns_nb.sh of the audit: 0.0 apart)."""
    X = tmva_inputs("ClassExample_BDTPurity")[:60]
    path = _purity_as_ns_nb(tmp_path, "ClassExample_BDTPurity")
    trees = _trees(path)
    weights = [float(bt.get("boostWeight")) for bt in trees]
    expected = []
    for x in X:
        total = 0.0
        for (_, leaf), a in zip(_reached_leaves(trees, x), weights, strict=True):
            n_s, n_b = np.float32(float(leaf.get("nS"))), np.float32(float(leaf.get("nB")))
            total += a * float(n_s / (n_s + n_b))
        expected.append(total / sum(weights))
    np.testing.assert_allclose(tmva_response(from_tmva_xml(path), X), expected, rtol=0, atol=1e-6)
    # yes/no leaves answer their nType: the Reader's recorded scores, whatever the purity
    got = tmva_response(from_tmva_xml(_purity_as_ns_nb(tmp_path, "ClassExample_BDT")),
                        tmva_inputs("ClassExample_BDT")[:EVENTS])
    np.testing.assert_allclose(got, _recorded("ClassExample_BDT"), rtol=0, atol=1e-12)


# -- what a leaf answers ------------------------------------------------------------------

@needs_fixtures
def test_grad_trees_of_analysis_type_0_answer_their_purity(tmp_path):
    """GetGradBoostMVA asks every tree CheckEvent(ev, kFALSE): a classification tree
    (AnalysisType 0) answers its purity, not its nType."""
    path = _edited(tmp_path, "ClassExample_BDTG",
                   ('<Weights NTrees="1000" AnalysisType="1">', '<Weights NTrees="1000" AnalysisType="0">'))
    X = np.random.default_rng(3).normal(size=(40, 4)).astype(np.float32)
    expected, trees = [], _trees(path)
    for x in X:
        total = 0.0
        for _, leaf in _reached_leaves(trees, x):
            total += float(np.float32(float(leaf.get("purity"))))
        expected.append(2.0 / (1.0 + math.exp(-2.0 * total)) - 1.0)
    np.testing.assert_allclose(tmva_response(from_tmva_xml(path), X), expected, rtol=0, atol=1e-12)


@needs_fixtures
def test_regression_trees_of_analysis_type_0_answer_their_purity(tmp_path):
    path = _set_option(tmp_path, "Regression_BDTG", "UseYesNoLeaf", "True")
    text = path.read_text().replace('<Weights NTrees="2000" AnalysisType="1">',
                                    '<Weights NTrees="2000" AnalysisType="0">')
    path.write_text(text)
    X = np.random.default_rng(4).normal(size=(20, 2)).astype(np.float32)
    expected, trees = [], _trees(path)
    for x in X:
        total, first = 0.0, None
        for bt, leaf in _reached_leaves(trees, x):
            first = float(np.float32(float(bt.get("boostWeight")))) if first is None else first
            total += float(np.float32(float(leaf.get("purity"))))
        expected.append(float(np.float32(total + first)))
    np.testing.assert_allclose(tmva_response(from_tmva_xml(path), X), expected, rtol=0, atol=0)


@needs_fixtures
def test_tree_type_is_read_before_analysis_type(tmp_path):
    """MethodBDT::ReadWeightsFromXML takes TreeType (pre-4.1 files) when it is there."""
    path = _edited(tmp_path, "ClassExample_BDTG",
                   ('<Weights NTrees="1000" AnalysisType="1">',
                    '<Weights NTrees="1000" TreeType="1" AnalysisType="0">'))
    got = tmva_response(from_tmva_xml(path), tmva_inputs("ClassExample_BDTG")[:EVENTS])
    np.testing.assert_allclose(got, _recorded("ClassExample_BDTG"), rtol=0, atol=1e-12)


# -- refused: what the Reader would read differently ----------------------------------------

NORMALIZE = ('<Transform Name="Normalize"><Selection><Input NInputs="1"><Input Type="Variable" '
             'Label="var1" Expression="var1"/></Input><Output NOutputs="1"><Output Type="Variable" '
             'Label="var1" Expression="var1"/></Output></Selection><Class ClassIndex="0"><Ranges>'
             '<Range Index="0" Min="-4" Max="4"/></Ranges></Class></Transform>')


@needs_fixtures
@pytest.mark.parametrize("edit, message", [
    (('<Transformations NTransformations="0"/>',
      f'<Transformations NTransformations="0">{NORMALIZE}</Transformations>'), "transformations"),
    (('<MVAPdfs/>', f'<MVAPdfs/><Transformations NTransformations="1">{NORMALIZE}</Transformations>'),
     "transformations"),
    (('</MethodSetup>', '<Weights NTrees="0" AnalysisType="0"/></MethodSetup>'), "2 <Weights>"),
    (('Cut="2.4080787599086761e-01"', 'Cut="2_4.080787599086761e-01"'), "is not a number"),
    (('IVar="3" Cut="2.4080787599086761e-01"', 'IVar="0_3" Cut="2.4080787599086761e-01"'),
     "is not an integer"),
    (('IVar="3" Cut="2.4080787599086761e-01"', 'IVar="\uff13" Cut="2.4080787599086761e-01"'),
     "is not an integer"),
    (('<BinaryTree type="DecisionTree" boostWeight="5.2692836643335406e-01" itree="0">',
      '<BinaryTree type="DecisionTree" boostWeight="5.2692836643335406e-01" itree="0"><Info/>'),
     "holds <Info>"),
    (('</BinaryTree>', '</BinaryTree><Monitor/>'), "holds <Monitor>"),
])
def test_files_the_reader_reads_otherwise_are_refused(tmp_path, edit, message):
    with pytest.raises(TMVAFormatError, match=message) as err:
        from_tmva_xml(_edited(tmp_path, "ClassExample_BDT", edit))
    assert "ClassExample_BDT.edited.xml" in str(err.value)


@needs_fixtures
def test_adaboost_r2_weights_without_a_positive_total_are_refused(tmp_path):
    text = (TMVA_DIR / "Regression_BDT.weights.xml").read_text()
    path = tmp_path / "r2.xml"
    path.write_text(re.sub(r'boostWeight="[^"]*"', 'boostWeight="0"', text))
    with pytest.raises(TMVAFormatError, match="add up to 0.0; its weighted median needs a positive"):
        from_tmva_xml(path)


# -- hand-made files ----------------------------------------------------------------------

HEAD = """<?xml version="1.0"?>
<MethodSetup Method="BDT::BDT">
  <GeneralInfo><Info name="AnalysisType" value="{analysis}"/></GeneralInfo>
  <Options><Option name="BoostType" modified="Yes">{boost}</Option></Options>
  <Variables NVar="1">
    <Variable VarIndex="0" Expression="x" Label="x" Type="F" Min="0" Max="1"/>
  </Variables>
  {classes}
  <Transformations NTransformations="0"/>
  <Weights NTrees="{n}" AnalysisType="{at}">{trees}</Weights>
</MethodSetup>
"""


def _leaf(pos: str, ntype: int, res: str = "0") -> str:
    return (f'<Node pos="{pos}" depth="1" IVar="-1" Cut="0" cType="1" res="{res}" purity="0.5" '
            f'nType="{ntype}"/>')


def _nearest_float32(text: str) -> float:
    """The float32 nearest to the decimal, ties to even, in exact arithmetic (strtof)."""
    exact = Fraction(text)
    lo = np.float32(float(exact))
    candidates = {lo, np.nextafter(lo, np.float32(-1)), np.nextafter(lo, np.float32(1))}
    return float(min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact),
                                                int(np.array(c).view(np.uint32)) & 1)))


@pytest.mark.parametrize("cut", ["0.10000000521540641784667968749999999",  # just below a midpoint
                                 "0.10000000521540641784667968750000001",
                                 "0.1000000052154064178466796875"])
def test_cuts_are_the_float32_nearest_to_their_text(tmp_path, cut):
    """float(text) lands on the midpoint of two float32 values; the Reader's strtof does not."""
    tree = (f'<BinaryTree type="DecisionTree" boostWeight="1" itree="0"><Node pos="s" depth="0" IVar="0" '
            f'Cut="{cut}" cType="1" purity="0.5" nType="0">{_leaf("l", 1)}{_leaf("r", -1)}</Node>'
            '</BinaryTree>')
    path = tmp_path / "cut.xml"
    path.write_text(HEAD.format(analysis="Classification", boost="AdaBoost", classes="", n=1,
                                at="0", trees=tree))
    x01 = np.float32(0.1)
    X = np.array([[x01], [np.nextafter(x01, np.float32(1))]], dtype=np.float32)
    threshold = _nearest_float32(cut)
    expected = np.where(X[:, 0].astype(np.float64) >= threshold, -1.0, 1.0)
    np.testing.assert_array_equal(tmva_response(from_tmva_xml(path), X), expected)


def _multiclass(tmp_path: Path, order: list[int]) -> Path:
    names = ["qcd", "top", "higgs"]
    classes = "".join(f'<Class Name="{names[i]}" Index="{i}"/>' for i in order)
    trees = "".join(f'<BinaryTree type="DecisionTree" boostWeight="1" itree="{t}">'
                    f'{_leaf("s", -99, res)}</BinaryTree>' for t, res in enumerate(["0.5", "-1", "2"]))
    path = tmp_path / "multi.xml"
    path.write_text(HEAD.format(analysis="Multiclass", boost="Grad", n=3, at="1", trees=trees,
                                classes=f'<Classes NClass="3">{classes}</Classes>'))
    return path


def test_multiclass_class_order(tmp_path):
    model = from_tmva_xml(_multiclass(tmp_path, [0, 1, 2]))
    assert list(model.classes_) == ["qcd", "top", "higgs"]
    F = np.array([0.5, -1.0, 2.0])
    expected = [np.float32(1.0 / (1.0 + sum(math.exp(F[j] - F[i]) for j in range(3) if j != i)))
                for i in range(3)]
    np.testing.assert_array_equal(tmva_response(model, np.zeros((1, 1), np.float32))[0], expected)
    # The Reader numbers classes in the order listed and ignores Index: "top" listed first
    # would be its class 0, which this file's Index calls "qcd".
    with pytest.raises(TMVAFormatError, match="numbers the classes in the order listed"):
        from_tmva_xml(_multiclass(tmp_path, [1, 0, 2]))


# -- model files ----------------------------------------------------------------------------

def _small_model(tmp_path: Path) -> tuple[BDTClassifier, Path, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.7, size=800) > 0).astype(int)
    model = BDTClassifier(n_trees=4, max_depth=3, random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    model.save(path)
    return model, path, X


def test_a_threshold_that_is_not_its_bin_edge_is_refused(tmp_path):
    """With bin_edges, staged scores of binned events follow bin_threshold: a threshold
    that disagrees would score them otherwise than the same events unbinned."""
    model, path, X = _small_model(tmp_path)
    binned = BinnedMatrix.from_features(X, model.bin_edges_)
    again = load_model(path)
    last = list(again.staged_decision_function(binned))[-1]
    np.testing.assert_array_equal(last, model.decision_function(binned.to_features()))
    doc = json.loads(path.read_text())
    node = doc["forest"]["feature"].index(0)
    for key, change in (("threshold", lambda v: v + 0.25), ("bin_threshold", lambda v: v + 3)):
        bad = copy.deepcopy(doc)
        bad["forest"][key][node] = change(bad["forest"][key][node])
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ModelFormatError, match=f"forest node {node}: threshold .* is not the edge"):
            load_model(tmp_path / "bad.json")
    doc["bin_edges"] = None  # without edges nothing is binned with the trees' bins: fine
    doc["forest"]["threshold"][node] += 0.25
    (tmp_path / "ok.json").write_text(json.dumps(doc))
    assert load_model(tmp_path / "ok.json").forest_.threshold[node] == np.float32(
        model.forest_.threshold[node] + 0.25)


def test_a_key_named_twice_is_refused(tmp_path):
    _, path, _ = _small_model(tmp_path)
    text = path.read_text()
    assert text.count('"base_score": ') == 1
    doubled = text.replace('"base_score": ', '"base_score": 5.0, "base_score": ')
    (tmp_path / "twice.json").write_text(doubled)
    with pytest.raises(ModelFormatError, match="has the key 'base_score' twice"):
        load_model(tmp_path / "twice.json")


@pytest.mark.parametrize("make", [
    lambda X, y, m: BDTClassifier(boosting="adaboost", n_trees=4, random_state=0).fit(X, y),
    lambda X, y, m: BDTClassifier(boosting="newton", n_trees=4, random_state=0).fit(X, y),
    lambda X, y, m: BDTRegressor(n_trees=4, loss="huber", random_state=0).fit(X, m * 3),
    lambda X, y, m: BDTClassifier(n_trees=3, random_state=0).fit(X, np.array(list("abc"))[m.astype(int) % 3]),
    lambda X, y, m: BDTClassifier(n_trees=3, decorrelation_map="ddt", random_state=0)
    .fit(X, y, decorrelate=m),
    lambda X, y, m: BDTClassifier(boosting="adaboost", n_trees=3, decorrelation="uboost",
                                  random_state=0).fit(X, y, decorrelate=m),
], ids=["adaboost", "newton", "regressor", "multiclass", "ddt", "uboost"])
def test_models_of_every_kind_load_bit_for_bit(tmp_path, make):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    mass = np.arange(600) % 97 + 10.0
    model = make(X, y, mass)
    model.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    score = "decision_function" if hasattr(model, "decision_function") else "predict"
    extra = {"decorrelate": mass} if "decorrelation_map" in model.forest_.extra else {}
    ours, theirs = getattr(model, score)(X, **extra), getattr(again, score)(X, **extra)
    assert ours.tobytes() == theirs.tobytes()
    again.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "m.json").read_bytes()


def test_a_kfold_manifest_with_its_fold_files_reordered_is_refused(tmp_path):
    """Event e is scored by the model at place e % k: fold files listed out of order would
    score every event with the model trained on it."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(900, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(int)
    event = np.arange(900)
    folds = [BDTClassifier(n_trees=3, max_depth=2, random_state=0)
             .fit(X[event % 3 != i], y[event % 3 != i]) for i in range(3)]
    KFoldModel(folds, by="event").save(tmp_path / "model.json")
    expected = np.choose(event % 3, [m.decision_function(X) for m in folds])
    assert load_model(tmp_path / "model.json").decision_function(X, event).tobytes() == \
        expected.tobytes()
    doc = json.loads((tmp_path / "model.json").read_text())
    doc["models"] = [doc["models"][i] for i in (0, 2, 1)]
    (tmp_path / "swapped.json").write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="'models' lists 'model_fold2.json' for fold 1"):
        load_model(tmp_path / "swapped.json")


def test_an_imported_models_tmva_record_is_checked_when_loaded(tmp_path, shared_dir):
    # Hand-edited, it loaded, and save_tmva then failed with a raw ValueError inside.
    from hepbdt.interop import from_tmva_xml
    from hepbdt.model import ModelFormatError

    model = from_tmva_xml(shared_dir / "tmva" / "ClassExample_BDTBagging.weights.xml")
    path = tmp_path / "m.json"
    model.save(path)
    load_model(path).save_tmva(tmp_path / "again.weights.xml")  # the record as written loads
    original = json.loads(path.read_text())

    def record(d):
        return (d["forest"] if "forest" in d else d)["extra"]["tmva"]

    edits = {
        "options": lambda t: t.update(options=[["NTrees"]]),
        "variables": lambda t: t.update(variables=[{"name": "var1", "min": "x"}] * 4),
        "node_purity": lambda t: t.update(node_purity=["a"] * len(t["node_purity"])),
    }
    for key, edit in edits.items():
        d = copy.deepcopy(original)
        edit(record(d))
        bad = tmp_path / f"{key}.json"
        bad.write_text(json.dumps(d))
        with pytest.raises(ModelFormatError, match=f"extra.tmva.{key}"):
            load_model(bad)
