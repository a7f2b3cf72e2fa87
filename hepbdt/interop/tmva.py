"""TMVA XML import: TMVA's BDT weight files as fitted hepbdt estimators.

:func:`from_tmva_xml` reads TMVA's BDT weight files (AdaBoost, RealAdaBoost, Bagging and
Grad classification; Grad, AdaBoostR2 and Bagging regression) into a fitted hepbdt
estimator; :func:`hepbdt.interop.tmva_export.tmva_response` is what ``TMVA::Reader``
returns for them (how the Reader evaluates is described there). Files are parsed with
``xml.etree`` as data, never executed: DOCTYPE and ENTITY declarations are refused
whatever the file's encoding (found by the XML parser itself, after decoding), and so are
files over ``MAX_MODEL_BYTES`` or of more than ``MAX_NODES`` nodes (see :mod:`hepbdt.model`).

A file is read as ``TMVA::Reader`` reads it (``MethodBase::ReadStateFromXML``,
``MethodBDT::ReadWeightsFromXML``): option names in any case, booleans as TMVA's words,
numbers as C++ streams read them (whole ASCII numbers; float32 values rounded once, as
``strtof``), a leaf answering its ``res`` in a tree of AnalysisType 1 and otherwise its
nType or purity as the method asks. What the Reader would read otherwise, or read in a
way hepbdt does not reproduce, is refused: any ``<Transform>``, repeated sections, child
elements of another tag than the Reader expects, classes listed out of index order.
"""

from __future__ import annotations

import decimal
import math
import os
import re
import struct
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from xml.parsers import expat

import numpy as np

from ..estimators import ESTIMATORS, check_round_count, from_forest
from ..model import DBL_EPSILON, ClassForestBuilder, Forest, ForestBuilder, ModelFormatError, check_node_count
from ..persistence import checked_classes, checked_params, parse_json, read_model_file
from ..tmva_options import (
    FALSE_WORDS,
    TRUE_WORDS,
    TMVAOptionError,
    TMVAOptionWarning,
    check_option_words,
    differs_from_default,
    parse_tmva_options,
)
from .tmva_export import (
    CLASSIFICATION_BOOSTS,
    PARAMETERS_INFO,
    REGRESSION_BOOSTS,
    TMVAExportError,
    reader_name,
    tmva_response,
    to_tmva_xml,
)

__all__ = ["to_tmva_xml", "from_tmva_xml", "tmva_response", "TMVAFormatError", "TMVAExportError"]


class TMVAFormatError(ModelFormatError):
    """A TMVA weight file that is malformed or uses a feature hepbdt does not read."""


def _attr(el: ET.Element, name: str, where: str) -> str:
    value = el.get(name)
    if value is None:
        raise TMVAFormatError(f"{where}: <{el.tag}> has no attribute {name!r}")
    return value


# What C++'s ``stream >> value`` reads whole: ASCII digits, no "_" (which Python's float and int
# accept); "nan" and "inf" pass here for the callers to refuse as not finite.
_BLANK = " \t\n\r"
_FLOAT_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)",
                         re.IGNORECASE)
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT32 = struct.Struct("f")


def _num(el: ET.Element, name: str, where: str) -> float:
    text = _attr(el, name, where)
    if not _FLOAT_TEXT.fullmatch(text.strip(_BLANK)):
        raise TMVAFormatError(f"{where}: <{el.tag}> attribute {name}={text!r} is not a number")
    return float(text)


def _f32(el: ET.Element, name: str, where: str) -> float:
    """An attribute as the float32 the Reader reads (C's strtof: the float32 nearest to the
    decimal text, not the float32 nearest to the double nearest to it), as a float."""
    value = _num(el, name, where)
    near = _round_f32(value)
    if near == value or not math.isfinite(near) or not (math.frexp(value)[0] * 2.0**25).is_integer():
        return near  # only a double of at most 25 significant bits can be a float32 midpoint
    other = float(np.nextafter(np.float32(near), np.float32(math.copysign(math.inf, value - near))))
    if value != (near + other) / 2.0:
        return near
    exact, middle = decimal.Decimal(_attr(el, name, where).strip(_BLANK)), decimal.Decimal(value)
    if exact == middle:
        return near  # a true tie: to even, as the cast did
    return other if (exact > middle) == (other > near) else near


def _round_f32(value: float) -> float:
    """``value`` rounded to float32 (to nearest, ties to even; +-inf past the range)."""
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _int(el: ET.Element, name: str, where: str) -> int:
    text = _attr(el, name, where)
    try:
        if not _INT_TEXT.fullmatch(text.strip(_BLANK)):
            raise ValueError
        return int(text)
    except ValueError:
        raise TMVAFormatError(f"{where}: <{el.tag}> attribute {name}={text!r} is not an integer") from None


def _elements(el: ET.Element, tag: str, where: str) -> list[ET.Element]:
    """The children of ``el``, all ``<tag>``: TMVA reads every child element as one (a tree,
    a node, a variable, an option), whatever its tag."""
    children = list(el)
    other = [c.tag for c in children if c.tag != tag]
    if other:
        raise TMVAFormatError(f"{where}: <{el.tag}> holds <{other[0]}>; it may hold only <{tag}> "
                              f"elements (TMVA::Reader would read it as a <{tag}>)")
    return children


def _child(el: ET.Element, tag: str, where: str) -> ET.Element:
    found = el.find(tag)
    if found is None:
        raise TMVAFormatError(f"{where}: <{el.tag}> has no <{tag}> element")
    return found


# Node::ReadXML reads pos and depth, DecisionTreeNode::ReadAttributes the others: the Reader
# stops at a node without one (a file lacking a depth loaded here and scored, audit EH)
_READER_NODE_ATTRIBUTES = ("pos", "depth", "IVar", "Cut", "cType", "nType")


def _node_purity(el: ET.Element, here: str) -> float:
    """A node's purity as DecisionTreeNode::ReadAttributes reads it: its ``purity``, or, in
    the files of TMVA 2009-2010 (ROOT 5.24-5.28), which wrote none, ``nS / (nS + nB)``
    computed in float32 (Float_t); TMVAFormatError where it has neither (the Reader stops)."""
    if el.get("purity") is not None:
        return _f32(el, "purity", here)
    if el.get("nS") is None or el.get("nB") is None:
        raise TMVAFormatError(f"{here}: <Node> has neither purity nor nS and nB, one of which "
                              "TMVA::Reader requires of every node (leaves too)")
    n_s, n_b = np.float32(_f32(el, "nS", here)), np.float32(_f32(el, "nB", here))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        purity = float(n_s / (n_s + n_b))
    if not math.isfinite(purity):
        raise TMVAFormatError(f"{here}: its purity nS / (nS + nB) = {el.get('nS')} / "
                              f"({el.get('nS')} + {el.get('nB')}) is not a number")
    return purity


def _read_tree(bt: ET.Element, where: str, n_var: int, leaf_rule: str) -> dict[str, np.ndarray]:
    """One BinaryTree -> local node arrays in preorder (node, left subtree, right subtree)."""
    roots = _elements(bt, "Node", where)  # the Reader's root is the first child, whatever it is
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
        missing = [name for name in _READER_NODE_ATTRIBUTES if el.get(name) is None]
        if missing:  # DecisionTreeNode::ReadAttributes stops the Reader without them
            raise TMVAFormatError(f"{here}: <Node> lacks {missing}, which TMVA::Reader requires "
                                  "of every node (leaves too)")
        ntype = _int(el, "nType", here)
        pur = _node_purity(el, here)
        left.append(-1)
        right.append(-1)
        purity.append(pur)
        if ntype != 0:
            feature.append(-1)
            threshold.append(0.0)
            if leaf_rule == "res":
                v = _f32(el, "res", here)
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
        cut = _f32(el, "Cut", here)
        if not np.isfinite(cut):
            raise TMVAFormatError(f"{here}: Cut is not finite")
        ctype = _int(el, "cType", here)
        if ctype not in (0, 1):
            raise TMVAFormatError(f"{here}: cType={ctype} must be 0 or 1")
        kids = _elements(el, "Node", here)
        by_pos = {c.get("pos"): c for c in kids}
        if len(kids) != 2 or set(by_pos) != {"l", "r"}:
            raise TMVAFormatError(f"{here}: an inner node (nType=0) needs two daughters with "
                                  f"pos='l' and pos='r', found {[c.get('pos') for c in kids]}")
        feature.append(ivar)
        threshold.append(cut)
        # Inner nodes' outputs are not used by the Reader; Grad's res is kept for re-export.
        res = _f32(el, "res", here) if leaf_rule == "res" else 0.0
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
    items = _elements(el, tag, where)
    if len(items) != n:
        raise TMVAFormatError(f"{where}: <{el.tag}> says {count_attr}={n} but has {len(items)} <{tag}>")
    out: list[dict[str, Any]] = [{}] * n
    for item in items:
        i = _int(item, index_attr, where)
        if not 0 <= i < n or out[i]:
            raise TMVAFormatError(f"{where}: <{tag}> {index_attr}={i} is out of range or repeated")
        expr = _attr(item, "Expression", where)
        label = item.get("Label")  # hepbdt writes a name's blanks there only (the Reader's way)
        # before 2026-12-05 hepbdt's Expression also lost U+00A0 and the other Unicode blanks
        name = label if label and expr in (reader_name(label), re.sub(r"\s+", "", label)) else expr
        out[i] = {"name": name, "min": _range_end(item, "Min", where),
                  "max": _range_end(item, "Max", where)}
    return out


def _range_end(item: ET.Element, name: str, where: str) -> float:
    """A variable's Min or Max (0 when absent or empty); TMVAFormatError unless finite."""
    if not item.get(name):
        return 0.0
    value = _num(item, name, where)
    if not math.isfinite(value):
        raise TMVAFormatError(f"{where}: <{item.tag}> attribute {name}={item.get(name)!r} is "
                              "not a finite number")
    return value


def _truthy(text: str) -> bool:
    return text.strip(_BLANK).lower() in TRUE_WORDS


def _refuse_declarations(data: bytes, where: str) -> None:
    """TMVAFormatError when the document declares a DOCTYPE or an ENTITY, in any encoding:
    the XML parser reads the file (decoding it as the file says) and stops at the first
    declaration, before any entity is defined or expanded."""
    message = f"{where}: DOCTYPE/ENTITY declarations are not accepted in a weight file"
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise TMVAFormatError(message)

    def refuse(*_: Any) -> None:
        raise TMVAFormatError(message)

    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    try:
        parser.Parse(data, True)
    except TMVAFormatError:
        raise
    except (expat.ExpatError, ValueError, LookupError):
        pass  # not well-formed: the parse below says where


def _read_root(path: Path) -> tuple[ET.Element, str]:
    """The file's ``<MethodSetup>`` element and its ``Method`` (``BDT::<name>``)."""
    data = read_model_file(path, "TMVA weight file", TMVAFormatError)
    where = str(path)
    _refuse_declarations(data, where)
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError, LookupError) as exc:
        raise TMVAFormatError(f"{path}: not an XML file ({exc})") from None
    if root.tag != "MethodSetup":
        raise TMVAFormatError(f"{where}: the root element is <{root.tag}>, expected <MethodSetup>")
    method = _attr(root, "Method", where)
    if not method.startswith("BDT::"):
        raise TMVAFormatError(f"{where}: Method={method!r} is not a BDT (expected 'BDT::<name>')")
    for tag in ("GeneralInfo", "Options", "Variables", "Classes", "Targets", "Weights"):
        if len(root.findall(tag)) > 1:  # the Reader reads each in turn: which one counts is unclear
            raise TMVAFormatError(f"{where}: <MethodSetup> has {len(root.findall(tag))} <{tag}> "
                                  "elements; a weight file has one")
    return root, method


def _general_info(root: ET.Element, where: str) -> tuple[dict[str | None, str], str]:
    """The ``GeneralInfo`` entries by name, and the analysis ("classification",
    "regression" or "multiclass")."""
    info = {i.get("name"): i.get("value", "") for i in _child(root, "GeneralInfo", where).findall("Info")}
    analysis = (info.get("AnalysisType") or "").strip().lower()
    if analysis not in ("classification", "regression", "multiclass"):
        raise TMVAFormatError(f"{where}: GeneralInfo AnalysisType={info.get('AnalysisType')!r}; "
                              "hepbdt reads 'Classification', 'Regression' and 'Multiclass'")
    return info, analysis


def _class_names(root: ET.Element, where: str) -> list[str]:
    """A multi-class file's class names in index order (at least three, distinct).

    The Reader numbers the classes in the order the file lists them (it reads ``Index`` and
    ignores it): a file whose ``Index`` values are not 0, 1, ... in that order is refused."""
    classes = _child(root, "Classes", where)
    n = _int(classes, "NClass", where + " <Classes>")
    items = _elements(classes, "Class", where + " <Classes>")
    listed = [(_int(c, "Index", where + " <Class>"), _attr(c, "Name", where + " <Class>"))
              for c in items]
    names = [name for _, name in listed]
    if n < 3 or len(items) != n or len(set(names)) != n:
        raise TMVAFormatError(f"{where}: a multi-class file needs NClass >= 3 <Class> elements "
                              f"with distinct names and indices 0..NClass-1; it has NClass={n} "
                              f"and {listed[:10]}")
    if [index for index, _ in listed] != list(range(n)):
        raise TMVAFormatError(f"{where}: the <Class> elements have Index {[i for i, _ in listed][:10]}; "
                              "TMVA::Reader numbers the classes in the order listed, so the "
                              "file must list them with Index 0, 1, ... in that order")
    return names


def _read_options(root: ET.Element, where: str) -> list[list[Any]]:
    """The ``Options`` as [name, modified, value] in file order.

    The Reader joins them into one ``name=value:name=value`` string and parses that: a value
    holding ':' (or a name that is not a word) would set other options than it says."""
    options: list[list[Any]] = []
    for opt in _elements(_child(root, "Options", where), "Option", where + " <Options>"):
        name = _attr(opt, "name", where + " <Options>")
        value = (opt.text or "").strip()
        try:
            check_option_words(name, value)
        except TMVAOptionError as exc:
            raise TMVAFormatError(f"{where}: {exc}") from None
        options.append([name, opt.get("modified") == "Yes", value])
    return options


def _flag(opt: dict[str, str], name: str, default: str, where: str) -> bool:
    """A boolean option as TMVA's Option<bool> reads it (``opt`` keyed by lower-case name)."""
    text = opt.get(name.lower(), default).strip(_BLANK).lower()
    if text in TRUE_WORDS or text in FALSE_WORDS:
        return text in TRUE_WORDS
    raise TMVAFormatError(f"{where}: option {name}={text!r} is not a boolean that TMVA::Reader "
                          f"reads; valid: {list(TRUE_WORDS + FALSE_WORDS)} (any case)")


def _boost_type(opt: dict[str, str], regression: bool, where: str) -> tuple[str, bool]:
    """The BoostType and the UseYesNoLeaf the Reader uses (``opt`` keyed by lower-case name,
    as TMVA matches option names); refuses what hepbdt cannot read.

    The Reader takes UseYesNoLeaf as written, also for ``BoostType=RealAdaBoost`` (TMVA
    writes RealAdaBoost as AdaBoost with UseYesNoLeaf=False)."""
    boost = opt.get("boosttype", "AdaBoost")
    valid = REGRESSION_BOOSTS if regression else CLASSIFICATION_BOOSTS
    if boost not in valid:
        analysis = "regression" if regression else "classification"
        raise TMVAFormatError(f"{where}: BoostType={boost!r} is not supported for "
                              f"{analysis}; valid: {list(valid)}")
    if _flag(opt, "DoPreselection", "False", where):
        raise TMVAFormatError(f"{where}: DoPreselection=True (preselection cuts) is not supported")
    if _flag(opt, "UseFisherCuts", "False", where):
        raise TMVAFormatError(f"{where}: UseFisherCuts=True (Fisher-discriminant cuts) is not supported")
    return boost, _flag(opt, "UseYesNoLeaf", "True", where)


def _read_inputs(root: ET.Element, regression: bool, where: str,
                 multiclass: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The variables and the regression target ({} if none), checking transformations and classes."""
    variables = _read_variables(_child(root, "Variables", where), "Variable", "NVar", "VarIndex",
                                where + " <Variables>")
    if len(variables) < 1:
        raise TMVAFormatError(f"{where}: <Variables> lists no variable")
    for transformations in root.findall("Transformations"):
        # the Reader applies every <Transform> of every <Transformations>, whatever the count says
        if _int(transformations, "NTransformations", where) != 0 or len(transformations):
            raise TMVAFormatError(
                f"{where}: variable transformations (NTransformations="
                f"{transformations.get('NTransformations')}, {len(transformations)} "
                "<Transform> elements) are not supported: TMVA::Reader would apply them to the "
                "inputs before the trees; retrain with VarTransform=None")
    classes = root.find("Classes")
    if (classes is not None and not regression and not multiclass
            and _int(classes, "NClass", where) != 2):
        raise TMVAFormatError(f"{where}: NClass={classes.get('NClass')} in a Classification "
                              "file, which has two classes (more are AnalysisType Multiclass)")
    target: dict[str, Any] = {}
    if regression:
        targets = root.find("Targets")
        if targets is not None:
            tlist = _read_variables(targets, "Target", "NTrgt", "TargetIndex", where + " <Targets>")
            if len(tlist) != 1:
                raise TMVAFormatError(f"{where}: {len(tlist)} regression targets; only one is supported")
            target = tlist[0]
    return variables, target


def _read_weights(root: ET.Element, yes_no: bool, where: str) -> tuple[list[ET.Element], str]:
    """The ``BinaryTree`` elements and the leaf rule ("res", "ntype" or "purity").

    ``yes_no``: whether the Reader asks the trees for +-1 (UseYesNoLeaf in AdaBoost and
    Bagging classification; Grad, regression and multi-class ask for the purity). A tree of
    AnalysisType 1 (regression tree) answers its ``res`` whatever it is asked."""
    weights = _child(root, "Weights", where)
    if any(k.startswith("Preselection") for k in weights.attrib):
        raise TMVAFormatError(f"{where}: <Weights> has preselection cuts, which are not supported")
    # the Reader reads TreeType (pre-4.1 files) when present, else AnalysisType
    wtype = weights.get("TreeType", weights.get("AnalysisType"))
    if wtype not in ("0", "1"):
        raise TMVAFormatError(f"{where}: <Weights> AnalysisType={wtype!r}, expected 0 or 1")
    leaf_rule = "res" if wtype == "1" else ("ntype" if yes_no else "purity")
    bts = _elements(weights, "BinaryTree", where + " <Weights>")
    n_trees = _int(weights, "NTrees", where + " <Weights>")
    if n_trees != len(bts) or not bts:
        raise TMVAFormatError(f"{where}: <Weights> NTrees={n_trees} but it holds {len(bts)} <BinaryTree>")
    return bts, leaf_rule


def _read_forest(bts: list[ET.Element], where: str, n_var: int, boost: str, regression: bool,
                 leaf_rule: str, n_classes: int = 1) -> tuple[Forest, list[float], int]:
    """The validated forest of the trees, its node purities and the largest tree depth.

    ``n_classes`` K > 1: TMVA's multi-class Grad, tree t adding to class t mod K; the forest
    keeps them class by class (see ``Forest.n_classes``), its initial scores zero."""
    grad = boost == "Grad"
    agg = "sum" if grad else ("weighted_median" if boost == "AdaBoostR2" else "weighted_mean")
    boost_weights = np.array([_f32(bt, "boostWeight", f"{where} <BinaryTree> {t}")
                              for t, bt in enumerate(bts)], dtype=np.float64)
    if not np.all(np.isfinite(boost_weights)):
        raise TMVAFormatError(f"{where}: a <BinaryTree> boostWeight is not finite")
    total = float(np.cumsum(boost_weights)[-1])  # in the Reader's order
    if boost == "AdaBoostR2" and not total > 0:
        # the Reader's weighted median walks past its last tree looking for half the total
        raise TMVAFormatError(f"{where}: the boostWeight values of this AdaBoostR2 file add up to "
                              f"{total!r}; its weighted median needs a positive total")
    if agg == "weighted_mean" and not total > DBL_EPSILON:
        # MethodBDT::PrivateGetMvaValue: norm > DBL_EPSILON ? sum / norm : 0
        raise TMVAFormatError(f"{where}: the boostWeight values add up to {total!r}, at most "
                              f"DBL_EPSILON ({DBL_EPSILON:.3g}), where TMVA::Reader scores "
                              "every event 0; a trained file's boost weights add up to more")
    base = float(boost_weights[0]) if (grad and regression) else 0.0
    if n_classes > 1 and len(bts) % n_classes:
        raise TMVAFormatError(f"{where}: {len(bts)} trees are not whole rounds of one tree for "
                              f"each of the {n_classes} classes")
    classes = ClassForestBuilder(n_var, np.zeros(n_classes)) if n_classes > 1 else None
    builder = ForestBuilder(n_var, base_score=base, aggregation=agg)
    purity_parts = []
    max_depth = 1
    n_nodes = 0
    for t, bt in enumerate(bts):
        arrays = _read_tree(bt, f"{where} <BinaryTree itree={bt.get('itree', t)}>", n_var, leaf_rule)
        n_nodes += arrays["feature"].size
        try:
            check_node_count(where, n_nodes)
        except ModelFormatError as exc:
            raise TMVAFormatError(str(exc)) from None
        purity_parts.append(arrays.pop("purity"))
        max_depth = max(max_depth, int(arrays.pop("depth")[0]))
        target = classes.classes[t % n_classes] if classes is not None else builder
        target.add(tree_weight=1.0 if grad else float(boost_weights[t]), **arrays)
    forest = classes.build() if classes is not None else builder.build()
    try:
        forest.validate(where)
    except ModelFormatError as exc:
        raise TMVAFormatError(str(exc)) from None
    return forest, np.concatenate(purity_parts).tolist(), max_depth


def _loss_extra(boost: str, regression: bool, leaf_rule: str, opt: dict[str, str]) -> dict[str, Any]:
    """The forest's ``loss`` (Grad) or ``score_min`` (AdaBoost-type classification) entry."""
    if boost == "Grad" and not regression:
        return {"loss": "deviance"}
    if boost == "Grad":
        return {"loss": {"leastsquares": "squared", "absolutedeviation": "absolute"}.get(
            opt.get("regressionlossfunctionbdtg", "Huber").lower(), "huber")}
    if not regression:
        return {"score_min": -1.0 if leaf_rule == "ntype" else 0.0}
    return {}


def from_tmva_xml(path: str | os.PathLike):
    """Read a TMVA ``MethodBDT`` weight file into a fitted hepbdt estimator.

    Classification (BoostType AdaBoost, RealAdaBoost, Bagging, Grad) gives a BDTClassifier
    (class 1 = TMVA's Signal), regression (Grad, AdaBoostR2, Bagging) a BDTRegressor,
    multi-class (Grad: tree t adds to class t mod K) a BDTClassifier whose ``classes_`` are
    the file's class names in index order and whose ``predict_proba`` is the Reader's
    ``EvaluateMulticlass``.
    ``tmva_response(model, X)`` is the Reader's output; ``decision_function`` is the raw
    score (Grad: F, with P = 1/(1+exp(-2F)); a hepbdt newton classifier's file, which its
    record of parameters names, gives that model's own F, P = 1/(1+exp(-F)); AdaBoost:
    the weighted mean). Cuts, responses, purities and boost
    weights are kept as the float32 numbers the Reader uses. The file's options, node
    purities and variable ranges are kept in ``forest_.extra["tmva"]`` for re-export.
    Split gains are not in TMVA files: each split counts 1 in the rankings.

    Raises
    ------
    FileNotFoundError; TMVAFormatError (a ValueError) naming the file and the element
    for malformed files, variable transformations, preselection, Fisher cuts, an
    unsupported BoostType, or anything the Reader would read otherwise (see the module
    docstring).
    """
    path = Path(path)
    root, method = _read_root(path)
    where = str(path)
    info, analysis = _general_info(root, where)
    regression = analysis == "regression"
    class_names = _class_names(root, where) if analysis == "multiclass" else None
    options = _read_options(root, where)
    opt = {n.lower(): v for n, _, v in options}  # TMVA matches option names in any case
    boost, yes_no = _boost_type(opt, regression, where)
    if class_names is not None and boost != "Grad":
        raise TMVAFormatError(f"{where}: a multi-class file with BoostType={boost!r}; TMVA's "
                              "multi-class BDT is BoostType=Grad")
    variables, target = _read_inputs(root, regression, where, class_names is not None)
    # Grad (GetGradBoostMVA, multi-class) and regression ask each tree for its purity
    bts, leaf_rule = _read_weights(root, yes_no and boost != "Grad" and not regression, where)
    try:  # before the trees are read: a file of more would be saved and not load again
        check_round_count(-(-len(bts) // len(class_names or [0])), f"{where}: the file")
    except ModelFormatError as exc:
        raise TMVAFormatError(str(exc)) from None
    forest, node_purity, max_depth = _read_forest(
        bts, where, len(variables), boost, regression, leaf_rule,
        len(class_names) if class_names is not None else 1)

    kind = "regressor" if regression else "classifier"
    extra = _loss_extra(boost, regression, leaf_rule, opt)
    if class_names is not None:
        extra = {**forest.extra, "loss": "softmax"}
    extra["tmva"] = {
        "method_name": method.split("::", 1)[1],
        "boost_type": "AdaBoost" if boost == "RealAdaBoost" else boost,
        "analysis": {"regression": "Regression", "multiclass": "Multiclass"}.get(
            analysis, "Classification"), "yes_no_leaf": leaf_rule == "ntype",
        "options": options, "variables": variables, "target": target, "source": path.name,
        "training_events": _training_events(info.get("Training events"), where),
        "node_purity": node_purity,
    }
    forest.extra = extra
    params, classes = _recorded(info.get(PARAMETERS_INFO), kind, class_names, where)
    if params is None:
        params = _estimator_params(options, kind)
    if params is None:
        params = _fallback_params(forest, opt, boost, leaf_rule, max_depth, regression, extra)
    if classes is None:
        classes = class_names if class_names is not None else (0, 1)
    # the record's newton halved Grad leaves; the Reader reads other BoostTypes as they stand
    if (params.get("boosting") == "newton" and kind == "classifier" and class_names is None
            and boost == "Grad"):
        _as_logistic(forest)
    return from_forest(kind, forest, [v["name"] for v in variables], params, classes=classes)


def _as_logistic(forest: Forest) -> None:
    """A hepbdt newton classifier's file back to its own score: the export halved its
    leaves (TMVA's Grad is P = 1/(1+exp(-2F)), newton's P = 1/(1+exp(-F))), so read as
    they stand its decision_function was half the model's, beside params saying newton.
    Doubling the float32 numbers is exact; the re-export halves them again."""
    forest.value *= 2.0
    forest.base_score *= 2.0
    forest.extra["loss"] = "logistic"


def _recorded(text: str | None, kind: str, class_names: list[str] | None, where: str
              ) -> tuple[dict[str, Any] | None, list[Any] | None]:
    """The estimator parameters and a classifier's labels that a hepbdt export recorded
    (GeneralInfo PARAMETERS_INFO), checked as a JSON model's are; (None, None) for a file
    without the record (TMVA's). A classifier's labels stand for TMVA's classes in order
    (two classes: background, signal; more: the file's class names are the labels as text)."""
    if text is None:
        return None, None
    regression = kind == "regressor"
    cls = ESTIMATORS["BDTRegressor" if regression else "BDTClassifier"]
    name = f"GeneralInfo {PARAMETERS_INFO!r}"
    doc = parse_json(Path(where), text.encode(), TMVAFormatError,
                     what=f"record of parameters ({name})", unique_keys=True)
    if not isinstance(doc, dict) or set(doc) != {"params", "classes"}:
        raise TMVAFormatError(f"{where}: {name} must be an object of 'params' and 'classes'")
    try:
        params = checked_params(cls, doc["params"])
        if regression != (doc["classes"] is None):
            raise ModelFormatError("'classes' must list a classifier's labels (null for a "
                                   "regressor)")
        if regression:
            return params, None
        n_labels = 2 if class_names is None else len(class_names)
        classes = checked_classes(doc["classes"], n_labels)
    except ModelFormatError as exc:
        raise TMVAFormatError(f"{where}: {name}: {exc}") from None
    if class_names is not None and [str(c) for c in classes] != class_names:
        raise TMVAFormatError(f"{where}: {name}: the labels {classes} are not the file's "
                              f"classes {class_names}")
    return params, classes


def _training_events(text: str | None, where: str) -> int:
    """GeneralInfo's "Training events" (0 when absent)."""
    try:
        value = float(text or 0)
    except ValueError:
        raise TMVAFormatError(f"{where}: GeneralInfo 'Training events'={text!r} is not a number") from None
    if not 0 <= value < 2**63:
        raise TMVAFormatError(f"{where}: GeneralInfo 'Training events'={text!r} is out of range")
    return int(value)


def _estimator_params(options: list[list[Any]], kind: str) -> dict[str, Any] | None:
    """The estimator parameters of the file's training options (None if hepbdt has none).

    TMVA writes every option's value as training used it, after ``MethodBDT::ProcessOptions``,
    and marks modified="Yes" those that the option string gave. Those are read, parsed as
    the string would be, and then corrected where ProcessOptions changed a value that the
    string did not give (so that the parse cannot know it) or ignores one that it gave.
    """
    given = {name: value for name, modified, value in options if modified}
    written = {name: value for name, _, value in options}
    regression = kind == "regressor"
    older = _older_defaults(options, kind)
    if older is None:
        return None
    given.update(older)
    boost = written.get("BoostType", "")
    if "UseYesNoLeaf" in written and (regression or boost != "Grad"):
        # fUseYesNoLeaf = kFALSE for BoostType=RealAdaBoost (written as AdaBoost), AdaCost and
        # regression trees: the written value (modified="No" then) is the one used.
        given["UseYesNoLeaf"] = written["UseYesNoLeaf"]
    if "NegWeightTreatment" in written:
        # ProcessOptions replaces the default InverseBoostNegWeights for Grad: the written
        # value (modified="No" then) is the treatment training used.
        given["NegWeightTreatment"] = written["NegWeightTreatment"]
    if regression:
        given.pop("SeparationType", None)  # fSepType = NULL: regression trees use RegressionVariance
    if boost == "Grad" or _truthy(written.get("UseRandomisedTrees", "False")):
        for name in ("PruneMethod", "PruneStrength", "PruningValFraction"):
            given.pop(name, None)  # fPruneMethod = kNoPruning whatever PruneMethod says
    if "UseNTrainEvents" in given:  # converted into fBaggedSampleFraction, written as such
        if _number_or_zero(given.pop("UseNTrainEvents")) > 0 and "BaggedSampleFraction" in written:
            given["BaggedSampleFraction"] = written["BaggedSampleFraction"]
            given.pop("GradBaggingFraction", None)
    text = ":".join(f"{name}={value}" for name, value in given.items())
    try:
        with warnings.catch_warnings():  # the file holds what ProcessOptions made of them
            warnings.simplefilter("ignore", TMVAOptionWarning)
            return parse_tmva_options(text, kind)
    except ValueError:
        return None


# Written beside another option that says the same (GradBaggingFraction is BaggedSampleFraction),
# or set by ProcessOptions where the string did not give them (corrected in _estimator_params).
_NOT_OLDER_DEFAULTS = ("gradbaggingfraction", "useyesnoleaf", "negweighttreatment")


def _older_defaults(options: list[list[Any]], kind: str) -> dict[str, str] | None:
    """The options written modified="No" whose value is not ROOT 6.40's default: a file of a
    TMVA with other defaults (before 4.2: NTrees 200 or 400, CostComplexity pruning) was
    trained with the written values, which parsing the given options alone would replace by
    today's. None where an old default means what no option says today: NNodesMax (a node
    limit beside MaxDepth before 4.2, converted into a depth since) and nEventsMin not 0."""
    randomised = any(n.lower() == "userandomisedtrees" and v.strip().lower() in TRUE_WORDS
                     for n, _, v in options)
    older: dict[str, str] = {}
    for name, modified, value in options:
        key = name.lower()
        if modified or key in _NOT_OLDER_DEFAULTS or (key == "usenvars" and not randomised):
            continue
        if key in ("nnodesmax", "neventsmin") and _number_or_zero(value) != 0:
            return None
        if differs_from_default(name, value, kind):
            older[name] = value
    return older


def _number_or_zero(text: str) -> float:
    """An option's number, 0 when it is not one."""
    try:
        return float(text)
    except ValueError:
        return 0.0


def _fallback_params(forest: Forest, opt: dict[str, str], boost: str, leaf_rule: str, max_depth: int,
                     regression: bool, extra: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"n_trees": forest.n_rounds, "max_depth": min(max(1, max_depth), 30)}
    if boost == "Grad":
        params["boosting"] = "gradient"
        try:
            params["learning_rate"] = float(opt.get("shrinkage", "1"))
        except ValueError:
            pass
        if regression:
            params["loss"] = extra["loss"]
    elif not regression:
        params["boosting"] = "bagging" if boost == "Bagging" else "adaboost"
        params["use_yes_no_leaf"] = leaf_rule == "ntype"
    return params
