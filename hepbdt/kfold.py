"""k-fold training's one rule and its model: event ``e`` belongs to fold ``e % k``.

:func:`fold_of` is the only place that computes a fold: :class:`KFoldModel` scores each
event with the model that did not train on it, :meth:`hepbdt.io.Dataset.kfold` splits by
it, and the analysis outputs label score trees with it. Reading a manifest is
:func:`hepbdt.persistence.load_model`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._util import atomic_write_text, model_scores

__all__ = ["KFoldModel", "fold_of", "KFOLD_FORMAT", "KFOLD_FORMAT_VERSION"]

KFOLD_FORMAT = "hepbdt-kfold"
KFOLD_FORMAT_VERSION = 1


def fold_of(event: Any, k: int) -> np.ndarray:
    """The fold of each event: ``event % k`` (int64, in 0..k-1, also for negative numbers)."""
    return np.mod(np.asarray(event, dtype=np.int64), int(k))


class KFoldModel:
    """The k models of a k-fold training: model ``i`` scores the events of fold ``i``
    (:func:`fold_of`), the events it never saw.

    Parameters
    ----------
    models : k fitted models with the same features.
    by : the event-number expression the folds are taken from (``"event"``).
    """

    kind = "kfold"

    def __init__(self, models: Sequence[Any], by: str = "event") -> None:
        self.models = list(models)
        if len(self.models) < 2:
            raise ValueError("a KFoldModel needs at least two models")
        names = [list(getattr(m, "feature_names_in_", [])) for m in self.models]
        if any(n != names[0] for n in names):
            raise ValueError("the fold models use different features: "
                             + "; ".join(str(n) for n in names))
        self.by = by

    @property
    def k(self) -> int:
        """The number of folds."""
        return len(self.models)

    @property
    def feature_names_in_(self) -> list[str]:
        """The features every fold model takes, in order."""
        return [str(n) for n in self.models[0].feature_names_in_]

    @property
    def feature_definitions_(self) -> dict[str, str]:
        """The expressions behind feature names that are aliases (as the fold models keep them)."""
        return dict(getattr(self.models[0], "feature_definitions_", None) or {})

    def folds(self, event: Any) -> np.ndarray:
        """Fold number of each event (:func:`fold_of`)."""
        return fold_of(event, self.k)

    def decision_function(self, X: Any, event: Any) -> np.ndarray:
        """Score of each event by the model that did not train on it (a classifier's
        ``decision_function``, a regressor's ``predict``): float64 (n,), or (n, c) when the
        models return c scores per event."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        folds = self.folds(event)
        if folds.shape != (X.shape[0],):
            raise ValueError(f"event has shape {folds.shape}; X has {X.shape[0]} events")
        scores: np.ndarray | None = None
        for i, model in enumerate(self.models):
            mask = folds == i
            if not mask.any():
                continue
            part = model_scores(model, X[mask])
            if scores is None:
                scores = np.full((X.shape[0], *part.shape[1:]), np.nan)
            scores[mask] = part
        if scores is None:  # no events
            scores = model_scores(self.models[0], X)
        return scores

    def fold_paths(self, path: str | os.PathLike) -> list[Path]:
        """Where :meth:`save` writes the fold models for a manifest at ``path``."""
        path = Path(path)
        stem = path.name[:-5] if path.name.endswith(".json") else path.name
        return [path.with_name(f"{stem}_fold{i}.json") for i in range(self.k)]

    def save(self, path: str | os.PathLike) -> list[Path]:
        """Write each fold model as JSON beside ``path`` and the manifest at ``path``.

        The manifest: ``{"format": "hepbdt-kfold", "kind": "kfold", "k": k, "by": "event",
        "models": ["model_fold0.json", ...], "features": [...]}``; model paths are relative
        to the manifest's folder.
        """
        paths = self.fold_paths(path)
        for model, fold_path in zip(self.models, paths, strict=True):
            model.save(fold_path)
        manifest = {
            "format": KFOLD_FORMAT, "format_version": KFOLD_FORMAT_VERSION, "kind": "kfold",
            "k": self.k, "by": self.by, "models": [p.name for p in paths],
            "features": self.feature_names_in_ if hasattr(self.models[0], "feature_names_in_")
            else None,  # models fitted on unnamed arrays
        }
        atomic_write_text(path, json.dumps(manifest, indent=1) + "\n")
        return [*paths, Path(path)]

    def __repr__(self) -> str:
        return f"KFoldModel(k={self.k}, by={self.by!r}, {type(self.models[0]).__name__})"
