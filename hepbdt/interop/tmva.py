"""TMVA XML: write hepbdt models as ``MethodBDT`` weight files, read TMVA BDT weight files.

:func:`to_tmva_xml` writes the layout ROOT's TMVA writes (``GeneralInfo``, ``Options``,
``Variables``, ``Classes``, no transformations, ``Weights`` of ``BinaryTree`` nodes), so
that C++ code reads the model through ``TMVA::Reader``. :func:`tmva_response` is what the
Reader returns for that file. :func:`from_tmva_xml` reads TMVA's BDT weight files (AdaBoost,
RealAdaBoost, Bagging and Grad classification; Grad, AdaBoostR2 and Bagging regression)
into a fitted hepbdt estimator. Files are parsed with ``xml.etree`` as data, never executed.

How the Reader evaluates (``MethodBDT``; see ``shared/tmva/README.md``): at a node the event
goes to the ``pos="r"`` daughter when ``x >= Cut`` and ``cType=1`` (the test is reversed for
``cType=0``), else to ``pos="l"``, down to the first node with ``nType != 0``. ``Cut``,
``res``, ``purity`` and ``boostWeight`` are read as float32 and summed in double.

- Grad classification: F = sum_t res_t, response 2/(1+exp(-2F)) - 1.
- AdaBoost, Bagging: sum_t a_t v_t / sum_t a_t with v_t the leaf ``nType`` (UseYesNoLeaf)
  or its ``purity``.
- Grad regression: a_0 + sum_t res_t (a_0 is tree 0's ``boostWeight``); AdaBoostR2: the
  mean of the sorted responses around their a_t-weighted median. Regression is float32.

What the format cannot say is encoded through the trees. NaN fails every ``x >= Cut``
test, so TMVA sends it with the small values; a node whose missing values go right is
written as two nodes (``x >= Cut``, then ``x >= -FLT_MAX``, which only NaN and -inf fail)
and its right subtree is repeated under the NaN branch. The initial score goes into tree
0's leaves (Grad classification) or tree 0's ``boostWeight`` (Grad regression). A newton
(logistic) classifier's leaves are halved, so the Reader's response is 2 sigmoid(F) - 1.
Leaf values are float32 in the file: when their rounding could move the response by
more than ``tolerance``, residual trees of the same structure carry the rest (Grad);
where that is impossible the export refuses.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import NODE_ARRAYS, Forest, ForestBuilder, ModelFormatError, atomic_write_text

__all__ = ["to_tmva_xml", "from_tmva_xml", "tmva_response", "TMVAFormatError", "TMVAExportError"]

FLT_MAX = float(np.finfo(np.float32).max)
NAN_CUT = -FLT_MAX  # every finite float32 passes x >= -FLT_MAX; only NaN (and -inf) fail it
DBL_EPSILON = float(np.finfo(np.float64).eps)
TMVA_RELEASE = "4.2.1 [262657]"
ROOT_RELEASE = "6.40/00 [403456]"

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
    ("UseBaggedGrad", "False"), ("GradBaggingFraction", "5.000000e-01"),
    ("UseNTrainEvents", "0"), ("NNodesMax", "0"),
]


class TMVAFormatError(ModelFormatError):
    """A TMVA weight file that is malformed or uses a feature hepbdt does not read."""


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


def _is_classifier(model: Any) -> bool:
    return getattr(model, "_estimator_kind", "") == "classifier"


def _check_fitted(model: Any) -> Forest:
    forest = getattr(model, "forest_", None)
    if not isinstance(forest, Forest):
        raise TypeError(f"expected a fitted hepbdt BDTClassifier or BDTRegressor, got "
                        f"{type(model).__name__} (call fit, load_model or from_tmva_xml first)")
    return forest


def _leaf_values(forest: Forest) -> np.ndarray:
    return forest.value[forest.feature < 0]


def _layout(model: Any) -> _Layout:
    forest = _check_fitted(model)
    tm = dict(forest.extra.get("tmva") or {})
    agg = forest.aggregation
    if _is_classifier(model):
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

def _sequential_sum(a: np.ndarray) -> float:
    return float(np.cumsum(a)[-1]) if a.size else 0.0


def _adaboost_r2(per_tree: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """TMVA's AdaBoostR2 rule, with its order of additions (per event, float64)."""
    n_events, n_trees = per_tree.shape
    if n_trees == 0:
        return np.zeros(n_events)
    order = np.argsort(per_tree, axis=1, kind="stable")
    responses = np.take_along_axis(per_tree, order, axis=1)
    cum = np.cumsum(weights[order], axis=1)
    k = np.argmax(cum > _sequential_sum(weights) / 2.0, axis=1) + 1
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
    - regressors: the regression value rounded to float32, as ``EvaluateRegression``.

    X : (n, n_features) array-like, read as float32 like the Reader; NaN allowed, inf not.
    """
    from ..engine.predict import predict_per_tree, predict_raw
    from ..estimators import check_X

    forest = _check_fitted(model)
    layout = _layout(model)
    X, _ = check_X(X, forest.n_features)
    if layout.boost_type == "Grad":
        F = forest.raw_score(X)
        if layout.analysis == "Regression":
            return F.astype(np.float32).astype(np.float64)
        F = F * layout.scale
        return 2.0 / (1.0 + np.exp(-2.0 * F)) - 1.0
    if layout.boost_type == "AdaBoostR2":
        out = _adaboost_r2(predict_per_tree(X, forest), forest.tree_weights)
        return out.astype(np.float32).astype(np.float64)
    num = predict_raw(X, forest)
    norm = _sequential_sum(forest.tree_weights)
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


def _expand_tree(forest: Forest, root: int, exact_missing: bool) -> _TmvaTree:
    """Rewrite one tree with TMVA's ``x >= Cut`` test, sending NaN where hepbdt does.

    Along a path the features already known to be NaN (their nodes are resolved) or known
    to be finite (their later nodes need no NaN branch) are tracked.
    """
    feature, threshold = forest.feature, forest.threshold
    left, right, missing_left = forest.left, forest.right, forest.missing_left
    tree = _TmvaTree()
    empty: frozenset[int] = frozenset()
    stack: list[tuple[int, int, str, int, frozenset[int], frozenset[int]]] = [
        (root, -1, "s", 0, empty, empty)]
    while stack:
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
    bounds = suffix + fixed
    ok = np.flatnonzero(bounds <= limit)
    if ok.size == 0:
        raise TMVAExportError(f"the float32 leaf values of the TMVA file would move the response "
                              f"by up to {bounds[-1]:.3g}, more than the tolerance {limit:.3g}")
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
        bound = float(np.max(dv)) if dv.size else 0.0
    else:
        norm = abs(_sequential_sum(a32))
        if norm <= DBL_EPSILON:
            if abs(_sequential_sum(w)) > DBL_EPSILON:
                raise TMVAExportError("the tree weights sum to zero once rounded to float32")
            bound = 0.0
        else:
            bound = float((np.sum(np.abs(a32) * dv) + 2.0 * vmax * np.sum(np.abs(a32 - w))) / norm)
    limit = tolerance * (max(1.0, vmax) if regression else 1.0)
    if bound > limit:
        raise TMVAExportError(f"float32 boost weights and leaf values in the TMVA file would move "
                              f"the response by up to {bound:.3g}, more than the tolerance {limit:.3g}")
    return out, bound


def _variables_range(forest: Forest, model: Any, tm: dict[str, Any]) -> list[tuple[float, float]]:
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
    stored = layout.extra_tmva.get("options")
    if isinstance(stored, list) and stored:
        opts = [(str(n), bool(m), str(v)) for n, m, v in stored]
        set_ = {"BoostType": layout.boost_type}
        if layout.analysis == "Classification" and layout.boost_type != "Grad":
            set_["UseYesNoLeaf"] = str(layout.yes_no_leaf)
        return [(n, m or (n in set_ and set_[n] != v), set_.get(n, v)) for n, m, v in opts]
    values = dict(DEFAULT_OPTIONS)
    modified = {"V", "H", "NTrees", "MaxDepth", "BoostType"}
    values.update(NTrees=str(forest.n_trees), MaxDepth=str(max(1, max_depth)),
                  BoostType=layout.boost_type)
    if layout.boost_type == "Grad":
        lr = getattr(model, "learning_rate", None)
        if lr is not None:
            values["Shrinkage"] = f"{float(lr):e}"
            modified.add("Shrinkage")
        loss = forest.extra.get("loss")
        if layout.analysis == "Regression" and loss in ("squared", "absolute", "huber"):
            values["RegressionLossFunctionBDTG"] = {
                "squared": "LeastSquares", "absolute": "AbsoluteDeviation", "huber": "Huber"}[loss]
            modified.add("RegressionLossFunctionBDTG")
    if layout.analysis == "Regression" or not layout.yes_no_leaf:
        values["UseYesNoLeaf"] = "False"
        modified.add("UseYesNoLeaf")
    if layout.analysis == "Regression":
        values["SeparationType"] = "regressionvariance"
    return [(n, n in modified, values[n]) for n, _ in DEFAULT_OPTIONS]


def _internal_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _variable_attrs(index_name: str, index: int, name: str, vmin: float, vmax: float) -> dict[str, str]:
    return {index_name: str(index), "Expression": name, "Label": name, "Title": name, "Unit": "",
            "Internal": _internal_name(name), "Type": "F", "Min": f"{vmin:.8e}", "Max": f"{vmax:.8e}"}


def to_tmva_xml(model: Any, path: str | os.PathLike, *, tolerance: float = 1e-6,
                missing: str = "exact", method_name: str | None = None,
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
        residual trees until the bound holds; others are refused when it does not.
    missing : "exact" (default) writes extra nodes so that NaN inputs go where the model
        sends them (TMVA sends NaN with the values below the cut); "none" writes the plain
        trees and is only valid when the inputs are never NaN.
    method_name : the method's title (``BDT::<name>``); default "BDT" or the imported one.
    target_name : regression target name; default "target" or the imported one.

    Returns
    -------
    dict with ``n_trees`` (trees written, residual trees included), ``n_residual_trees``,
    ``n_nodes`` and ``max_response_error`` (the bound that the file satisfies).

    Raises
    ------
    TMVAExportError when the model cannot be written exactly enough (see ``tolerance``),
    or has an aggregation/loss with no TMVA equivalent.
    """
    forest = _check_fitted(model)
    if missing not in ("exact", "none"):
        raise ValueError(f"missing={missing!r} is not valid; expected 'exact' or 'none'")
    if not (tolerance >= 0):
        raise ValueError(f"tolerance={tolerance!r} must be >= 0")
    layout = _layout(model)
    bad = (forest.feature >= 0) & np.isnan(forest.threshold)
    if bad.any():
        raise TMVAExportError(f"node {int(np.flatnonzero(bad)[0])} has a NaN threshold")
    if layout.analysis == "Classification" and layout.boost_type == "Grad" and forest.n_trees == 0:
        raise TMVAExportError("the model has no trees")
    exact_missing = missing == "exact"
    trees = [_expand_tree(forest, int(forest.tree_offsets[t]), exact_missing) for t in range(forest.n_trees)]
    purity = _node_purity(forest)
    if layout.boost_type == "Grad":
        if not trees:  # a regressor with only its initial score: one leaf carries nothing
            stub = _TmvaTree()
            stub.emit(-1, "s", 0, -1, 0.0, 0)
            trees = [stub]
            forest = Forest(**{k: np.zeros(1, dt) for k, dt in NODE_ARRAYS.items()},
                            tree_offsets=np.array([0, 1]), tree_weights=np.zeros(1),
                            n_features=forest.n_features, base_score=forest.base_score)
            forest.feature[:] = -1
            forest.left[:] = -1
            forest.right[:] = -1
        outs, bound = _grad_trees(forest, layout, trees, purity, tolerance)
    else:
        outs, bound = _mean_trees(forest, layout, trees, purity, tolerance)

    tm = layout.extra_tmva
    names = [str(n) for n in getattr(model, "feature_names_in_", [f"x{i}" for i in range(forest.n_features)])]
    name = method_name or tm.get("method_name") or "BDT"
    max_depth = max((max(o.tree.depth) for o in outs), default=1)

    root = ET.Element("MethodSetup", {"Method": f"BDT::{name}"})
    info = ET.SubElement(root, "GeneralInfo")
    from .. import __version__

    for key, value in [
        ("TMVA Release", TMVA_RELEASE), ("ROOT Release", ROOT_RELEASE),
        ("Creator", f"hepbdt {__version__}"),
        ("Date", datetime.datetime.now().strftime("%a %b %d %H:%M:%S %Y")),
        ("Host", platform.platform()), ("Dir", "."),
        ("Training events", str(int(tm.get("training_events", 0)))),
        ("TrainingTime", f"{0.0:.8e}"), ("AnalysisType", layout.analysis),
    ]:
        ET.SubElement(info, "Info", {"name": key, "value": value})
    opts = ET.SubElement(root, "Options")
    for opt_name, modified, value in _options(layout, forest, model, max_depth):
        attrs = {"name": opt_name, "modified": "Yes" if modified else "No"}
        ET.SubElement(opts, "Option", attrs).text = value
    variables = ET.SubElement(root, "Variables", {"NVar": str(forest.n_features)})
    for i, ((vmin, vmax), vname) in enumerate(zip(_variables_range(forest, model, tm), names, strict=True)):
        ET.SubElement(variables, "Variable", _variable_attrs("VarIndex", i, vname, vmin, vmax))
    ET.SubElement(root, "Spectators", {"NSpec": "0"})
    if layout.analysis == "Classification":
        classes = ET.SubElement(root, "Classes", {"NClass": "2"})
        ET.SubElement(classes, "Class", {"Name": "Signal", "Index": "0"})
        ET.SubElement(classes, "Class", {"Name": "Background", "Index": "1"})
    else:
        classes = ET.SubElement(root, "Classes", {"NClass": "1"})
        ET.SubElement(classes, "Class", {"Name": "Regression", "Index": "0"})
        target = tm.get("target") or {}
        targets = ET.SubElement(root, "Targets", {"NTrgt": "1"})
        ET.SubElement(targets, "Target", _variable_attrs(
            "TargetIndex", 0, target_name or target.get("name") or "target",
            float(target.get("min", 0.0)), float(target.get("max", 0.0))))
    ET.SubElement(root, "Transformations", {"NTransformations": "0"})
    ET.SubElement(root, "MVAPdfs")
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
    ET.indent(root, space="  ")
    # ElementTree escapes '>' in attribute values, so ' />' only closes empty elements.
    text = ET.tostring(root, encoding="unicode").replace(" />", "/>")
    atomic_write_text(path, '<?xml version="1.0"?>\n' + text + "\n")
    return {"n_trees": len(outs), "n_residual_trees": len(outs) - len(trees),
            "n_nodes": n_nodes, "max_response_error": bound}


# -- import --------------------------------------------------------------------------------

def _attr(el: ET.Element, name: str, where: str) -> str:
    value = el.get(name)
    if value is None:
        raise TMVAFormatError(f"{where}: <{el.tag}> has no attribute {name!r}")
    return value


def _num(el: ET.Element, name: str, where: str) -> float:
    text = _attr(el, name, where)
    try:
        return float(text)
    except ValueError:
        raise TMVAFormatError(f"{where}: <{el.tag}> attribute {name}={text!r} is not a number") from None


def _int(el: ET.Element, name: str, where: str) -> int:
    text = _attr(el, name, where)
    try:
        return int(text)
    except ValueError:
        raise TMVAFormatError(f"{where}: <{el.tag}> attribute {name}={text!r} is not an integer") from None


def _child(el: ET.Element, tag: str, where: str) -> ET.Element:
    found = el.find(tag)
    if found is None:
        raise TMVAFormatError(f"{where}: <{el.tag}> has no <{tag}> element")
    return found


def _read_tree(bt: ET.Element, where: str, n_var: int, leaf_rule: str) -> dict[str, np.ndarray]:
    """One BinaryTree -> local node arrays in preorder (node, left subtree, right subtree)."""
    roots = bt.findall("Node")
    if len(roots) != 1:
        raise TMVAFormatError(f"{where}: expected one root <Node>, found {len(roots)}")
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    purity: list[float] = []
    depth_max = 0
    stack: list[tuple[ET.Element, int, bool, int]] = [(roots[0], -1, True, 0)]
    while stack:
        el, parent, is_left, depth = stack.pop()
        k = len(feature)
        if parent >= 0:
            (left if is_left else right)[parent] = k
        here = f"{where}, node {k} (depth {depth})"
        ntype = _int(el, "nType", here)
        pur = _num(el, "purity", here) if (el.get("purity") is not None or leaf_rule == "purity") else 0.5
        left.append(-1)
        right.append(-1)
        purity.append(float(np.float32(pur)))
        if ntype != 0:
            feature.append(-1)
            threshold.append(0.0)
            if leaf_rule == "res":
                v = float(np.float32(_num(el, "res", here)))
            elif leaf_rule == "ntype":
                v = float(ntype)
            else:
                v = purity[-1]
            if not np.isfinite(v):
                raise TMVAFormatError(f"{here}: the leaf output is not finite")
            value.append(v)
            continue
        ivar = _int(el, "IVar", here)
        if not 0 <= ivar < n_var:
            raise TMVAFormatError(f"{here}: IVar={ivar} is not a variable index in [0, {n_var})")
        if el.get("NCoef") not in (None, "0"):
            raise TMVAFormatError(f"{here}: Fisher-discriminant cuts (NCoef={el.get('NCoef')}) "
                                  "are not supported")
        cut = float(np.float32(_num(el, "Cut", here)))
        if not np.isfinite(cut):
            raise TMVAFormatError(f"{here}: Cut is not finite")
        ctype = _int(el, "cType", here)
        if ctype not in (0, 1):
            raise TMVAFormatError(f"{here}: cType={ctype} must be 0 or 1")
        kids = el.findall("Node")
        by_pos = {c.get("pos"): c for c in kids}
        if len(kids) != 2 or set(by_pos) != {"l", "r"}:
            raise TMVAFormatError(f"{here}: an inner node (nType=0) needs two daughters with "
                                  f"pos='l' and pos='r', found {[c.get('pos') for c in kids]}")
        feature.append(ivar)
        threshold.append(cut)
        # Inner nodes' outputs are not used by the Reader; Grad's res is kept for re-export.
        res = float(np.float32(_num(el, "res", here))) if leaf_rule == "res" else 0.0
        value.append(res if np.isfinite(res) else 0.0)
        # cType=1: x >= Cut goes right, so x < Cut (and NaN) goes left as in hepbdt.
        # cType=0: x >= Cut goes left: the 'r' daughter holds x < Cut and NaN.
        ours_left, ours_right = (by_pos["l"], by_pos["r"]) if ctype == 1 else (by_pos["r"], by_pos["l"])
        stack.append((ours_right, k, False, depth + 1))
        stack.append((ours_left, k, True, depth + 1))
        depth_max = max(depth_max, depth + 1)
    n = len(feature)
    f = np.asarray(feature, dtype=np.int32)
    internal = f >= 0
    return {
        "feature": f, "threshold": np.asarray(threshold, dtype=np.float32),
        "bin_threshold": np.zeros(n, np.uint8), "left": np.asarray(left, dtype=np.int32),
        "right": np.asarray(right, dtype=np.int32), "missing_left": internal.copy(),
        "value": np.asarray(value), "gain": internal.astype(np.float64), "cover": np.zeros(n),
        "purity": np.asarray(purity), "depth": np.array([depth_max]),
    }


def _read_variables(el: ET.Element, tag: str, count_attr: str, index_attr: str,
                    where: str) -> list[dict[str, Any]]:
    n = _int(el, count_attr, where)
    items = el.findall(tag)
    if len(items) != n:
        raise TMVAFormatError(f"{where}: <{el.tag}> says {count_attr}={n} but has {len(items)} <{tag}>")
    out: list[dict[str, Any]] = [{}] * n
    for item in items:
        i = _int(item, index_attr, where)
        if not 0 <= i < n or out[i]:
            raise TMVAFormatError(f"{where}: <{tag}> {index_attr}={i} is out of range or repeated")
        expr = _attr(item, "Expression", where)
        out[i] = {"name": expr, "min": float(item.get("Min", "0") or 0.0),
                  "max": float(item.get("Max", "0") or 0.0)}
    return out


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes", "t")


def _fitted_estimator(kind: str, forest: Forest, names: list[str], params: dict[str, Any]):
    """A fitted BDTClassifier/BDTRegressor around a forest read from another format."""
    from ..estimators import BDTClassifier, BDTRegressor

    cls = BDTClassifier if kind == "classifier" else BDTRegressor
    valid = set(cls._param_names())
    est = cls(**{k: v for k, v in params.items() if k in valid})
    est.forest_ = forest
    est.n_features_in_ = forest.n_features
    est.feature_names_in_ = list(names)
    est.n_trees_ = forest.n_trees
    est.train_loss_ = np.zeros(0)
    est.validation_loss_ = None
    est.best_iteration_ = None
    if kind == "classifier":
        est.classes_ = np.array([0, 1])
    return est


def from_tmva_xml(path: str | os.PathLike):
    """Read a TMVA ``MethodBDT`` weight file into a fitted hepbdt estimator.

    Classification (BoostType AdaBoost, RealAdaBoost, Bagging, Grad) gives a BDTClassifier
    (class 1 = TMVA's Signal), regression (Grad, AdaBoostR2, Bagging) a BDTRegressor.
    ``tmva_response(model, X)`` is the Reader's output; ``decision_function`` is the raw
    score (Grad: F; AdaBoost: the weighted mean). Cuts, responses, purities and boost
    weights are kept as the float32 numbers the Reader uses. The file's options, node
    purities and variable ranges are kept in ``forest_.extra["tmva"]`` for re-export.
    Split gains are not in TMVA files: each split counts 1 in the rankings.

    Raises
    ------
    FileNotFoundError; TMVAFormatError (a ValueError) naming the file and the element
    for malformed files, variable transformations, preselection, Fisher cuts, multiclass
    or an unsupported BoostType.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"TMVA weight file {str(path)!r} does not exist")
    data = path.read_bytes()
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise TMVAFormatError(f"{path}: DOCTYPE/ENTITY declarations are not accepted in a weight file")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise TMVAFormatError(f"{path}: not an XML file ({exc})") from None
    where = str(path)
    if root.tag != "MethodSetup":
        raise TMVAFormatError(f"{where}: the root element is <{root.tag}>, expected <MethodSetup>")
    method = _attr(root, "Method", where)
    if not method.startswith("BDT::"):
        raise TMVAFormatError(f"{where}: Method={method!r} is not a BDT (expected 'BDT::<name>')")
    info = {i.get("name"): i.get("value", "") for i in _child(root, "GeneralInfo", where).findall("Info")}
    analysis = (info.get("AnalysisType") or "").strip().lower()
    if analysis not in ("classification", "regression"):
        raise TMVAFormatError(f"{where}: GeneralInfo AnalysisType={info.get('AnalysisType')!r}; "
                              "hepbdt reads 'Classification' and 'Regression'")
    regression = analysis == "regression"
    options: list[list[Any]] = []
    for opt in _child(root, "Options", where).findall("Option"):
        options.append([_attr(opt, "name", where + " <Options>"), opt.get("modified") == "Yes",
                        (opt.text or "").strip()])
    opt = {n: v for n, _, v in options}
    boost = opt.get("BoostType", "AdaBoost")
    valid = REGRESSION_BOOSTS if regression else CLASSIFICATION_BOOSTS
    if boost not in valid:
        raise TMVAFormatError(f"{where}: BoostType={boost!r} is not supported for "
                              f"{analysis}; valid: {list(valid)}")
    if _truthy(opt.get("DoPreselection", "False")):
        raise TMVAFormatError(f"{where}: DoPreselection=True (preselection cuts) is not supported")
    if _truthy(opt.get("UseFisherCuts", "False")):
        raise TMVAFormatError(f"{where}: UseFisherCuts=True (Fisher-discriminant cuts) is not supported")
    yes_no = _truthy(opt.get("UseYesNoLeaf", "True")) and boost != "RealAdaBoost"
    variables = _read_variables(_child(root, "Variables", where), "Variable", "NVar", "VarIndex",
                                where + " <Variables>")
    n_var = len(variables)
    if n_var < 1:
        raise TMVAFormatError(f"{where}: <Variables> lists no variable")
    transformations = root.find("Transformations")
    if transformations is not None and _int(transformations, "NTransformations", where) != 0:
        raise TMVAFormatError(f"{where}: variable transformations (NTransformations="
                              f"{transformations.get('NTransformations')}) are not supported")
    classes = root.find("Classes")
    if classes is not None and not regression and _int(classes, "NClass", where) != 2:
        raise TMVAFormatError(f"{where}: NClass={classes.get('NClass')}; only two classes are supported")
    target: dict[str, Any] = {}
    if regression:
        targets = root.find("Targets")
        if targets is not None:
            tlist = _read_variables(targets, "Target", "NTrgt", "TargetIndex", where + " <Targets>")
            if len(tlist) != 1:
                raise TMVAFormatError(f"{where}: {len(tlist)} regression targets; only one is supported")
            target = tlist[0]
    weights = _child(root, "Weights", where)
    if any(k.startswith("Preselection") for k in weights.attrib):
        raise TMVAFormatError(f"{where}: <Weights> has preselection cuts, which are not supported")
    wtype = weights.get("AnalysisType", weights.get("TreeType"))
    if wtype not in ("0", "1"):
        raise TMVAFormatError(f"{where}: <Weights> AnalysisType={wtype!r}, expected 0 or 1")
    leaf_rule = "res" if wtype == "1" else ("ntype" if yes_no else "purity")
    bts = weights.findall("BinaryTree")
    n_trees = _int(weights, "NTrees", where + " <Weights>")
    if n_trees != len(bts) or not bts:
        raise TMVAFormatError(f"{where}: <Weights> NTrees={n_trees} but it holds {len(bts)} <BinaryTree>")

    grad = boost == "Grad"
    agg = "sum" if grad else ("weighted_median" if boost == "AdaBoostR2" else "weighted_mean")
    boost_weights = np.array([np.float32(_num(bt, "boostWeight", f"{where} <BinaryTree> {t}"))
                              for t, bt in enumerate(bts)], dtype=np.float64)
    if not np.all(np.isfinite(boost_weights)):
        raise TMVAFormatError(f"{where}: a <BinaryTree> boostWeight is not finite")
    base = float(boost_weights[0]) if (grad and regression) else 0.0
    builder = ForestBuilder(n_var, base_score=base, aggregation=agg)
    purity_parts = []
    max_depth = 1
    for t, bt in enumerate(bts):
        arrays = _read_tree(bt, f"{where} <BinaryTree itree={bt.get('itree', t)}>", n_var, leaf_rule)
        purity_parts.append(arrays.pop("purity"))
        max_depth = max(max_depth, int(arrays.pop("depth")[0]))
        builder.add(tree_weight=1.0 if grad else float(boost_weights[t]), **arrays)
    forest = builder.build()
    try:
        forest.validate(where)
    except ModelFormatError as exc:
        raise TMVAFormatError(str(exc)) from None

    kind = "regressor" if regression else "classifier"
    extra: dict[str, Any] = {}
    if grad and not regression:
        extra["loss"] = "deviance"
    elif grad:
        extra["loss"] = {"leastsquares": "squared", "absolutedeviation": "absolute"}.get(
            opt.get("RegressionLossFunctionBDTG", "Huber").lower(), "huber")
    elif not regression:
        extra["score_min"] = -1.0 if leaf_rule == "ntype" else 0.0
    extra["tmva"] = {
        "method_name": method.split("::", 1)[1],
        "boost_type": "AdaBoost" if boost == "RealAdaBoost" else boost,
        "analysis": "Regression" if regression else "Classification", "yes_no_leaf": leaf_rule == "ntype",
        "options": options, "variables": variables, "target": target, "source": path.name,
        "training_events": int(float(info.get("Training events", "0") or 0)),
        "node_purity": np.concatenate(purity_parts).tolist(),
    }
    forest.extra = extra
    params = _estimator_params(options, kind)
    if params is None:
        params = _fallback_params(forest, opt, boost, leaf_rule, max_depth, regression, extra)
    return _fitted_estimator(kind, forest, [v["name"] for v in variables], params)


def _estimator_params(options: list[list[Any]], kind: str) -> dict[str, Any] | None:
    """The estimator parameters of the file's training options (None if hepbdt has none)."""
    from ..config import parse_tmva_options

    text = ":".join(f"{name}={value}" for name, modified, value in options if modified)
    try:
        return parse_tmva_options(text, kind)
    except ValueError:
        return None


def _fallback_params(forest: Forest, opt: dict[str, str], boost: str, leaf_rule: str, max_depth: int,
                     regression: bool, extra: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"n_trees": forest.n_trees, "max_depth": min(max(1, max_depth), 30)}
    if boost == "Grad":
        params["boosting"] = "gradient"
        try:
            params["learning_rate"] = float(opt.get("Shrinkage", "1"))
        except ValueError:
            pass
        if regression:
            params["loss"] = extra["loss"]
    elif not regression:
        params["boosting"] = "bagging" if boost == "Bagging" else "adaboost"
        params["use_yes_no_leaf"] = leaf_rule == "ntype"
    return params
