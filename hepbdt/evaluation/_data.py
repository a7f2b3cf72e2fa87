"""Input checks shared by the evaluation modules: arrays, weights, labels, datasets.

Nothing here computes a metric; it turns what a user passes (arrays, a ``Dataset``-like
object with ``X``, ``y``, ``w``, ``feature_names``, or a plain ``(X, y[, w])`` tuple) into
contiguous float64 arrays with one length, and names the argument when it cannot.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from hepbdt._util import (  # noqa: F401 (re-exported)
    _as_matrix,
    arrow_columns,
    check_read_records,
    check_same_definitions,
    check_weights,
    column_positions,
    is_arrow_table,
    real_array,
    user_stacklevel,
    weight_exponent,
    weighted_quantile,
)
from hepbdt.binned import BinnedMatrix
from hepbdt.io.dataset import FeatureMatrix

#: A cut "at" a requested signal efficiency keeps at most this much more (five percentage
#: points; more only where tied scores leave no cut nearer): beyond it the row is NaN.
EFFICIENCY_TOLERANCE = 0.05
# The rounding of a difference of two efficiencies: 0.75 - 0.7 is 0.050000000000000044
_DIFFERENCE_ROUNDING = 1e-12


def beyond_tolerance(achieved: Any, requested: Any) -> Any:
    """Whether a cut keeping the efficiency ``achieved`` keeps more than
    ``EFFICIENCY_TOLERANCE`` above ``requested`` (numbers or arrays), the difference's
    rounding aside: a cut keeping exactly 75 % is within five points of 70 %, though
    0.75 - 0.7 > 0.05 in float64."""
    return np.asarray(achieved) - np.asarray(requested) > EFFICIENCY_TOLERANCE + _DIFFERENCE_ROUNDING


def as_1d(values: Any, name: str) -> np.ndarray:
    """Return ``values`` as a contiguous 1-d float64 array, or raise naming ``name``."""
    try:
        arr = np.ascontiguousarray(real_array(values, name).astype(np.float64, copy=False))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be numbers, one per event; {exc}") from exc
    if arr.ndim == 2 and arr.shape[1] > 2:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}: one score per class, "
                         "as a multi-class model gives; use the per-class functions "
                         "(one_vs_rest_auc, one_vs_rest_roc, confusion_matrix, "
                         "multiclass_overtraining_test) or one column")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}")
    return arr


def check_regression_pair(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """(target, prediction) as float64 (n,) each: one per event, all finite (ValueError
    naming the first that is not)."""
    t = as_1d(y_true, "y_true")
    p = as_1d(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.shape[0]} entries but y_pred has {p.shape[0]}")
    for name, values in (("y_true", t), ("y_pred", p)):
        bad = ~np.isfinite(values)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name} must be finite numbers: {int(bad.sum())} of {values.size} "
                             f"are NaN or infinite (the first, {name}[{first}], is "
                             f"{values[first]!r})")
    return t, p


def check_labels(y: Any, name: str = "y") -> np.ndarray:
    """Return labels as a bool array (True = signal); they must be 0 or 1."""
    arr = real_array(y, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}")
    try:
        values = np.unique(arr)
    except TypeError as exc:  # objects that do not compare (None among the labels)
        raise ValueError(f"{name} must hold 1 for signal and 0 for background; {exc}") from exc
    if not np.all(np.isin(values, (0, 1))):
        raise ValueError(
            f"{name} must hold 1 for signal and 0 for background, got values {values[:5]}"
        )
    return arr.astype(bool)


def check_classification(
    y: Any, score: Any, sample_weight: Any, score_name: str = "score"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a (labels, scores, weights) triple; return (is_signal, score, weight)."""
    is_signal = check_labels(y)
    if is_signal.size == 0:
        raise ValueError("no events: y is empty")
    s = as_1d(score, score_name)
    if s.shape[0] != is_signal.shape[0]:
        raise ValueError(f"{score_name} has {s.shape[0]} entries but y has {is_signal.shape[0]}")
    if np.isnan(s).any():
        raise ValueError(f"{score_name} contains NaN")
    w = check_weights(sample_weight, s.shape[0])
    return is_signal, s, w


def in_class_units(is_signal: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each class's weights over a power of two of its own (an exact scaling): for measures
    that are ratios within a class, weights of 1e306 or 1e-306 then sum as unit ones do,
    without overflow or underflow."""
    units = np.empty(w.shape, np.float64)
    for in_class in (is_signal, ~is_signal):  # each class alone: the other's scale overflows
        units[in_class] = np.ldexp(w[in_class], -weight_exponent(w[in_class]))
    return units


def unpack_dataset(data: Any, name: str = "data") -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                           list[str]]:
    """Return (X, y, w, feature_names) from a Dataset-like object or an ``(X, y[, w])`` tuple
    (X an array, or the BinnedMatrix given, which the models score block by block).

    Named columns (a data frame's, a ``Dataset.X``'s, or the object's ``feature_names``)
    stay on X, a :class:`~hepbdt.io.dataset.FeatureMatrix` then, so that a model fitted on
    named features scores it by name, whatever the order of its columns.
    """
    if isinstance(data, Sequence) and not isinstance(data, str):
        if len(data) not in (2, 3):
            raise ValueError(f"{name} must be (X, y) or (X, y, w), got {len(data)} items")
        X, y = data[0], data[1]
        w = data[2] if len(data) == 3 else None
        names = None
    elif all(hasattr(data, attr) for attr in ("X", "y")):
        X, y = data.X, data.y
        w = getattr(data, "w", None)
        names = getattr(data, "feature_names", None)
    else:
        raise TypeError(
            f"{name} must be a Dataset (attributes X, y, w, feature_names) or a tuple "
            f"(X, y[, w]), got {type(data).__name__}"
        )
    if not isinstance(X, BinnedMatrix):  # binned stays codes: a float copy is 4x the memory
        X, columns = named_array(X)
        names = columns if columns is not None else names
    if len(X.shape) != 2:
        raise ValueError(f"{name}.X must be 2-d (events x features), got shape {X.shape}")
    y = real_array(y, f"{name}.y")  # a mask refused: np.asarray scored the hidden labels
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"{name}.y must be 1-d with {X.shape[0]} entries, got shape {y.shape}")
    w = check_weights(w, X.shape[0], f"{name}.w")
    given = names is not None
    if names is None:
        names = [f"x{i}" for i in range(X.shape[1])]
    names = [str(n) for n in names]
    if len(names) != X.shape[1]:
        raise ValueError(f"{name}.feature_names has {len(names)} names for {X.shape[1]} columns")
    if given and not isinstance(X, BinnedMatrix) and not isinstance(X, FeatureMatrix):
        X = X.view(FeatureMatrix)
        X.feature_names = tuple(names)
    return X, y, w, names


def check_binned_scorer(model: Any, X: Any) -> None:
    """ValueError when X is a BinnedMatrix and ``model`` is not a hepbdt model: only these
    score bin codes (refusing thresholds that are not its edges); another library's model
    would read ``np.asarray(X)``, each bin's lower edge, and score values the events lack."""
    if isinstance(X, BinnedMatrix) and model is not None and not hasattr(model, "_binned_input"):
        raise ValueError(f"X is a BinnedMatrix, but the {type(model).__name__} model is not "
                         "hepbdt's: it would score each value at its bin's lower edge, not the "
                         "events' values. Give it the float features (hepbdt.read(..., "
                         "binned=False)), or rank a hepbdt model trained on these bins")


def in_model_order(model: Any, X: Any, names: list[str] | None = None
                   ) -> tuple[Any, list[str] | None]:
    """X's columns in the order of the model's features, found by name (a data frame's, a
    FeatureMatrix's or ``names``), and the names in that order; X as it is where either
    side has no names (then the columns are the model's by position). Whatever takes the
    columns apart (a ranking, a permutation) must see them in the model's order: the
    model itself finds named columns by name, but positions do not carry names. A
    BinnedMatrix is refused for a model other than hepbdt's (:func:`check_binned_scorer`),
    and a KFoldModel, which scores an event only with its event number."""
    if getattr(model, "kind", None) == "kfold":
        raise TypeError("a KFoldModel scores each event by the fold model that did not train "
                        "on it, so it needs each event's number, which this function does not "
                        "take: give one fold model (kfold.models[i]) and the events of its fold "
                        "(event % k == i)")
    check_binned_scorer(model, X)
    model_names = getattr(model, "feature_names_in_", None)
    if model_names is None:
        return X, names
    model_names = [str(n) for n in model_names]
    # before the columns are rebuilt, which drops X's records: the model could not see them
    check_read_records(X, model, model_names)
    if isinstance(X, BinnedMatrix):
        given = list(X.feature_names) if X.feature_names is not None else names
    else:
        X, columns = named_array(X)
        given = columns if columns is not None else names
    if given is None or list(given) == model_names:
        return X, names if given is None else list(given)
    order = column_positions([str(g) for g in given], model_names, "X", type(model).__name__,
                             getattr(model, "feature_definitions_", None) or {})
    if isinstance(X, BinnedMatrix):
        X = BinnedMatrix(X.codes[:, order], [X.edges[j] for j in order], model_names,
                         getattr(model, "feature_definitions_", None))
    else:
        X = np.ascontiguousarray(np.asarray(X)[:, order]).view(FeatureMatrix)
        X.feature_names = tuple(model_names)
    return X, model_names


def labels_in_model_order(model: Any, X: Any, labels: list[str] | None) -> list[str] | None:
    """``labels`` given for X's columns (one each, in X's order) moved as
    :func:`in_model_order` moves the columns: the label of each of the model's features."""
    model_names = getattr(model, "feature_names_in_", None)
    if labels is None or model_names is None:
        return labels
    given = column_names(X)  # a dict's too: in_model_order puts them in the model's order
    model_names = [str(n) for n in model_names]
    if given is None or given == model_names:
        return labels
    if len(labels) != len(given):
        raise ValueError(f"got {len(labels)} feature names for the {len(given)} columns of X")
    order = column_positions(given, model_names, "X", type(model).__name__,
                             getattr(model, "feature_definitions_", None) or {})
    return [labels[j] for j in order]


def column_names(X: Any) -> list[str] | None:
    """The names of X's columns where its container carries them (a BinnedMatrix's or a
    FeatureMatrix's, a data frame's, a dict's keys, an Arrow table's), in X's order; None
    for a plain array or list."""
    if isinstance(X, BinnedMatrix | FeatureMatrix):
        names = X.feature_names
    elif hasattr(X, "columns"):
        names = X.columns
    elif isinstance(X, dict):
        names = list(X)
    elif is_arrow_table(X):
        names = X.column_names
    else:
        names = None
    return None if names is None else [str(n) for n in names]


def named_array(X: Any) -> tuple[np.ndarray, list[str] | None]:
    """X as an array and the names of its columns, when it has them (a data frame's columns,
    a dict's keys, a ``FeatureMatrix``'s names; None otherwise). A named FeatureMatrix is
    kept as it is. Anything else is read as the estimators read it (``_util._as_matrix``):
    a masked entry is NaN, pandas' NA too, and a 64-bit integer column beside float ones
    is rounded once to float32. (``np.asarray`` dropped a mask and read a data frame's
    mixed columns through float64, so the evaluation scored other values than
    ``decision_function`` of the same X; a dict of arrays it read as one object.)"""
    if isinstance(X, FeatureMatrix) and X.feature_names is not None:
        return X, [str(n) for n in X.feature_names]
    X, names = _as_matrix(X, "X")
    return np.asarray(X), names


def class_codes(model: Any, y: np.ndarray) -> np.ndarray:
    """y as columns of the classifier's ``predict_proba`` (two classes: 1 for the signal):
    the index in ``model.classes_`` when every value of y is one of those labels (a model
    trained with ``signal_label=0`` has classes_ [1, 0]); else y as given (already class
    indices, checked where used). Values that read both ways with different columns
    (labels 1, 2, 3 and a y of 1s and 2s) are read as labels, with a
    :class:`LabelReadingWarning`."""
    classes = getattr(model, "classes_", None)
    if classes is None or y.size == 0:
        return y
    labels = np.asarray(classes).tolist()
    position = {label: k for k, label in enumerate(labels)}
    values, inverse = np.unique(y, return_inverse=True)
    index = [position.get(v) for v in values.tolist()]
    if any(k is None for k in index):
        return y
    _warn_two_readings(labels, values.tolist(), index)
    return np.asarray(index, dtype=np.int64)[inverse.reshape(-1)]


class LabelReadingWarning(UserWarning):
    """y's values are the model's labels and also class indices of other classes."""


def _warn_two_readings(labels: list[Any], values: list[Any], index: list[int]) -> None:
    """Warn when ``values``, all labels (read as columns ``index``), are also class indices
    of other columns (but for classes_ [1, 0], whose y is documented as its labels)."""
    as_indices = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
                  and float(v).is_integer() and 0 <= v < len(labels)]
    if labels == [1, 0] or len(as_indices) < len(values) or index == [int(v) for v in values]:
        return
    warnings.warn(
        f"y's values {values} are read as labels of the model (classes_ {labels}): columns "
        f"{index}; read as class indices they would be columns {[int(v) for v in values]}. "
        "If they are indices, pass model.classes_[y], the labels", LabelReadingWarning,
        stacklevel=user_stacklevel())
