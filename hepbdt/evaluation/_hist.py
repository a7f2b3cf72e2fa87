"""Weighted 1-d histograms (sum of weights and of squared weights) on given bin edges.

A thin layer over boost-histogram's ``Weight`` storage used by the separation, the
overtraining chi2 and the plots, so that every histogram carries its own errors. Entries
outside the edges (infinite ones included) are folded into the first and last bins, so no
weight is lost; NaN values, which lie nowhere, are refused.
"""

from __future__ import annotations

from typing import Any

import boost_histogram as bh
import numpy as np

#: Equal-width bins of one histogram, at most (a figure shows no more; memory and drawing
#: time grow with the bins, not the events: 1e6 bins of 1,000 scores drew in 83 s, 1e9
#: asked for 7.45 GiB).
MAX_BINS = 10_000


def check_bin_count(n_bins: Any, limit: int = MAX_BINS, what: str = "bins") -> int:
    """``n_bins`` as an int; ValueError unless it is a whole number in [1, ``limit``]."""
    number = isinstance(n_bins, (int, float, np.integer, np.floating))
    if not number or isinstance(n_bins, bool) or not float(n_bins).is_integer() or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    if n_bins > limit:
        raise ValueError(f"bins={int(n_bins):,} is more {what} than the {limit:,} allowed "
                         "(memory and time grow with the bins, not the events): expected a "
                         f"whole number in [1, {limit:,}]")
    return int(n_bins)


def common_edges(values: np.ndarray, n_bins: int, limit: int = MAX_BINS) -> np.ndarray:
    """Return ``n_bins + 1`` equal-width, strictly increasing edges spanning the finite
    ``values`` (a unit range if constant, or [0, 1] if none is finite; a range too narrow
    for ``n_bins`` distinct edges at its magnitude is widened until they are);
    ``n_bins`` at most ``limit`` (ValueError)."""
    n_bins = check_bin_count(n_bins, limit)
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.linspace(0.0, 1.0, n_bins + 1)
    lo, hi = float(finite.min()), float(finite.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    if np.isfinite(hi - lo):
        edges = np.linspace(lo, hi, n_bins + 1)
    else:  # wider than float64's largest (lo < 0 < hi): two terms of opposite signs
        t = np.arange(n_bins + 1) / n_bins
        edges = lo * (1.0 - t) + hi * t
    if np.all(edges[1:] > edges[:-1]):
        return edges
    # the range holds fewer than n_bins floats at this magnitude: widen it around its middle
    big = max(abs(lo), abs(hi))
    half = 4.0 * n_bins * (big - float(np.nextafter(big, 0.0)))  # steps of 8 floats' spacing
    top = float(np.finfo(np.float64).max) - half  # the widened range stays within float64
    middle = min(max(lo / 2 + hi / 2, -top), top)
    return np.linspace(middle - half, middle + half, n_bins + 1)


def weighted_histogram(
    values: np.ndarray, weights: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (sum of weights, sum of squared weights) per bin; under/overflow folded in,
    NaN values refused (ValueError)."""
    values = np.asarray(values, dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        raise ValueError(f"weighted_histogram: {int(nan.sum())} of {values.size} values are NaN "
                         f"(first at entry {int(np.flatnonzero(nan)[0])}); a NaN value lies in "
                         "no bin: drop those entries or give them a value")
    hist = bh.Histogram(bh.axis.Variable(edges), storage=bh.storage.Weight())
    hist.fill(values, weight=weights)
    view = hist.view(flow=True)
    sumw = np.array(view.value, dtype=np.float64)
    sumw2 = np.array(view.variance, dtype=np.float64)
    for arr in (sumw, sumw2):
        arr[1] += arr[0]
        arr[-2] += arr[-1]
    return sumw[1:-1], sumw2[1:-1]
