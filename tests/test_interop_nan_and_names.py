"""Model exports: multi-class TMVA files route NaN as the model
does, ``tmva_response`` reads named columns by name, and ONNX weighted means score tied
votes exactly 0.

The TMVA files are checked without ROOT: the XML's trees are walked here with TMVA's rule
(``x >= Cut`` goes to ``pos="r"``, so NaN goes to ``pos="l"``) and read back by
``from_tmva_xml``; ``tests/test_tmva_reader.py`` checks the same files with the real Reader.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.interop import from_tmva_xml, tmva_response, to_tmva_xml


def _data(n: int, seed: int, classes: int = 3, nan: float = 0.0):
    """float32 (n, 4) features (a fraction ``nan`` of them NaN) and labels 0..classes-1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    s = X[:, 0] + 0.8 * X[:, 1] * X[:, 2] + rng.normal(scale=0.7, size=n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, classes + 1)[1:-1]))
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    return X, y


def _walk_multiclass(path, X: np.ndarray) -> np.ndarray:
    """EvaluateMulticlass written out: per event each tree walked with TMVA's ``x >= Cut``
    test on float32 numbers (NaN fails it), ``res`` summed in double into class t mod K,
    then 1 / (1 + sum_{j != i} exp(F_j - F_i))."""
    root = ET.parse(path).getroot()
    k_classes = int(root.find("Classes").get("NClass"))
    trees = root.find("Weights").findall("BinaryTree")
    F = np.zeros((X.shape[0], k_classes))
    for t, tree in enumerate(trees):
        for i in range(X.shape[0]):
            node = tree.find("Node")
            while node.get("nType") == "0":
                right = bool(X[i, int(node.get("IVar"))] >= np.float32(float(node.get("Cut"))))
                node = next(c for c in node.findall("Node") if c.get("pos") == ("r" if right else "l"))
            F[i, t % k_classes] += float(np.float32(float(node.get("res"))))
    return np.stack([1.0 / (1.0 + sum(np.exp(F[:, j] - F[:, i]) for j in range(k_classes) if j != i))
                     for i in range(k_classes)], axis=1)


@pytest.mark.parametrize("boosting", ["gradient", "newton", "adaboost"])
def test_multiclass_tmva_file_routes_nan_as_the_model(tmp_path, boosting) -> None:
    """EvaluateMulticlass walks the trees with NaN inputs (no -999 as in EvaluateMVA): the
    default file has the NaN nodes, so its probabilities are predict_proba's, NaN too."""
    X, y = _data(1500, seed=1, nan=0.15)
    model = BDTClassifier(boosting=boosting, n_trees=10, max_depth=3, random_state=0).fit(X, y)
    X_eval, _ = _data(300, seed=2, nan=0.3)
    nan_rows = np.isnan(X_eval).any(axis=1)
    assert nan_rows.sum() > 100
    path = tmp_path / "m.weights.xml"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        to_tmva_xml(model, path)
    proba = model.predict_proba(X_eval)
    np.testing.assert_allclose(_walk_multiclass(path, X_eval), proba, rtol=0, atol=1e-6)
    back = from_tmva_xml(path)
    np.testing.assert_allclose(back.predict_proba(X_eval), proba, rtol=0, atol=1e-6)
    # tmva_response is the file's EvaluateMulticlass (float32 numbers), NaN rows included
    np.testing.assert_allclose(tmva_response(model, X_eval), tmva_response(back, X_eval),
                               rtol=0, atol=1e-7)
    np.testing.assert_allclose(tmva_response(model, X_eval)[nan_rows], proba[nan_rows],
                               rtol=0, atol=1e-6)
    assert not caught  # nothing to warn about: NaN goes where the model sends it


def test_multiclass_export_without_nan_nodes_warns_about_evaluate_multiclass(tmp_path) -> None:
    X, y = _data(800, seed=3, nan=0.15)
    model = BDTClassifier(n_trees=4, max_depth=3, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="EvaluateMulticlass walks the trees") as record:
        to_tmva_xml(model, tmp_path / "none.weights.xml", missing="none")
    assert not any("-999" in str(w.message) for w in record)
    # and the file it warns about does send NaN left: other probabilities than the model's
    X_eval = np.array([[np.nan, 0.3, -0.2, 0.5], [0.1, np.nan, 0.4, -1.0]], np.float32)
    plain = _walk_multiclass(tmp_path / "none.weights.xml", X_eval)
    assert np.abs(plain - model.predict_proba(X_eval)).max() > 1e-3


def test_two_class_nan_warning_still_names_evaluate_mva(tmp_path) -> None:
    X, y = _data(800, seed=4, classes=2, nan=0.15)
    model = BDTClassifier(n_trees=4, max_depth=3, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="EvaluateMVA returns -999"):
        to_tmva_xml(model, tmp_path / "two.weights.xml")


@pytest.mark.parametrize("estimator", ["classifier", "multiclass", "regressor"])
def test_tmva_response_reads_named_columns_by_name(estimator) -> None:
    pd = pytest.importorskip("pandas")
    X, y = _data(600, seed=5, classes=3 if estimator == "multiclass" else 2)
    frame = pd.DataFrame(X, columns=["pt", "eta", "mass", "phi"])
    if estimator == "regressor":
        model = BDTRegressor(n_trees=8, max_depth=3, random_state=0).fit(frame, X[:, 0] + X[:, 1] ** 2)
    else:
        model = BDTClassifier(n_trees=8, max_depth=3, random_state=0).fit(frame, y)
    in_order = tmva_response(model, X[:50])
    shuffled = frame[["mass", "phi", "pt", "eta"]].head(50)
    assert not np.array_equal(tmva_response(model, shuffled.to_numpy()), in_order)
    np.testing.assert_array_equal(tmva_response(model, shuffled), in_order)
    np.testing.assert_array_equal(
        tmva_response(model, {name: shuffled[name].to_numpy() for name in shuffled.columns}), in_order)
    renamed = shuffled.rename(columns={"mass": "a", "phi": "b", "pt": "c", "eta": "d"})
    with pytest.raises(ValueError, match="lacks the features"):
        tmva_response(model, renamed)
    with pytest.raises(ValueError, match="lacks the features"):
        model.predict(renamed)  # as the estimator does


@pytest.mark.parametrize("params", [{}, {"subsample": 0.6, "subsample_mode": "poisson"},
                                    {"use_yes_no_leaf": False}],
                         ids=["yes-no", "poisson", "purity"])
def test_onnx_bagging_scores_tied_votes_exactly_zero(tmp_path, params) -> None:
    """Votes that cancel: hepbdt's score is exactly 0 (sum of the votes, divided once);
    the ONNX graph divides the double sum once too, so a cut at 0 agrees for every event."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    X, y = _data(500, seed=6, classes=2)
    model = BDTClassifier(boosting="bagging", n_trees=12, max_depth=3, random_state=0,
                          **params).fit(X, y)
    X_eval, _ = _data(5000, seed=7, classes=2)
    X_eval[::7, 1] = np.nan
    path = tmp_path / "bagging.onnx"
    model.save_onnx(path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    score = session.run(["score"], {"input": X_eval})[0][:, 0].astype(np.float64)
    ref = model.decision_function(X_eval)
    tied = ref == 0.0
    if params.get("use_yes_no_leaf", True):
        assert tied.sum() > 20
        # +-1 votes of unit weight: integer sums, exact in any order, one rounding
        np.testing.assert_array_equal(score, ref.astype(np.float32))
    assert np.all(score[tied] == 0.0)
    np.testing.assert_array_equal(score > 0, ref > 0)
    np.testing.assert_array_equal(score < 0, ref < 0)


def test_none_warns_for_any_model_whose_reader_walks_nan(tmp_path) -> None:
    # Trained without NaN, a multi-class model (or a regressor) still routes NaN its own
    # way; the Reader of a 'none' file sends it left (up to 0.85 apart), with no warning.
    X, y = _data(800, seed=4, nan=0.0)
    multi = BDTClassifier(n_trees=4, max_depth=3, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="EvaluateMulticlass walks the trees"):
        to_tmva_xml(multi, tmp_path / "multi.weights.xml", missing="none")
    regressor = BDTRegressor(n_trees=4, max_depth=3).fit(X, X[:, 0] + y)
    with pytest.warns(UserWarning, match="EvaluateRegression walks the trees"):
        to_tmva_xml(regressor, tmp_path / "reg.weights.xml", missing="none")


def test_a_model_read_from_a_two_class_file_refuses_nan_inputs(tmp_path) -> None:
    # The file has no NaN routing (the Reader answers -999 before walking the trees); read
    # back, NaN went left at every node: neither the Reader's -999 nor the model's score.
    X, y = _data(1500, seed=6, classes=2)
    model = BDTClassifier(n_trees=20, max_depth=3).fit(X, y)
    model.save_tmva(tmp_path / "two.weights.xml")
    back = from_tmva_xml(tmp_path / "two.weights.xml")
    clean = X[:50]
    np.testing.assert_allclose(back.predict_proba(clean), model.predict_proba(clean), atol=1e-6)
    E = clean.copy()
    E[3, 1] = np.nan
    for call in (back.decision_function, back.predict_proba, back.predict):
        with pytest.raises(ValueError, match="read from a TMVA two-class file.*-999"):
            call(E)
    assert tmva_response(back, E)[3] == -999.0


def test_feature_names_with_blanks_are_written_as_the_reader_compares_them(tmp_path) -> None:
    # The Reader drops blanks from AddVariable's names and compares them with Expression:
    # written with its blanks ('Jet_pt[:, 0]'), no name matched and BookMVA stopped the
    # program (checked with root 0.1a12's TMVA::Reader). The Label keeps the model's name.
    pd = pytest.importorskip("pandas")
    from hepbdt.interop.tmva_export import TMVAExportError

    X, y = _data(600, seed=7, classes=2)
    frame = pd.DataFrame(X, columns=["Jet_pt[:, 0]", "lep pt", "phi", "m"])
    model = BDTClassifier(n_trees=3, max_depth=2).fit(frame, y)
    to_tmva_xml(model, tmp_path / "blank.weights.xml")
    variables = ET.parse(tmp_path / "blank.weights.xml").getroot().find("Variables")
    assert [v.get("Expression") for v in variables] == ["Jet_pt[:,0]", "leppt", "phi", "m"]
    assert [v.get("Label") for v in variables] == ["Jet_pt[:, 0]", "lep pt", "phi", "m"]
    back = from_tmva_xml(tmp_path / "blank.weights.xml")
    assert list(back.feature_names_in_) == ["Jet_pt[:, 0]", "lep pt", "phi", "m"]
    np.testing.assert_allclose(back.predict_proba(frame), model.predict_proba(frame), atol=1e-6)
    twins = BDTClassifier(n_trees=2, max_depth=2).fit(
        pd.DataFrame(X, columns=["a b", "ab", "c", "d"]), y)
    with pytest.raises(TMVAExportError, match=r"differ only in blanks"):
        to_tmva_xml(twins, tmp_path / "twins.weights.xml")
    assert not (tmp_path / "twins.weights.xml").exists()


def test_export_arguments_of_the_wrong_type_are_refused_in_words(tmp_path) -> None:
    X, y = _data(300, seed=8, classes=2)
    model = BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    for tolerance in ("1e-6", float("nan"), True):
        with pytest.raises(ValueError, match="must be a number >= 0"):
            to_tmva_xml(model, tmp_path / "t.weights.xml", tolerance=tolerance)
    to_tmva_xml(model, tmp_path / "t.weights.xml", tolerance=np.float32(1e-6))
    pytest.importorskip("onnx")
    from hepbdt.interop import to_onnx

    with pytest.raises(ValueError, match="graph's name must be a string"):
        to_onnx(model, tmp_path / "m.onnx", name=5)


def test_onnx_of_a_model_read_from_a_two_class_file_has_no_score_for_nan(tmp_path) -> None:
    # The model refuses NaN inputs (its Reader answers -999 without walking the trees): the
    # ONNX model gives such an event NaN in both outputs (it walked them, with a warning),
    # and the other events their scores. (The C++ header: test_cpp_export's TMVA fixtures.)
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from hepbdt.interop import to_onnx

    X, y = _data(600, seed=9, classes=2)
    BDTClassifier(n_trees=3, max_depth=2).fit(X, y).save_tmva(tmp_path / "two.weights.xml")
    back = from_tmva_xml(tmp_path / "two.weights.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        to_onnx(back, tmp_path / "two.onnx")
    X_nan = X[:50].astype(np.float32)
    X_nan[::3, 1] = np.nan
    session = ort.InferenceSession(str(tmp_path / "two.onnx"), providers=["CPUExecutionProvider"])
    score, probability = session.run(["score", "probability"], {"input": X_nan})
    nan = np.isnan(X_nan).any(axis=1)
    assert np.all(np.isnan(score[nan])) and np.all(np.isnan(probability[nan]))
    np.testing.assert_allclose(score[~nan, 0], back.decision_function(X_nan[~nan]), rtol=1e-6)
    np.testing.assert_allclose(probability[~nan, 0], back.predict_proba(X_nan[~nan])[:, 1],
                               rtol=1e-6)


def test_reader_expression_drops_only_what_the_reader_drops(tmp_path) -> None:
    # TMVA's DataSetInfo::AddVariable drops ' ' alone (ReplaceAll(" ", "")): a name holding
    # U+00A0 or U+2009 was written without them (Python's \s), so AddVariable(name) never
    # matched and BookMVA stopped the program. Tab and line breaks are dropped: written as
    # '&#9;', TMVA's XML reader keeps that text, which no name could match (2026-12-05).
    pd = pytest.importorskip("pandas")
    X, y = _data(600, seed=7, classes=2)
    names = ["p\u00a0T", "m\u2009jj", "a\tb c", "x \u00a0y"]
    model = BDTClassifier(n_trees=3, max_depth=2).fit(pd.DataFrame(X, columns=names), y)
    to_tmva_xml(model, tmp_path / "spaces.weights.xml")
    variables = ET.parse(tmp_path / "spaces.weights.xml").getroot().find("Variables")
    assert [v.get("Expression") for v in variables] == ["p\u00a0T", "m\u2009jj", "abc", "x\u00a0y"]
    assert list(from_tmva_xml(tmp_path / "spaces.weights.xml").feature_names_in_) == names


@pytest.mark.parametrize("bad", ["a\x00b", "a\x01b", "a\x1bb", "a\ufffeb"])
def test_feature_names_xml_cannot_hold_are_refused_at_fit(tmp_path, bad) -> None:
    # NUL, the other C0 controls and U+FFFE were taken at fit; save_tmva then wrote a file
    # that no XML parser reads ("not well-formed (invalid token)")
    pd = pytest.importorskip("pandas")
    X, y = _data(200, seed=7, classes=2)
    with pytest.raises(ValueError, match=rf"column 1: feature name .* U\+{ord(bad[1]):04X}"):
        BDTClassifier(n_trees=2, max_depth=2).fit(pd.DataFrame(X, columns=["a", bad, "c", "d"]), y)
    ok = BDTClassifier(n_trees=2, max_depth=2).fit(
        pd.DataFrame(X, columns=["a", "b\u00e9\U0001f600", "c\x7f", "d\te"]), y)
    to_tmva_xml(ok, tmp_path / "ok.weights.xml")
    ET.parse(tmp_path / "ok.weights.xml")


@pytest.mark.parametrize("bad", ["ctl\x01", "nul\x00", "esc\x1b"])
def test_class_labels_xml_cannot_hold_are_refused_at_fit(tmp_path, bad) -> None:
    # a class label with U+0001 was taken and save_tmva wrote a <Class Name=...> no XML
    # parser reads; a trailing NUL ended in "y has labels ['nul\x00'] that are not in the
    # classes [..., 'nul\x00', ...]"
    X, _ = _data(300, seed=7, classes=2)
    y = np.array(["qcd", "signal", bad], dtype=object)[np.arange(300) % 3]
    with pytest.raises(ValueError, match=rf"y: class label .* U\+{ord(bad[3]):04X}"):
        BDTClassifier(n_trees=2, max_depth=2).fit(X, y)
    good = np.array(["t\tb\n<&\"" if label == bad else label for label in y], dtype=object)
    ok = BDTClassifier(n_trees=2, max_depth=2).fit(X, good)
    to_tmva_xml(ok, tmp_path / "ok.weights.xml")
    names = [c.get("Name") for c in ET.parse(tmp_path / "ok.weights.xml").getroot().iter("Class")]
    assert sorted(names) == sorted(["qcd", "signal", "t\tb\n<&\""])


def test_files_written_before_the_reader_rule_keep_their_names(tmp_path) -> None:
    # hepbdt wrote Expression without every Unicode blank (Python's \s) until 2026-12-05:
    # from_tmva_xml then read those files' features as 'pT' and 'Ex', not the Label's
    # 'p\u00a0T' and 'E\u2028x' the model was fit with (audit FO, 2026-12-05)
    import re

    pd = pytest.importorskip("pandas")
    X, y = _data(600, seed=7, classes=2)
    names = ["p\u00a0T", "E\u2028x", "a\tb c", "x"]
    model = BDTClassifier(n_trees=3, max_depth=2).fit(pd.DataFrame(X, columns=names), y)
    to_tmva_xml(model, tmp_path / "new.weights.xml")
    tree = ET.parse(tmp_path / "new.weights.xml")
    for variable in tree.getroot().find("Variables"):  # as the earlier export wrote it
        variable.set("Expression", re.sub(r"\s+", "", variable.get("Label")))
    tree.write(tmp_path / "old.weights.xml")
    assert list(from_tmva_xml(tmp_path / "old.weights.xml").feature_names_in_) == names
