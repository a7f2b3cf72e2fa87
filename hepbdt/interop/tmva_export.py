"""TMVA XML export: hepbdt models as ``MethodBDT`` weight files for ``TMVA::Reader``.

:func:`to_tmva_xml` writes the layout ROOT's TMVA writes (``GeneralInfo``, ``Options``,
``Variables``, ``Classes``, no transformations, ``Weights`` of ``BinaryTree`` nodes), so
that C++ code reads the model through ``TMVA::Reader``. :func:`tmva_response` is what the
Reader returns for that file. Reading TMVA files is :mod:`hepbdt.interop.tmva`. This
module works on any fitted model with a ``forest_`` (it needs no estimator class), so the
estimators' ``save_tmva`` can call it.
How the Reader evaluates (``MethodBDT``; see ``shared/tmva/README.md``): at a node the event
goes to the ``pos="r"`` daughter when ``x >= Cut`` and ``cType=1`` (the test is reversed for
``cType=0``), else to ``pos="l"``, down to the first node with ``nType != 0``. ``Cut``,
``res``, ``purity`` and ``boostWeight`` are read as float32 and summed in double.

- Grad classification: F = sum_t res_t, response 2/(1+exp(-2F)) - 1.
- AdaBoost, Bagging: sum_t a_t v_t / sum_t a_t with v_t the leaf ``nType`` (UseYesNoLeaf)
  or its ``purity``.
- Grad regression: a_0 + sum_t res_t (a_0 is tree 0's ``boostWeight``); AdaBoostR2: the
  mean of the sorted responses around their a_t-weighted median. Regression is float32.
- Multi-class Grad: tree t adds its ``res`` to class t mod K, probabilities
  1 / (1 + sum_{j != i} exp(F_j - F_i)) as float32 (``EvaluateMulticlass``).

What the format cannot say is encoded through the trees. NaN fails every ``x >= Cut``
test, so TMVA sends it with the small values (``EvaluateRegression`` and
``EvaluateMulticlass`` walk the trees with NaN inputs; ``EvaluateMVA`` returns -999 for
them first); a node whose missing values go right is written as two nodes (``x >= Cut``,
then ``x >= -FLT_MAX``, which only NaN and -inf fail) and its right subtree is repeated
under the NaN branch. The initial score goes into tree 0's leaves (Grad classification)
or tree 0's ``boostWeight`` (Grad regression). A newton (logistic) classifier's leaves
are halved, so the Reader's response is 2 sigmoid(F) - 1. Leaf values are float32 in the
file: when their rounding could move the response by more than ``tolerance``, residual
trees of the same structure carry the rest (Grad); where that is impossible the export
refuses.
"""

from __future__ import annotations

import datetime
import math
import numbers
import os
import platform
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._sklearn import fitted_params, with_resolved_growth
from .._util import (
    atomic_write_text,
    check_X,
    differing_texts,
    dumps_strict,
    feature_names_of,
    is_classifier,
)
from .._version import __version__
from ..engine.predict import predict_per_tree, predict_raw
from ..model import (
    DBL_EPSILON,
    NODE_ARRAYS,
    Forest,
    check_written_size,
    float32_thresholds,
    half_tree_weight,
    sequential_sum,
)
from ..tmva_options import TMVA_OPTIONS, TMVAOptionError, check_file_options, tmva_option_values

__all__ = ["to_tmva_xml", "tmva_response", "TMVAExportError"]

FLT_MAX = float(np.finfo(np.float32).max)
PARAMETERS_INFO = "hepbdt parameters"  # GeneralInfo entry: the estimator's parameters and labels
NAN_CUT = -FLT_MAX  # every finite float32 passes x >= -FLT_MAX; only NaN (and -inf) fail it
TMVA_RELEASE = "4.2.1 [262657]"
ROOT_RELEASE = "6.40/00 [403456]"

READER_NAN_SCORE = -999.0  # what TMVA::Reader::EvaluateMVA returns for a NaN input
MAX_EXPANSION = 16  # TMVA nodes written per hepbdt node, at most, over the forest
MAX_TMVA_DEPTH = 200  # nested <Node> elements: ElementTree writes them recursively

CLASSIFICATION_BOOSTS = ("AdaBoost", "RealAdaBoost", "Bagging", "Grad")
REGRESSION_BOOSTS = ("Grad", "AdaBoostR2", "Bagging")

# TMVA's MethodBDT options in the order it writes them, with their default values.
DEFAULT_OPTIONS: list[tuple[str, str]] = [
    ("V", "False"), ("VerbosityLevel", "Default"), ("VarTransform", "None"), ("H", "False"),
    ("CreateMVAPdfs", "False"), ("IgnoreNegWeightsInTraining", "False"), ("NTrees", "800"),
    ("MaxDepth", "3"), ("MinNodeSize", "5%"), ("nCuts", "20"), ("BoostType", "AdaBoost"),
    ("AdaBoostR2Loss", "quadratic"), ("UseBaggedBoost", "False"), ("Shrinkage", "1.000000e+00"),
    ("AdaBoostBeta", "5.000000e-01"), ("UseRandomisedTrees", "False"), ("UseNvars", "2"),
    ("UsePoissonNvars", "True"), ("BaggedSampleFraction", "6.000000e-01"),
    ("UseYesNoLeaf", "True"), ("NegWeightTreatment", "inverseboostnegweights"),
    ("Css", "1.000000e+00"), ("Cts_sb", "1.000000e+00"), ("Ctb_ss", "1.000000e+00"),
    ("Cbb", "1.000000e+00"), ("NodePurityLimit", "5.000000e-01"),
    ("SeparationType", "giniindex"), ("RegressionLossFunctionBDTG", "Huber"),
    ("HuberQuantile", "7.000000e-01"), ("DoBoostMonitor", "False"), ("UseFisherCuts", "False"),
    ("MinLinCorrForFisher", "8.000000e-01"), ("UseExclusiveVars", "False"),
    ("DoPreselection", "False"), ("SigToBkgFraction", "1.000000e+00"),
    ("PruneMethod", "nopruning"), ("PruneStrength", "0.000000e+00"),
    ("PruningValFraction", "5.000000e-01"), ("SkipNormalization", "False"), ("nEventsMin", "0"),
    ("UseBaggedGrad", "False"), ("GradBaggingFraction", "6.000000e-01"),
    ("UseNTrainEvents", "0"), ("NNodesMax", "0"),
]


class TMVAExportError(ValueError):
    """A model that cannot be written as a TMVA file that evaluates as the model does."""


# -- what a model means to TMVA ------------------------------------------------------------

@dataclass
class _Layout:
    """How a model maps onto MethodBDT: analysis, BoostType, leaf kind, score scale."""

    analysis: str  # "Classification" or "Regression"
    boost_type: str  # "Grad", "AdaBoost", "Bagging", "AdaBoostR2"
    yes_no_leaf: bool = False
    scale: float = 1.0  # Grad classification: F_tmva = scale * F (0.5 for logistic)
    extra_tmva: dict[str, Any] = field(default_factory=dict)


def _check_fitted(model: Any, what: str | None = None) -> Forest:
    """The model's forest; with ``what`` (an export of one score) multi-class is refused."""
    forest = getattr(model, "forest_", None)
    if not isinstance(forest, Forest):
        raise TypeError(f"expected a fitted hepbdt BDTClassifier or BDTRegressor, got "
                        f"{type(model).__name__} (call fit, load_model or from_tmva_xml first)")
    refuse_uboost(forest, what or "the TMVA XML export")
    if what is not None:
        check_one_score(forest, what)
    return forest


def refuse_uboost(forest: Forest, what: str) -> None:
    """ValueError for a uBoost forest or a quantile-mapped one (decorrelation_map), whose
    score no export format expresses."""
    if forest.aggregation == "uboost":
        steps = len(forest.extra.get("uboost", {}).get("step_trees", []))
        raise ValueError(f"{what} cannot write a uBoost model (decorrelation='uboost'): its "
                         f"score averages the smoothed cut decisions of {steps} AdaBoost "
                         "ensembles, which TMVA XML, ONNX and C++ headers do not express. Save "
                         "it with save() (hepbdt's JSON model) and apply it with load_model or "
                         "hepbdt apply; to export, train with decorrelation='flatness' "
                         "(boosting='gradient' or 'newton')")
    if "decorrelation_map" in forest.extra:
        raise ValueError(f"{what} cannot write a model with decorrelation_map='ddt': its score "
                         "is the trees' score mapped through a quantile table in bins of the "
                         "decorrelation variable, which the file would leave out (a silently "
                         "different score). Save it with save() (hepbdt's JSON model) and apply "
                         "it with load_model or hepbdt apply; to export, train without "
                         "decorrelation_map (decorrelation='flatness' exports)")


def check_one_score(forest: Forest, what: str) -> None:
    """ValueError for a multi-class, uBoost or mapped forest, which ``what`` cannot write yet."""
    refuse_uboost(forest, what)
    if forest.n_classes > 1:
        raise ValueError(f"{what} writes two-class and regression models; this model has "
                         f"{forest.n_classes} classes (save it with save(), hepbdt's JSON "
                         "model, which keeps every class)")


def _leaf_values(forest: Forest) -> np.ndarray:
    return forest.value[forest.feature < 0]


def _layout(model: Any) -> _Layout:
    forest = _check_fitted(model)
    tm = dict(forest.extra.get("tmva") or {})
    agg = forest.aggregation
    if forest.n_classes > 1:  # softmax logits: TMVA's multi-class Grad sums them as they are
        return _Layout("Multiclass", "Grad", extra_tmva=tm)
    if is_classifier(model):
        if agg == "sum":
            loss = forest.extra.get("loss", "deviance")
            if loss in ("deviance", "exponential"):  # both: P = 1/(1+exp(-2F)), as TMVA's Grad
                return _Layout("Classification", "Grad", scale=1.0, extra_tmva=tm)
            if loss == "logistic":
                return _Layout("Classification", "Grad", scale=0.5, extra_tmva=tm)
            raise TMVAExportError(f"classifier loss {loss!r} has no TMVA equivalent "
                                  "(TMVA's Grad is the binomial deviance; 'logistic' is mapped too)")
        if agg == "weighted_mean":
            yes_no = bool(np.all(np.isin(_leaf_values(forest), (-1.0, 1.0))))
            bagging = tm.get("boost_type", forest.extra.get("boosting")) in ("Bagging", "bagging")
            boost = "Bagging" if bagging else "AdaBoost"
            return _Layout("Classification", boost, yes_no_leaf=yes_no, extra_tmva=tm)
        raise TMVAExportError(f"a classifier with aggregation {agg!r} has no TMVA equivalent")
    if agg == "sum":
        return _Layout("Regression", "Grad", extra_tmva=tm)
    if agg == "weighted_median":
        return _Layout("Regression", "AdaBoostR2", extra_tmva=tm)
    return _Layout("Regression", "Bagging", extra_tmva=tm)


# -- the Reader's response -----------------------------------------------------------------

def _adaboost_r2(per_tree: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """TMVA's AdaBoostR2 rule, with its order of additions (per event, float64)."""
    n_events, n_trees = per_tree.shape
    if n_trees == 0:
        return np.zeros(n_events)
    order = np.argsort(per_tree, axis=1, kind="stable")
    responses = np.take_along_axis(per_tree, order, axis=1)
    cum = np.cumsum(weights[order], axis=1)
    k = np.argmax(cum > half_tree_weight(weights), axis=1) + 1
    half = n_trees // 6
    lo = np.maximum(0, k - half - 1)
    hi = np.minimum(n_trees, k + half)
    rows = np.arange(n_events)
    total = np.zeros(n_events)
    for j in range(2 * half + 1):
        idx = lo + j
        take = idx < hi
        total += np.where(take, responses[rows, np.minimum(idx, n_trees - 1)], 0.0)
    return total / (hi - lo)


def tmva_response(model: Any, X: Any) -> np.ndarray:
    """What ``TMVA::Reader`` returns for the TMVA file of ``model``, float64 (n,).

    For a model read with :func:`from_tmva_xml` this is the Reader's output for that file;
    for a hepbdt model it is the response of the file :func:`to_tmva_xml` writes (to within
    its ``tolerance``):

    - gradient classifiers (deviance): 2/(1+exp(-2F)) - 1 of the raw score F, in (-1, 1);
    - newton classifiers (logistic, P = 1/(1+exp(-F))): 2/(1+exp(-F)) - 1 = 2P - 1;
    - AdaBoost-type classifiers: the boost-weighted mean of the leaf outputs (0 when the
      weights sum to less than double epsilon), in [-1, 1] (+-1 leaves) or [0, 1] (purity);
    - regressors: the regression value rounded to float32, as ``EvaluateRegression``;
    - multi-class classifiers: (n, K) class probabilities as ``EvaluateMulticlass``
      computes them (float32 numbers).

    Two-class classifiers give -999 for an event with a NaN input, as ``EvaluateMVA``
    does (it refuses such events before looking at the trees); ``EvaluateRegression`` and
    ``EvaluateMulticlass`` evaluate them, so regressors and multi-class classifiers follow
    the file's NaN branches, which :func:`to_tmva_xml` writes for them by default
    (``missing="auto"``) to send NaN where the model does.

    X : (n, n_features) array-like, read as float32 like the Reader; NaN allowed, inf not.
        Named columns (a data frame, a dict) are taken by name as the estimators take
        them: put in the model's feature order, a missing name is an error.
    """
    forest = _check_fitted(model)
    layout = _layout(model)
    names = getattr(model, "feature_names_in_", None)
    X, _ = check_X(X, forest.n_features, names=None if names is None else list(names),
                   owner=type(model).__name__,
                   definitions=getattr(model, "feature_definitions_", None),
                   branch_types=getattr(model, "branch_types_", None),
                   rules=getattr(model, "_expression_rules", None))
    if layout.analysis == "Multiclass":
        return _multiclass_response(forest.class_scores(X))
    out = _response(forest, layout, X)
    if layout.analysis == "Classification":
        out[np.isnan(X).any(axis=1)] = READER_NAN_SCORE
    return out


def _multiclass_response(F: np.ndarray) -> np.ndarray:
    """EvaluateMulticlass of (n, K) summed tree outputs: 1 / (1 + sum_{j != i} exp(F_j -
    F_i)) per class, as float32 numbers (the Reader returns a vector of float)."""
    out = np.empty_like(F)
    for i in range(F.shape[1]):
        with np.errstate(over="ignore"):  # exp to inf gives the probability 0, as in C
            others = np.exp(np.delete(F, i, axis=1) - F[:, i:i + 1]).sum(axis=1)
        out[:, i] = 1.0 / (1.0 + others)
    return out.astype(np.float32).astype(np.float64)


def _response(forest: Forest, layout: _Layout, X: np.ndarray) -> np.ndarray:
    """The Reader's response of every event, NaN inputs evaluated through the trees."""
    if layout.boost_type == "Grad":
        F = forest.raw_score(X)
        if layout.analysis == "Regression":
            return F.astype(np.float32).astype(np.float64)
        F = F * layout.scale
        return 2.0 / (1.0 + np.exp(-2.0 * F)) - 1.0
    if layout.boost_type == "AdaBoostR2":
        chunk = max(1, 4_000_000 // max(1, forest.n_trees))  # events x trees held at once
        out = np.concatenate([_adaboost_r2(predict_per_tree(X[i:i + chunk], forest),
                                           forest.tree_weights)
                              for i in range(0, X.shape[0], chunk)] or [np.empty(0)])
        return out.astype(np.float32).astype(np.float64)
    num = predict_raw(X, forest, dense=forest.dense())
    norm = sequential_sum(forest.tree_weights)
    out = num / norm if norm > DBL_EPSILON else np.zeros_like(num)
    if layout.analysis == "Regression":
        out = out.astype(np.float32).astype(np.float64)
    return out


# -- export --------------------------------------------------------------------------------

@dataclass
class _TmvaTree:
    """One TMVA tree in preorder: parent, position, depth, variable, cut, source node."""

    parent: list[int] = field(default_factory=list)
    pos: list[str] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    ivar: list[int] = field(default_factory=list)
    cut: list[float] = field(default_factory=list)
    src: list[int] = field(default_factory=list)

    def emit(self, parent: int, pos: str, depth: int, ivar: int, cut: float, src: int) -> int:
        self.parent.append(parent)
        self.pos.append(pos)
        self.depth.append(depth)
        self.ivar.append(ivar)
        self.cut.append(cut)
        self.src.append(src)
        return len(self.parent) - 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(is_leaf, src, ivar) as arrays."""
        ivar = np.asarray(self.ivar, dtype=np.int64)
        return ivar < 0, np.asarray(self.src, dtype=np.int64), ivar


def _expand_tree(forest: Forest, cuts: np.ndarray, root: int, exact_missing: bool,
                 budget: int) -> _TmvaTree:
    """Rewrite one tree with TMVA's ``x >= Cut`` test, sending NaN where hepbdt does; ``cuts``
    are the thresholds as float32 values (the Reader reads ``Cut`` as a float).

    Along a path the features already known to be NaN (their nodes are resolved) or known
    to be finite (their later nodes need no NaN branch) are tracked. Each missing-goes-right
    node repeats its right subtree under the NaN branch, so a deep tree can grow
    exponentially: past ``budget`` nodes the export is refused.
    """
    feature, threshold = forest.feature, cuts
    left, right, missing_left = forest.left, forest.right, forest.missing_left
    tree = _TmvaTree()
    empty: frozenset[int] = frozenset()
    stack: list[tuple[int, int, str, int, frozenset[int], frozenset[int]]] = [
        (root, -1, "s", 0, empty, empty)]
    while stack:
        if len(tree.parent) > budget:
            raise TMVAExportError(
                f"writing the missing-value branches of tree starting at node {root} would need "
                f"more than {budget:,} TMVA nodes (the NaN branch repeats a subtree at each "
                "node whose missing values go right); export with missing='none' if the "
                "features have no NaN, or train shallower trees")
        node, parent, pos, depth, nan_f, finite_f = stack.pop()
        while feature[node] >= 0 and int(feature[node]) in nan_f:
            node = int(left[node] if missing_left[node] else right[node])
        f = int(feature[node])
        if f < 0:
            tree.emit(parent, pos, depth, -1, 0.0, node)
            continue
        thr = float(threshold[node])
        lo, hi = int(left[node]), int(right[node])
        ml = bool(missing_left[node])
        nan_possible = exact_missing and f not in finite_f
        fin = finite_f | {f}
        if np.isinf(thr):
            finite_child = lo if thr > 0 else hi
            nan_child = lo if ml else hi
            if not nan_possible or finite_child == nan_child:
                stack.append((finite_child, parent, pos, depth, nan_f, finite_f))
                continue
            k = tree.emit(parent, pos, depth, f, NAN_CUT, node)
            stack.append((finite_child, k, "r", depth + 1, nan_f, fin))
            stack.append((nan_child, k, "l", depth + 1, nan_f | {f}, finite_f))
            continue
        if ml or not nan_possible:
            k = tree.emit(parent, pos, depth, f, thr, node)
            stack.append((hi, k, "r", depth + 1, nan_f, fin))
            stack.append((lo, k, "l", depth + 1, nan_f, finite_f if nan_possible else fin))
            continue
        # Missing goes right: x >= thr -> right; else x >= -FLT_MAX -> left; else (NaN) right.
        a = tree.emit(parent, pos, depth, f, thr, node)
        b = tree.emit(a, "l", depth + 1, f, NAN_CUT, node)
        stack.append((hi, a, "r", depth + 1, nan_f, fin))
        stack.append((lo, b, "r", depth + 2, nan_f, fin))
        stack.append((hi, b, "l", depth + 2, nan_f | {f}, finite_f))
    return tree


def _node_purity(forest: Forest) -> np.ndarray | None:
    """Per-node signal purity when the model stores it (forest.extra), else None."""
    tm = forest.extra.get("tmva") or {}
    for src in (tm.get("node_purity"), forest.extra.get("node_purity"), forest.extra.get("purity")):
        if isinstance(src, (list, np.ndarray)) and len(src) >= forest.n_nodes:
            p = np.asarray(src[: forest.n_nodes], dtype=np.float64)
            if np.all(np.isfinite(p)):
                return p
    return None


def _f32(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)


@dataclass
class _TreeOut:
    """A tree to write: structure, per-node res/purity/nType, and its boost weight."""

    tree: _TmvaTree
    res: np.ndarray
    purity: np.ndarray
    ntype: np.ndarray
    boost_weight: float


def _sum_rounding(n_terms: int, magnitude: float) -> float:
    """The rounding of double sums of ``n_terms`` terms whose absolute values add up to at
    most ``magnitude``, taken twice (the Reader adds the file's terms in file order,
    ``tmva_response`` the model's in its own): each addition rounds by up to 2^-53 of the
    running sum, up or down, so the sum's error grows as sqrt(n) (n only if every rounding
    went one way). Where leaves cancel far above the score (+-1e16 leaves of an XGBoost
    import) it is the whole error; for trained models about 1e-14. The worst case, n in
    place of sqrt(n), refused ordinary regressions of a centred target of order 1e5 over
    2,000 trees (audit FE), whose files the Reader scores within 1e-9."""
    return 2.0 * math.sqrt(max(n_terms, 1)) * 2.0**-53 * magnitude


def _fmt(x: float) -> str:
    return f"{float(x):.16e}"


def _grad_trees(forest: Forest, layout: _Layout, trees: list[_TmvaTree], purity: np.ndarray | None,
                tolerance: float) -> tuple[list[_TreeOut], float]:
    """Grad layout: res = scale * w_t * v (+ offset in tree 0), float32 with residual trees."""
    regression = layout.analysis == "Regression"
    base = float(forest.base_score)
    a0 = float(np.float32(base)) if regression else 1.0
    offset = (base - a0) if regression else layout.scale * base
    leaf64, leaf32, err, err2, out = [], [], [], [], []
    for t, tree in enumerate(trees):
        is_leaf, src, _ = tree.arrays()
        v = layout.scale * forest.tree_weights[t] * forest.value[src]
        if t == 0:
            v = v + offset
        v = np.where(is_leaf, v, 0.0)
        r32 = _f32(v)
        resid = v - r32
        leaf64.append(v)
        leaf32.append(r32)
        err.append(float(np.max(np.abs(resid))))
        err2.append(float(np.max(np.abs(resid - _f32(resid)))))
    err_a, err2_a = np.asarray(err), np.asarray(err2)
    limit = tolerance * (max(1.0, abs(base)) if regression else 1.0)
    order = np.argsort(-err_a, kind="stable")
    suffix = np.concatenate([np.cumsum(err_a[order][::-1])[::-1], [0.0]])
    fixed = np.concatenate([[0.0], np.cumsum(err2_a[order])])
    magnitude = abs(a0 if regression else 0.0) + abs(offset) + sum(
        float(np.max(np.abs(v), initial=0.0)) for v in leaf64)
    bounds = suffix + fixed + _sum_rounding(2 * len(trees) + 2, 2.0 * magnitude)
    ok = np.flatnonzero(bounds <= limit)
    if ok.size == 0:
        shown = differing_texts(bounds[-1], limit, 3)
        raise TMVAExportError(f"the float32 leaf values of the TMVA file and the rounding of "
                              f"the Reader's double sums of them (leaves up to {magnitude:.3g} in "
                              f"size) would move the response by up to {shown[0]}, more than the "
                              f"tolerance {shown[1]}")
    n_resid = int(ok[0])
    with_residual = set(order[:n_resid].tolist())
    residual_trees = []
    for t, tree in enumerate(trees):
        is_leaf, src, _ = tree.arrays()
        internal_res = _f32(layout.scale * forest.tree_weights[t] * forest.value[src])
        res = np.where(is_leaf, leaf32[t], internal_res)
        pur = _default_purity(layout, is_leaf, src, purity)
        ntype = np.where(is_leaf, -99, 0)
        out.append(_TreeOut(tree, res, pur, ntype, a0 if (regression and t == 0) else 1.0))
        if t in with_residual:
            rres = np.where(is_leaf, _f32(leaf64[t] - leaf32[t]), 0.0)
            residual_trees.append(_TreeOut(tree, rres, pur, ntype, 1.0))
    return out + residual_trees, float(bounds[n_resid])


def _multiclass_trees(forest: Forest, trees: list[_TmvaTree],
                      tolerance: float) -> tuple[list[_TreeOut], float]:
    """TMVA's multi-class layout: round by round, one tree a class (the Reader adds tree t to
    class t mod K); each class's initial score in its first tree's leaves. When the float32
    leaves could move a probability by more than ``tolerance`` (|dp| <= max |dF| / 2),
    a second pass of residual rounds, in the same order, carries the rest."""
    k_classes, rounds = forest.n_classes, forest.n_rounds
    if rounds == 0:
        raise TMVAExportError("the model has no trees")
    base = forest.extra["base_scores"]
    plain, residual = [], []
    err = np.zeros(k_classes)
    err2 = np.zeros(k_classes)
    for r in range(rounds):
        for k in range(k_classes):
            t = k * rounds + r
            is_leaf, src, _ = trees[t].arrays()
            v = forest.tree_weights[t] * forest.value[src] + (base[k] if r == 0 else 0.0)
            v32 = _f32(np.where(is_leaf, v, 0.0))
            rest = np.where(is_leaf, v - v32, 0.0)
            err[k] += float(np.max(np.abs(rest)))
            err2[k] += float(np.max(np.abs(rest - _f32(rest))))
            pur = np.full(src.size, 0.5)
            ntype = np.where(is_leaf, -99, 0)
            plain.append(_TreeOut(trees[t], v32, pur, ntype, 1.0))
            residual.append(_TreeOut(trees[t], _f32(rest), pur, ntype, 1.0))
    rounding = np.array([_sum_rounding(2 * rounds + 2, 2.0 * float(sum(
        np.max(np.abs(o.res), initial=0.0) for o in plain[k::k_classes]))) for k in range(k_classes)])
    bound = float(np.max(err + rounding)) / 2.0
    if bound <= tolerance:
        return plain, bound
    bound = float(np.max(err2 + rounding)) / 2.0
    if bound > tolerance:
        shown = differing_texts(bound, tolerance, 3)
        raise TMVAExportError(f"the float32 leaf values of the TMVA file would move a class "
                              f"probability by up to {shown[0]}, more than the tolerance "
                              f"{shown[1]}")
    return plain + residual, bound


def _default_purity(layout: _Layout, is_leaf: np.ndarray, src: np.ndarray,
                    purity: np.ndarray | None) -> np.ndarray:
    if layout.analysis == "Regression":
        return np.ones(src.size)
    if purity is not None:
        return _f32(purity[src])
    return np.full(src.size, 0.5)


def _mean_trees(forest: Forest, layout: _Layout, trees: list[_TmvaTree], purity: np.ndarray | None,
                tolerance: float) -> tuple[list[_TreeOut], float]:
    """AdaBoost/Bagging/AdaBoostR2 layouts: float32 boost weights and leaf outputs."""
    w = forest.tree_weights
    a32 = _f32(w)
    regression = layout.analysis == "Regression"
    leaves = _leaf_values(forest)
    vmax = float(np.max(np.abs(leaves))) if leaves.size else 0.0
    dv = np.zeros(len(trees))
    out = []
    for t, tree in enumerate(trees):
        is_leaf, src, _ = tree.arrays()
        v = forest.value[src]
        v32 = _f32(v)
        dv[t] = float(np.max(np.abs(np.where(is_leaf, v - v32, 0.0))))
        if regression:
            res = v32
            pur = np.ones(src.size)
            ntype = np.where(is_leaf, 1, 0)
        elif layout.yes_no_leaf:
            res = np.full(src.size, -99.0)
            pur = _f32(purity[src]) if purity is not None else np.where(is_leaf, (v + 1.0) / 2.0, 0.5)
            ntype = np.where(is_leaf, np.where(v > 0, 1, -1), 0)
        else:
            res = np.full(src.size, -99.0)
            pur = np.where(is_leaf, v32, _f32(purity[src]) if purity is not None else 0.5)
            ntype = np.where(is_leaf, np.where(v32 > 0.5, 1, -1), 0)
        out.append(_TreeOut(tree, res, pur, ntype, float(a32[t])))
    if layout.boost_type == "AdaBoostR2":
        _check_median_weights(w, a32)
        bound = float(np.max(dv)) if dv.size else 0.0
    else:
        norm = sequential_sum(a32)  # the Reader's test is signed: a negative total scores 0
        if norm <= DBL_EPSILON:
            if np.any(w != 0.0):  # the model divides by any non-zero total; the Reader scores 0
                raise TMVAExportError(
                    f"the tree weights add up to {sequential_sum(a32)!r} as written (float32), "
                    f"at most DBL_EPSILON ({DBL_EPSILON:.3g}), where TMVA::Reader scores every "
                    "event 0; the model's scores are not that (AdaBoost's beta scales the "
                    "tree weights: train with a larger beta, e.g. 0.5, TMVA's default)")
            bound = 0.0
        else:
            bound = float((np.sum(np.abs(a32) * dv) + 2.0 * vmax * np.sum(np.abs(a32 - w))
                           + _sum_rounding(len(trees) + 1, 2.0 * vmax * float(np.sum(np.abs(a32)))))
                          / norm)
    limit = tolerance * (max(1.0, vmax) if regression else 1.0)
    if bound > limit:
        shown = differing_texts(bound, limit, 3)
        raise TMVAExportError(f"float32 boost weights and leaf values in the TMVA file would move "
                              f"the response by up to {shown[0]}, more than the tolerance {shown[1]}")
    return out, bound


def _check_median_weights(weights: np.ndarray, weights32: np.ndarray) -> None:
    """TMVAExportError for AdaBoostR2 tree weights the file cannot hold: the Reader picks
    the median by comparing sums of the float32 weights with half their total, and a
    rounding, however small, can flip a near tie and give another tree's value (equal
    weights too: ten of 0.1 are past half at the fifth in double, at the sixth as float32)."""
    if np.array_equal(weights, weights32):
        return
    t = int(np.flatnonzero(weights != weights32)[0])
    raise TMVAExportError(
        f"tree {t}'s weight {float(weights[t])!r} is not a float32 value: the TMVA file holds "
        f"{float(weights32[t])!r}, and TMVA::Reader's AdaBoostR2 median, which compares sums of "
        "the written weights with half their total, could pick another tree's value than the "
        "model for some events (round the tree weights to float32 before exporting)")


def _variables_range(forest: Forest, model: Any, tm: dict[str, Any]) -> list[tuple[float, float]]:
    """Each variable's (Min, Max): a TMVA file's own, else the span of the model's cuts and
    bin edges, not the training range TMVA writes (a model does not keep it; README)."""
    stored = tm.get("variables")
    if isinstance(stored, list) and len(stored) == forest.n_features:
        return [(float(v.get("min", 0.0)), float(v.get("max", 0.0))) for v in stored]
    edges = getattr(model, "bin_edges_", None)
    out = []
    for f in range(forest.n_features):
        cuts = forest.threshold[(forest.feature == f) & np.isfinite(forest.threshold)]
        if edges is not None and f < len(edges) and len(edges[f]):
            cuts = np.concatenate([cuts, np.asarray(edges[f], dtype=np.float64)])
        out.append((float(cuts.min()), float(cuts.max())) if cuts.size else (0.0, 0.0))
    return out


def _options(layout: _Layout, forest: Forest, model: Any, max_depth: int) -> list[tuple[str, bool, str]]:
    """The ``Options`` block: (name, modified, value) in TMVA's order. An imported model's own
    options; otherwise the options that describe the trained model (``to_tmva``'s mapping,
    modified="Yes") and TMVA's defaults for the rest, written as TMVA writes them.
    ``max_depth``, the depth of the nodes written, is not the model's: NaN routing adds levels."""
    stored = layout.extra_tmva.get("options")
    if isinstance(stored, list) and stored:
        opts = [(str(n), bool(m), str(v)) for n, m, v in stored]
        try:
            check_file_options([(n, v) for n, _, v in opts])
        except TMVAOptionError as exc:
            raise TMVAExportError(f"the model's recorded TMVA options: {exc}") from None
        # what the trees are, under every spelling TMVA matches (names in any case)
        set_ = {"boosttype": layout.boost_type}
        if layout.analysis == "Classification" and layout.boost_type != "Grad":
            set_["useyesnoleaf"] = str(layout.yes_no_leaf)
        return [(n, m or set_.get(n.lower(), v) != v, set_.get(n.lower(), v))
                for n, m, v in opts]
    regression = layout.analysis == "Regression"
    values = _default_option_values(regression, forest.n_features)
    trained = tmva_option_values(_trained_params(layout, forest, model),
                                 "regressor" if regression else "classifier")
    trained = {name: _option_text(name, value) for name, value in trained.items()}
    trained["BoostType"] = layout.boost_type
    if layout.analysis == "Classification" and layout.boost_type != "Grad":
        trained["UseYesNoLeaf"] = str(layout.yes_no_leaf)  # what the leaves hold decides
    if layout.boost_type == "Bagging":
        values["UseBaggedBoost"] = "True"  # ProcessOptions: Bagging sets fBaggedBoost
    if layout.boost_type == "Grad":  # what ROOT 6.40 writes for Grad at the default
        values["NegWeightTreatment"] = "ignorenegweightsintraining"
    values.update(trained)
    # One variable under two names: TMVA writes it under both (the old one not modified).
    values["GradBaggingFraction"] = values["BaggedSampleFraction"]
    return [(n, n in trained, values[n]) for n, _ in DEFAULT_OPTIONS]


def _trained_params(layout: _Layout, forest: Forest, model: Any) -> dict[str, Any]:
    """The model's estimator parameters as ``to_tmva`` reads them: "auto" tree counts and node
    sizes as the fit resolved them, the boosting as the file's BoostType."""
    params = with_resolved_growth(fitted_params(model), is_classifier(model))
    if params.get("n_trees", "auto") == "auto":
        params["n_trees"] = forest.n_rounds
    if params.get("min_node_size") == "auto":
        params["min_node_size"] = getattr(model, "min_node_size_", None)
    # The trees' own depth where the parameter is smaller (a forest built around other
    # parameters) or None (leaf-wise without a limit); not the depth of the NaN-routing nodes.
    params["max_depth"] = max(params["max_depth"] or 1, forest.max_depth)
    boosting = {"Grad": "gradient", "AdaBoost": "adaboost", "Bagging": "bagging"}
    params["boosting"] = boosting.get(layout.boost_type, layout.boost_type)
    params.pop("max_leaves", None)  # leaf-wise trees are written as they are, with their MaxDepth
    return params


# Written lower-case: ProcessOptions calls ToLower() on them before TMVA writes the file.
_LOWER_CASE_OPTIONS = ("SeparationType", "NegWeightTreatment", "PruneMethod", "AdaBoostR2Loss")


def _option_text(name: str, text: str) -> str:
    """An option-string value as TMVA writes it in the file (floats as %e, booleans True or
    False, some words lower-case)."""
    kind = TMVA_OPTIONS.get(name, ("str",))[0]
    if kind == "float":
        value = float(text)
        for digits in range(6, 18):  # TMVA's %e where it holds the number, more digits otherwise
            out = f"{value:.{digits}e}"
            if float(out) == value:
                return out
        return repr(value)
    if kind == "bool":
        return str(text.strip().lower() in ("true", "1"))
    return text.lower() if name in _LOWER_CASE_OPTIONS else text


def _default_option_values(regression: bool, n_features: int) -> dict[str, str]:
    """TMVA's defaults as it writes them: classification's, or regression's where they differ,
    and UseNvars as int(sqrt(n_vars) + 0.6) (MethodBDT::Init)."""
    values = dict(DEFAULT_OPTIONS)
    if regression:
        for name in values:
            kind, classification, regression_default = TMVA_OPTIONS.get(name, (None, None, None))
            if classification != regression_default:
                text = f"{regression_default:g}%" if kind == "size" else str(regression_default)
                values[name] = _option_text(name, text)
    values["UseNvars"] = str(int(math.sqrt(n_features) + 0.6))
    return values


def _internal_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _variable_attrs(index_name: str, index: int, name: str, vmin: float, vmax: float,
                    title: str | None = None) -> dict[str, str]:
    """A Variable (or Target) element's attributes; the title may say how an alias is computed."""
    # The Reader strips the blanks from the names AddVariable is given and compares them
    # with Expression: written with its blanks (Jet_pt[:, 0]) a name never matched, and
    # BookMVA stopped the program. The Label keeps the name as the model has it.
    return {index_name: str(index), "Expression": reader_name(name), "Label": name,
            "Title": title or name, "Unit": "", "Internal": _internal_name(name), "Type": "F",
            "Min": f"{vmin:.8e}", "Max": f"{vmax:.8e}"}


def _warn_about_nan(layout: _Layout, forest: Forest, missing: str) -> None:
    """The warnings of a file whose Reader scores NaN inputs otherwise than the model."""
    if layout.analysis == "Classification" and forest.extra.get("nan_in_training"):
        warnings.warn("this classifier was trained on events with NaN inputs; TMVA::Reader's "
                      f"EvaluateMVA returns {READER_NAN_SCORE:g} for any event with a NaN input, "
                      "so replace missing values before calling the Reader (or keep hepbdt's "
                      "own scores for such events)", stacklevel=3)
    if layout.analysis in ("Multiclass", "Regression") and missing == "none":
        # whether or not the model saw NaN in training, it routes NaN its own way
        call = "EvaluateMulticlass" if layout.analysis == "Multiclass" else "EvaluateRegression"
        warnings.warn(f"this model is written with missing='none'; TMVA::Reader's {call} walks "
                      "the trees with a NaN input, which fails every x >= Cut and goes left at "
                      "every node, so events with a NaN input get other outputs than hepbdt's "
                      "(write with missing='exact', the default, to route NaN as the model does)",
                      stacklevel=3)


def _check_reader_names(names: list[str]) -> None:
    """TMVAExportError for names the Reader cannot tell apart (they differ in blanks only)."""
    stripped = [reader_name(n) for n in names]
    if len(set(stripped)) != len(stripped):
        twins = sorted({n for n, s in zip(names, stripped, strict=True) if stripped.count(s) > 1})
        raise TMVAExportError(f"feature names {twins} differ only in blanks, which TMVA::Reader "
                              "drops from the names it is given: it could not tell them apart; "
                              "rename one")


def reader_name(name: str) -> str:
    """A variable's name as TMVA::Reader compares it: without ' ' (its ``ReplaceAll(" ",
    "")``, which keeps U+00A0 and the other Unicode spaces) and without tab and line breaks
    (written as character references, which TMVA's XML reader keeps as the text '&#9;': no
    name given to the Reader could match them)."""
    return re.sub("[ \t\n\r]", "", name)


def _check_exportable(forest: Forest, layout: _Layout) -> None:
    """Refuse a forest that has a NaN threshold, or a Grad classifier without trees."""
    bad = (forest.feature >= 0) & np.isnan(forest.threshold)
    if bad.any():
        raise TMVAExportError(f"node {int(np.flatnonzero(bad)[0])} has a NaN threshold")
    if layout.analysis == "Classification" and layout.boost_type == "Grad" and forest.n_trees == 0:
        raise TMVAExportError("the model has no trees")


def _initial_score_only(forest: Forest) -> tuple[Forest, list[_TmvaTree]]:
    """A one-leaf tree carrying nothing, and its forest, for a Grad regressor without trees."""
    stub = _TmvaTree()
    stub.emit(-1, "s", 0, -1, 0.0, 0)
    one_leaf = Forest(**{k: np.zeros(1, dt) for k, dt in NODE_ARRAYS.items()},
                      tree_offsets=np.array([0, 1]), tree_weights=np.zeros(1),
                      n_features=forest.n_features, base_score=forest.base_score)
    one_leaf.feature[:] = -1
    one_leaf.left[:] = -1
    one_leaf.right[:] = -1
    return one_leaf, [stub]


def _trees_to_write(forest: Forest, layout: _Layout, exact_missing: bool,
                    tolerance: float) -> tuple[Forest, list[_TreeOut], int, float]:
    """(forest written, its trees then residual trees, number of trees before residuals, bound)."""
    budget = max(MAX_EXPANSION * forest.n_nodes, 100_000)  # nodes over all trees
    # a float64 forest's threshold as the float32 Cut that decides every float32 x alike
    cuts = float32_thresholds(forest.threshold)
    trees = []
    for t in range(forest.n_trees):
        trees.append(_expand_tree(forest, cuts, int(forest.tree_offsets[t]), exact_missing, budget))
        budget -= len(trees[-1].parent)
    purity = _node_purity(forest)
    if layout.analysis == "Multiclass":
        outs, bound = _multiclass_trees(forest, trees, tolerance)
        return forest, outs, len(trees), bound
    if layout.boost_type != "Grad":
        outs, bound = _mean_trees(forest, layout, trees, purity, tolerance)
        return forest, outs, len(trees), bound
    if not trees:
        forest, trees = _initial_score_only(forest)
    outs, bound = _grad_trees(forest, layout, trees, purity, tolerance)
    return forest, outs, len(trees), bound


def _add_header(root: ET.Element, layout: _Layout, forest: Forest, model: Any, max_depth: int) -> None:
    """Append the ``GeneralInfo`` and ``Options`` elements."""
    info = ET.SubElement(root, "GeneralInfo")
    for key, value in [
        ("TMVA Release", TMVA_RELEASE), ("ROOT Release", ROOT_RELEASE),
        ("Creator", f"hepbdt {__version__}"),
        ("Date", datetime.datetime.now().strftime("%a %b %d %H:%M:%S %Y")),
        ("Host", platform.platform()), ("Dir", "."),
        ("Training events", str(int(layout.extra_tmva.get("training_events", 0)))),
        ("TrainingTime", f"{0.0:.8e}"), ("AnalysisType", layout.analysis),
        *_parameters_record(model),
    ]:
        ET.SubElement(info, "Info", {"name": key, "value": value})
    opts = ET.SubElement(root, "Options")
    for opt_name, modified, value in _options(layout, forest, model, max_depth):
        attrs = {"name": opt_name, "modified": "Yes" if modified else "No"}
        ET.SubElement(opts, "Option", attrs).text = value


def _parameters_record(model: Any) -> list[tuple[str, str]]:
    """GeneralInfo's PARAMETERS_INFO entry: the estimator's own parameters and a classifier's
    labels (``classes_``) as JSON (the Reader reads Info entries by name and skips the
    others). ``Options`` holds TMVA's default for a parameter TMVA cannot express (hepbdt's
    quantile bins, min_node_size 0, negative_weights="regress"), which read back would be
    another model's parameter; TMVA's two classes are Signal and Background, not labels."""
    if not hasattr(model, "get_params"):
        return []
    params = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in fitted_params(model).items()}
    classes = getattr(model, "classes_", None)  # the labels, which TMVA's class names are not
    record = {"params": params, "classes": None if classes is None else classes.tolist()}
    return [(PARAMETERS_INFO, dumps_strict(record, sort_keys=True))]


def _add_variables(root: ET.Element, layout: _Layout, forest: Forest, model: Any, names: list[str],
                   target_name: str | None) -> None:
    """Append the ``Variables``, ``Spectators``, ``Classes`` and (regression) ``Targets`` elements."""
    tm = layout.extra_tmva
    variables = ET.SubElement(root, "Variables", {"NVar": str(forest.n_features)})
    definitions = getattr(model, "feature_definitions_", None) or {}
    for i, ((vmin, vmax), vname) in enumerate(zip(_variables_range(forest, model, tm), names, strict=True)):
        ET.SubElement(variables, "Variable", _variable_attrs("VarIndex", i, vname, vmin, vmax,
                                                             definitions.get(vname)))
    ET.SubElement(root, "Spectators", {"NSpec": "0"})
    if layout.analysis == "Multiclass":
        labels = [str(c) for c in getattr(model, "classes_", range(forest.n_classes))]
        classes = ET.SubElement(root, "Classes", {"NClass": str(len(labels))})
        for i, label in enumerate(labels):
            ET.SubElement(classes, "Class", {"Name": label, "Index": str(i)})
        return
    if layout.analysis == "Classification":
        classes = ET.SubElement(root, "Classes", {"NClass": "2"})
        ET.SubElement(classes, "Class", {"Name": "Signal", "Index": "0"})
        ET.SubElement(classes, "Class", {"Name": "Background", "Index": "1"})
        return
    classes = ET.SubElement(root, "Classes", {"NClass": "1"})
    ET.SubElement(classes, "Class", {"Name": "Regression", "Index": "0"})
    target = tm.get("target") or {}
    targets = ET.SubElement(root, "Targets", {"NTrgt": "1"})
    ET.SubElement(targets, "Target", _variable_attrs(
        "TargetIndex", 0, target_name or target.get("name") or "target",
        float(target.get("min", 0.0)), float(target.get("max", 0.0))))


def _add_weights(root: ET.Element, layout: _Layout, outs: list[_TreeOut]) -> int:
    """Append the ``Weights`` element with one ``BinaryTree`` per tree; the number of nodes written."""
    # AnalysisType 1: regression trees (their leaves' res is the output), as TMVA's Grad.
    classification_trees = layout.analysis == "Classification" and layout.boost_type != "Grad"
    weights = ET.SubElement(root, "Weights", {"NTrees": str(len(outs)),
                                              "AnalysisType": "0" if classification_trees else "1"})
    n_nodes = 0
    for t, o in enumerate(outs):
        bt = ET.SubElement(weights, "BinaryTree", {"type": "DecisionTree",
                                                   "boostWeight": _fmt(o.boost_weight), "itree": str(t)})
        elems: list[ET.Element] = []
        tr = o.tree
        for k in range(len(tr.parent)):
            leaf = tr.ivar[k] < 0
            attrs = {"pos": tr.pos[k], "depth": str(tr.depth[k]), "NCoef": "0", "IVar": str(tr.ivar[k]),
                     "Cut": _fmt(tr.cut[k]), "cType": "1", "res": _fmt(o.res[k]), "rms": _fmt(0.0),
                     "purity": _fmt(o.purity[k]), "nType": str(int(o.ntype[k]) if leaf else 0)}
            parent = bt if tr.parent[k] < 0 else elems[tr.parent[k]]
            elems.append(ET.SubElement(parent, "Node", attrs))
        n_nodes += len(elems)
    return n_nodes


def to_tmva_xml(model: Any, path: str | os.PathLike, *, tolerance: float = 1e-6,
                missing: str = "auto", method_name: str | None = None,
                target_name: str | None = None) -> dict[str, Any]:
    """Write ``model`` as a TMVA ``MethodBDT`` XML weight file for ``TMVA::Reader``.

    Parameters
    ----------
    model : fitted BDTClassifier or BDTRegressor (any booster, or a model read from TMVA
        or XGBoost files).
    path : the ``.weights.xml`` file to write (atomically: temporary name, then rename).
    tolerance : the largest change of the Reader's response (absolute for classifiers,
        relative to max(1, |initial score|) or max(1, max |leaf|) for regressors) that the
        float32 numbers of the file may cause, as a worst-case bound. Grad models get
        residual trees until the bound holds; others are refused when it does not. For
        regressors it bounds the regression sum; ``EvaluateRegression`` then rounds that
        to float32, which can add one float32 step (6e-8 of the value) on either side.
    missing : "exact" writes extra nodes so that NaN inputs go where the model sends them
        (TMVA sends NaN with the values below the cut); "none" writes the plain trees.
        "auto" (default): "exact" for regressors and multi-class classifiers, whose Reader
        evaluates NaN inputs through the trees (``EvaluateRegression``,
        ``EvaluateMulticlass``), and "none" for two-class classifiers, whose Reader returns
        -999 for any event with a NaN input before looking at the trees (the extra nodes
        would make the file 2.5-5.6x bigger for nothing). A two-class classifier trained
        on NaN inputs is exported with a warning saying so, and so is any multi-class
        classifier or regressor written with "none" (its Reader walks NaN left at every
        node, where the model routes it its own way).
    method_name : the method's title (``BDT::<name>``); default "BDT" or the imported one.
    target_name : regression target name; default "target" or the imported one.

    Returns
    -------
    dict with ``n_trees`` (trees written, residual trees included), ``n_residual_trees``,
    ``n_nodes`` and ``max_response_error`` (the bound that the file satisfies, before a
    regressor's float32 rounding).

    Raises
    ------
    TMVAExportError when the model cannot be written exactly enough (see ``tolerance``),
    or has an aggregation/loss with no TMVA equivalent.
    """
    forest = _check_fitted(model)
    if missing not in ("auto", "exact", "none"):
        raise ValueError(f"missing={missing!r} is not valid; expected 'auto', 'exact' or 'none'")
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not tolerance >= 0:
        raise ValueError(f"tolerance={tolerance!r} must be a number >= 0")
    layout = _layout(model)
    if missing == "auto":
        # EvaluateRegression and EvaluateMulticlass walk the trees with NaN inputs.
        missing = "none" if layout.analysis == "Classification" else "exact"
    _warn_about_nan(layout, forest, missing)
    _check_exportable(forest, layout)
    names = feature_names_of(model, forest.n_features)
    _check_reader_names(names)
    forest, outs, n_plain, bound = _trees_to_write(forest, layout, missing == "exact", tolerance)
    name = method_name or layout.extra_tmva.get("method_name") or "BDT"
    max_depth = max((max(o.tree.depth) for o in outs), default=1)
    if max_depth > MAX_TMVA_DEPTH:
        raise TMVAExportError(f"a tree of depth {max_depth} is deeper than the {MAX_TMVA_DEPTH} "
                              "levels of nested nodes hepbdt writes as TMVA XML")

    root = ET.Element("MethodSetup", {"Method": f"BDT::{name}"})
    _add_header(root, layout, forest, model, max_depth)
    _add_variables(root, layout, forest, model, names, target_name)
    ET.SubElement(root, "Transformations", {"NTransformations": "0"})
    ET.SubElement(root, "MVAPdfs")
    n_nodes = _add_weights(root, layout, outs)
    ET.indent(root, space="  ")
    # ElementTree escapes '>' in attribute values, so ' />' only closes empty elements.
    text = ET.tostring(root, encoding="unicode").replace(" />", "/>")
    check_written_size(f"the TMVA weight file {os.fspath(path)!r}", text)
    atomic_write_text(path, '<?xml version="1.0"?>\n' + text + "\n")
    return {"n_trees": len(outs), "n_residual_trees": len(outs) - n_plain,
            "n_nodes": n_nodes, "max_response_error": bound}
