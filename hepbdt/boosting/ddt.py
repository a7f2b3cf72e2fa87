"""A designed decorrelated tagger (DDT): the score mapped through a class's score CDF in bins
of one decorrelation variable, after the fit.

:func:`fit_quantile_map` takes the trained model's scores of the target class's training
events and, in equal-weight bins of the variable m (``DDT_EVENTS_PER_BIN`` events a bin, at
least 2 and at most ``MAX_DDT_BINS`` bins), the weighted quantiles of the score at the
levels ``LEVELS`` (finer towards 1, where the cuts of a tagger are). :func:`apply_quantile_map`
gives each event F = the class's score CDF at its score, read in the two bins whose
centres (weighted mean m) bracket its m and interpolated linearly in m between them (the
first or last bin's CDF outside the centres; a score that many events share, a run of
equal quantiles, takes the middle of the run's levels). A cut F > c then keeps a fraction 1 - c of
the class in every region of m (up to the statistics of the bins, where the score
changes smoothly with m: the fit warns where it does not), so the class's mass
shape is not sculpted, whatever the booster learned: the map works on top of any model,
the flatness loss and uBoost included. Scores above a bin's top level map to 1.

Events of weight 0 carry no part of a CDF and are left out; the map needs 20 weighted
events and a positive net weight of the class. A bin needs 2 weighted events and a
positive net weight (negative weights can leave less), else it is merged with the next bin
(the last with the one before), so that every event's CDF is one of its own mass region.

The map is data (lists of floats, JSON-ready), kept in ``forest.extra["decorrelation_map"]``;
predicting needs m for every event. Nothing here knows about estimators or files.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._util import running_sum_slack, weighted_quantile

__all__ = ["DDT_EVENTS_PER_BIN", "LEVELS", "MAX_DDT_BINS", "DDTMapWarning", "apply_quantile_map",
           "fit_quantile_map"]

DDT_EVENTS_PER_BIN = 250
MAX_DDT_BINS = 100
LEVELS = np.unique(np.round(np.r_[np.linspace(0.0, 1.0, 101),
                                  1.0 - np.geomspace(1e-3, 0.1, 41)], 12))


def fit_quantile_map(score: NDArray, m: NDArray, w: NDArray, feature: int | None
                     ) -> dict[str, Any]:
    """The map of the target class's events: ``score``, ``m`` (float64 (n,)) and weights
    ``w``; ``feature`` the column of X that holds m (None: m is given at predict time).
    Returns the JSON-ready map: method, feature, centres (B,), levels (L,), quantiles (B, L)."""
    score, m, w = (np.asarray(a, np.float64) for a in (score, m, w))
    _check_finite(score=score, m=m, w=w)
    if not (score.shape == m.shape == w.shape and score.ndim == 1):
        raise ValueError(f"decorrelation_map='ddt': score, m and w must be 1-d of one length, "
                         f"got shapes {score.shape}, {m.shape} and {w.shape}")
    weighted = w != 0
    score, m, w = score[weighted], m[weighted], w[weighted]
    if score.size < 2 * 10:
        raise ValueError(f"decorrelation_map='ddt' needs the target class's events to fit the "
                         f"map; {score.size} of non-zero weight are too few (at least 20)")
    if not w.sum() > 0:
        raise ValueError(f"decorrelation_map='ddt': the target class's weights sum to "
                         f"{w.sum():g}; its score CDF needs a positive total")
    n_bins = int(np.clip(score.size // DDT_EVENTS_PER_BIN, 2, MAX_DDT_BINS))
    edges = np.unique(np.atleast_1d(weighted_quantile(m, w, np.arange(1, n_bins) / n_bins)))
    cell = np.searchsorted(edges, m, side="left")
    centres, quantiles, bins = [], [], []
    for first, last in _merged_cells(cell, w, edges.size + 1):
        inside = (cell >= first) & (cell <= last)
        q = np.asarray(weighted_quantile(score[inside], w[inside], LEVELS), np.float64)
        quantiles.append(np.maximum.accumulate(q).tolist())
        a = np.abs(w[inside])
        centres.append(float(np.sum(a * m[inside]) / a.sum()))
        bins.append(inside)
    spec = {"method": "ddt", "feature": feature, "centres": centres,
            "levels": LEVELS.tolist(), "quantiles": quantiles}
    _warn_unless_flat(spec, score, m, w, bins)
    return spec


def _tie_fractions(score: NDArray, w: NDArray) -> NDArray:
    """The fractions of ``w`` that a cut on ``score`` can keep (0, 1 and one above each
    distinct score): ties make the others unreachable for any map."""
    order = np.argsort(-score, kind="stable")
    s, kept = score[order], np.cumsum(w[order]) / w.sum()
    last = np.r_[s[1:] != s[:-1], True]
    return np.r_[0.0, kept[last]]


CHECKED_CUTS = (0.5, 0.9)  # the cuts F > c whose kept fraction the fit checks bin by bin


class DDTMapWarning(UserWarning):
    """The map does not keep 1 - c of its class in some bin of its own training events."""


def _warn_unless_flat(spec: dict[str, Any], score: NDArray, m: NDArray, w: NDArray,
                      bins: list[NDArray]) -> None:
    """DDTMapWarning when, on the events the map was fitted on, a cut F > c of
    CHECKED_CUTS keeps a fraction of a bin that differs from 1 - c by more than 5 binomial
    standard errors and 0.02: the linear interpolation between bin centres cannot follow
    a score that changes with m inside a bin (a model that splits on m itself), and
    the promise of the map would not hold there."""
    f = apply_quantile_map(spec, score, m)
    worst = None
    for inside in bins:
        wb = w[inside]
        total, n_eff = wb.sum(), wb.sum() ** 2 / np.sum(wb * wb)
        possible = _tie_fractions(score[inside], wb)
        for c in CHECKED_CUTS:
            kept = float(wb[f[inside] > c].sum() / total)
            error = np.sqrt(c * (1 - c) / n_eff)
            # no cut keeps a fraction between two tied scores' levels: that part is due
            off = abs(kept - (1 - c)) - np.min(np.abs(possible - (1 - c)))
            if off > max(5 * error, 0.02) and (worst is None or off > worst[0]):
                worst = (off, c, kept, error, m[inside].min(), m[inside].max())
    if worst is not None:
        _, c, kept, error, low, high = worst
        warnings.warn(
            f"decorrelation_map='ddt': on the events it was fitted on, F > {c:g} keeps "
            f"{kept:.3f} of the class for m in [{low:.6g}, {high:.6g}], where the map "
            f"promises {1 - c:.2f} (+- {error:.3f}): the score changes with m faster than "
            f"the map's bins of about {DDT_EVENTS_PER_BIN} events follow (a model that "
            "splits on m itself does so); the background is not flat there: check it with "
            "hepbdt.evaluation.decorrelation_measures, or train without m as a feature",
            DDTMapWarning, stacklevel=4)


def _merged_cells(cell: NDArray, w: NDArray, n_cells: int) -> list[tuple[int, int]]:
    """Runs (first, last) of adjacent cells, each holding at least 2 events and a positive
    net weight: a cell short of either joins the next, a short last run the one before
    (the class's net weight is positive, so one run of every cell always qualifies)."""
    count = np.bincount(cell, minlength=n_cells)
    net = np.bincount(cell, weights=w, minlength=n_cells)
    magnitude = np.bincount(cell, weights=np.abs(w), minlength=n_cells)

    def ok(first: int, last: int) -> bool:
        # positive beyond the rounding of the sums (a run netting 0 with unit weights is a
        # residue of 3e-17 with weights of 0.1)
        events = count[first:last + 1].sum()
        return events >= 2 and net[first:last + 1].sum() > running_sum_slack(
            events, magnitude[first:last + 1].sum())

    runs: list[tuple[int, int]] = []
    first = 0
    for c in range(n_cells):
        if ok(first, c):
            runs.append((first, c))
            first = c + 1
    if first < n_cells:
        runs.append((first, n_cells - 1))
    while len(runs) > 1 and not ok(*runs[-1]):
        runs[-2:] = [(runs[-2][0], runs[-1][1])]
    return runs


def _check_finite(**arrays: NDArray) -> None:
    """ValueError naming the first array that holds NaN or infinite values."""
    for name, a in arrays.items():
        bad = ~np.isfinite(a)
        if bad.any():
            raise ValueError(f"decorrelation_map='ddt': {int(bad.sum())} value(s) of {name} are "
                             f"NaN or infinite (first: event {int(np.flatnonzero(bad)[0])}); "
                             "the map needs a finite number for every event")


def apply_quantile_map(spec: dict[str, Any], score: NDArray, m: NDArray) -> NDArray:
    """F in [0, 1] of each event (float64 (n,)): the CDF of the map's class at ``score``,
    interpolated in ``m`` between the two nearest bin centres (module docstring)."""
    score = np.asarray(score, np.float64)
    m = np.asarray(m, np.float64)
    if not (score.ndim == 1 and m.shape == score.shape):
        raise ValueError(f"decorrelation_map='ddt': expected one score and one m per event, "
                         f"1-d of one length; got shapes {score.shape} and {m.shape}")
    _check_finite(score=score, m=m)
    centres = np.asarray(spec["centres"], np.float64)
    levels = np.asarray(spec["levels"], np.float64)
    quantiles = np.asarray(spec["quantiles"], np.float64)
    if centres.size == 1:
        return _cdf(score, quantiles[0], levels)
    lower = np.clip(np.searchsorted(centres, m, side="right") - 1, 0, centres.size - 2)
    t = np.clip((m - centres[lower]) / (centres[lower + 1] - centres[lower]), 0.0, 1.0)
    out = np.empty(score.size)
    for j in np.unique(lower):
        rows = np.flatnonzero(lower == j)
        below = _cdf(score[rows], quantiles[j], levels)
        above = _cdf(score[rows], quantiles[j + 1], levels)
        out[rows] = (1.0 - t[rows]) * below + t[rows] * above
    return out


def _cdf(score: NDArray, q: NDArray, levels: NDArray) -> NDArray:
    """One bin's CDF at ``score`` from its quantiles ``q`` (non-decreasing) at ``levels``:
    linear between them; a score equal to a run of equal quantiles (many events of one
    score, as a leaf or a saturated AdaBoost score gives) takes the middle of the run's
    levels. (The top of the run gave a tie F near 1: a tie of the most background-like
    score, a quarter of the background, passed F > 0.99 whole.) A cut cannot split a tie;
    the middle keeps it on the side where most of it belongs."""
    f = np.interp(score, q, levels)  # on a run: its last level
    runs = q[1:][np.diff(q) == 0]
    if runs.size:
        on = np.isin(score, runs)
        if on.any():  # the run's first level, from the reversed arrays
            first = np.interp(-score[on], -q[::-1], levels[::-1])
            f[on] = 0.5 * (first + f[on])
    return f
