"""C++ export: a fitted hepbdt model as one dependency-free C++11 header.

:func:`to_cpp` writes the forest as static const arrays and inline functions
(``evaluate``, ``evaluate_batch`` and, for classifiers, ``probability``) inside a namespace,
for trigger code and frameworks without ROOT. The header includes only the standard
library (``<cmath>``, ``<cstddef>``, ``<cstdint>``, ``<cstring>``; ``<vector>`` and
``<algorithm>`` for the AdaBoostR2 median). TMVA XML is :mod:`hepbdt.interop.tmva_export`.

The header evaluates as hepbdt does, bit for bit. A node sends x to the left when
``x[feature] < threshold`` in float, NaN where ``missing_left``. Trees are stored as
hepbdt's own fast path stores them: complete trees of the forest's depth ("dense": slot p
has children 2p+1 and 2p+2, no child indices) when hepbdt uses that layout
(``dense_fits``) and it takes at most 2 slots per node, else as ``forest_``'s flat nodes
("sparse": node k is node k of ``forest_``; leaves point to themselves). Either way every
tree is walked for a fixed number of steps without a branch, ``GROUP`` trees side by side
(their loads are independent), and an event without NaN takes a walk without the NaN
test. For "sum" and "weighted_mean" the leaf values are stored already multiplied by their
tree's weight (the product hepbdt's kernels form, rounded once in double), so the score is
a sum of additions in tree order from 0.0: no multiply-add can be contracted, whatever
``-ffp-contract`` says. The sums of tree weights are constants, computed as numpy computes
them. NaN is detected on the float's bits and masks the comparison, so the header gives
the same results under ``-ffinite-math-only`` (and ``-march=native``, any
``-ffp-contract``), but not under ``-ffast-math``, whose reassociation and reciprocal
division change the last bits. ``probability`` calls ``std::exp``, whose last bit may
differ from numpy's (2 ulp at most).

Size: about 22 bytes of header text per slot (dense; a complete tree of depth d has
2^(d+1) - 1 slots, and dense is used only up to 2 slots per node) or 45 per node (sparse):
0.55 MB for 200 trees of depth 6, which g++ -O2 compiles in about half a second. Program
data: 7 bytes an inner slot and 8 a leaf slot (dense), 23 bytes a node (sparse). Forests
of more than ``MAX_CPP_NODES`` (5 million) nodes are refused: compilers take minutes and
gigabytes on initialisers that large (use ONNX or TMVA XML for them).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._sklearn import not_fitted
from .._util import atomic_write_text, is_classifier
from .._version import __version__
from ..engine.predict import DenseForest, dense_fits
from ..model import Forest

__all__ = ["to_cpp", "CppExportError", "MAX_CPP_NODES"]

MAX_CPP_NODES = 5_000_000  # larger forests are refused (compile time and memory)
GROUP = 32  # trees walked side by side for one event (measured best of 4 to 64)
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
                            "HUGE_VALL", "NULL", "errno", "assert", "offsetof"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class CppExportError(ValueError):
    """A model or namespace that cannot be written as a C++ header that evaluates as hepbdt."""


def to_cpp(model: Any, path: str | os.PathLike, *, namespace: str | None = None) -> dict[str, Any]:
    """Write a fitted model as a dependency-free C++11 header (atomically).

    Parameters
    ----------
    model : a fitted ``BDTClassifier`` or ``BDTRegressor`` (trained, loaded, or read with
        ``from_tmva_xml`` / ``from_xgboost_json``).
    path : the header to write (e.g. ``"model.hpp"``).
    namespace : the C++ namespace of the model (ASCII letters, digits and underscores, not
        starting with a digit, not a keyword, not reserved); by default derived from the
        file name (``"my-model.hpp"`` gives ``my_model``).

    The header defines, in that namespace, ``n_features``, ``n_trees``, ``feature_names``
    and ``double evaluate(const float* x)``: ``decision_function`` (classifier) or
    ``predict`` (regressor) of one event of ``n_features`` floats in the model's input
    order (NaN for missing values), equal bit for bit; ``void evaluate_batch(const float*
    x, std::size_t n, double* out)`` for n events row by row; and for classifiers ``double
    probability(const float* x)``, ``predict_proba(X)[:, 1]`` (to within the last bits of
    ``std::exp`` for gradient boosting; exactly for the AdaBoost family).

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
    name = _namespace(namespace, path)
    _check_exportable(forest)
    text = _header(model, forest, name, Path(path).name)
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


def _namespace(namespace: str | None, path: str | os.PathLike) -> str:
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


def _feature_type(forest: Forest) -> tuple[str, type]:
    """The C++ and numpy types of feature indices: int16 when they fit."""
    if forest.n_features <= np.iinfo(np.int16).max:
        return "std::int16_t", np.int16
    return "std::int32_t", np.int32


def _sparse_members(forest: Forest) -> list[Member]:
    """forest_'s nodes; leaves point to themselves (child 2k and 2k+1 are k, feature 0)."""
    leaf = forest.feature < 0
    nodes = np.arange(forest.n_nodes, dtype=np.int64)
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.tree_offsets))
    value = _leaf_factor(forest)[tree_of] * forest.value
    child = np.column_stack([np.where(leaf, nodes, forest.left), np.where(leaf, nodes, forest.right)])
    tree_depth = np.maximum.reduceat(forest.node_depths(), forest.tree_offsets[:-1])
    group_depth = np.maximum.reduceat(tree_depth, np.arange(0, forest.n_trees, GROUP))
    c_type, dtype = _feature_type(forest)
    return [
        (c_type, "feature", np.where(leaf, 0, forest.feature).astype(dtype), "int"),
        ("float", "threshold", np.where(leaf, 0.0, forest.threshold).astype(np.float32), "float"),
        ("std::uint8_t", "missing_left", (forest.missing_left & ~leaf).astype(np.uint8), "int"),
        ("std::int32_t", "child", child.ravel(), "int"),
        ("double", "value", np.where(leaf, value, 0.0), "double"),
        ("std::int32_t", "tree_root", forest.tree_offsets[:-1], "int"),
        ("std::int32_t", "group_depth", group_depth, "int"),
    ]


def _dense_members(forest: Forest) -> list[Member]:
    """Every tree as a complete tree of the forest's depth (hepbdt's DenseForest): slot p
    has children 2p+1 and 2p+2; a leaf above the last level sends every event right
    (threshold -inf, missing right) to copies of itself."""
    dense = DenseForest(forest, forest.max_depth)
    padded = np.isnan(dense.threshold)  # _check_exportable refused NaN thresholds of splits
    c_type, dtype = _feature_type(forest)
    return [
        (c_type, "feature", dense.feature.astype(dtype), "int"),
        ("float", "threshold", np.where(padded, -np.inf, dense.threshold), "float"),
        ("std::uint8_t", "missing_left", dense.missing_left.astype(np.uint8), "int"),
        ("double", "value", _leaf_factor(forest)[:, None] * dense.leaf, "double"),
    ]


def _float_literal(value: float) -> str:
    """An exact float (float32) literal: shortest round-trip digits, HUGE_VALF for inf."""
    if np.isinf(value):
        return "HUGE_VALF" if value > 0 else "-HUGE_VALF"
    text = str(np.float32(value))
    return text + "f"


def _double_literal(value: float) -> str:
    """An exact double literal: Python's shortest round-trip digits, HUGE_VAL for inf."""
    value = float(value)
    if np.isinf(value):
        return "HUGE_VAL" if value > 0 else "-HUGE_VAL"
    if np.isnan(value):
        raise CppExportError("a NaN constant cannot be part of the model")
    return repr(value)


def _literals(values: np.ndarray, kind: str) -> list[str]:
    """Each value as a C++ literal; each distinct value is formatted once."""
    if kind == "int":
        return [str(v) for v in values.tolist()]
    unique, inverse = np.unique(values, return_inverse=True)
    if kind == "float":
        texts = [_float_literal(v) for v in unique.tolist()]
    else:
        texts = [_double_literal(v) for v in unique.tolist()]
    signs = np.signbit(values) & (values == 0)  # np.unique merges -0.0 into 0.0
    out = [texts[i] for i in inverse.ravel().tolist()]
    for i in np.flatnonzero(signs).tolist():
        out[i] = "-0.0f" if kind == "float" else "-0.0"
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


def _scalar(value: Any) -> bool:
    """Whether a forest.extra value is small enough for the header's comment."""
    return isinstance(value, str | int | float | bool | np.generic) or value is None


def _feature_names(model: Any, forest: Forest) -> list[str]:
    """The model's feature names in its input order, else x0, x1, ..."""
    names = getattr(model, "feature_names_in_", None)
    if names is not None and len(names) == forest.n_features:
        return [str(n) for n in names]
    return [f"x{j}" for j in range(forest.n_features)]


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
        "that no multiply-add can be contracted, whatever -ffp-contract says). NaN is found on",
        "the bits, so -ffinite-math-only changes nothing.",
        "Trees are stored as " + trees,
        "",
        f"Model: {kind}, aggregation {forest.aggregation!r}, {forest.n_trees} trees, "
        f"{forest.n_nodes} nodes, depth {forest.max_depth},",
        f"base score {_double_literal(forest.base_score)}",
        "Forest extra:",
        *[f"  {k} = {_comment_value(v)}" for k, v in forest.extra.items() if _scalar(v)],
    ]
    if is_classifier(model) and getattr(model, "classes_", None) is not None:
        classes = list(model.classes_)
        lines.append(f"Classes: background = {_comment_value(classes[0])}, signal = "
                     f"{_comment_value(classes[1])} (probability(x) is P(signal))")
    params = model.get_params() if hasattr(model, "get_params") else {}
    lines.append("Options:")
    lines += [f"  {k} = {_comment_value(v)}" for k, v in sorted(params.items())]
    definitions = getattr(model, "feature_definitions_", None) or {}
    lines.append("Features (input order):")
    for j, name in enumerate(names):
        definition = definitions.get(name)
        extra = f" = {_comment_value(definition)}" if definition is not None else ""
        lines.append(f"  {j}: {_comment_value(name)}{extra}")
    return [("// " + line).rstrip() for line in lines]


def _data_block(forest: Forest, layout: str) -> list[str]:
    """The ``detail::forest`` holder: arrays as static members of a class template, so that
    every translation unit that includes the header shares one definition (no ODR issue)."""
    members = _dense_members(forest) if layout == "dense" else _sparse_members(forest)
    members.append(("double", "tree_weight", forest.tree_weights, "double"))
    weighted = forest.aggregation != "weighted_median"
    if layout == "dense":
        about = ["// Tree t is a complete tree of depth `depth`: its slot p (children 2p+1, 2p+2)",
                 "// is feature[t * n_inner + p] etc., its leaf q is value[t * (n_inner + 1) + q]."]
    else:
        about = ["// Node k is node k of forest_; its children are child[2k] (left) and child[2k+1]",
                 "// (right). Leaves point to themselves and have feature 0, value their output."]
    lines = [
        *about,
        "// A node sends x to the left when x[feature] < threshold, NaN where missing_left;",
        "// value: leaf outputs already multiplied by their tree's weight (tree_weight, for reference)."
        if weighted else "// value: the trees' leaf outputs; the median weighs the trees with tree_weight.",
        "template <typename Unused = void>",
        "struct forest {",
        *[f"  static const {c_type} {name}[];" for c_type, name, _, _ in members],
        "};",
        "",
    ]
    for c_type, name, values, kind in members:
        lines += _array_definition(c_type, name, values, kind)
    return lines


_COMMON = """\
constexpr int group_size = @GROUP@;
constexpr int n_groups = (n_trees + group_size - 1) / group_size;

// NaN on the float's bits: the test holds under -ffinite-math-only too, where v != v is false.
inline bool is_nan(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x7fffffffu) > 0x7f800000u;
}

inline bool has_nan(const float* x) {
  bool found = false;
  for (int j = 0; j < n_features; ++j) found = found || is_nan(x[j]);
  return found;
}
"""

_SPARSE_WALK = """\
// The leaf of each tree of group g for event x (leaf[j], tree g * group_size + j); returns
// the number of trees. The trees of a group are walked side by side (independent loads)
// for as many steps as the group's deepest tree: a leaf's children are itself.
template <bool WithNan>
inline int group_leaves(const float* x, int g, std::int32_t* leaf) {
  typedef forest<> f;
  const int first = g * group_size;
  const int count = n_trees - first < group_size ? n_trees - first : group_size;
  for (int j = 0; j < count; ++j) leaf[j] = f::tree_root[first + j];
  for (int step = 0; step < f::group_depth[g]; ++step) {
    for (int j = 0; j < count; ++j) {
      const std::int32_t k = leaf[j];
      const float v = x[f::feature[k]];
      // no branch: one per node would be mispredicted half of the time
      unsigned go_left = static_cast<unsigned>(v < f::threshold[k]);
      if (WithNan) {  // masked, not ||: under -ffinite-math-only v < NaN is unspecified
        const unsigned nan = static_cast<unsigned>(is_nan(v));
        go_left = (go_left & (nan ^ 1u)) | (nan & f::missing_left[k]);
      }
      leaf[j] = f::child[2 * k + 1 - static_cast<std::int32_t>(go_left)];
    }
  }
  return count;
}
"""

_DENSE_WALK = """\
constexpr int depth = @DEPTH@;
constexpr std::int32_t n_inner = (std::int32_t(1) << depth) - 1;

// The leaf of each tree of group g for event x (leaf[j], tree g * group_size + j, an index
// into value); returns the number of trees. The trees of a group are walked side by side
// (independent loads), depth steps each.
template <bool WithNan>
inline int group_leaves(const float* x, int g, std::int32_t* leaf) {
  typedef forest<> f;
  const int first = g * group_size;
  const int count = n_trees - first < group_size ? n_trees - first : group_size;
  std::int32_t slot[group_size] = {};
  for (int step = 0; step < depth; ++step) {
    for (int j = 0; j < count; ++j) {
      const std::int32_t k = (first + j) * n_inner + slot[j];
      const float v = x[f::feature[k]];
      // no branch: one per node would be mispredicted half of the time
      unsigned go_left = static_cast<unsigned>(v < f::threshold[k]);
      if (WithNan) {  // masked, not ||: under -ffinite-math-only v < NaN is unspecified
        const unsigned nan = static_cast<unsigned>(is_nan(v));
        go_left = (go_left & (nan ^ 1u)) | (nan & f::missing_left[k]);
      }
      slot[j] = 2 * slot[j] + 2 - static_cast<std::int32_t>(go_left);
    }
  }
  for (int j = 0; j < count; ++j) leaf[j] = (first + j) * (n_inner + 1) + slot[j] - n_inner;
  return count;
}
"""

_LEAVES = """\
inline int leaves(const float* x, bool with_nan, int g, std::int32_t* leaf) {
  return with_nan ? group_leaves<true>(x, g, leaf) : group_leaves<false>(x, g, leaf);
}
"""

_LEAF_SUM = """\
// Sum over trees, in tree order from 0.0, of the weighted leaf values (hepbdt's predict_raw).
inline double weighted_leaf_sum(const float* x) {
  const bool with_nan = has_nan(x);
  std::int32_t leaf[group_size] = {};
  double sum = 0.0;
  for (int g = 0; g < n_groups; ++g) {
    const int count = leaves(x, with_nan, g, leaf);
    for (int j = 0; j < count; ++j) sum += forest<>::value[leaf[j]];
  }
  return sum;
}
"""

_MEDIAN = """\
// TMVA's AdaBoostR2 response as hepbdt computes it (model._weighted_median_score): the mean
// of the stably sorted responses around their weighted median, from prefix sums.
inline double weighted_median(const float* x) {
  typedef forest<> f;
  const bool with_nan = has_nan(x);
  std::vector<double> response(n_trees);
  std::vector<int> order(n_trees);
  std::int32_t leaf[group_size] = {};
  for (int g = 0; g < n_groups; ++g) {
    const int count = leaves(x, with_nan, g, leaf);
    for (int j = 0; j < count; ++j) response[g * group_size + j] = f::value[leaf[j]];
  }
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


def _walk_code(forest: Forest, layout: str) -> list[str]:
    """The detail functions: NaN tests, the group walk, the aggregation."""
    dense = _DENSE_WALK.replace("@DEPTH@", str(forest.max_depth))
    walk = dense if layout == "dense" else _SPARSE_WALK
    median = forest.aggregation == "weighted_median"
    return [_COMMON.replace("@GROUP@", str(GROUP)), walk, _LEAVES, _MEDIAN if median else _LEAF_SUM]


def _score_expression(forest: Forest) -> tuple[list[str], str]:
    """(constants, the C++ expression of the score) for the forest's aggregation."""
    if forest.aggregation == "sum":
        return ([f"constexpr double base_score = {_double_literal(forest.base_score)};"],
                "detail::weighted_leaf_sum(x) + detail::base_score")
    if forest.aggregation == "weighted_mean":
        total = float(forest.tree_weights.sum())  # as numpy sums them in Forest.raw_score
        if total == 0:
            return [], "detail::weighted_leaf_sum(x)"  # Forest.raw_score: no division by 0
        return ([f"constexpr double total_weight = {_double_literal(total)};"],
                "detail::weighted_leaf_sum(x) / detail::total_weight")
    half = float(0.5 * forest.tree_weights.sum())
    return [f"constexpr double half_weight = {_double_literal(half)};"], "detail::weighted_median(x)"


def _probability(forest: Forest) -> list[str]:
    """``probability(x)``: P(signal), as BDTClassifier._link maps the score."""
    if forest.aggregation != "sum":
        lo = float(forest.extra.get("score_min", -1.0))
        body = [f"  const double p = (evaluate(x) - ({_double_literal(lo)})) / "
                f"(1.0 - ({_double_literal(lo)}));",
                "  return p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);"]
        how = f"the score mapped from [{lo!r}, 1] to [0, 1], clipped"
    elif forest.extra.get("loss") == "logistic":
        body = ["  return 1.0 / (1.0 + std::exp(-evaluate(x)));"]
        how = "1/(1+exp(-F)), logistic loss"
    else:
        body = ["  return 1.0 / (1.0 + std::exp(-2.0 * evaluate(x)));"]
        how = "1/(1+exp(-2F)), binomial deviance"
    return ["// P(signal) = predict_proba(X)[:, 1]: " + how + ".",
            "inline double probability(const float* x) {", *body, "}", ""]


def _header(model: Any, forest: Forest, namespace: str, file_name: str) -> str:
    """The whole header text."""
    names = _feature_names(model, forest)
    guard = f"HEPBDT_{namespace.upper()}_{zlib.crc32(namespace.encode()):08X}_HPP"
    guard = re.sub(r"_+", "_", guard)
    layout = _layout(forest)
    includes = ["<cmath>", "<cstddef>", "<cstdint>", "<cstring>"]
    if forest.aggregation == "weighted_median":
        includes = ["<algorithm>", *includes, "<vector>"]
    constants, score = _score_expression(forest)
    lines = [
        *_description(model, forest, names, file_name, layout), "",
        "#pragma once", f"#ifndef {guard}", f"#define {guard}", "",
        *[f"#include {h}" for h in includes], "",
        f"namespace {namespace} {{", "",
        f"constexpr int n_features = {forest.n_features};",
        f"constexpr int n_trees = {forest.n_trees};", "",
        "// The input order of evaluate's x.",
        "constexpr const char* feature_names[n_features] = {",
        *_wrapped([_string_literal(n) for n in names]), "};", "",
        "namespace detail {", "",
        *_data_block(forest, layout),
        *constants, "",
        *_walk_code(forest, layout),
        "}  // namespace detail", "",
        "// The score of one event: x holds n_features floats in the order of feature_names.",
        "inline double evaluate(const float* x) {", f"  return {score};", "}", "",
        "// evaluate() of n events, row by row (x is n x n_features, row-major).",
        "inline void evaluate_batch(const float* x, std::size_t n, double* out) {",
        "  const std::size_t stride = static_cast<std::size_t>(n_features);",
        "  for (std::size_t i = 0; i < n; ++i) out[i] = evaluate(x + i * stride);", "}", "",
    ]
    if is_classifier(model):
        lines += _probability(forest)
    lines += [f"}}  // namespace {namespace}", "", f"#endif  // {guard}", ""]
    return "\n".join(lines)
