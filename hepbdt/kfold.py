"""k-fold training's one rule and its model: event ``e`` belongs to fold ``e % k``.

:func:`fold_of` is the only place that computes a fold: :class:`KFoldModel` scores each
event with the model that did not train on it, :meth:`hepbdt.io.Dataset.kfold` splits by
it, and the analysis outputs label score trees with it. Reading a manifest is
:func:`hepbdt.persistence.load_model`.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._util import (
    DeferredSignals,
    _as_matrix,
    atomic_path,
    check_read_records,
    column_positions,
    file_sha256,
    is_classifier,
    model_scores,
    trained_with_missing,
    user_stacklevel,
    warn_unnamed_columns,
    warn_unseen_missing,
)
from .binned import MISSING_CODE, BinnedMatrix
from .output_set import RunLock

__all__ = ["KFoldModel", "FoldExpressionWarning", "fold_of", "event_numbers",
           "invalid_event_numbers", "shown_number", "KFOLD_FORMAT", "KFOLD_FORMAT_VERSION",
           "unrecorded_by", "NOT_EVENT_NUMBERS"]

KFOLD_FORMAT = "hepbdt-kfold"
KFOLD_FORMAT_VERSION = 1


#: What a value that is no event number is (the messages of every check).
NOT_EVENT_NUMBERS = ("NaN, infinite, fractional, beyond +-2**63, or a float of 2**53 or "
                     "beyond (float32: 2**24), which may be another integer rounded: read "
                     "event numbers as integers")


def fold_of(event: Any, k: int) -> np.ndarray:
    """The fold of each event: ``event % k`` (int64, in 0..k-1, also for negative numbers).

    ``event`` must hold integers in int64's range (any integer dtype, or floats that are
    exact integers below 2**53, float32 2**24); ValueError otherwise (NaN, inf, fractions,
    uint64 beyond 2**63 - 1, floats from those on),
    as :class:`hepbdt.io.Dataset` refuses them, rather than a fold of a truncated or
    wrapped-around number. ``k`` must be an integer >= 2.
    """
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise ValueError(f"k must be an integer >= 2, not {k!r}")
    return np.mod(event_numbers(event), int(k))


def event_numbers(event: Any) -> np.ndarray:
    """``event`` as int64 event numbers; ValueError naming how many values and the first
    that are not integers in int64's range (:func:`invalid_event_numbers`)."""
    values = np.asarray(event)
    if values.dtype.kind in "bi":
        return values.astype(np.int64, copy=False)
    bad = invalid_event_numbers(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"event numbers must be integers in int64's range (k-fold assigns event e to "
            f"fold e % k): {int(np.count_nonzero(bad))} of {values.size} are not "
            f"({NOT_EVENT_NUMBERS}); the first, event[{first}], is "
            f"{shown_number(values.reshape(-1)[first])}"
        )
    return values.astype(np.int64)


def shown_number(value: Any) -> str:
    """A value for a message: ``nan``, ``1.5``, ``1e+30``, ``18446744073709551615``."""
    if isinstance(value, float | np.floating):
        return repr(float(value))
    if isinstance(value, np.integer) and not isinstance(value, np.timedelta64):
        return str(int(value))  # a timedelta64 is an np.integer that int() refuses
    return repr(value)


def invalid_event_numbers(values: np.ndarray) -> np.ndarray:
    """A mask of the values that are not integers in int64's range (NaN, +-inf, fractions,
    beyond +-2**63, or not numbers at all); floats that are exact integers are valid below
    the end of the run of integers that their type holds every one of (2**53 for float64,
    2**24 for float32): from there on, a float event number may already be another rounded
    (2**24 + 1 is written as 2**24, 2**62 + 12346 reads as 2**62 + 12344, in another
    fold). The rule of every event number: a Dataset's, a read's and a k-fold model's."""
    kind = values.dtype.kind
    if kind in "bi":
        return np.zeros(values.shape, dtype=bool)
    if kind == "u":
        return values > np.iinfo(np.int64).max
    if kind == "f":
        exact = float(2 ** (np.finfo(values.dtype).nmant + 1))
        with np.errstate(invalid="ignore"):
            return ~(np.isfinite(values) & (values == np.floor(values))
                     & (np.abs(values) < exact))
    if kind == "O":
        return np.fromiter((not _is_int64(v) for v in values.reshape(-1)), dtype=bool,
                           count=values.size).reshape(values.shape)
    return np.ones(values.shape, dtype=bool)


def _is_int64(value: Any) -> bool:
    """True for a number (of any type) that is an integer in int64's range."""
    if isinstance(value, bool | np.bool_ | int | np.integer):
        return -(2**63) <= int(value) < 2**63
    if isinstance(value, float | np.floating):
        return bool(invalid_event_numbers(np.asarray([value]))[0] == 0)
    return False


def _check_fold_models(models: list[Any]) -> None:
    """ValueError unless the fold models are k different models of one kind: the same
    type, task (classifier or regressor), classes, features, feature names, the
    expressions behind aliased names (apply reads every fold's with fold 0's) and kind of
    score (AdaBoost's weighted mean in [-1, 1] is not gradient boosting's sum). Model i
    scores the events model j trained on, so one model at two folds, or folds whose scores
    mean different things, would give scores that only look out of fold."""
    seen: dict[int, int] = {}
    for i, model in enumerate(models):
        if id(model) in seen:
            raise ValueError(f"fold models {seen[id(model)]} and {i} are the same model; each "
                             "fold needs the model trained without its events")
        seen[id(model)] = i

    def differ(what: str, values: list[Any]) -> None:
        if any(v != values[0] for v in values):
            raise ValueError(f"the fold models have different {what}: "
                             + "; ".join(f"fold {i}: {v}" for i, v in enumerate(values)))

    differ("types", [type(m).__name__ for m in models])
    differ("tasks", ["classifier" if is_classifier(m) else "regressor" for m in models])
    differ("classes", [None if getattr(m, "classes_", None) is None
                       else np.asarray(m.classes_).tolist() for m in models])
    differ("feature counts", [getattr(m, "n_features_in_", None) for m in models])
    differ("features", [[str(n) for n in getattr(m, "feature_names_in_", [])] for m in models])
    differ("feature definitions", [_definitions(m) for m in models])
    differ("scores", [_score_kind(m) for m in models])


def _score_kind(model: Any) -> str | None:
    """What a fold model's score is: how its trees combine, how a two-class score maps to
    P(signal), and whether a DDT map follows; None for a model without a hepbdt forest."""
    forest = getattr(model, "forest_", None)
    if forest is None or not hasattr(forest, "aggregation"):
        return None
    kind = f"trees combined by {forest.aggregation}"
    if is_classifier(model) and getattr(forest, "n_classes", 1) <= 1:
        link, constant = forest.probability_link()
        kind += (f", P(signal) = 1/(1+exp(-{constant:g} F))" if link == "sigmoid"
                 else f", P(signal) = (F - {constant:g})/(1 - {constant:g}) clipped to [0, 1]")
    if (getattr(forest, "extra", None) or {}).get("decorrelation_map") is not None:
        kind += ", through a DDT map"
    return kind


def _definitions(model: Any) -> dict[str, str]:
    """A model's feature names that stand for other expressions (aliases) and those."""
    definitions = getattr(model, "feature_definitions_", None) or {}
    return {str(k): str(v) for k, v in definitions.items() if str(k) != str(v)}


def unrecorded_by(what: str) -> str:
    """The refusal of ``what`` (saving, applying) for a KFoldModel without ``by``."""
    return ("the KFoldModel does not record the event-number expression its folds were made "
            f"with; {what} needs it: KFoldModel(models, by='event') with the branch or "
            "expression whose values the folds used (hepbdt.read(..., event='event'); a read "
            "without event= folds by entry numbers, which no file holds)")


class FoldExpressionWarning(UserWarning):
    """A k-fold model applied by an event expression other than the one its folds were
    made with: events are scored out of fold only if the two give the same numbers."""


class KFoldModel:
    """The k models of a k-fold training: model ``i`` scores the events of fold ``i``
    (:func:`fold_of`), the events it never saw.

    Parameters
    ----------
    models : k fitted models with the same features.
    by : the event-number expression the folds were made with (``"event"``: the branch that
        ``hepbdt.read(..., event="event")`` read). None (default): not recorded, so the
        model scores arrays with their event numbers given, but :meth:`save` and
        ``hepbdt.apply`` without ``event_branch`` refuse it: a ``read`` without ``event=``
        folds by entry numbers, and guessing a file's ``event`` branch scored events with
        the model that trained on them.
    """

    kind = "kfold"

    def __init__(self, models: Sequence[Any], by: str | None = None) -> None:
        self.models = list(models)
        if len(self.models) < 2:
            raise ValueError("a KFoldModel needs at least two models")
        if by is not None and (not isinstance(by, str) or not by.strip()):
            raise ValueError(f"by must be the event-number expression the folds were made with, "
                             f"a non-empty string such as 'event' (or None), not {by!r}")
        _check_fold_models(self.models)
        self.by = by

    @property
    def _estimator_type(self) -> str:
        """"classifier" or "regressor", as the fold models are (scikit-learn's tag)."""
        return "classifier" if is_classifier(self.models[0]) else "regressor"

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

    @property
    def classes_(self) -> np.ndarray:
        """The class labels of the fold models (the same in every fold), in the order of
        :meth:`predict_proba`'s columns; AttributeError for regressors."""
        classes = getattr(self.models[0], "classes_", None)
        if classes is None:
            raise AttributeError("the fold models are regressors: they have no classes")
        return classes

    def decision_function(self, X: Any, event: Any) -> np.ndarray:
        """Score of each event by the model that did not train on it (a classifier's
        ``decision_function``, a regressor's ``predict``): float64 (n,), or (n, c) when the
        models return c scores per event. Named X (a data frame, a dict, a Dataset's X) is
        taken by feature name, as each fold model takes it."""
        return self._by_fold(X, event, model_scores)

    def predict_proba(self, X: Any, event: Any) -> np.ndarray:
        """Class probabilities (n, K), columns in ``classes_`` order, of each event by the
        fold model that did not train on it (classifiers)."""
        self.classes_  # noqa: B018 -- a regressor's fold models have none: say so first
        return self._by_fold(X, event, lambda model, rows: model.predict_proba(rows))

    def predict(self, X: Any, event: Any) -> np.ndarray:
        """Each event's predicted class (classifiers) or target (regressors), by the fold
        model that did not train on it."""
        return self._by_fold(X, event, lambda model, rows: model.predict(rows))

    def _by_fold(self, X: Any, event: Any, method: Any) -> np.ndarray:
        """``method(model, rows)`` of each fold model on the events of its fold, in the
        events' order."""
        self._check_event_sources(getattr(X, "event_sources", None))
        X = self._in_feature_order(X)
        folds = self.folds(event)
        if folds.shape != (X.shape[0],):
            raise ValueError(f"event has shape {folds.shape}; X has {X.shape[0]} events")
        self._warn_unseen_missing(X, folds)
        out: np.ndarray | None = None
        for i, model in enumerate(self.models):
            mask = folds == i
            if not mask.any():
                continue
            part = np.asarray(method(model, X[mask]))
            if out is None:
                out = np.empty((X.shape[0], *part.shape[1:]), part.dtype)
                if out.dtype.kind == "f":
                    out.fill(np.nan)
            out[mask] = part
        if out is None:  # no events
            out = np.asarray(method(self.models[0], X))
        return out

    def _warn_unseen_missing(self, X: Any, folds: np.ndarray) -> None:
        """MissingValueWarning once, for the events with a missing value that fold models
        whose training had none score (each fold model, called from here, leaves it to
        this: k notes of a fold's share each said none of X's count)."""
        forests = [getattr(m, "forest_", None) for m in self.models]
        quiet = [i for i, f in enumerate(forests) if trained_with_missing(f)]
        if len(quiet) == len(forests):
            return
        if quiet:
            X = X[~np.isin(folds, quiet)]
        binned = isinstance(X, BinnedMatrix)
        names = X.feature_names if binned else None
        if names is None:
            names = getattr(self.models[0], "feature_names_in_", None)
        warn_unseen_missing(next(f for f in forests if not trained_with_missing(f)),
                            X.codes if binned else X, names, passing=("kfold.py",),
                            missing_code=MISSING_CODE if binned else None)

    def _check_event_sources(self, sources: Sequence[str | None] | None) -> None:
        """FoldExpressionWarning where X comes from a read whose event numbers (``sources``:
        its samples' event expressions, None for entry numbers) are not those of ``by``, as
        ``apply`` warns: its ``event`` may give other numbers than the folds were made with
        (a read without ``event=`` gives entry numbers: most events then go to a model that
        trained on them)."""
        if not sources or self.by is None or all(s == self.by for s in sources):
            return
        read = ", ".join("entry numbers (no event=)" if s is None else repr(s) for s in sources)
        warnings.warn(f"the folds of the k-fold model were made with {self.by!r}, but X was read "
                      f"with event numbers from {read}: each event is scored by the model that "
                      "did not train on it only if the event numbers given are those of "
                      f"{self.by!r}; read with event={self.by!r}", FoldExpressionWarning,
                      stacklevel=user_stacklevel())

    def _in_feature_order(self, X: Any) -> Any:
        """X as rows the fold models score: named input as an array of their features in their
        order, a BinnedMatrix as it is (each fold model checks its names and bins)."""
        if isinstance(X, BinnedMatrix):
            return X
        names = getattr(self.models[0], "feature_names_in_", None)
        check_read_records(X, self, names)
        X, given = _as_matrix(X, "X")
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional (n_events, n_features), got shape {X.shape}")
        if given is not None and names is not None:
            X = X[:, column_positions(given, [str(n) for n in names], "X", "the k-fold model",
                                      self.feature_definitions_)]
        else:  # the fold models take these columns by position: as a fold model, say so
            warn_unnamed_columns(type(self).__name__, names, given, passing=("kfold.py",))
        return X

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
        if self.by is None:
            raise ValueError(unrecorded_by("saving it"))
        paths = self.fold_paths(path)
        with contextlib.ExitStack() as locks:
            # a second save of the same files meanwhile fails at once, naming this one: two
            # saves interleaving left fold files of both models (output_set.RunLock)
            for held in sorted({Path(os.path.realpath(p)) for p in [*paths, Path(path)]}):
                lock = RunLock(held)
                lock.acquire(lambda holder, held=held: (
                    f"k-fold model file {held} is being saved by another hepbdt run ({holder}); "
                    "wait for it or save to another path"))
                locks.callback(lock.release)
            self._save_files(Path(path), paths)
        return [*paths, Path(path)]

    def _save_files(self, path: Path, paths: list[Path]) -> None:
        """Write every fold file and the manifest to temporaries, then rename them all (the
        manifest last) with SIGINT and SIGTERM held: a failure or an interrupt part way
        leaves the previous model's files as they were. Renamed one by one as written, a
        full disk at fold 1 left fold 0 of the new model under the old manifest, which
        refused it: the previous model no longer loaded (audit EY, 2026-12-05)."""
        with contextlib.ExitStack() as files:
            held = files.enter_context(DeferredSignals())
            # entered first, so renamed last: a manifest never names fold files not in place
            temporary = files.enter_context(atomic_path(path))  # the manifest's
            digests = [_save_fold(model, fold_path, files)
                       for model, fold_path in zip(self.models, paths, strict=True)]
            manifest = {
                "format": KFOLD_FORMAT, "format_version": KFOLD_FORMAT_VERSION, "kind": "kfold",
                "k": self.k, "by": self.by, "models": [p.name for p in paths],
                "features": self.feature_names_in_ if hasattr(self.models[0], "feature_names_in_")
                else None,  # models fitted on unnamed arrays
                # each fold file's SHA-256, checked on load: a kill -9 between the renames
                # leaves folds of two trainings under the old manifest, which then refuses them
                "sha256": digests,
            }
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(manifest, indent=1) + "\n")
            held.hold()

    def __repr__(self) -> str:
        return f"KFoldModel(k={self.k}, by={self.by!r}, {type(self.models[0]).__name__})"


def _save_fold(model: Any, path: Path, files: contextlib.ExitStack) -> str:
    """Save one fold model to a temporary renamed to ``path`` when ``files`` closes; the
    SHA-256 of the bytes this call wrote (taken from its own temporary: the file at ``path``
    may meanwhile be another writer's, and a manifest of its digests accepted fold files of
    two models)."""
    # a fixed name in a private folder: the model's own save names it in any error
    temporary = files.enter_context(atomic_path(path, temporary_name=path.name))
    model.save(temporary)
    return file_sha256(temporary)
