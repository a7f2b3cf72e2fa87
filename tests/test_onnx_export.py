"""ONNX export: onnxruntime's outputs against hepbdt's scores and probabilities, event by event.

Every booster, regression (weighted median included), NaN in training and evaluation,
shallow, deep and single-leaf trees, named features in another order, models read from
TMVA XML (also against TMVA::Reader's own scores) and XGBoost JSON (also against XGBoost's
probabilities); the versions, metadata and refusals.

The tolerance is derived from the arithmetic, not chosen: the graph walks and sums the
trees in double, as hepbdt does but in another order, and rounds the score once to
float32. So |onnx - hepbdt| <= 2^-24 (|hepbdt| + d) + d, where d bounds the difference of
two double sums of the same n_trees + 1 terms: 4 (n_trees + 3) 2^-53 S, with S the largest
possible sum of |terms| (|initial score| + sum_t |w_t| max |leaf_t|, over |sum_t w_t| for a
weighted mean). The probability is a Lipschitz function (constant L) of the float32 score,
computed in double and rounded to float32: L dF + 2^-24 p + 8 2^-53.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.estimators import from_forest
from hepbdt.interop import from_tmva_xml, from_xgboost_json, onnx_export
from hepbdt.interop.onnx_export import ONNXExportError, to_onnx
from hepbdt.model import NODE_ARRAYS, Forest, ForestBuilder

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from .conftest import SHARED, tmva_inputs  # noqa: E402

TMVA_DIR = SHARED / "tmva"
DATA_DIR = SHARED / "data"
needs_fixtures = pytest.mark.skipif(not (TMVA_DIR / "README.md").is_file(),
                                    reason="shared/tmva fixtures are not available")

# What onnxruntime 1.17 (early 2024, the oldest we promise) reads: IR <= 9, opset <= 20.
ORT_1_17_MAX_IR = 9
ORT_1_17_MAX_OPSET = 20
EXPECTED_OPSET = {"": 17, "ai.onnx.ml": 3}
EXPECTED_IR = 8
U32 = 2.0 ** -24  # unit roundoff of float32
U64 = 2.0 ** -53  # and of double


# -- helpers -------------------------------------------------------------------------------

def run_onnx(path, X: np.ndarray, threads: int = 1) -> dict[str, np.ndarray]:
    """onnxruntime's outputs by name, each (n,) float32."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    values = session.run(None, {"input": np.ascontiguousarray(X, dtype=np.float32)})
    out = {}
    for meta, value in zip(session.get_outputs(), values, strict=True):
        assert value.dtype == np.float32 and value.shape == (X.shape[0], 1)
        out[meta.name] = value[:, 0]
    return out


def sum_bound(forest: Forest) -> float:
    """d: how far two double evaluations of the score, in different orders, may differ."""
    leaf = forest.feature < 0
    per_tree = np.array([np.max(np.abs(forest.value[forest.tree_slice(t)][leaf[forest.tree_slice(t)]]))
                         for t in range(forest.n_trees)])
    terms = np.abs(forest.tree_weights) * per_tree
    if forest.aggregation == "weighted_mean":
        total = abs(forest.tree_weights.sum())
        size = terms.sum() / total if total != 0 else terms.sum()
    else:
        size = abs(forest.base_score) + terms.sum()
    return 4.0 * (forest.n_trees + 3) * U64 * size


def assert_score_matches(forest: Forest, got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| within the bound of every event; returns the bound."""
    d = sum_bound(forest)
    bound = U32 * (np.abs(ref) + d) + d
    bad = np.abs(got - ref) > bound
    assert not bad.any(), (f"{bad.sum()} events off; worst {np.max(np.abs(got - ref)):.3g} "
                           f"(bound there {bound[np.argmax(np.abs(got - ref))]:.3g})")
    return bound


def link_lipschitz(forest: Forest) -> float:
    """The largest |dP/dscore| of the classifier's link."""
    if forest.aggregation != "sum":
        return 1.0 / (1.0 - forest.extra.get("score_min", -1.0))
    return 0.25 if forest.extra.get("loss") == "logistic" else 0.5


def assert_matches(model, X, path, *, X_model=None) -> dict[str, np.ndarray]:
    """Export ``model``, run it on X (the model's column order) and compare every output
    with hepbdt's (evaluated on ``X_model``, default X)."""
    to_onnx(model, path)
    out = run_onnx(path, X)
    X_model = X if X_model is None else X_model
    forest = model.forest_
    if hasattr(model, "predict_proba"):
        ref = model.decision_function(X_model)
        bound = assert_score_matches(forest, out["score"], ref)
        p_ref = model.predict_proba(X_model)[:, 1]
        p_bound = link_lipschitz(forest) * bound + U32 * p_ref + 8 * U64
        assert np.all(np.abs(out["probability"] - p_ref) <= p_bound)
    else:
        ref = model.predict(X_model)
        assert set(out) == {"score"}
        assert_score_matches(forest, out["score"], ref)
    return out


def data(seed=0, n=2000, m=5, nan_fraction=0.1):
    """Training X (column 0 ~10% NaN), labels, a regression target, and evaluation X with
    NaN in every column."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random(n) < nan_fraction, 0] = np.nan
    Z = np.nan_to_num(X, nan=1.0)  # the missing values carry information
    y = (Z[:, 0] + 0.7 * Z[:, 1] - 0.4 * Z[:, 2] ** 2 + rng.normal(size=n) > 0).astype(int)
    target = 50.0 + 10.0 * Z[:, 0] + 3.0 * Z[:, 1] * Z[:, 2] + rng.normal(size=n)
    Xt = rng.normal(scale=1.2, size=(3000, m)).astype(np.float32)
    Xt[rng.random(Xt.shape) < 0.1] = np.nan
    Xt[:5] = np.nan
    return X, y, target, Xt


def assert_both_missing_directions(forest: Forest) -> None:
    """The trees send NaN left at some nodes and right at others."""
    split = forest.feature >= 0
    assert forest.missing_left[split].any() and (~forest.missing_left[split]).any()


# -- every booster ---------------------------------------------------------------------------

BOOSTINGS = ["gradient", "newton", "adaboost", "realadaboost", "eps", "bagging"]


@pytest.mark.parametrize("boosting", BOOSTINGS)
def test_classifier_every_booster_with_nan(boosting, tmp_path):
    X, y, _, Xt = data()
    model = BDTClassifier(boosting=boosting, n_trees=30, max_depth=3, random_state=1).fit(X, y)
    assert_both_missing_directions(model.forest_)
    out = assert_matches(model, Xt, tmp_path / "m.onnx")
    assert np.isnan(Xt).any()
    # the probability column is the signal column: it moves with the score
    order = np.argsort(out["score"])
    assert np.all(np.diff(out["probability"][order]) >= 0)


@pytest.mark.parametrize("boosting", ["realadaboost", "newton", "bagging"])
def test_probability_in_the_tails_within_readmes_bound(boosting, tmp_path):
    # README, Deploying a model: "probability" comes from the float32 score, so it is
    # about 2^-24 (|F| L + P) from predict_proba (L the link's slope at P), which in the
    # tails is many float32 steps of P; checked against a float64 link of the score
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=4000) > 0).astype(int)
    extra = {"learning_rate": 1.0} if boosting == "newton" else {}
    model = BDTClassifier(boosting=boosting, n_trees=200, max_depth=3, random_state=0,
                          **extra).fit(X, y)
    to_onnx(model, tmp_path / "m.onnx")
    got = run_onnx(tmp_path / "m.onnx", X)["probability"].astype(np.float64)
    F = model.decision_function(X)
    kind, c = model.forest_.probability_link()
    if kind == "sigmoid":
        p = 1.0 / (1.0 + np.exp(-c * F))
        slope = c * p * (1.0 - p)
    else:
        p = np.clip((F - c) / (1.0 - c), 0.0, 1.0)
        slope = np.full_like(p, 1.0 / (1.0 - c))
    bound = U32 * (np.abs(F) * slope * (1.0 + 1e-6) + p) + 8 * U64
    assert np.all(np.abs(got - p) <= bound)
    steps = np.abs(got - p) / np.spacing(p.astype(np.float32)).astype(np.float64)
    assert steps.max() > 4  # the tails' float32 steps README warns of


def test_classifier_yes_no_leaf_off_scores_in_0_1(tmp_path):
    X, y, _, Xt = data(seed=3)
    model = BDTClassifier(boosting="adaboost", use_yes_no_leaf=False, n_trees=20, max_depth=2).fit(X, y)
    assert model.forest_.extra["score_min"] == 0.0
    assert_matches(model, Xt, tmp_path / "m.onnx")


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_regressor(boosting, loss, tmp_path):
    X, _, target, Xt = data(seed=1)
    model = BDTRegressor(boosting=boosting, loss=loss, n_trees=40, max_depth=3).fit(X, target)
    assert_both_missing_directions(model.forest_)
    assert_matches(model, Xt, tmp_path / "r.onnx")


@pytest.mark.parametrize(("depth", "min_node_size"), [(1, 0.0), (2, 0.0), (10, 0.02), (16, 0.001)])
def test_shallow_and_deep_trees(depth, min_node_size, tmp_path):
    X, y, target, Xt = data(seed=2, n=4000)
    clf = BDTClassifier(n_trees=20, max_depth=depth, min_node_size=min_node_size).fit(X, y)
    reg = BDTRegressor(n_trees=20, max_depth=depth, min_node_size=min_node_size).fit(X, target)
    if depth >= 10:  # deep, sparse trees: hepbdt walks them node by node, not in the dense layout
        for model in (clf, reg):
            assert model.forest_.max_depth >= 10 and model.forest_.dense() is None
    for model, name in ((clf, "c.onnx"), (reg, "r.onnx")):
        assert_matches(model, Xt, tmp_path / name)


# -- hand-made forests: single leaves, no trees, ties in the weighted median ----------------

def leaf_forest(values, weights, aggregation, base=0.0, n_features=3) -> Forest:
    """A forest of single-leaf trees."""
    builder = ForestBuilder(n_features, base_score=base, aggregation=aggregation)
    for v, w in zip(values, weights, strict=True):
        arrays = {k: np.zeros(1, dt) for k, dt in NODE_ARRAYS.items()}
        arrays.update(feature=np.array([-1]), left=np.array([-1]), right=np.array([-1]),
                      value=np.array([v]))
        builder.add(w, **arrays)
    return builder.build()


def stump_forest(rng, n_trees, aggregation, n_features=3, levels=4) -> Forest:
    """Depth-2 trees whose leaf values repeat across trees (ties), random weights."""
    builder = ForestBuilder(n_features, aggregation=aggregation)
    for _ in range(n_trees):
        f = rng.integers(0, n_features, size=3)
        arrays = {k: np.zeros(7, dt) for k, dt in NODE_ARRAYS.items()}
        arrays.update(feature=np.array([f[0], f[1], f[2], -1, -1, -1, -1]),
                      threshold=rng.normal(size=7).astype(np.float32),
                      left=np.array([1, 3, 5, -1, -1, -1, -1]), right=np.array([2, 4, 6, -1, -1, -1, -1]),
                      missing_left=rng.random(7) < 0.5,
                      value=rng.integers(0, levels, size=7).astype(np.float64) * 1.5 - 2.0)
        builder.add(float(rng.choice([0.5, 1.0, 1.0, 2.25])), **arrays)
    return builder.build()


def test_single_leaf_trees(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3)).astype(np.float32)
    values, weights = rng.normal(size=12), rng.uniform(0.1, 2.0, size=12)
    clf = from_forest("classifier", leaf_forest(values, weights, "sum", base=0.3), None)
    out = assert_matches(clf, X, tmp_path / "c.onnx")
    assert np.all(out["score"] == out["score"][0])
    expected = 0.3 + np.sum(weights * values)
    assert abs(out["score"][0] - expected) <= 2 * U32 * abs(expected)
    mean = from_forest("classifier", leaf_forest(np.sign(values), weights, "weighted_mean"), None)
    assert_matches(mean, X, tmp_path / "m.onnx")
    zero_sum = from_forest("regressor", leaf_forest([1.0, 2.0], [1.0, -1.0], "weighted_mean"), None)
    out = assert_matches(zero_sum, X, tmp_path / "z.onnx")  # weights sum to 0: the numerator
    assert np.all(out["score"] == -1.0)


def test_forest_without_trees_is_its_initial_score(tmp_path):
    empty = Forest(**{k: np.zeros(0, dt) for k, dt in NODE_ARRAYS.items()},
                   tree_offsets=np.array([0]), tree_weights=np.zeros(0), n_features=2,
                   base_score=1.75)
    model = from_forest("regressor", empty, None)
    out = assert_matches(model, np.zeros((4, 2), np.float32), tmp_path / "e.onnx")
    assert np.all(out["score"] == 1.75)


def test_a_score_beyond_float32_of_one_tree_is_refused(tmp_path):
    """One tree whose leaf is 1e39: onnxruntime's float32 output would be inf."""
    forest = leaf_forest([1e39], [1.0], "sum")
    score = from_forest("regressor", forest, None).predict(np.zeros((1, 3), np.float32))[0]
    assert abs(score) > np.finfo(np.float32).max
    with pytest.raises(ONNXExportError, match="beyond float32"):
        to_onnx(from_forest("regressor", forest, None), tmp_path / "m.onnx")


def test_a_score_beyond_float32_below_zero_is_refused(tmp_path):
    """Leaves 1 and -1e39 (predict -1e39 for every event): onnxruntime's float32 output
    would be -inf, so the export refuses; audit HC: the negative leaves' extreme taken as the
    positive one's (-weighted -> weighted in _leaf_extremes) wrote a file giving -inf."""
    forest = leaf_forest([1.0, -1e39], [1.0, 1.0], "sum")
    model = from_forest("regressor", forest, None)
    score = model.predict(np.zeros((1, 3), np.float32))[0]
    assert score < -np.finfo(np.float32).max
    with pytest.raises(ONNXExportError, match="beyond float32"):
        to_onnx(model, tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("n_trees", [1, 5, 6, 7, 40])
def test_weighted_median_exact_with_ties(n_trees, tmp_path):
    rng = np.random.default_rng(n_trees)
    forest = stump_forest(rng, n_trees, "weighted_median")
    model = from_forest("regressor", forest, None)
    X = rng.normal(size=(2000, 3)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    to_onnx(model, tmp_path / "w.onnx")
    out = run_onnx(tmp_path / "w.onnx", X)
    # exact: hepbdt's double arithmetic in its order, then one rounding to float32
    np.testing.assert_array_equal(out["score"], model.predict(X).astype(np.float32))


def test_weighted_median_classifier_uses_the_clip_link(tmp_path):
    rng = np.random.default_rng(8)
    forest = stump_forest(rng, 13, "weighted_median", levels=3)
    forest.value[:] = np.clip(forest.value, -1.0, 1.0)
    model = from_forest("classifier", forest, None)
    X = rng.normal(size=(1000, 3)).astype(np.float32)
    out = assert_matches(model, X, tmp_path / "w.onnx")
    np.testing.assert_array_equal(out["score"], model.decision_function(X).astype(np.float32))


# -- named features, metadata, versions ------------------------------------------------------

def test_named_features_in_another_order_and_metadata(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y, _, Xt = data(seed=5, m=4)
    names = ["pt", "eta", "phi", "mass"]
    model = BDTClassifier(n_trees=25, max_depth=3).fit(pd.DataFrame(X, columns=names), y)
    model = from_forest("classifier", model.forest_, names, classes=["background", "signal"],
                        feature_definitions={"pt": "sqrt(px*px + py*py)"})
    shuffled = pd.DataFrame(Xt, columns=names)[["mass", "phi", "pt", "eta"]]
    # ONNX takes the model's order; hepbdt reorders the data frame by name
    assert_matches(model, Xt, tmp_path / "m.onnx", X_model=shuffled)
    proto = onnx.load(tmp_path / "m.onnx")
    meta = {p.key: json.loads(p.value) for p in proto.metadata_props}
    assert meta["feature_names"] == names
    assert meta["feature_definitions"] == {"pt": "sqrt(px*px + py*py)"}
    assert meta["classes"] == ["background", "signal"] and meta["signal_class"] == "signal"
    assert meta["estimator"] == "BDTClassifier" and meta["aggregation"] == "sum"
    assert proto.producer_name == "hepbdt"
    from hepbdt._version import __version__
    assert proto.producer_version == __version__
    assert proto.graph.input[0].type.tensor_type.shape.dim[1].dim_value == 4


def test_unnamed_features_metadata(tmp_path):
    X, _, target, _ = data(seed=6, m=3)
    model = BDTRegressor(n_trees=5).fit(X, target)
    to_onnx(model, tmp_path / "r.onnx")
    meta = {p.key: json.loads(p.value) for p in onnx.load(tmp_path / "r.onnx").metadata_props}
    assert meta["feature_names"] == ["x0", "x1", "x2"] and meta["estimator"] == "BDTRegressor"
    assert "classes" not in meta and "feature_definitions" not in meta


def test_versions_within_what_onnxruntime_1_17_reads(tmp_path):
    X, y, _, _ = data(seed=7)
    model = BDTClassifier(n_trees=5).fit(X, y)
    info = to_onnx(model, tmp_path / "m.onnx", name="my_bdt")
    proto = onnx.load(tmp_path / "m.onnx")
    opsets = {o.domain: o.version for o in proto.opset_import}
    assert opsets == EXPECTED_OPSET == info["opset"]
    assert proto.ir_version == EXPECTED_IR == info["ir_version"]
    assert proto.ir_version <= ORT_1_17_MAX_IR and opsets[""] <= ORT_1_17_MAX_OPSET
    assert proto.graph.name == "my_bdt"
    assert info["inputs"] == ["input"] and info["outputs"] == ["score", "probability"]
    assert info["n_trees"] == 5 and info["n_nodes"] == model.forest_.n_nodes
    assert info["n_bytes"] == os.path.getsize(tmp_path / "m.onnx")
    # no operator changed after opset 16 in the default domain (the module docstring says so)
    regressor = from_forest("regressor", stump_forest(np.random.default_rng(0), 7, "weighted_median"), None)
    to_onnx(regressor, tmp_path / "w.onnx")
    for path in (tmp_path / "m.onnx", tmp_path / "w.onnx"):
        for node in onnx.load(path).graph.node:
            version = opsets[node.domain or ""]
            schema = onnx.defs.get_schema(node.op_type, version, node.domain)
            assert schema.since_version <= (16 if node.domain == "" else 3), node.op_type


# -- refusals and atomic writes --------------------------------------------------------------

def test_unfitted_model_is_refused(tmp_path):
    with pytest.raises(TypeError, match="expected a fitted hepbdt"):
        to_onnx(BDTClassifier(), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match="call fit"):
        to_onnx(object(), tmp_path / "m.onnx")
    assert not os.listdir(tmp_path)


def test_missing_onnx_package_gives_the_install_command(tmp_path, monkeypatch):
    X, y, _, _ = data(seed=9)
    model = BDTClassifier(n_trees=3).fit(X, y)
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with pytest.raises(ONNXExportError, match=r"pip install 'hepbdt\[onnx\]'"):
        to_onnx(model, tmp_path / "m.onnx")
    assert not os.listdir(tmp_path)


def test_failed_export_leaves_no_file(tmp_path, monkeypatch):
    X, y, _, _ = data(seed=10)
    model = BDTClassifier(n_trees=3).fit(X, y)
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    monkeypatch.setattr(onnx_export, "PROTOBUF_LIMIT", 1 << 21)  # as if the model were > 2 GiB
    monkeypatch.setattr(onnx_export, "HEADROOM", (1 << 21) - 1000)
    with pytest.raises(ONNXExportError, match="2 GiB"):
        to_onnx(model, target)
    monkeypatch.undo()

    def broken(*args, **kwargs):
        raise onnx.checker.ValidationError("broken on purpose")

    monkeypatch.setattr(onnx.checker, "check_model", broken)
    with pytest.raises(onnx.checker.ValidationError):
        to_onnx(model, target)
    with pytest.raises(ONNXExportError, match="without trees"):
        to_onnx(from_forest("regressor", Forest(
            **{k: np.zeros(0, dt) for k, dt in NODE_ARRAYS.items()}, tree_offsets=np.array([0]),
            tree_weights=np.zeros(0), n_features=2, aggregation="weighted_median"), None), target)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["m.onnx"]  # no temporary left behind


def test_varint_sizes_are_protobufs():
    encoder = pytest.importorskip("google.protobuf.internal.encoder")
    values = [0, 1, 127, 128, 255, 256, 16383, 16384, 2**21 - 1, 2**21, 2**28, 2**35, 2**62]
    expected = sum(len(encoder._VarintBytes(v)) for v in values)
    assert onnx_export._varint_bytes(np.array(values)) == expected


def test_size_estimate_of_many_stumps_is_close_to_the_file(tmp_path):
    """600 trees of one split: tree ids of two varint bytes on every node and leaf."""
    X, y, _, _ = data(seed=11, n=2000)
    model = BDTClassifier(n_trees=600, max_depth=1, learning_rate=0.02).fit(X, y)
    info = to_onnx(model, tmp_path / "m.onnx")
    estimate = onnx_export._estimated_bytes(model.forest_, False)
    # the attributes are counted to the byte; the rest of the file is the graph's fixed
    # header (names, opsets, shapes: about 1.3 kB), which HEADROOM covers
    assert estimate < info["n_bytes"] <= estimate + 4096 < estimate + onnx_export.HEADROOM


def test_size_estimate_is_close_to_the_file(tmp_path):
    X, y, _, _ = data(seed=11, n=4000)
    model = BDTClassifier(n_trees=30, max_depth=8).fit(X, y)
    info = to_onnx(model, tmp_path / "m.onnx")
    estimate = onnx_export._estimated_bytes(model.forest_, False)
    assert 0.9 * info["n_bytes"] <= estimate <= 1.2 * info["n_bytes"]


# -- models from other tools -----------------------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("name", ["ClassExample_BDT", "ClassExample_BDTG", "Regression_BDTG",
                                  "Regression_BDT"])
def test_tmva_models(name, tmp_path):
    model = from_tmva_xml(TMVA_DIR / f"{name}.weights.xml")
    X = tmva_inputs(name)
    out = assert_matches(model, X, tmp_path / "t.onnx")
    reader = np.loadtxt(TMVA_DIR / f"{name}.reader.csv", delimiter=",", skiprows=1, usecols=2)
    # against TMVA::Reader itself (it reads float32, sums in double, prints 17 digits)
    if name == "ClassExample_BDTG":
        response = 2.0 * out["probability"].astype(np.float64) - 1.0  # 2/(1+exp(-2F)) - 1
        assert np.max(np.abs(response - reader)) <= 4 * U32 + 1e-12
    else:
        got = out["score"].astype(np.float64)
        assert np.all(np.abs(got - reader) <= 2 * U32 * np.maximum(np.abs(reader), 1.0))
    if name == "Regression_BDT":
        assert model.forest_.aggregation == "weighted_median"
        np.testing.assert_array_equal(out["score"], model.predict(X).astype(np.float32))


def test_xgboost_model(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y, _, Xt = data(seed=12)
    booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "max_depth": 4,
                         "eta": 0.3, "nthread": 1, "base_score": 0.3}, xgb.DMatrix(X, y), 30)
    booster.save_model(tmp_path / "model.json")
    model = from_xgboost_json(tmp_path / "model.json")
    out = assert_matches(model, Xt, tmp_path / "x.onnx")
    # and against XGBoost itself, which sums in float32
    np.testing.assert_allclose(out["probability"], booster.predict(xgb.DMatrix(Xt)), atol=2e-6)


# -- larger -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_large_gradient_classifier_all_threads(tmp_path):
    rng = np.random.default_rng(13)
    X = rng.normal(size=(100_000, 20)).astype(np.float32)
    X[rng.random(X.shape) < 0.02] = np.nan
    y = (np.nan_to_num(X[:, :5]).sum(axis=1) + rng.normal(size=X.shape[0]) > 0).astype(int)
    model = BDTClassifier(n_trees=200, max_depth=6).fit(X, y)
    to_onnx(model, tmp_path / "big.onnx")
    out = run_onnx(tmp_path / "big.onnx", X, threads=0)
    assert_score_matches(model.forest_, out["score"], model.decision_function(X))


def test_leaves_that_cancel_far_above_the_score_are_refused(tmp_path):
    """Leaves of +-1e16 that cancel to scores of order 1 (an XGBoost import of reg_lambda=0,
    eta=1 had them): no double sum in another order gives the score, and onnxruntime's
    gave 626.9 for 625.7 (audit FA). Against the exact sums (math.fsum), the model's own
    double sum is off by more than float32's rounding, so the file would not hold its
    promise; leaves of +-1e3 that cancel are written and agree."""
    from .test_audit_tmva_sum_rounding import (
        CANCELLING,
        MODERATE,
        _events,
        _exact_scores,
        _stumps,
    )

    X = _events()
    model = from_forest("regressor", _stumps(0.1, CANCELLING), None)
    exact = _exact_scores(model.forest_, X)
    assert np.any(np.abs(model.predict(X) - exact) > 2.0**-24 * np.abs(exact))
    with pytest.raises(ONNXExportError, match="cancel"):
        to_onnx(model, tmp_path / "m.onnx")
    assert_matches(from_forest("regressor", _stumps(0.1, MODERATE), None), X, tmp_path / "ok.onnx")


@pytest.mark.parametrize("factor", [0.25, 4.0])
def test_the_cancellation_bound_refuses_from_where_float32_rounding_is_reached(tmp_path, factor):
    """The refusal's constants: leaves of +-C in two pairs of stumps cancel up to about 2C,
    and ``_check_sum_rounding`` refuses where 3 sqrt(n + 1) 2^-53 (2C) passes float32's
    rounding of scores of order 1, C* = 2^-24 / (6 sqrt(6) 2^-53), about 3.7e7. A quarter
    of C* is written and onnxruntime's scores agree with hepbdt's; four times C* is refused
    (a factor 3 that became 0.3, or 30, fails one of the two)."""
    from .test_audit_tmva_sum_rounding import _events, _stumps

    c = factor * 2.0**-24 / (6.0 * np.sqrt(6.0) * 2.0**-53)
    leaves = [(c, 0.25), (-c, 0.5), (0.125, -0.375), (c, 0.0), (-c, 0.0)]
    model = from_forest("regressor", _stumps(0.1, leaves), None)
    if factor < 1:
        assert_matches(model, _events(), tmp_path / "ok.onnx")
    else:
        with pytest.raises(ONNXExportError, match="cancel"):
            to_onnx(model, tmp_path / "m.onnx")


def test_weighted_median_takes_half_the_weights_added_in_tree_order(tmp_path):
    """Weights whose total differs in the last bit between tree order and numpy's pairwise
    order move the median from the last tree to the second (``_half_total_median``): the
    file scores as hepbdt and as the Reader's rule (``tmva_response``, checked against the
    real TMVA::Reader in test_tmva_reader), 3.0 where the pairwise half gave 8.5."""
    from hepbdt.interop.tmva_export import tmva_response

    from .test_cpp_export import _half_total_median

    model = _half_total_median()
    X = np.random.default_rng(0).normal(size=(50, model.forest_.n_features)).astype(np.float32)
    to_onnx(model, tmp_path / "h.onnx")
    out = run_onnx(tmp_path / "h.onnx", X)
    np.testing.assert_array_equal(model.predict(X), tmva_response(model, X))
    np.testing.assert_array_equal(out["score"], model.predict(X).astype(np.float32))
    assert np.all(model.predict(X) == 3.0)
