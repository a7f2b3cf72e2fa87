"""Model files: the versioned JSON of one estimator, the k-fold manifest, ``load_model``.

A model file is data, not code: JSON with a format name and version, validated on load
(no pickle): every value is checked for its type and range, the estimator's options with
the estimator's own check, and files over ``MAX_MODEL_BYTES`` or of more than ``MAX_NODES``
nodes are refused (see :mod:`hepbdt.model`), so that loading uses memory proportional to
the file. One estimator's file is what ``BDTClassifier.save`` / ``BDTRegressor.save``
write (``to_dict``); a k-fold training writes one such file per fold and a manifest
(:meth:`hepbdt.kfold.KFoldModel.save`). :func:`load_model` reads either.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .estimators import (
    ADABOOST_BOOSTINGS,
    BDTClassifier,
    BDTRegressor,
    ParameterError,
    from_forest,
    warn_class_order,
)
from .kfold import KFOLD_FORMAT, KFOLD_FORMAT_VERSION, KFoldModel
from .model import (
    CLASSIFIER_LOSSES,
    FORMAT_NAME,
    FORMAT_VERSION,
    NON_FINITE,
    REGRESSOR_LOSSES,
    Forest,
    ModelFormatError,
    check_model_size,
)
from .tmva_options import MAX_POISSON_MEAN

# Options the estimator's check_params does not look at (they matter at fit and predict time).
RUNTIME_PARAMS = {"n_jobs": (int, type(None)), "random_state": (int, type(None)),
                  "verbose": (bool, int)}

__all__ = ["load_model", "load_model_digest", "ModelBytes", "estimator_from_dict", "kfold_from_manifest",
           "check_fold_name"]


def load_model(path: str | os.PathLike) -> BDTClassifier | BDTRegressor | KFoldModel:
    """Load a model saved with ``save`` and validate it: a fitted estimator, or a
    :class:`~hepbdt.kfold.KFoldModel` for the manifest of a k-fold training."""
    return load_model_digest(path)[0]


class ModelBytes:
    """What model files were read, in order: their paths and the SHA-256 of their bytes in
    turn (``sha256sum`` of one file; of a k-fold manifest followed by its fold files)."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.file_sha256: list[str] = []  # of each file's bytes
        self._digest = hashlib.sha256()

    def add(self, path: Path, data: bytes) -> None:
        """Record the bytes ``data`` read from ``path``."""
        self.files.append(os.fspath(path))
        self.file_sha256.append(hashlib.sha256(data).hexdigest())
        self._digest.update(data)

    def sha256(self) -> str:
        """The SHA-256 (hex) of every byte recorded, in order."""
        return self._digest.hexdigest()


def load_model_digest(path: str | os.PathLike, read: ModelBytes | None = None
                      ) -> tuple[BDTClassifier | BDTRegressor | KFoldModel, ModelBytes]:
    """:func:`load_model`, and the files it read with the SHA-256 of their bytes (a k-fold
    manifest's, then its fold files' in fold order), added to ``read`` when given (several
    models read in turn). Taken from the bytes parsed, not by reading the files again: a
    training swapping a new set into the folder in between gave the new model's digest
    beside the old model."""
    path = Path(path)
    read = ModelBytes() if read is None else read
    doc = _read_json(path, read)
    if isinstance(doc, dict) and doc.get("kind") == "kfold":
        model = kfold_from_manifest(path, doc, read)
        warn_class_order(model.models[0])
        return model, read
    estimator = _estimator_from_file(path, doc)
    warn_class_order(estimator)
    return estimator, read


def _read_json(path: Path, read: ModelBytes | None = None) -> Any:
    """The JSON document of a model file (its bytes recorded in ``read`` when given);
    FileNotFoundError or ModelFormatError."""
    data = read_model_file(path)
    if read is not None:
        read.add(path, data)
    return parse_json(path, data, unique_keys=True)


def read_model_file(path: Path, what: str = "model file",
                    error: type[ModelFormatError] = ModelFormatError) -> bytes:
    """The bytes of a model file: FileNotFoundError when there is none, ``error`` (a
    ModelFormatError) for a directory, an unreadable file or one over ``MAX_MODEL_BYTES``."""
    if path.is_dir():
        raise error(f"{path}: is a directory, not a {what}")
    if path.exists() and not path.is_file():
        raise error(f"{path}: is not a regular file (a device, FIFO or socket), not a {what}")
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    try:
        check_model_size(str(path), path.stat().st_size)
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    except ModelFormatError as exc:
        raise error(str(exc)) from None
    _check_part_count(path, data, what, error)
    return data


FEW_PARTS = 100_000  # JSON arrays and objects, XML elements: what any model file may hold
BYTES_A_PART = 32  # and beyond those, at least this many bytes of the file for each


def _check_part_count(path: Path, data: bytes, what: str, error: type[ModelFormatError]) -> None:
    """``error`` for a file of many more JSON arrays or objects, or XML tags, than a model
    writes (its numbers sit in a few long arrays; a TMVA node takes over 100 bytes): each
    takes 60-250 bytes of memory to parse, so an empty list ("[],", 3 bytes) a thousand
    times over took 28 times the file's size, a file under the size limit ~14 GB."""
    parts = data.count(b"[") + data.count(b"{") + data.count(b"<")
    if parts > FEW_PARTS + len(data) // BYTES_A_PART:
        raise error(f"{path}: {parts:,} JSON arrays, objects or XML tags in {len(data):,} "
                    f"bytes, more than a {what} holds (at most {FEW_PARTS:,} and one for "
                    f"every {BYTES_A_PART} bytes beyond); it is not one hepbdt reads")


def parse_json(path: Path, data: bytes, error: type[ModelFormatError] = ModelFormatError,
               what: str = "JSON model file", hint: str = "", unique_keys: bool = False) -> Any:
    """``json.loads(data)``; ``error`` naming the file for anything that is not JSON (also
    huge integers and nesting too deep for the parser). ``unique_keys``: an object that
    names a key twice is an error too (json keeps the last, other readers the first)."""
    if not data.strip():
        raise error(f"{path}: the file is empty, not a {what}{hint}")
    try:
        return json.loads(data, object_pairs_hook=_unique_object if unique_keys else None)
    except _RepeatedKey as exc:
        raise error(f"{path}: not a {what}: an object has the key {exc.args[0]!r} twice, "
                    f"so which value counts is unclear{hint}") from None
    except RecursionError:
        raise error(f"{path}: not a {what} (nested too deeply){hint}") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 4300 digits
        if b"<MethodSetup" in data[:4096] and what == "JSON model file":
            hint = (": it is a TMVA weight file; read it with hepbdt.interop.from_tmva_xml "
                    "and save() the model as JSON for the command line" + hint)
        raise error(f"{path}: not a {what} ({exc}){hint}") from None


class _RepeatedKey(Exception):
    """A JSON object that names one key twice (its name in args[0])."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``dict(pairs)``, raising _RepeatedKey when a key appears twice."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def _estimator_from_file(path: Path, doc: Any) -> BDTClassifier | BDTRegressor:
    """The estimator of one model file's document, its format and version checked."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        hint = ("; it is an XGBoost model: read it with hepbdt.interop.from_xgboost_json and "
                "save() the model as JSON for the command line"
                if isinstance(doc, dict) and "learner" in doc else "")
        raise ModelFormatError(f"{path}: not a hepbdt model (expected \"format\": "
                               f"\"{FORMAT_NAME}\"){hint}")
    version = doc.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise ModelFormatError(f"{path}: format_version {_brief(version)} is not supported "
                               f"(this hepbdt reads version {FORMAT_VERSION})")
    try:
        return estimator_from_dict(doc)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from exc


def estimator_from_dict(doc: dict[str, Any]) -> BDTClassifier | BDTRegressor:
    """A fitted estimator from a model dict (``to_dict``); ModelFormatError when invalid."""
    kind = doc.get("estimator")
    cls = {"BDTClassifier": BDTClassifier, "BDTRegressor": BDTRegressor}.get(
        kind if isinstance(kind, str) else "")
    if cls is None:
        raise ModelFormatError(f"estimator {_brief(kind)} is not known; valid: "
                               "['BDTClassifier', 'BDTRegressor']")
    params = checked_params(cls, doc.get("params"))
    forest = Forest.from_dict(doc.get("forest"), "forest")
    names = doc.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != forest.n_features
                              or not all(isinstance(n, str) for n in names)):
        raise ModelFormatError(f"feature_names must list {forest.n_features} names (or be null)")
    repeated = _repeated(names or [])
    if repeated is not None:
        raise ModelFormatError(f"feature_names lists {repeated[0]!r} twice (features "
                               f"{repeated[1]} and {repeated[2]}); each feature needs its own name")
    definitions = doc.get("feature_definitions") or {}
    if not isinstance(definitions, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in definitions.items()):
        raise ModelFormatError("feature_definitions must map feature names to expressions")
    classes = doc.get("classes")
    if cls is BDTClassifier:
        checked_classes(classes, max(2, forest.n_classes))
    loss = forest.extra.get("loss")
    valid_losses = CLASSIFIER_LOSSES if cls is BDTClassifier else REGRESSOR_LOSSES
    if loss is not None and loss not in valid_losses:
        raise ModelFormatError(f"forest.extra.loss {_brief(loss)} is not a loss of a "
                               f"{kind}; valid: {sorted(valid_losses)}")
    evals = doc.get("evals_result") or {}
    if not isinstance(evals, dict) or not all(
            isinstance(curves, dict) and all(_losses(c, "evals_result") is not None
                                             for c in curves.values())
            for curves in evals.values()):
        raise ModelFormatError("evals_result must map data sets to {metric: [numbers]}")
    best = doc.get("best_iteration")
    if best is not None and (type(best) is not int or best < 0):
        raise ModelFormatError(f"best_iteration {_brief(best)} must be an integer >= 0 or null")
    validation = _losses(doc.get("validation_loss"), "validation_loss")
    evaluated = max([forest.n_rounds, len(validation or [])]
                    + [len(c) for curves in evals.values() for c in curves.values()])
    if best is not None and best >= evaluated:  # the report printed a damaged 10**12 as given
        raise ModelFormatError(f"best_iteration {best} is beyond the {evaluated} rounds the "
                               "model grew or evaluated; it counts from 0")
    used = doc.get("min_node_size_used")
    if used is not None and (not isinstance(used, int | float) or isinstance(used, bool)
                             or not 0 <= used < 0.5):
        raise ModelFormatError(f"min_node_size_used {_brief(used)} must be a fraction in [0, 0.5) "
                               "or null")
    if cls is BDTClassifier:
        _check_score_link(cls(**params), forest)
    edges = _bin_edges(doc.get("bin_edges"), forest.n_features)
    _check_bin_thresholds(forest, edges)
    reason = doc.get("n_trees_reason")
    if reason is not None and not isinstance(reason, str):
        raise ModelFormatError(f"n_trees_reason {_brief(reason)} must be a string or null")
    est = from_forest(kind, forest, names, params, classes=classes or (),
                      feature_definitions=definitions,
                      train_loss=_losses(doc.get("train_loss"), "train_loss") or [],
                      validation_loss=validation,
                      best_iteration=best, evals_result=evals,
                      bin_edges=edges,
                      n_trees_reason=reason, min_node_size_used=used)
    # saved before a bare e, pi, inf or nan meant the constant only: apply refuses its
    # features that use one (a tree's branch of that name was read where there was one)
    est._expression_rules = _expression_rules(doc)  # 0: before a bare e meant the constant
    types = _branch_types(doc.get("branch_types"))
    if types is not None:  # absent in files saved before 2026-12-04 (late): apply checks nothing
        est.branch_types_ = types
    return est


# How a two-class forest turns its trees into a score and P(signal), by booster: what its
# training writes (aggregation, and extra.loss or extra.score_min; Forest.probability_link)
_SUM_LINKS = {"gradient": ("sigmoid", 2.0), "newton": ("sigmoid", 1.0),
              "realadaboost": ("sigmoid", 2.0)}


def _check_score_link(est: BDTClassifier, forest: Forest) -> None:
    """ModelFormatError unless a two-class forest aggregates its trees and links its score
    to P(signal) as a training with the estimator's options does: a file whose forest
    says otherwise (extra.loss deleted from a newton model: P off by 0.12; extra.score_min
    deleted with use_yes_no_leaf=False: off by 0.49; another aggregation) scored without
    complaint. Multi-class forests carry their own link (softmax, SAMME)."""
    if forest.n_classes > 1:
        return
    if est.decorrelation == "uboost":
        expected: tuple[str, tuple[str, float]] = ("uboost", ("clip", 0.0))
    elif est.boosting in _SUM_LINKS:
        expected = ("sum", _SUM_LINKS[est.boosting])
    else:  # the AdaBoost family's weighted mean of leaves +-1 or purities in [0, 1]
        expected = ("weighted_mean", ("clip", -1.0 if est.use_yes_no_leaf else 0.0))
    found = (forest.aggregation, forest.probability_link())
    if found != expected:
        raise ModelFormatError(
            f"forest: aggregation {found[0]!r} with probability link {found[1]} is not what "
            f"a classifier of boosting={est.boosting!r}, use_yes_no_leaf={est.use_yes_no_leaf!r}, "
            f"decorrelation={est.decorrelation!r} (its params) scores with: aggregation "
            f"{expected[0]!r}, link {expected[1]} (forest.extra's 'loss' or 'score_min'); "
            "the file is damaged or edited, or was saved by a hepbdt before 2026-12-05 after "
            "set_params changed the model's options (its trees are another booster's: "
            "train it again)")


def _expression_rules(doc: dict) -> int:
    """The version of the expression rules the file's features were computed by
    (``hepbdt._version.EXPRESSION_RULES``): as written, else 1 for a file that says
    "constants": "bare" (2026-12-04), else 0."""
    rules = doc.get("expression_rules")
    if rules is None:
        return 1 if doc.get("constants") == "bare" else 0
    if type(rules) is not int or rules < 1 or doc.get("constants") != "bare":
        raise ModelFormatError(f"expression_rules {_brief(rules)} must be a whole number >= 1, "
                               "beside \"constants\": \"bare\" (hepbdt writes both)")
    return rules


# a branch's type text (hepbdt.io.branch_types): number type, then [k] or [] for arrays
_TYPE_TEXT = re.compile(r"(bool|u?int(8|16|32|64)|float(16|32|64))(\[\]|\[[1-9][0-9]{0,8}\])?")


def _branch_types(value: Any) -> dict[str, str] | None:
    """The model file's ``branch_types`` (branch -> type text such as "float32[3]"), or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _TYPE_TEXT.fullmatch(v)
            for k, v in value.items()):
        raise ModelFormatError("branch_types must map branch names to their types (\"bool\", "
                               "\"int32\", \"float32[3]\", \"float64[]\", ...), or be absent")
    return dict(value)


def checked_classes(classes: Any, n_labels: int) -> list[Any]:
    """A classifier's ``classes`` of a model file: ``n_labels`` different labels of one kind
    (ModelFormatError otherwise)."""
    if (not isinstance(classes, list) or len(classes) != n_labels
            or not all(_is_label(c) for c in classes) or len(set(map(repr, classes))) != n_labels):
        raise ModelFormatError(f"a classifier whose forest scores {n_labels} classes needs "
                               f"'classes' with {n_labels} different labels (strings or numbers)")
    if len(set(np.asarray(classes).tolist())) != n_labels:
        # one array holds the labels: [1, true] becomes [1, 1], ["0", 0] becomes ['0', '0']
        raise ModelFormatError(f"classes {_brief(classes)} are {n_labels} labels, but not "
                               f"{n_labels} different ones as one array "
                               f"({_brief(np.asarray(classes).tolist())}); give labels of one "
                               "kind: all strings, or all numbers")
    return classes


def _repeated(names: list[str]) -> tuple[str, int, int] | None:
    """The first name that appears twice, with its two positions; None if none does."""
    first: dict[str, int] = {}
    for j, name in enumerate(names):
        if name in first:
            return name, first[name], j
        first[name] = j
    return None


def _bin_edges(value: Any, n_features: int) -> list[np.ndarray] | None:
    """The saved bin edges (one increasing list of finite numbers per feature), or None."""
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == n_features and all(
        isinstance(edges, list) and len(edges) < 256
        and all(isinstance(e, int | float) and not isinstance(e, bool) and math.isfinite(e)
                for e in edges) for edges in value)
    if ok:
        arrays = [np.asarray(edges, dtype=np.float32) for edges in value]
        if all(np.all(np.diff(a) > 0) for a in arrays):
            return arrays
    raise ModelFormatError(f"bin_edges must list {n_features} increasing lists of at most 255 "
                           "finite numbers (or be null)")


def _check_bin_thresholds(forest: Forest, edges: list[np.ndarray] | None) -> None:
    """ModelFormatError unless each split's threshold is the edge its ``bin_threshold`` names
    (``x < edges[f][b]`` is ``code <= b``; +inf past the last edge), as training writes them:
    with ``bin_edges`` the staged scores of binned events follow ``bin_threshold`` and all
    others ``threshold``, which must not disagree."""
    if edges is None:
        return
    sizes = np.array([e.size for e in edges], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat = np.concatenate([*edges, np.full(1, np.inf, np.float32)]).astype(np.float32)
    split = np.flatnonzero(forest.feature >= 0)
    f, b = forest.feature[split].astype(np.int64), forest.bin_threshold[split].astype(np.int64)
    expected = flat[np.where(b < sizes[f], starts[f] + b, flat.size - 1)]
    bad = np.flatnonzero(expected != forest.threshold[split])
    if bad.size:
        node, i = int(split[bad[0]]), int(bad[0])
        raise ModelFormatError(
            f"forest node {node}: threshold {float(forest.threshold[node])!r} is not the edge "
            f"that its bin_threshold {int(b[i])} names in bin_edges[{int(f[i])}] "
            f"({float(expected[i])!r}); binned and unbinned events would be scored "
            "differently. Each split's threshold must be that edge (or bin_edges null)")


def checked_params(cls: type[BDTClassifier] | type[BDTRegressor], params: Any) -> dict[str, Any]:
    """The estimator options of a model file, passing the estimator's own check."""
    if not isinstance(params, dict):
        raise ModelFormatError("'params' must be an object of estimator options")
    unknown = sorted(set(params) - set(cls._param_names()))
    if unknown:
        raise ModelFormatError(f"params has unknown options {unknown}")
    # The writer spells a non-finite float as a string (strict JSON): a float option's
    # "Infinity" is read back as inf, for the option's own check to accept or refuse.
    floats = _float_params(cls)
    params = {key: float(value) if key in floats and isinstance(value, str)
              and value in NON_FINITE else value for key, value in params.items()}
    for key, types in RUNTIME_PARAMS.items():
        if key in params and (not isinstance(params[key], types)
                              or (key != "verbose" and isinstance(params[key], bool))):
            raise ModelFormatError(f"params.{key}: {_brief(params[key])} is not valid")
    if "signal_label" in params and not (params["signal_label"] is None
                                         or _is_label(params["signal_label"])):
        raise ModelFormatError(f"params.signal_label: {_brief(params['signal_label'])} is not a label")
    params = _retired_settings(params)
    try:
        cls(**params).check_params()
    except ParameterError as exc:
        raise ModelFormatError(f"params.{exc.param}: {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:  # a value of the wrong type
        raise ModelFormatError(f"params.{_bad_param(cls, params)}: not valid ({exc})") from None
    return params


def _retired_settings(params: dict[str, Any]) -> dict[str, Any]:
    """Training settings that files written before 2026-12-03 may hold and the estimators
    now refuse, as the value that does what they did, with a warning: early stopping for
    the AdaBoost family (it never acted), a negative ``tol`` (it never stopped: the
    loaded model keeps its trees either way; a refit with tol 0 may stop) and a Poisson
    mean ``subsample`` above MAX_POISSON_MEAN, bounded since 2026-12-05 (counts of a larger
    mean only rescale the weights; a refit uses the bound)."""
    params = dict(params)
    said = []
    if params.get("boosting") in ADABOOST_BOOSTINGS:
        for key, inert in (("early_stopping", False), ("early_stopping_rounds", None)):
            if params.get(key) not in (None, False):
                said.append(f"{key}={params[key]!r} (no effect on the AdaBoost family) as {inert}")
                params[key] = inert
    tol = params.get("tol")
    if isinstance(tol, int | float) and not isinstance(tol, bool) and -math.inf < tol < 0:
        said.append(f"tol={tol!r} as 0.0")
        params["tol"] = 0.0
    mean = params.get("subsample")
    if (params.get("subsample_mode") == "poisson" and isinstance(mean, int | float)
            and not isinstance(mean, bool) and MAX_POISSON_MEAN < mean < math.inf):
        said.append(f"subsample={mean!r} (a Poisson mean) as {MAX_POISSON_MEAN:g}")
        params["subsample"] = MAX_POISSON_MEAN
    if said:
        warnings.warn("the model file's training settings that hepbdt now refuses are read "
                      f"as follows: {'; '.join(said)}", stacklevel=4)
    return params


def _float_params(cls: type[BDTClassifier] | type[BDTRegressor]) -> set[str]:
    """The options whose values are floats and never strings (their annotation says so):
    a string option may be "NaN" itself (``signal_label``, a class named so)."""
    return {name for name, p in inspect.signature(cls.__init__).parameters.items()
            if "float" in str(p.annotation) and "str" not in str(p.annotation)}


def _bad_param(cls: type[BDTClassifier] | type[BDTRegressor], params: dict[str, Any]) -> str:
    """The first option that fails the estimator's check alone (its name, else "?")."""
    for key, value in params.items():
        try:
            cls(**{key: value}).check_params()
        except (TypeError, ValueError, OverflowError):
            return key
    return "?"


def _is_label(value: Any) -> bool:
    """A class label of a model file: a string, a boolean or a finite number."""
    if isinstance(value, str | bool | int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _losses(value: Any, key: str) -> list[float] | None:
    """A learning curve: null or a list of numbers (non-finite as the writer's strings)."""
    if value is None:
        return None
    ok = {int, float, str}
    if not isinstance(value, list) or not set(map(type, value)) <= ok or not all(
            v in NON_FINITE for v in value if isinstance(v, str)):
        raise ModelFormatError(f"{key} must be a list of numbers (or null)")
    try:
        return [float(v) for v in value]
    except OverflowError:
        raise ModelFormatError(f"{key}: an integer is too large for a float") from None


def _brief(value: Any) -> str:
    """``repr(value)`` cut to 40 characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _name_difference(listed: list[str] | None, names: list[str] | None) -> str:
    """How a fold model's feature names differ from the manifest's, in words."""
    if listed is None or names is None:
        return (f"the manifest lists {'none' if listed is None else len(listed)}, the model has "
                f"{'none' if names is None else len(names)}")
    for j, (a, b) in enumerate(zip(listed, names, strict=False)):
        if a != b:
            return f"feature {j} is {a!r} in the manifest, {b!r} in the model"
    return f"the manifest lists {len(listed)} features, the model takes {len(names)}"


def check_fold_name(where: str, name: str, fold: int,
                    error: type[Exception] = ModelFormatError) -> None:
    """``error`` when a fold file named as ``save`` names them (``<stem>_fold<j>.json``)
    stands at another place than j in 'models': event e is scored by model e % k, so a
    reordered list would score each event with the model trained on it."""
    found = re.search(r"_fold([0-9]+)\.json$", Path(name).name)
    if found and (len(found.group(1)) > 9 or int(found.group(1)) != fold):
        raise error(
            f"{where}: 'models' lists {name!r} for fold {fold}, but its name says fold "
            f"{found.group(1)}; fold i scores the events with event % k == i, so its file must "
            "be the model trained without them: list the files in fold order "
            "(<stem>_fold0.json, <stem>_fold1.json, ...)")


def kfold_from_manifest(path: str | os.PathLike, doc: dict[str, Any],
                        read: ModelBytes | None = None) -> KFoldModel:
    """The :class:`~hepbdt.kfold.KFoldModel` of a manifest ``doc`` read from ``path``; each
    fold file's bytes, in fold order, are recorded in ``read`` when given."""
    where = os.fspath(path)
    if doc.get("format") != KFOLD_FORMAT:
        raise ModelFormatError(f"{where}: a k-fold manifest's format must be {KFOLD_FORMAT!r}, "
                               f"not {_brief(doc.get('format'))}")
    version = doc.get("format_version")
    if type(version) is not int or version != KFOLD_FORMAT_VERSION:
        raise ModelFormatError(f"{where}: k-fold manifest format_version "
                               f"{_brief(version)} is not supported (this "
                               f"hepbdt reads {KFOLD_FORMAT_VERSION})")
    files = doc.get("models")
    k = doc.get("k")
    if (not isinstance(files, list) or type(k) is not int or len(files) != k or k < 2
            or not all(isinstance(name, str) for name in files)):
        raise ModelFormatError(f"{where}: a k-fold manifest needs k >= 2 and k model files "
                               "in 'models'")
    by = doc.get("by")
    if not isinstance(by, str) or not by.strip():
        raise ModelFormatError(f"{where}: 'by' must be the event-number expression the folds "
                               "were made with (e.g. \"event\")")
    outside = [name for name in files if name in ("", ".", "..") or Path(name).name != name
               or "\\" in name]
    if outside:
        raise ModelFormatError(f"{where}: fold model {outside[0]!r} is not a file name beside "
                               "the manifest; 'models' names the fold files in the manifest's "
                               "folder (<stem>_fold0.json, ...), where save writes them and the "
                               "output set's checksums cover them")
    features = doc.get("features")
    if features is not None and (not isinstance(features, list)
                                 or not all(isinstance(n, str) for n in features)):
        raise ModelFormatError(f"{where}: 'features' must list the fold models' feature names "
                               "(or be null for models fitted on unnamed columns)")
    recorded = doc.get("sha256")  # absent in manifests written before 2026-12-02
    if recorded is not None and (not isinstance(recorded, list) or len(recorded) != k
                                 or not all(isinstance(h, str) for h in recorded)):
        raise ModelFormatError(f"{where}: 'sha256' must list one SHA-256 a fold model")
    base = Path(path).parent
    first: dict[Path, int] = {}
    digests: dict[bytes, int] = {}
    models = []
    for i, name in enumerate(files):
        fold_path = base / name
        data = read_model_file(fold_path)
        if read is not None:
            read.add(fold_path, data)
        fold_doc = parse_json(fold_path, data, unique_keys=True)
        if isinstance(fold_doc, dict) and fold_doc.get("kind") == "kfold":
            raise ModelFormatError(f"{where}: fold model {name!r} is itself a k-fold manifest")
        resolved = fold_path.resolve()
        if resolved in first:
            raise ModelFormatError(
                f"{where}: 'models' names the same file for folds {first[resolved]} and {i} "
                f"({files[first[resolved]]!r}, {name!r}); each of the {k} folds needs its "
                "own model file, the model trained without that fold's events")
        first[resolved] = i
        digest = hashlib.sha256(data).digest()
        if digest in digests:  # a copy: trainings on different events never agree to the bit
            raise ModelFormatError(
                f"{where}: fold model files {files[digests[digest]]!r} and {name!r} are the "
                f"same model (byte for byte); each of the {k} folds needs its own model, the "
                "one trained without that fold's events")
        digests[digest] = i
        check_fold_name(where, name, i)
        if recorded is not None and recorded[i] != digest.hex():
            raise ModelFormatError(
                f"{where}: fold model {name!r} is not the file this manifest was written with "
                "(its SHA-256 differs: a save interrupted between the fold files, or a file "
                "replaced since); save the k-fold model again")
        del data
        model = _estimator_from_file(fold_path, fold_doc)
        names = getattr(model, "feature_names_in_", None)
        names = None if names is None else [str(n) for n in names]
        if "features" in doc and names != features:
            raise ModelFormatError(f"{where}: fold model {name!r} does not take the manifest's "
                                   f"features ({_name_difference(features, names)}); the "
                                   "manifest and its fold models must come from one training")
        models.append(model)
    try:
        return KFoldModel(models, by=by)
    except ValueError as exc:
        raise ModelFormatError(f"{where}: {exc}") from None
