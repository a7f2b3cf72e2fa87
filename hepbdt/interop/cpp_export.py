"""C++ export: a fitted hepbdt model as one dependency-free C++11 header.

:func:`to_cpp` writes the forest as static const arrays and inline functions
(``evaluate``, ``evaluate_batch`` and, for classifiers, ``probability``) inside a namespace,
for trigger code and frameworks without ROOT. The header includes only the standard
library (``<cmath>``, ``<cstddef>``, ``<cstdint>``, ``<cstring>``; ``<vector>`` and
``<algorithm>`` for the AdaBoostR2 median). TMVA XML is :mod:`hepbdt.interop.tmva_export`.

The header evaluates as hepbdt does, bit for bit. A node sends x to the left when
``x[feature] < threshold`` in float, NaN where ``missing_left`` (a threshold that is not a
float32 value, of a float64 forest, is written as the smallest float32 above it, which
decides every float32 x alike). The header tests that on
integer keys: a float's bits mapped to a uint32 of the same order (-0.0 and 0.0 alike), NaN
to 0 or 2^32 - 1 as the node sends it left or right. An event's keys are computed once,
one per "key row" (a feature and a NaN direction that some split uses), so a node is one
integer compare, without a NaN branch, that no floating-point option changes
(``-ffinite-math-only``, ``-march=native``, any ``-ffp-contract``). Trees are stored as
hepbdt's own fast path stores them: complete trees of the forest's depth ("dense": slot p
has children 2p+1 and 2p+2, no child indices) when hepbdt uses that layout (``dense_fits``)
and it takes at most 2 slots per node, else as ``forest_``'s flat nodes ("sparse": node k
is node k of ``forest_``; leaves point to themselves). For "sum" and "weighted_mean" the
leaf values are stored already multiplied by their tree's weight (the product hepbdt's
kernels form, rounded once in double), so the score is a sum of additions in tree order
from 0.0: no multiply-add can be contracted. The sums of tree weights are constants,
computed as numpy computes them. ``-ffast-math`` is the exception: its reassociation and
reciprocal division change the last bits. ``probability`` calls ``std::exp``, whose last
bit may differ from numpy's (2 ulp at most).

Speed (g++ 12 ``-O2``, one thread, AMD EPYC at 2.6 GHz, 100k events x 28 features, us per
event). ``evaluate`` walks GROUP dense trees (SPARSE_GROUP sparse ones) side by side, their
loads independent, each step without a branch: 1.5 for 1000 trees of depth 3, 0.83 for 200
of depth 6 (4.3 and 1.6 before keys and groups of 8; the 1000 additions in tree order take
1.2 alone), sparse 3.1 and 1.5. Measured and dropped: nested ``if`` per tree (as treelite
and m2cgen write them; 2.9 and 7.1, branches mispredicted, 19 s to compile 200 trees of
depth 6) and every node of a tree tested, thresholds in the code (3.8 for depth 3, 19 s).
``evaluate_batch`` of a dense sum or weighted mean takes blocks of up to MAX_BLOCK events,
as hepbdt's kernel does: the block's keys key row by key row, the top TOP_LEVELS levels of
a tree tested for the whole block (a loop the compiler vectorises; a 128-entry table maps
the 7 bits to the slot reached), the levels below walked LANES events side by side: 0.92
and 0.71 (0.73 and 0.79 with ``-march=native``). The median, sparse trees and forests of
more than MAX_KEY_ROWS key rows call ``evaluate`` event by event.

Size: about 21 bytes of header text per dense slot (a complete tree of depth d has
2^(d+1) - 1) or 42 per sparse node: 0.35 MB for 1000 trees of depth 3, 0.51 MB for 200 of
depth 6, each compiled by g++ -O2 in about half a second. Program data: 6 bytes an inner
slot and 8 a leaf slot (dense), 22 bytes a node (sparse). Stack: ``evaluate`` keeps 4 bytes
a key row (keys are computed where read beyond MAX_KEY_ROWS rows), ``evaluate_batch`` at
most 33 KiB. Forests of more than ``MAX_CPP_NODES`` (5 million) nodes are refused: compilers
take minutes and gigabytes on initialisers that large (use ONNX or TMVA XML for them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._sklearn import fitted_params, not_fitted
from .._util import atomic_write_text, feature_names_of, is_classifier
from .._version import __version__
from ..engine.predict import DenseForest, dense_fits
from ..model import Forest, float32_thresholds, from_tmva_two_class, half_tree_weight
from .tmva_export import check_one_score

__all__ = ["to_cpp", "CppExportError", "MAX_CPP_NODES"]

MAX_CPP_NODES = 5_000_000  # larger forests are refused (compile time and memory)
GROUP = 8  # dense trees walked side by side for one event (8 best of 4 to 24)
SPARSE_GROUP = 16  # sparse trees walked side by side (a step has one more load: 16 best of 4 to 16)
LANES = 8  # events walked side by side below a block's top levels (8 best of 1 to 16)
TOP_LEVELS = 3  # levels of a dense tree tested for a whole block at once (128 bit patterns)
MAX_BLOCK = 64  # events a block of evaluate_batch (64 and 128 measured alike, 256 slower)
BLOCK_KEY_BYTES = 16384  # fewer events a block where the block's keys would take more
MAX_KEY_ROWS = 1024  # more key rows: keys computed where read, evaluate_batch event by event
LINE_WIDTH = 100  # array initialisers are wrapped at this many characters
DENSE_SLOTS_PER_NODE = 2  # a dense slot takes about half the header text of a sparse node
COMMENT_WIDTH = 200  # longer option values are cut in the header's comment

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq
""".split())
# Names the header or the standard library needs for themselves: a namespace of that name
# would reopen std or be replaced by a macro of <cmath> or <cstddef>.
RESERVED_NAMES = frozenset({"std", "detail", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF",
                            "HUGE_VALL", "NULL", "errno", "assert", "offsetof",
                            "linux", "unix"})  # g++'s default GNU modes define these as 1
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class CppExportError(ValueError):
    """A model or namespace that cannot be written as a C++ header that evaluates as hepbdt."""


def to_cpp(model: Any, path: str | os.PathLike, *, namespace: str | None = None,
           file_name: str | None = None) -> dict[str, Any]:
    """Write a fitted model as a dependency-free C++11 header (atomically).

    Parameters
    ----------
    model : a fitted ``BDTClassifier`` or ``BDTRegressor`` (trained, loaded, or read with
        ``from_tmva_xml`` / ``from_xgboost_json``).
    path : the header to write (e.g. ``"model.hpp"``).
    namespace : the C++ namespace of the model (ASCII letters, digits and underscores, not
        starting with a digit, not a keyword, not reserved); by default derived from the
        file name (``"my-model.hpp"`` gives ``my_model``).
    file_name : the header's name as its opening comment gives it; by default ``path``'s
        (give the final name when ``path`` is a temporary one that is renamed after).

    The header defines, in that namespace, ``n_features``, ``n_trees``, ``feature_names``
    and ``double evaluate(const float* x)``: ``decision_function`` (classifier) or
    ``predict`` (regressor) of one event of ``n_features`` floats in the model's input
    order (NaN for missing values), equal bit for bit (a model read from a TMVA two-class
    file, whose Reader answers -999 for an event with a NaN input and whose
    decision_function refuses one: NaN); ``void evaluate_batch(const float*
    x, std::size_t n, double* out)`` for n events row by row; and for classifiers ``double
    probability(const float* x)``, ``predict_proba(X)[:, 1]`` (to within the last bits of
    ``std::exp`` for gradient boosting; exactly for the AdaBoost family). All of it lies in
    an inline namespace named by a digest of the model's code; the include guard carries it
    and a checksum of the namespace: two models given one namespace each score with their
    own trees from two source files, in one source file a call is ambiguous (a compile
    error), and one model given the namespaces ``bdt`` and ``BDT`` is both.

    Returns
    -------
    dict with ``path``, ``namespace``, ``n_trees``, ``n_nodes``, ``n_features``,
    ``max_depth``, ``aggregation``, ``layout`` ("dense" or "sparse", see the module
    docstring), ``functions`` and ``bytes`` (the header's size).

    Raises
    ------
    NotFittedError before fit; TypeError for an object that is not a hepbdt model;
    CppExportError for an invalid namespace, a forest without trees, of more than
    ``MAX_CPP_NODES`` nodes, or with a NaN threshold. Nothing is written then.
    """
    forest = _check_fitted(model)
    name = namespace_for(namespace, path)
    _check_exportable(forest)
    text = _header(model, forest, name, file_name or Path(path).name)
    atomic_write_text(path, text)
    functions = ["evaluate", "evaluate_batch"] + (["probability"] if is_classifier(model) else [])
    return {"path": str(path), "namespace": name, "n_trees": forest.n_trees,
            "n_nodes": forest.n_nodes, "n_features": int(forest.n_features),
            "max_depth": forest.max_depth, "aggregation": forest.aggregation,
            "layout": _layout(forest), "functions": functions, "bytes": len(text.encode("utf-8"))}


# -- checks --------------------------------------------------------------------------------

def _check_fitted(model: Any) -> Forest:
    """The model's forest; NotFittedError for an unfitted estimator, TypeError for others."""
    forest = getattr(model, "forest_", None)
    if isinstance(forest, Forest):
        check_one_score(forest, "the C++ export")
        return forest
    if hasattr(model, "get_params") and hasattr(model, "_estimator_type"):
        raise not_fitted(f"this {type(model).__name__} is not fitted yet; call fit (or "
                         "load_model, from_tmva_xml, from_xgboost_json) before to_cpp")
    raise TypeError(f"expected a fitted hepbdt BDTClassifier or BDTRegressor, got "
                    f"{type(model).__name__}")


def _check_exportable(forest: Forest) -> None:
    """Refuse forests without trees, too large, or with a NaN threshold or leaf value."""
    if forest.n_trees < 1:
        raise CppExportError("the model has no trees; there is nothing to write as C++")
    if forest.n_nodes > MAX_CPP_NODES:
        raise CppExportError(
            f"the forest has {forest.n_nodes:,} nodes, more than the {MAX_CPP_NODES:,} that "
            "to_cpp writes (C++ compilers take minutes and gigabytes on initialisers that "
            "large); export it with to_onnx or to_tmva_xml instead")
    split = forest.feature >= 0
    bad = split & np.isnan(forest.threshold)
    if bad.any():
        raise CppExportError(f"node {int(np.flatnonzero(bad)[0])} has a NaN threshold; a split "
                             "needs a number (or +-inf)")
    if not (np.all(np.isfinite(forest.value[~split])) and np.all(np.isfinite(forest.tree_weights))
            and np.isfinite(forest.base_score)):
        raise CppExportError("leaf values, tree weights and the base score must be finite")


def namespace_for(namespace: str | None, path: str | os.PathLike) -> str:
    """The given namespace, checked, or one derived from the file name."""
    rule = ("a C++ namespace must be an ASCII identifier (letters, digits and underscores, "
            "not starting with a digit), not a C++ keyword, without '__' and not starting with "
            "'_' and a capital letter (both reserved), and not one of "
            f"{sorted(RESERVED_NAMES)}")
    if namespace is None:
        return _derived_namespace(Path(path).name)
    if not isinstance(namespace, str) or not _IDENTIFIER.match(namespace):
        raise CppExportError(f"namespace {namespace!r} is not valid: {rule} (e.g. 'my_bdt')")
    if namespace in CPP_KEYWORDS:
        raise CppExportError(f"namespace {namespace!r} is a C++ keyword: {rule}")
    if "__" in namespace or re.match(r"_[A-Z]", namespace) or namespace in RESERVED_NAMES:
        raise CppExportError(f"namespace {namespace!r} is reserved: {rule}")
    return namespace


def _derived_namespace(file_name: str) -> str:
    """A valid namespace from a file name: its stem with every other character as '_'."""
    stem = file_name.split(".")[0]
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", stem)).strip("_")
    if not name:
        return "hepbdt_model"
    if name[0].isdigit():
        name = "model_" + name
    if name in CPP_KEYWORDS or name in RESERVED_NAMES:
        name += "_model"
    return name


# -- the arrays ----------------------------------------------------------------------------

# A member of the header's ``detail::forest``: (C++ type, name, values, literal kind).
Member = tuple[str, str, np.ndarray, str]


def _layout(forest: Forest) -> str:
    """The header's layout: "dense" (complete trees, hepbdt's own fast path) when hepbdt
    would use it and it has at most DENSE_SLOTS_PER_NODE slots per node (a header no larger
    than the sparse one), else "sparse" (the flat nodes of forest_)."""
    depth = forest.max_depth
    slots = forest.n_trees * ((2 << depth) - 1)
    small = depth >= 1 and slots <= DENSE_SLOTS_PER_NODE * forest.n_nodes
    return "dense" if small and dense_fits(forest.n_trees, forest.n_nodes, depth) else "sparse"


def _leaf_factor(forest: Forest) -> np.ndarray:
    """What each tree's leaf values are multiplied by in the header: the tree weight ("sum",
    "weighted_mean": the product hepbdt's kernels form), or 1 (the median)."""
    if forest.aggregation == "weighted_median":
        return np.ones(forest.n_trees)
    return forest.tree_weights


def _index_type(largest: int) -> tuple[str, type]:
    """The C++ and numpy types of indices up to ``largest``: uint16 when they fit."""
    if largest <= np.iinfo(np.uint16).max:
        return "std::uint16_t", np.uint16
    return "std::int32_t", np.int32


def _order_keys(threshold: np.ndarray) -> np.ndarray:
    """The header's ``order_key`` of thresholds (not NaN, see model.float32_thresholds): their
    order as uint32, with -0.0 and 0.0 both 2^31."""
    bits = float32_thresholds(threshold).view(np.uint32).astype(np.int64)
    magnitude = bits & 0x7FFFFFFF
    return np.where(bits >> 31 == 1, 0x80000000 - magnitude, 0x80000000 + magnitude).astype(np.uint32)


def _key_rows(feature: np.ndarray, missing_left: np.ndarray, split: np.ndarray,
              n_features: int) -> tuple[np.ndarray, int, np.ndarray]:
    """(row_feature, n_rows_nan_left, the key row of every node) for nodes whose splits are
    ``split``: one key row per (feature, NaN direction) that a split uses, those that send
    NaN left first; row 0 for the other nodes (one row feature 0 when nothing splits)."""
    code = np.where(missing_left, 0, n_features) + feature.astype(np.int64)
    used = np.unique(code[split])
    if used.size == 0:
        used = np.array([n_features], dtype=np.int64)
    node_row = np.where(split, np.searchsorted(used, code), 0)
    return np.where(used < n_features, used, used - n_features), int(np.sum(used < n_features)), node_row


def _key_members(row_feature: np.ndarray, node_row: np.ndarray, threshold: np.ndarray,
                 split: np.ndarray, n_features: int) -> list[Member]:
    """threshold_key (0 where nothing splits: no key is below it) and key_row of every node,
    row_feature of every key row."""
    keys = np.where(split, _order_keys(np.where(split, threshold, 0.0)), 0)
    row_type, row_dtype = _index_type(row_feature.size - 1)
    feature_type, feature_dtype = _index_type(n_features - 1)
    return [
        ("std::uint32_t", "threshold_key", keys.astype(np.uint32), "uint"),
        (row_type, "key_row", node_row.astype(row_dtype), "int"),
        (feature_type, "row_feature", row_feature.astype(feature_dtype), "int"),
    ]


def _sparse_members(forest: Forest) -> tuple[list[Member], int]:
    """(members, n_rows_nan_left): forest_'s nodes; leaves point to themselves (child 2k and
    2k+1 are k) and compare below threshold key 0, so every step takes child 2k+1."""
    split = forest.feature >= 0
    nodes = np.arange(forest.n_nodes, dtype=np.int64)
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.tree_offsets))
    value = _leaf_factor(forest)[tree_of] * forest.value
    child = np.column_stack([np.where(split, forest.left, nodes), np.where(split, forest.right, nodes)])
    tree_depth = np.maximum.reduceat(forest.node_depths(), forest.tree_offsets[:-1])
    group_depth = np.maximum.reduceat(tree_depth, np.arange(0, forest.n_trees, SPARSE_GROUP))
    row_feature, n_left, node_row = _key_rows(forest.feature, forest.missing_left, split,
                                              forest.n_features)
    members = _key_members(row_feature, node_row, forest.threshold, split, forest.n_features)
    return members + [
        ("std::int32_t", "child", child.ravel(), "int"),
        ("double", "value", np.where(split, 0.0, value), "double"),
        ("std::int32_t", "tree_root", forest.tree_offsets[:-1], "int"),
        ("std::int32_t", "group_depth", group_depth, "int"),
    ], n_left


def _dense_members(forest: Forest) -> tuple[list[Member], int]:
    """(members, n_rows_nan_left): every tree as a complete tree of the forest's depth
    (hepbdt's DenseForest): slot p has children 2p+1 and 2p+2; a leaf above the last level
    sends every event right (threshold key 0) to copies of itself."""
    dense = DenseForest(forest, forest.max_depth)
    split = ~np.isnan(dense.threshold)  # _check_exportable refused NaN thresholds of splits
    row_feature, n_left, node_row = _key_rows(dense.feature, dense.missing_left, split,
                                              forest.n_features)
    members = _key_members(row_feature, node_row, dense.threshold, split, forest.n_features)
    return members + [("double", "value", _leaf_factor(forest)[:, None] * dense.leaf, "double")], n_left


def _top_leaf(top: int) -> np.ndarray:
    """For the 2^top - 1 nodes of a complete tree's top levels: the slot (less 2^top - 1) at
    level ``top`` that an event reaches, by the bit pattern of the nodes sending it left."""
    n_top = (1 << top) - 1
    slots = []
    for bits in range(1 << n_top):
        p = 0
        for _ in range(top):
            p = 2 * p + 2 - ((bits >> p) & 1)
        slots.append(p - n_top)
    return np.array(slots, dtype=np.uint8)


def _double_literal(value: float) -> str:
    """An exact double literal: Python's shortest round-trip digits, HUGE_VAL for inf."""
    value = float(value)
    if np.isinf(value):
        return "HUGE_VAL" if value > 0 else "-HUGE_VAL"
    if np.isnan(value):
        raise CppExportError("a NaN constant cannot be part of the model")
    return repr(value)


def _literals(values: np.ndarray, kind: str) -> list[str]:
    """Each value as a C++ literal ("int", "uint": with a u suffix, "double"); each distinct
    double is formatted once."""
    if kind in ("int", "uint"):
        suffix = "u" if kind == "uint" else ""
        return [f"{v}{suffix}" for v in values.tolist()]
    unique, inverse = np.unique(values, return_inverse=True)
    texts = [_double_literal(v) for v in unique.tolist()]
    out = [texts[i] for i in inverse.ravel().tolist()]
    # np.unique merges -0.0 and 0.0 into whichever sorts first: each zero keeps its own sign
    # (the median's window mean of one zero response is that zero, sign included).
    zeros = np.flatnonzero(values == 0)
    for i, negative in zip(zeros.tolist(), np.signbit(values[zeros]).tolist(), strict=True):
        out[i] = "-0.0" if negative else "0.0"
    return out


def _wrapped(items: list[str], indent: str = "    ") -> list[str]:
    """``items`` joined by commas in lines of at most LINE_WIDTH characters."""
    lines: list[str] = []
    current: list[str] = []
    width = len(indent)
    for item in items:
        if current and width + len(item) + 2 > LINE_WIDTH:
            lines.append(indent + ", ".join(current) + ",")
            current, width = [], len(indent)
        current.append(item)
        width += len(item) + 2
    if current:
        lines.append(indent + ", ".join(current))
    return lines


def _array_definition(c_type: str, name: str, values: np.ndarray, kind: str) -> list[str]:
    """The out-of-class definition of ``forest<Unused>::name``, wrapped."""
    return ["template <typename Unused>", f"const {c_type} forest<Unused>::{name}[] = {{",
            *_wrapped(_literals(np.asarray(values).ravel(), kind)), "};", ""]


# -- the header ----------------------------------------------------------------------------

def _string_literal(text: str) -> str:
    """A C string literal of ``text`` (UTF-8; octal escapes, which never run on, for anything
    but printable ASCII, and '?' escaped against trigraphs)."""
    out = []
    for byte in str(text).encode("utf-8"):
        char = chr(byte)
        if char in '"\\?' or not 32 <= byte < 127:
            out.append(f"\\{byte:03o}" if char not in '"\\?' else "\\" + char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _comment_value(value: Any) -> str:
    """A value for a // comment: JSON-like ASCII on one line that cannot end in a backslash
    (which would continue the comment) or contain a trigraph."""
    if isinstance(value, np.generic):
        value = value.item()
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = json.dumps(str(value), ensure_ascii=True)
    text = text.replace("??", "?\\u003f")
    return text if len(text) <= COMMENT_WIDTH else text[:COMMENT_WIDTH - 3] + "..."


def _comment_key(key: Any) -> str:
    """A forest.extra key for a // comment: as it is when it is a plain name, else as
    _comment_value writes it (a model file's key may hold a line break, which would end
    the comment and put the rest of the key into the header as code)."""
    key = str(key)
    return key if re.fullmatch(r"[A-Za-z0-9_.\-]{1,80}", key) else _comment_value(key)


def _scalar(value: Any) -> bool:
    """Whether a forest.extra value is small enough for the header's comment."""
    return isinstance(value, str | int | float | bool | np.generic) or value is None


def _description(model: Any, forest: Forest, names: list[str], file_name: str,
                 layout: str) -> list[str]:
    """The header's opening comment: what it is, how to use it, the model and its features."""
    kind = type(model).__name__
    trees = ("complete trees (hepbdt's dense layout)." if layout == "dense"
             else "forest_'s nodes (leaves point to themselves).")
    lines = [
        f"A hepbdt {kind} as a C++11 header, written by hepbdt {__version__} "
        "(hepbdt.interop.to_cpp) as",
        f"  {_comment_value(file_name)}",
        "",
        "Standard library only. evaluate(x) takes n_features floats in the order of",
        "feature_names (NaN for a missing value) and equals hepbdt's "
        + ("decision_function" if is_classifier(model) else "predict") + " bit for bit.",
        "Do not compile with -ffast-math (-fassociative-math, -freciprocal-math): the score is",
        "a sum in a fixed order (of leaf values already multiplied by their tree weight, so",
        "that no multiply-add can be contracted, whatever -ffp-contract says). Nodes compare",
        "integer keys of the floats' bits (NaN included), so -ffinite-math-only changes nothing.",
        "Trees are stored as " + trees,
        "",
        f"Model: {kind}, aggregation {forest.aggregation!r}, {forest.n_trees} trees, "
        f"{forest.n_nodes} nodes, depth {forest.max_depth},",
        f"base score {_double_literal(forest.base_score)}",
        "Forest extra:",
        *[f"  {_comment_key(k)} = {_comment_value(v)}" for k, v in forest.extra.items()
          if _scalar(v)],
    ]
    if is_classifier(model) and getattr(model, "classes_", None) is not None:
        classes = list(model.classes_)
        lines.append(f"Classes: background = {_comment_value(classes[0])}, signal = "
                     f"{_comment_value(classes[1])} (probability(x) is P(signal))")
    params = fitted_params(model)
    lines.append("Options:")
    lines += [f"  {k} = {_comment_value(v)}" for k, v in sorted(params.items())]
    definitions = getattr(model, "feature_definitions_", None) or {}
    lines.append("Features (input order):")
    for j, name in enumerate(names):
        definition = definitions.get(name)
        extra = f" = {_comment_value(definition)}" if definition is not None else ""
        lines.append(f"  {j}: {_comment_value(name)}{extra}")
    return [("// " + line).rstrip() for line in lines]


def _data_block(forest: Forest, layout: str, members: list[Member],
                n_rows_nan_left: int) -> list[str]:
    """The ``detail::forest`` holder: arrays as static members of a class template, so that
    every translation unit that includes the header shares one definition (no ODR issue)."""
    members = [*members, ("double", "tree_weight", forest.tree_weights, "double")]
    n_rows = next(values.size for _, name, values, _ in members if name == "row_feature")
    weighted = forest.aggregation != "weighted_median"
    if layout == "dense":
        about = ["// Tree t is a complete tree of depth `depth`: its slot p (children 2p+1, 2p+2)",
                 "// is threshold_key[t * n_inner + p] etc., its leaf q value[t * (n_inner + 1) + q]."]
    else:
        about = ["// Node k is node k of forest_; its children are child[2k] (left) and child[2k+1]",
                 "// (right). Leaves point to themselves and have threshold key 0, value their output."]
    lines = [
        *about,
        "// A node sends event x to the left when row_key(x, key_row) < threshold_key (see",
        "// order_key); key row r reads feature row_feature[r].",
        "// value: leaf outputs already multiplied by their tree's weight (tree_weight, for reference)."
        if weighted else "// value: the trees' leaf outputs; the median weighs the trees with tree_weight.",
        *(["// top_leaf: see leaf_sums_block."] if any(m[1] == "top_leaf" for m in members) else []),
        "template <typename Unused = void>",
        "struct forest {",
        *[f"  static const {c_type} {name}[];" for c_type, name, _, _ in members],
        "};",
        "",
    ]
    for c_type, name, values, kind in members:
        lines += _array_definition(c_type, name, values, kind)
    lines += [f"constexpr int n_rows = {n_rows};",
              f"constexpr int n_rows_nan_left = {n_rows_nan_left};"]
    return lines


_KEYS = """\
constexpr int group_size = @GROUP@;
constexpr int n_grouped = n_trees - n_trees % group_size;  // trees walked group_size at a time

// Nodes compare integer keys, not floats. order_key maps a float's bits to an unsigned
// integer of the same order (-0.0 and 0.0 alike, -inf 2^23, +inf 2^32 - 2^23) and NaN to
// nan_key: 0, below every threshold key (the node sends NaN left), or 2^32 - 1, above all
// (right). Key row r is feature row_feature[r] for nodes with one NaN direction: the first
// n_rows_nan_left rows send NaN left. Integer compares need no NaN branch and mean the same
// under any floating-point option (-ffinite-math-only included).
inline std::uint32_t order_key(float v, std::uint32_t nan_key) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return nan_key;
  return (bits >> 31) != 0u ? 0x80000000u - magnitude : 0x80000000u + magnitude;
}

// The key of event x in key row r.
inline std::uint32_t row_key(const float* x, int row) {
  return order_key(x[forest<>::row_feature[row]], row < n_rows_nan_left ? 0u : 0xffffffffu);
}
"""

_ROW_KEYS = """\
// The keys of event x, one a key row.
inline void make_keys(const float* x, std::uint32_t* key) {
  for (int r = 0; r < n_rows; ++r) key[r] = row_key(x, r);
}
"""

_DIRECT_KEYS = """\
// The keys of event x, computed where a node reads them (more than @MAX@ key rows: no array
// of them on the stack).
struct direct_keys {
  const float* x;
  std::uint32_t operator[](std::size_t row) const { return row_key(x, static_cast<int>(row)); }
};
"""

_DENSE_WALK = """\
constexpr int depth = @DEPTH@;
constexpr int n_inner = (1 << depth) - 1;

// The slot below slot p of a tree whose arrays start at threshold_key and key_row: 2p+1
// (left) when the event's key is below the threshold key, else 2p+2.
template <typename Keys>
inline std::size_t next_slot(const Keys& key, const std::uint32_t* threshold_key,
                             const @ROW@* key_row, std::size_t p) {
  return 2 * p + 2 - static_cast<std::size_t>(key[key_row[p]] < threshold_key[p]);
}

// visit(t, weighted leaf value of tree t) for every tree t in order. group_size trees are
// walked side by side (independent loads), depth steps each, without a branch.
template <typename Keys, typename Visit>
inline void visit_leaves(const Keys& key, Visit& visit) {
  typedef forest<> f;
  for (int t = 0; t < n_grouped; t += group_size) {
    const std::uint32_t* threshold_key = f::threshold_key + t * n_inner;
    const @ROW@* key_row = f::key_row + t * n_inner;
    const double* leaf = f::value + t * (n_inner + 1);
@INIT@
    for (int level = 0; level < depth; ++level) {
@STEPS@
    }
@VISITS@
  }
@REST@}
"""

_DENSE_REST = """  for (int t = n_grouped; t < n_trees; ++t) {
    std::size_t p = 0;
    for (int level = 0; level < depth; ++level)
      p = next_slot(key, f::threshold_key + t * n_inner, f::key_row + t * n_inner, p);
    visit(t, f::value[t * (n_inner + 1) + p - n_inner]);
  }
"""

_SPARSE_WALK = """\
// The node below node k: child[2k] (left) when the event's key is below the threshold key,
// else child[2k+1]; a leaf's threshold key is 0, so it stays where it is.
template <typename Keys>
inline std::size_t next_node(const Keys& key, std::size_t k) {
  typedef forest<> f;
  const std::size_t right = 1 - static_cast<std::size_t>(key[f::key_row[k]] < f::threshold_key[k]);
  return static_cast<std::size_t>(f::child[2 * k + right]);
}

// visit(t, weighted leaf value of tree t) for every tree t in order. group_size trees are
// walked side by side (independent loads) for as many steps as the group's deepest tree.
template <typename Keys, typename Visit>
inline void visit_leaves(const Keys& key, Visit& visit) {
  typedef forest<> f;
  for (int t = 0; t < n_grouped; t += group_size) {
@INIT@
    for (int step = 0; step < f::group_depth[t / group_size]; ++step) {
@STEPS@
    }
@VISITS@
  }
@REST@}
"""

_SPARSE_REST = """  for (int t = n_grouped; t < n_trees; ++t) {
    std::size_t k = static_cast<std::size_t>(f::tree_root[t]);
    for (int step = 0; step < f::group_depth[t / group_size]; ++step) k = next_node(key, k);
    visit(t, f::value[k]);
  }
"""

_LEAF_SUM = """\
// Adds the weighted leaf values in tree order, from 0.0 (hepbdt's predict_raw).
struct leaf_sum {
  double sum;
  void operator()(int, double value) { sum += value; }
};

template <typename Keys>
inline double weighted_leaf_sum(const Keys& key) {
  leaf_sum visit = {0.0};
  visit_leaves(key, visit);
  return visit.sum;
}
"""

_MEDIAN = """\
// Keeps each tree's leaf value.
struct leaf_values {
  double* response;
  void operator()(int tree, double value) { response[tree] = value; }
};

// TMVA's AdaBoostR2 response as hepbdt computes it (model._weighted_median_score): the mean
// of the stably sorted responses around their weighted median, from prefix sums.
template <typename Keys>
inline double weighted_median(const Keys& key) {
  typedef forest<> f;
  std::vector<double> response(n_trees);
  std::vector<int> order(n_trees);
  leaf_values visit = {response.data()};
  visit_leaves(key, visit);
  for (int t = 0; t < n_trees; ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&response](int a, int b) { return response[a] < response[b]; });
  int k = 1;  // numpy's argmax of a row without a true value is 0
  double cumulative = 0.0;
  for (int j = 0; j < n_trees; ++j) {
    cumulative = j == 0 ? f::tree_weight[order[0]] : cumulative + f::tree_weight[order[j]];
    if (cumulative > half_weight) {
      k = j + 1;
      break;
    }
  }
  const int half = n_trees / 6;
  const int lo = k - half - 1 > 0 ? k - half - 1 : 0;
  const int hi = k + half < n_trees ? k + half : n_trees;
  double below_lo = 0.0;
  double below_hi = 0.0;
  for (int j = 0; j < hi; ++j) {
    below_hi = j == 0 ? response[order[0]] : below_hi + response[order[j]];
    if (j + 1 == lo) below_lo = below_hi;
  }
  return (below_hi - below_lo) / static_cast<double>(hi - lo);
}
"""

_BLOCK = """\
constexpr int block = @BLOCK@;
constexpr int top = @TOP@;
constexpr int n_top = (1 << top) - 1;
constexpr int lanes = @LANES@;

// key - 2^31 as a signed integer: a block's keys are compared in vector registers, whose
// integer compares (SSE2, AVX2) are signed.
inline std::int32_t signed_key(std::uint32_t key) {
  return key >= 0x80000000u ? static_cast<std::int32_t>(key - 0x80000000u)
                            : static_cast<std::int32_t>(key) - 0x7fffffff - 1;
}

@STEP@// weighted_leaf_sum of `size` (1 to block) events of x, row by row, into sum, as hepbdt's
// kernel computes it: the block's keys are stored key row by key row (padded with the last
// event); a tree's top levels are tested for the whole block at once (contiguous loads that
// the compiler vectorises; bit p of top_bits[i] is set where node p sends event i left, and
// top_leaf[top_bits[i]] + n_top is the slot reached), the levels below walked, lanes events
// side by side. Each event's sum adds the trees in order from 0.0.
inline void leaf_sums_block(const float* x, std::size_t size, double* sum) {
  typedef forest<> f;
  std::int32_t key[n_rows * block];
  for (int i = 0; i < block; ++i) {
    const std::size_t event = static_cast<std::size_t>(i) < size ? static_cast<std::size_t>(i)
                                                                  : size - 1;
    const float* row = x + event * static_cast<std::size_t>(n_features);
    for (int r = 0; r < n_rows; ++r) key[r * block + i] = signed_key(row_key(row, r));
  }
  double block_sum[block] = {};
  std::uint32_t top_bits[block];
  for (int t = 0; t < n_trees; ++t) {
    const std::uint32_t* threshold_key = f::threshold_key + t * n_inner;
    const @ROW@* key_row = f::key_row + t * n_inner;
    const double* leaf = f::value + t * (n_inner + 1);
@TOP_ROWS@
    for (int i = 0; i < block; ++i) {
@BITS@
    }
@LEAVES@
  }
  for (std::size_t i = 0; i < size; ++i) sum[i] = block_sum[i];
}
"""

_BLOCK_STEP = """\
// next_slot for the event of a block whose key in row r is key[r * block].
inline std::size_t next_block_slot(const std::int32_t* key, const std::uint32_t* threshold_key,
                                   const @ROW@* key_row, std::size_t p) {
  const bool left = key[key_row[p] * block] < signed_key(threshold_key[p]);
  return 2 * p + 2 - static_cast<std::size_t>(left);
}

"""

_BLOCK_LEAVES = """\
    for (int i = 0; i < block; ++i) block_sum[i] += leaf[f::top_leaf[top_bits[i]]];"""

_BLOCK_WALK = """\
    for (int i = 0; i < block; i += lanes) {
@INIT@
      for (int level = top; level < depth; ++level) {
@STEPS@
      }
@SUMS@
    }"""


def _fill(template: str, **parts: str) -> str:
    """``template`` with each @NAME@ replaced by ``parts[name.lower()]``."""
    for name, text in parts.items():
        template = template.replace(f"@{name.upper()}@", text)
    assert "@" not in template, template
    return template


def _side_by_side(line: str, count: int, indent: str) -> str:
    """``line`` (with {j} for 0, 1, ...) once for each of ``count`` trees or events; the
    offsets of the first written without their zeros."""
    lines = [line.format(j=j) for j in range(count)]
    for zero, none in ((" + 0 * n_inner", ""), ("0 * (n_inner + 1) + ", ""), (" + 0]", "]"),
                       (" + 0,", ","), ("[t + 0]", "[t]")):
        lines[0] = lines[0].replace(zero, none)
    return "\n".join(indent + text for text in lines)


def _dense_walk(forest: Forest, row_type: str) -> str:
    """visit_leaves for the dense layout, GROUP trees side by side."""
    step = ("p{j} = next_slot(key, threshold_key + {j} * n_inner, key_row + {j} * n_inner, "
            "p{j});")
    rest = _DENSE_REST if forest.n_trees % GROUP else ""
    return _fill(_DENSE_WALK, depth=str(forest.max_depth), row=row_type, rest=rest,
                 init="    std::size_t " + ", ".join(f"p{j} = 0" for j in range(GROUP)) + ";",
                 steps=_side_by_side(step, GROUP, "      "),
                 visits=_side_by_side("visit(t + {j}, leaf[{j} * (n_inner + 1) + p{j} - n_inner]);",
                                      GROUP, "    "))


def _sparse_walk(forest: Forest) -> str:
    """visit_leaves for the sparse layout, SPARSE_GROUP trees side by side."""
    count = SPARSE_GROUP
    return _fill(_SPARSE_WALK, rest=_SPARSE_REST if forest.n_trees % count else "",
                 init=_side_by_side("std::size_t k{j} = static_cast<std::size_t>(f::tree_root[t + {j}]);",
                                    count, "    "),
                 steps=_side_by_side("k{j} = next_node(key, k{j});", count, "      "),
                 visits=_side_by_side("visit(t + {j}, f::value[k{j}]);", count, "    "))


def _block_size(n_rows: int) -> int:
    """Events a block of evaluate_batch: a power of two from LANES to MAX_BLOCK whose keys
    (4 bytes an event and key row) take at most BLOCK_KEY_BYTES, else LANES."""
    block = MAX_BLOCK
    while block > LANES and 4 * n_rows * block > BLOCK_KEY_BYTES:
        block //= 2
    return block


def _block_code(forest: Forest, row_type: str, n_rows: int) -> str:
    """leaf_sums_block: the dense layout's blocks of events (see _BLOCK)."""
    top = min(TOP_LEVELS, forest.max_depth)
    n_top = (1 << top) - 1
    top_rows = _side_by_side("const std::int32_t* row{j} = key + key_row[{j}] * block;\n"
                             "    const std::int32_t cut{j} = signed_key(threshold_key[{j}]);",
                             n_top, "    ")
    bits = ["static_cast<std::uint32_t>(row0[i] < cut0)"]
    bits += [f"(static_cast<std::uint32_t>(row{p}[i] < cut{p}) << {p})" for p in range(1, n_top)]
    bits_text = "      top_bits[i] = " + "\n                  | ".join(bits) + ";"
    step = ""
    if top == forest.max_depth:
        leaves = _BLOCK_LEAVES
    else:
        step = _BLOCK_STEP.replace("@ROW@", row_type)
        leaves = _fill(_BLOCK_WALK,
                       init=_side_by_side("std::size_t p{j} = n_top + f::top_leaf[top_bits[i + {j}]];",
                                          LANES, "      "),
                       steps=_side_by_side("p{j} = next_block_slot(key + i + {j}, threshold_key, "
                                           "key_row, p{j});", LANES, "        "),
                       sums=_side_by_side("block_sum[i + {j}] += leaf[p{j} - n_inner];", LANES,
                                          "      "))
    return _fill(_BLOCK, block=str(_block_size(n_rows)), top=str(top), lanes=str(LANES),
                 row=row_type, top_rows=top_rows, bits=bits_text, leaves=leaves, step=step)


def _row_type(members: list[Member]) -> str:
    """The C++ type of key_row."""
    return next(c_type for c_type, name, _, _ in members if name == "key_row")


def _blocked(forest: Forest, layout: str, n_rows: int) -> bool:
    """Whether evaluate_batch takes blocks of events (else it calls evaluate event by event):
    dense trees, keys kept in arrays, a sum or weighted mean."""
    return (layout == "dense" and n_rows <= MAX_KEY_ROWS
            and forest.aggregation != "weighted_median")


def _walk_code(forest: Forest, layout: str, members: list[Member], n_rows: int) -> list[str]:
    """The detail functions: keys, the walk, the aggregation, the blocks of events."""
    row_type = _row_type(members)
    keys = (_ROW_KEYS if n_rows <= MAX_KEY_ROWS
            else _DIRECT_KEYS.replace("@MAX@", str(MAX_KEY_ROWS)))
    walk = _dense_walk(forest, row_type) if layout == "dense" else _sparse_walk(forest)
    median = forest.aggregation == "weighted_median"
    group = GROUP if layout == "dense" else SPARSE_GROUP
    code = [_KEYS.replace("@GROUP@", str(group)), keys, walk, _MEDIAN if median else _LEAF_SUM]
    if _blocked(forest, layout, n_rows):
        code.append(_block_code(forest, row_type, n_rows))
    return code


def _score(forest: Forest) -> tuple[list[str], str, str | None]:
    """(constants, the C++ expression of the score of keys ``key``, the expression of the
    score from a weighted leaf sum ``out[i]``, None for the median)."""
    if forest.aggregation == "sum":
        return ([f"constexpr double base_score = {_double_literal(forest.base_score)};"],
                "detail::weighted_leaf_sum(key) + detail::base_score",
                "out[i] + detail::base_score")
    if forest.aggregation == "weighted_mean":
        total = float(forest.tree_weights.sum())  # as numpy sums them in Forest.raw_score
        if total == 0:
            return [], "detail::weighted_leaf_sum(key)", "out[i]"  # raw_score: no division by 0
        return ([f"constexpr double total_weight = {_double_literal(total)};"],
                "detail::weighted_leaf_sum(key) / detail::total_weight",
                "out[i] / detail::total_weight")
    half = half_tree_weight(forest.tree_weights)
    return ([f"constexpr double half_weight = {_double_literal(half)};"],
            "detail::weighted_median(key)", None)


_ANY_NAN = """// Whether one of the event's n_features floats is NaN (by its bits, as the keys).
inline bool any_nan(const float* x) {
  for (int f = 0; f < n_features; ++f) {
    std::uint32_t bits;
    std::memcpy(&bits, x + f, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return true;
  }
  return false;
}
"""


def _public_functions(forest: Forest, layout: str, n_rows: int) -> list[str]:
    """evaluate and evaluate_batch; a model read from a TMVA two-class file scores an event
    with a NaN input NaN (its Reader answers -999 without walking the trees, and the
    model's own decision_function refuses such an event)."""
    _, score, score_of_sum = _score(forest)
    if n_rows <= MAX_KEY_ROWS:
        keys = ["  std::uint32_t key[detail::n_rows];", "  detail::make_keys(x, key);"]
    else:
        keys = ["  const detail::direct_keys key = {x};"]
    no_answer = from_tmva_two_class(forest)
    if no_answer:
        keys = ["  if (detail::any_nan(x)) return std::nan(\"\");  // TMVA's Reader: -999", *keys]
    lines = [
        "// The score of one event: x holds n_features floats in the order of feature_names.",
        "inline double evaluate(const float* x) {", *keys, f"  return {score};", "}", "",
        "// evaluate() of n events, row by row (x is n x n_features, row-major), bit for bit.",
        "inline void evaluate_batch(const float* x, std::size_t n, double* out) {",
        "  const std::size_t stride = static_cast<std::size_t>(n_features);",
    ]
    if _blocked(forest, layout, n_rows):
        lines += [
            "  const std::size_t block = static_cast<std::size_t>(detail::block);",
            "  for (std::size_t start = 0; start < n; start += block) {",
            "    const std::size_t size = n - start < block ? n - start : block;",
            "    detail::leaf_sums_block(x + start * stride, size, out + start);",
            "  }",
        ]
        if score_of_sum != "out[i]":
            lines.append(f"  for (std::size_t i = 0; i < n; ++i) out[i] = {score_of_sum};")
        if no_answer:
            lines.append("  for (std::size_t i = 0; i < n; ++i)\n"
                         "    if (detail::any_nan(x + i * stride)) out[i] = std::nan(\"\");")
    else:
        lines.append("  for (std::size_t i = 0; i < n; ++i) out[i] = evaluate(x + i * stride);")
    return [*lines, "}", ""]


def _probability(forest: Forest) -> list[str]:
    """``probability(x)``: P(signal), as ``Forest.probability_link`` maps the score."""
    kind, c = forest.probability_link()
    if kind == "clip":
        body = [f"  const double p = (evaluate(x) - ({_double_literal(c)})) / "
                f"(1.0 - ({_double_literal(c)}));",
                "  return p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);"]
        how = f"the score mapped from [{c!r}, 1] to [0, 1], clipped"
    elif c == 1.0:
        body = ["  return 1.0 / (1.0 + std::exp(-evaluate(x)));"]
        how = "1/(1+exp(-F)), logistic loss"
    else:
        body = ["  return 1.0 / (1.0 + std::exp(-2.0 * evaluate(x)));"]
        how = "1/(1+exp(-2F)), binomial deviance"
    return ["// P(signal) = predict_proba(X)[:, 1]: " + how + ".",
            "inline double probability(const float* x) {", *body, "}", ""]


def _header(model: Any, forest: Forest, namespace: str, file_name: str) -> str:
    """The whole header text."""
    names = feature_names_of(model, forest.n_features)
    layout = _layout(forest)
    members, n_rows_nan_left = (_dense_members(forest) if layout == "dense"
                                else _sparse_members(forest))
    n_rows = next(values.size for _, name, values, _ in members if name == "row_feature")
    if _blocked(forest, layout, n_rows):
        top_leaf = _top_leaf(min(TOP_LEVELS, forest.max_depth))
        members.append(("std::uint8_t", "top_leaf", top_leaf, "int"))
    includes = ["<cmath>", "<cstddef>", "<cstdint>", "<cstring>"]
    if forest.aggregation == "weighted_median":
        includes = ["<algorithm>", *includes, "<vector>"]
    constants, _, _ = _score(forest)
    body = [
        f"constexpr int n_features = {forest.n_features};",
        f"constexpr int n_trees = {forest.n_trees};", "",
        "// The input order of evaluate's x.",
        "constexpr const char* feature_names[n_features] = {",
        *_wrapped([_string_literal(n) for n in names]), "};", "",
        "namespace detail {", "",
        *_data_block(forest, layout, members, n_rows_nan_left),
        *constants, "",
        *_walk_code(forest, layout, members, n_rows),
        *([_ANY_NAN] if from_tmva_two_class(forest) else []),
        "}  // namespace detail", "",
        *_public_functions(forest, layout, n_rows),
        *(_probability(forest) if is_classifier(model) else []),
    ]
    # The model's own name, from its code: two models in one namespace are two inline
    # namespaces, so in two source files neither replaces the other at link time, and in
    # one a call is ambiguous (a compile error), where one include guard skipped a header.
    digest = hashlib.sha256("\n".join(body).encode()).hexdigest()[:16]
    # and the namespace's own checksum: upper-cased, with runs of "_" made one, the names
    # bdt and BDT (or a_b and a_b_) gave one guard, and one model in both was skipped once
    guard = re.sub(r"_+", "_", f"HEPBDT_{namespace.upper()}_"
                               f"{zlib.crc32(namespace.encode()):08X}_{digest.upper()}_HPP")
    lines = [
        *_description(model, forest, names, file_name, layout), "",
        "#pragma once", f"#ifndef {guard}", f"#define {guard}", "",
        *[f"#include {h}" for h in includes], "",
        f"namespace {namespace} {{",
        f"inline namespace model_{digest} {{", "",
        *body,
        f"}}  // inline namespace model_{digest}",
        f"}}  // namespace {namespace}", "", f"#endif  // {guard}", ""]
    return "\n".join(lines)
