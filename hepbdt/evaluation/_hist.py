"""Weighted 1-d histograms (sum of weights and of squared weights) on given bin edges.

A thin layer over boost-histogram's ``Weight`` storage used by the separation, the
overtraining chi2 and the plots, so that every histogram carries its own errors. Entries
outside the edges are folded into the first and last bins, so no weight is lost.
"""

from __future__ import annotations

import boost_histogram as bh
import numpy as np


def common_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Return ``n_bins + 1`` equal-width edges spanning ``values`` (a unit range if constant)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.linspace(0.0, 1.0, n_bins + 1)
    lo, hi = float(finite.min()), float(finite.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, n_bins + 1)


def weighted_histogram(
    values: np.ndarray, weights: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (sum of weights, sum of squared weights) per bin; under/overflow folded in."""
    hist = bh.Histogram(bh.axis.Variable(edges), storage=bh.storage.Weight())
    hist.fill(values, weight=weights)
    view = hist.view(flow=True)
    sumw = np.array(view.value, dtype=np.float64)
    sumw2 = np.array(view.variance, dtype=np.float64)
    for arr in (sumw, sumw2):
        arr[1] += arr[0]
        arr[-2] += arr[-1]
    return sumw[1:-1], sumw2[1:-1]
