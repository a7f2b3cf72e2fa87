"""Weighted classification and regression metrics: ROC, AUC, efficiencies, significance.

Every function takes signed event weights. Labels are 1 for signal and 0 for background.
A cut keeps events with ``score >= threshold``; events with equal scores are kept or
dropped together, so ties form one step of the ROC curve.

With negative weights the cumulative efficiencies are not monotone in the cut, which makes
scikit-learn's ``roc_auc_score`` fail. hepbdt defines the AUC as the weighted Mann-Whitney
statistic (see :func:`roc_auc`), which stays well defined and equals scikit-learn's value
whenever the latter exists.

This module does not draw (see :mod:`hepbdt.plotting`) and does not compare training with
test samples (see :mod:`hepbdt.evaluation.overtraining`).
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hepbdt._util import cut_text, setting_text, values_text, weight_exponent
from hepbdt.engine.sums import RUNNING_SUM_ROUNDING, running_sum
from hepbdt.evaluation._data import (
    EFFICIENCY_TOLERANCE,
    as_1d,
    beyond_tolerance,
    check_classification,
    check_regression_pair,
    check_weights,
    in_class_units,
    weighted_quantile,
)
from hepbdt.evaluation._hist import MAX_BINS, check_bin_count, common_edges, weighted_histogram

__all__ = [
    "DEFAULT_BACKGROUND_EFFICIENCIES",
    "DEFAULT_SIGNAL_EFFICIENCIES",
    "DEFAULT_MIN_BACKGROUND_EVENTS",
    "MAX_MIN_BACKGROUND_EVENTS",
    "FIGURES_OF_MERIT",
    "SPLIT_YIELD_NOTE",
    "BestCut",
    "best_cut_rule",
    "BinnedRegressionMetrics",
    "EfficiencyTable",
    "RegressionMetrics",
    "SignificanceScan",
    "SplitYields",
    "YieldGroup",
    "ams",
    "background_rejection_at",
    "best_at_background_efficiency",
    "efficiency_slack",
    "efficiency_table",
    "regression_metrics",
    "resolution_vs_target",
    "roc_auc",
    "roc_curve",
    "separation",
    "signal_efficiency_at",
    "significance_scan",
    "split_yields",
    "yield_note",
]

DEFAULT_SIGNAL_EFFICIENCIES = (0.3, 0.5, 0.7, 0.9)
DEFAULT_BACKGROUND_EFFICIENCIES = (0.001, 0.01, 0.1, 0.3)
# The slack of an efficiency without a positive total (where no rounding bound applies).
_EFF_TOLERANCE = 1e-12
# An efficiency's division and a target's decimal each round by up to eps, relatively.
_RATIO_ROUNDING = 4.0 * float(np.finfo(np.float64).eps)


def _totals(total_signal: float, total_background: float) -> tuple[float, float]:
    """The total signal and background weights as floats; both must be positive."""
    if not total_signal > 0:
        raise ValueError(f"the total signal weight must be positive, got {total_signal}")
    if not total_background > 0:
        raise ValueError(f"the total background weight must be positive, got {total_background}")
    return float(total_signal), float(total_background)


def _cut_points(
    is_signal: np.ndarray, score: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """Cumulative signal and background weight above each distinct score, descending.

    Returns (thresholds, cum_signal, cum_background, total_signal, total_background); entry
    k is the weight with ``score >= thresholds[k]``, in units of a power of two per class
    (efficiencies are ratios; the scaling is exact): weights of 1e-200 or 1e200 then give
    the efficiencies of unit weights, not 0/0 or inf/inf.
    """
    weight = in_class_units(is_signal, weight)
    order = np.argsort(-score, kind="stable")
    sorted_score = score[order]
    w_signal = np.where(is_signal, weight, 0.0)[order]
    w_background = np.where(is_signal, 0.0, weight)[order]
    last_of_group = np.flatnonzero(np.r_[sorted_score[1:] != sorted_score[:-1], True])
    cum_signal = running_sum(w_signal)[last_of_group]
    cum_background = running_sum(w_background)[last_of_group]
    # the totals as the running sums end: the whole selection keeps exactly 1 of each class
    # (numpy's pairwise sums left 1 - eff_B = -7e-16 there for weights of 1e305, 3e-16 for 0.1)
    total_signal, total_background = _totals(cum_signal[-1], cum_background[-1])
    return sorted_score[last_of_group], cum_signal, cum_background, total_signal, total_background


def roc_curve(
    y: Any, score: Any, sample_weight: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted ROC curve: (signal efficiency, background efficiency, thresholds).

    Parameters
    ----------
    y : array of shape (n,), 1 = signal, 0 = background
    score : array of shape (n,), larger = more signal-like
    sample_weight : array of shape (n,) or None; signed weights are allowed

    Returns
    -------
    signal_eff, background_eff, thresholds : float64 arrays of shape (k + 1,)
        One point per distinct score ``t`` (cut ``score >= t``), in decreasing ``t``,
        preceded by the empty selection (0, 0, +inf). With negative weights the
        efficiencies need not be monotone and may leave [0, 1].
    """
    return _roc(*check_classification(y, score, sample_weight))


def _roc(is_signal: np.ndarray, s: np.ndarray, w: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``roc_curve`` of checked classes, scores and weights."""
    thresholds, cum_s, cum_b, tot_s, tot_b = _cut_points(is_signal, s, w)
    return np.r_[0.0, cum_s / tot_s], np.r_[0.0, cum_b / tot_b], np.r_[np.inf, thresholds]


def efficiency_slack(weights: np.ndarray) -> float:
    """How far rounding can move an efficiency of one class (a running sum of its
    ``weights`` over their total, :func:`~hepbdt.engine.sums.running_sum`): the running
    sum's rounding over |total|, and the division's. A cut that reaches a target within it
    counts as reaching it, whatever the weights' scale (with a fixed 1e-12, ten million
    weights of 0.1 fell 4e-11 short of 50 % where unit weights reach it, and a weight of
    1e13 among unit ones let a cut 10 events short count); it stays below one event's
    share at any number of events (``np.cumsum``'s n eps sum |w| took a cut 4 signal
    events short of 50 % at 10^8 events)."""
    w = np.asarray(weights, np.float64)
    w = np.ldexp(w, -weight_exponent(w))  # exact; sums of 1e305 do not overflow
    total = abs(float(w.sum()))
    if not total > 0:
        return _EFF_TOLERANCE
    return RUNNING_SUM_ROUNDING * float(np.abs(w).sum()) / total + _RATIO_ROUNDING


def best_at_background_efficiency(eff_s: np.ndarray, eff_b: np.ndarray, target: float,
                                  slack: float) -> int:
    """The index of the ROC point of the highest signal efficiency among those whose
    background efficiency is at most ``target`` (within ``slack``)."""
    candidates = np.flatnonzero(eff_b <= target + slack)
    return int(candidates[np.argmax(eff_s[candidates])])


def roc_auc(y: Any, score: Any, sample_weight: Any = None) -> float:
    """Weighted ROC AUC, defined as the weighted Mann-Whitney statistic.

    ``AUC = sum_{i in S, j in B} w_i w_j ([s_i > s_j] + 0.5 [s_i == s_j]) / (W_S W_B)``
    with ``W_S``, ``W_B`` the total signal and background weights. It is the area under
    the ROC curve by the trapezoidal rule (ties count one half) and is well defined for
    signed weights, where the ROC curve is not monotone (and can leave [0, 1]). Computed
    in O(n log n).
    """
    is_signal, s, w = check_classification(y, score, sample_weight)
    _, cum_s, cum_b, tot_s, tot_b = _cut_points(is_signal, s, w)
    group_s = np.diff(cum_s, prepend=0.0)
    group_b = np.diff(cum_b, prepend=0.0)
    background_below = tot_b - cum_b
    numerator = np.sum(group_s * background_below) + 0.5 * np.sum(group_s * group_b)
    auc = float(numerator / (tot_s * tot_b))
    # with weights >= 0 the AUC is in [0, 1]; the sums' rounding gave 1.0000000000000002
    return min(max(auc, 0.0), 1.0) if np.all(w >= 0) else auc


def background_rejection_at(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    signal_eff: Sequence[float] | float = DEFAULT_SIGNAL_EFFICIENCIES,
) -> np.ndarray:
    """Background rejection ``1 - eff_B`` at the given signal efficiencies (TMVA's table).

    For each target ``e`` the best cut among those keeping a signal efficiency of at least
    ``e`` and at most ``EFFICIENCY_TOLERANCE`` (five percentage points) more is taken: the
    rejection is ``1 - min eff_B`` over the cuts ``score >= t`` with ``e <= eff_S(t) <= e +
    0.05``. No interpolation; NaN where no cut keeps such an efficiency (tied scores: a cut
    keeping 78 % of the signal is no rejection "at 30 %"). With weights >= 0 the best cut
    keeping at least ``e`` is one of these; with signed background weights a cut keeping
    far more can have a lower eff_B, and is no rejection "at ``e``" either.
    """
    is_signal, s, w = check_classification(y, score, sample_weight)
    eff_s, eff_b, _ = _roc(is_signal, s, w)
    targets = _efficiencies(signal_eff, "signal_eff")
    slack = efficiency_slack(w[is_signal])
    out = np.full(targets.shape, np.nan)
    for k, target in enumerate(targets):
        # only cuts near the target: with signed background weights the lowest eff_B of all
        # cuts keeping at least 10 % sat at a cut keeping 45 %, which made the row n/a
        near = (eff_s >= target - slack) & ~beyond_tolerance(eff_s, target)
        if near.any():
            out[k] = 1.0 - eff_b[near].min()
    return out


def signal_efficiency_at(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    background_eff: Sequence[float] | float = DEFAULT_BACKGROUND_EFFICIENCIES,
) -> np.ndarray:
    """Signal efficiency at the given background efficiencies (TMVA's table).

    For each target ``b`` this is ``max eff_S`` over the cuts ``score >= t`` that keep a
    background efficiency of at most ``b`` and at least ``b - min(0.05, b / 2)`` (five
    percentage points, or half of a smaller target; ``b = 0``: the cuts keeping none, the
    empty selection among them). No interpolation; NaN where no cut keeps such a background
    efficiency (tied scores, or too few background events: a cut keeping 10 % of the
    background is no signal efficiency "at 30 %").
    """
    is_signal, s, w = check_classification(y, score, sample_weight)
    eff_s, eff_b, _ = _roc(is_signal, s, w)
    targets = _efficiencies(background_eff, "background_eff")
    slack = efficiency_slack(w[~is_signal])
    out = np.full(targets.shape, np.nan)
    for k, target in enumerate(targets):
        window = min(EFFICIENCY_TOLERANCE, target / 2)
        near = (eff_b <= target + slack) & (eff_b >= target - window - slack)
        if near.any():
            out[k] = eff_s[near].max()
    return out


def _efficiencies(values: Sequence[float] | float, name: str) -> np.ndarray:
    """Target efficiencies as a 1-d float64 array; each must be a number in [0, 1]."""
    targets = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if targets.ndim != 1 or not np.all((targets >= 0) & (targets <= 1)):
        raise ValueError(f"{name} must be efficiencies in [0, 1], got {values_text(values)}")
    return targets


@dataclass(frozen=True)
class EfficiencyTable:
    """TMVA's efficiency table for one sample: AUC, separation and efficiencies at targets."""

    roc_auc: float
    separation: float
    signal_eff_targets: tuple[float, ...]
    background_rejection: tuple[float, ...]
    background_eff_targets: tuple[float, ...]
    signal_efficiency: tuple[float, ...]

    def rows(self) -> list[tuple[str, float]]:
        """Return the table as (label, value) rows, ready to print or render."""
        rows = [("ROC AUC", self.roc_auc), ("separation <S^2>", self.separation)]
        rows += [(f"signal efficiency @ eff_B = {setting_text(b)}", v)
                 for b, v in zip(self.background_eff_targets, self.signal_efficiency,
                                 strict=True)]
        rows += [(f"background rejection @ eff_S = {setting_text(s)}", v)
                 for s, v in zip(self.signal_eff_targets, self.background_rejection,
                                 strict=True)]
        return rows


def efficiency_table(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    signal_eff: Sequence[float] = DEFAULT_SIGNAL_EFFICIENCIES,
    background_eff: Sequence[float] = DEFAULT_BACKGROUND_EFFICIENCIES,
) -> EfficiencyTable:
    """Compute AUC, separation, signal efficiencies and background rejections in one go."""
    return EfficiencyTable(
        roc_auc=roc_auc(y, score, sample_weight),
        separation=separation(y, score, sample_weight),
        signal_eff_targets=tuple(float(v) for v in signal_eff),
        background_rejection=tuple(
            float(v) for v in background_rejection_at(y, score, sample_weight, signal_eff)
        ),
        background_eff_targets=tuple(float(v) for v in background_eff),
        signal_efficiency=tuple(
            float(v) for v in signal_efficiency_at(y, score, sample_weight, background_eff)
        ),
    )


def separation(y: Any, score: Any, sample_weight: Any = None, bins: int | Any = 100) -> float:
    """TMVA's separation ``<S^2> = 1/2 sum_i (s_i - b_i)^2 / (s_i + b_i)``.

    ``s_i`` and ``b_i`` are the weighted signal and background score histograms, each
    normalised to unit sum, on ``bins`` equal-width bins over the range of the scores of
    non-zero weight (or the given edges). 0 for identical shapes, 1 for no overlap. Bins
    with ``s_i + b_i <= 0`` (possible with negative weights) are skipped. Scores outside
    given edges count in the first or last bin; infinite scores need given edges (the
    score range would be infinite).
    """
    is_signal, s, w = check_classification(y, score, sample_weight)
    w = in_class_units(is_signal, w)  # weights of 1e306 gave a separation of 0
    counted = w != 0  # an event of weight 0 is no event: it must not stretch the range
    edges = _separation_edges(s[counted] if counted.any() else s, bins)
    sig, _ = weighted_histogram(s[is_signal], w[is_signal], edges)
    bkg, _ = weighted_histogram(s[~is_signal], w[~is_signal], edges)
    if not (sig.sum() > 0 and bkg.sum() > 0):
        raise ValueError("separation needs a positive total signal and background weight")
    sig = sig / sig.sum()
    bkg = bkg / bkg.sum()
    total = sig + bkg
    ok = total > 0
    return float(0.5 * np.sum((sig[ok] - bkg[ok]) ** 2 / total[ok]))


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a real number (not a bool) of finite float64 value,
    else None: a Python int beyond float64 (10**400) is refused here, where ``np.isfinite``
    raised a TypeError about ufunc casting for any int beyond int64."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _check_b_reg(b_reg: float) -> float:
    """The AMS regularisation term as a float; it must be a finite number >= 0."""
    if _finite(b_reg) is None or not b_reg >= 0:
        raise ValueError(f"b_reg must be a finite number >= 0 (10 in the HiggsML AMS, 0 for "
                         f"none), got {b_reg!r}")
    return float(b_reg)


# sum_{k>=2} (-x)^k / (k (k - 1)) = (1 + x) ln(1 + x) - x, for |x| < _SERIES_BELOW
_SERIES_BELOW = 1e-2
_SERIES_TERMS = 12
_SQUARE_UNDERFLOWS = 1e-140  # |s / b| below which ams takes s x, not b x^2 (x^2 underflows)


def _excess_term(x: np.ndarray) -> np.ndarray:
    """``(1 + x) ln(1 + x) - x`` without the cancellation of the direct form at small |x|
    (where it would lose every digit: x = 1e-17 gives 0); NaN for x < -1, 1 at x = -1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = (1.0 + x) * np.log1p(x) - x
    small = np.abs(x) < _SERIES_BELOW
    out = np.where(x == -1.0, 1.0, direct)
    xs = x[small]  # the series where it serves only: its powers cost 1 s a million values
    series = np.zeros_like(xs)
    for k in range(_SERIES_TERMS, 1, -1):  # smallest terms first
        series += (-xs) ** k / (k * (k - 1))
    out[small] = series
    return out


def _separation_edges(score: np.ndarray, bins: int | Any) -> np.ndarray:
    """``bins`` equal-width edges over the (finite) score range, or the given edges."""
    if np.isscalar(bins) and not isinstance(bins, str):
        if _finite(bins) is None or not (int(bins) == bins and bins >= 1):
            raise ValueError(f"bins must be a number of bins >= 1 or increasing edges, got "
                             f"{bins!r}")
        if np.isinf(score).any():
            raise ValueError("score has infinite values: equal-width bins over its range do "
                             "not exist; pass finite scores or bin edges (bins=[...])")
        return common_edges(score, int(bins), limit=max(MAX_BINS, score.size))
    return _check_edges(bins)


def _check_edges(bins: Any) -> np.ndarray:
    """Given bin edges as float64; at least 2, finite and strictly increasing."""
    edges = as_1d(bins, "bins")
    if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"bins as edges must be at least 2 finite, strictly increasing "
                         f"numbers, got {edges.tolist()[:10]}")
    return edges


def ams(signal: Any, background: Any, b_reg: float = 10.0) -> np.ndarray:
    """Approximate median significance with a regularisation term (HiggsML challenge).

    ``AMS = sqrt(2 ((s + b + b_reg) ln(1 + s / (b + b_reg)) - s))``, negative for a deficit
    (s < 0, possible with negative weights: the radicand alone would call it an excess);
    NaN where ``b + b_reg <= 0`` or ``s + b + b_reg < 0`` (no Poisson mean). ``b_reg`` must
    be a finite number >= 0. Below s / b of 1e-140 it is s / sqrt(b) times the series'
    root, whose radicand would underflow.
    """
    b_reg = _check_b_reg(b_reg)
    s, b = np.broadcast_arrays(np.asarray(signal, dtype=np.float64),
                               np.asarray(background, dtype=np.float64) + b_reg)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.asarray(s / b, dtype=np.float64)
        radicand = np.asarray(2.0 * b * _excess_term(x), dtype=np.float64)
        out = np.asarray(np.sign(s) * np.sqrt(np.clip(radicand, 0.0, None)), dtype=np.float64)
        # at tiny s / b, AMS = s / sqrt(b) sqrt(1 - x / 3 + ...): the radicand b x^2 (...)
        # underflowed to 0 below s / b of 1e-160 (ams(1e-10, 1e200, 0) was 0 for 1e-110)
        small = (np.abs(x) < _SQUARE_UNDERFLOWS) & (b > 0)
        out[small] = s[small] / np.sqrt(b[small]) * np.sqrt(_excess_ratio(x[small]))
    return np.where(b > 0, out, np.nan)


def _excess_ratio(x: np.ndarray) -> np.ndarray:
    """``2 ((1 + x) ln(1 + x) - x) / x^2`` at small |x| (the series of :func:`_excess_term`
    over x^2 / 2: 1 - x / 3 + x^2 / 6 - ...), which does not underflow with x^2."""
    series = np.zeros_like(x)
    for k in range(_SERIES_TERMS, 1, -1):  # smallest terms first
        series += 2.0 * (-x) ** (k - 2) / (k * (k - 1))
    return series


DEFAULT_MIN_BACKGROUND_EVENTS = 10
#: The largest ``min_background_events`` (an int64 count; beyond it no cut qualifies anyway).
MAX_MIN_BACKGROUND_EVENTS = 2**63 - 1
# A cumulative background weight within this fraction of the |weights| it sums (those of
# the events passing the cut) of zero counts as zero: with signed weights, rounding leaves
# e.g. 5e-17 where B is 0. (A fraction of the whole sample's |weights| took B = 0.041 of
# tight cuts for zero beside events of weight 1e9.)
_ZERO_TOLERANCE = 1e-12


@dataclass(frozen=True)
class BestCut:
    """The best cut of one figure of merit: S and B, their statistical uncertainties
    (``SignificanceScan``) and the MC events passing the cut.

    Where no cut qualifies, the floats are NaN and the counts 0 (``found`` is False).
    """

    threshold: float
    value: float
    signal: float
    background: float
    signal_error: float
    background_error: float
    n_signal_mc: int
    n_background_mc: int

    @property
    def found(self) -> bool:
        """Whether some cut qualified (enough background MC events, counted and effective,
        and B > 0)."""
        return bool(np.isfinite(self.threshold))

    def as_tuple(self) -> tuple[float, float, float, float]:
        """``(threshold, value, signal, background)``: an entry of ``SignificanceScan.best``."""
        return (self.threshold, self.value, self.signal, self.background)


_NO_CUT = BestCut(np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 0, 0)
FIGURES_OF_MERIT = ("s_over_sqrt_b", "s_over_sqrt_s_plus_b", "ams")


@dataclass(frozen=True)
class SignificanceScan:
    """Expected yields and significances for every cut ``score >= threshold``.

    ``signal`` and ``background`` are the expected yields S and B (summed weights times
    ``signal_scale`` and ``background_scale``; with a per-event ``yield_scale``, summed
    weights times it, times these scales, 1 unless a yield was given), ``signal_error``
    and ``background_error`` their statistical uncertainties ``sqrt(sum w^2)`` scaled alike
    (for a given yield, the yield times its efficiency's: see :func:`significance_scan`),
    ``n_signal_mc`` and ``n_background_mc`` the MC events passing (raw counts). A cut
    ``qualifies`` as a best cut when it leaves at least ``min_background_events``
    background MC events, as many effective ones (Kish's (sum w)^2 / sum w^2 of their
    weights, scaled as the yields), and B > 0. The best cuts are chosen on the events
    they are reported on, so their values are biased upward (``rule_text``). ``best_cuts``
    maps each figure of merit ("s_over_sqrt_b", "s_over_sqrt_s_plus_b", "ams") to its
    :class:`BestCut` among the qualifying cuts; ``best`` holds the same as ``(threshold,
    value, signal, background)``. Both are NaN where no cut qualifies. ``other_half`` maps
    each figure of merit to its value at the best cut of one half of the events (half of
    each class, a draw seeded by its scores, whatever the events' order) measured on the other
    half, averaged over both ways: an
    estimate free of the choice's upward bias, for a cut chosen on half the events (NaN
    where a half has no best cut or leaves the other no B > 0). S/sqrt(B) of a B that
    rests on few effective events is still high on average (1/sqrt(B) is convex): in
    ``benchmarks/bench_calibration.py`` +2 % with unit weights against +16 % for the best
    cut's own value, +26 % against +35 % with lognormal weights of sigma 2.
    """

    thresholds: np.ndarray
    signal: np.ndarray
    background: np.ndarray
    signal_error: np.ndarray
    background_error: np.ndarray
    n_signal_mc: np.ndarray
    n_background_mc: np.ndarray
    qualifies: np.ndarray
    s_over_sqrt_b: np.ndarray
    s_over_sqrt_s_plus_b: np.ndarray
    ams: np.ndarray
    b_reg: float
    signal_scale: float
    background_scale: float
    min_background_events: int
    best_cuts: dict[str, BestCut] = field(default_factory=dict)
    best: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    other_half: dict[str, float] = field(default_factory=dict)

    def threshold_text(self, key: str) -> str:
        """The best cut of figure of merit ``key`` as text that selects the events counted
        (``_util.cut_text``: never rounded above the threshold or onto the next lower
        score, where a printed 0.5669 for 0.56689 dropped 58 tied test events)."""
        threshold = self.best_cuts[key].threshold
        lower = self.thresholds[self.thresholds < threshold]
        return cut_text(threshold, float(lower.max()) if lower.size else None)

    @property
    def rule_text(self) -> str:
        """``best_cut_rule`` of this scan's ``min_background_events``."""
        return best_cut_rule(self.min_background_events)


def best_cut_rule(min_background_events: int) -> str:
    """What a best cut must leave, and how far to trust its value, in the words the
    summary and report print."""
    n = min_background_events
    return (f"a best cut leaves at least {n} background MC events, {n} effective ones "
            "((sum w)^2 / sum w^2 of those passing), and B > 0; it is chosen on these "
            "events, so its figure of merit is biased upward (the more so the fewer the "
            "events); \"other half\": the best cut of half of each class's events (a draw "
            "seeded by their scores, whatever their order) measured on the rest, both ways "
            "averaged, free of "
            "that choice's bias (still high where B rests on few effective events)")


def yield_note(test_fraction: float) -> str:
    """How yields are scaled from test weights, e.g. "expected yield of the whole sample:
    test weights x 1/0.5" (a test fraction of 1: every event scored, as in k-fold)."""
    return f"expected yield of the whole sample: test weights x 1/{test_fraction:.4g}"


#: How :func:`split_yields` scales test weights, in the words the summary and report use.
SPLIT_YIELD_NOTE = ("expected yield of the whole sample: each sample's test weights x its "
                    "events / its test events")


@dataclass(frozen=True)
class YieldGroup:
    """One group of a split (a sample, or one class of it, as ``Dataset.split`` splits them):
    its events in all (``n_events``), those in the test set (``n_test``) and the factor
    ``n_events / n_test`` on its test weights (NaN when it has no test event)."""

    sample: int
    label: int
    n_events: int
    n_test: int

    @property
    def scale(self) -> float:
        return self.n_events / self.n_test if self.n_test else float("nan")


@dataclass(frozen=True)
class SplitYields:
    """How the test events of a split estimate expected yields of the whole sample.

    ``scale`` is the (n_test,) float64 factor of each test event, ``n_events / n_test`` of
    its group (:class:`YieldGroup`, in ``groups``); ``missing`` are the groups with events
    but none in the test set, whose yield the test events cannot estimate.
    """

    scale: np.ndarray
    groups: tuple[YieldGroup, ...]

    @property
    def missing(self) -> tuple[YieldGroup, ...]:
        """The groups with events but no test event (left out of every test yield)."""
        return tuple(g for g in self.groups if g.n_test == 0)

    @property
    def uniform(self) -> float | None:
        """The common factor when every group has the same one (e.g. 1 for k-fold), else None."""
        scales = {g.scale for g in self.groups}
        return scales.pop() if len(scales) == 1 and not self.missing else None


def split_yields(test_sample: Any, test_label: Any, other_sample: Any = (),
                 other_label: Any = (), *, test_weight: Any = None,
                 other_weight: Any = None) -> SplitYields:
    """The factors that turn the test weights of a split into expected yields of the
    whole sample: each test event's group (sample and label) has ``n_events / n_test``.

    The test events are taken to be a subsample, without replacement, of the test and
    ``other`` events together (the training events of a split, the other folds of a
    k-fold fold; none when the test set holds every event). Within a group the
    Horvitz-Thompson estimator ``sum over test events of w x n_events / n_test`` is then
    unbiased for the group's summed weight passing any cut, for any weights (negative
    too) and whatever the cut: the inclusion probability of an event is ``n_test /
    n_events`` (a random split; the alternate and block splits pick events by position, and
    the same factor is right as far as the order of the events is unrelated to them, the
    premise of those modes). Event counts, not weights, make the factor: a ratio of summed weights
    would reproduce the total before any cut, but it is a biased ratio estimator after a
    cut and breaks down when a sample's test weights sum to about zero (signed weights).
    ``Dataset.split`` rounds each group's share (``floor(n f + 0.5)`` events train), so
    the groups' factors differ from 1 / (1 - train_fraction); a group with no test event
    cannot be estimated and is listed in ``missing`` (its events get no factor).
    With ``test_weight`` and ``other_weight`` an event of weight 0 is no event: it is not
    counted (a test event of weight 0 in a group without a counted test event gets the
    factor 1, which its weight makes no yield of; 400 of them among 3,000 events moved a
    fold's factor from 2.0187 to 2.0148).

    Parameters
    ----------
    test_sample, test_label : (n_test,) integer sample index and class label (regression:
        any constant) of the test events
    other_sample, other_label : the same for the other events of the whole sample
    test_weight, other_weight : their event weights, or None to count every event
    """
    test_keys = _group_keys(test_sample, test_label, "test")
    other_keys = _group_keys(other_sample, other_label, "other")
    test_counted = _counted(test_weight, test_keys.shape[0], "test_weight")
    other_counted = _counted(other_weight, other_keys.shape[0], "other_weight")
    keys, inverse = np.unique(test_keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_test = np.bincount(inverse, weights=test_counted, minlength=keys.shape[0]).astype(np.int64)
    counted_keys = np.concatenate([test_keys[test_counted], other_keys[other_counted]])
    all_keys, n_all = np.unique(counted_keys, axis=0, return_counts=True)
    position = {tuple(k): i for i, k in enumerate(keys.tolist())}
    groups = tuple(YieldGroup(int(k[0]), int(k[1]), int(n),
                              int(n_test[position[tuple(k)]]) if tuple(k) in position else 0)
                   for k, n in zip(all_keys.tolist(), n_all, strict=True))
    by_key = {(g.sample, g.label): g.scale for g in groups if g.n_test}
    group_scale = np.array([by_key.get(tuple(k), 1.0) for k in keys.tolist()], dtype=np.float64)
    return SplitYields(group_scale[inverse], groups)


def _counted(weight: Any, n: int, name: str) -> np.ndarray:
    """(n,) bool: the events of non-zero weight (every event when ``weight`` is None)."""
    if weight is None:
        return np.ones(n, dtype=bool)
    w = np.asarray(weight, dtype=np.float64).reshape(-1)
    if w.size != n:
        raise ValueError(f"{name} has {w.size} weights for {n} events")
    return w != 0


def _group_keys(sample: Any, label: Any, name: str) -> np.ndarray:
    """(n, 2) int64 (sample, label) keys of events; both must be integers."""
    sample = np.asarray(sample).reshape(-1)
    label = np.asarray(label).reshape(-1)
    if sample.shape != label.shape:
        raise ValueError(f"{name}: {sample.size} sample indices but {label.size} labels")
    for what, values in (("sample indices", sample), ("labels", label)):
        if values.size and (values.dtype.kind not in "biuf" or not np.all(
                np.isfinite(values) & (values == np.round(values))
                & (np.abs(values) < 2.0**62))):
            raise ValueError(f"{name}: {what} must be integers (a sample index, a class "
                             f"label), got {values[:5].tolist()}")
    return np.column_stack([sample.astype(np.int64), label.astype(np.int64)])


def _event_scales(yield_scale: Any, n: int) -> np.ndarray | float:
    """The yield scale as a float, or as an (n,) float64 array of per-event factors; each
    must be a positive finite number."""
    if np.ndim(yield_scale) == 0:
        scale = float(yield_scale)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"yield_scale must be a positive number, got {yield_scale!r}")
        return scale
    scales = np.asarray(yield_scale, dtype=np.float64)
    if scales.shape != (n,):
        raise ValueError(f"yield_scale must be a number or one per event ({n}), got shape "
                         f"{scales.shape}")
    bad = ~(np.isfinite(scales) & (scales > 0))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"yield_scale must be positive numbers: {int(bad.sum())} of {n} "
                         f"are not; the first, yield_scale[{first}], is {scales[first]!r}")
    return scales


def _is_count(value: Any) -> bool:
    """Whether ``value`` is a whole number in [0, MAX_MIN_BACKGROUND_EVENTS] (a Python int
    of any size, a NumPy integer or an integral float; not a bool)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        return 0 <= value <= MAX_MIN_BACKGROUND_EVENTS
    number = _finite(value)
    return number is not None and number.is_integer() and 0 <= number <= MAX_MIN_BACKGROUND_EVENTS


def _check_scan_options(min_background_events: int, signal_yield: float | None,
                        background_yield: float | None) -> int:
    """Validate the minimum MC count and the yields; return the count as an int."""
    if not _is_count(min_background_events):
        raise ValueError("min_background_events must be an integer >= 0 (at most 2**63 - 1), "
                         f"got {min_background_events!r}")
    for name, value in (("signal_yield", signal_yield), ("background_yield", background_yield)):
        if value is not None and (_finite(value) is None or not value > 0):
            raise ValueError(f"{name} must be a finite number > 0 (the expected events before "
                             f"the cut) or None (the summed weights), got {value!r}")
    return int(min_background_events)


def _cut_sums(is_signal: np.ndarray, score: np.ndarray, weight: np.ndarray
              ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Thresholds (descending distinct scores) and, above each, the signal and background
    sums of w, of w^2 and of events, and the background's sum of |w|."""
    order = np.argsort(-score, kind="stable")
    sorted_score = score[order]
    sig = is_signal[order]
    w = weight[order]
    last_of_group = np.flatnonzero(np.r_[sorted_score[1:] != sorted_score[:-1], True])
    columns = [np.where(sig, w, 0.0), np.where(sig, 0.0, w), np.where(sig, w * w, 0.0),
               np.where(sig, 0.0, w * w), (sig & (w != 0)).astype(np.int64),
               (~sig & (w != 0)).astype(np.int64),
               np.where(sig, 0.0, np.abs(w))]
    return sorted_score[last_of_group], [np.cumsum(c)[last_of_group] for c in columns]


def _yield_errors(cum: np.ndarray, cum2: np.ndarray, total: float, unit: float,
                  given: bool) -> np.ndarray:
    """Statistical uncertainties of the yields ``cum * unit`` above each cut (``cum`` and
    ``cum2`` the running sums of w and w^2, ``total`` the sum of w). Summed weights:
    sqrt(sum w^2) of the passing events. A given yield Y times the efficiency
    e = cum / total: Y times the efficiency's, sqrt((1 - e)^2 sum_pass w^2 + e^2
    sum_fail w^2) / total (the delta method; ROOT's binomial errors of weighted
    histograms, TH1::Divide "B"): 0 where every event passes, as Y is given. Passing and
    failing events share the total, so sqrt(sum_pass w^2) / total overstated it (x2.7 at
    an efficiency of 0.84 in a simulation of 400 events, x1.2 at 0.31)."""
    if not given:
        return np.sqrt(cum2) * abs(unit)
    eff = cum / total
    fail2 = np.clip(cum2[-1] - cum2, 0.0, None)  # the events below each cut
    return np.sqrt((1.0 - eff) ** 2 * cum2 + eff**2 * fail2) * abs(unit)


def _best_cut(scan_values: np.ndarray, ok: np.ndarray, k_arrays: tuple[np.ndarray, ...]
              ) -> BestCut:
    """The qualifying cut of largest finite ``scan_values`` (the tightest among ties)."""
    ok = ok & np.isfinite(scan_values)
    if not ok.any():
        return _NO_CUT
    k = int(np.argmax(np.where(ok, scan_values, -np.inf)))
    t, s, b, s_err, b_err, n_s, n_b = (a[k] for a in k_arrays)
    return BestCut(float(t), float(scan_values[k]), float(s), float(b), float(s_err),
                   float(b_err), int(n_s), int(n_b))


def significance_scan(
    y: Any,
    score: Any,
    sample_weight: Any = None,
    signal_yield: float | None = None,
    background_yield: float | None = None,
    b_reg: float = 10.0,
    *,
    yield_scale: float | Any = 1.0,
    min_background_events: int = DEFAULT_MIN_BACKGROUND_EVENTS,
    other_half: bool = True,
) -> SignificanceScan:
    """Scan S/sqrt(B), S/sqrt(S+B) and the AMS over every distinct cut on the score.

    ``S = signal_yield * eff_S`` and ``B = background_yield * eff_B``, where the yields are
    the expected signal and background events before the cut. Without them the yields are
    the summed weights times ``yield_scale``: a number, or one factor per event. For the
    test events of a split, ``split_yields(...).scale`` (each sample's events / its test
    events) gives the expected yields of the whole sample; a single ``1 / f`` is right only
    where every sample's test fraction is exactly f. The statistical uncertainties
    ``sqrt(sum (w x yield_scale)^2)`` are scaled alike; where a yield is given they are
    the yield times its efficiency's, ``sqrt((1 - e)^2 sum_pass w^2 + e^2 sum_fail w^2) /
    sum w`` (0 at the loosest cut, where S is the given yield). S/sqrt(B) is NaN where
    ``B <= 0``, S/sqrt(S+B) where ``S + B <= 0``. A best cut must leave at least
    ``min_background_events`` background MC events, counted and effective (Kish's
    (sum w)^2 / sum w^2 of the passing background's weights: a few heavy events left B at
    0.4-0.6 of its true value on average where the best cut rested on them), and B > 0,
    whatever the figure of merit; where no cut does, the best cut is NaN. The best cut is
    chosen on these events, so its value is biased upward (S/sqrt(B) by 16 % on average
    in a simulation of 2,000 background and 200 signal events of unit weight, 35 % with
    lognormal background weights; ``benchmarks/bench_calibration.py``): confirm it on
    independent events. ``other_half`` (the default) also measures each figure of merit at
    the best cut of one half of the events on the other half (``SignificanceScan``).
    """
    n_min = _check_scan_options(min_background_events, signal_yield, background_yield)
    b_reg = _check_b_reg(b_reg)
    is_signal, s, w = check_classification(y, score, sample_weight)
    scales = _event_scales(yield_scale, w.size)
    if isinstance(scales, np.ndarray):  # per-event factors: scale the weights, then sum
        w, common = w * scales, 1.0
    else:
        common = scales
    halves = (_other_half_values(is_signal, s, w * common, signal_yield, background_yield,
                                 b_reg, n_min) if other_half else {})
    # Per class, sums of w * 2**-e (exact) and of its square neither overflow nor underflow.
    e_s, e_b = weight_exponent(w[is_signal]), weight_exponent(w[~is_signal])
    w = in_class_units(is_signal, w)
    thresholds, (cum_s, cum_b, cum_s2, cum_b2, n_s, n_b, cum_abs_b) = _cut_sums(is_signal, s, w)
    tot_s, tot_b = _totals(w[is_signal].sum(), w[~is_signal].sum())
    s_unit = signal_yield / tot_s if signal_yield is not None else np.ldexp(common, e_s)
    b_unit = background_yield / tot_b if background_yield is not None else np.ldexp(common, e_b)
    s_scale, b_scale = float(np.ldexp(s_unit, -e_s)), float(np.ldexp(b_unit, -e_b))
    sig, bkg = cum_s * s_unit, cum_b * b_unit
    sig_err = _yield_errors(cum_s, cum_s2, tot_s, s_unit, signal_yield is not None)
    bkg_err = _yield_errors(cum_b, cum_b2, tot_b, b_unit, background_yield is not None)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_over_sqrt_b = np.where(bkg > 0, sig / np.sqrt(np.where(bkg > 0, bkg, 1.0)), np.nan)
        total = sig + bkg
        s_over_sqrt_sb = np.where(total > 0, sig / np.sqrt(np.where(total > 0, total, 1.0)),
                                  np.nan)
    ams_values = ams(sig, bkg, b_reg)
    # the running sums' rounding (n eps sum |w| of the n background events summed) decides
    # neither B = 0 nor a count of exactly n_min effective events, at any event count
    rounding = n_b * np.finfo(np.float64).eps  # running_sum_slack over sum |w|
    zero = np.maximum(_ZERO_TOLERANCE, rounding) * cum_abs_b * abs(b_unit)
    effective_b = np.divide(cum_b * cum_b, cum_b2, out=np.zeros_like(cum_b),
                            where=cum_b2 > 0)  # Kish's count of the passing background
    relative = np.maximum(1e-9, rounding * (1.0 + 2.0 * np.divide(
        cum_abs_b, np.abs(cum_b), out=np.zeros_like(cum_b), where=cum_b != 0)))
    qualifies = (n_b >= n_min) & (effective_b >= n_min * (1.0 - relative)) & (bkg > zero)
    arrays = (thresholds, sig, bkg, sig_err, bkg_err, n_s, n_b)
    best_cuts = {name: _best_cut(values, qualifies, arrays) for name, values in
                 zip(FIGURES_OF_MERIT, (s_over_sqrt_b, s_over_sqrt_sb, ams_values), strict=True)}
    return SignificanceScan(
        thresholds=thresholds, signal=sig, background=bkg, signal_error=sig_err,
        background_error=bkg_err, n_signal_mc=n_s, n_background_mc=n_b, qualifies=qualifies,
        s_over_sqrt_b=s_over_sqrt_b, s_over_sqrt_s_plus_b=s_over_sqrt_sb, ams=ams_values,
        b_reg=b_reg, signal_scale=s_scale, background_scale=b_scale,
        min_background_events=n_min, best_cuts=best_cuts,
        best={name: cut.as_tuple() for name, cut in best_cuts.items()},
        other_half=halves,
    )


def _other_half_values(is_signal: np.ndarray, score: np.ndarray, w: np.ndarray,
                       signal_yield: float | None, background_yield: float | None,
                       b_reg: float, n_min: int) -> dict[str, float]:
    """``SignificanceScan.other_half``: ``w`` the events' weights with their yield factors.
    Each half's yields are scaled up to the whole (each class's events over its half's),
    and its best cut needs half of ``n_min`` background MC events. An event of weight 0 is
    no event: it takes no turn in the halves nor a place in their counts (events of weight
    0 between the others moved S/sqrt(B) by 1.3 %)."""
    counted = w != 0
    is_signal, score, w = is_signal[counted], score[counted], w[counted]
    half = _halves(is_signal, score, w)
    scaled = []
    for h in (0, 1):
        mask = half == h
        factor = {label: np.count_nonzero(is_signal == label)
                  / max(np.count_nonzero((is_signal == label) & mask), 1)
                  for label in (True, False)}
        scaled.append((mask, w * np.where(is_signal, factor[True], factor[False])))
    values: dict[str, list[float]] = {name: [] for name in FIGURES_OF_MERIT}
    for (chosen, w_chosen), (measured, w_measured) in (scaled, scaled[::-1]):
        try:
            scan = significance_scan(is_signal[chosen], score[chosen], w_chosen[chosen],
                                     signal_yield, background_yield, b_reg,
                                     min_background_events=-(-n_min // 2), other_half=False)
        except ValueError:  # a half without signal or background weight
            return {name: np.nan for name in FIGURES_OF_MERIT}
        on = is_signal[measured]
        for name in FIGURES_OF_MERIT:
            passing = score[measured] >= scan.best_cuts[name].threshold  # NaN: none pass
            sig, bkg = (_half_yield(w_measured[measured], passing & kind, kind, given)
                        for kind, given in ((on, signal_yield), (~on, background_yield)))
            values[name].append(_figure_of_merit(name, sig, bkg, b_reg)
                                if scan.best_cuts[name].found else np.nan)
    return {name: float(np.mean(v)) for name, v in values.items()}


def _halves(is_signal: np.ndarray, score: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each class's events dealt alternately into halves 0 and 1 in a shuffle of their
    order by score and weight, seeded by the sorted scores: the same halves whatever order
    the events come in (events of one class, score and weight are interchangeable) or
    scale their weights have, and a draw of its own for each sample (one fixed seed dealt
    the same ranks to the same half in every sample, and moved bench_calibration's
    other-half bias from +2 % to +3.9 % with unit weights)."""
    half = np.zeros(score.size, dtype=np.int8)
    for label in (True, False):
        mine = np.flatnonzero(is_signal == label)
        mine = mine[np.lexsort((w[mine], score[mine]))]
        digest = hashlib.blake2b(np.ascontiguousarray(score[mine], np.float64).tobytes(),
                                 digest_size=8).digest()
        rng = np.random.default_rng(int.from_bytes(digest, "little"))
        half[mine[rng.permutation(mine.size)]] = np.arange(mine.size) % 2
    return half


def _half_yield(w: np.ndarray, passing: np.ndarray, kind: np.ndarray,
                given: float | None) -> float:
    """A class's expected yield above a cut from one half's events: their scaled weights,
    or the given yield times their efficiency."""
    above = float(w[passing].sum())
    if given is None:
        return above
    total = float(w[kind].sum())
    return given * above / total if total > 0 else np.nan


def _figure_of_merit(name: str, sig: float, bkg: float, b_reg: float) -> float:
    """One figure of merit of ``FIGURES_OF_MERIT`` at yields S, B (NaN where undefined, as
    the scan's; B <= 0 gives NaN for all three here: no best cut leaves it)."""
    if not bkg > 0:
        return np.nan
    if name == "s_over_sqrt_b":
        return sig / np.sqrt(bkg)
    if name == "s_over_sqrt_s_plus_b":
        return sig / np.sqrt(sig + bkg) if sig + bkg > 0 else np.nan
    return float(ams(sig, bkg, b_reg))


# --- regression ------------------------------------------------------------------------

IQR_TO_SIGMA = 1.3489795003921634  # interquartile range of a unit Gaussian


@dataclass(frozen=True)
class RegressionMetrics:
    """Weighted regression quality of residuals ``r = prediction - target``.

    ``resolution_iqr`` is the interquartile range of r divided by 1.349 (a Gaussian's
    sigma); ``resolution_trms`` is the RMS about the mean of the central ``truncation``
    fraction of r's weight (0.79 sigma of a Gaussian at 0.9; not TMVA's RMS_T, which keeps
    the r within its bias +- 2 RMS, 0.88 sigma of a Gaussian): exactly that share, the
    events at its two ends counted with the part of their weight inside it (18 of 20 unit
    weights at 0.9). Quantiles are hepbdt's weighted inverse CDF (the smallest r whose
    cumulative weight reaches q of the total, no interpolation). With
    negative weights a mean of r^2 or |r| can come out negative: that RMS or MAE is NaN. Every
    field but ``sum_weight`` and ``count`` is NaN when the summed weight is not positive.
    """

    rmse: float
    mae: float
    bias: float
    resolution_iqr: float
    resolution_trms: float
    sum_weight: float
    count: int


def _non_negative(mean: float) -> float:
    """A weighted mean of a non-negative quantity; NaN where signed weights made it negative."""
    return mean if mean >= 0 else np.nan


def _root(mean_square: float) -> float:
    """sqrt of a weighted mean square; NaN where signed weights made it negative."""
    return float(np.sqrt(mean_square)) if mean_square >= 0 else np.nan


def _central_rms(residual: np.ndarray, w: np.ndarray, truncation: float) -> float:
    """RMS about their mean of the central ``truncation`` of the residuals' summed weight.

    In residual order each event keeps the part of its weight that lies between the
    running sums (1 - truncation) / 2 and (1 + truncation) / 2 of the total, so exactly
    that share is kept (18 of 20 unit weights at 0.9; keeping every residual between the
    two weighted quantiles kept 19, the lowest always, 11 % above the central RMS); signed
    weights keep their sign, and the kept parts still add up to that share."""
    order = np.lexsort((w, residual))
    r, after = residual[order], running_sum(w[order])
    before = np.concatenate(([0.0], after[:-1]))
    lo, hi = (0.5 - truncation / 2) * after[-1], (0.5 + truncation / 2) * after[-1]
    kept = np.clip(after, lo, hi) - np.clip(before, lo, hi)
    mass = float(kept.sum())
    if not mass > 0:
        return np.nan
    mean = float(np.sum(kept * r)) / mass
    return _root(float(np.sum(kept * (r - mean) ** 2)) / mass)


def _regression_metrics(residual: np.ndarray, w: np.ndarray, truncation: float
                        ) -> RegressionMetrics:
    with np.errstate(over="ignore"):  # sum_weight: inf beyond 1.8e308, the rest scaled
        total = float(w.sum())
    if residual.size == 0 or not total > 0:
        return RegressionMetrics(np.nan, np.nan, np.nan, np.nan, np.nan, total,
                                 int(np.count_nonzero(w)))
    w = np.ldexp(w, -weight_exponent(w))  # an exact scaling: weights of 1e306 gave NaN
    # the residuals too, and every result back (exact): residuals of 1e-170 gave an RMSE of
    # 0, of 1e200 inf (their squares under- and overflowed)
    shift = weight_exponent(residual)
    r = np.ldexp(residual, -shift)
    total_w, total = total, float(w.sum())
    mse = float(np.sum(w * r**2) / total)
    q25, q75 = weighted_quantile(r, w, [0.25, 0.75])
    return RegressionMetrics(
        rmse=math.ldexp(_root(mse), shift),
        mae=math.ldexp(_non_negative(float(np.sum(w * np.abs(r)) / total)), shift),
        bias=math.ldexp(float(np.sum(w * r) / total), shift),
        resolution_iqr=math.ldexp(float((q75 - q25) / IQR_TO_SIGMA), shift),
        resolution_trms=math.ldexp(_central_rms(r, w, truncation), shift),
        sum_weight=total_w,
        count=int(np.count_nonzero(w)),  # events: a weight of 0 is none
    )


def _check_regression(y_true: Any, y_pred: Any, sample_weight: Any, truncation: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(target, prediction, weight) as float64; values finite, truncation in (0, 1]."""
    t, p = check_regression_pair(y_true, y_pred)
    with np.errstate(over="ignore"):
        beyond = ~np.isfinite(p - t)
    if beyond.any():
        first = int(np.flatnonzero(beyond)[0])
        raise ValueError(f"y_pred - y_true overflows float64 at {int(beyond.sum())} of {t.size} "
                         f"events (the first, event {first}: {p[first]!r} - {t[first]!r}); "
                         "rescale y_true and y_pred")
    if isinstance(truncation, bool) or not np.isscalar(truncation) or not 0 < truncation <= 1:
        raise ValueError(f"truncation must be a fraction in (0, 1] (the central share of the "
                         f"residuals kept for the truncated RMS), got {truncation!r}")
    return t, p, check_weights(sample_weight, t.shape[0])


def regression_metrics(y_true: Any, y_pred: Any, sample_weight: Any = None,
                       truncation: float = 0.9) -> RegressionMetrics:
    """Weighted RMSE, MAE, bias and core resolution of ``y_pred - y_true``.

    Refused (ValueError) when there are no events or their summed weight is not positive:
    a weighted mean over a net zero or negative weight is no mean; also where
    ``y_pred - y_true`` overflows float64. Residuals of any finite scale (1e-300, 1e300)
    give their metrics: they are scaled by a power of two before squaring.
    """
    t, p, w = _check_regression(y_true, y_pred, sample_weight, truncation)
    with np.errstate(over="ignore"):  # beyond 1.8e308 the sum is inf, and still positive
        total = float(w.sum())
    if not total > 0:
        raise ValueError(f"regression metrics need events with a positive summed weight; "
                         f"got {t.size} events with summed weight {total!r}")
    return _regression_metrics(p - t, w, truncation)


def _target_edges(t: np.ndarray, bins: int | Any) -> np.ndarray:
    """Bin edges: ``bins`` equal-count bins of the targets, or the given increasing edges."""
    if np.isscalar(bins) and not isinstance(bins, str):
        if _finite(bins) is None or not (int(bins) == bins and bins >= 1):
            raise ValueError(f"bins must be a number of bins >= 1 or increasing edges, got "
                             f"{bins!r}")
        check_bin_count(bins, what="target bins")  # each bin is a pass over the events
        if t.size == 0:
            raise ValueError("no events of non-zero weight: y_true is empty or every "
                             "sample_weight is 0")
        edges = np.unique(np.quantile(t, np.linspace(0.0, 1.0, int(bins) + 1)))
        return edges if edges.size >= 2 else np.array([edges[0] - 0.5, edges[0] + 0.5])
    return _check_edges(bins)


@dataclass(frozen=True)
class BinnedRegressionMetrics:
    """:class:`RegressionMetrics` fields as arrays over bins of the true target."""

    edges: np.ndarray
    centers: np.ndarray
    rmse: np.ndarray
    mae: np.ndarray
    bias: np.ndarray
    resolution_iqr: np.ndarray
    resolution_trms: np.ndarray
    sum_weight: np.ndarray
    count: np.ndarray
    truncation: float = 0.9  # the central share of the residuals resolution_trms keeps


def resolution_vs_target(
    y_true: Any, y_pred: Any, sample_weight: Any = None, bins: int | Any = 10,
    truncation: float = 0.9,
) -> BinnedRegressionMetrics:
    """Regression metrics in bins of the true target (``bins`` equal-count bins or edges).

    A bin with no events, or whose summed weight is not positive, has NaN metrics.
    """
    t, p, w = _check_regression(y_true, y_pred, sample_weight, truncation)
    edges = _target_edges(t[w != 0], bins)  # quantiles of the events: weight 0 is none
    index = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, edges.size - 2)
    inside = (t >= edges[0]) & (t <= edges[-1])
    per_bin = [
        _regression_metrics(p[sel] - t[sel], w[sel], truncation)
        for sel in ((index == k) & inside for k in range(edges.size - 1))
    ]

    def column(name: str) -> np.ndarray:
        return np.array([getattr(m, name) for m in per_bin])

    return BinnedRegressionMetrics(
        edges=edges,
        centers=0.5 * (edges[1:] + edges[:-1]),
        rmse=column("rmse"),
        mae=column("mae"),
        bias=column("bias"),
        resolution_iqr=column("resolution_iqr"),
        resolution_trms=column("resolution_trms"),
        sum_weight=column("sum_weight"),
        count=column("count").astype(np.int64),
        truncation=float(truncation),
    )
