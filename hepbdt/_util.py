"""Small tools every room shares: atomic writes, the progress line, input checks, threads.

Nothing here knows about trees, models or ROOT. The module imports only the standard
library, numpy and ``_version`` at import time (the engine's infinity scan, running sums
and thread controls are imported where first used), so the I/O layer stays free of Numba
until it bins or trains (the evaluation imports the engine's running sums itself).
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import errno
import hashlib
import json
import math
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ._version import EXPRESSION_RULES

__all__ = ["atomic_path", "atomic_write_text", "atomic_write_bytes", "strict_json", "dumps_strict",
           "note_in_place", "outputs_in_place",
           "Progress", "progress_shown", "check_X", "check_weights", "feature_definitions_of", "threads",
           "is_classifier", "model_scores", "FeatureNamesWarning", "warn_unnamed_columns",
           "check_same_definitions", "check_branch_types", "check_read_records", "check_records",
           "MissingValueWarning", "unseen_missing_counts", "warn_unseen_missing",
           "trained_with_missing", "missing_counts",
           "positive_beyond_rounding", "running_sum_slack",
           "weighted_quantile", "hash_fraction", "available_memory", "column_positions",
           "number_text", "percent_text", "requested_percent", "shown_alike", "pvalue_text",
           "differing_texts", "weight_exponent", "current_umask", "real_array", "file_sha256"]

NAN_BLOCK_VALUES = 1 << 22  # values ``any_nan`` tests at once
X_DTYPE = np.float32  # the engine's feature dtype (engine/_types.py), repeated to stay Numba-free


# -- atomic writes ----------------------------------------------------------------------------


def current_umask() -> int:
    """The process's umask (read by setting it and back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, temporary_name: str | None = None) -> Iterator[str]:
    """Yield a temporary path beside ``path``; when the block succeeds, flush it to disk and
    rename it to ``path``.

    The temporary is created with O_EXCL under a random name in the target's folder (the
    standard library's ``mkstemp``), so nothing planted there in advance (a symlink) is
    ever opened. On any error (or KeyboardInterrupt) it is removed and ``path`` is left as
    it was, so a reader never sees a half-written file. The parent folder is created when
    missing. A new file gets the permissions the umask gives a new file (mkstemp's private
    0600 would otherwise survive the rename); a file replaced keeps its own (a private
    0600 model stays private). ``temporary_name``: a fixed file name,
    inside a fresh private folder beside ``path`` (ROOT files record their own name, so
    files that must be reproducible byte for byte need a fixed one). A ``path`` that is a
    symbolic link is written through, into the file it names, as ROOT's ``RECREATE`` and a
    shell's ``>`` write (replacing the link left that file with the old contents); its
    target's folder must exist (a link creates no folder).
    """
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
        if not target.parent.is_dir():  # as `>` does: a link does not make its folders
            raise OSError(errno.ENOENT, f"a symbolic link to {target}, whose folder does "
                          "not exist", os.fspath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:  # no file yet (or none readable): the umask's permissions
        kept_mode = None
    private = None
    if temporary_name is None:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                         dir=target.parent)
        os.close(fd)
        os.chmod(temporary, 0o666 & ~current_umask())
    else:
        private = tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        temporary = os.path.join(private, temporary_name)
    try:
        yield temporary
        if kept_mode is not None:
            os.chmod(temporary, kept_mode)
        _fsync(temporary)
        os.replace(temporary, target)
        _fsync(target.parent)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        # A system error without a file (a full disk while writing): say which file. One
        # without an errno is a library's (a truncated input read while writing), not ours.
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(target)) from exc
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    finally:
        if private is not None:
            with contextlib.suppress(OSError):
                os.rmdir(private)


_IN_PLACE: list[str] = []  # what a command has put in place for good (outputs_in_place)


def note_in_place(what: str) -> None:
    """Record that ``what`` (a set of outputs) is now in place: an interrupt from here on
    leaves it, and the command line says so instead of a bare "interrupted"."""
    _IN_PLACE.append(what)


def outputs_in_place(clear: bool = False) -> list[str]:
    """What :func:`note_in_place` recorded (then forgotten when ``clear``)."""
    done = list(_IN_PLACE)
    if clear:
        _IN_PLACE.clear()
    return done


_NOTED_SIGNALS: list[int] = []  # signals the command line's handlers received


def note_signal(number: int) -> None:
    """Record that a handler received signal ``number`` (it raises its exception too)."""
    _NOTED_SIGNALS.append(number)


def forget_signals() -> None:
    """Forget the signals noted: their exceptions reached the command line."""
    _NOTED_SIGNALS.clear()


def raise_lost_signals() -> None:
    """Deliver again the signals noted whose exceptions never arrived: raised while Numba's
    compiler called back into Python (a ctypes callback), one is printed as "Exception
    ignored" and dropped, and the run went on to replace its outputs and exit 0."""
    lost = list(dict.fromkeys(_NOTED_SIGNALS))
    _NOTED_SIGNALS.clear()
    for number in lost:
        signal.raise_signal(number)


class DeferredSignals:
    """From :meth:`hold` until exit, SIGINT and SIGTERM are noted instead of acted on, and
    raised again at exit (under the handlers they had): the renames of a set of outputs run
    to their end, so only ``kill -9`` or a crash can leave some outputs new and others old.
    Signal handlers belong to the main thread: elsewhere nothing is held. ``done`` names
    what the block puts in place: when the block ends without an error, it is noted
    (:func:`note_in_place`) before a held signal is raised."""

    def __init__(self, done: str | None = None) -> None:
        self._previous: dict[int, Any] = {}
        self._received: list[int] = []
        self._done = done

    def __enter__(self) -> DeferredSignals:
        return self

    def hold(self) -> None:
        """Note SIGINT and SIGTERM from now until exit instead of acting on them (a signal
        whose exception was lost before is delivered again first)."""
        if threading.current_thread() is not threading.main_thread():
            return
        raise_lost_signals()
        for number in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(number)
            if previous is None:  # a handler set outside Python: it cannot be put back
                continue
            self._previous[number] = previous
            signal.signal(number, lambda received, _frame: self._received.append(received))

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None and self._done is not None:
            note_in_place(self._done)
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()
        received, self._received = list(dict.fromkeys(self._received)), []
        for number in received:
            signal.raise_signal(number)


def _fsync(path: str | os.PathLike) -> None:
    """Flush a file's (or a folder's) data to the disk, so a rename never precedes it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems do not sync folders; the data is still written
        if not os.path.isdir(path):
            raise
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as temporary, open(temporary, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_path`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by the string "Infinity", "-Infinity" or
    "NaN", so that ``json.dumps(..., allow_nan=False)`` writes strict JSON that every
    language reads; numpy's and Python's float parsers read these strings back."""
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    if isinstance(value, np.integer | np.bool_):
        return value.item()
    return value


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex (read a MiB at a time)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dumps_strict(value: Any, **options: Any) -> str:
    """``json.dumps`` of :func:`strict_json` (``value``), refusing anything else non-standard."""
    return json.dumps(strict_json(value), allow_nan=False, **options)


# -- progress ---------------------------------------------------------------------------------


_FORCED: list[bool | None] = [None]  # what Progress(enabled=None) means; see progress_shown


@contextlib.contextmanager
def progress_shown(enabled: bool | None) -> Iterator[None]:
    """Within the block, every progress bar whose caller left ``enabled=None`` is shown (True),
    hidden (False), or shown only on a terminal (None): what ``--progress`` and
    ``--no-progress`` set for a whole command."""
    previous = _FORCED[0]
    _FORCED[0] = enabled
    try:
        yield
    finally:
        _FORCED[0] = previous


class Progress:
    """A progress bar on stderr (tqdm's; a widget in a notebook), redrawn at most ten times a
    second.

    Parameters
    ----------
    total : the count expected (events, trees).
    description : the text before the bar, e.g. ``"hepbdt.read"``.
    enabled : None shows it when :func:`progress_shown` says so, else on a terminal.
    unit : what is counted (``"events"`` also shows a rate).
    """

    def __init__(self, total: int, description: str, enabled: bool | None = None,
                 unit: str = "events") -> None:
        if enabled is None:
            enabled = _FORCED[0]
        if enabled is None:
            enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.enabled = enabled
        self.total = max(int(total), 0)
        self.done = 0
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm  # imported only when a bar is shown

            rate = " {rate_fmt}" if unit == "events" else ""
            self._bar = tqdm(total=self.total, desc=description, unit=f" {unit}",
                             file=sys.stderr, mininterval=0.1, leave=True,
                             bar_format="{desc} [{bar:24}] {percentage:5.1f}% {n:,}/{total:,} "
                             f"{unit}{rate} [{{elapsed}}]{{postfix}}")

    def update(self, n: int) -> None:
        """Count ``n`` more done."""
        self.moveto(self.done + int(n))

    @property
    def shown(self) -> bool:
        """Whether the bar is drawn (a caller need not build a note otherwise)."""
        return self._bar is not None

    def moveto(self, done: int, note: str = "") -> None:
        """Set the count done to ``done``, with an optional note (e.g. the current loss)."""
        step = int(done) - self.done
        self.done = int(done)
        if self._bar is not None:
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(step)

    def close(self) -> None:
        """Draw the final state and end the line (once)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- input checks -----------------------------------------------------------------------------


def check_X(X: Any, n_features: int | None = None, what: str = "X",
            names: Sequence[str] | None = None, owner: str = "the model",
            definitions: dict[str, str] | None = None,
            resolution: bool = False, branch_types: Mapping[str, str] | None = None,
            rules: int | None = None) -> tuple[np.ndarray, list[str] | None]:
    """(n, m) C-contiguous float32 without copying when already so; NaN allowed (masked
    entries and pandas' NA become NaN), inf and values beyond float32's range refused, as
    are dates and durations (their number depends on their unit).

    Column names come from a data frame's columns, a dict's keys or a hepbdt
    ``Dataset.X``; they are returned (None for a plain array). With ``names`` (a fitted
    model's features), named input is put into that order (missing names are an error,
    extra ones are ignored; a column may also be named by the expression that
    ``definitions`` gives for a name), and unnamed input must have exactly ``len(names)``
    columns. ``resolution``: warn for a float64 column whose values float32 keeps in few
    steps (:func:`warn_float32_resolution`; a fit's input). ``branch_types``, ``rules``: the
    types of the branches the model's training read and the expression rules of its file
    (:func:`check_branch_types`). RuntimeError in
    a process forked after GNU OpenMP ran (:func:`check_not_forked_from_openmp`): the
    checks run kernels.
    """
    check_not_forked_from_openmp()
    check_records(X, names, definitions, branch_types, rules, what, owner)
    X, given = _as_matrix(X, what)
    if names is not None and given is not None:
        X, given = _reorder(X, given, list(names), what, owner, definitions or {})
    source = X
    try:
        with np.errstate(over="ignore"):  # beyond float32: inf, refused below with the value
            X = np.ascontiguousarray(X, dtype=X_DTYPE)
    except TypeError as exc:  # TypeError as numpy's, for scikit-learn's contract
        raise TypeError(f"{what} must be numeric (n_events, n_features); {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{what} must be numeric (n_events, n_features); {exc}") from exc
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-dimensional (n_events, n_features), got shape {X.shape}. "
                         "Reshape your data with X.reshape(-1, 1) for one feature or "
                         "X.reshape(1, -1) for one event")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{what} is empty: {X.shape[0]} sample(s) and {X.shape[1]} feature(s) "
                         f"(shape=({X.shape[0]}, {X.shape[1]})) while a minimum of 1 is required "
                         "(at least one event and one feature)")
    expected = len(names) if names is not None else n_features
    if expected is not None and X.shape[1] != expected:
        raise ValueError(f"{what} has {X.shape[1]} features, but {owner} is expecting {expected} "
                         "features as input")
    # Imported here so that modules that only read or evaluate never import Numba.
    from .engine.binning import first_infinite

    first = first_infinite(X)
    if first >= 0:
        row, col = divmod(first, X.shape[1])
        value = _finite_source_value(source, row, col)
        if value is not None:
            limit = float(np.finfo(X_DTYPE).max)
            raise ValueError(f"{what} has a value beyond float32's range (first at event {row}, "
                             f"feature {col}: {value}); features are stored as float32, whose "
                             f"finite values lie within +-{limit:.8g}: rescale that feature "
                             "(e.g. change its unit or take its logarithm)")
        raise ValueError(f"{what} has infinite values (first at event {row}, feature {col}); "
                         "use NaN for missing values")
    if resolution:
        warn_float32_resolution(source, given, what)
    return X, given


#: A float64 feature whose range float32 holds in fewer steps than this warns.
FLOAT32_STEPS = 1024


def warn_float32_resolution(source: Any, names: Sequence[str] | None, what: str = "X") -> None:
    """Warn for each float64 column of ``source`` whose values span fewer than FLOAT32_STEPS
    float32 steps (a timestamp of 1e9 +- 30, values 1 and 1 + 1e-10): the fit and the
    prediction see them in float32, as XGBoost's and LightGBM's do, where they collapse."""
    source = np.asarray(source)
    if source.dtype != np.float64 or source.size == 0:
        return
    low, high = np.fmin.reduce(source, axis=0), np.fmax.reduce(source, axis=0)  # NaN skipped
    changed = float32_steps(low, high) < FLOAT32_STEPS
    for col in np.flatnonzero(changed):  # the cast of the few candidates only
        with np.errstate(over="ignore"):  # a value beyond float32 was refused before
            changed[col] = np.any(source[:, col] != source[:, col].astype(np.float32))
    warn_float32_steps(low, high, changed, names, what)


def float32_steps(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """How many float32 steps each feature's [low, high] spans (NaN where low == high)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # float32's spacing at the larger end, np.spacing's: x * 2**-23 is up to twice it
        # (1e9 +- 30 spans 0.94 steps of 64, not 0.5 of 119), which warned up to 2,048 steps
        # and printed half the count
        largest = np.maximum(np.abs(low), np.abs(high)).astype(np.float32)
        step = np.spacing(largest).astype(np.float64)
        return np.where(high > low, (high - low) / step, np.nan)


def warn_float32_steps(low: np.ndarray, high: np.ndarray, changed: np.ndarray,
                       names: Sequence[str] | None, what: str) -> None:
    """:func:`warn_float32_resolution` of features whose double values span [low, high],
    ``changed`` where float32 rounded some value (integers such as run numbers are exact)."""
    steps = float32_steps(low, high)
    for col in np.flatnonzero((steps < FLOAT32_STEPS) & changed):
        count = f"{steps[col]:,.0f}" if steps[col] >= 10 else f"{steps[col]:.2g}"
        name = f"feature {col}" if names is None else f"feature {names[col]!r}"
        warnings.warn(
            f"{what}: {name} spans {float(low[col])!r} to {float(high[col])!r}, which float32 "
            f"(what hepbdt trains and predicts in, as XGBoost and LightGBM do) holds in about "
            f"{count} steps, so nearby values become one: subtract an offset (e.g. "
            f"x - {float(low[col])!r}) or change the unit", stacklevel=user_stacklevel())


def _finite_source_value(source: Any, row: int, col: int) -> str | None:
    """The text of the value given at (row, col) when it was finite before the float32
    conversion (so it overflowed there), else None."""
    try:
        value = np.asarray(source)[row, col]
    except (TypeError, ValueError, IndexError):
        return None
    try:
        finite = bool(np.isfinite(value))
    except (TypeError, OverflowError):  # a string, or a Python int beyond float64
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = True
        except (TypeError, ValueError):
            return None
    if not finite:
        return None
    try:
        return f"{float(value):.8g}"
    except (TypeError, ValueError, OverflowError):
        return str(value)[:40]


def any_nan(X: np.ndarray, rows: np.ndarray | None = None) -> bool:
    """Whether float X (its rows ``rows``, when given) has a NaN, tested in blocks of rows
    (np.isnan(X) whole would be a temporary of one byte per value)."""
    block = max(1, NAN_BLOCK_VALUES // max(1, X.shape[1]))
    n = X.shape[0] if rows is None else len(rows)
    return any(bool(np.isnan(X[i:i + block] if rows is None else X[rows[i:i + block]]).any())
               for i in range(0, n, block))


def missing_counts(X: np.ndarray, missing_code: int | None = None) -> np.ndarray:
    """Per column, the rows of X with a missing value (NaN; ``missing_code`` in codes X),
    counted in blocks of rows, so the temporary mask stays small."""
    block = max(1, NAN_BLOCK_VALUES // max(1, X.shape[1]))
    counts = np.zeros(X.shape[1], np.int64)
    for i in range(0, X.shape[0], block):
        part = X[i:i + block]
        counts += np.count_nonzero(np.isnan(part) if missing_code is None
                                   else part == missing_code, axis=0)
    return counts


def feature_definitions_of(X: Any) -> dict[str, str]:
    """The expressions behind named columns (a hepbdt ``Dataset.X``), else {}."""
    return dict(getattr(X, "feature_definitions", None) or {})


def is_arrow_table(X: Any) -> bool:
    """Whether X is a pyarrow Table or RecordBatch (by its interface: pyarrow is optional)."""
    return hasattr(X, "column_names") and hasattr(X, "column") and hasattr(X, "num_rows")


def arrow_columns(X: Any, what: str = "X") -> dict[str, np.ndarray] | None:
    """A pyarrow Table's (or RecordBatch's) columns by name as numpy arrays, null as NaN;
    None for anything else. (Taken for a plain array, its names were dropped and its
    columns read by position.)"""
    if not is_arrow_table(X):
        return None
    names = [str(n) for n in X.column_names]
    if len(set(names)) != len(names):
        raise ValueError(f"{what} has repeated column names; each feature must appear once")
    columns = {}
    for i, name in enumerate(names):
        columns[name] = _arrow_values(X.column(i))
    return columns


def _arrow_values(column: Any) -> np.ndarray:
    """One Arrow column as numpy values, null as NaN; an integer column's values rounded once
    to float32 (a cast to float64 refused integers beyond 2**53 with ArrowInvalid, and
    would round them twice)."""
    if not column.null_count:
        return np.asarray(column.to_numpy(zero_copy_only=False))
    if str(column.type).startswith(("int", "uint")):
        missing = np.asarray(column.is_null().to_numpy(zero_copy_only=False))
        values = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False)).astype(X_DTYPE)
        return np.where(missing, np.nan, values)
    return np.asarray(column.cast("float64").to_numpy(zero_copy_only=False))  # null -> NaN


def awkward_columns(X: Any, what: str = "X") -> dict[str, Any] | np.ndarray | None:
    """An awkward array's records as columns by field name, or its regular rows as an array,
    None entries (option types) masked, so missing values; None for anything else."""
    if not type(X).__module__.startswith("awkward") or not hasattr(X, "fields"):
        return None
    awkward = sys.modules["awkward"]
    try:
        if X.fields:
            return {str(f): awkward.to_numpy(X[f], allow_missing=True) for f in X.fields}
        return awkward.to_numpy(X, allow_missing=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numeric (n_events, n_features) with one value per "
                         f"event and feature; got an awkward array of type {X.type}") from exc


def _as_matrix(X: Any, what: str) -> tuple[Any, list[str] | None]:
    """The array behind X and its column names; sparse and complex input refused."""
    if hasattr(X, "tocsr") or hasattr(X, "todense") or type(X).__module__.startswith("scipy.sparse"):
        raise ValueError(f"{what}: sparse input is not supported (hepbdt bins dense columns); "
                         "convert with X.toarray()")
    for columns in (arrow_columns(X, what), awkward_columns(X, what)):
        if columns is not None:
            X = columns
    if isinstance(X, dict):
        names = [str(k) for k in X]
        columns = [_masked_as_missing(v) if isinstance(v, np.ma.MaskedArray) else np.asarray(v)
                   for v in X.values()]  # np.asarray drops a mask: the hidden values scored
        if not columns or len({c.shape for c in columns}) != 1 or columns[0].ndim != 1:
            raise ValueError(f"{what}: a dict of features needs 1-d arrays of one length, one "
                             "per feature")
        refuse_dates([c.dtype for c in columns], what)
        X = np.column_stack([_wide_integers_as_features(c) for c in columns])
        return X, names
    names = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        names = [str(c) for c in X.columns]
        refuse_dates(getattr(X, "dtypes", ()), what)
        X = _frame_values(X, what)
    elif getattr(X, "feature_names", None) is not None:
        names = [str(n) for n in X.feature_names]
        X = np.asarray(X).view(np.ndarray)
    elif isinstance(X, list | tuple) or getattr(getattr(X, "dtype", None), "kind", "") == "O":
        try:
            objects = np.asarray(X, dtype=object)
        except ValueError:  # ragged rows: refused below
            objects = None
        if objects is not None:  # Python integers read one by one into float32 go through float64
            X = _integer_objects(objects, what)
    if isinstance(X, np.ma.MaskedArray):  # masked entries are missing values, not their data
        X = _masked_as_missing(X)
    try:
        kind = getattr(np.asarray(X), "dtype", None)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"{what} must be numeric (n_events, n_features) with one value per "
                         f"event and feature; {exc}") from exc
    if kind is not None and np.issubdtype(kind, np.complexfloating):
        raise ValueError(f"{what}: Complex data not supported; features must be real numbers")
    if kind is not None:
        refuse_dates([kind], what)
    return X, names


def refuse_dates(dtypes: Iterable[Any], what: str) -> None:
    """TypeError for dates and durations among ``dtypes`` (numpy's datetime64 and
    timedelta64, pandas' time-zone dates and periods): their number depends on their unit
    (a time-zone date column was read as microseconds, an object np.datetime64 as days)."""
    for dtype in dtypes:
        if str(getattr(dtype, "kind", "")) in ("m", "M") or type(dtype).__name__ == "PeriodDtype":
            raise TypeError(f"{what} must be numeric (n_events, n_features); got {dtype} values, "
                            "whose number depends on their unit: convert them to numbers "
                            "first (e.g. seconds)")


def _masked_as_missing(values: np.ma.MaskedArray) -> np.ndarray:
    """A masked array's values with its masked entries NaN (missing values, not the data
    hidden under the mask), each value still rounded once to float32: 64-bit integers are
    cast to float32 here and long doubles kept (through float64 they were rounded twice and
    could land on the other float32 neighbour from the same array unmasked)."""
    data = np.ma.getdata(values)
    if not np.ma.is_masked(values):
        return data
    if data.dtype == object:
        data = _integer_objects(data)
    data = _wide_integers_as_features(data)
    if data.dtype.kind != "f":  # bool, small integers, objects: exact in float64
        data = data.astype(np.float64)
    return np.where(np.ma.getmaskarray(values), np.nan, data)


def _wide_integers_as_features(column: np.ndarray) -> np.ndarray:
    """A 64-bit integer column as the float32 features it is, rounded once: stacked beside
    float columns it would become float64 first, and a value beyond 2**53 rounded twice
    can land on the other float32 neighbour (another side of a split) than the same
    column given alone, or read from a file."""
    if column.dtype.kind in "iu" and column.dtype.itemsize == 8:
        return column.astype(X_DTYPE)
    return column


_DATE_OBJECTS = (np.datetime64, np.timedelta64, datetime.date, datetime.timedelta)


def _integer_objects(values: np.ndarray, what: str = "X") -> np.ndarray:
    """An object array of Python integers as int64 (or uint64) values, which float32 then
    rounds once; anything else as numpy reads it (through float64 a value beyond 2**53 is
    rounded twice and can land on the other float32 neighbour, another side of a split)."""
    if values.dtype != object or values.size == 0:
        return values
    if values.ndim == 2:  # column by column: integers beside floats in each row of a list
        columns = [_integer_objects(values[:, j], what) for j in range(values.shape[1])]
        if all(c.dtype != object for c in columns):
            return np.column_stack([_wide_integers_as_features(c) for c in columns])
        return values
    # numpy reads a datetime64 or timedelta64 object as a count of its own unit (days...);
    # np.timedelta64 is an np.integer
    dates = {type(v).__name__ for v in values.ravel() if isinstance(v, _DATE_OBJECTS)}
    if dates:
        raise TypeError(f"{what} must be numeric (n_events, n_features); got "
                        f"{', '.join(sorted(dates))} values, whose number depends on their "
                        "unit: convert them to numbers first (e.g. seconds)")
    if all(isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
           for v in values.ravel()):
        try:
            return np.asarray(values.tolist(), dtype=np.int64)
        except OverflowError:
            pass
        try:
            return np.asarray(values.tolist(), dtype=np.uint64)
        except OverflowError:
            wide = next(v for v in values.ravel() if not -2**63 <= v < 2**64)
            raise ValueError(f"{what} holds the integer {wide}, beyond 64 bits; give such "
                             "values as floats") from None
    try:
        return values.astype(np.float64)  # numbers of mixed types; others stay objects
    except (TypeError, ValueError):
        return values


def _column_as_features(column: Any, what: str = "X") -> np.ndarray:
    """One pandas column as features: 64-bit and nullable integers (pd.NA as NaN) and
    object columns of Python integers rounded once to float32, others as numbers."""
    dtype = column.dtype
    try:
        if not isinstance(dtype, np.dtype):  # an extension dtype: Int64, Float64, boolean
            if getattr(getattr(dtype, "numpy_dtype", None), "kind", "") in "iu":
                return column.to_numpy(dtype=X_DTYPE, na_value=np.nan)
            return column.to_numpy(na_value=np.nan)
        values = _wide_integers_as_features(_integer_objects(column.to_numpy(), what))
        if values.dtype != object:
            return values
        missing = np.asarray(column.isna())  # None, NaN, pd.NA among an object column's numbers
        return np.where(missing, np.nan, np.where(missing, 0, values).astype(np.float64))
    except (TypeError, ValueError) as exc:
        if str(exc).startswith(what):
            raise
        raise ValueError(f"{what}'s column {str(column.name)!r} ({dtype}) is not numeric: "
                         f"{exc}; features must be numbers (a category's codes: "
                         ".cat.codes)") from exc


def _frame_values(frame: Any, what: str = "X") -> Any:
    """A data frame's values; pandas' missing values (pd.NA of nullable columns) as NaN;
    64-bit and nullable integer columns, and object columns of Python integers, beside
    others rounded once to float32 (``_wide_integers_as_features``)."""
    pandas = type(frame).__module__.startswith("pandas")
    dtypes = list(getattr(frame, "dtypes", ()))
    exact = [isinstance(d, np.dtype) and (d.kind in "fb" or (d.kind in "iu" and d.itemsize < 8))
             for d in dtypes]  # numpy converts these columns to float32 in one rounding
    if pandas and not all(exact):
        return np.column_stack([_column_as_features(frame.iloc[:, j], what)
                                for j in range(len(dtypes))])
    return frame.to_numpy()


def check_same_definitions(given: Any, definitions: Any, names: Sequence[str], what: str,
                           owner: str) -> None:
    """ValueError when the input's definitions (``given``: name -> the expression its column
    was read as, e.g. a ``Dataset.X``'s) and the model's give one of its feature ``names``
    two different expressions: the same name for another quantity (a column found by name
    would be scored as the model's feature)."""
    if not given or not definitions:
        return
    for name in names:
        theirs, ours = given.get(str(name)), definitions.get(str(name))
        if theirs is not None and ours is not None and not _same_text(str(theirs), str(ours)):
            raise ValueError(f"{what}'s column {str(name)!r} was read as {theirs!r}, but {owner} "
                             f"was trained with {str(name)!r} = {ours!r}: the same name for "
                             "another quantity; read the input with the model's definitions")


def check_branch_types(given: Mapping[str, str] | None, recorded: Mapping[str, str] | None,
                       names: Sequence[str] | None, definitions: Mapping[str, str] | None,
                       what: str, owner: str, rules: int | None = None) -> None:
    """For input a hepbdt read computed (``given``: its branch types): BranchTypeError where
    they would give the model's features ``names`` other values than the types its training
    read (``recorded``) did (``~flag`` of an Int_t is -1 - flag, of a Bool_t !flag), and
    SavedRulesError where the expression ``rules`` of the model's file (None: today's)
    may have computed a feature otherwise than today's read did. The checks are
    ``hepbdt.io``'s, loaded wherever a read made the input's record."""
    module = sys.modules.get("hepbdt.io.branch_types")
    if not given or names is None or module is None:
        return
    if not recorded and (rules is None or rules == EXPRESSION_RULES):
        return
    module.check_feature_types(recorded, given, names, definitions or {}, what, owner, rules)


def check_read_records(X: Any, model: Any, names: Sequence[str] | None, what: str = "X",
                       owner: str | None = None) -> None:
    """The records a hepbdt read keeps on X (its columns' definitions, its branches' types)
    checked against a fitted ``model``'s (a KFoldModel: each fold model's), as the model
    checks them itself (:func:`check_same_definitions`, :func:`check_branch_types`): for a
    caller that rebuilds X's columns (in the model's order, as a copy to shuffle) before
    the model sees them, which drops the records."""
    owner = type(model).__name__ if owner is None else owner
    definitions = getattr(model, "feature_definitions_", None)
    for each in (model.models if getattr(model, "kind", None) == "kfold" else [model]):
        check_records(X, names, definitions, getattr(each, "branch_types_", None),
                      getattr(each, "_expression_rules", None), what, owner)


def check_records(X: Any, names: Sequence[str] | None, definitions: Mapping[str, str] | None,
                  branch_types: Mapping[str, str] | None, rules: int | None, what: str,
                  owner: str) -> None:
    """The records a hepbdt read keeps on X (its columns' ``feature_definitions``, its
    branches' ``branch_types``) against a model's features ``names``, their
    ``definitions``, its training's ``branch_types`` and its file's expression ``rules``
    (:func:`check_same_definitions`, :func:`check_branch_types`)."""
    check_same_definitions(getattr(X, "feature_definitions", None), definitions,
                           () if names is None else names, what, owner)
    check_branch_types(getattr(X, "branch_types", None), branch_types, names, definitions,
                       what, owner, rules)


def _same_text(a: str, b: str) -> bool:
    """Whether two expressions are written alike: the same text but for spaces, or the
    same Python syntax tree (``log((HT))`` and ``log(HT)``, ``1000.`` and ``1000.0``)."""
    if "".join(a.split()) == "".join(b.split()):
        return True
    try:
        return ast.dump(ast.parse(a.strip(), mode="eval")) == ast.dump(
            ast.parse(b.strip(), mode="eval"))
    except (SyntaxError, ValueError, RecursionError):  # ROOT's && and ||, or a deep nesting
        return False


def _reorder(X: Any, given: list[str], names: list[str], what: str, owner: str,
             definitions: dict[str, str]) -> tuple[np.ndarray, list[str]]:
    """The columns of named input in the order ``names``; missing names are an error."""
    if given == names:
        return X, given
    return np.asarray(X)[:, column_positions(given, names, what, owner, definitions)], names


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep  # hepbdt/, for the frames


def called_from_outside(*modules: str) -> bool:
    """Whether the first caller that is not in ``modules`` (files of hepbdt, relative to the
    package: "estimators.py") lies outside hepbdt: a user's call, not one of hepbdt's own
    modules passing columns it put in order."""
    skipped = tuple(_PACKAGE_DIR + m for m in modules)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(skipped):
        frame = frame.f_back
    return frame is None or not frame.f_code.co_filename.startswith(_PACKAGE_DIR)


class FeatureNamesWarning(UserWarning):
    """Named input to a model fitted on unnamed columns, or the other way round: the
    columns are taken by position (scikit-learn warns alike)."""


def feature_names_text(owner: str, names: Any) -> str:
    """FeatureNamesWarning's message for a model whose feature names are ``names`` (or None)."""
    if names is None:
        return (f"X has feature names, but {owner} was fitted without feature names: its "
                "columns are taken in the order given, not by name")
    shown = ", ".join(map(str, list(names)[:8])) + (", ..." if len(names) > 8 else "")
    return (f"X does not have valid feature names, but {owner} was fitted with feature names "
            f"({shown}): its columns are taken to be these, in this order")


# hepbdt's modules that hand a caller's columns on to a model as given (the estimators,
# the evaluation functions): whether names were lost is decided by the first caller
# outside them (a user's call warns; hepbdt's own modules put the columns in order)
PASSING_COLUMNS_ON = ("estimators.py", os.path.join("dask", "_estimators.py"), "_util.py",
                      "evaluation" + os.sep)


def warn_unnamed_columns(owner: str, names: Any, given: Any, passing: tuple[str, ...] = ()
                         ) -> None:
    """FeatureNamesWarning when exactly one of the model's ``names`` and the input's
    ``given`` names is None, and a user passed the input (not one of hepbdt's modules, but
    those of PASSING_COLUMNS_ON and ``passing``)."""
    if (names is None) != (given is None) and called_from_outside(*PASSING_COLUMNS_ON,
                                                                  *passing):
        warnings.warn(feature_names_text(owner, names), FeatureNamesWarning,
                      stacklevel=user_stacklevel())


class MissingValueWarning(UserWarning):
    """Scored events had missing values where the model's training had none."""


def trained_with_missing(forest: Any) -> bool:
    """Whether a training event of ``forest`` had a missing value, as far as hepbdt knows:
    True for a forest it did not train (read from TMVA or XGBoost, or none)."""
    return (forest is None or "tmva" in forest.extra or "xgboost" in forest.extra
            or bool(forest.extra.get("nan_in_training")))


def unseen_missing_text(counts: Iterable[tuple[str, int]]) -> str:
    """MissingValueWarning's message for (feature, events with a NaN in it) pairs."""
    shown = ", ".join(f"{name!r} in {int(c):,}" for name, c in counts if c)
    return (f"missing values (NaN) in events this model's training had none of ({shown} "
            "events): each such event went to every split's default side, that of the "
            "largest values, which no training event chose; select them away, or check the "
            "inputs")


def unseen_missing_counts(forest: Any, X: np.ndarray, missing_code: int | None = None
                          ) -> np.ndarray | None:
    """Per column, the rows of X with a missing value (NaN in float ``X``; in bin codes
    ``X``, ``missing_code``) where ``forest``'s training had none; None when there are none
    (or the training had some)."""
    if trained_with_missing(forest):
        return None
    if missing_code is None and not any_nan(X):  # the usual case: one pass, no mask
        return None
    counts = missing_counts(X, missing_code)
    return counts if counts.any() else None


def warn_unseen_missing(forest: Any, X: np.ndarray, names: Sequence[str] | None,
                        passing: tuple[str, ...] = (), missing_code: int | None = None
                        ) -> None:
    """MissingValueWarning, as ``hepbdt apply`` notes it, when a user scores events with a
    missing value (NaN in float ``X``; in bin codes ``X``, ``missing_code``) with a model
    whose training had none. hepbdt's own modules (apply counts them over all its chunks)
    and those of PASSING_COLUMNS_ON and ``passing`` leave it to the first caller outside
    them. Counted only then, in blocks of rows (a mask of X whole is a byte a value)."""
    if not called_from_outside(*PASSING_COLUMNS_ON, *passing):
        return
    counts = unseen_missing_counts(forest, X, missing_code)
    if counts is None:
        return
    labels = [str(n) for n in names] if names is not None else [
        f"feature {j}" for j in range(len(counts))]
    warnings.warn(unseen_missing_text(zip(labels, counts.tolist(), strict=True)),
                  MissingValueWarning, stacklevel=user_stacklevel())


def user_stacklevel() -> int:
    """``warnings.warn``'s stacklevel of the first caller outside hepbdt, as seen from the
    function that calls ``warn`` (Python 3.12's ``skip_file_prefixes``, by hand)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def column_positions(given: list[str], names: list[str], what: str, owner: str,
                     definitions: dict[str, str]) -> list[int]:
    """Where each of ``names`` stands among the columns ``given`` (a name may also be found
    under its definition, the expression it was read as, and a back-quoted branch name
    such as ```e``` under the branch's own name e); ValueError naming what lacks."""
    position = {name: j for j, name in enumerate(given)}
    if len(position) != len(given):
        raise ValueError(f"{what} has repeated column names; each feature must appear once")
    for name in names:
        quoted = re.fullmatch(r"`([^`]+)`", name)
        for other in (definitions.get(name), quoted and quoted[1]):
            if name not in position and other in position:
                position[name] = position[other]
    missing = [name for name in names if name not in position]
    if missing:
        raise ValueError(f"{what} lacks the features {missing} that {owner} was trained on "
                         f"(it has {given}); give every feature by name, in any order")
    return [position[name] for name in names]


def real_array(values: Any, what: str) -> np.ndarray:
    """``np.asarray(values)``, refusing what it would turn silently into other numbers: a
    masked array (its mask dropped, the hidden values used) and complex numbers (numpy
    drops the imaginary part with only a warning)."""
    if isinstance(values, np.ma.MaskedArray):
        raise ValueError(f"{what}: a masked array's masked entries have no value; give a plain "
                         "array (only the events to use, or .filled(...))")
    arr = np.asarray(values)
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{what}: complex numbers; expected real numbers")
    return arr


def check_weights(sample_weight: Any, n: int, what: str = "sample_weight", *,
                  training: bool = False) -> np.ndarray:
    """Event weights as contiguous float64 of length ``n`` (ones when None); NaN and inf refused.

    ``training``: also refuse weights that are all zero (nothing to train on). Evaluation
    accepts them (a sample may carry no weight at all after its cuts).
    """
    if sample_weight is None:
        return np.ones(n, dtype=np.float64)
    try:  # strings that are no numbers, ints beyond float64 (OverflowError)
        w = np.ascontiguousarray(real_array(sample_weight, what).astype(np.float64, copy=False))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{what} must be finite numbers, one weight per event; {exc}") from exc
    if w.ndim != 1:
        raise ValueError(f"{what} must be 1-d, got shape {w.shape}")
    if w.size != n:
        raise ValueError(f"{what} has {w.size} entries, expected {n}: one weight per event "
                         f"({w.size} values for {n} events)")
    bad = ~np.isfinite(w)
    if bad.any():
        raise ValueError(f"{what} has NaN or infinite values (first at event "
                         f"{int(np.flatnonzero(bad)[0])})")
    if training and not np.any(w != 0):
        raise ValueError(f"{what}: all weights are zero; nothing to train on")
    return w


def feature_names_of(model: Any, n_features: int) -> list[str]:
    """The model's ``feature_names_in_`` (as str), or ``x0, x1, ...`` for a model fitted on
    unnamed columns."""
    names = getattr(model, "feature_names_in_", None)
    if names is not None and len(names) == n_features:
        return [str(n) for n in names]
    return [f"x{i}" for i in range(n_features)]


def is_classifier(model: Any) -> bool:
    """True for a classifier: hepbdt's estimators and scikit-learn's say so in
    ``_estimator_type``; other objects count as classifiers when they have ``predict_proba``."""
    kind = getattr(model, "_estimator_type", None)
    if kind is not None:
        return kind == "classifier"
    return hasattr(model, "predict_proba")


def model_scores(model: Any, X: Any) -> np.ndarray:
    """A model's score of X as float64: ``decision_function`` of a classifier (large means
    signal), ``predict`` of a regressor."""
    score = getattr(model, "decision_function", None) or model.predict
    return np.asarray(score(X), dtype=np.float64)


def cut_text(value: float, below: float | None = None, digits: int = 4) -> str:
    """A cut ``score >= value`` as text that selects the same events: ``value`` with
    ``digits`` significant digits, more where the rounded text would lie above ``value``
    (its events on the cut would fail the printed cut) or at or below ``below``, the next
    lower score (events below the cut would pass it); "n/a" for NaN."""
    if value is None or not np.isfinite(value):
        return number_text(value, digits)
    value = float(value) + 0.0  # not "-0"
    for n in range(digits, 18):
        text = f"{value:.{n}g}"
        shown = float(text)
        if shown <= value and (below is None or shown > below):
            return text
    return repr(value)  # the exact value always selects exactly its events


def number_text(value: Any, digits: int = 4, *, fixed: bool = False,
                marks: Sequence[float] = (0.0, 1.0, -1.0)) -> str:
    """``value`` with ``digits`` significant digits (``fixed``: decimals), "n/a" for NaN or
    None, and more digits (up to 12) where the rounded text would land on a value of
    ``marks`` (0, 1 and -1 by default; a p-value passes 0 and its thresholds) or on its
    other side: an efficiency of 0.99996 shows as 0.99996, not 1 or 1.0000, a p-value of
    0.0096 below a 0.01 threshold not as 0.010. A value that still lands on a mark at 12
    digits (1 - 1e-13) is taken for rounding noise and shows with ``digits`` (as 1; -1e-17
    as 0.0000, not -0.0000)."""
    if value is None or np.isnan(value):
        return "n/a"
    value = float(value) + 0.0  # -0.0 (0 / a negative sum of weights) shows as 0
    for n in range(digits, max(digits, 12) + 1):
        text = f"{value:.{n}{'f' if fixed else 'g'}}"
        shown = float(text)
        if all((shown < m) == (value < m) and (shown == m) == (value == m) for m in marks):
            return text
    text = f"{value:.{digits}{'f' if fixed else 'g'}}"  # within rounding noise of a mark
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def pvalue_text(p: float, thresholds: Sequence[float] = (), digits: int = 4) -> str:
    """A p-value with ``digits`` significant digits, never rounded onto 0 or 1 or across a
    verdict's ``thresholds`` (0.0099996 against 0.01 is not "0.01", 1 - 1e-9 not "1");
    "n/a" for NaN."""
    return number_text(p, digits, marks=(0.0, 1.0, *thresholds))


def differing_texts(first: float, second: float, digits: int = 6) -> tuple[str, str]:
    """Two numbers that differ, each with ``digits`` significant digits or as many more as
    tell them apart (up to 17, which parse back to each float exactly)."""
    for n in range(digits, 18):
        texts = f"{float(first):.{n}g}", f"{float(second):.{n}g}"
        if texts[0] != texts[1]:
            return texts
    return texts


def percent_text(fraction: float, decimals: int = 1) -> str:
    """A fraction in percent to ``decimals`` decimals, never rounded onto 0 % or 100 % (a
    cut keeping 0.99996 of the events shows 99.996%, not 100.0%); "n/a" for NaN."""
    text = number_text(100 * fraction, decimals, fixed=True, marks=(0.0, 100.0))
    return text if text == "n/a" else text + "%"


PERCENT_ROUNDING = 4 * float(np.finfo(np.float64).eps)  # 100 x a fraction, then the text


def requested_percent(fraction: float) -> str:
    """A requested fraction (a signal efficiency asked for) in percent with the fewest
    decimals that give it exactly: 0.5 is "50%", 0.995 "99.5%" (``.0%`` showed "100%"),
    0.999999999999995 "99.9999999999995%" (the product's rounding, a few units in the last
    place, is all the text may differ by)."""
    scaled = 100.0 * float(fraction)
    for decimals in range(16):
        text = f"{scaled:.{decimals}f}"
        if math.isclose(float(text), scaled, rel_tol=PERCENT_ROUNDING, abs_tol=0.0):
            return text + "%"
    return percent_text(fraction, 7)


def values_text(values: Any, shown: int = 6) -> str:
    """Given values as a short list for a message: the first ``shown`` and a count of the
    rest (a refusal of a million values quotes six, not all)."""
    flat = np.asarray(values, dtype=object).ravel().tolist()
    more = f", ... ({len(flat):,} values)" if len(flat) > shown else ""
    return "[" + ", ".join(map(repr, flat[:shown])) + more + "]"


def setting_text(value: float) -> str:
    """A setting as given: six significant digits where they are its value (0.05, 1e-05),
    else the shortest text that reads back as it (0.1234567, which ``:g`` showed as
    0.123457)."""
    text = f"{float(value):g}"
    return text if float(text) == float(value) else repr(float(value))


def shown_alike(achieved: float, requested: float) -> bool:
    """Whether ``achieved`` shows as ``requested`` at the decimals of
    :func:`requested_percent` (a cut keeping 50.2 % of a requested 50 % is "50%")."""
    decimals = len(requested_percent(requested).rstrip("%").partition(".")[2])
    return f"{100.0 * achieved:.{decimals}f}" == f"{100.0 * requested:.{decimals}f}"


def weight_exponent(weights: np.ndarray) -> int:
    """The binary exponent e of the largest |weight| (0 when all are zero or there are
    none): sums of ``weights * 2**-e`` and of their squares neither overflow nor
    underflow, and the scaling itself is exact (weights of 1e-170 and 1e170 alike)."""
    largest = float(np.max(np.abs(weights), initial=0.0))
    return int(np.frexp(largest)[1]) if largest > 0 else 0


def running_sum_slack(n_terms: int, abs_sum: float) -> float:
    """How far rounding can move a sequential float64 sum (``np.cumsum``) of ``n_terms``
    values whose magnitudes add up to ``abs_sum``: ``n eps abs_sum`` (Higham's bound).

    Ten million weights of 0.1 sum to 4.5e-11 of the total below half at the half-way
    event: a crossing tested with a fixed tolerance finds the next event where unit
    weights find this one."""
    return float(n_terms) * float(np.finfo(np.float64).eps) * float(abs_sum)


def positive_beyond_rounding(weights: np.ndarray) -> bool:
    """Whether ``weights`` sum to more than the rounding of their sum (``running_sum_slack``):
    a net weight of exactly 0 with unit weights is a residue of 3e-17 with weights of 0.1,
    which a test ``> 0`` took for a positive total (and divided by)."""
    w = np.asarray(weights, dtype=np.float64)
    return float(w.sum()) > running_sum_slack(w.size, np.abs(w).sum())


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: Any) -> Any:
    """Weighted q-quantile(s) of ``values``: the smallest value at which the summed weight
    of the values up to it first reaches q times the total weight.

    This is hepbdt's one definition, for leaf medians and resolutions alike. Signed weights
    count with their sign (the quantile of the net distribution); the running sum is not
    monotone then, and the first value at which it reaches the target is taken. When the
    total weight is not positive, |w| are used, and unit weights when all weights are zero.
    A scalar q gives a float (0.0 for no values), an array of q an array (NaN for no values).
    """
    from hepbdt.engine.sums import RUNNING_SUM_ROUNDING, running_sum  # Numba: at first use

    values = np.asarray(values)
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if not np.all((qs >= 0) & (qs <= 1)):  # NaN too: it would give the largest value
        raise ValueError(f"a quantile q must lie in [0, 1], got {np.asarray(q).tolist()}")
    if values.size == 0:
        return 0.0 if np.ndim(q) == 0 else np.full(qs.shape, np.nan)
    w = np.asarray(weights, dtype=np.float64)
    if not positive_beyond_rounding(w):
        w = np.abs(w) if np.any(w != 0) else np.ones_like(w)
    # One order for any order of the events (by value, then weight), and the total as the
    # running sum's own last term. The running sum's rounding must not move the crossing:
    # ten weights of 0.1 add up to just below a quarter of forty, so equal weights gave
    # another quantile than unit ones. A sum within that rounding of the target reaches
    # it; the compensated sum keeps it a few eps sum |w| (np.cumsum's n eps sum |w| was
    # more than one event's weight past 6.7e7 unit weights: the median 2 events early).
    order = np.lexsort((w, values))
    running = running_sum(w[order])
    reached = np.maximum.accumulate(running)
    slack = RUNNING_SUM_ROUNDING * float(np.abs(w).sum())
    index = np.searchsorted(reached, qs * float(running[-1]) - slack, side="left")
    result = values[order][np.clip(index, 0, values.size - 1)]
    return float(result[0]) if np.ndim(q) == 0 else result


def hash_fraction(numbers: np.ndarray) -> np.ndarray:
    """A number in [0, 1) for each integer, uniform and independent of its neighbours
    (splitmix64's finaliser): a reproducible random draw keyed by event number.

    Only 64-bit integer arithmetic (wrapping) and an exact conversion of 53 bits to float64,
    so the same on every platform and numpy version. An integer is hashed by its 64-bit
    two's-complement pattern: negative numbers are fine, and -1 and 2**64 - 1 (uint64)
    give the same draw. Give integers (float event numbers are truncated by the cast).
    """
    z = np.asarray(numbers).astype(np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def uniform_draws_below(state: dict[str, Any], n: int, fraction: float, skip: int = 0
                        ) -> np.ndarray:
    """``Generator(bits).random(n) < fraction`` for a bit generator in ``state`` (numpy's
    ``bit_generator.state``: the draw a fit made from it), advanced by ``skip`` draws
    first (``random`` takes one 64-bit draw a value): the same events, drawn again."""
    bits = getattr(np.random, state["bit_generator"])()
    bits.state = state
    if skip:
        bits.advance(int(skip))
    return np.random.Generator(bits).random(n) < fraction


def available_memory() -> int | None:
    """Bytes of memory available to a new process: the machine's (MemAvailable, else free
    pages), or less where a control group limits this process (a batch slot, a
    container: its limit less its use, cgroup v2 or v1); None when the system does not
    say."""
    machine = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    machine = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if machine is None:
        try:
            machine = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            machine = None
    limited = cgroup_room()
    if limited is None:
        return machine
    return limited if machine is None else min(machine, limited)


def cgroup_room(proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
                ) -> int | None:
    """The least of (memory limit - memory in use) over this process's control group and
    its ancestors (cgroup v2 ``memory.max``/``memory.current``, v1
    ``memory.limit_in_bytes``/``memory.usage_in_bytes``); None without a limit."""
    try:
        with open(proc_cgroup, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # v2: "0::/path"
            return _cgroup_room(os.path.join(root, path.lstrip("/")), root,
                                "memory.max", "memory.current")
        if "memory" in controllers.split(","):  # v1: "N:memory:/path"
            base = os.path.join(root, "memory")
            return _cgroup_room(os.path.join(base, path.lstrip("/")), base,
                                "memory.limit_in_bytes", "memory.usage_in_bytes")
    return None


def _cgroup_room(folder: str, root: str, limit_file: str, usage_file: str) -> int | None:
    room = None
    folder, root = os.path.normpath(folder), os.path.normpath(root)
    while True:
        try:
            with open(os.path.join(folder, limit_file), encoding="ascii") as handle:
                limit = handle.read().strip()
            with open(os.path.join(folder, usage_file), encoding="ascii") as handle:
                usage = int(handle.read().strip())
            if limit != "max" and int(limit) < 1 << 60:  # v1 writes a huge number for none
                free = max(0, int(limit) - usage)
                room = free if room is None else min(room, free)
        except (OSError, ValueError):
            pass
        if folder == root or not folder.startswith(root):
            return room
        folder = os.path.dirname(folder)


# -- threads ----------------------------------------------------------------------------------


# Event-features of a training sample below which a fit runs on one thread: each parallel
# kernel wakes the sleeping OpenMP threads (about 50 us on a 2-core AMD EPYC), a tree calls
# a dozen or more, and below this size the second thread does not pay for it
# (``benchmarks/bench_threading.py --sizes``: time per tree on 2 threads against 1: 1.1-3.7x
# up to 50,000 x 28). Threads that spin instead of sleeping (the user set GOMP_SPINCOUNT or
# OMP_WAIT_POLICY=ACTIVE) wake in about a microsecond, and two of them pay from about
# 200,000 (``--sizes --spin``: 0.94x at 20,000 x 10, 0.64x at 50,000 x 28).
SERIAL_FIT_WORK = 2_000_000
SERIAL_FIT_WORK_SPINNING = 200_000


_T = TypeVar("_T")
_END = object()


def read_ahead(items: Iterable[_T]) -> Iterator[_T]:
    """``items`` made one ahead by a background thread, so that the caller's work on one
    item overlaps the making of the next (uproot's decompression, numpy and the Numba
    kernels release the GIL). An exception raised while making an item comes out where
    that item would have; when the caller stops early, the thread stops after the item it
    is making, before this generator is closed."""
    import queue
    import threading

    handoff: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((True, _END))
        except BaseException as exc:  # handed to the caller, raised there
            put((False, exc))

    thread = threading.Thread(target=produce, name="hepbdt-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = handoff.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join()


def threads_sleep() -> bool:
    """Whether OpenMP's idle threads sleep at once (hepbdt's default, OMP_WAIT_POLICY=PASSIVE)."""
    from .engine._types import threads_sleep as sleep  # the engine sets that default

    return sleep()


_FORKED_FROM_GNU_OPENMP: list[bool] = []  # set in a child forked after GNU OpenMP ran


def _after_fork_in_child() -> None:
    """Note, in a forked child, that the parent had run kernels on GNU OpenMP: the child's
    first parallel kernel would stop the interpreter (libgomp refuses a forked process),
    and ``multiprocessing.Pool`` then waited forever for it."""
    numba = sys.modules.get("numba")
    if numba is None:
        return
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran in the parent
        return
    omppool = sys.modules.get("numba.np.ufunc.omppool")
    if layer == "omp" and getattr(omppool, "openmp_vendor", "GNU") == "GNU":
        _FORKED_FROM_GNU_OPENMP.append(True)


if hasattr(os, "register_at_fork"):  # POSIX: Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def check_not_forked_from_openmp() -> None:
    """RuntimeError in a child forked from a process that ran kernels on GNU OpenMP, where
    the kernels would abort the interpreter, instead of that abort."""
    if _FORKED_FROM_GNU_OPENMP:
        raise RuntimeError(
            "hepbdt cannot run in a process forked from one that already ran its kernels on "
            "GNU OpenMP (it would stop the interpreter): start the worker processes with "
            "'spawn' or 'forkserver' (multiprocessing.get_context('spawn'), "
            "ProcessPoolExecutor(mp_context=...), or joblib's default loky backend)")


@contextlib.contextmanager
def threads(n_jobs: int | None, work: int | None = None) -> Iterator[None]:
    """Run Numba kernels with ``n_jobs`` threads (None or -1: all configured threads), or
    with one when ``work`` (events x features of a fit) is below SERIAL_FIT_WORK
    (SERIAL_FIT_WORK_SPINNING when the threads spin); RuntimeError in a process forked
    after GNU OpenMP ran (:func:`check_not_forked_from_openmp`)."""
    check_not_forked_from_openmp()
    # only callers that run kernels get here, and they have imported the engine
    from .engine._types import launch_lock

    with launch_lock():  # Numba's workqueue layer: one launching thread at a time
        with _thread_count(n_jobs, work):
            yield


@contextlib.contextmanager
def _thread_count(n_jobs: int | None, work: int | None) -> Iterator[None]:
    """``threads`` once checked: Numba's thread count for the block."""
    limit = SERIAL_FIT_WORK if threads_sleep() else SERIAL_FIT_WORK_SPINNING
    serial = work is not None and work < limit
    if (n_jobs is None or n_jobs == -1) and not serial:
        yield
        return
    import numba  # only callers that run kernels get here, and they have imported it

    from .engine._types import set_serial_tree_threads

    old = numba.get_num_threads()
    allowed = old if n_jobs is None or n_jobs == -1 else int(n_jobs)
    allowed = max(1, min(allowed, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(1 if serial else allowed)
    # a small fit's one-call trees share their levels' work out where threads wake at once
    old_serial = set_serial_tree_threads(allowed if serial and not threads_sleep() else 1)
    try:
        yield
    finally:
        numba.set_num_threads(old)
        set_serial_tree_threads(old_serial)


def release_free_memory() -> None:
    """Give the C allocator's free memory back to the system (glibc's ``malloc_trim``;
    nothing elsewhere): a read frees many chunk-sized arrays whose pages the allocator
    would otherwise keep, counted in the process's resident memory."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: the one use of a C library call

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass
