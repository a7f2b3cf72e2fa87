"""Binning: weighted quantile edges per feature, and raw floats to uint8 bin codes.

A value x falls in bin ``b`` = the number of edges <= x, so ``code <= b`` is the same test
as ``x < edges[b]``: thresholds stay in raw feature units and a model predicts the same on
raw floats as on codes. NaN goes to the last bin (``MISSING_BIN``). Edges sit strictly
between two distinct training values, so the choice of ``<`` versus ``<=`` never matters
on the training data.

:class:`EdgeSketch` finds the same edges from data seen chunk by chunk (the streaming
read of ``hepbdt.read(..., binned=True)``): a priority sample of the events, mergeable
and independent of how the events were cut into chunks, from which
:func:`fit_bin_edges`'s own per-feature rule computes the edges.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import numba
import numpy as np

from ._types import BIN_DTYPE, MAX_VALUE_BINS, MISSING_BIN, X_DTYPE, launch_lock, njit, read_only

__all__ = ["BinMapper", "EdgeSketch", "fit_bin_edges", "apply_bins", "bin_rows_into",
           "check_edges", "first_infinite", "float32_edges"]

SUBSAMPLE_FOR_EDGES = 200_000  # events used to find quantile edges (as LightGBM's default)


_FLOAT32_MAX = float(np.finfo(X_DTYPE).max)


def _edges_between(unique: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Edges strictly above unique[idx] and at most unique[idx + 1] (float32 values), in
    float32; finite unless the lower value is the largest float32 (next to +inf)."""
    lo, hi = unique[idx], unique[idx + 1]
    # the midpoint of the values clipped to the finite range: +-inf neighbours give a finite
    # edge (an infinite one would be refused by check_edges, and +inf read as "no split")
    mid = ((np.clip(lo.astype(np.float64), -_FLOAT32_MAX, _FLOAT32_MAX)
            + np.clip(hi.astype(np.float64), -_FLOAT32_MAX, _FLOAT32_MAX)) / 2).astype(X_DTYPE)
    # float32 rounding can land the midpoint on the lower value (only when the upper one is
    # the next float32): then cut at the next float32 above the lower value.
    with np.errstate(over="ignore"):  # the largest float32's next is +inf
        above_lo = np.nextafter(lo, X_DTYPE(np.inf))
    return np.where(mid > lo, mid, above_lo).astype(X_DTYPE)


@njit
def _sort_keys(values, keys, pos):
    """The non-NaN values' keys (unsigned integers ordered as the values, -0 as +0) and
    positions into ``keys`` and ``pos``; returns their count and the keys' byte counts."""
    bits = values.view(np.uint32)
    counts = np.zeros((4, 256), np.int64)
    n = 0
    for i in range(values.size):
        x = values[i]
        if x != x:
            continue
        b = np.uint32(0) if x == 0 else bits[i]
        k = ~b if b & np.uint32(0x80000000) else b | np.uint32(0x80000000)
        keys[n] = k
        pos[n] = i
        n += 1
        counts[0, k & np.uint32(255)] += 1
        counts[1, (k >> np.uint32(8)) & np.uint32(255)] += 1
        counts[2, (k >> np.uint32(16)) & np.uint32(255)] += 1
        counts[3, k >> np.uint32(24)] += 1
    return n, counts


@njit
def _unique_weights(values, weights, keys, pos, keys2, pos2, unique_bits, unique_weight):
    """``np.unique`` of the non-NaN float32 values (as bit patterns into ``unique_bits``) and
    each one's summed weight in event order (``np.bincount`` of the inverse, bit for bit),
    by a stable radix sort of the keys (a fifth of the time of numpy's unique with its
    inverse): (the number of distinct values, the number of non-NaN values)."""
    n, counts = _sort_keys(values, keys, pos)
    src_k, src_p, dst_k, dst_p = keys, pos, keys2, pos2
    offset = np.empty(256, np.int64)
    for d in range(4):
        if counts[d].max() == n:  # one byte value for all: the pass would change nothing
            continue
        total = 0
        for v in range(256):
            offset[v] = total
            total += counts[d, v]
        shift = np.uint32(8 * d)
        for j in range(n):
            k = src_k[j]
            v = (k >> shift) & np.uint32(255)
            dst_k[offset[v]] = k
            dst_p[offset[v]] = src_p[j]
            offset[v] += 1
        src_k, src_p, dst_k, dst_p = dst_k, dst_p, src_k, src_p
    u = -1
    last = np.uint32(0)
    for j in range(n):
        k = src_k[j]
        if u < 0 or k != last:
            u += 1
            unique_bits[u] = k & np.uint32(0x7FFFFFFF) if k & np.uint32(0x80000000) else ~k
            unique_weight[u] = 0.0
            last = k
        unique_weight[u] += weights[src_p[j]]  # a stable sort: each value's events in order
    return u + 1, n


def _unique_with_weights(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(sorted distinct non-NaN float32 values, each one's summed float64 weight, the number
    of non-NaN values): ``np.unique`` and ``np.bincount`` of its inverse, bit for bit."""
    n = values.size
    keys, pos, keys2, pos2, unique_bits = (np.empty(n, np.uint32) for _ in range(5))
    unique_weight = np.empty(n)
    n_unique, n_finite = _unique_weights(np.ascontiguousarray(values, X_DTYPE),
                                         np.ascontiguousarray(weights, np.float64), keys, pos,
                                         keys2, pos2, unique_bits, unique_weight)
    return unique_bits[:n_unique].view(X_DTYPE), unique_weight[:n_unique], int(n_finite)


def _feature_edges(values: np.ndarray, weights: np.ndarray, max_bins: int, n_cuts: int) -> np.ndarray:
    unique, unique_weight, n_finite = _unique_with_weights(values, weights)
    if n_finite == 0:
        return np.empty(0, X_DTYPE)
    if unique.size <= max_bins:
        return _edges_between(unique, np.arange(unique.size - 1))
    n_quantile_bins = max_bins - n_cuts if n_cuts else max_bins
    if not unique_weight.sum() > 0:
        unique_weight = _unique_with_weights(values, np.ones(values.size))[1]
    cumulative = np.cumsum(unique_weight)
    # A running sum within its rounding (at most n eps sum |w|) of a target reaches it, as in
    # _util.weighted_quantile: weights of 0.1 or 1e-12, or the AdaBoost family's normalised
    # ones, summed to just below a target that unit weights reach exactly, which moved the
    # edge by one value (a weight scale, or a weight k against k copies, gave other bins).
    slack = n_finite * np.finfo(np.float64).eps * float(cumulative[-1])
    targets = cumulative[-1] * np.arange(1, n_quantile_bins) / n_quantile_bins - slack
    idx = np.unique(np.clip(np.searchsorted(cumulative, targets, side="left"), 0, unique.size - 2))
    edges = _edges_between(unique, idx)
    if n_cuts:
        # TMVA's nCuts: equal-width cuts between the minimum and maximum, added to the quantiles.
        lo, hi = float(unique[0]), float(unique[-1])
        grid = lo + (hi - lo) * np.arange(1, n_cuts + 1) / (n_cuts + 1)
        gidx = np.clip(np.searchsorted(unique, grid, side="left") - 1, 0, unique.size - 2)
        edges = np.unique(np.concatenate([edges, _edges_between(unique, gidx)]))
    return edges[: MAX_VALUE_BINS - 1]


def fit_bin_edges(
    X: np.ndarray,
    sample_weight: np.ndarray | None = None,
    max_bins: int = MAX_VALUE_BINS,
    n_cuts: int = 0,
    random_state: int = 0,
    rows: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Weighted quantile edges per feature.

    Parameters
    ----------
    X : (n, m) float32
    sample_weight : (n,) finite, or None; |w| counts towards the quantiles, and events of
        weight zero are left out.
    max_bins : number of value bins (<= 255); a feature with fewer distinct values gets
        one bin per value.
    n_cuts : TMVA's nCuts, equal-width cuts added to the quantile edges (0: none).
    random_state : seed of the event subsample used when n > 200,000.
    rows : the events to fit on, increasing row indices of X (``sample_weight`` then has
        one weight per row given): the edges of ``X[rows]``, without copying it.

    Returns
    -------
    list of m float32 arrays of increasing edges (at most ``max_bins - 1`` each).
    """
    max_bins, n_cuts = _check_bin_counts(max_bins, n_cuts)
    n = X.shape[0] if rows is None else len(rows)
    w = np.ones(n) if sample_weight is None else _abs_weights(sample_weight, n)
    chosen = None if rows is None else np.asarray(rows)  # the rows of X the edges see
    if np.any(w == 0) and np.any(w != 0):
        # Events of weight zero carry no information: the edges must not depend on them, so
        # that a weight of k trains as k copies of the event, and 0 as no event.
        chosen = np.flatnonzero(w != 0) if chosen is None else chosen[w != 0]
        w = w[w != 0]
        n = w.size
    if n > SUBSAMPLE_FOR_EDGES:
        pick = np.sort(np.random.default_rng(random_state).choice(n, SUBSAMPLE_FOR_EDGES, replace=False))
        chosen, w = (pick if chosen is None else chosen[pick]), w[pick]
    return _edges_by_feature(X, w, max_bins, n_cuts, chosen)


def _check_bin_counts(max_bins: Any, n_cuts: Any) -> tuple[int, int]:
    """(max_bins, n_cuts) as ints; ValueError unless 2 <= max_bins <= 255 and 0 <= n_cuts <
    max_bins, integers (more bins would be cut to the first 254 edges, silently)."""
    if isinstance(max_bins, bool) or int(max_bins) != max_bins or not 2 <= max_bins <= MAX_VALUE_BINS:
        raise ValueError(f"max_bins must be an integer in [2, {MAX_VALUE_BINS}], got {max_bins!r}")
    if isinstance(n_cuts, bool) or int(n_cuts) != n_cuts or not 0 <= n_cuts < max_bins:
        raise ValueError(f"n_cuts must be an integer in [0, max_bins) = [0, {int(max_bins)}), "
                         f"got {n_cuts!r}")
    return int(max_bins), int(n_cuts)


def _abs_weights(sample_weight: Any, n: int) -> np.ndarray:
    """|w| as float64; ValueError unless there are n finite weights (a NaN or inf weight
    would make every cumulative weight NaN or inf, hence meaningless edges)."""
    w = np.abs(np.asarray(sample_weight, np.float64)).ravel()
    if w.size != n:
        raise ValueError(f"{w.size} weights for {n} events")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be finite: weight {int(np.flatnonzero(~np.isfinite(w))[0])} "
                         f"is {w[~np.isfinite(w)][0]}")
    return w


def _power_of_two_scaled(w: np.ndarray) -> np.ndarray:
    """|w| times the power of two that brings the largest below 1: the same edges (an exact
    scaling), but sums that stay finite. Weights of 1e305 summed to inf over 20,000 events,
    every quantile target was NaN, and a feature got 1 edge instead of 254."""
    largest = float(np.max(w)) if w.size else 0.0
    if not 0 < largest < np.inf:
        return w
    return np.ldexp(w, -int(np.frexp(largest)[1]))


def _edges_by_feature(X: np.ndarray, w: np.ndarray, max_bins: int, n_cuts: int,
                      rows: np.ndarray | None = None) -> list[np.ndarray]:
    """``_feature_edges`` of every column (of the rows ``rows`` of X, all when None), on
    Numba's threads: the kernels release the GIL, so the features are done side by side,
    each exactly as alone."""
    # float32 first, as the data are binned: float64 values that round to one float32
    # would give equal edges (not strictly increasing) and bins no value falls in
    columns = _float32_columns(X, rows)
    w = _power_of_two_scaled(w)
    workers = min(numba.get_num_threads(), len(columns))
    if workers <= 1:
        return [_feature_edges(c, w, max_bins, n_cuts) for c in columns]
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda c: _feature_edges(c, w, max_bins, n_cuts), columns))


GATHER_BLOCK = 1024  # rows a task of ``_gather_columns`` copies


def _float32_columns(X: np.ndarray, rows: np.ndarray | None) -> list[np.ndarray]:
    """The columns of X (its rows ``rows``, when given) as contiguous float32 arrays; from
    C-contiguous float32 X in one compiled pass (numpy copied the rows, then each column:
    200,000 rows of 1M x 28 on two threads, a loaded machine, 55 -> 20 ms)."""
    if X.dtype != X_DTYPE or X.ndim != 2 or not X.flags.c_contiguous:
        X = X if rows is None else X[rows]
        return [np.ascontiguousarray(X[:, f], dtype=X_DTYPE) for f in range(X.shape[1])]
    rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows, np.int64)
    out = np.empty((X.shape[1], rows.size), X_DTYPE)
    with launch_lock():
        _gather_columns(read_only(X), rows, out)
    return list(out)


@njit(parallel=True)
def _gather_columns(X, rows, out):
    for block in numba.prange((rows.size + GATHER_BLOCK - 1) // GATHER_BLOCK):
        for i in range(block * GATHER_BLOCK, min(rows.size, (block + 1) * GATHER_BLOCK)):
            r = rows[i]
            for f in range(X.shape[1]):
                out[f, i] = X[r, f]


@njit
def _bin_of(e, x):
    """Number of edges <= x: a branch-free binary search over 256 slots padded with NaN
    (``NaN <= x`` is false, so +inf gets the number of edges, not the padding's 254)."""
    if np.isnan(x):
        return MISSING_BIN
    pos = 0
    step = 128
    while step > 0:
        pos += step if e[pos + step - 1] <= x else 0
        step >>= 1
    return min(pos, MAX_VALUE_BINS - 1)  # +inf stays a value bin


@njit(inline="always")
def _code(pos, x):
    return MISSING_BIN if np.isnan(x) else min(pos, MAX_VALUE_BINS - 1)


@njit(inline="always")
def _bins_of_8(e, x0, x1, x2, x3, x4, x5, x6, x7):
    """``_bin_of`` of eight values at once: eight independent searches in lockstep, which
    the core overlaps (one search is a chain of eight dependent loads: 500k x 28, one
    thread, 10.7 -> 7.4 ns a value)."""
    p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = 0
    step = 128
    while step > 0:
        p0 += step if e[p0 + step - 1] <= x0 else 0
        p1 += step if e[p1 + step - 1] <= x1 else 0
        p2 += step if e[p2 + step - 1] <= x2 else 0
        p3 += step if e[p3 + step - 1] <= x3 else 0
        p4 += step if e[p4 + step - 1] <= x4 else 0
        p5 += step if e[p5 + step - 1] <= x5 else 0
        p6 += step if e[p6 + step - 1] <= x6 else 0
        p7 += step if e[p7 + step - 1] <= x7 else 0
        step >>= 1
    return (_code(p0, x0), _code(p1, x1), _code(p2, x2), _code(p3, x3), _code(p4, x4),
            _code(p5, x5), _code(p6, x6), _code(p7, x7))


@njit(inline="always")
def _bin_rows(X, f, e, lo, hi, out, out_f, by_event):
    """Codes of feature f for rows [lo, hi) of X into out[i, out_f] (by_event) or out[out_f, i]."""
    i = lo
    while i + 8 <= hi:
        c = _bins_of_8(e, X[i, f], X[i + 1, f], X[i + 2, f], X[i + 3, f], X[i + 4, f],
                       X[i + 5, f], X[i + 6, f], X[i + 7, f])
        for k in range(8):
            if by_event:
                out[i + k, out_f] = c[k]
            else:
                out[out_f, i + k] = c[k]
        i += 8
    while i < hi:
        if by_event:
            out[i, out_f] = _bin_of(e, X[i, f])
        else:
            out[out_f, i] = _bin_of(e, X[i, f])
        i += 1


@njit(parallel=True)
def _apply_bins(X, edges, codes):
    n, m = X.shape
    for f in numba.prange(m):
        _bin_rows(X, f, edges[f], 0, n, codes, f, False)


INF_CHUNK = 1 << 16  # values per task of the infinity scan


@njit
def _any_infinite(x):
    """Whether x holds +-inf: a loop without an exit, which vectorises."""
    found = False
    for i in range(x.size):
        found |= np.isinf(x[i])
    return found


@njit(parallel=True)
def _first_infinite(flat, first):
    # Each chunk is first tested whole (1M x 28 float32, two threads: 69 -> 10 ms), and
    # searched value by value only where it holds an infinity.
    for c in numba.prange(first.size):
        lo = c * INF_CHUNK
        hi = min(flat.size, lo + INF_CHUNK)
        first[c] = -1
        if _any_infinite(flat[lo:hi]):
            for k in range(lo, hi):
                if np.isinf(flat[k]):
                    first[c] = k
                    break


def first_infinite(X: np.ndarray) -> int:
    """Flat index of the first +-inf in a C-contiguous array, or -1 when there is none."""
    flat = X.reshape(-1)
    first = np.empty(-(-flat.size // INF_CHUNK), np.int64)
    with launch_lock():
        _first_infinite(read_only(flat), first)
    found = first[first >= 0]
    return int(found[0]) if found.size else -1


def _pack_edges(edges: list[np.ndarray]) -> np.ndarray:
    packed = np.full((len(edges), MAX_VALUE_BINS + 1), np.nan, dtype=X_DTYPE)
    for f, e in enumerate(edges):
        packed[f, : e.size] = e
    return packed


@njit(parallel=True)
def _apply_bins_by_event(X, edges, codes):
    n, m = X.shape
    n_blocks = (n + 4095) // 4096
    for blk in numba.prange(n_blocks):
        for f in range(m):
            _bin_rows(X, f, edges[f], blk * 4096, min(n, blk * 4096 + 4096), codes, f, True)


def bin_rows_into(X: np.ndarray, edges: list[np.ndarray] | np.ndarray, out: np.ndarray) -> None:
    """Event-major codes of X ((n, m) float32, C order) written into ``out`` ((n, m) uint8).

    ``edges``: the m edge arrays, or their packed form (``pack_edges``) when one set of
    edges bins many chunks.
    """
    packed = edges if isinstance(edges, np.ndarray) else _pack_edges(edges)
    with launch_lock():
        _apply_bins_by_event(read_only(np.ascontiguousarray(X, dtype=X_DTYPE)), packed, out)


ROW_BLOCK = 1 << 16  # rows gathered at once by ``_row_blocks``


def _row_blocks(X: np.ndarray, rows: np.ndarray):
    """(start, stop, X[rows[start:stop]] as C-contiguous float32) blocks of ROW_BLOCK rows:
    binning selected events without a copy of all of them."""
    for start in range(0, len(rows), ROW_BLOCK):
        stop = min(start + ROW_BLOCK, len(rows))
        yield start, stop, np.ascontiguousarray(X[rows[start:stop]], dtype=X_DTYPE)


def pack_edges(edges: list[np.ndarray]) -> np.ndarray:
    """The edges as one (m, 256) float32 array padded with NaN, as the binning kernels read them."""
    return _pack_edges(edges)


def float32_edges(edges: Any) -> np.ndarray:
    """Edges as float32 that bin every float32 x as the given ones do: a float32 edge as it
    is, any other (a float64 edge between two float32 values) as the smallest float32 above
    it, for which x < edge holds exactly when it holds for the given edge. Rounding to the
    nearest float32 instead put the x just below an edge rounded down in the bin above."""
    given = np.asarray(edges).ravel()
    if given.dtype == X_DTYPE:
        return given
    given = given.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: inf, refused later
        rounded = given.astype(X_DTYPE)
        below = rounded.astype(np.float64) < given
    return np.where(below, np.nextafter(rounded, X_DTYPE(np.inf)), rounded).astype(X_DTYPE)


def check_edges(edges: Any, n_features: int | None = None) -> list[np.ndarray]:
    """Edges given by a caller as m arrays, as float32 (:func:`float32_edges`); ValueError
    unless each is finite, strictly increasing and at most ``MAX_VALUE_BINS - 1`` long (then
    code <= b iff x < edges[b])."""
    out = [float32_edges(e) for e in edges]
    if n_features is not None and len(out) != n_features:
        raise ValueError(f"bin edges for {len(out)} features, but the data have {n_features}")
    for f, e in enumerate(out):
        if e.size > MAX_VALUE_BINS - 1:
            raise ValueError(f"bin edges of feature {f}: {e.size} edges, at most "
                             f"{MAX_VALUE_BINS - 1} (255 value bins)")
        if not np.all(np.isfinite(e)) or np.any(e[1:] <= e[:-1]):  # np.diff can overflow
            raise ValueError(f"bin edges of feature {f} must be finite and strictly increasing "
                             "as float32 values (the features are compared in float32)")
    return out


def apply_bins(X: np.ndarray, edges: list[np.ndarray]) -> np.ndarray:
    """Bin codes of X, feature-major: (m, n) uint8, NaN in ``MISSING_BIN``."""
    packed = _pack_edges(edges)
    X = np.ascontiguousarray(X, dtype=X_DTYPE)
    codes = np.empty((X.shape[1], X.shape[0]), dtype=BIN_DTYPE)
    with launch_lock():
        _apply_bins(read_only(X), packed, codes)
    return codes


class BinMapper:
    """Edges fitted on training data; maps raw features to codes and bins to thresholds."""

    def __init__(self, max_bins: int = MAX_VALUE_BINS, n_cuts: int = 0, random_state: int = 0):
        self.max_bins = max_bins
        self.n_cuts = n_cuts
        self.random_state = random_state

    @classmethod
    def from_edges(cls, edges: list[np.ndarray]) -> BinMapper:
        """A fitted mapper with the given edges (m float32 arrays, see :func:`check_edges`):
        the bins a binned matrix was made with, or edges of an earlier fit."""
        mapper = cls()
        mapper.edges_ = check_edges(edges)
        mapper.n_bins_ = np.array([e.size + 1 for e in mapper.edges_], dtype=np.int32)
        return mapper

    def fit(self, X: np.ndarray, sample_weight: np.ndarray | None = None,
            rows: np.ndarray | None = None) -> BinMapper:
        """Find the edges of every feature (of the events ``rows`` of X, when given)."""
        self.edges_ = fit_bin_edges(X, sample_weight, self.max_bins, self.n_cuts, self.random_state,
                                    rows)
        self.n_bins_ = np.array([e.size + 1 for e in self.edges_], dtype=np.int32)
        return self

    def transform_into(self, X: np.ndarray, out: np.ndarray,
                       rows: np.ndarray | None = None) -> None:
        """Event-major codes of X (of ``X[rows]``, when given) written into ``out`` ((n, m)
        uint8, C order)."""
        packed = _pack_edges(self.edges_)
        if rows is None:
            bin_rows_into(X, packed, out)
            return
        for start, stop, block in _row_blocks(X, rows):
            bin_rows_into(block, packed, out[start:stop])

    def transform(self, X: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Codes of X (of ``X[rows]``, when given), (m, n) uint8."""
        if rows is None:
            return apply_bins(X, self.edges_)
        packed = _pack_edges(self.edges_)
        codes = np.empty((X.shape[1], len(rows)), dtype=BIN_DTYPE)
        for start, stop, block in _row_blocks(X, rows):
            part = np.empty((X.shape[1], stop - start), dtype=BIN_DTYPE)
            with launch_lock():
                _apply_bins(read_only(block), packed, part)
            codes[:, start:stop] = part
        return codes

    def thresholds(self, feature: np.ndarray, bin_threshold: np.ndarray) -> np.ndarray:
        """Raw thresholds for splits ``code <= bin_threshold`` (x < threshold); inf past the last edge."""
        out = np.full(feature.shape, np.inf, dtype=X_DTYPE)
        split = feature >= 0
        out[split] = self._threshold_table()[feature[split], bin_threshold[split]]
        return out

    def _threshold_table(self) -> np.ndarray:
        """(m, bins) each feature's edges, then inf: made once for the edges of this fit."""
        cached = self.__dict__.get("_table")
        if cached is None or cached[0] is not self.edges_:
            # a column for every uint8 bin (at most MAX_VALUE_BINS - 1 edges a feature)
            table = np.full((len(self.edges_), MISSING_BIN + 1), np.inf, dtype=X_DTYPE)
            for f, e in enumerate(self.edges_):
                table[f, :e.size] = e
            self._table = cached = (self.edges_, table)
        return cached[1]

    def __getstate__(self) -> dict:
        """The state without the threshold table (made again when needed)."""
        state = self.__dict__.copy()
        state.pop("_table", None)
        return state


# -- streaming: a mergeable sketch of the edges ----------------------------------------------

_ZERO_TIER = 1e300  # keys of weight-zero events: after every other event's key
# Below it a key u / |w| (u <= 1) could exceed _ZERO_TIER / 2, where keys are cut and would
# tie (a sample of the first events instead of a random one): such weights are refused.
_SMALLEST_WEIGHT = 2.0 / _ZERO_TIER


def _hash_uniform(ids: np.ndarray, seed: int) -> np.ndarray:
    """A number in (0, 1] per event id, uniform (splitmix64 of the id and the seed)."""
    z = (np.asarray(ids, np.int64).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
         + np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + np.uint64(0x632BE59BD9B4E019))
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0 ** -53


def _priority_weights(a: np.ndarray, tau: float) -> np.ndarray:
    """max(|w|, 1 / tau) per sampled event; where 1 / tau overflows (weights near float64's
    largest: keys u / |w| of 1e-309), all of them times 2**-64, the same edges (an exact
    scaling of every weight): 1 / tau as inf made every weight inf and the quantiles NaN."""
    with np.errstate(over="ignore", divide="ignore"):
        floor = 1.0 / tau
    if np.isinf(floor):
        a, floor = np.ldexp(a, -64), 1.0 / np.ldexp(tau, 64)
    return np.maximum(a, floor)


class EdgeSketch:
    """Bin edges from events seen chunk by chunk: a mergeable, weighted priority sample.

    Each event gets a key u / |w|, with u uniform in (0, 1] from a hash of its id (its row
    in the final data set) and the seed; the sketch keeps every event whose key is below a
    threshold, lowering the threshold to the ``capacity + 1``-th smallest key whenever it
    holds more than twice ``capacity`` events. What it holds is therefore the set of events
    with the smallest keys, whatever the chunks were and in whatever order sketches are
    merged (:meth:`merge` is a union and a cut at the lower threshold). The edges are
    :func:`fit_bin_edges`'s rule (weighted quantiles of the distinct values) applied to:

    * every event, with its |w|, when at most ``capacity`` were seen: then the edges are
      exactly those of ``fit_bin_edges`` on the same events (which subsamples only above
      ``SUBSAMPLE_FOR_EDGES`` = the default capacity);
    * else the ``capacity`` events of smallest key, each weighted max(|w|, 1 / tau) with
      tau the next key (priority sampling, Duffield, Lund and Thorup 2007: every weighted
      count, hence every quantile's cumulative weight, is estimated without bias; heavy
      events are kept with their own weight). With unit weights this is a uniform sample
      of ``capacity`` events, as ``fit_bin_edges`` draws.

    Negative weights count as |w|, as in :func:`fit_bin_edges` (the edges say where events
    are, not their net density); events of weight zero do not count, unless every event
    has weight zero (then each counts once).
    """

    #: The smallest nonzero |w| the sketch takes (:meth:`keys` refuses smaller ones).
    smallest_weight = _SMALLEST_WEIGHT

    def __init__(self, n_features: int, capacity: int = SUBSAMPLE_FOR_EDGES, seed: int = 0):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity}")
        self.n_features = int(n_features)
        self.capacity = int(capacity)
        self.seed = int(seed)
        self.threshold = np.inf
        self.n_seen = 0
        self._values: list[np.ndarray] = []
        self._weights: list[np.ndarray] = []
        self._keys: list[np.ndarray] = []
        self._ids: list[np.ndarray] = []
        self._held = 0

    def keys(self, w: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The events' keys (smaller is kept first); ValueError for a weight too small for
        its key to be told from the others' (magnitude below ``_SMALLEST_WEIGHT``)."""
        a = np.abs(np.asarray(w, np.float64))
        tiny = (a > 0) & (a < _SMALLEST_WEIGHT)
        if tiny.any():
            first = int(np.flatnonzero(tiny)[0])
            raise ValueError(f"event weights of magnitude below {_SMALLEST_WEIGHT:g} (event "
                             f"{int(np.asarray(ids)[first])}: {float(np.asarray(w)[first]):g}) "
                             "are too small to sample the bin edges by: scale the weights "
                             "(e.g. weight = \"w * 1e300\")")
        u = _hash_uniform(ids, self.seed)
        with np.errstate(divide="ignore", over="ignore"):
            key = np.minimum(u / a, _ZERO_TIER / 2)
        return np.where(a > 0, key, _ZERO_TIER * (1.0 + u))

    def wanted(self, w: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """A mask of the events :meth:`update` would keep now (the caller may compute the
        features of those only)."""
        return self.keys(w, ids) < self.threshold

    def update(self, X: np.ndarray, w: np.ndarray, ids: np.ndarray) -> None:
        """Add events: X (n, m) float32 features, w (n,) signed weights, ids (n,) int64
        distinct event ids (their rows in the data set, so the sample does not depend on
        the chunks)."""
        a = _abs_weights(w, len(ids))
        self.n_seen += len(ids)
        key = self.keys(a, ids)
        keep = key < self.threshold
        if not keep.any():
            return
        self._add(np.asarray(X, X_DTYPE)[keep], a[keep], key[keep], np.asarray(ids, np.int64)[keep])

    def update_selected(self, X: np.ndarray, w: np.ndarray, ids: np.ndarray, n_seen: int) -> None:
        """Add events already chosen with :meth:`wanted` (X of those only), out of ``n_seen``."""
        a = _abs_weights(w, len(ids))
        self.n_seen += int(n_seen)
        if len(ids):
            self._add(np.asarray(X, X_DTYPE), a, self.keys(a, ids), np.asarray(ids, np.int64))

    def _add(self, X, a, key, ids) -> None:
        self._values.append(X)
        self._weights.append(a)
        self._keys.append(key)
        self._ids.append(ids)
        self._held += len(ids)
        if self._held > 2 * self.capacity:
            self._shrink()

    def _gathered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if len(self._ids) != 1:
            m = self.n_features
            self._values = [np.concatenate(self._values) if self._values else np.empty((0, m), X_DTYPE)]
            self._weights = [np.concatenate(self._weights) if self._weights else np.empty(0)]
            self._keys = [np.concatenate(self._keys) if self._keys else np.empty(0)]
            self._ids = [np.concatenate(self._ids) if self._ids else np.empty(0, np.int64)]
        return self._values[0], self._weights[0], self._keys[0], self._ids[0]

    def _shrink(self) -> None:
        """Keep the ``capacity`` smallest keys; the threshold becomes the next key."""
        X, a, key, ids = self._gathered()
        if key.size <= self.capacity:
            return
        self.threshold = min(self.threshold, float(np.partition(key, self.capacity)[self.capacity]))
        keep = key < self.threshold
        self._values, self._weights = [X[keep]], [a[keep]]
        self._keys, self._ids = [key[keep]], [ids[keep]]
        self._held = int(keep.sum())

    def merge(self, other: EdgeSketch) -> EdgeSketch:
        """Add another sketch's events (same features, capacity and seed; distinct ids)."""
        if (other.n_features, other.capacity, other.seed) != (self.n_features, self.capacity, self.seed):
            raise ValueError("only sketches of the same features, capacity and seed merge")
        X, a, key, ids = other._gathered()
        self.n_seen += other.n_seen
        self.threshold = min(self.threshold, other.threshold)
        mine = self._gathered()
        keep = mine[2] < self.threshold
        self._values, self._weights = [mine[0][keep]], [mine[1][keep]]
        self._keys, self._ids = [mine[2][keep]], [mine[3][keep]]
        self._held = int(keep.sum())
        take = key < self.threshold
        self._add(X[take], a[take], key[take], ids[take])
        return self

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """The events the edges come from, in id order, and their weights (see the class doc;
        all times 2**-64 where 1 / tau overflows, which leaves the edges as they are)."""
        X, a, key, ids = self._gathered()
        if self.n_seen > self.capacity:
            order = np.argsort(key, kind="stable")
            tau = key[order[self.capacity]] if key.size > self.capacity else self.threshold
            chosen = np.sort(order[: self.capacity]) if key.size > self.capacity else np.arange(key.size)
            X, a, key, ids = X[chosen], a[chosen], key[chosen], ids[chosen]
            if np.isfinite(tau) and tau < _ZERO_TIER / 2:
                a = _priority_weights(a, tau)
        order = np.argsort(ids, kind="stable")
        X, a, key = X[order], a[order], key[order]
        nonzero = key < _ZERO_TIER
        if nonzero.any():
            return X[nonzero], a[nonzero]
        return X, np.ones(len(a))

    def edges(self, max_bins: int = MAX_VALUE_BINS, n_cuts: int = 0) -> list[np.ndarray]:
        """The m edge arrays (as :func:`fit_bin_edges` returns them)."""
        max_bins, n_cuts = _check_bin_counts(max_bins, n_cuts)
        X, a = self.sample()
        return _edges_by_feature(X, a, max_bins, n_cuts)
