"""The in-memory table the engine trains on, with TMVA-style splits and normalisation.

A :class:`Dataset` holds ``X`` (n x m, C-contiguous float32), labels or targets ``y``,
weights ``w`` (float64), a sample index, an integer event identifier and the names of
features and samples. Class labels and sample indices are kept in the smallest signed
integer type that holds them (:func:`smallest_int_dtype`: one byte an event for up to 128
classes or samples). It splits into training and test sets as TMVA's ``SplitMode``
(random, alternate, block) or by event number for k-fold training, and renormalises
training weights as TMVA's ``NormMode``. It knows nothing about files or trees. ``X`` may
also be a :class:`~hepbdt.binned.BinnedMatrix` (one byte per event and feature, from
``read(..., binned=True)``): splits, folds and normalisation work alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hepbdt._util import _as_matrix, positive_beyond_rounding, real_array
from hepbdt.binned import BinnedMatrix
from hepbdt.io.errors import InputError
from hepbdt.kfold import NOT_EVENT_NUMBERS, fold_of, invalid_event_numbers, shown_number

__all__ = ["Dataset", "EVENT_INT32_MAX", "SPLIT_MODES", "NORM_MODES", "NORM_NAMES",
           "smallest_int_dtype"]

SPLIT_MODES = ("random", "alternate", "block")
# A block split whose two blocks of a sample differ in mean weight by more than this many
# standard errors is refused (Dataset._check_block).
BLOCK_SIGMAS = 5.0
NORM_MODES = ("none", "num_events", "equal_num_events")
#: The normalisations by name in lower case, TMVA's NormMode spellings too.
NORM_NAMES = {"none": "none", "num_events": "num_events", "numevents": "num_events",
              "equal_num_events": "equal_num_events", "equalnumevents": "equal_num_events"}

_TASKS = ("classification", "regression", "unlabelled")
EVENT_INT32_MAX = 2**31 - 1  # event numbers up to this may be int32 (4 bytes an event)
# Class labels and sample indices: the first of these that holds the largest (signed, so
# that 1 - y, 2 y - 1 and differences stay right); beyond int32 they are refused.
_INDEX_DTYPES = (np.int8, np.int16, np.int32)


def smallest_int_dtype(largest: Any, what: str = "value") -> np.dtype:
    """The smallest signed integer dtype (int8, int16 or int32) that holds the integers
    0..``largest``, as a Dataset stores class labels and sample indices; InputError beyond
    int32 (``what`` names the values in the message)."""
    for dtype in _INDEX_DTYPES:
        if largest <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise InputError(f"{what} {shown_number(largest)} is beyond int32 (at most {2**31 - 1:,}); "
                     "class labels and sample indices are small integers")


# Targets whose float32 rounding errors (their root mean square) exceed this share of their
# standard deviation (a large offset: 1000 plus values spread over 0.004) are refused; judged
# on at least TARGET_CHECK_EVENTS events, all of a read's targets at once (TargetRounding).
TARGET_RESOLUTION = 0.01
TARGET_CHECK_EVENTS = 100


class TargetRounding:
    """The float32 rounding of regression targets stored part by part (a read's chunks and
    files), judged on all of them: each part's count, mean and squared deviations merged
    (Chan, Golub and LeVeque's pairwise update) and its squared roundings summed. A read
    judged each chunk alone: a sample of files of 80 events was never judged, and a chunk
    of nearly equal targets could be refused where the whole sample spreads widely (so did
    a lazy read's partitions, until each sent its counts to be merged: ``merge``)."""

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.rounding = 0, 0.0, 0.0, 0.0

    def add(self, exact: np.ndarray, stored: np.ndarray) -> None:
        """Count a part's exact (float64) targets and their stored float32 values."""
        if exact.size == 0:
            return
        part = TargetRounding()
        part.n, part.mean = exact.size, float(np.mean(exact))
        part.m2 = float(np.sum((exact - part.mean) ** 2))
        part.rounding = float(np.sum((stored.astype(np.float64) - exact) ** 2))
        self.merge(part)

    def merge(self, other: TargetRounding) -> None:
        """Count the targets ``other`` counted (another part's: a lazy read's partition)."""
        if other.n == 0:
            return
        total = self.n + other.n
        delta = other.mean - self.mean
        self.m2 += other.m2 + delta * delta * self.n * other.n / total
        self.mean = other.mean if self.n == 0 else self.mean + delta * other.n / total
        self.n = total
        self.rounding += other.rounding

    def check(self, what: str) -> None:
        """InputError when the rounding is more than TARGET_RESOLUTION of the spread."""
        if self.n < TARGET_CHECK_EVENTS:
            return
        spread = float(np.sqrt(self.m2 / self.n))
        rounding = float(np.sqrt(self.rounding / self.n))
        if rounding > TARGET_RESOLUTION * spread:
            raise InputError(
                f"{what}: the regression targets spread over {spread:.3g} (standard deviation) "
                f"around {self.mean:.6g}, and float32, in which targets are stored, "
                f"rounds them by {rounding:.3g} (root mean square): a good part of every "
                "residual. Subtract the offset in the target expression (or rescale it)")


def float32_targets(values: np.ndarray, what: str, seen: TargetRounding | None = None
                    ) -> np.ndarray:
    """Regression targets as the float32 a Dataset stores, from their exact values; InputError
    for a finite target beyond float32's range, or targets that float32 rounds by more than
    TARGET_RESOLUTION of their spread (the rounding would be a good part of every residual
    and of the RMSE reported; targets read from a float32 branch round by nothing): judged
    here, or with ``seen`` counted there, for the caller to judge with all the others."""
    exact = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        stored = exact.astype(np.float32)
    finite = np.isfinite(exact)
    beyond = finite & ~np.isfinite(stored)
    if beyond.any():
        raise InputError(f"{what}: {int(np.count_nonzero(beyond))} regression target(s) beyond "
                         f"float32's range (+-3.4e38), in which targets are stored (the largest "
                         f"{float(np.max(np.abs(exact[beyond]))):.6g}); rescale the target (e.g. "
                         "other units)")
    if finite.all():
        part = TargetRounding() if seen is None else seen
        part.add(exact, stored)
        if seen is None:
            part.check(what)
    return stored


class FeatureMatrix(np.ndarray):
    """An (n, m) float32 feature array that knows its columns: ``feature_names`` (the names
    the user wrote) and ``feature_definitions`` (name -> the expression that computes it,
    where they differ, e.g. an alias). ``Dataset.X`` is one, so that
    ``model.fit(train.X, train.y, train.w)`` keeps the names. Selecting rows and copying
    keep them; selecting or moving columns, and any computation on the values (ufuncs,
    ``@``), give a plain array.
    """

    feature_names: tuple[str, ...] | None = None
    feature_definitions: dict[str, str] | None = None
    branch_types: dict[str, str] | None = None  # of the branches read (Dataset.branch_types)
    event_sources: tuple[str | None, ...] | None = None  # Dataset.event_sources

    def __array_finalize__(self, obj: Any) -> None:
        names = getattr(obj, "feature_names", None)
        if names is not None and self.ndim == 2 and self.shape[1] == len(names):
            self.feature_names = names
            self.feature_definitions = getattr(obj, "feature_definitions", None)
            self.branch_types = getattr(obj, "branch_types", None)
            self.event_sources = getattr(obj, "event_sources", None)

    def __getitem__(self, index: Any) -> Any:
        result = super().__getitem__(index)
        rows_only = not isinstance(index, tuple) or len(index) == 1 or (
            len(index) == 2 and isinstance(index[1], slice) and index[1] == slice(None))
        if isinstance(result, FeatureMatrix) and not rows_only:
            return result.view(np.ndarray)
        return result

    # Any computation on the values gives a plain array: a model fitted on np.log(X), on
    # X @ M or on columns permuted by take or roll recorded the old names, and apply then
    # fed it the raw branches. Row selections (above, and these functions along axis 0)
    # and copies keep the names.
    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False
                       ) -> Any:
        result = super().__array_wrap__(array, context, return_scalar)
        return result.view(np.ndarray) if isinstance(result, FeatureMatrix) else result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        result = super().__array_function__(func, types, args, kwargs)
        if isinstance(result, FeatureMatrix) and not _keeps_columns(func, args, kwargs):
            return result.view(np.ndarray)
        return result

    @property
    def T(self) -> np.ndarray:  # noqa: N802 (numpy's name)
        """The transpose, a plain array (its columns are events)."""
        return self.view(np.ndarray).T

    def transpose(self, *axes: Any) -> np.ndarray:
        """ndarray.transpose, a plain array."""
        return self.view(np.ndarray).transpose(*axes)

    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
        """ndarray.take; along an axis other than rows, a plain array."""
        result = super().take(indices, axis=axis, out=out, mode=mode)
        if isinstance(result, FeatureMatrix) and axis != 0:
            return result.view(np.ndarray)
        return result


_ROW_FUNCTIONS = {np.take: 2, np.concatenate: 1, np.compress: 2, np.delete: 2, np.insert: 3}
_COPY_FUNCTIONS = {np.copy, np.ascontiguousarray, np.asarray, np.array, np.asanyarray,
                   np.require, np.atleast_2d}


def _keeps_columns(func: Any, args: Any, kwargs: Any) -> bool:
    """Whether a numpy function's result has the columns of its FeatureMatrix argument: a
    copy, or a selection or joining of rows (axis 0)."""
    if func in _COPY_FUNCTIONS:
        return True
    position = _ROW_FUNCTIONS.get(func)
    if position is None:
        return False
    axis = kwargs.get("axis", args[position] if len(args) > position else
                      (0 if func is np.concatenate else None))
    return axis == 0


class Dataset:
    """Features, labels, weights and identifiers of a set of events.

    Parameters
    ----------
    X
        (n, m) features; stored as C-contiguous float32 (converted once, here, as the
        estimators read X: a data frame's 64-bit integers rounded once, a dict of columns).
        NaN is a missing value, and so is a masked array's masked entry (y, w, event and
        sample_index refuse masks). A :class:`~hepbdt.binned.BinnedMatrix` is kept as it is.
    y
        (n,) class labels (1 signal, 0 background, or class indices, >= 0; stored in the
        smallest signed integer type that holds the largest: int8 up to 127, else int16,
        else int32, see :func:`smallest_int_dtype`), regression targets (stored float32),
        or None for unlabelled events.
    w
        (n,) event weights, stored float64; None gives 1.
    sample_index
        (n,) index into ``sample_names``, stored as the labels are (int8 for up to 128
        samples, else int16, else int32); None gives 0. Floats must be whole numbers.
    event
        (n,) event identifier (int64; kept int32 when given int32, as ``read`` gives entry
        numbers below 2**31), used by :meth:`kfold`; None gives 0..n-1 (int32 up to 2**31
        events).
    feature_names
        m names (feature expressions, or the names the user gave them); None gives ``f0``,
        ``f1``, ...
    feature_definitions
        name -> expression for the names that are not themselves the expression (aliases);
        a model fitted on ``X`` keeps them so that ``apply`` can compute the features.
    branch_types
        branch -> type text (``"bool"``, ``"float32[3]"``, ``"int32[]"``) of the branches the
        features read, as :func:`~hepbdt.io.read` found them; a model fitted on ``X`` keeps
        them, and ``apply`` refuses trees whose types would change a feature's values
        (:mod:`hepbdt.io.branch_types`). None: unknown (no check).
    event_sources
        the event expressions of the read that made ``event`` (a sample's None: its entry
        numbers), as :func:`~hepbdt.io.read` found them; ``X`` carries them, and a
        ``KFoldModel`` scoring ``X`` warns where they are not the expression its folds were
        made with (``FoldExpressionWarning``). None: unknown (no check).
    sample_names
        Names of the samples; None gives ``sample0``, ...
    task
        ``"classification"``, ``"regression"`` or None to infer from ``y``'s dtype
        (integer or bool: classification; float: regression).
    copy
        Copy arrays even when they already have the right dtype and layout.

    Attributes
    ----------
    X (a :class:`FeatureMatrix`), y, w, sample_index, event, feature_names,
    feature_definitions, branch_types, event_sources, sample_names, task
    """

    def __init__(
        self,
        X: Any,
        y: Any = None,
        w: Any = None,
        sample_index: Any = None,
        event: Any = None,
        feature_names: Sequence[str] | None = None,
        sample_names: Sequence[str] | None = None,
        *,
        task: str | None = None,
        copy: bool = False,
        feature_definitions: Mapping[str, str] | None = None,
        branch_types: Mapping[str, str] | None = None,
        event_sources: Sequence[str | None] | None = None,
    ) -> None:
        if isinstance(X, BinnedMatrix):
            X = BinnedMatrix(X.codes.copy() if copy else X.codes, X.edges)
        else:  # as the estimators read X: np.asarray dropped a mask (the hidden values
            # trained on) and read a frame's int64 beside floats through float64
            X = np.asarray(_as_matrix(X, "Dataset X")[0])
            if X.ndim != 2:
                raise InputError(f"Dataset X must be 2-D (events x features), got shape {X.shape}")
            # np.array(copy=None) is numpy 2 only: numpy 1.x refuses it
            X = (np.array if copy else np.asarray)(X, dtype=np.float32, order="C")
        n, m = X.shape
        self._X = X

        self.y, self.task = self._labels(y, task, n, copy)

        if w is None:
            self.w = np.ones(n, dtype=np.float64)
        else:
            self.w = self._vector(w, n, "w").astype(np.float64, copy=copy)
            if not np.all(np.isfinite(self.w)):
                raise InputError("weights w must be finite (no NaN or inf)")

        if sample_index is None:
            self.sample_index = np.zeros(n, dtype=np.int8)
        else:
            index = self._vector(sample_index, n, "sample_index")
            if index.dtype.kind not in "biu":
                bad = invalid_event_numbers(index)  # NaN, fractions: never truncated
                if bad.any():
                    first = int(np.flatnonzero(bad)[0])
                    raise InputError(f"sample_index must hold integers: {int(bad.sum())} of {n} "
                                     f"do not; the first, sample_index[{first}], is "
                                     f"{shown_number(index[first])}")
                index = index.astype(np.int64)
            low, high = (int(index.min()), int(index.max())) if n else (0, 0)
            # indices out of range are kept whole (int64), for the check below to name them
            fits = 0 <= low and high <= np.iinfo(np.int32).max
            self.sample_index = index.astype(smallest_int_dtype(high) if fits else np.int64,
                                             copy=copy)
        if event is None:
            self.event = np.arange(n, dtype=np.int32 if n <= EVENT_INT32_MAX + 1 else np.int64)
        else:
            self.event = _event_numbers(self._vector(event, n, "event"), copy)

        if feature_names is None:
            feature_names = [f"f{j}" for j in range(m)]
        self.feature_names = [str(name) for name in feature_names]
        if len(self.feature_names) != m:
            raise InputError(
                f"{len(self.feature_names)} feature names for {m} columns of X"
            )
        definitions = {str(k): str(v) for k, v in (feature_definitions or {}).items()
                       if str(k) in self.feature_names and str(k) != str(v)}
        self.feature_definitions = definitions
        self.branch_types = None if branch_types is None else {
            str(k): str(v) for k, v in branch_types.items()}
        self.event_sources = None if event_sources is None else tuple(
            None if s is None else str(s) for s in event_sources)
        n_samples = int(self.sample_index.max()) + 1 if n else 1
        if sample_names is None:
            sample_names = [f"sample{i}" for i in range(n_samples)]
        self.sample_names = [str(name) for name in sample_names]
        if n and (self.sample_index.min() < 0 or n_samples > len(self.sample_names)):
            raise InputError(
                f"sample_index must lie in 0..{len(self.sample_names) - 1} "
                f"(one per sample name {self.sample_names})"
            )

    @classmethod
    def _labels(cls, y: Any, task: str | None, n: int, copy: bool) -> tuple[np.ndarray | None, str]:
        """The stored labels or targets and the task (inferred from y's dtype when None)."""
        if task is not None and task not in _TASKS:
            raise InputError(f"task must be one of {_TASKS}, not {task!r}")
        if y is None:
            if task in ("classification", "regression"):
                raise InputError(f"task={task!r} needs y")
            return None, "unlabelled"
        y = cls._vector(y, n, "y")
        if task is None:
            task = "regression" if np.issubdtype(y.dtype, np.floating) else "classification"
        if task == "classification":
            if np.issubdtype(y.dtype, np.floating) and not np.all(y == np.round(y)):
                raise InputError("classification labels y must be integers")
            if len(y) and y.min() < 0:
                raise InputError("classification labels y must be >= 0 (1 signal, 0 background)")
            largest = y.max() if len(y) else 0
            if not largest <= np.iinfo(np.int32).max:  # also refuses inf
                raise InputError(f"classification label {shown_number(largest)} is beyond "
                                 f"int32 (at most {2**31 - 1:,}); class labels are small "
                                 "integers (1 signal, 0 background, or class indices)")
            return y.astype(smallest_int_dtype(int(largest), "class label"), copy=copy), task
        if task == "regression":
            return float32_targets(y, "y"), task
        raise InputError("task='unlabelled' takes no y")

    @staticmethod
    def _vector(values: Any, n: int, name: str) -> np.ndarray:
        try:  # a mask or complex parts refused: np.asarray would drop them
            values = real_array(values, f"Dataset {name}")
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if values.shape != (n,):
            raise InputError(f"Dataset {name} must have shape ({n},), got {values.shape}")
        return values

    # -- basics -----------------------------------------------------------------------

    @property
    def binned(self) -> bool:
        """True when X is a :class:`~hepbdt.binned.BinnedMatrix` (codes, not floats)."""
        return isinstance(self._X, BinnedMatrix)

    @property
    def X(self) -> Any:
        """The (n, m) float32 features (a :class:`FeatureMatrix`) or the BinnedMatrix,
        carrying ``feature_names`` and ``feature_definitions``."""
        if isinstance(self._X, BinnedMatrix):
            return self._X.with_names(self.feature_names, self.feature_definitions or None,
                                      self.branch_types, self.event_sources)
        X = self._X.view(FeatureMatrix)
        X.feature_names = tuple(self.feature_names)
        X.feature_definitions = dict(self.feature_definitions) or None
        X.branch_types = None if self.branch_types is None else dict(self.branch_types)
        X.event_sources = self.event_sources
        return X

    def __len__(self) -> int:
        return self._X.shape[0]

    @property
    def n_features(self) -> int:
        return self._X.shape[1]

    @property
    def classes(self) -> np.ndarray:
        """Sorted class labels present (classification only)."""
        if self.task != "classification":
            raise InputError(f"a {self.task} dataset has no classes")
        return np.unique(self.y)

    def __repr__(self) -> str:
        return (
            f"Dataset({len(self)} events, {self.n_features} features "
            f"{self.feature_names}, samples {self.sample_names}, {self.task}"
            f"{', binned' if self.binned else ''})"
        )

    def summary(self) -> str:
        """A small table: events and sum of weights per sample."""
        lines = [f"{'sample':<24} {'label':>8} {'events':>10} {'sum of weights':>16}"]
        for index, name in enumerate(self.sample_names):
            mask = self.sample_index == index
            label = "" if self.y is None or not mask.any() else f"{self.y[mask][0]:g}"
            if self.task == "regression":
                label = "target"
            lines.append(
                f"{name:<24} {label:>8} {int(mask.sum()):>10} {self.w[mask].sum():>16.6g}"
            )
        return "\n".join(lines)

    def replace(self, **changes: Any) -> Dataset:
        """A new Dataset with some fields replaced (arrays not copied)."""
        fields = {
            "X": self._X,
            "y": self.y,
            "w": self.w,
            "sample_index": self.sample_index,
            "event": self.event,
            "feature_names": self.feature_names,
            "feature_definitions": self.feature_definitions,
            "branch_types": self.branch_types,
            "event_sources": self.event_sources,
            "sample_names": self.sample_names,
            "task": None if self.task == "unlabelled" else self.task,
        }
        if "feature_names" in changes and "feature_definitions" not in changes:
            fields["feature_definitions"] = None  # renamed columns: the old definitions do not apply
        fields.update(changes)
        return Dataset(**fields)

    def take(self, index: Any) -> Dataset:
        """The events selected by a boolean mask, an integer index array or a slice."""
        if not isinstance(index, slice):
            index = np.asarray(index)
            if index.size == 0 and index.dtype != np.bool_:  # take([]): no events
                index = index.astype(np.intp)
            if index.dtype == np.bool_ and index.shape != (len(self),):
                raise InputError(f"mask must have shape ({len(self)},), got {index.shape}")
        return self.replace(
            X=self._X[index],
            y=None if self.y is None else self.y[index],
            w=self.w[index],
            sample_index=self.sample_index[index],
            event=self.event[index],
        )

    __getitem__ = take

    # -- splits -------------------------------------------------------------------------

    def _groups(self) -> list[np.ndarray]:
        """Event indices (in order) of each sample, and of each class within a sample."""
        keys = self.sample_index.astype(np.int64)
        if self.task == "classification":
            keys = keys * (int(self.y.max()) + 1 if len(self) else 1) + self.y
        order = np.argsort(keys, kind="stable")
        boundaries = np.flatnonzero(np.diff(keys[order])) + 1
        return np.split(order, boundaries) if len(order) else []

    def split(
        self,
        mode: str = "random",
        train_fraction: float = 0.5,
        seed: int | None = 0,
        norm: str = "none",
    ) -> tuple[Dataset, Dataset]:
        """Split into (train, test) as TMVA's ``SplitMode``.

        Each sample (and each class within it) is split separately, so every sample
        keeps ``train_fraction`` of its events in training (``floor(n f + 0.5)``, none
        dropped); events keep their order. TMVA pools each class's trees and splits the
        pool (its block split can leave a whole sample out of training); see README.

        Parameters
        ----------
        mode
            ``"random"`` (seeded), ``"alternate"`` (events spread evenly: with 0.5,
            even positions train and odd ones test) or ``"block"`` (the first
            ``train_fraction`` of each sample trains).
        train_fraction
            Fraction of each sample in the training set, in (0, 1).
        seed
            Seed of the random split (None: fresh randomness).
        norm
            Weight normalisation of the training set, see :meth:`normalize`.
        """
        mode = str(mode).lower()
        if mode not in SPLIT_MODES:
            raise InputError(f"split mode {mode!r} is not one of {', '.join(SPLIT_MODES)}")
        train_fraction = _check_fraction(train_fraction)
        norm = _check_norm(norm)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)
                                 or seed < 0):
            raise InputError(f"seed must be an integer >= 0 (or None: fresh randomness), not "
                             f"{seed!r}")
        rng = np.random.default_rng(seed)
        is_train = np.zeros(len(self), dtype=bool)
        for group in self._groups():
            size = len(group)
            n_train = int(np.floor(size * train_fraction + 0.5))
            if mode == "random":
                is_train[group[rng.permutation(size)[:n_train]]] = True
            elif mode == "block":
                self._check_block(group, n_train)
                is_train[group[:n_train]] = True
            else:
                # Positions floor(j / f): evenly spread, exactly the even positions for 1/2.
                positions = np.floor(np.arange(n_train) / train_fraction).astype(np.int64)
                is_train[group[positions]] = True
        train = self.take(is_train).normalize(norm)
        return train, self.take(~is_train)

    def _check_block(self, group: np.ndarray, n_train: int) -> None:
        """InputError when a block split's two blocks of a sample differ in their mean weight
        beyond BLOCK_SIGMAS standard errors: the test block then does not stand for the
        sample (its files carry other weights: a sample of two files, the second one of three
        times the weight, gave yields of 0.72 of the truth, 12 standard deviations off), and
        the yields scaled from it would be wrong."""
        w = self.w[group]
        first, last = w[:n_train], w[n_train:]
        if first.size < 2 or last.size < 2:
            return
        error = np.sqrt(first.var() / first.size + last.var() / last.size)
        gap = abs(float(first.mean()) - float(last.mean()))
        if gap > BLOCK_SIGMAS * error and gap > 1e-12 * float(np.abs(w).mean()):
            name = self.sample_names[int(self.sample_index[group[0]])]
            apart = (f"{gap / error:.1f} standard errors apart" if error > 0
                     else "each block's weights all equal")
            raise InputError(
                f"split mode 'block': sample {name!r}'s first {first.size} events (training) "
                f"weigh {float(first.mean()):.6g} on average, its last {last.size} (test) "
                f"{float(last.mean()):.6g}, {apart}: the test "
                "block does not stand for the sample (files of other weights, read in "
                "order), so yields scaled from it would be wrong; use mode = \"random\" or "
                "\"alternate\" (or one file per sample)")

    def folds(self, k: int) -> np.ndarray:
        """Fold number of each event (:func:`hepbdt.kfold.fold_of`: ``event % k``)."""
        _check_k(k)
        return fold_of(self.event, k)

    def kfold(
        self, k: int, by: str | Any = "event", norm: str = "none"
    ) -> Sequence[tuple[Dataset, Dataset]]:
        """The k (train, test) pairs of k-fold training: fold i tests ``event % k == i``.
        Each pair is made when it is taken (a sequence, not a list), so k copies of the
        sample never exist at once (a list of 100 folds held 115x the features).

        Model i, trained on the events of the other folds, is applied to the events
        with ``event % k == i`` (the standard ATLAS/CMS scheme; see
        :func:`hepbdt.scoring.apply` with a k-fold model).

        Parameters
        ----------
        k
            Number of folds (>= 2).
        by
            ``"event"`` (the event identifier) or an (n,) array of fold numbers, integers
            in 0..k-1 (InputError otherwise: an event of no fold would be trained on by
            every model and tested by none).
        norm
            Weight normalisation of each training set, see :meth:`normalize`.
        """
        norm = _check_norm(norm)
        if isinstance(by, str):
            if by != "event":
                raise InputError(f"kfold(by=...) takes 'event' or an array of folds, not {by!r}")
            fold = self.folds(k)
        else:
            _check_k(k)
            given = self._vector(by, len(self), "by")
            bad = invalid_event_numbers(given)  # NaN, fractions, not numbers
            fold = np.where(bad, 0, given).astype(np.int64)
            bad |= (fold < 0) | (fold >= k)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"kfold(by=...): fold numbers must be integers in 0..{int(k) - 1} (k = "
                    f"{int(k)}): {int(np.count_nonzero(bad))} of {len(given)} are not; the "
                    f"first, by[{first}], is {shown_number(given[first])}"
                )
        empty = [i for i in range(int(k)) if not np.any(fold == i)]
        if empty and len(self):
            raise InputError(f"kfold({int(k)}): fold(s) {empty[:5]} have no events (their "
                             f"models would train on every event and test on none); use fewer "
                             "folds, or event numbers that spread over them")
        return _Folds(self, fold, int(k), norm)

    # -- normalisation --------------------------------------------------------------------

    def normalize(self, norm: str = "num_events") -> Dataset:
        """Rescale weights per class as TMVA's ``NormMode`` (a new Dataset; X is shared).

        ``"none"``: unchanged. ``"num_events"``: each class's weights sum to its number
        of events of non-zero weight (TMVA counts those of weight 0 too). ``"equal_num_events"``:
        each class's weights sum to the number of signal events of non-zero weight (label 1
        in a 0/1 problem, else the lowest class), so signal and background have equal total
        weight. A class whose weights sum to 0 or less is an InputError. A regression set counts as one class
        (``"equal_num_events"`` is then an error).
        """
        norm = _check_norm(norm)
        if norm == "none" or len(self) == 0:
            return self
        if self.task == "classification":
            labels = self.y
            classes = np.unique(labels)
        else:
            if norm == "equal_num_events":
                raise InputError(
                    "norm='equal_num_events' balances classes; a "
                    f"{self.task} dataset has none (use 'num_events' or 'none')"
                )
            labels = np.zeros(len(self), dtype=np.int8)
            classes = np.array([0])
        if norm == "equal_num_events":
            reference_class = 1 if set(classes.tolist()) <= {0, 1} and 1 in classes else (
                classes[0]
            )
            # events: one of weight 0 is no event (as the estimators' class ratio counts)
            reference = float(np.count_nonzero((labels == reference_class) & (self.w != 0)))
        w = self.w.copy()
        for cls in classes:
            mask = labels == cls
            total = float(w[mask].sum())
            if not positive_beyond_rounding(w[mask]):
                raise InputError(
                    f"cannot normalise: the weights of class {cls} sum to {total:g} "
                    "(<= 0, or 0 but for the rounding of the sum); use no normalisation "
                    "(norm = \"none\" in [split] of the configuration, norm='none' in Python)"
                )
            target = (float(np.count_nonzero(mask & (self.w != 0))) if norm == "num_events"
                      else reference)
            w[mask] *= target / total
        return self.replace(w=w)


def _event_numbers(values: np.ndarray, copy: bool) -> np.ndarray:
    """The event identifiers as int64, or int32 as given (entry numbers, 4 bytes an event);
    InputError (count, first) when some are not integers."""
    if values.dtype == np.int32:
        return values.copy() if copy else values
    bad = invalid_event_numbers(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"event numbers must be integers in int64's range (k-fold training assigns folds "
            f"by them): {int(np.count_nonzero(bad))} of {len(values)} are not "
            f"({NOT_EVENT_NUMBERS}); the first, event[{first}], is "
            f"{shown_number(values[first])}"
        )
    return values.astype(np.int64, copy=copy)


def _check_k(k: Any) -> None:
    """InputError unless ``k`` is a whole number >= 2 (not a bool, NaN or a string)."""
    try:
        valid = not isinstance(k, bool | str) and int(k) == k and k >= 2
    except (TypeError, ValueError, OverflowError):
        valid = False
    if not valid:
        raise InputError(f"k must be an integer >= 2, not {k!r}")


def _check_fraction(train_fraction: Any) -> float:
    """``train_fraction`` as a float in (0, 1); InputError for anything else (a text or a
    bool was multiplied into the event counts: ``"0.5"`` ended in a TypeError about
    concatenating strings). Any real number is taken (a Fraction, a Decimal, a 0-d numpy
    array of a number, as float() reads them)."""
    kind = getattr(getattr(train_fraction, "dtype", None), "kind", "f")
    try:
        if (isinstance(train_fraction, bool | np.bool_ | str | bytes) or kind not in "iuf"
                or np.ndim(train_fraction) != 0):
            raise TypeError
        fraction = float(train_fraction)
    except (TypeError, ValueError):
        raise InputError(f"train_fraction must be a number in (0, 1), not "
                         f"{train_fraction!r}") from None
    if not 0.0 < fraction < 1.0:
        raise InputError(f"train_fraction must lie in (0, 1), not {train_fraction}")
    return fraction


def _check_norm(norm: str) -> str:
    """The normalisation ``norm`` names (TMVA's spellings too); InputError for another."""
    if str(norm).lower() not in NORM_NAMES:
        raise InputError(f"norm {norm!r} is not one of {', '.join(NORM_MODES)} (TMVA: None, "
                         "NumEvents, EqualNumEvents)")
    return NORM_NAMES[str(norm).lower()]


class _Folds(Sequence):
    """``Dataset.kfold``'s pairs, each made when it is taken."""

    def __init__(self, data: Dataset, fold: np.ndarray, k: int, norm: str) -> None:
        self._data, self._fold, self._k, self._norm = data, fold, k, norm

    def __len__(self) -> int:
        return self._k

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._k))]
        if not -self._k <= int(i) < self._k:
            raise IndexError(f"fold {i} of {self._k}")
        test = self._fold == int(i) % self._k
        return self._data.take(~test).normalize(self._norm), self._data.take(test)

