"""Measures of mass sculpting: rejection against 1/JSD, and the mass shapes after cuts.

For cuts on the classifier score at fixed signal efficiencies, :func:`decorrelation_measures`
gives the background rejection (1 / background efficiency) and the Jensen-Shannon
divergence between the background's mass histogram before and after the cut (the
standard axes of decorrelation studies: rejection against 1/JSD), the same divergence for
signal, and the normalised mass shapes themselves. Everything is weighted with signed
event weights; histogram bins whose summed weight is negative count as empty in the JSD.
The JSD uses base-2 logarithms (so it lies in [0, 1]): JSD(P, Q) = (KL(P||M) + KL(Q||M)) / 2,
M = (P + Q) / 2, which is ``scipy.spatial.distance.jensenshannon(P, Q, base=2) ** 2``.
Finite samples put a floor under it: an unbiased cut keeping N background events (a
background efficiency f) in ``bins`` bins still gives a JSD of about
(bins - 1) (1 - f) / (8 N ln 2), N the effective events ((sum w)^2 / sum w^2) with weights
(with rows, the floor of lognormal weights of sigma 1.5 came out about 4 times too low);
the histogram before the cut holds the kept events, hence 1 - f (without it the floor
read 3x too high at f = 0.7; audit FK, 2026-12-05).
What cannot be measured is NaN, never a number that looks good: the JSD and 1/JSD of a
cut that keeps no background (no bin of positive weight), the rejection of a cut whose
passing background weight is negative, the shapes of an empty selection, and every
measure of a row whose cut cannot reach its signal efficiency: tied scores are kept or
dropped together, so the cut keeps ``achieved_signal_efficiency`` >= the requested one,
and a row where it keeps more than ``EFFICIENCY_TOLERANCE`` (five percentage points) above
it is not measured (a score with a few distinct values: its cut at "10 %" kept 78 %).
Within the tolerance the row is measured at its cut: quote ``achieved_signal_efficiency``.
This module computes; :mod:`hepbdt.plotting` draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hepbdt._util import values_text, weight_exponent
from hepbdt.engine.sums import RUNNING_SUM_ROUNDING, running_sum

from ._data import EFFICIENCY_TOLERANCE, beyond_tolerance, check_classification, in_class_units
from ._hist import common_edges, weighted_histogram

__all__ = ["DEFAULT_EFFICIENCIES", "EFFICIENCY_TOLERANCE", "DecorrelationMeasures",
           "decorrelation_measures", "jensen_shannon_divergence", "threshold_at_efficiency"]

DEFAULT_EFFICIENCIES = (0.1, 0.3, 0.5, 0.7, 0.9)
MAX_EFFICIENCIES = 1_000  # cuts of one call: each is a pass over the events


def _histogram_pair(p: NDArray, q: NDArray) -> tuple[NDArray, NDArray]:
    """p and q as float64 1-d arrays of one length and finite values; ValueError otherwise."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.ndim != 1 or p.shape != q.shape or p.size == 0:
        raise ValueError(f"jensen_shannon_divergence: p and q must be 1-d histograms of the same "
                         f"number of bins, got shapes {p.shape} and {q.shape}")
    for name, h in (("p", p), ("q", q)):
        if not np.all(np.isfinite(h)):
            raise ValueError(f"jensen_shannon_divergence: {name} has NaN or infinite bins; every "
                             "bin needs a finite weight")
    return p, q


def jensen_shannon_divergence(p: NDArray, q: NDArray) -> float:
    """JSD (base 2, in [0, 1]) of two histograms, each normalised here; negative bins count
    as empty. ValueError when either has no bin of positive weight (the JSD is undefined)."""
    p, q = _histogram_pair(p, q)
    p, q = np.clip(p, 0.0, None), np.clip(q, 0.0, None)
    for name, h in (("p", p), ("q", q)):
        if not h.sum() > 0:
            raise ValueError(f"jensen_shannon_divergence: {name} has no bin of positive weight; "
                             "the JSD of an empty histogram is undefined (it is not 0)")
    p, q = p / p.sum(), q / q.sum()
    mid = 0.5 * (p + q)

    def kl(a: NDArray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / mid[nz])))

    return max(0.0, 0.5 * (kl(p) + kl(q)))


def threshold_at_efficiency(score: NDArray, w: NDArray, efficiency: float) -> float:
    """The highest cut t such that the weight of the events with score >= t reaches
    ``efficiency`` of the total (the first crossing, with signed weights). A cut keeps or
    drops tied scores together, so only the cuts at distinct scores are candidates."""
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
    score = np.asarray(score, np.float64)
    if score.ndim != 1 or score.size == 0 or np.isnan(score).any():
        raise ValueError("threshold_at_efficiency needs a 1-d array of at least one score and "
                         f"no NaN, got shape {score.shape}")
    w = np.asarray(w, np.float64)
    if w.shape != score.shape or not np.all(np.isfinite(w)):
        raise ValueError(f"threshold_at_efficiency: w must hold one finite weight per score "
                         f"({score.size}), got shape {w.shape}")
    w = np.ldexp(w, -weight_exponent(w))  # exact: weights of 1e305 sum without overflow
    order = np.argsort(-score, kind="stable")
    s = score[order]
    cumulative = running_sum(w[order])
    total = cumulative[-1]
    if not total > 0:
        raise ValueError(f"the events' weights sum to {total:g}; an efficiency needs a positive total")
    ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))  # each distinct score's last event
    # a crossing within the running sum's rounding reaches the target (ten million weights of
    # 0.7 found the next score with a relative 1e-12, where unit weights find this one); the
    # compensated sum keeps that below one event at any number of events (the target's own
    # rounding, eps efficiency total, is within it)
    slack = RUNNING_SUM_ROUNDING * float(np.abs(w).sum())
    k = int(np.argmax(cumulative[ends] >= efficiency * total - slack))
    return float(s[ends[k]])


def _reciprocal(values: NDArray) -> NDArray:
    """1 / x for x > 0, inf for x = 0, NaN for x < 0 or NaN (no meaningful reciprocal)."""
    x = np.asarray(values, np.float64)
    return np.where(x > 0, 1.0 / np.where(x > 0, x, 1.0), np.where(x == 0, np.inf, np.nan))


@dataclass
class DecorrelationMeasures:
    """The measures of :func:`decorrelation_measures`; arrays are by efficiency (E,) and,
    for the shapes, (E, bins) normalised to unit sum (before any cut: ``*_shape_all``);
    NaN where a measure is undefined (module docstring). ``signal_efficiency`` holds the
    requested efficiencies, ``achieved_signal_efficiency`` what each cut keeps."""

    signal_efficiency: NDArray
    threshold: NDArray
    background_efficiency: NDArray
    background_jsd: NDArray
    signal_jsd: NDArray
    mass_edges: NDArray
    background_shape_all: NDArray
    signal_shape_all: NDArray
    background_shapes: NDArray
    signal_shapes: NDArray
    variable: str = "mass"
    achieved_signal_efficiency: NDArray | None = None

    @property
    def background_rejection(self) -> NDArray:
        """1 / background efficiency: inf where no background weight passes, NaN where the
        passing weight is negative or the row is not measured."""
        return _reciprocal(self.background_efficiency)

    @property
    def inverse_jsd(self) -> NDArray:
        """1 / the background JSD: inf where it is 0, NaN where it is NaN."""
        return _reciprocal(self.background_jsd)

    @property
    def inverse_signal_jsd(self) -> NDArray:
        """1 / the signal JSD: inf where it is 0, NaN where it is NaN."""
        return _reciprocal(self.signal_jsd)

    def at(self, efficiency: float) -> tuple[float, float]:
        """(background rejection, 1/JSD) at the signal efficiency ``efficiency`` (one of
        those measured)."""
        k = int(np.argmin(np.abs(self.signal_efficiency - efficiency)))
        if not np.isclose(self.signal_efficiency[k], efficiency):
            raise ValueError(f"efficiency {efficiency} was not measured; measured: "
                             f"{self.signal_efficiency.tolist()}")
        return float(self.background_rejection[k]), float(self.inverse_jsd[k])

    def rows(self) -> list[dict[str, float]]:
        """One dict per efficiency, for tables and JSON."""
        achieved = (self.signal_efficiency if self.achieved_signal_efficiency is None
                    else self.achieved_signal_efficiency)
        return [{"signal_efficiency": float(e), "achieved_signal_efficiency": float(a),
                 "threshold": float(t), "background_efficiency": float(b),
                 "background_rejection": float(r), "background_jsd": float(j),
                 "inverse_jsd": float(ij), "signal_jsd": float(sj),
                 "inverse_signal_jsd": float(isj)}
                for e, a, t, b, r, j, ij, sj, isj in zip(
                    self.signal_efficiency, achieved, self.threshold, self.background_efficiency,
                    self.background_rejection, self.background_jsd, self.inverse_jsd,
                    self.signal_jsd, self.inverse_signal_jsd, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the rows, the variable, the mass edges and the shapes."""
        return {"variable": self.variable, "rows": self.rows(),
                "mass_edges": self.mass_edges.tolist(),
                "background_shape_all": self.background_shape_all.tolist(),
                "signal_shape_all": self.signal_shape_all.tolist(),
                "background_shapes": self.background_shapes.tolist(),
                "signal_shapes": self.signal_shapes.tolist()}


def _normalised(h: NDArray) -> NDArray:
    """h's positive part over its sum; NaN when no bin is positive (no shape to normalise)."""
    h = np.clip(h, 0.0, None)
    total = h.sum()
    return h / total if total > 0 else np.full(h.shape, np.nan)


def _jsd_or_nan(before: NDArray, after: NDArray) -> float:
    """The JSD, NaN when the selection after the cut has no bin of positive weight."""
    return jensen_shannon_divergence(before, after) if np.any(after > 0) else float("nan")


MAX_MASS_BINS = 10_000  # equal-width mass bins, at most (or as many as the events)


def _mass_edges(mass: NDArray, bins: Any, variable: str) -> NDArray:
    """``bins`` equal-width edges over ``mass`` (the background's), or the edges given,
    checked: float64, 1-d, finite, strictly increasing, at least two."""
    if np.ndim(bins) == 0:
        number = isinstance(bins, (int, float, np.integer, np.floating))
        if (not number or isinstance(bins, bool) or not float(bins).is_integer()
                or not bins >= 1):
            raise ValueError(f"bins={bins!r}: expected a whole number of {variable} bins >= 1, "
                             "or an array of bin edges")
        if bins > max(MAX_MASS_BINS, mass.size):  # memory grows with the bins, not the events
            raise ValueError(f"bins={int(bins):,}: more {variable} bins than the "
                             f"{mass.size:,} background events and {MAX_MASS_BINS:,}; the "
                             "shapes would be empty bins")
        # equal widths over the range; a constant or extreme range still gets increasing edges
        return common_edges(mass, int(bins), limit=max(MAX_MASS_BINS, mass.size))
    edges = np.asarray(bins, np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) \
            or not np.all(np.diff(edges) > 0):
        raise ValueError(f"bins: {variable} bin edges must be a 1-d array of at least two "
                         f"finite, strictly increasing values, got {np.asarray(bins).tolist()}")
    return edges


def _check_mass(mass: Any, n: int, variable: str) -> NDArray:
    """The mass as float64 (n,); (n, 1) accepted, more columns refused."""
    m = np.asarray(mass, np.float64)
    if m.ndim == 2 and m.shape[1] == 1:
        m = m[:, 0]
    if m.ndim != 1:
        raise ValueError(f"{variable} must be one value per event, shape ({n},), got shape "
                         f"{m.shape}: the measures take one variable; pass one column")
    if m.size != n:
        raise ValueError(f"{variable} has {m.size} values but score has {n}: one value per event")
    if not np.all(np.isfinite(m)):
        raise ValueError(f"{variable}: {int(np.sum(~np.isfinite(m)))} values are not finite")
    return m


def _check_efficiencies(efficiencies: Any) -> NDArray:
    """The efficiencies as float64 (E,), 1 <= E <= MAX_EFFICIENCIES, each in (0, 1]."""
    eff = np.atleast_1d(np.asarray(efficiencies, np.float64))
    if (eff.ndim != 1 or not 0 < eff.size <= MAX_EFFICIENCIES
            or not np.all((eff > 0) & (eff <= 1))):
        raise ValueError(f"efficiencies must be 1 to {MAX_EFFICIENCIES:,} signal efficiencies in "
                         f"(0, 1], got {values_text(efficiencies)}")
    return eff


def decorrelation_measures(score: NDArray, y: NDArray, mass: NDArray,
                           sample_weight: NDArray | None = None,
                           efficiencies: Sequence[float] = DEFAULT_EFFICIENCIES,
                           bins: int | NDArray = 30, variable: str = "mass"
                           ) -> DecorrelationMeasures:
    """Sculpting of ``mass`` by cuts on ``score`` at fixed signal efficiencies.

    Parameters
    ----------
    score : (n,) classifier output, larger = more signal-like.
    y : (n,) 1 for signal, 0 for background.
    mass : (n,) the variable that should not be sculpted (finite).
    sample_weight : (n,) event weights (None: 1).
    efficiencies : signal efficiencies of the cuts, each in (0, 1].
    bins : number of equal-width mass bins over the background's range, or the edges
        (values outside the edges count in the first or last bin).
    variable : the mass's name, for tables and plots.

    Undefined measures are NaN (module docstring): a row whose cut keeps more than
    ``EFFICIENCY_TOLERANCE`` above its signal efficiency (tied scores), and the JSD of a
    cut that keeps no background.
    """
    signal, score, w = check_classification(y, score, sample_weight)
    background = ~signal
    mass = _check_mass(mass, score.size, variable)
    if not (signal.any() and background.any()):
        raise ValueError("decorrelation measures need signal (y = 1) and background (y = 0) events")
    # each class in units of an exact power of two (every measure is a ratio within a
    # class): weights of 1e306 gave infinite sums, a rejection of inf and a JSD of 2
    units = in_class_units(signal, w)
    total_b = float(units[background].sum())
    if not total_b > 0:
        raise ValueError(f"the background weights sum to {float(w[background].sum()):g}; "
                         "background efficiencies and mass shapes need a positive total")
    w = units
    edges = _mass_edges(mass[background & (w != 0)], bins, variable)  # weight 0: no event
    eff = _check_efficiencies(efficiencies)
    thresholds = np.array([threshold_at_efficiency(score[signal], w[signal], e) for e in eff])
    total_s = float(w[signal].sum())
    achieved = np.array([float(w[signal & (score >= t)].sum()) / total_s for t in thresholds])
    b_all, _ = weighted_histogram(mass[background], w[background], edges)
    s_all, _ = weighted_histogram(mass[signal], w[signal], edges)
    nan_row = np.full(edges.size - 1, np.nan)
    b_eff, b_jsd, s_jsd, b_shapes, s_shapes = [], [], [], [], []
    for t, e, a in zip(thresholds, eff, achieved, strict=True):
        if beyond_tolerance(a, e):  # ties: no cut keeps e of the signal
            for values, nan in ((b_eff, np.nan), (b_jsd, np.nan), (s_jsd, np.nan),
                                (b_shapes, nan_row), (s_shapes, nan_row)):
                values.append(nan)
            continue
        passed = score >= t
        pb, ps = background & passed, signal & passed
        b_cut, _ = weighted_histogram(mass[pb], w[pb], edges)
        s_cut, _ = weighted_histogram(mass[ps], w[ps], edges)
        b_eff.append(float(w[pb].sum()) / total_b)
        b_jsd.append(_jsd_or_nan(b_all, b_cut))
        s_jsd.append(_jsd_or_nan(s_all, s_cut))
        b_shapes.append(_normalised(b_cut))
        s_shapes.append(_normalised(s_cut))
    return DecorrelationMeasures(eff, thresholds, np.asarray(b_eff), np.asarray(b_jsd),
                                 np.asarray(s_jsd), edges, _normalised(b_all), _normalised(s_all),
                                 np.asarray(b_shapes), np.asarray(s_shapes), variable, achieved)
