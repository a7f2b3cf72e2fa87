"""ONNX export: hepbdt models as ONNX graphs for onnxruntime and other ONNX runtimes.

:func:`to_onnx` writes a fitted classifier or regressor (any booster, or a model read from
TMVA XML or XGBoost JSON) as one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` plus a few
standard operators. The graph has one input ``"input"``, float32 (N, n_features) in the
model's feature order (``feature_names_in_`` for named features), and the outputs
``"score"`` (N, 1), the classifier's ``decision_function`` or the regressor's ``predict``,
and for classifiers ``"probability"`` (N, 1), P(signal) = ``predict_proba(X)[:, 1]``. NaN
inputs go where the model sends them (``nodes_missing_value_tracks_true``); a model read
from a TMVA two-class file, whose Reader answers -999 for an event with a NaN input and
whose decision_function refuses one, gives such an event NaN in both outputs. Feature names
and definitions, the estimator and the class labels are in the model's metadata_props as
JSON. This module needs no estimator class; ``onnx`` is an optional dependency, imported
when a model is written. Running the graph (onnxruntime) is the caller's business.

Versions. IR version 8 with the default-domain opset 17 and ``ai.onnx.ml`` opset 3: the
release triple of ONNX 1.12 (2022), read by every onnxruntime since 1.12 and so by all
of the last two years (onnxruntime 1.17, early 2024, reads up to IR 9 and opset 20).
``ai.onnx.ml`` opset 3 is the first with double thresholds and leaf weights
(``*_as_tensor``); opset 5's unified ``TreeEnsemble`` is too new for older runtimes. No
operator of the graph changed after opset 16 (``Where``).

Precision. The input is cast to double inside the graph (exact), thresholds are stored as
double (they are float32 values, so every comparison is the model's), and the leaf
weights ``tree_weight * value`` as double, so onnxruntime walks and sums the trees in
double, as hepbdt does, in its own order. ``TreeEnsembleRegressor`` returns float32, so
the score is hepbdt's rounded once to float32: relative error 2^-24 (6e-8), plus double
rounding of order n_trees * 1e-16 of the summed |leaf weights|. A weighted mean whose
tree weights sum to the number of trees (bagging) keeps the leaf weights ``w_t * v``
and lets the runtime's "AVERAGE" divide their sum once, as hepbdt does, so votes that
cancel score exactly 0; other weighted means (AdaBoost, eps) divide the leaf weights by
the sum of the tree weights first, where an exact cancellation may leave about 1e-17.
The probability is
computed in double from that float32 score and rounded to float32 again. AdaBoostR2's
weighted median ("weighted_median") is reproduced exactly: each tree outputs the rank of
its leaf value among all leaf values (an integer, exact in float32), the ranks are
sorted with ties in tree order as hepbdt's stable sort, and the values, weights and
window mean are taken in double from constant tables in hepbdt's order of additions.
onnxruntime 1.17.0 and 1.32.0 give the same bits. A runtime that summed the trees in
float32 instead would be off by up to about n_trees * 6e-8 of the summed |leaf weights|.
Speed (200 trees of depth 6, 20 features, one thread): about 5.6 us an event in
onnxruntime against 0.75 us for hepbdt's own kernel.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from .._util import atomic_write_bytes, feature_names_of, is_classifier
from .._version import __version__
from ..model import Forest, from_tmva_two_class, half_tree_weight
from .tmva_export import _check_fitted

__all__ = ["to_onnx", "ONNXExportError", "ONNX_OPSET", "ONNX_ML_OPSET", "ONNX_IR_VERSION"]

ONNX_OPSET = 17  # default domain ("ai.onnx")
ONNX_ML_OPSET = 3  # "ai.onnx.ml": TreeEnsembleRegressor with double *_as_tensor attributes
ONNX_IR_VERSION = 8
INPUT_NAME = "input"
PROTOBUF_LIMIT = (2 << 30) - 1  # a serialized protobuf message is at most 2 GiB - 1
HEADROOM = 1 << 20  # bytes kept free for everything but the tree attributes
MAX_RANKS = 1 << 24  # weighted median: leaf ranks must be integers exact in float32
INSTALL_HINT = "pip install 'hepbdt[onnx]' (or pip install onnx)"


class ONNXExportError(ValueError):
    """A model that cannot be written as an ONNX graph that evaluates as the model does."""


def _import_onnx() -> Any:
    """The onnx package, or ONNXExportError with the install command."""
    try:
        # onnx is an optional dependency: only writing an ONNX file needs it.
        import onnx
    except ImportError:
        raise ONNXExportError(f"ONNX export needs the onnx package: {INSTALL_HINT}") from None
    return onnx


# -- size --------------------------------------------------------------------------------

def _varint_bytes(a: np.ndarray) -> int:
    """Bytes of the protobuf varints of the non-negative integers ``a``, summed."""
    a = np.asarray(a, dtype=np.int64)
    return int(a.size + sum(int(np.count_nonzero(a >= (1 << (7 * k)))) for k in range(1, 10)))


def _estimated_bytes(forest: Forest, median: bool) -> int:
    """An estimate (exact for stumps, above for deeper trees) of the serialized size of
    the tree attributes, from the node arrays; the rest of the file, about 1.3 kB of
    names, opsets and shapes, is what ``HEADROOM`` keeps room for.

    The integer lists of an ``AttributeProto`` are not packed (onnx.proto is proto2): each
    element costs a one-byte tag plus its varint; a string a tag, a length and its text;
    a double tensor 8 bytes an element. Child ids are bounded by the size of their tree.
    """
    n = forest.n_nodes
    sizes = np.diff(forest.tree_offsets)
    tree = np.repeat(np.arange(forest.n_trees), sizes)
    local = np.arange(n) - forest.tree_offsets[tree]
    leaf = forest.feature < 0
    n_leaves = int(np.count_nonzero(leaf))
    # per node: 7 lists of one element each (tags), ids, modes' length and text, threshold
    per_node = (7 * n + _varint_bytes(tree) + _varint_bytes(local) + 2 * _varint_bytes(sizes[tree])
                + _varint_bytes(np.maximum(forest.feature, 0)) + n + n + 9 * (n - n_leaves)
                + 4 * n_leaves + 8 * n)
    target_ids = _varint_bytes(tree[leaf]) if median else n_leaves
    per_leaf = (3 * n_leaves + _varint_bytes(tree[leaf]) + _varint_bytes(local[leaf]) + target_ids
                + 8 * n_leaves)
    return per_node + per_leaf


def _check_size(forest: Forest, median: bool) -> None:
    """ONNXExportError, before anything is built, when the file would pass protobuf's 2 GiB."""
    estimate = _estimated_bytes(forest, median)
    if estimate > PROTOBUF_LIMIT - HEADROOM:
        raise ONNXExportError(
            f"the ONNX file of this model would need about {estimate / 2**30:.2f} GiB for its "
            f"{forest.n_nodes:,} nodes; protobuf (the ONNX file format) is limited to 2 GiB "
            "(export fewer or shallower trees, or use TMVA XML or the C++ header)")


def _leaf_extremes(forest: Forest) -> tuple[np.ndarray, np.ndarray]:
    """Each tree's largest weighted leaf value above 0 and largest below 0 in size, (T,)
    each (0 where it has none; inf where the weighting overflows)."""
    leaf = forest.feature < 0
    with np.errstate(over="ignore", invalid="ignore"):
        weighted = np.repeat(forest.tree_weights, np.diff(forest.tree_offsets)) * forest.value
        starts = forest.tree_offsets[:-1]
        up = np.maximum.reduceat(np.where(leaf, np.maximum(weighted, 0.0), 0.0), starts)
        down = np.maximum.reduceat(np.where(leaf, np.maximum(-weighted, 0.0), 0.0), starts)
    return up, down


def _score_bound(forest: Forest) -> float:
    """An upper bound of |score| over all inputs: |base score| plus each tree's largest
    |weighted leaf value| (divided by |sum of tree weights| for a weighted mean), or the
    largest |leaf value| for the median; inf where that overflows."""
    leaf = forest.feature < 0
    if forest.aggregation == "weighted_median":
        return float(np.max(np.abs(forest.value[leaf]), initial=0.0))
    up, down = _leaf_extremes(forest)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.maximum(up, down).sum())
        if forest.aggregation == "weighted_mean":
            weight_sum = float(forest.tree_weights.sum())
            return total / abs(weight_sum) if weight_sum != 0 else total
        return total + abs(float(forest.base_score))


def _check_float32_range(forest: Forest) -> None:
    """ONNXExportError when a score could pass float32's range: TreeEnsembleRegressor's
    output is float32, so the file would give inf where hepbdt gives a number."""
    if forest.n_trees == 0:
        return
    bound = _score_bound(forest)
    if not bound <= float(np.finfo(np.float32).max):
        raise ONNXExportError(
            f"this model's score can reach {bound!r} in magnitude (summed over its trees' largest "
            f"leaf outputs), beyond float32's {float(np.finfo(np.float32).max)!r}: the ONNX "
            "ensemble outputs float32 and would give inf for such events; use the C++ header "
            "(to_cpp, double) or hepbdt itself")


def _check_sum_rounding(forest: Forest) -> None:
    """ONNXExportError where leaves cancel far above the score: onnxruntime sums them in
    double in its own order, each addition rounding by up to 2^-53 of the running sum, so
    the score would not be hepbdt's rounded once to float32 (leaves of +-1e16 cancelling
    to a margin of ~600 gave 626.9 for 625.7; audit FA). What can cancel is at most C, the
    smaller of the largest positive and the largest negative totals of the trees' leaves;
    a score's two double sums differ by about 3 sqrt(n + 1) 2^-53 C beyond its own relative
    rounding (each addition rounds up or down; n in place of sqrt(n), the worst case,
    refused ordinary regressions of a centred target in MeV, audit FE), checked against a
    float32 step of max(1, |base score|)."""
    if forest.n_trees == 0 or forest.aggregation == "weighted_median":
        return
    up, down = (float(extreme.sum()) for extreme in _leaf_extremes(forest))
    with np.errstate(over="ignore", invalid="ignore"):
        base = float(forest.base_score) if forest.aggregation == "sum" else 0.0
        cancelling = min(up + max(base, 0.0), down + max(-base, 0.0))
        if forest.aggregation == "weighted_mean" and forest.tree_weights.sum() != 0:
            cancelling /= abs(float(forest.tree_weights.sum()))
    bound = 3.0 * math.sqrt(forest.n_trees + 1) * 2.0**-53 * float(cancelling)
    scale = max(1.0, abs(base))
    if not bound <= 2.0**-24 * scale:
        raise ONNXExportError(
            f"this model's leaves cancel: its trees can add {float(cancelling):.3g} and take "
            f"it away again where its scores are of order {scale:.3g}, and onnxruntime's "
            f"double sums in their own order would move a score by about {bound:.3g}, more "
            "than float32's rounding; use the C++ header (to_cpp, summed as hepbdt sums) or "
            "hepbdt itself")


# -- the graph -----------------------------------------------------------------------------

def _ensemble_node(onnx: Any, forest: Forest, leaf_weight: np.ndarray, per_tree_target: bool,
                   base: float | None, output: str, aggregate: str = "SUM") -> Any:
    """The TreeEnsembleRegressor node: node k tests x[feature] < threshold, NaN goes left
    where missing_left; each leaf adds ``leaf_weight`` (double, one per node) to target 0,
    or to its tree's target when ``per_tree_target``; ``aggregate`` "AVERAGE" divides the
    double sum by the number of trees before the float32 output."""
    offsets = forest.tree_offsets.astype(np.int64)
    tree = np.repeat(np.arange(forest.n_trees, dtype=np.int64), np.diff(offsets))
    start = offsets[tree]
    local = np.arange(forest.n_nodes, dtype=np.int64) - start
    split = forest.feature >= 0
    leaf = ~split

    def as_tensor(a: Any) -> Any:
        return onnx.numpy_helper.from_array(np.asarray(a, dtype=np.float64))

    attrs: dict[str, Any] = {
        "nodes_treeids": tree.tolist(),
        "nodes_nodeids": local.tolist(),
        "nodes_featureids": np.where(split, forest.feature, 0).astype(np.int64).tolist(),
        "nodes_modes": np.where(split, "BRANCH_LT", "LEAF").tolist(),
        "nodes_values_as_tensor": as_tensor(np.where(split, forest.threshold.astype(np.float64), 0.0)),
        "nodes_truenodeids": np.where(split, forest.left - start, 0).astype(np.int64).tolist(),
        "nodes_falsenodeids": np.where(split, forest.right - start, 0).astype(np.int64).tolist(),
        "nodes_missing_value_tracks_true": (split & forest.missing_left).astype(np.int64).tolist(),
        "target_treeids": tree[leaf].tolist(),
        "target_nodeids": local[leaf].tolist(),
        "target_ids": (tree[leaf] if per_tree_target else np.zeros(int(leaf.sum()), np.int64)).tolist(),
        "target_weights_as_tensor": as_tensor(leaf_weight[leaf]),
        "n_targets": forest.n_trees if per_tree_target else 1,
        "aggregate_function": aggregate,
        "post_transform": "NONE",
    }
    if base is not None:
        attrs["base_values_as_tensor"] = as_tensor([base])
    return onnx.helper.make_node("TreeEnsembleRegressor", ["input_double"], [output],
                                 domain="ai.onnx.ml", name="trees", **attrs)


def _with_a_tree(forest: Forest) -> Forest:
    """The forest, or for a forest without trees one single-leaf tree of weight 0 (the
    runtime needs a tree; the score stays the initial score)."""
    if forest.n_trees:
        return forest
    one = {k: np.zeros(1, getattr(forest, k).dtype) for k in
           ("threshold", "bin_threshold", "missing_left", "value", "gain", "cover")}
    return Forest(feature=np.array([-1], np.int32), left=np.array([-1], np.int32),
                  right=np.array([-1], np.int32), **one, tree_offsets=np.array([0, 1]),
                  tree_weights=np.zeros(1), n_features=forest.n_features,
                  base_score=forest.base_score, aggregation=forest.aggregation, extra=forest.extra)


def _mean_or_sum_nodes(onnx: Any, forest: Forest) -> tuple[list[Any], list[Any]]:
    """("sum", "weighted_mean") the ensemble writing "score": leaf weights w_t * v, divided
    by sum_t w_t for a weighted mean (not when that sum is 0, as Forest.raw_score).

    When the tree weights sum to the number of trees (bagging's unit weights) the leaf
    weights stay w_t * v and the runtime's "AVERAGE" divides their double sum once, as
    hepbdt does: votes that cancel score exactly 0 (leaf weights divided first leave a
    rounding residue of about 1e-17 whose sign flips a cut at 0)."""
    forest = _with_a_tree(forest)
    weight = np.repeat(forest.tree_weights, np.diff(forest.tree_offsets)) * forest.value
    base: float | None = float(forest.base_score)
    aggregate = "SUM"
    if forest.aggregation == "weighted_mean":
        total = forest.tree_weights.sum()
        base = None
        if total == forest.n_trees:
            aggregate = "AVERAGE"
        elif total != 0:
            weight = weight / total
    return [_ensemble_node(onnx, forest, weight, False, base, "score", aggregate)], []


def _median_nodes(onnx: Any, forest: Forest) -> tuple[list[Any], list[Any]]:
    """("weighted_median") TMVA's AdaBoostR2 response, as ``_weighted_median_score``.

    Each tree outputs the rank of its leaf value among the forest's distinct leaf values;
    TopK sorts the ranks (ties by the lower tree index, as a stable argsort); the sorted
    values and tree weights are gathered from double tables, and the mean of the sorted
    values from index lo to hi around the weighted median is taken from their cumulative
    sum, all in double.
    """
    n_trees = forest.n_trees
    if n_trees == 0:
        raise ONNXExportError("a 'weighted_median' forest without trees has no score")
    leaf = forest.feature < 0
    table = np.unique(forest.value[leaf])
    if table.size > MAX_RANKS:
        raise ONNXExportError(f"aggregation 'weighted_median' with {table.size:,} distinct leaf "
                              f"values: more than the {MAX_RANKS:,} ranks that float32 holds exactly")
    rank = np.searchsorted(table, forest.value).astype(np.float64)
    half = n_trees // 6
    h = onnx.helper
    consts = [
        _const(onnx, "value_table", table), _const(onnx, "tree_weight", forest.tree_weights),
        _const(onnx, "half_weight", np.array(half_tree_weight(forest.tree_weights))),
        _const(onnx, "n_trees", np.array([n_trees], np.int64)),
        _const(onnx, "half", np.array(half, np.int64)),
        _const(onnx, "half_plus_one", np.array(half + 1, np.int64)),
        _const(onnx, "last", np.array(n_trees - 1, np.int64)),
        _const(onnx, "minus_one", np.array(-1, np.int64)),
        _const(onnx, "zero", np.array(0, np.int64)),
        _const(onnx, "axis_one", np.array(1, np.int64)),
        _const(onnx, "zero_double", np.array(0.0)),
    ]
    nodes = [
        _ensemble_node(onnx, forest, rank, True, None, "tree_rank"),
        h.make_node("TopK", ["tree_rank", "n_trees"], ["sorted_rank", "order"], axis=1, largest=0,
                    sorted=1),
        h.make_node("Cast", ["sorted_rank"], ["sorted_rank_int"], to=onnx.TensorProto.INT64),
        h.make_node("Gather", ["value_table", "sorted_rank_int"], ["sorted_value"]),
        h.make_node("Gather", ["tree_weight", "order"], ["sorted_weight"]),
        h.make_node("CumSum", ["sorted_weight", "axis_one"], ["cum_weight"]),
        h.make_node("Greater", ["cum_weight", "half_weight"], ["past_half"]),
        h.make_node("Cast", ["past_half"], ["past_half_int"], to=onnx.TensorProto.INT32),
        # the first sorted tree past half the weight (0 when none is, as numpy's argmax)
        h.make_node("ArgMax", ["past_half_int"], ["median"], axis=1, keepdims=1),
        # The window [lo, hi) = [median - half, median + half + 1), cut to [0, n_trees), sums
        # to cum_value[hi - 1] - cum_value[lo - 1] (0 for lo = 0), as hepbdt's cs[hi] - cs[lo].
        h.make_node("Add", ["median", "half"], ["hi_unclipped"]),
        h.make_node("Min", ["hi_unclipped", "last"], ["hi_last"]),
        h.make_node("Sub", ["median", "half_plus_one"], ["before_lo_unclipped"]),
        h.make_node("Max", ["before_lo_unclipped", "minus_one"], ["before_lo"]),
        h.make_node("CumSum", ["sorted_value", "axis_one"], ["cum_value"]),
        h.make_node("GatherElements", ["cum_value", "hi_last"], ["sum_to_hi"], axis=1),
        h.make_node("Max", ["before_lo", "zero"], ["before_lo_index"]),
        h.make_node("GatherElements", ["cum_value", "before_lo_index"], ["sum_to_before_lo"], axis=1),
        h.make_node("Less", ["before_lo", "zero"], ["lo_is_first"]),
        h.make_node("Where", ["lo_is_first", "zero_double", "sum_to_before_lo"], ["sum_before_lo"]),
        h.make_node("Sub", ["sum_to_hi", "sum_before_lo"], ["window_sum"]),
        h.make_node("Sub", ["hi_last", "before_lo"], ["window_count"]),
        h.make_node("Cast", ["window_count"], ["window_count_double"], to=onnx.TensorProto.DOUBLE),
        h.make_node("Div", ["window_sum", "window_count_double"], ["score_double"]),
        h.make_node("Cast", ["score_double"], ["score"], to=onnx.TensorProto.FLOAT),
    ]
    return nodes, consts


def _const(onnx: Any, name: str, value: np.ndarray) -> Any:
    """A graph initializer (a constant tensor) named ``name``."""
    return onnx.numpy_helper.from_array(np.asarray(value), name=name)


def _probability_nodes(onnx: Any, forest: Forest) -> tuple[list[Any], list[Any]]:
    """Nodes from "score" to "probability", in double: 1/(1+exp(-c F)) or clip((F-lo)/(1-lo), 0, 1)."""
    h = onnx.helper
    kind, param = forest.probability_link()
    nodes = [h.make_node("Cast", ["score"], ["score_for_link"], to=onnx.TensorProto.DOUBLE)]
    if kind == "sigmoid":
        consts = [_const(onnx, "minus_c", np.array(-param)), _const(onnx, "one", np.array(1.0))]
        nodes += [h.make_node("Mul", ["score_for_link", "minus_c"], ["minus_c_score"]),
                  h.make_node("Exp", ["minus_c_score"], ["exp_minus_c_score"]),
                  h.make_node("Add", ["exp_minus_c_score", "one"], ["one_plus_exp"]),
                  h.make_node("Div", ["one", "one_plus_exp"], ["probability_double"])]
    else:
        consts = [_const(onnx, "score_min", np.array(param)),
                  _const(onnx, "score_span", np.array(1.0 - param)),
                  _const(onnx, "zero_p", np.array(0.0)), _const(onnx, "one_p", np.array(1.0))]
        nodes += [h.make_node("Sub", ["score_for_link", "score_min"], ["score_above_min"]),
                  h.make_node("Div", ["score_above_min", "score_span"], ["scaled_score"]),
                  h.make_node("Max", ["scaled_score", "zero_p"], ["scaled_at_least_zero"]),  # as np.clip
                  h.make_node("Min", ["scaled_at_least_zero", "one_p"], ["probability_double"])]
    nodes.append(h.make_node("Cast", ["probability_double"], ["probability"], to=onnx.TensorProto.FLOAT))
    return nodes, consts


# -- metadata and the model ----------------------------------------------------------------

def _metadata(model: Any, forest: Forest, classifier: bool) -> dict[str, str]:
    """metadata_props: JSON strings naming the features, the estimator and the classes."""
    meta = {
        "feature_names": json.dumps(feature_names_of(model, forest.n_features)),
        "estimator": json.dumps("BDTClassifier" if classifier else "BDTRegressor"),
        "aggregation": json.dumps(forest.aggregation),
        "n_trees": json.dumps(forest.n_trees),
    }
    definitions = getattr(model, "feature_definitions_", None)
    if definitions:
        meta["feature_definitions"] = json.dumps({str(k): str(v) for k, v in definitions.items()})
    if classifier:
        classes = np.asarray(getattr(model, "classes_", [0, 1])).tolist()
        meta["classes"] = json.dumps(classes)  # [background, signal]
        meta["signal_class"] = json.dumps(classes[1])
        kind, param = forest.probability_link()
        meta["probability"] = json.dumps(  # repr: the constants' every digit
            f"1/(1+exp(-{param!r}*score))" if kind == "sigmoid"
            else f"clip((score - {param!r})/(1 - {param!r}), 0, 1)")
    return meta


def _no_answer_nodes(onnx: Any, nodes: list[Any], outputs: list[str]) -> tuple[list[Any], list[Any]]:
    """Nodes that set ``outputs`` to NaN for an event with a NaN input, the others' values
    renamed ``<output>_walked`` in ``nodes``: a TMVA two-class file's Reader answers -999
    for such an event without walking the trees (the model's decision_function refuses it)."""
    h = onnx.helper
    for node in nodes:
        for names in (node.input, node.output):
            for i, value in enumerate(names):
                if value in outputs:
                    names[i] = f"{value}_walked"
    masked = [
        h.make_node("IsNaN", [INPUT_NAME], ["input_nan"]),
        h.make_node("Cast", ["input_nan"], ["input_nan_float"], to=onnx.TensorProto.FLOAT),
        h.make_node("ReduceMax", ["input_nan_float"], ["event_nan_float"], axes=[1], keepdims=1),
        h.make_node("Cast", ["event_nan_float"], ["event_nan"], to=onnx.TensorProto.BOOL),
    ]
    masked += [h.make_node("Where", ["event_nan", "no_answer", f"{o}_walked"], [o]) for o in outputs]
    no_answer = h.make_tensor("no_answer", onnx.TensorProto.FLOAT, [], [float("nan")])
    return masked, [no_answer]


def _build(onnx: Any, model: Any, forest: Forest, classifier: bool, name: str) -> Any:
    """The ModelProto: input cast to double, the trees, and the outputs."""
    h = onnx.helper
    if forest.aggregation == "weighted_median":
        nodes, consts = _median_nodes(onnx, forest)
    else:
        nodes, consts = _mean_or_sum_nodes(onnx, forest)
    nodes.insert(0, h.make_node("Cast", [INPUT_NAME], ["input_double"], to=onnx.TensorProto.DOUBLE))
    outputs = [h.make_tensor_value_info("score", onnx.TensorProto.FLOAT, ["N", 1])]
    if classifier:
        link_nodes, link_consts = _probability_nodes(onnx, forest)
        nodes += link_nodes
        consts += link_consts
        outputs.append(h.make_tensor_value_info("probability", onnx.TensorProto.FLOAT, ["N", 1]))
    if from_tmva_two_class(forest):
        masked, mask_consts = _no_answer_nodes(onnx, nodes, [o.name for o in outputs])
        nodes += masked
        consts += mask_consts
    inputs = [h.make_tensor_value_info(INPUT_NAME, onnx.TensorProto.FLOAT, ["N", forest.n_features])]
    graph = h.make_graph(nodes, name, inputs, outputs, initializer=consts,
                         doc_string="score: decision_function (classifier) or predict (regressor); "
                                    "probability: P(signal) = predict_proba[:, 1]")
    proto = h.make_model(graph, producer_name="hepbdt", producer_version=__version__,
                         ir_version=ONNX_IR_VERSION,
                         opset_imports=[h.make_opsetid("", ONNX_OPSET),
                                        h.make_opsetid("ai.onnx.ml", ONNX_ML_OPSET)])
    h.set_model_props(proto, _metadata(model, forest, classifier))
    return proto


def to_onnx(model: Any, path: str | os.PathLike, *, name: str | None = None) -> dict[str, Any]:
    """Write ``model`` as an ONNX model file (atomically: temporary name, then rename).

    Parameters
    ----------
    model : fitted BDTClassifier or BDTRegressor (any booster, or a model read from TMVA
        XML or XGBoost JSON).
    path : the ``.onnx`` file to write.
    name : the graph's name; default "hepbdt_classifier" or "hepbdt_regressor".

    Returns
    -------
    dict with ``path``, ``n_trees``, ``n_nodes``, ``n_features``, ``inputs`` and ``outputs``
    (tensor names), ``opset`` (domain -> version; "" is the default domain), ``ir_version``
    and ``n_bytes`` (the file's size).

    The input ``"input"`` is float32 (N, n_features) in the model's feature order; the
    outputs are ``"score"`` (N, 1) and, for classifiers, ``"probability"`` (N, 1), both
    float32 (see the module docstring for their precision).

    Raises
    ------
    TypeError for an object that is not a fitted model; ONNXExportError without the onnx
    package, for a model whose ONNX file would pass protobuf's 2 GiB limit, or whose score
    could pass float32's range (about 3.4e38; the output is float32).
    """
    forest = _check_fitted(model, "the ONNX export")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name={name!r}: the ONNX graph's name must be a string")
    onnx = _import_onnx()
    classifier = is_classifier(model)
    _check_size(forest, forest.aggregation == "weighted_median")
    _check_float32_range(forest)
    _check_sum_rounding(forest)
    proto = _build(onnx, model, forest, classifier,
                   name or ("hepbdt_classifier" if classifier else "hepbdt_regressor"))
    n_bytes = proto.ByteSize()
    if n_bytes > PROTOBUF_LIMIT:
        raise ONNXExportError(f"the ONNX file of this model would have {n_bytes / 2**30:.2f} GiB; "
                              "protobuf (the ONNX file format) is limited to 2 GiB")
    onnx.checker.check_model(proto, full_check=True)
    atomic_write_bytes(path, proto.SerializeToString())
    return {"path": os.fspath(path), "n_trees": forest.n_trees, "n_nodes": forest.n_nodes,
            "n_features": forest.n_features, "inputs": [INPUT_NAME],
            "outputs": [o.name for o in proto.graph.output],
            "opset": {"": ONNX_OPSET, "ai.onnx.ml": ONNX_ML_OPSET},
            "ir_version": ONNX_IR_VERSION, "n_bytes": n_bytes}
