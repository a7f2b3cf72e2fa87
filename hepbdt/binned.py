"""BinnedMatrix: events as uint8 bin codes with the edges that made them.

The compact form of a feature matrix that training needs: one byte per event and feature
(``codes``, event-major (n, m) uint8) and, per feature, the increasing float32 ``edges``
of its bins. A value x has the code b = the number of edges <= x (NaN: 255, the missing
bin), so a split "code <= b" is the test "x < edges[b]" on the raw value (see
:mod:`hepbdt.engine.binning`). ``hepbdt.read(..., binned=True)`` streams ROOT files into
one; every estimator fits it without binning again (its edges are the model's bins) and
predicts it from the codes. It holds no model code and imports Numba only to bin floats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["BinnedMatrix", "MISSING_CODE"]

MISSING_CODE = 255  # the code of NaN (the engine's MISSING_BIN)
_N_CODES = 256
BLOCK_VALUES = 1 << 22  # codes a block-wise scan reads at once
_CHECK_VALUES = 1 << 20  # codes the constructor's check reads at once (its temporary's bytes)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_codes(codes: np.ndarray, edges: tuple[np.ndarray, ...]) -> None:
    """ValueError unless every code of feature f is at most ``len(edges[f])`` or 255: a larger
    code is no bin of those edges (codes made with other edges), which training would
    silently treat as lying above every edge."""
    if codes.size == 0:
        return
    m = codes.shape[1]
    n_edges = np.array([e.size for e in edges], dtype=np.int64)
    fold = max(1, 256 // m)  # events side by side: a max over wide rows is ~10x faster
    rows = fold * max(1, _CHECK_VALUES // (m * fold))
    largest = np.zeros(m, dtype=np.int64)
    shifted = np.empty((min(rows, codes.shape[0]), m), dtype=np.uint8)
    for i in range(0, codes.shape[0], rows):
        block = codes[i:i + rows]
        part = shifted[:len(block)]
        np.add(block, np.uint8(1), out=part)  # 255 (missing) wraps to 0: ignored by the max
        whole = len(part) - len(part) % fold
        if whole:
            wide = part[:whole].reshape(-1, m * fold).max(axis=0).reshape(fold, m).max(axis=0)
            np.maximum(largest, wide, out=largest)
        if whole < len(part):
            np.maximum(largest, part[whole:].max(axis=0), out=largest)
    bad = np.flatnonzero(largest - 1 > n_edges)
    if bad.size:
        f = int(bad[0])
        raise ValueError(f"codes of feature {f} go up to {int(largest[f]) - 1}, but its "
                         f"{n_edges[f]} edges make codes 0..{n_edges[f]} (and {MISSING_CODE}: missing)")


def _float32_edges(edges: Any) -> np.ndarray:
    """One feature's edges as float32 that bin every float32 x as the given ones do (a
    float64 edge between two float32 values: the float32 above it, not the nearest one)."""
    given = np.asarray(edges)
    if given.dtype == np.float32:
        return given.ravel()
    from .engine.binning import float32_edges  # Numba: only for edges not given as float32

    return float32_edges(given)


class BinnedMatrix:
    """(n, m) bin codes (uint8, event-major, C order) and the m edge arrays behind them.

    Parameters
    ----------
    codes : (n, m) uint8; a code is at most ``len(edges[f])`` or 255 (missing): checked.
    edges : m increasing, finite float32 arrays (at most 254 edges each).
    feature_names : m names, or None; ``feature_definitions``: name -> expression, as
        ``Dataset.X`` carries them (and ``branch_types`` and ``event_sources``, set by
        :meth:`with_names`).

    Selecting rows (a slice, a mask, indices) gives a BinnedMatrix of those events; columns
    are selected with :meth:`columns`. ``np.asarray(matrix)`` gives each event's
    *representative* values (float32): the lower edge of its bin (below the first edge for
    bin 0, NaN for missing, and NaN for a feature without edges: one value where they were
    found, which they do not keep); a model whose thresholds are these edges predicts on them
    exactly what it predicts on the raw values, and plots see each value moved to its bin.
    """

    __slots__ = ("codes", "edges", "feature_names", "feature_definitions", "branch_types",
                 "event_sources")

    def __init__(self, codes: Any, edges: Sequence[Any], feature_names: Sequence[str] | None = None,
                 feature_definitions: Mapping[str, str] | None = None) -> None:
        given = np.asarray(codes)
        if given.dtype != np.uint8:  # a cast would wrap 259 to 3, -1 to 255 (missing), 2.7 to 2
            if given.dtype.kind not in "iu" or (given.size and (
                    int(given.min()) < 0 or int(given.max()) > MISSING_CODE)):
                raise ValueError(f"codes must be bin codes, integers from 0 to {MISSING_CODE} "
                                 f"({MISSING_CODE}: missing); got {given.dtype} values"
                                 + (f" from {given.min()} to {given.max()}"
                                    if given.size and given.dtype.kind in "iuf" else ""))
        codes = np.ascontiguousarray(given, dtype=np.uint8)
        if codes.ndim != 2:
            raise ValueError(f"codes must be 2-d (events x features), got shape {codes.shape}")
        edges = tuple(_float32_edges(e) for e in edges)
        if len(edges) != codes.shape[1]:
            raise ValueError(f"{len(edges)} edge arrays for {codes.shape[1]} columns of codes")
        for f, e in enumerate(edges):
            # e[1:] <= e[:-1], not np.diff: the difference of two large edges can overflow
            if e.size >= MISSING_CODE or not np.all(np.isfinite(e)) or np.any(e[1:] <= e[:-1]):
                raise ValueError(f"edges of feature {f} must be at most {MISSING_CODE - 1} finite, "
                                 "strictly increasing values")
        _check_codes(codes, edges)
        self._set(codes, edges, feature_names, feature_definitions)

    def _set(self, codes: np.ndarray, edges: tuple[np.ndarray, ...],
             feature_names: Sequence[str] | None, feature_definitions: Mapping[str, str] | None,
             branch_types: Mapping[str, str] | None = None,
             event_sources: Sequence[str | None] | None = None) -> None:
        self.codes = codes
        self.edges = edges
        if feature_names is not None:
            feature_names = tuple(str(n) for n in feature_names)
            if len(feature_names) != codes.shape[1]:
                raise ValueError(f"{len(feature_names)} feature names for {codes.shape[1]} columns")
        self.feature_names = feature_names
        self.feature_definitions = dict(feature_definitions) if feature_definitions else None
        # the types of the branches the features were read from (Dataset.branch_types)
        self.branch_types = None if branch_types is None else dict(branch_types)
        # the event expressions of the read (Dataset.event_sources)
        self.event_sources = None if event_sources is None else tuple(event_sources)

    @classmethod
    def _of_checked(cls, codes: np.ndarray, edges: tuple[np.ndarray, ...],
                    feature_names: Sequence[str] | None,
                    feature_definitions: Mapping[str, str] | None,
                    branch_types: Mapping[str, str] | None = None,
                    event_sources: Sequence[str | None] | None = None) -> BinnedMatrix:
        """A matrix of codes and edges taken from checked matrices (rows or columns of one):
        not scanned again."""
        out = cls.__new__(cls)
        out._set(np.ascontiguousarray(codes), tuple(edges), feature_names, feature_definitions,
                 branch_types, event_sources)
        return out

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_features(cls, X: Any, edges: Sequence[Any], feature_names: Sequence[str] | None = None,
                      feature_definitions: Mapping[str, str] | None = None) -> BinnedMatrix:
        """Bin float features X (n, m) with the given edges (NaN: missing); X is checked as a
        model checks float input (``check_X``: +-inf and values beyond float32's range are
        refused, not put in the last bin), and its column names are kept, with a read's
        records (``branch_types``, ``event_sources``) that a model checks (``Dataset.X``)."""
        # Numba is imported only when floats are binned, so reading and evaluating stay free of it.
        from ._util import check_X, feature_definitions_of
        from .engine.binning import bin_rows_into, check_edges

        if np.ndim(X) == 2 and 0 in np.shape(X):  # no events: nothing to check or name
            values, names = np.zeros(np.shape(X), dtype=np.float32), None
        else:
            values, names = check_X(X)
        edges = check_edges(edges, values.shape[1])
        codes = np.empty(values.shape, dtype=np.uint8)
        bin_rows_into(values, edges, codes)
        if feature_names is None:
            feature_names = names
        if feature_names is not names:  # other names: not the read's columns
            return cls(codes, edges, feature_names, feature_definitions)
        if feature_definitions is None:
            feature_definitions = feature_definitions_of(X)
        # the read's records, or a model would score an Int_t flag's ~flag (-1 - flag) as the
        # Bool_t's !flag it trained on without the check Dataset.X gets
        return cls(codes, edges, feature_names, feature_definitions).with_names(
            feature_names, feature_definitions, getattr(X, "branch_types", None),
            getattr(X, "event_sources", None))

    def with_names(self, feature_names: Sequence[str] | None,
                   feature_definitions: Mapping[str, str] | None = None,
                   branch_types: Mapping[str, str] | None = None,
                   event_sources: Sequence[str | None] | None = None) -> BinnedMatrix:
        """The same codes and edges (not copied) under other names (and branch types)."""
        return BinnedMatrix._of_checked(self.codes, self.edges, feature_names,
                                        feature_definitions, branch_types, event_sources)

    # -- array-like ------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape  # type: ignore[return-value]

    ndim = 2

    @property
    def nbytes(self) -> int:
        """Bytes of the codes (the edges are a few kB)."""
        return int(self.codes.nbytes)

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __getitem__(self, index: Any) -> BinnedMatrix:
        if isinstance(index, tuple):
            if len(index) == 2 and isinstance(index[1], slice) and index[1] == slice(None):
                index = index[0]
            else:
                raise TypeError("a BinnedMatrix selects events (rows); select features with "
                                ".columns([...])")
        if isinstance(index, int | np.integer):
            n = len(self)
            if not -n <= int(index) < n:
                raise IndexError(f"event {int(index)} is out of range for {n} events")
            index = slice(int(index) % n, int(index) % n + 1)
        return BinnedMatrix._of_checked(self.codes[index], self.edges, self.feature_names,
                                        self.feature_definitions, self.branch_types,
                                        self.event_sources)

    def columns(self, indices: Sequence[int]) -> BinnedMatrix:
        """The features ``indices``, in that order (names kept)."""
        indices = [int(i) for i in indices]
        names = None if self.feature_names is None else [self.feature_names[i] for i in indices]
        return BinnedMatrix._of_checked(self.codes[:, indices], tuple(self.edges[i] for i in indices),
                                        names, self.feature_definitions, self.branch_types,
                                        self.event_sources)

    def same_bins(self, other: BinnedMatrix) -> bool:
        """True when both have the same edges, feature by feature."""
        return len(self.edges) == len(other.edges) and all(
            a.shape == b.shape and np.array_equal(a, b) for a, b in zip(self.edges, other.edges, strict=True))

    def representatives(self) -> np.ndarray:
        """(m, 256) float32: the value standing for each code (see the class doc)."""
        # a feature without edges (one value where they were found) has no value to stand
        # for its codes: NaN, not a number it may never take
        table = np.full((len(self.edges), _N_CODES), np.nan, dtype=np.float32)
        for f, e in enumerate(self.edges):
            if e.size:
                step = float(e[1]) - float(e[0]) if e.size > 1 else max(1.0, abs(float(e[0])))
                # kept finite (a float model input refuses +-inf) and below the first edge
                below = np.float32(max(float(e[0]) - step, -_FLOAT32_MAX))
                if not below < e[0]:
                    below = np.nextafter(e[0], np.float32(-np.inf))
                table[f, 0] = below
                table[f, 1:e.size + 1] = e
                table[f, e.size + 1:] = e[-1]
        table[:, MISSING_CODE] = np.nan
        return table

    def to_features(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Representative values (float32, (stop - start, m)) of events ``start:stop``."""
        codes = self.codes[start:stop]
        table = self.representatives()
        out = np.empty(codes.shape, dtype=np.float32)
        for f in range(codes.shape[1]):
            out[:, f] = table[f][codes[:, f]]
        return out

    def feature_values(self, j: int) -> np.ndarray:
        """Representative values (float32, (n,)) of feature ``j``."""
        return self.representatives()[j][self.codes[:, j]]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.to_features()
        return out if dtype is None else out.astype(dtype)

    def bin_indices(self) -> np.ndarray:
        """(n, m) float32: each code as a number, NaN for missing (what the negative-weight
        policies measure distances and regress on when a fit is given bins)."""
        out = self.codes.astype(np.float32)
        out[self.codes == MISSING_CODE] = np.nan
        return out

    def missing_any(self) -> bool:
        """True when some value is missing (NaN); read in blocks of rows, so the temporary
        stays small (a mask of all codes would be one byte per code: 2.8 GB at 100M x 28)."""
        rows = max(1, BLOCK_VALUES // max(1, self.shape[1]))
        return any(bool((self.codes[i:i + rows] == MISSING_CODE).any())
                   for i in range(0, self.shape[0], rows))

    def __repr__(self) -> str:
        return (f"BinnedMatrix({self.shape[0]:,} events x {self.shape[1]} features, "
                f"{self.nbytes:,} bytes of codes)")
