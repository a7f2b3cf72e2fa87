"""Measures of mass sculpting: rejection against 1/JSD, and the mass shapes after cuts.

For cuts on the classifier score at fixed signal efficiencies, :func:`decorrelation_measures`
gives the background rejection (1 / background efficiency) and the Jensen-Shannon
divergence between the background's mass histogram before and after the cut (the
standard axes of decorrelation studies: rejection against 1/JSD), the same divergence for
signal, and the normalised mass shapes themselves. Everything is weighted with signed
event weights; histogram bins whose summed weight is negative count as empty in the JSD.
The JSD uses base-2 logarithms (so it lies in [0, 1]): JSD(P, Q) = (KL(P||M) + KL(Q||M)) / 2,
M = (P + Q) / 2, which is ``scipy.spatial.distance.jensenshannon(P, Q, base=2) ** 2``.
Finite samples put a floor under it: an unbiased cut keeping N background events of
``bins`` bins still gives a JSD of about (bins - 1) / (8 N ln 2).
This module computes; :mod:`hepbdt.plotting` draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._data import check_classification
from ._hist import weighted_histogram

__all__ = ["DEFAULT_EFFICIENCIES", "DecorrelationMeasures", "decorrelation_measures",
           "jensen_shannon_divergence", "threshold_at_efficiency"]

DEFAULT_EFFICIENCIES = (0.1, 0.3, 0.5, 0.7, 0.9)


def jensen_shannon_divergence(p: NDArray, q: NDArray) -> float:
    """JSD (base 2, in [0, 1]) of two histograms, each normalised here; negative bins count
    as empty. 0 when either histogram is empty."""
    p = np.clip(np.asarray(p, np.float64), 0.0, None)
    q = np.clip(np.asarray(q, np.float64), 0.0, None)
    if not (p.sum() > 0 and q.sum() > 0):
        return 0.0
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
    if score.size == 0 or np.isnan(score).any():
        raise ValueError("threshold_at_efficiency needs at least one score and no NaN")
    order = np.argsort(-score, kind="stable")
    s = score[order]
    cumulative = np.cumsum(np.asarray(w, np.float64)[order])
    total = cumulative[-1]
    if not total > 0:
        raise ValueError(f"the events' weights sum to {total:g}; an efficiency needs a positive total")
    ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))  # each distinct score's last event
    k = int(np.argmax(cumulative[ends] >= efficiency * total * (1 - 1e-12)))
    return float(s[ends[k]])


@dataclass
class DecorrelationMeasures:
    """The measures of :func:`decorrelation_measures`; arrays are by efficiency (E,) and,
    for the shapes, (E, bins) normalised to unit sum (before any cut: ``*_shape_all``)."""

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

    @property
    def background_rejection(self) -> NDArray:
        """1 / background efficiency (inf where no background passes)."""
        with np.errstate(divide="ignore"):
            return np.where(self.background_efficiency > 0, 1.0 / self.background_efficiency, np.inf)

    @property
    def inverse_jsd(self) -> NDArray:
        """1 / the background JSD (inf where it is 0)."""
        with np.errstate(divide="ignore"):
            return np.where(self.background_jsd > 0, 1.0 / self.background_jsd, np.inf)

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
        return [{"signal_efficiency": float(e), "threshold": float(t),
                 "background_efficiency": float(b), "background_rejection": float(r),
                 "background_jsd": float(j), "inverse_jsd": float(ij), "signal_jsd": float(sj)}
                for e, t, b, r, j, ij, sj in zip(
                    self.signal_efficiency, self.threshold, self.background_efficiency,
                    self.background_rejection, self.background_jsd, self.inverse_jsd,
                    self.signal_jsd, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the rows, the variable, the mass edges and the shapes."""
        return {"variable": self.variable, "rows": self.rows(),
                "mass_edges": self.mass_edges.tolist(),
                "background_shape_all": self.background_shape_all.tolist(),
                "signal_shape_all": self.signal_shape_all.tolist(),
                "background_shapes": self.background_shapes.tolist(),
                "signal_shapes": self.signal_shapes.tolist()}


def _normalised(h: NDArray) -> NDArray:
    h = np.clip(h, 0.0, None)
    total = h.sum()
    return h / total if total > 0 else h


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
    bins : number of equal-width mass bins over the background's range, or the edges.
    variable : the mass's name, for tables and plots.
    """
    signal, score, w = check_classification(y, score, sample_weight)
    background = ~signal
    mass = np.asarray(mass, np.float64).ravel()
    if mass.size != score.size:
        raise ValueError(f"{variable} has {mass.size} values but score has {score.size}: one "
                         "value per event")
    if not np.all(np.isfinite(mass)):
        raise ValueError(f"{variable}: {int(np.sum(~np.isfinite(mass)))} values are not finite")
    if not (signal.any() and background.any()):
        raise ValueError("decorrelation measures need signal (y = 1) and background (y = 0) events")
    total_b = float(w[background].sum())
    if not total_b > 0:
        raise ValueError(f"the background weights sum to {total_b:g}; background efficiencies "
                         "and mass shapes need a positive total")
    if np.ndim(bins) == 0:
        lo, hi = float(mass[background].min()), float(mass[background].max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, int(bins) + 1)
    else:
        edges = np.asarray(bins, np.float64)
    eff = np.asarray(efficiencies, np.float64)
    thresholds = np.array([threshold_at_efficiency(score[signal], w[signal], e) for e in eff])
    b_all, _ = weighted_histogram(mass[background], w[background], edges)
    s_all, _ = weighted_histogram(mass[signal], w[signal], edges)
    b_eff, b_jsd, s_jsd, b_shapes, s_shapes = [], [], [], [], []
    for t in thresholds:
        passed = score >= t
        pb, ps = background & passed, signal & passed
        b_cut, _ = weighted_histogram(mass[pb], w[pb], edges)
        s_cut, _ = weighted_histogram(mass[ps], w[ps], edges)
        b_eff.append(float(w[pb].sum()) / total_b)
        b_jsd.append(jensen_shannon_divergence(b_all, b_cut))
        s_jsd.append(jensen_shannon_divergence(s_all, s_cut))
        b_shapes.append(_normalised(b_cut))
        s_shapes.append(_normalised(s_cut))
    return DecorrelationMeasures(eff, thresholds, np.asarray(b_eff), np.asarray(b_jsd),
                                 np.asarray(s_jsd), edges, _normalised(b_all), _normalised(s_all),
                                 np.asarray(b_shapes), np.asarray(s_shapes), variable)
