"""Binning: weighted quantile edges per feature, and raw floats to uint8 bin codes.

A value x falls in bin ``b`` = the number of edges <= x, so ``code <= b`` is the same test
as ``x < edges[b]``: thresholds stay in raw feature units and a model predicts the same on
raw floats as on codes. NaN goes to the last bin (``MISSING_BIN``). Edges sit strictly
between two distinct training values, so the choice of ``<`` versus ``<=`` never matters
on the training data.
"""

from __future__ import annotations

import numba
import numpy as np

from ._types import BIN_DTYPE, MAX_VALUE_BINS, MISSING_BIN, X_DTYPE, njit

__all__ = ["BinMapper", "fit_bin_edges", "apply_bins", "first_infinite"]

SUBSAMPLE_FOR_EDGES = 200_000  # events used to find quantile edges (as LightGBM's default)


def _edges_between(unique: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Edges strictly above unique[idx] and at most unique[idx + 1], in float32."""
    lo = unique[idx].astype(np.float64)
    hi = unique[idx + 1].astype(np.float64)
    mid = ((lo + hi) / 2).astype(X_DTYPE)
    # float32 rounding can land the midpoint on the lower value: then cut at the upper one.
    return np.where(mid > unique[idx], mid, unique[idx + 1]).astype(X_DTYPE)


def _feature_edges(values: np.ndarray, weights: np.ndarray, max_bins: int, n_cuts: int) -> np.ndarray:
    finite = ~np.isnan(values)
    values, weights = values[finite], weights[finite]
    if values.size == 0:
        return np.empty(0, X_DTYPE)
    unique, inverse = np.unique(values, return_inverse=True)
    if unique.size <= max_bins:
        return _edges_between(unique, np.arange(unique.size - 1))
    n_quantile_bins = max_bins - n_cuts if n_cuts else max_bins
    unique_weight = np.bincount(inverse, weights=weights, minlength=unique.size)
    if not unique_weight.sum() > 0:
        unique_weight = np.bincount(inverse, minlength=unique.size).astype(np.float64)
    cumulative = np.cumsum(unique_weight)
    targets = cumulative[-1] * np.arange(1, n_quantile_bins) / n_quantile_bins
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
) -> list[np.ndarray]:
    """Weighted quantile edges per feature.

    Parameters
    ----------
    X : (n, m) float32
    sample_weight : (n,) or None; |w| counts towards the quantiles, and events of weight
        zero are left out.
    max_bins : number of value bins (<= 255); a feature with fewer distinct values gets
        one bin per value.
    n_cuts : TMVA's nCuts, equal-width cuts added to the quantile edges (0: none).
    random_state : seed of the event subsample used when n > 200,000.

    Returns
    -------
    list of m float32 arrays of increasing edges (at most ``max_bins - 1`` each).
    """
    if not 2 <= max_bins <= MAX_VALUE_BINS:
        raise ValueError(f"max_bins must be in [2, {MAX_VALUE_BINS}], got {max_bins}")
    if n_cuts < 0 or n_cuts >= max_bins:
        raise ValueError(f"n_cuts must be in [0, max_bins) = [0, {max_bins}), got {n_cuts}")
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.abs(np.asarray(sample_weight, np.float64))
    if np.any(w == 0) and np.any(w != 0):
        # Events of weight zero carry no information: the edges must not depend on them, so
        # that a weight of k trains as k copies of the event, and 0 as no event.
        X, w = X[w != 0], w[w != 0]
        n = X.shape[0]
    if n > SUBSAMPLE_FOR_EDGES:
        rows = np.sort(np.random.default_rng(random_state).choice(n, SUBSAMPLE_FOR_EDGES, replace=False))
        X, w = X[rows], w[rows]
    return [_feature_edges(X[:, f], w, max_bins, n_cuts) for f in range(X.shape[1])]


@njit
def _bin_of(e, x):
    """Number of edges <= x: a branch-free binary search over 256 slots padded with +inf."""
    if np.isnan(x):
        return MISSING_BIN
    pos = 0
    step = 128
    while step > 0:
        pos += step if e[pos + step - 1] <= x else 0
        step >>= 1
    return min(pos, MAX_VALUE_BINS - 1)  # +inf stays a value bin


@njit(parallel=True)
def _apply_bins(X, edges, codes):
    n, m = X.shape
    for f in numba.prange(m):
        e = edges[f]
        for i in range(n):
            codes[f, i] = _bin_of(e, X[i, f])


INF_CHUNK = 1 << 16  # values per task of the infinity scan


@njit(parallel=True)
def _first_infinite(flat, first):
    for c in numba.prange(first.size):
        first[c] = -1
        for k in range(c * INF_CHUNK, min(flat.size, (c + 1) * INF_CHUNK)):
            if np.isinf(flat[k]):
                first[c] = k
                break


def first_infinite(X: np.ndarray) -> int:
    """Flat index of the first +-inf in a C-contiguous array, or -1 when there is none."""
    flat = X.reshape(-1)
    first = np.empty(-(-flat.size // INF_CHUNK), np.int64)
    _first_infinite(flat, first)
    found = first[first >= 0]
    return int(found[0]) if found.size else -1


def _pack_edges(edges: list[np.ndarray]) -> np.ndarray:
    packed = np.full((len(edges), MAX_VALUE_BINS + 1), np.inf, dtype=X_DTYPE)
    for f, e in enumerate(edges):
        packed[f, : e.size] = e
    return packed


@njit(parallel=True)
def _apply_bins_by_event(X, edges, codes):
    n, m = X.shape
    n_blocks = (n + 4095) // 4096
    for blk in numba.prange(n_blocks):
        for i in range(blk * 4096, min(n, blk * 4096 + 4096)):
            for f in range(m):
                codes[i, f] = _bin_of(edges[f], X[i, f])


def apply_bins(X: np.ndarray, edges: list[np.ndarray]) -> np.ndarray:
    """Bin codes of X, feature-major: (m, n) uint8, NaN in ``MISSING_BIN``."""
    packed = _pack_edges(edges)
    X = np.ascontiguousarray(X, dtype=X_DTYPE)
    codes = np.empty((X.shape[1], X.shape[0]), dtype=BIN_DTYPE)
    _apply_bins(X, packed, codes)
    return codes


class BinMapper:
    """Edges fitted on training data; maps raw features to codes and bins to thresholds."""

    def __init__(self, max_bins: int = MAX_VALUE_BINS, n_cuts: int = 0, random_state: int = 0):
        self.max_bins = max_bins
        self.n_cuts = n_cuts
        self.random_state = random_state

    def fit(self, X: np.ndarray, sample_weight: np.ndarray | None = None) -> BinMapper:
        """Find the edges of every feature."""
        self.edges_ = fit_bin_edges(X, sample_weight, self.max_bins, self.n_cuts, self.random_state)
        self.n_bins_ = np.array([e.size + 1 for e in self.edges_], dtype=np.int32)
        return self

    def transform_into(self, X: np.ndarray, out: np.ndarray) -> None:
        """Event-major codes of X written into columns [0, m) of ``out`` ((n, >= m) uint8)."""
        X = np.ascontiguousarray(X, dtype=X_DTYPE)
        _apply_bins_by_event(X, _pack_edges(self.edges_), out)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Codes of X, (m, n) uint8."""
        return apply_bins(X, self.edges_)

    def thresholds(self, feature: np.ndarray, bin_threshold: np.ndarray) -> np.ndarray:
        """Raw thresholds for splits ``code <= bin_threshold`` (x < threshold); inf past the last edge."""
        out = np.full(feature.shape, np.inf, dtype=X_DTYPE)
        for k in np.flatnonzero(feature >= 0):
            e = self.edges_[feature[k]]
            b = int(bin_threshold[k])
            out[k] = e[b] if b < e.size else np.inf
        return out
