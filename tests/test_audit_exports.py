"""Audit of the C++ and ONNX exports against hepbdt's own prediction, on adversarial inputs.

hepbdt's prediction (``Forest.raw_score``, the estimators' ``decision_function``/``predict``)
is itself checked against a recursive walk of the flat forest arrays written here. The
exports are checked on events that sit on every threshold and its float32 neighbours,
NaN, +-inf, -0.0, subnormals and huge values, for every booster; the C++ header bit for
bit (one driver compiled once for the module), the ONNX graph to its float32 output.
Also the defects found: thresholds that are not float32 values (a float64 forest), the
sign of zero leaf values, forest.extra keys in the header's comment, scores beyond
float32's range in ONNX, namespaces that g++ defines as macros.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.estimators import from_forest
from hepbdt.interop.cpp_export import CppExportError, to_cpp
from hepbdt.model import ForestBuilder

from .test_cpp_export import _compile, _compiler, _driver

N_FEATURES = 4
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-45, 1e-40, 3.4028235e38,
                    -3.4028235e38, 1e30, -1e30], dtype=np.float32)


# -- the reference: a recursive walk of the flat arrays ----------------------------------------

def _leaf(forest, x: np.ndarray, node: int) -> int:
    if forest.feature[node] < 0:
        return node
    v = x[forest.feature[node]]
    if np.isnan(v):
        left = bool(forest.missing_left[node])
    else:  # float32 x against the threshold in its own dtype, exactly (in float64)
        left = np.float64(v) < np.float64(forest.threshold[node])
    return _leaf(forest, x, int(forest.left[node] if left else forest.right[node]))


def _walk_score(forest, X: np.ndarray) -> np.ndarray:
    """The score as the Forest docstring defines it ("sum", "weighted_mean")."""
    out = np.zeros(X.shape[0])
    for i, x in enumerate(X):
        for t in range(forest.n_trees):
            out[i] += forest.tree_weights[t] * forest.value[_leaf(forest, x, int(forest.tree_offsets[t]))]
    if forest.aggregation == "weighted_mean":
        total = forest.tree_weights.sum()
        return out / total if total != 0 else out
    return out + forest.base_score


def _adversarial(forest, n: int = 300, seed: int = 0) -> np.ndarray:
    """Events whose every value is a threshold of its feature, a float32 neighbour of one,
    or a special value (NaN, +-inf, -0.0, subnormals, huge)."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, forest.n_features), dtype=np.float32)
    split = forest.feature >= 0
    with np.errstate(over="ignore"):
        for j in range(forest.n_features):
            cuts = forest.threshold[split & (forest.feature == j)].astype(np.float32)
            pool = np.concatenate([cuts, np.nextafter(cuts, np.float32(np.inf)),
                                   np.nextafter(cuts, np.float32(-np.inf)), SPECIAL])
            X[:, j] = rng.choice(pool, n)
    return X


# -- the models ----------------------------------------------------------------------------------

def _data(n: int = 1500, seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    X[:, 2] = np.round(X[:, 2] * 2) / 2  # many events on the thresholds
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    target = 3.0 * X[:, 0] + np.sin(X[:, 2]) + 0.1 * rng.normal(size=n)
    X[rng.random(n) < 0.15, 1] = np.nan
    y = np.where(np.isnan(X[:, 1]), 1, y)  # the NaN direction matters
    return X, y, target


def _float64_thresholds(model):
    """A copy whose thresholds are float64 values just above float32 ones (they round down
    to them), plus a few beyond float32's range."""
    other = copy.deepcopy(model)
    forest = other.forest_
    split = np.flatnonzero(forest.feature >= 0)
    low = forest.threshold.astype(np.float64)
    high = np.nextafter(forest.threshold, np.float32(np.inf)).astype(np.float64)
    with np.errstate(invalid="ignore"):  # +inf thresholds stay +inf
        threshold = np.where(np.isfinite(low), low + 0.25 * (high - low), low)
    threshold[split[:3]] = [1e39, -1e39, 3.4028235677973366e38]  # the last: just above max
    forest.threshold = np.where(forest.feature >= 0, threshold, 0.0)
    return other


def _zero_median():
    """A weighted-median stump whose leaves are -0.0 and 0.0 (in that order)."""
    builder = ForestBuilder(N_FEATURES, aggregation="weighted_median")
    zeros = np.zeros(3)
    builder.add(tree_weight=1.0, feature=np.array([0, -1, -1]), threshold=np.array([0.5, 0, 0]),
                left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
                missing_left=np.zeros(3, bool), value=np.array([0.0, -0.0, 0.0]),
                bin_threshold=zeros, gain=zeros, cover=zeros)
    forest = builder.build()
    forest.validate()
    return from_forest("regressor", forest, None)


@pytest.fixture(scope="module")
def models():
    X, y, target = _data()
    out = {f"c_{b}": BDTClassifier(boosting=b, n_trees=12, max_depth=3, n_jobs=1, random_state=0).fit(X, y)
           for b in ("gradient", "adaboost", "realadaboost", "eps", "bagging")}
    out["c_newton"] = BDTClassifier(boosting="newton", loss="logistic", n_trees=12, max_depth=2,
                                    n_jobs=1).fit(X, y)
    out["r_gradient"] = BDTRegressor(n_trees=12, max_depth=4, n_jobs=1).fit(X, target)
    out["r_newton"] = BDTRegressor(boosting="newton", loss="huber", n_trees=12, max_depth=3,
                                   n_jobs=1).fit(X, target)
    out["leafwise"] = BDTClassifier(n_trees=6, max_leaves=24, max_depth=None, n_jobs=1).fit(X, y)
    out["deep"] = BDTClassifier(n_trees=3, max_depth=8, min_child_weight=0, n_jobs=1).fit(X, y)
    out["float64_thresholds"] = _float64_thresholds(out["r_gradient"])
    out["zero_median"] = _zero_median()
    return out


# -- the C++ driver, compiled once ---------------------------------------------------------------

@pytest.fixture(scope="module")
def cpp(models, tmp_path_factory):
    """run(name, X) -> (evaluate, evaluate_batch, probability) of the compiled header."""
    folder = tmp_path_factory.mktemp("audit_cpp")
    names = list(models)
    for i, name in enumerate(names):
        to_cpp(models[name], folder / f"audit_{i}.hpp", namespace=f"audit_{i}")
    source = folder / "driver.cpp"  # test_cpp_export's driver: run(which, m, x, n, out)
    source.write_text(_driver([f"audit_{i}" for i in range(len(names))],
                              [hasattr(models[n], "predict_proba") for n in names]))
    exe = _compile(_compiler(), source, {"c++11": ["-std=c++11"]})["c++11"]

    def run(name: str, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=np.float32)
        events, result = folder / "events.bin", folder / "out.bin"
        with open(events, "wb") as handle:
            np.array(X.shape, dtype=np.int64).tofile(handle)
            X.tofile(handle)
        done = subprocess.run([str(exe), str(names.index(name)), str(events), str(result)],
                              capture_output=True, timeout=60)
        assert done.returncode == 0, done
        return np.fromfile(result, dtype=np.float64).reshape(3, X.shape[0])

    return run


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


# -- hepbdt's prediction against the walk ------------------------------------------------------

SCORED = ["c_gradient", "c_adaboost", "c_realadaboost", "c_eps", "c_bagging", "c_newton",
          "r_gradient", "r_newton", "leafwise", "deep", "float64_thresholds"]


@pytest.mark.parametrize("name", SCORED)
def test_prediction_equals_the_recursive_walk(models, name):
    model = models[name]
    X = _adversarial(model.forest_, 200)
    np.testing.assert_array_equal(model.forest_.raw_score(X), _walk_score(model.forest_, X))
    finite = np.where(np.isinf(X), 0.0, X)  # the estimators refuse inf
    score = getattr(model, "decision_function", None) or model.predict
    np.testing.assert_array_equal(score(finite), _walk_score(model.forest_, finite))
    assert score(finite[:1]).shape == (1,)


# -- C++ ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SCORED)
def test_cpp_equals_hepbdt_bit_for_bit_on_adversarial_events(models, cpp, name):
    model = models[name]
    X = _adversarial(model.forest_, 400, seed=2)
    ref = model.forest_.raw_score(X)
    evaluate, batch, probability = cpp(name, X)
    np.testing.assert_array_equal(_bits(evaluate), _bits(ref))
    np.testing.assert_array_equal(_bits(batch), _bits(ref))
    if hasattr(model, "predict_proba"):
        finite = np.where(np.isinf(X), 0.0, X)
        p = model.predict_proba(finite)[:, 1]
        np.testing.assert_allclose(cpp(name, finite)[2], p, rtol=1e-15, atol=1e-16)
    assert cpp(name, X[:1])[0][0] == ref[0] and cpp(name, X[:0]).shape == (3, 0)


def test_cpp_float64_thresholds_decide_float32_events_as_hepbdt(models, cpp):
    """A threshold that is not a float32 value was rounded to the nearest float32: where
    that rounds down, the float32 equal to it went right in C++ and left in hepbdt."""
    model = models["float64_thresholds"]
    forest = model.forest_
    assert forest.threshold.dtype == np.float64
    split = np.flatnonzero(forest.feature >= 0)
    X = np.zeros((split.size, N_FEATURES), dtype=np.float32)
    with np.errstate(over="ignore"):  # those beyond float32's range: +-inf, then 0
        X[np.arange(split.size), forest.feature[split]] = forest.threshold[split].astype(np.float32)
    ref = model.predict(np.where(np.isinf(X), 0.0, X))
    got = cpp("float64_thresholds", np.where(np.isinf(X), 0.0, X))
    np.testing.assert_array_equal(got[0], ref)
    np.testing.assert_array_equal(got[1], ref)


def test_cpp_keeps_the_sign_of_zero_leaf_values(models, cpp):
    """np.unique merged 0.0 into -0.0 and the header wrote both as -0.0: the one-tree
    median of the 0.0 leaf was -0.0 in C++, 0.0 in hepbdt."""
    X = np.array([[0.0] * N_FEATURES, [1.0] * N_FEATURES], dtype=np.float32)
    ref = models["zero_median"].predict(X)
    assert list(np.signbit(ref)) == [True, False]
    got = cpp("zero_median", X)
    np.testing.assert_array_equal(_bits(got[0]), _bits(ref))
    np.testing.assert_array_equal(_bits(got[1]), _bits(ref))


def test_cpp_extra_keys_stay_in_the_comment(models, tmp_path):
    """A forest.extra key (from a model file) with a line break ended the // comment and
    put the rest of the key into the header as code."""
    model = copy.deepcopy(models["c_gradient"])
    model.forest_.extra["note\nconstexpr double injected = 1.0; //"] = "x"
    model.forest_.extra["plain_key"] = 1
    to_cpp(model, tmp_path / "m.hpp", namespace="m")
    lines = (tmp_path / "m.hpp").read_text().splitlines()
    assert all(line.startswith("//") for line in lines if "injected" in line)
    assert "//   plain_key = 1" in lines


def test_cpp_namespaces_that_gnu_modes_define_as_macros(models, tmp_path):
    with pytest.raises(CppExportError, match="reserved"):
        to_cpp(models["c_gradient"], tmp_path / "m.hpp", namespace="linux")
    assert to_cpp(models["c_gradient"], tmp_path / "unix.hpp")["namespace"] == "unix_model"


# -- ONNX -----------------------------------------------------------------------------------------

def _onnx_run(model, X: np.ndarray, path: Path) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    from hepbdt.interop import to_onnx

    to_onnx(model, path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return [o.ravel() for o in session.run(None, {"input": np.ascontiguousarray(X, np.float32)})]


@pytest.mark.parametrize("name", SCORED)
def test_onnx_equals_hepbdt_to_its_float32_output(models, name, tmp_path):
    pytest.importorskip("onnx")
    model = models[name]
    X = _adversarial(model.forest_, 400, seed=3)
    ref = model.forest_.raw_score(X)
    out = _onnx_run(model, X, tmp_path / "m.onnx")
    np.testing.assert_array_equal(out[0], ref.astype(np.float32))  # one thread: in tree order
    if hasattr(model, "predict_proba"):
        finite = np.where(np.isinf(X), 0.0, X)
        p = model.predict_proba(finite)[:, 1]
        np.testing.assert_allclose(_onnx_run(model, finite, tmp_path / "m.onnx")[1], p, atol=2e-7)


def test_onnx_refuses_scores_beyond_float32(tmp_path):
    """The ensemble's float32 output gave inf where hepbdt gives 5e38."""
    pytest.importorskip("onnx")
    from hepbdt.interop.onnx_export import ONNXExportError, to_onnx

    builder = ForestBuilder(N_FEATURES)
    zeros = np.zeros(3)
    for _ in range(5):
        builder.add(feature=np.array([0, -1, -1]), threshold=np.array([0.5, 0, 0]),
                    left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
                    missing_left=np.zeros(3, bool), value=np.array([0.0, 1e38, -1.0]),
                    bin_threshold=zeros, gain=zeros, cover=zeros)
    model = from_forest("regressor", builder.build(), None)
    assert model.predict(np.zeros((1, N_FEATURES), np.float32))[0] == 5e38
    with pytest.raises(ONNXExportError, match="float32"):
        to_onnx(model, tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()
    model.forest_.value[model.forest_.value == 1e38] = 6e37  # within range: written
    to_onnx(model, tmp_path / "m.onnx")


def test_onnx_metadata_gives_the_link_constant_exactly(models, tmp_path):
    onnx = pytest.importorskip("onnx")
    from hepbdt.interop import to_onnx

    model = copy.deepcopy(models["c_adaboost"])
    model.forest_.extra["score_min"] = -0.123456789
    to_onnx(model, tmp_path / "m.onnx")
    meta = {p.key: p.value for p in onnx.load(str(tmp_path / "m.onnx")).metadata_props}
    assert "-0.123456789" in json.loads(meta["probability"])


def test_a_float64_forest_predicts_alike_after_save_and_load(models):
    """Loading cast a float64 forest's thresholds to the nearest float32: the events equal
    to a threshold rounded down went the other way after save and load (288 of 300)."""
    from hepbdt.model import Forest

    model = copy.deepcopy(models["float64_thresholds"])
    forest = model.forest_
    beyond = np.abs(forest.threshold) > np.finfo(np.float32).max  # a file says "Infinity"
    forest.threshold[beyond] = np.copysign(np.inf, forest.threshold[beyond])
    split = np.flatnonzero((forest.feature >= 0) & ~beyond)
    X = np.zeros((split.size, N_FEATURES), dtype=np.float32)
    X[np.arange(split.size), forest.feature[split]] = forest.threshold[split].astype(np.float32)
    loaded = copy.deepcopy(model)
    loaded.forest_ = Forest.from_dict(forest.to_dict())
    assert loaded.forest_.threshold.dtype == np.float32
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
