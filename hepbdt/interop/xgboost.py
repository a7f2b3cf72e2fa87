"""XGBoost JSON models (``Booster.save_model("model.json")``) read into fitted hepbdt estimators.

Supported: the ``gbtree`` booster with numerical splits, one output group, and the
objectives ``binary:logistic``, ``binary:logitraw`` (BDTClassifier, loss "logistic":
P = 1/(1+exp(-F))) and ``reg:squarederror`` (BDTRegressor). The raw score (decision
function) equals ``Booster.predict(DMatrix(X), output_margin=True)``: XGBoost goes left
when ``x < split_condition`` (float32, as hepbdt), missing values follow ``default_left``,
a leaf's value is its ``split_conditions`` entry (eta already applied), and the margin
starts at ``base_score`` (stored as a probability for binary:logistic, turned into a margin
in float32 as XGBoost does, bounded to [1e-6, 1 - 1e-6] for files of XGBoost >= 3.2; so too
for binary:logitraw in files of XGBoost < 1.3.1, later ones taking it as the margin). XGBoost
adds in float32 and hepbdt in float64, so the two agree to float32 rounding. An early-stopped
model (a ``best_iteration`` attribute) is cut to its rounds up to ``best_iteration``, as
XGBoost's scikit-learn ``predict`` does (``Booster.predict`` uses every tree: pass
``use_best_iteration=False`` for that). A round is ``num_parallel_tree`` trees; XGBoost 1.4 and
1.5 left that out of the model, and their ``best_ntree_limit`` attribute gives it (1.5 writes
it, and ``best_iteration``, into every model, early-stopped or not); a file of
XGBoost < 1.4 says it nowhere, so its ``best_iteration`` is refused unless
``use_best_iteration=False``.

Missing values are NaN, as in every hepbdt model. XGBoost's ``missing`` parameter (of a
DMatrix or an estimator: ``XGBClassifier(missing=-999)``) is not saved in the model file
(XGBoost forgets it too when it loads the model again), so the reader can neither follow nor
refuse it: give such a model NaN where its training data had the missing value, which it
otherwise takes as a number, as a reloaded XGBoost model does.

A DART model (XGBoost < 3.3: a "dart" booster holding the gbtree and ``weight_drop``; 3.3:
a gbtree with ``weight_drop`` beside its model; 3.4: a gbtree whose model holds it) is read
with each leaf value multiplied by its tree's weight in float32, as XGBoost predicts.

Refused with an error naming what is wrong: multi-class or multi-target models, the
gblinear booster, categorical splits, other objectives, a binary:logistic base_score within
1e-6 of 0 or 1 in a file that does not give its XGBoost version, UBJSON or otherwise malformed
files (values of the wrong type, integers that are floats or booleans, huge integers,
nesting too deep, numbers in text that XGBoost's C++ reads otherwise than Python: ``"1_0"``,
other scripts' digits), files whose tree list disagrees with their ``num_trees``, tree ``id``s
or rounds (``iteration_indptr``, ``num_parallel_tree``), as XGBoost refuses or reorders them,
models without trees (0 rounds: XGBoost's margin follows rules of its own),
files over ``MAX_MODEL_BYTES`` or of more than ``MAX_NODES`` nodes (see :mod:`hepbdt.model`).
The file is parsed with ``json``; nothing is executed or unpickled,
and the ``xgboost`` package is not needed.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..estimators import check_round_count, from_forest
from ..model import MAX_FEATURES, Forest, ForestBuilder, ModelFormatError, check_node_count
from ..persistence import parse_json, read_model_file

__all__ = ["from_xgboost_json", "XGBoostFormatError"]

OBJECTIVES = {"binary:logistic": "classifier", "binary:logitraw": "classifier",
              "reg:squarederror": "regressor"}


class XGBoostFormatError(ModelFormatError):
    """An XGBoost model file that is malformed or uses a feature hepbdt does not read."""


def _get(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise XGBoostFormatError(f"{where}: missing key {key!r}")
    return d[key]


# The fields of the parts that decide the scores, as XGBoost 1.0 to 3.4 write them. A field
# beyond these (a later version's) is refused, not passed over: XGBoost 3.3 moved DART's
# tree weights into a "gbtree" model, which read without them scored 0.09 off.
KNOWN_FIELDS = {
    "learner_model_param": {"base_score", "boost_from_average", "num_class", "num_feature",
                            "num_target"},
    "gbtree": {"name", "model", "weight_drop"},
    "dart": {"name", "gbtree", "weight_drop"},
    "model": {"cats", "gbtree_model_param", "iteration_indptr", "tree_info", "trees",
              "weight_drop"},
    "tree": {"base_weights", "categories", "categories_nodes", "categories_segments",
             "categories_sizes", "default_left", "id", "leaf_child_counts", "left_children",
             "loss_changes", "parents", "right_children", "split_conditions", "split_indices",
             "split_type", "sum_hessian", "tree_param"},
}


def _known_fields(d: dict[str, Any], part: str, where: str) -> None:
    """Refuse a field of ``d`` (a ``part`` of KNOWN_FIELDS) that hepbdt does not read."""
    unknown = sorted(set(d) - KNOWN_FIELDS[part])
    if unknown:
        raise XGBoostFormatError(
            f"{where}: field {_brief(unknown[0])} is not one hepbdt knows (it reads the model "
            "fields of XGBoost 1.0 to 3.4), and it may change the scores: refused rather than "
            "read without it")


# Numbers in text as XGBoost's C++ parsers read them whole: ASCII digits, no "_" and no other
# script's digits (Python's int and float take "1_0" as 10 and "٤" as 4; XGBoost reads "1_0" as
# 1 or refuses it). Blanks around the number are stripped, as before.
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _int(value: Any, where: str) -> int:
    """An integer: a JSON integer or its decimal string (XGBoost writes its parameters as
    strings); not a float, not a boolean."""
    if type(value) is int:
        return value
    if isinstance(value, str) and len(value) <= 20 and _INT_TEXT.fullmatch(value.strip()):
        return int(value)
    raise XGBoostFormatError(f"{where}: {_brief(value)} is not an integer") from None


def _brief(value: Any) -> str:
    """``repr(value)`` cut to 40 characters."""
    if type(value) is int and value.bit_length() > 100:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _base_score(text: Any, where: str) -> float:
    """``"5E-1"`` (XGBoost < 3) or ``"[5E-1]"`` (XGBoost 3, one value per target)."""
    s = str(text).strip()
    if s.startswith("[") and s.endswith("]"):
        parts = s[1:-1].split(",")
        if len(parts) > 1 and not parts[-1].strip():
            parts.pop()  # "[5E-1,]": a trailing comma, which XGBoost reads too
        if len(parts) != 1 and all(p.strip() for p in parts):
            raise XGBoostFormatError(f"{where}: base_score {s!r} has {len(parts)} values; "
                                     "only single-output models are supported")
        s = parts[0].strip() if len(parts) == 1 else s
    if not _FLOAT_TEXT.fullmatch(s):
        raise XGBoostFormatError(f"{where}: base_score {text!r} is not a number (a decimal "
                                 "such as '5E-1' or '[5E-1]')")
    value = float(s)
    if not math.isfinite(value):
        raise XGBoostFormatError(f"{where}: base_score {text!r} is not finite")
    return value


ARRAY_TYPES = {"int": {int}, "float": {int, float}, "flag": {int, bool}}


def _array(tree: dict[str, Any], key: str, n: int, kind: str, where: str) -> np.ndarray:
    """``tree[key]``: a list of n JSON values of ``kind`` ("int", "float" or "flag": 0/1 or a
    boolean), as int64, float64 or bool."""
    raw = _get(tree, key, where)
    if not isinstance(raw, list):
        raise XGBoostFormatError(f"{where}.{key}: expected a list, got {type(raw).__name__}")
    allowed = ARRAY_TYPES[kind]
    if not set(map(type, raw)) <= allowed:
        i, bad = next((i, v) for i, v in enumerate(raw) if type(v) not in allowed)
        raise XGBoostFormatError(f"{where}.{key}[{i}]: {_brief(bad)} has the wrong type")
    if len(raw) != n:
        raise XGBoostFormatError(f"{where}.{key}: expected {n} values, got {len(raw)}")
    try:
        a = np.array(raw, dtype=np.float64 if kind == "float" else np.int64)
    except OverflowError:
        raise XGBoostFormatError(f"{where}.{key}: a value is too large") from None
    if kind == "flag":
        if np.any((a != 0) & (a != 1)):
            raise XGBoostFormatError(f"{where}.{key}: values must be 0 or 1")
        return a != 0
    return a


def _read_tree(tree: dict[str, Any], where: str, n_features: int) -> dict[str, np.ndarray]:
    """One XGBoost tree -> hepbdt local node arrays in preorder (reachable nodes only)."""
    param = _get(tree, "tree_param", where)
    _known_fields(tree, "tree", where)
    n = _int(_get(param, "num_nodes", where + ".tree_param"), where + ".tree_param.num_nodes")
    if n < 1:
        raise XGBoostFormatError(f"{where}: a tree needs at least one node")
    if _int(param.get("size_leaf_vector", 1), where) > 1:
        raise XGBoostFormatError(f"{where}: vector leaves (multi-target trees) are not supported")
    left = _array(tree, "left_children", n, "int", where)
    right = _array(tree, "right_children", n, "int", where)
    index = _array(tree, "split_indices", n, "int", where)
    cond = _array(tree, "split_conditions", n, "float", where)
    default_left = _array(tree, "default_left", n, "flag", where)
    split_type = tree.get("split_type")
    if split_type is not None and np.any(_array(tree, "split_type", n, "int", where) != 0):
        raise XGBoostFormatError(f"{where}: categorical splits are not supported")
    if tree.get("categories_nodes"):
        raise XGBoostFormatError(f"{where}: categorical splits are not supported")
    gain, cover = np.zeros(n), np.zeros(n)
    if isinstance(tree.get("loss_changes"), list) and isinstance(tree.get("sum_hessian"), list) \
            and len(tree["loss_changes"]) == n and len(tree["sum_hessian"]) == n:
        gain = _array(tree, "loss_changes", n, "float", where)
        cover = _array(tree, "sum_hessian", n, "float", where)
        if not (np.all(np.isfinite(gain)) and np.all(np.isfinite(cover))):
            raise XGBoostFormatError(f"{where}: loss_changes and sum_hessian must be finite")

    out: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right",
                                                 "missing_left", "value", "gain", "cover")}
    seen = np.zeros(n, dtype=bool)
    stack: list[tuple[int, int, bool]] = [(0, -1, True)]
    while stack:
        node, parent, is_left = stack.pop()
        if not 0 <= node < n or seen[node]:
            raise XGBoostFormatError(f"{where}: child index {node} is out of range or reused")
        seen[node] = True
        k = len(out["feature"])
        if parent >= 0:
            out["left" if is_left else "right"][parent] = k
        out["left"].append(-1)
        out["right"].append(-1)
        out["gain"].append(float(gain[node]))
        out["cover"].append(float(cover[node]))
        if left[node] == -1:
            if right[node] != -1:
                raise XGBoostFormatError(f"{where}: node {node} has only a right child")
            with np.errstate(over="ignore"):
                leaf_value = np.float32(cond[node])  # XGBoost reads it as a float32
            if not math.isfinite(leaf_value):
                raise XGBoostFormatError(f"{where}: leaf {node} has a non-finite value")
            out["feature"].append(-1)
            out["threshold"].append(0.0)
            out["missing_left"].append(False)
            out["value"].append(float(leaf_value))
            continue
        f = int(index[node])
        if not 0 <= f < n_features:
            raise XGBoostFormatError(f"{where}: node {node} splits on feature {f}, outside "
                                     f"[0, {n_features})")
        if math.isnan(cond[node]):
            raise XGBoostFormatError(f"{where}: node {node} has a NaN split condition")
        out["feature"].append(f)
        with np.errstate(over="ignore"):  # beyond float32: +-inf, as XGBoost reads it
            out["threshold"].append(float(np.float32(cond[node])))
        out["missing_left"].append(bool(default_left[node]))
        out["value"].append(0.0)
        stack.append((int(right[node]), k, False))
        stack.append((int(left[node]), k, True))
    return {
        "feature": np.asarray(out["feature"], dtype=np.int32),
        "threshold": np.asarray(out["threshold"], dtype=np.float32),
        "bin_threshold": np.zeros(len(out["feature"]), dtype=np.uint8),
        "left": np.asarray(out["left"], dtype=np.int32),
        "right": np.asarray(out["right"], dtype=np.int32),
        "missing_left": np.asarray(out["missing_left"], dtype=bool),
        "value": np.asarray(out["value"]),
        "gain": np.asarray(out["gain"]),
        "cover": np.asarray(out["cover"]),
    }


def _read_doc(path: Path) -> Any:
    """The file's JSON document (size, readability and JSON checked)."""
    data = read_model_file(path, "XGBoost model file", XGBoostFormatError)
    return parse_json(path, data, XGBoostFormatError, "JSON file",
                      "; save the model with booster.save_model('model.json') (not UBJSON or pickle)")


def _version(value: Any) -> list[int] | None:
    """The XGBoost version that wrote the file ([major, minor, patch]), if it is one."""
    if isinstance(value, list) and len(value) <= 4 and all(type(v) is int for v in value):
        return value
    return None


def _header(learner: Any, where: str, version: list[int] | None) -> tuple[str, int, float]:
    """The objective, the feature count and the margin's base score (checked)."""
    objective = _get(_get(learner, "objective", where + ".learner"), "name",
                     where + ".learner.objective")
    mparam = _get(learner, "learner_model_param", where + ".learner")
    if isinstance(mparam, dict):
        _known_fields(mparam, "learner_model_param", where + ".learner.learner_model_param")
    n_features = _int(_get(mparam, "num_feature", where), where + ".num_feature")
    num_class = _int(mparam.get("num_class", 0), where + ".num_class")
    num_target = _int(mparam.get("num_target", 1), where + ".num_target")
    if num_class > 1 or num_target > 1:
        raise XGBoostFormatError(f"{where}: multi-class or multi-target models (num_class="
                                 f"{num_class}, num_target={num_target}) are not supported")
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise XGBoostFormatError(f"{where}: objective {_brief(objective)} is not supported; "
                                 f"valid: {sorted(OBJECTIVES)}")
    if not 1 <= n_features <= MAX_FEATURES:
        raise XGBoostFormatError(f"{where}: num_feature={n_features}; need 1 to {MAX_FEATURES} "
                                 "features")
    base = _base_score(_get(mparam, "base_score", where), where)
    if objective == "binary:logistic":
        base = _logistic_margin(base, version, where)
    elif objective == "binary:logitraw":
        base = _logitraw_margin(base, version, where)
    else:  # reg:squarederror stores the margin itself
        base = float(np.float32(base))
    return objective, n_features, base


LOGITRAW_IDENTITY_SINCE = [1, 3, 1]  # dmlc/xgboost#6517: binary:logitraw's base_score is its margin


def _logitraw_margin(base: float, version: list[int] | None, where: str) -> float:
    """The margin of a binary:logitraw ``base_score``: the value itself for files of XGBoost
    >= 1.3.1, its float32 logit (as binary:logistic's, which XGBoost < 1.3.1 applied to
    binary:logitraw too) before; refused where the file does not say which version wrote it."""
    if version is None:
        raise XGBoostFormatError(
            f"{where}: a binary:logitraw model whose file does not say which XGBoost version "
            f"wrote it: its base_score {base} is the margin itself for XGBoost >= 1.3.1 and "
            "the margin's logistic probability before")
    if (version + [0, 0, 0])[:3] >= LOGITRAW_IDENTITY_SINCE:
        return float(np.float32(base))
    p = np.float32(base)
    if not 0.0 < p < 1.0:
        raise XGBoostFormatError(f"{where}: base_score {base} of a binary:logitraw model of "
                                 f"XGBoost {version} (< 1.3.1) is not a probability in (0, 1)")
    return _float32_logit(p)


RT_EPS = np.float32(1e-6)  # XGBoost's kRtEps
CLAMP_SINCE = [3, 2]  # XGBoost 3.2 bounds base_score to [kRtEps, 1 - kRtEps] (dmlc/xgboost#11973)


def _logistic_margin(base: float, version: list[int] | None, where: str) -> float:
    """The margin of a binary:logistic ``base_score`` (a probability) as XGBoost computes it:
    in float32, ``-logf(1/p - 1)`` of the float32 probability, bounded to [1e-6, 1 - 1e-6]
    first by XGBoost >= 3.2 only. Where the bound changes the margin and the file does not
    say which version wrote it, the margin is ambiguous and refused."""
    p = np.float32(base)
    if not 0.0 <= p <= 1.0:
        raise XGBoostFormatError(f"{where}: base_score {base} is not a probability in [0, 1]")
    bounded = np.float32(min(max(p, RT_EPS), np.float32(1.0) - RT_EPS))
    if bounded != p:
        if p in (0.0, 1.0):  # only XGBoost >= 3.2 writes (and reads) these
            p = bounded
        elif version is None:
            raise XGBoostFormatError(
                f"{where}: base_score {base} is within 1e-6 of 0 or 1, where XGBoost >= 3.2 "
                "bounds it to [1e-6, 1 - 1e-6] and earlier versions do not, and the file "
                "does not say which version wrote it")
        elif version[:2] >= CLAMP_SINCE:
            p = bounded
    return _float32_logit(p)


def _float32_logit(p: np.float32) -> float:
    """XGBoost's ``ProbToMargin``: ``-logf(1/p - 1)`` in float32 steps, for p in (0, 1)."""
    ratio = np.float32(np.float32(1.0) / p - np.float32(1.0))  # float32 steps, as logf's input
    return float(np.float32(-math.log(float(ratio))))


def _trees(learner: Any, where: str) -> tuple[dict[str, Any], list[Any], np.ndarray | None]:
    """The gbtree model, its trees (one output group), and DART's tree weights (None: none).
    XGBoost < 3.3 writes a DART model as a "dart" booster holding the gbtree, its
    ``weight_drop`` beside it; 3.3 as a gbtree with ``weight_drop`` beside its model; 3.4 as
    a gbtree whose model holds ``weight_drop``."""
    booster = _get(learner, "gradient_booster", where + ".learner")
    name = booster.get("name") if isinstance(booster, dict) else None
    at = where + ".gradient_booster"
    drop = None
    if name == "dart":
        _known_fields(booster, "dart", at)
        drop = (booster, at)
        booster = _get(booster, "gbtree", at)
        at += ".gbtree"
        name = booster.get("name") if isinstance(booster, dict) else None
    if name != "gbtree":
        raise XGBoostFormatError(f"{where}: booster {_brief(name)} is not supported (only "
                                 "'gbtree' and 'dart'; 'gblinear' is refused)")
    _known_fields(booster, "gbtree", at)
    if "weight_drop" in booster:
        drop = (booster, at)
    model = _get(booster, "model", at)
    if isinstance(model, dict):
        _known_fields(model, "model", at + ".model")
    trees = _get(model, "trees", at + ".model")
    if not isinstance(trees, list):
        raise XGBoostFormatError(f"{where}: 'trees' must be a list")
    info = model.get("tree_info", [0] * len(trees))
    if not isinstance(info, list) or len(info) != len(trees) or any(_int(g, where) != 0 for g in info):
        raise XGBoostFormatError(f"{where}: trees belong to several output groups (multi-class)")
    _check_tree_count(model, trees, at + ".model")
    if "weight_drop" in model:
        drop = (model, at + ".model")
    return model, trees, None if drop is None else _tree_weights(*drop, len(trees))


def _tree_weights(holder: dict[str, Any], where: str, n_trees: int) -> np.ndarray:
    """DART's ``weight_drop`` in ``holder``: a finite float32 weight for each tree, which
    XGBoost multiplies each of the tree's leaf values by (in float32) as it predicts."""
    with np.errstate(over="ignore"):
        weights = _array(holder, "weight_drop", n_trees, "float", where).astype(np.float32)
    if not np.all(np.isfinite(weights)):
        raise XGBoostFormatError(f"{where}.weight_drop: the tree weights must be finite "
                                 "float32 numbers")
    return weights


def _check_tree_count(model: dict[str, Any], trees: list[Any], where: str) -> None:
    """The tree list agrees with what the file says of it (XGBoost refuses a file where it
    does not): ``num_trees``, each tree's ``id`` (its place: XGBoost puts a tree where its id
    says) and the rounds (``iteration_indptr``, ``num_parallel_tree``); a list without trees
    is refused."""
    if not trees:
        # XGBoost 3.2 scores a model of 0 rounds with boost_from_average (its default) with
        # the never estimated base_score as the margin itself ("[5E-1]": 0.5, P 0.62, where
        # the logit gave 0) and one given base_score with its logit; other versions unknown
        raise XGBoostFormatError(f"{where}: the model has no trees (trained for 0 rounds), whose "
                                 "score XGBoost takes from base_score by rules of its own; "
                                 "train at least one round")
    param = model.get("gbtree_model_param", {})
    if isinstance(param, dict) and "num_trees" in param:
        num_trees = _int(param["num_trees"], where + ".gbtree_model_param.num_trees")
        if num_trees != len(trees):
            raise XGBoostFormatError(f"{where}: gbtree_model_param.num_trees={num_trees} but the "
                                     f"file holds {len(trees)} trees (a damaged file)")
    for t, tree in enumerate(trees):
        if isinstance(tree, dict) and "id" in tree and _int(tree["id"], f"{where}.trees[{t}].id") != t:
            raise XGBoostFormatError(f"{where}: trees[{t}] has id={tree['id']}, not its place {t} "
                                     "(XGBoost writes the trees in the order of their ids)")
    _round_ends(model, len(trees), where)


def _round_ends(model: dict[str, Any], n_trees: int, where: str) -> list[int] | None:
    """The tree count after each boosting round: ``iteration_indptr[1:]`` (XGBoost >= 2),
    else rounds of ``num_parallel_tree`` trees (XGBoost >= 1.6); None where the file does not
    say how many trees a round has (XGBoost < 1.6 kept ``num_parallel_tree`` out of the model)."""
    indptr = model.get("iteration_indptr")
    if indptr is not None:
        if not isinstance(indptr, list):
            raise XGBoostFormatError(f"{where}: iteration_indptr must be a list")
        ends = [_int(v, where + ".iteration_indptr") for v in indptr]
        if len(ends) < 2 or ends[0] != 0 or ends[-1] != n_trees \
                or any(b <= a for a, b in zip(ends[:-1], ends[1:], strict=True)):
            raise XGBoostFormatError(f"{where}: iteration_indptr does not split the {n_trees} "
                                     "trees into rounds")
        return ends[1:]
    param = model.get("gbtree_model_param", {})
    if not isinstance(param, dict) or "num_parallel_tree" not in param:
        return None
    return _rounds_of(_int(param["num_parallel_tree"], where + ".num_parallel_tree"), n_trees,
                      "num_parallel_tree", where)


def _rounds_of(per_round: int, n_trees: int, said_by: str, where: str) -> list[int]:
    """The round ends of ``n_trees`` trees in rounds of ``per_round`` (checked)."""
    if per_round < 1 or n_trees % per_round:
        raise XGBoostFormatError(f"{where}: {n_trees} trees are not rounds of "
                                 f"{said_by}={per_round} trees")
    return list(range(per_round, n_trees + 1, per_round))


def _best_ends(model: dict[str, Any], attributes: dict[str, Any], best: int, n_trees: int,
               where: str) -> list[int] | None:
    """The round ends of an early-stopped model, checked against its ``best_ntree_limit``
    (XGBoost 1.4-1.7: the tree count of rounds 0..best_iteration), which gives the rounds'
    size where the model does not (XGBoost 1.4 and 1.5); None where nothing says it."""
    ends = _round_ends(model, n_trees, where + ".gradient_booster.model")
    if "best_ntree_limit" not in attributes:
        return ends
    limit = _int(attributes["best_ntree_limit"], where + ".attributes.best_ntree_limit")
    if ends is None and best >= 0 and limit > 0 and limit % (best + 1) == 0:
        ends = _rounds_of(limit // (best + 1), n_trees, "best_ntree_limit / (best_iteration + 1)",
                          where)
    if ends is None or not 0 <= best < len(ends) or ends[best] != limit:
        raise XGBoostFormatError(f"{where}: best_ntree_limit={limit} is not the tree count of "
                                 f"the rounds up to best_iteration={best}")
    return ends


def _kept_trees(learner: Any, model: dict[str, Any], n_trees: int, where: str,
                use_best_iteration: bool) -> tuple[int, int | None]:
    """How many trees the model predicts with, and its best iteration (None: no early
    stopping recorded). XGBoost's scikit-learn estimators predict with the rounds up to
    ``best_iteration`` (attribute of an early-stopped model), as hepbdt's own early stopping."""
    attributes = learner.get("attributes") or {}
    if not isinstance(attributes, dict) or "best_iteration" not in attributes:
        if isinstance(attributes, dict) and "best_ntree_limit" in attributes:
            raise XGBoostFormatError(f"{where}: the model records best_ntree_limit but not "
                                     "best_iteration (XGBoost < 1.4); save it with a newer XGBoost")
        return n_trees, None
    best = _int(attributes["best_iteration"], where + ".attributes.best_iteration")
    ends = _best_ends(model, attributes, best, n_trees, where)
    if ends is None:  # XGBoost < 1.4: best_iteration counts rounds of an unrecorded size
        if not 0 <= best < n_trees:
            raise XGBoostFormatError(f"{where}: best_iteration={best} is outside the model's "
                                     f"{n_trees} trees")
        if use_best_iteration:
            raise XGBoostFormatError(
                f"{where}: the model records best_iteration={best} but not how many trees a "
                "round has (num_parallel_tree; files of XGBoost < 1.4), so the trees up to it "
                "are unknown; pass use_best_iteration=False to read every tree (as "
                "Booster.predict does)")
        return n_trees, best
    if not 0 <= best < len(ends):
        raise XGBoostFormatError(f"{where}: best_iteration={best} is outside the model's "
                                 f"{len(ends)} boosting rounds")
    return (ends[best] if use_best_iteration else n_trees), best


def from_xgboost_json(path: str | os.PathLike, *, use_best_iteration: bool = True):
    """Read an XGBoost JSON model into a fitted hepbdt estimator.

    ``binary:logistic`` and ``binary:logitraw`` give a BDTClassifier (loss "logistic",
    P = 1/(1+exp(-F)), classes [0, 1]); ``reg:squarederror`` a BDTRegressor. Its
    ``decision_function`` equals XGBoost's ``predict(..., output_margin=True)`` (NaN inputs
    included) to float32 rounding. Feature names are the model's, else "f0", "f1", ...
    Split gains (``loss_changes``) and covers (``sum_hessian``) are kept for the rankings.

    use_best_iteration : for an early-stopped model (``best_iteration`` attribute), keep only
        the rounds up to it, as ``XGBClassifier.predict`` and ``XGBRegressor.predict`` do
        (default); False keeps every tree, as ``Booster.predict`` does.
        ``n_trees_reason_`` says which was done.

    Raises
    ------
    FileNotFoundError; XGBoostFormatError (a ValueError) naming the file and what is wrong.
    """
    path = Path(path)
    where = str(path)
    doc = _read_doc(path)
    learner = _get(doc, "learner", where)
    version = _version(doc.get("version"))
    objective, n_features, base = _header(learner, where, version)
    model, trees, tree_weights = _trees(learner, where)
    n_kept, best = _kept_trees(learner, model, len(trees), where, use_best_iteration)
    try:  # before the trees are read (100,000 stumps take 13 s)
        check_round_count(n_kept, f"{where}: the model")
    except ModelFormatError as exc:
        raise XGBoostFormatError(str(exc)) from None
    builder = ForestBuilder(n_features, base_score=base, aggregation="sum")
    n_nodes = 0
    for t, tree in enumerate(trees[:n_kept]):
        arrays = _read_tree(tree, f"{where}: trees[{t}]", n_features)
        if tree_weights is not None:  # DART: each leaf as XGBoost scales it, in float32
            leaf = arrays["feature"] < 0
            arrays["value"][leaf] = tree_weights[t] * arrays["value"][leaf].astype(np.float32)
        n_nodes += arrays["feature"].size
        try:
            check_node_count(where, n_nodes)
        except ModelFormatError as exc:
            raise XGBoostFormatError(str(exc)) from None
        builder.add(tree_weight=1.0, **arrays)
    forest: Forest = builder.build()
    kind = OBJECTIVES[objective]
    forest.extra = {"loss": "logistic" if kind == "classifier" else "squared",
                    "xgboost": {"objective": objective, "source": path.name, "version": version,
                                "best_iteration": best, "n_trees_in_file": len(trees)}}
    try:
        forest.validate(where)
    except ModelFormatError as exc:
        raise XGBoostFormatError(str(exc)) from None
    names = learner.get("feature_names") or [f"f{i}" for i in range(n_features)]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise XGBoostFormatError(f"{where}: feature_names must be a list of names")
    if len(names) != n_features:
        raise XGBoostFormatError(f"{where}: {len(names)} feature names for {n_features} features")
    max_depth = forest.max_depth
    params = {"boosting": "newton", "n_trees": forest.n_trees, "max_depth": min(max(1, max_depth), 30)}
    if kind == "regressor":
        params["loss"] = "squared"
    reason = f"{len(trees)} trees read from the XGBoost model"
    if best is not None:
        reason += (f"; cut at its best_iteration={best} to {n_kept} trees, as XGBoost's "
                   "scikit-learn predict does" if n_kept < len(trees) else
                   f" (best_iteration={best}: all kept, as Booster.predict does)")
    return from_forest(kind, forest, names, params, n_trees_reason=reason)
