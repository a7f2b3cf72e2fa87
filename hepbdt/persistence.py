"""Model files: the versioned JSON of one estimator, the k-fold manifest, ``load_model``.

A model file is data, not code: JSON with a format name and version, validated on load
(no pickle). One estimator's file is what ``BDTClassifier.save`` / ``BDTRegressor.save``
write (``to_dict``); a k-fold training writes one such file per fold and a manifest
(:meth:`hepbdt.kfold.KFoldModel.save`). :func:`load_model` reads either.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .estimators import BDTClassifier, BDTRegressor, from_forest
from .kfold import KFOLD_FORMAT_VERSION, KFoldModel
from .model import FORMAT_NAME, FORMAT_VERSION, Forest, ModelFormatError

__all__ = ["load_model", "estimator_from_dict", "kfold_from_manifest"]


def load_model(path: str | os.PathLike) -> BDTClassifier | BDTRegressor | KFoldModel:
    """Load a model saved with ``save`` and validate it: a fitted estimator, or a
    :class:`~hepbdt.kfold.KFoldModel` for the manifest of a k-fold training."""
    path = Path(path)
    doc = _read_json(path)
    if isinstance(doc, dict) and doc.get("kind") == "kfold":
        return kfold_from_manifest(path, doc)
    return _estimator_from_file(path, doc)


def _read_json(path: Path) -> Any:
    """The JSON document of a model file; FileNotFoundError or ModelFormatError."""
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist")
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{path}: not a JSON model file ({exc})") from exc


def _estimator_from_file(path: Path, doc: Any) -> BDTClassifier | BDTRegressor:
    """The estimator of one model file's document, its format and version checked."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise ModelFormatError(f"{path}: not a hepbdt model (expected \"format\": \"{FORMAT_NAME}\")")
    version = doc.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelFormatError(f"{path}: format_version {version!r} is not supported "
                               f"(this hepbdt reads version {FORMAT_VERSION})")
    try:
        return estimator_from_dict(doc)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{path}: {exc}") from exc


def estimator_from_dict(doc: dict[str, Any]) -> BDTClassifier | BDTRegressor:
    """A fitted estimator from a model dict (``to_dict``); ModelFormatError when invalid."""
    kind = doc.get("estimator")
    cls = {"BDTClassifier": BDTClassifier, "BDTRegressor": BDTRegressor}.get(kind)
    if cls is None:
        raise ModelFormatError(f"estimator {kind!r} is not known; valid: "
                               "['BDTClassifier', 'BDTRegressor']")
    params = doc.get("params")
    if not isinstance(params, dict):
        raise ModelFormatError("'params' must be an object of estimator options")
    unknown = sorted(set(params) - set(cls._param_names()))
    if unknown:
        raise ModelFormatError(f"params has unknown options {unknown}")
    forest = Forest.from_dict(doc.get("forest"), "forest")
    names = doc.get("feature_names")
    if names is not None and not isinstance(names, list):
        raise ModelFormatError(f"feature_names must list {forest.n_features} names (or be null)")
    definitions = doc.get("feature_definitions") or {}
    if not isinstance(definitions, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in definitions.items()):
        raise ModelFormatError("feature_definitions must map feature names to expressions")
    classes = doc.get("classes")
    if cls is BDTClassifier and not isinstance(classes, list):
        raise ModelFormatError("a classifier needs 'classes' with two labels")
    evals = doc.get("evals_result") or {}
    if not isinstance(evals, dict):
        raise ModelFormatError("evals_result must be an object")
    return from_forest(kind, forest, names, params, classes=classes or (),
                       feature_definitions=definitions,
                       train_loss=doc.get("train_loss") or [],
                       validation_loss=doc.get("validation_loss"),
                       best_iteration=doc.get("best_iteration"), evals_result=evals)


def kfold_from_manifest(path: str | os.PathLike, doc: dict[str, Any]) -> KFoldModel:
    """The :class:`~hepbdt.kfold.KFoldModel` of a manifest ``doc`` read from ``path``."""
    where = os.fspath(path)
    if doc.get("format_version") != KFOLD_FORMAT_VERSION:
        raise ModelFormatError(f"{where}: k-fold manifest format_version "
                               f"{doc.get('format_version')!r} is not supported (this "
                               f"hepbdt reads {KFOLD_FORMAT_VERSION})")
    files = doc.get("models")
    k = doc.get("k")
    if not isinstance(files, list) or not isinstance(k, int) or len(files) != k or k < 2:
        raise ModelFormatError(f"{where}: a k-fold manifest needs k >= 2 and k model files "
                               "in 'models'")
    by = doc.get("by", "event")
    if not isinstance(by, str):
        raise ModelFormatError(f"{where}: 'by' must be the event-number expression")
    base = Path(path).parent
    models = []
    for name in files:
        fold_path = base / str(name)
        doc = _read_json(fold_path)
        if isinstance(doc, dict) and doc.get("kind") == "kfold":
            raise ModelFormatError(f"{where}: fold model {name!r} is itself a k-fold manifest")
        models.append(_estimator_from_file(fold_path, doc))
    try:
        return KFoldModel(models, by=by)
    except ValueError as exc:
        raise ModelFormatError(f"{where}: {exc}") from None
