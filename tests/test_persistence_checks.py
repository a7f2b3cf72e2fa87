"""Model files that would predict wrongly, each refused with one clear error (or right):
a k-fold model of another training given to ``report``, infinite options, repeated
feature names, a k-fold manifest whose fold files repeat or disagree, and classes or a
loss in a model file that change what the model predicts."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import hepbdt
from hepbdt.analysis import report_from_scores
from hepbdt.binned import BinnedMatrix
from hepbdt.cli import main
from hepbdt.estimators import ParameterError, from_forest
from hepbdt.kfold import KFoldModel
from hepbdt.model import ModelFormatError
from hepbdt.output_set import OutputSet, OutputSetError, check_model_of
from hepbdt.persistence import load_model

INF = float("inf")


def _data(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(scale=0.8, size=n) > 0).astype(int)
    return X, y


def _folds(n_trees: int, k: int = 2, seed: int = 0) -> list[hepbdt.BDTClassifier]:
    X, y = _data(seed=seed)
    data = hepbdt.Dataset(X, y, feature_names=["a", "b", "c"])
    return [hepbdt.BDTClassifier(n_trees=n_trees, max_depth=2, random_state=1)
            .fit(data.X[np.arange(len(y)) % k != i], data.y[np.arange(len(y)) % k != i])
            for i in range(k)]


@pytest.fixture()
def two_trainings(tmp_path: Path) -> tuple[Path, Path]:
    """Two k-fold trainings of one configuration but different trees: their manifests are
    byte for byte the same."""
    folders = []
    for name, n_trees in (("first", 3), ("second", 6)):
        folder = tmp_path / name
        out = OutputSet(folder)
        with out as staging:
            KFoldModel(_folds(n_trees), by="event").save(staging / "model.json")
            _without_digests(staging / "model.json")
            (staging / "scores.root").write_bytes(b"not read")
            out.commit()
        folders.append(folder)
    first, second = folders
    assert (first / "model.json").read_bytes() == (second / "model.json").read_bytes()
    assert (first / "model_fold0.json").read_bytes() != (second / "model_fold0.json").read_bytes()
    return first, second


# -- 1. report refuses a k-fold model whose fold files the output set did not record ---------


def test_report_refuses_the_kfold_model_of_another_training(two_trainings, tmp_path):
    first, second = two_trainings
    check_model_of(first / "scores.root", first / "model.json")  # the run's own: accepted
    with pytest.raises(OutputSetError, match=r"different k-fold model.*model_fold0\.json"):
        check_model_of(first / "scores.root", second / "model.json")
    with pytest.raises(OutputSetError, match="different k-fold model"):
        report_from_scores(second / "model.json", first / "scores.root", tmp_path / "r.html")


def test_report_refuses_a_fold_file_copied_over_another(two_trainings, tmp_path, capsys):
    first, second = two_trainings
    shutil.copy(second / "model_fold0.json", first / "model_fold0.json")  # another training's
    with pytest.raises(OutputSetError, match=r"model_fold0\.json is not the file"):
        report_from_scores(first / "model.json", first / "scores.root", tmp_path / "r.html")
    shutil.copy(first / "model_fold1.json", first / "model_fold0.json")  # its sibling's
    assert main(["report", str(first / "model.json"), str(first / "scores.root"),
                 "-o", str(tmp_path / "r.html")]) == 2
    assert "'model_fold0.json' and 'model_fold1.json' are the same model" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_report_refuses_a_missing_fold_file_of_the_scores_run(two_trainings, tmp_path):
    first, second = two_trainings
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(first / "model.json", elsewhere / "model.json")
    with pytest.raises(OutputSetError, match=r"model_fold0\.json is missing"):
        check_model_of(first / "scores.root", elsewhere / "model.json")


# -- 2. infinite options: refused at fit where meaningless, read back as floats at load -------


@pytest.mark.parametrize("cls, option, extra", [
    (hepbdt.BDTClassifier, "min_split_gain", {}),
    (hepbdt.BDTClassifier, "min_child_weight", {"boosting": "newton"}),
    (hepbdt.BDTClassifier, "reg_lambda", {"boosting": "newton"}),
    (hepbdt.BDTClassifier, "reg_alpha", {"boosting": "newton"}),
    (hepbdt.BDTClassifier, "beta", {"boosting": "adaboost"}),
    (hepbdt.BDTClassifier, "epsilon", {"boosting": "eps"}),
    (hepbdt.BDTClassifier, "tol", {}),
    (hepbdt.BDTClassifier, "sig_to_bkg_fraction", {"boosting": "adaboost"}),
    (hepbdt.BDTClassifier, "subsample", {"subsample_mode": "poisson"}),
    (hepbdt.BDTRegressor, "huber_delta", {"loss": "huber", "boosting": "newton"}),
    (hepbdt.BDTRegressor, "huber_delta", {"loss": "huber"}),  # unused by gradient, saved
    (hepbdt.BDTRegressor, "huber_alpha", {"loss": "huber", "boosting": "newton"}),
])
@pytest.mark.parametrize("value", [INF, -INF, float("nan")])
def test_fit_refuses_non_finite_options(cls, option, extra, value):
    X, y = _data(300)
    model = cls(n_trees=3, max_depth=2, n_iter_no_change=2, **extra, **{option: value})
    with pytest.raises(ParameterError, match=rf"{option}=.* is not valid; expected .*finite") as info:
        model.fit(X, y if cls is hepbdt.BDTClassifier else X[:, 0])
    assert info.value.param == option


def test_tol_takes_any_finite_number_from_zero():
    X, y = _data(1200)
    for tol in (0.0, 1e9):
        hepbdt.BDTClassifier(n_trees="auto", max_depth=2, tol=tol, n_iter_no_change=2).fit(X, y)
    with pytest.raises(ValueError, match="tol"):  # every worse loss an improvement: no stop
        hepbdt.BDTClassifier(n_trees="auto", max_depth=2, tol=-1e9).fit(X, y)


def _saved(tmp_path: Path, model, name: str = "m.json") -> tuple[Path, dict]:
    path = tmp_path / name
    model.save(path)
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("option, spelled, shown", [
    ("min_split_gain", "Infinity", "inf"), ("tol", "-Infinity", "-inf"),
    ("reg_lambda", "NaN", "nan"), ("huber_delta", "Infinity", "inf"),
])
def test_load_reads_the_writers_non_finite_strings_as_floats(tmp_path, option, spelled, shown):
    """A file of an earlier hepbdt with an infinite option: the option's own check names it
    (not a string compared with a number, nor the string 'Infinity' loaded as the value)."""
    X, _ = _data(300)
    path, doc = _saved(tmp_path, hepbdt.BDTRegressor(n_trees=3, max_depth=2).fit(X, X[:, 0]))
    doc["params"][option] = spelled
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=rf"params\.{option}: {option}={shown} is not "
                                               r"valid; expected a finite number"):
        load_model(path)


def test_large_finite_options_round_trip_bit_for_bit(tmp_path):
    X, y = _data(400)
    options = dict(boosting="newton", min_split_gain=1e-300, min_child_weight=1e-3,
                   reg_lambda=1e300, reg_alpha=1e-5, tol=1e300)
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2, **options).fit(X, y)
    path, _ = _saved(tmp_path, model)
    loaded = load_model(path)
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    regressor = hepbdt.BDTRegressor(n_trees=3, max_depth=2, loss="huber", boosting="newton",
                                    huber_delta=1e30, huber_alpha=0.5).fit(X, X[:, 0])
    path, _ = _saved(tmp_path, regressor, "r.json")
    np.testing.assert_array_equal(load_model(path).predict(X), regressor.predict(X))


# -- 3. repeated feature names: refused at fit and at load ------------------------------------


def test_fit_refuses_repeated_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _data(300)
    with pytest.raises(ValueError, match=r"names feature 'a' twice \(columns 0 and 1\)"):
        hepbdt.BDTClassifier(n_trees=2).fit(pd.DataFrame(X, columns=["a", "a", "b"]), y)
    binned = BinnedMatrix.from_features(X, [np.array([0.0], np.float32)] * 3,
                                        feature_names=["a", "b", "b"])
    with pytest.raises(ValueError, match=r"names feature 'b' twice \(columns 1 and 2\)"):
        hepbdt.BDTClassifier(n_trees=2).fit(binned, y)


def test_load_refuses_repeated_feature_names(tmp_path):
    X, y = _data(300)
    frame = {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2]}
    path, doc = _saved(tmp_path, hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(frame, y))
    doc["feature_names"] = ["a", "a", "c"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=r"feature_names lists 'a' twice \(features 0 and 1\)"):
        load_model(path)


def test_from_forest_refuses_repeated_feature_names():
    X, y = _data(300)
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y)
    with pytest.raises(ModelFormatError, match="'x' twice"):
        from_forest("classifier", model.forest_, ["x", "y", "x"], classes=[0, 1])


# -- 4. the k-fold manifest's contents --------------------------------------------------------


@pytest.fixture()
def saved_kfold(tmp_path: Path) -> Path:
    path = tmp_path / "kf" / "model.json"
    path.parent.mkdir()
    KFoldModel(_folds(3, k=3), by="event").save(path)
    return path


def _without_digests(path: Path) -> Path:
    """The manifest at ``path`` as written before its folds' SHA-256s were recorded (such
    manifests still load; the checks below are the ones they have)."""
    doc = json.loads(path.read_text())
    doc.pop("sha256", None)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def _edit_manifest(path: Path, **changes) -> Path:
    doc = json.loads(path.read_text())
    doc.pop("sha256", None)
    doc.update(changes)
    edited = path.with_name("edited.json")
    edited.write_text(json.dumps(doc))
    return edited


def test_manifest_refuses_a_fold_file_listed_twice(saved_kfold):
    edited = _edit_manifest(saved_kfold, models=["model_fold0.json", "model_fold0.json",
                                                 "model_fold2.json"])
    with pytest.raises(ModelFormatError, match="'models' names the same file for folds"):
        load_model(edited)


@pytest.mark.parametrize("second", ["./model_fold1.json", "../kf/model_fold1.json", "ABSOLUTE",
                                    "sub/model_fold1.json", "..", ""])
def test_manifest_refuses_fold_files_outside_its_folder(saved_kfold, tmp_path, second):
    """Fold files elsewhere (loaded and applied before) escape the output set's checksums,
    which cover the files beside the manifest."""
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    shutil.copy(saved_kfold.with_name("model_fold1.json"), elsewhere / "model_fold1.json")
    if second == "ABSOLUTE":
        second = str(elsewhere / "model_fold1.json")
    if second.startswith("sub/"):
        (saved_kfold.parent / "sub").mkdir()
        shutil.copy(saved_kfold.with_name("model_fold1.json"), saved_kfold.parent / second)
    edited = _edit_manifest(saved_kfold, models=["model_fold0.json", second,
                                                 "model_fold2.json"])
    with pytest.raises(ModelFormatError, match="is not a file name beside the manifest"):
        load_model(edited)


@pytest.mark.parametrize("changes, expected", [
    ({"format": "not-hepbdt-at-all"}, "format must be 'hepbdt-kfold'"),
    ({"by": None}, "'by' must be the event-number expression"),
    ({"by": " "}, "'by' must be the event-number expression"),
])
def test_manifest_refuses_a_wrong_format_or_no_expression(saved_kfold, changes, expected):
    doc = json.loads(saved_kfold.read_text())
    doc.update(changes)
    if changes.get("by", "") is None:
        del doc["by"]  # the key missing: no guess of "event"
    saved_kfold.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=expected):
        load_model(saved_kfold)


def test_cli_apply_refuses_a_fold_file_listed_twice(saved_kfold, tmp_path, capsys):
    edited = _edit_manifest(saved_kfold, models=["model_fold0.json"] * 3)
    assert main(["apply", str(edited), str(tmp_path / "none.root"), "-o",
                 str(tmp_path / "friend.root")]) == 2
    assert "names the same file for folds 0 and 1" in capsys.readouterr().err


def test_manifest_refuses_a_fold_file_copied_under_another_name(saved_kfold):
    shutil.copy(saved_kfold.with_name("model_fold0.json"), saved_kfold.with_name("copy.json"))
    edited = _edit_manifest(saved_kfold,
                            models=["model_fold0.json", "copy.json", "model_fold2.json"])
    with pytest.raises(ModelFormatError, match="are the same model"):
        load_model(edited)


@pytest.mark.parametrize("features, expected", [
    (["a", "c", "b"], "feature 1 is 'c' in the manifest, 'b' in the model"),
    (["a", "b"], "the manifest lists 2 features, the model takes 3"),
    (None, "the manifest lists none, the model has 3"),
])
def test_manifest_features_must_be_the_fold_models(saved_kfold, features, expected):
    with pytest.raises(ModelFormatError, match=re.escape(expected)):
        load_model(_edit_manifest(saved_kfold, features=features))


def test_kfold_model_refuses_folds_that_do_not_agree(tmp_path):
    X, y = _data(300)
    folds = _folds(3)
    regressor = hepbdt.BDTRegressor(n_trees=2, max_depth=2).fit(
        hepbdt.Dataset(X, X[:, 0], feature_names=["a", "b", "c"]).X, X[:, 0])
    with pytest.raises(ValueError, match="different types"):
        KFoldModel([folds[0], regressor])
    relabelled = hepbdt.BDTClassifier(n_trees=2, max_depth=2, signal_label=2).fit(
        hepbdt.Dataset(X, y, feature_names=["a", "b", "c"]).X, np.where(y == 1, 2, 0))
    with pytest.raises(ValueError, match=r"different classes: fold 0: \[0, 1\]; fold 1: \[0, 2\]"):
        KFoldModel([folds[0], relabelled])
    with pytest.raises(ValueError, match="fold models 0 and 1 are the same model"):
        KFoldModel([folds[0], folds[0]])
    unnamed = [hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X[:, :m], y) for m in (2, 3)]
    with pytest.raises(ValueError, match="different feature counts"):
        KFoldModel(unnamed)
    # the fold files on disk: a regressor saved over fold 1 of a classifier's manifest
    path = tmp_path / "model.json"
    KFoldModel(folds, by="event").save(path)
    regressor.save(tmp_path / "model_fold1.json")
    with pytest.raises(ModelFormatError, match="SHA-256 differs"):
        load_model(path)
    with pytest.raises(ModelFormatError, match="different types"):
        load_model(_without_digests(path))


def test_a_kfold_save_interrupted_between_its_folds_is_refused(tmp_path):
    # the interruption audit: killed after fold 0 of a new model was written, the old
    # manifest and folds 1 and 2 of the old model loaded as one k-fold model
    path = tmp_path / "model.json"
    KFoldModel(_folds(3), by="event").save(path)
    _folds(6)[0].save(tmp_path / "model_fold0.json")  # what the interrupted save got to
    with pytest.raises(ModelFormatError, match="'model_fold0.json' is not the file this "
                                               "manifest was written with"):
        load_model(path)


# -- 5. classes that are not distinct once read, and unknown losses -----------------------


@pytest.mark.parametrize("classes", [[1, True], ["0", 0], [0, 0.0]])
def test_load_refuses_classes_that_read_as_one_label(tmp_path, classes):
    X, y = _data(300)
    path, doc = _saved(tmp_path, hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y))
    doc["classes"] = classes
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="'classes'|not 2 different ones"):
        load_model(path)


@pytest.mark.parametrize("loss, message", [
    ("Logistic", "extra.loss: 'Logistic' is not a loss name"),
    ("sigmoid", "extra.loss: 'sigmoid' is not a loss name"),
    ("squared", "not a loss of a BDTClassifier"),
])
def test_load_refuses_unknown_losses(tmp_path, loss, message):
    X, y = _data(300)
    path, doc = _saved(tmp_path, hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y))
    doc["forest"]["extra"]["loss"] = loss
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        load_model(path)


@pytest.mark.parametrize("aggregation, weights", [
    ("weighted_mean", [1.0, -1.0]), ("weighted_mean", [0.0, 0.0]),
    ("weighted_mean", [-0.5, -0.5]), ("weighted_median", [0.0, 0.0]),
    ("weighted_median", [1.0, -2.0])])
def test_load_refuses_tree_weights_without_a_positive_total(tmp_path, aggregation, weights):
    """A weighted mean of trees whose weights add up to 0 or less (hepbdt gave the
    undivided sum), and a weighted median of a total <= 0 (the Reader walks past its last
    tree). A positive total at or below DBL_EPSILON loads: test_tiny_tree_weights.py."""
    X, y = _data(300)
    path, doc = _saved(tmp_path, hepbdt.BDTClassifier(boosting="adaboost", n_trees=2,
                                                      max_depth=2).fit(X, y))
    assert len(doc["forest"]["tree_weights"]) == 2
    doc["forest"]["aggregation"] = aggregation
    doc["forest"]["tree_weights"] = weights
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="tree_weights: they add up to"):
        load_model(path)


def test_known_losses_are_the_boosters_loss_names():
    from hepbdt.boosting import losses
    from hepbdt.model import CLASSIFIER_LOSSES, REGRESSOR_LOSSES

    names = {cls.name for cls in vars(losses).values()
             if isinstance(cls, type) and isinstance(getattr(cls, "name", None), str)
             and cls.name != "loss"}
    names.discard(losses.Cancellation.name)  # the regress policy's weight models' own, never saved
    # RealAdaBoost's and SAMME's forests name their losses without a Loss class
    assert names | {"exponential", "samme"} == CLASSIFIER_LOSSES | REGRESSOR_LOSSES


def test_string_labels_spelled_like_non_finite_floats_stay_strings(tmp_path):
    """Only options that are always numbers are read back as floats: a class (and
    signal_label) named "Infinity" is a string label."""
    X, y = _data(300)
    labels = np.where(y == 1, "Infinity", "NaN")
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=2, signal_label="Infinity").fit(X, labels)
    path, _ = _saved(tmp_path, model)
    loaded = load_model(path)
    assert loaded.signal_label == "Infinity" and loaded.classes_.tolist() == ["NaN", "Infinity"]
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_classes_of_mixed_kinds_give_no_crash(tmp_path):
    X, y = _data(300)
    path, doc = _saved(tmp_path, hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y))
    doc["classes"] = [2**70, "a"]  # an object array numpy cannot sort
    path.write_text(json.dumps(doc))
    assert load_model(path).classes_.tolist() == [2**70, "a"]


def test_files_with_settings_refused_since_are_read_with_a_warning(tmp_path):
    # early stopping for the AdaBoost family (it never acted) and a negative tol (it never
    # stopped) were accepted until 2026-12-03; such files must still load
    X, y = _data(400)
    ada = hepbdt.BDTClassifier(boosting="adaboost", n_trees=3, max_depth=2).fit(X, y)
    grad = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    for model, key, old, new in ((ada, "early_stopping", True, False),
                                 (ada, "early_stopping_rounds", 5, None),
                                 (grad, "tol", -0.05, 0.0)):
        path, doc = _saved(tmp_path, model)
        doc["params"][key] = old
        path.write_text(json.dumps(doc))
        with pytest.warns(UserWarning, match=f"{key}={old!r}"):
            loaded = load_model(path)
        assert loaded.get_params()[key] == new
        np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))


def _with_nan_model(tmp_path: Path) -> tuple[Path, dict, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    X[:60, 0] = np.nan
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, (X[:, 1] > 0).astype(int))
    path, doc = _saved(tmp_path, model)
    return path, doc, X


def test_a_split_past_the_last_edge_loads_and_scores_as_its_tree(tmp_path):
    """bin_threshold = the feature's number of edges is the split 'x < +inf' (every value
    left, NaN as missing_left says): it loads, and floats and codes score as the tree."""
    path, doc, X = _with_nan_model(tmp_path)
    forest = doc["forest"]
    n_edges = len(doc["bin_edges"][0])
    assert forest["feature"][:6] == [1, -1, -1, 1, -1, -1]  # two stumps on feature 1
    forest["feature"][0], forest["bin_threshold"][0] = 0, n_edges
    forest["threshold"][0], forest["missing_left"][0] = "Infinity", False
    path.write_text(json.dumps(doc))
    loaded = load_model(path)
    values, base = forest["value"], forest["base_score"]
    tree1 = np.where(np.isnan(X[:, 0]), values[2], values[1])  # brute force: NaN goes right
    threshold = np.float32(forest["threshold"][3])
    tree2 = np.where(X[:, 1] < threshold, values[4], values[5])
    expected = base + tree1 + tree2
    np.testing.assert_allclose(loaded.decision_function(X), expected, rtol=0, atol=1e-12)
    binned = BinnedMatrix.from_features(X, loaded.bin_edges_)
    np.testing.assert_allclose(loaded.decision_function(binned), expected, rtol=0, atol=1e-12)


def test_bin_edges_of_more_than_255_a_feature_are_refused(tmp_path):
    """uint8 codes hold 255 edges a feature (the last code is the missing bin)."""
    path, doc, _ = _with_nan_model(tmp_path)
    doc["bin_edges"][0] = [float(i) for i in range(256)]
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="bin_edges must list 2 increasing lists of at most 255"):
        load_model(path)


def test_a_long_damaged_value_is_named_in_brief(tmp_path):
    path, doc, _ = _with_nan_model(tmp_path)
    doc["best_iteration"] = "x" * 60
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match=r"best_iteration 'x{36}\.\.\. must be an integer"):
        load_model(path)
