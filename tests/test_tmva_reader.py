"""hepbdt's TMVA XML against the real TMVA::Reader (../shared/tmva-reader, ROOT's pip wheel).

Every booster, classification and regression, shallow and deep trees, trained with and
without NaN: the model is exported, the Reader scores events from a ROOT file, and its
scores must equal ``tmva_response``: classifiers to the bound README states for their
booster (the file's float32 leaves and boost weights: 5e-8 for the AdaBoost family and
gradient/newton at learning rate 0.1, 3e-7 for realadaboost and learning rate 1) and to
the export's ``max_response_error``, regressors to four float32 rounding steps of the
value (the Reader returns a float32). Multi-class files give ``EvaluateMulticlass`` equal
to ``predict_proba``, for events with NaN inputs too. TMVA-written files, read by hepbdt
and written again, must give the Reader's stored scores.

Locally these tests skip unless the Reader can run; ``bash scripts/test`` provides it when
``CI=true`` or ``HEPBDT_TMVA_READER=1``. In CI a missing Reader fails them.
"""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.interop import from_tmva_xml, tmva_response, to_tmva_xml
from hepbdt.interop.tmva_export import TMVAExportError

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TOOL = Path(os.environ.get("TMVA_APPLY", SHARED / "tmva-reader" / "tmva_apply"))
ENABLE = ("the real TMVA::Reader is not available: run `HEPBDT_TMVA_READER=1 bash scripts/test` "
          "(it installs root==0.1a12 into .rootenv) or set TMVA_READER_PYTHON to a Python "
          "with root==0.1a12")


def _reader_works() -> str | None:
    """None when tmva_apply runs, else why not."""
    if not TOOL.is_file():
        return f"{TOOL} is not there"
    try:
        done = subprocess.run(["sh", str(TOOL), "--version"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip()


@pytest.fixture(scope="module")
def reader() -> Path:
    """The tmva_apply wrapper; skip locally, fail in CI, when it cannot run."""
    why = _reader_works()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the TMVA::Reader tests: {why}")
        pytest.skip(ENABLE)
    return TOOL


def _reader_scores(tool: Path, xml: Path, X: np.ndarray, names: list[str], folder: Path
                   ) -> np.ndarray:
    """The Reader's score of every row of X (branches named as the XML's variables)."""
    data = folder / f"{xml.stem}.input.root"
    with uproot.recreate(data) as file:
        file.mktree("T", {n: np.float32 for n in names}).extend(
            {n: np.ascontiguousarray(X[:, j], dtype=np.float32) for j, n in enumerate(names)})
    out = folder / f"{xml.stem}.csv"
    done = subprocess.run(["sh", str(tool), "--xml", str(xml), "--input", str(data), "--trees",
                           "T", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out) as handle:
        return np.array([float(row["score"]) for row in csv.DictReader(handle)])


def _data(n: int, m: int = 4, nan: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    y = (X[:, 0] + 0.8 * X[:, 1] * X[:, 2] + rng.normal(scale=0.7, size=n) > 0).astype(int)
    target = (3.0 * X[:, 0] + X[:, 1] ** 2 + rng.normal(scale=0.3, size=n)).astype(np.float64)
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X, y, target


CLASSIFIERS = [
    {"boosting": "gradient"},
    {"boosting": "newton"},
    {"boosting": "adaboost"},
    {"boosting": "adaboost", "use_yes_no_leaf": False},
    {"boosting": "bagging", "subsample": 0.6, "subsample_mode": "poisson"},
    {"boosting": "eps"},
    {"boosting": "gradient", "max_leaves": 20},  # leaf-wise: unbalanced trees, up to max_depth
    {"boosting": "realadaboost"},
    {"boosting": "gradient", "learning_rate": 1.0},
    {"boosting": "newton", "learning_rate": 1.0},
]
# |Reader - tmva_response| that README states (measured): the float32 leaves of a summed
# model move the response by about their rounding times the number of trees, more for the
# large leaves of realadaboost and learning rate 1; the export bounds it by tolerance.
SMALL_LEAVES_BOUND = 5e-8
LARGE_LEAVES_BOUND = 3e-7


def _classifier_bound(params: dict) -> float:
    large = params["boosting"] == "realadaboost" or params.get("learning_rate", 0.1) > 0.1
    return LARGE_LEAVES_BOUND if large else SMALL_LEAVES_BOUND
REGRESSORS = [{"loss": "squared"}, {"loss": "huber"}, {"loss": "absolute"}]


def _compare(reader: Path, model, folder: Path, X_eval: np.ndarray,
             atol: float | None = None) -> None:
    names = [f"x{i}" for i in range(X_eval.shape[1])]
    xml = folder / "model.weights.xml"
    info = to_tmva_xml(model, xml)
    ours = tmva_response(model, X_eval)
    theirs = _reader_scores(reader, xml, X_eval, names, folder)
    if isinstance(model, BDTClassifier):  # double sums of float32 leaves and boost weights
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=atol)
        assert np.max(np.abs(theirs - ours)) <= info["max_response_error"] + 1e-15
        # ... and README's link to the model's own outputs, which tmva_response computes
        # again: a summed model's response (gradient, newton, realadaboost: BDTG) is 2 p - 1,
        # the boost-weighted mean's (adaboost, eps, bagging) the decision function (-999 for
        # an event the file cannot route, a NaN where training had none)
        documented = (2.0 * model.predict_proba(X_eval)[:, 1] - 1.0
                      if model.forest_.aggregation == "sum"
                      else model.decision_function(X_eval))
        routed = theirs != -999.0
        assert routed[~np.isnan(X_eval).any(axis=1)].all()
        np.testing.assert_allclose(theirs[routed], documented[routed], rtol=0,
                                   atol=info["max_response_error"] + 1e-12)
    else:  # EvaluateRegression returns a float32: a few of its rounding steps
        scale = max(1.0, float(np.max(np.abs(ours))))
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=4 * 2.0**-23 * scale)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [2, 6])
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan-in-training"])
@pytest.mark.parametrize("params", CLASSIFIERS, ids=lambda p: "-".join(map(str, p.values())))
def test_reader_equals_hepbdt_classifiers(reader, tmp_path, params, nan, depth) -> None:
    X, y, _ = _data(3000, nan=nan)
    model = BDTClassifier(n_trees=30, max_depth=depth, random_state=0, **params).fit(X, y)
    X_eval, _, _ = _data(1000, seed=1, nan=True)  # the Reader gives -999 for a NaN input
    _compare(reader, model, tmp_path, X_eval, atol=_classifier_bound(params))


def test_reader_equals_the_default_classifier(reader, tmp_path) -> None:
    # BDTClassifier() at its defaults: trees until the held-out loss stops, leaf-wise
    # ("auto": 15 leaves, no depth limit) at learning rate 0.15, written with that Shrinkage
    X, y, _ = _data(3000, nan=True)
    model = BDTClassifier().fit(X, y)
    assert model.max_leaves_ == 15 and model.forest_.max_depth > 4
    X_eval, _, _ = _data(1000, seed=1, nan=True)
    _compare(reader, model, tmp_path, X_eval, atol=LARGE_LEAVES_BOUND)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [2, 6])
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan-in-training"])
@pytest.mark.parametrize("params", REGRESSORS, ids=lambda p: p["loss"])
def test_reader_equals_hepbdt_regressors(reader, tmp_path, params, nan, depth) -> None:
    X, _, target = _data(3000, nan=nan)
    model = BDTRegressor(n_trees=30, max_depth=depth, random_state=0, **params).fit(X, target)
    X_eval, _, _ = _data(1000, seed=1, nan=nan)  # regression evaluates NaN inputs too
    _compare(reader, model, tmp_path, X_eval)


def test_reader_takes_minus_inf_as_missing_and_plus_inf_as_the_largest(reader, tmp_path) -> None:
    # README, Deploying a model: TMVA's x >= Cut is false for -inf as for NaN. The Reader's
    # score of an event with -inf is its score with NaN there; with +inf, with FLT_MAX.
    X, _, target = _data(3000, nan=True)
    model = BDTRegressor(n_trees=30, max_depth=4, random_state=0).fit(X, target)
    base, _, _ = _data(200, seed=2)
    big = np.finfo(np.float32).max
    rows = [np.where(np.arange(4) == j, v, base) for j in range(2) for v in
            (-np.inf, np.nan, np.inf, big)]
    X_eval = np.concatenate(rows).astype(np.float32)
    xml = tmp_path / "model.weights.xml"
    to_tmva_xml(model, xml)
    theirs = _reader_scores(reader, xml, X_eval, [f"x{i}" for i in range(4)], tmp_path)
    minus, nan, plus, largest = theirs.reshape(2, 4, -1).transpose(1, 0, 2)
    np.testing.assert_array_equal(minus, nan)
    np.testing.assert_array_equal(plus, largest)
    assert not np.array_equal(minus, largest)  # the trees do tell NaN from large values


FIXTURES = ["ClassExample_BDT", "ClassExample_BDTG", "ClassExample_BDTBagging",
            "ClassExample_BDTPurity", "ClassExample_BDTRealAda", "Regression_BDT",
            "Regression_BDTG"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURES)
def test_tmva_files_read_and_written_again_give_the_readers_scores(reader, tmp_path, name) -> None:
    source = SHARED / "tmva" / f"{name}.weights.xml"
    if not source.is_file():
        pytest.skip(f"{source} is not there")
    model = from_tmva_xml(source)
    names = [str(n) for n in model.feature_names_in_]
    X = np.random.default_rng(2).normal(size=(2000, len(names))).astype(np.float32)
    original = _reader_scores(reader, source, X, names, tmp_path)
    np.testing.assert_allclose(tmva_response(model, X), original, rtol=0, atol=1e-12)
    again = tmp_path / f"{name}.again.weights.xml"
    to_tmva_xml(model, again)
    rewritten = _reader_scores(reader, again, X, names, tmp_path)
    np.testing.assert_allclose(rewritten, original, rtol=0, atol=1e-6)


def test_kfold_export_gives_each_fold_file_its_fold_models_scores(reader, tmp_path) -> None:
    # `hepbdt export --tmva` of a k-fold manifest: fold i's file, read by the Reader, scores
    # as fold i's model (2p - 1), with feature names holding a tab, a blank and a quote
    # (the Reader drops blanks from the names it is given: the file's Expression has none).
    import xml.etree.ElementTree as ET

    import pandas as pd

    from hepbdt import KFoldModel, load_model
    from hepbdt.cli import main

    X, y, _ = _data(3000, m=3)
    frame = pd.DataFrame(X, columns=["a\tb", "c d", 'e"f'])
    event = np.arange(len(y))
    folds = [BDTClassifier(n_trees=20, max_depth=3).fit(frame[event % 2 != i], y[event % 2 != i])
             for i in (0, 1)]
    KFoldModel(folds, by="event").save(tmp_path / "model.json")
    assert main(["export", str(tmp_path / "model.json"), "--tmva",
                 str(tmp_path / "m.weights.xml")]) == 0
    for i in (0, 1):
        xml = tmp_path / f"m_fold{i}.weights.xml"
        variables = list(ET.parse(xml).getroot().iter("Variable"))
        assert [v.get("Label") for v in variables] == list(frame.columns)
        scores = _reader_scores(reader, xml, X, [v.get("Expression") for v in variables], tmp_path)
        model = load_model(tmp_path / f"model_fold{i}.json")
        np.testing.assert_allclose(scores, 2 * model.predict_proba(frame)[:, 1] - 1, rtol=0,
                                   atol=5e-8)
        other = 2 * folds[1 - i].predict_proba(frame)[:, 1] - 1
        assert np.abs(scores - other).max() > 1e-3  # the folds' models differ: no swap unseen


def _multiclass_reader_python() -> str:
    """The ROOT wheel's Python for EvaluateMulticlass (``tmva_apply`` evaluates one score)."""
    python = os.environ.get("TMVA_READER_PYTHON")
    if python and Path(python).exists() and (SHARED / "tmva-reader" / "tmva_reader.py").exists():
        return python
    if os.environ.get("CI") == "true":
        pytest.fail("CI must run the TMVA::Reader tests: TMVA_READER_PYTHON is not set")
    pytest.skip(ENABLE)


def _multiclass_reader(python: str, xml: Path, X: np.ndarray, folder: Path, **env: str
                       ) -> np.ndarray:
    """The real Reader's EvaluateMulticlass of each row of ``X`` (tmva_multiclass_reader.py
    under the ROOT wheel's ``python``; ``env`` for its options, e.g. TMVA_BOOK_BY)."""
    np.savetxt(folder / "in.csv", X, delimiter=",", fmt="%.9g")
    done = subprocess.run([python, str(Path(__file__).with_name("tmva_multiclass_reader.py")),
                           str(xml), str(folder / "in.csv"), str(folder / "out.csv")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMVA_READER_DIR": str(SHARED / "tmva-reader"),
                               **env})
    assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
    return np.loadtxt(folder / "out.csv", delimiter=",")


@pytest.mark.slow
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan-in-training"])
@pytest.mark.parametrize("boosting, depth", [("gradient", 3), ("newton", 6), ("adaboost", 3)])
def test_reader_evaluate_multiclass_equals_hepbdt(tmp_path, boosting, depth, nan) -> None:
    python = _multiclass_reader_python()
    X, _, target = _data(3000, nan=nan)
    labels = np.array(["qcd", "signal", "ttbar", "wjets"])[np.digitize(target, [-2.0, 0.5, 3.0])]
    model = BDTClassifier(boosting=boosting, n_trees=25, max_depth=depth,
                          random_state=0).fit(X, labels)
    xml = tmp_path / "multi.weights.xml"
    to_tmva_xml(model, xml)
    # EvaluateMulticlass walks the trees with NaN inputs (no -999): the file's NaN nodes
    # send them where the model does
    X_eval, _, _ = _data(500, seed=1, nan=True)
    assert np.isnan(X_eval).any(axis=1).sum() > 100
    theirs = _multiclass_reader(python, xml, X_eval, tmp_path)
    assert theirs.shape == (500, 4)
    np.testing.assert_allclose(theirs, tmva_response(model, X_eval), rtol=0, atol=1e-7)
    np.testing.assert_allclose(theirs, model.predict_proba(X_eval), rtol=0, atol=1e-6)
    # read back by hepbdt, the file gives the Reader's numbers too
    np.testing.assert_allclose(tmva_response(from_tmva_xml(xml), X_eval), theirs, rtol=0,
                               atol=1e-7)


def test_reader_booked_with_the_feature_names_as_given(tmp_path) -> None:
    # AddVariable(name) books the file (README): TMVA drops ' ' alone from the names it is
    # given, and hepbdt's Expression had dropped U+00A0 and U+2009 too, so BookMVA stopped
    # the program ("The expression declared to the Reader needs to be checked") (2026-12-05)
    import pandas as pd

    python = _multiclass_reader_python()
    X, _, target = _data(1000)
    labels = np.array(["qcd", "signal", "ttbar"])[np.digitize(target, [-1.0, 1.0])]
    frame = pd.DataFrame(X, columns=["p\u00a0T", "m\u2009jj", "lep pt", "x"])
    model = BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(frame, labels)
    xml = tmp_path / "names.weights.xml"
    to_tmva_xml(model, xml)
    theirs = _multiclass_reader(python, xml, X[:50], tmp_path, TMVA_BOOK_BY="Label")
    np.testing.assert_allclose(theirs, model.predict_proba(frame[:50]), rtol=0, atol=1e-6)


@pytest.mark.parametrize("attribute", ["pos", "depth"])
def test_the_reader_refuses_a_node_without_pos_or_depth_as_from_tmva_xml_does(
        reader, tmp_path, attribute):
    """Audit EH: a <Node> without pos or depth stops TMVA::Reader; from_tmva_xml refuses it."""
    import xml.etree.ElementTree as ET

    from hepbdt.model import ModelFormatError

    X, y, _ = _data(200)
    model = BDTClassifier(boosting="adaboost", n_trees=2, max_depth=2).fit(X, y)
    xml = tmp_path / "m.weights.xml"
    to_tmva_xml(model, xml)
    names = [f"x{i}" for i in range(4)]
    np.testing.assert_allclose(_reader_scores(reader, xml, X, names, tmp_path),
                               tmva_response(model, X), rtol=0, atol=5e-8)
    tree = ET.parse(xml)
    del tree.getroot().find(".//BinaryTree/Node/Node").attrib[attribute]
    tree.write(xml)
    with pytest.raises(AssertionError, match=f"non-existing attribute '{attribute}'"):
        _reader_scores(reader, xml, X, names, tmp_path)
    with pytest.raises(ModelFormatError, match=attribute):
        from_tmva_xml(xml)


def test_a_regressor_of_no_trees_gives_the_reader_its_base_score(reader, tmp_path) -> None:
    """A gradient regressor without trees is written as one leaf carrying the base score:
    the Reader scores 3.7 as float32 everywhere (audit GD: a surviving mutant of the stub
    tree, whose empty arrays went unnoticed)."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    model = from_forest("regressor", ForestBuilder(2, base_score=3.7).build(), ["a", "b"])
    to_tmva_xml(model, tmp_path / "none.weights.xml")
    X = np.array([[0.0, 1.0], [-2.0, 5.0], [1e6, -1e6]], np.float32)
    scores = _reader_scores(reader, tmp_path / "none.weights.xml", X, ["a", "b"], tmp_path)
    np.testing.assert_array_equal(scores.astype(np.float32), np.float32(3.7))


def test_infinite_thresholds_send_nan_where_the_model_does(reader, tmp_path) -> None:
    """Splits at +inf and -inf (all finite values one way, NaN the other) above a
    missing-goes-right split: the Reader's EvaluateRegression equals predict for finite
    and NaN inputs, values next to the 0.5 cut and +-3e38 (audit GX: the NaN branches of
    infinite thresholds had no deterministic Reader check)."""
    from .test_interop_tmva import _infinite_threshold_regressor

    model = _infinite_threshold_regressor()
    nan = np.nan
    X = np.array([[0.0, 0.0], [0.0, 1.0], [nan, 0.0], [nan, 1.0], [0.0, nan], [nan, nan],
                  [3e38, 0.5], [-3e38, np.nextafter(np.float32(0.5), np.float32(0))]],
                 np.float32)
    to_tmva_xml(model, tmp_path / "inf.weights.xml")
    scores = _reader_scores(reader, tmp_path / "inf.weights.xml", X, ["a", "b"], tmp_path)
    np.testing.assert_array_equal(scores, [5.0, 9.0, 6.0, 10.0, 9.0, 10.0, 9.0, 5.0])
    with pytest.warns(UserWarning):  # no feature names; NaN that training never saw
        expected = model.predict(X)
    np.testing.assert_array_equal(scores, expected)


def test_the_bound_of_purity_leaves_covers_their_float32_rounding(reader, tmp_path) -> None:
    """AdaBoost with purity leaves 0.1 and 0.7 (not float32 values) and tree weights 1 (float32
    values): the Reader's response differs from decision_function by the leaves' float32
    rounding alone, which max_response_error must cover (audit GX: the bound without it,
    np.max -> np.min of the leaves' rounding in _mean_trees, survived)."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    builder = ForestBuilder(1, aggregation="weighted_mean")
    for _ in range(3):
        builder.add(1.0, feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False], value=[0.0, 0.1, 0.7],
                    bin_threshold=np.zeros(3), gain=np.zeros(3), cover=np.zeros(3))
    model = from_forest("classifier", builder.build(), ["a"], {})
    info = to_tmva_xml(model, tmp_path / "purity.weights.xml")
    X = np.array([[0.0], [1.0]], np.float32)
    scores = _reader_scores(reader, tmp_path / "purity.weights.xml", X, ["a"], tmp_path)
    exact = np.array([0.1, 0.7])  # the boost-weighted mean of the leaves, by hand
    np.testing.assert_allclose(model.decision_function(X), exact, rtol=0, atol=1e-15)
    error = np.abs(scores - exact)
    assert error.max() > 1e-9  # the leaves' float32 rounding shows
    assert error.max() <= info["max_response_error"]


def _median_stumps(weights: list[float]):
    """A weighted-median regressor of stumps on one feature whose tree t outputs t + 1."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    builder = ForestBuilder(1, aggregation="weighted_median")
    for t, w in enumerate(weights):
        builder.add(w, feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False],
                    value=[0.0, t + 1.0, t + 1.0], bin_threshold=np.zeros(3), gain=np.zeros(3),
                    cover=np.zeros(3))
    return from_forest("regressor", builder.build(), ["a"])


def test_adaboost_r2_weights_that_are_not_float32_values_are_refused(reader, tmp_path) -> None:
    """AdaBoostR2 takes the first sorted tree whose cumulative weight passes half the total:
    with weights 1 + 1e-9 and 1 that is tree 0 (value 1), but the file holds both as 1.0
    and the Reader, at an exact tie, takes tree 1 (value 2), while max_response_error said
    0 (audit HC). Such weights are refused; float32 weights 1 + 2^-23 and 1 give the
    model's 1 in the Reader."""
    X = np.array([[0.0], [1.0]], np.float32)
    exact = _median_stumps([1.0 + 2.0**-23, 1.0])
    to_tmva_xml(exact, tmp_path / "exact.weights.xml")
    scores = _reader_scores(reader, tmp_path / "exact.weights.xml", X, ["a"], tmp_path)
    np.testing.assert_array_equal(scores, [1.0, 1.0])
    np.testing.assert_array_equal(exact.predict(X), [1.0, 1.0])
    rounded = _median_stumps([1.0, 1.0])  # what a file of weights 1 + 1e-9 and 1 holds
    to_tmva_xml(rounded, tmp_path / "rounded.weights.xml")
    scores = _reader_scores(reader, tmp_path / "rounded.weights.xml", X, ["a"], tmp_path)
    np.testing.assert_array_equal(scores, [2.0, 2.0])
    model = _median_stumps([1.0 + 1e-9, 1.0])
    np.testing.assert_array_equal(model.predict(X), [1.0, 1.0])
    with pytest.raises(TMVAExportError, match="float32"):
        to_tmva_xml(model, tmp_path / "m.weights.xml")
    assert not (tmp_path / "m.weights.xml").exists()


def test_multiclass_bound_is_what_the_float32_leaves_move(tmp_path) -> None:
    """Classes 0 and 1 of one round have leaves 16 + 0.45 s and 16 + 0.55 s (s = 2^-19, the
    float32 step there), class 2 -50: the file rounds them 0.45 s apart in opposite ways, so
    the Reader's P(class 0) moves by 0.9 s / 4 = 0.225 s, the bound max |dF| / 2, which is
    within the tolerance without residual trees (audit HC: the bound taken 4x too large,
    which wrote residual trees and reported 1.7e-6, survived)."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    python = _multiclass_reader_python()
    step = 2.0**-19
    builder = ForestBuilder(1)
    for leaf in (16.0 + 0.45 * step, 16.0 + 0.55 * step, -50.0):
        builder.add(1.0, feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False], value=[0.0, leaf, leaf],
                    bin_threshold=np.zeros(3), gain=np.zeros(3), cover=np.zeros(3))
    forest = builder.build()
    forest.extra.update(n_classes=3, base_scores=[0.0, 0.0, 0.0])
    model = from_forest("classifier", forest, ["a"], classes=["x", "y", "z"])
    xml = tmp_path / "multi.weights.xml"
    info = to_tmva_xml(model, xml)
    assert info["n_residual_trees"] == 0
    X = np.array([[0.0], [1.0]], np.float32)
    theirs = _multiclass_reader(python, xml, X, tmp_path)
    exact = 1.0 / (1.0 + np.exp(0.1 * step) + np.exp(-50.0 - 16.0 - 0.45 * step))
    np.testing.assert_allclose(model.predict_proba(X)[:, 0], exact, rtol=0, atol=1e-15)
    moved = np.abs(theirs[:, 0] - exact)
    float32_output = 2.0**-25  # the Reader returns float probabilities
    assert np.all(moved >= 0.225 * step - float32_output)
    assert np.all(moved <= info["max_response_error"] + float32_output)
    assert info["max_response_error"] <= 0.225 * step * (1 + 1e-6)


def test_tree_weights_adding_up_to_dbl_epsilon_exactly_are_refused(reader, tmp_path) -> None:
    """One +-1 AdaBoost stump of weight 2^-52 = DBL_EPSILON (a float32 value): the model
    divides by it and scores +-1, the Reader scores 0 (its test is norm > DBL_EPSILON, as a
    file of that boostWeight shows), so the export refuses it (audit HC: <= -> < in
    _mean_trees wrote the file, max_response_error 1e-16)."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    def stump(weight: float):
        builder = ForestBuilder(1, aggregation="weighted_mean")
        builder.add(weight, feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False], value=[0.0, -1.0, 1.0],
                    bin_threshold=np.zeros(3), gain=np.zeros(3), cover=np.zeros(3))
        return from_forest("classifier", builder.build(), ["a"], {})

    X = np.array([[0.0], [1.0]], np.float32)
    tiny = stump(2.0**-52)
    np.testing.assert_array_equal(tiny.decision_function(X), [-1.0, 1.0])
    xml = tmp_path / "one.weights.xml"
    to_tmva_xml(stump(1.0), xml)
    xml.write_text(xml.read_text().replace(f'boostWeight="{1.0:.16e}"', f'boostWeight="{2.0**-52!r}"'))
    np.testing.assert_array_equal(_reader_scores(reader, xml, X, ["a"], tmp_path), [0.0, 0.0])
    with pytest.raises(TMVAExportError, match="DBL_EPSILON"):
        to_tmva_xml(tiny, tmp_path / "tiny.weights.xml")


def test_float64_thresholds_decide_float32_events_as_the_model(reader, tmp_path) -> None:
    """A forest whose thresholds are not float32 values (0.5 + 1e-9, 0.75 - 1e-9, +-1e39):
    the Reader reads Cut as a float, so 0.5 + 1e-9 written as it is became 0.5 and the
    event x = 0.5, left in the model (0.5 < 0.5 + 1e-9), went right: Reader 2 where predict
    gave 1 (audit HC). Checked on every float32 neighbour of the cuts against a walk of
    x < threshold in double."""
    from hepbdt.estimators import from_forest
    from hepbdt.model import ForestBuilder

    thresholds = [0.5 + 1e-9, 0.75 - 1e-9, 1e39, -1e39]
    builder = ForestBuilder(4)
    for t in range(4):
        builder.add(1.0, feature=[t, -1, -1], threshold=[0.0, 0.0, 0.0], left=[1, -1, -1],
                    right=[2, -1, -1], missing_left=[True, False, False],
                    value=[0.0, 0.0, 2.0**t], bin_threshold=np.zeros(3), gain=np.zeros(3),
                    cover=np.zeros(3))
    forest = builder.build()
    forest.threshold = np.where(forest.feature >= 0, np.repeat(thresholds, 3), 0.0)
    model = from_forest("regressor", forest, ["a", "b", "c", "d"])
    pool = np.array([0.5, 0.75, 3e38, -3e38, 0.0], np.float32)
    pool = np.concatenate([pool, np.nextafter(pool, np.float32(np.inf)),
                           np.nextafter(pool, np.float32(-np.inf))])
    X = np.stack(np.meshgrid(pool, pool, pool[:5], pool[:5]), axis=-1).reshape(-1, 4)
    walked = sum(np.where(X[:, t].astype(np.float64) < thresholds[t], 0.0, 2.0**t) for t in range(4))
    np.testing.assert_array_equal(model.predict(X), walked)
    to_tmva_xml(model, tmp_path / "f64.weights.xml")
    scores = _reader_scores(reader, tmp_path / "f64.weights.xml", X, ["a", "b", "c", "d"], tmp_path)
    np.testing.assert_array_equal(scores, walked)


def test_adaboost_r2_median_at_either_end_of_the_sorted_trees(reader, tmp_path) -> None:
    """Six trees (values 1..6) where the heaviest is the last or the first sorted one: the
    weighted median is at an end and its window of n // 6 = 1 on each side is cut there.
    The Reader's response equals predict and tmva_response (audit HC: tmva_response's
    index clamp n_trees - 1 -> n_trees + 1, which reads past the last tree, survived)."""
    X = np.array([[0.0], [1.0]], np.float32)
    for weights in ([1.0, 1.0, 1.0, 1.0, 1.0, 10.0], [10.0, 1.0, 1.0, 1.0, 1.0, 1.0]):
        model = _median_stumps(weights)
        xml = tmp_path / "ends.weights.xml"
        to_tmva_xml(model, xml)
        scores = _reader_scores(reader, xml, X, ["a"], tmp_path)
        np.testing.assert_array_equal(scores, model.predict(X))
        np.testing.assert_array_equal(scores, tmva_response(model, X))
        assert scores[0] == (5.5 if weights[-1] > 1 else 1.5)


def test_adaboost_r2_half_of_the_total_weight_summed_in_tree_order(reader, tmp_path) -> None:
    """The Reader compares each sorted tree's cumulative weight with half the weights' total
    summed in tree order, one after another. Weights 1, 2^-52, six of 2^-53 and 1 (float32
    values) total 2 + 2^-51 so and 2 + 2^-50 in numpy's pairwise order: the first sum past
    half is the second sorted tree's by one total, the last one's by the other."""
    X = np.array([[0.0], [1.0]], np.float32)
    weights = [1.0, 2.0**-52, *[2.0**-53] * 6, 1.0]
    sequential = 0.0
    for w in weights:
        sequential += w
    assert sequential != float(np.sum(weights))  # the case: the two totals differ
    model = _median_stumps(weights)
    xml = tmp_path / "half.weights.xml"
    to_tmva_xml(model, xml)
    scores = _reader_scores(reader, xml, X, ["a"], tmp_path)
    np.testing.assert_array_equal(model.predict(X), scores)
    np.testing.assert_array_equal(tmva_response(model, X), scores)
