"""Mass decorrelation for gradient and newton boosting: a bin-flatness loss.

:class:`FlatnessLoss` wraps a two-class loss (deviance or logistic) and adds to its
per-event gradient that of a flatness term (after Rogozhnikov et al. 2015,
arXiv:1410.4140, hep_ml's ``BinFlatnessLossFunction``), so the one grower fits both
through the usual channels. For each target class c (``"signal"``, ``"background"`` or
``"both"``) with total weight W_c and score CDF F_c, and its bins b of the decorrelation
variable(s) (weight W_b, score CDF F_b), the term is

    strength * sum_c sum_b W_b * integral (F_b(s) - F_c(s))^2 psi(s) ds

over the raw score s. Its derivative with respect to the score of an event i of bin b
(while no other score is crossed, the CDFs at i taken half-way through i's own weight,
psi held fixed) is exactly

    -2 * strength * w_i * psi(s_i) * (F_b(s_i) - F_c(s_i)),

which is what is added to ``w g``. hep_ml's distance has psi = 1; here psi(s) =
1 / max(1 - F_c(s), TAIL_FLOOR)^2, frozen at the start of each round (a reweighting, as
in iteratively reweighted least squares): (F_b - F_c)^2 psi is then the squared
*relative* difference of the bin's and the class's efficiencies of a cut at s, the
quantity that decides how a cut sculpts the mass. Measured on the toy of
``hepbdt.demo_data.sculpting_arrays`` (100 trees of depth 3, cuts at 50 % signal
efficiency, which keep the top few per cent of the background): with psi = 1 no strength
from 0.1 to 100 reached a 1/JSD of 5 (the distance barely sees the tail, where the cut
is); with this psi strength 1 gave 1/JSD 28-66 at a rejection of 14-15 (with psi in the
hessian too, below).

The term has no usable curvature (its second derivative is a difference of score
densities, of either sign), and the base loss's hessian alone lets large strengths take
unbounded steps (measured with psi = 1: raw scores of 1e16 after 100 trees at strength
100). So each targeted event's hessian channel gets ``2 * strength * sqrt(psi_i) * w_i``
(a unit score density, weighted by the square root of the tail weight): a leaf's step on
the flatness term alone is its sqrt(psi)-weighted mean of sqrt(psi) (F_b - F_c), at most
1 / TAIL_FLOOR = 20 in raw-score units (times the learning rate), and as the strength
grows the step moves from the base loss's Newton step to that one. With the full psi in
the hessian (until 2026-12-03) the tail's events, whose order decides a cut's rejection,
got a hessian of up to 800 strength w_i (the deviance's is at most w_i / 4), which damped
the base loss's step most where the classifier works: on the toy of the README a weak strength cost the
rejection of a strong one (0.03: rejection 45.8 at 1/JSD 2.33; with sqrt(psi) 51.9 at
2.14), and hep_ml's loss at fl_coefficient 10 stayed undominated. The reported training
and validation losses are the base loss alone.

Tied scores (a whole leaf's events share one) are ordered at random, afresh each round,
as hep_ml's sort orders them: given one CDF value, all the events of a tie would get one
flatness gradient, which no tree can split, and (psi = 1, strength 10) whole mass bins
were then left at a single score (1/JSD 1.8 at 28x rejection; random order: 3.1 at 35x).

Bins are weighted quantiles of each decorrelation column over the target class's events
(equal-|weight| bins, fixed at the start of the fit); with k columns the cells of the
k-dimensional grid. A targeted class whose weights do not sum to a positive total is
refused; a cell whose (signed) weights do not, which negative weights can leave, has no
CDF: its events get no flatness term and are left out of their class's CDF F_c and total
W_c as well, so the term is that of the class without them and the formula above stays
its exact derivative (with them in F_c, moving one of their scores moved F_c under every
other cell: the gradient was up to 1.9 off the loss's, of the wrong sign for a quarter of
the events, audit GQ). Nothing here predicts: the decorrelation variables are used only
in training.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from .._util import differing_texts, user_stacklevel, weighted_quantile
from ..engine._types import CHANNEL_DTYPE, njit
from .losses import Loss

__all__ = ["DECORRELATION_METHODS", "DECORRELATION_TARGETS", "FlatnessBinsWarning", "FlatnessLoss",
           "flatness_bins",
           "check_decorrelate"]

DECORRELATION_METHODS = ("flatness", "uboost")  # uboost: boosting/uboost.py
DECORRELATION_TARGETS = ("background", "signal", "both")
MAX_DECORRELATION_COLUMNS = 3
MAX_CELLS = 100_000  # bins ** columns
FLOAT32_MAX = float(np.finfo(np.float32).max)
TAIL_FLOOR = 0.05  # psi = 1 / max(1 - F, TAIL_FLOOR)^2: efficiencies below 5 % weigh as 5 %


def check_decorrelate(decorrelate, n_events: int) -> NDArray:
    """The decorrelation variables as float64 (n, k); ValueError naming what is wrong."""
    if isinstance(decorrelate, np.ma.MaskedArray):  # np.asarray drops the mask
        raise ValueError("decorrelate: a masked array's masked values have no number; give "
                         "a plain array (decorrelate.filled(...) or only the unmasked events)")
    try:
        m = np.asarray(decorrelate)
    except ValueError as exc:  # ragged lists: numpy's message names no argument
        raise ValueError(f"decorrelate: expected an array (n,) or (n, k) of numbers, one row "
                         f"per event ({exc})") from None
    if (m.dtype == object or np.issubdtype(m.dtype, np.complexfloating)
            or not (np.issubdtype(m.dtype, np.number) or m.dtype == np.bool_)):
        raise ValueError(f"decorrelate: expected real numbers, an array (n,) or (n, k); got "
                         f"dtype {m.dtype}")
    m = m.astype(np.float64)
    if m.ndim == 1:
        m = m[:, None]
    if m.ndim != 2 or m.shape[0] != n_events or m.shape[1] < 1:
        raise ValueError(f"decorrelate: expected an array of shape ({n_events},) or "
                         f"({n_events}, k), one row per event; got shape {np.shape(decorrelate)}")
    if m.shape[1] > MAX_DECORRELATION_COLUMNS:
        raise ValueError(f"decorrelate: {m.shape[1]} columns; at most "
                         f"{MAX_DECORRELATION_COLUMNS} decorrelation variables are supported")
    bad = ~np.isfinite(m)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"decorrelate: {int(bad.sum())} value(s) are NaN or infinite (first: "
                         f"event {int(row)}, column {int(col)}); every event needs a finite value")
    big = np.abs(m) > FLOAT32_MAX  # the negative-weight policies measure them in float32
    if big.any():
        row, col = np.argwhere(big)[0]
        raise ValueError(f"decorrelate: {int(big.sum())} value(s) beyond +-{FLOAT32_MAX:.4g}, "
                         f"float32's range (first: event {int(row)}, column {int(col)}, "
                         f"{m[row, col]:g}); give the variable in units that keep it within")
    return m


MIN_CELL_EVENTS = 10  # a flatness cell's events of a targeted class, on average, at least


class FlatnessBinsWarning(UserWarning):
    """The flatness bins hold fewer than MIN_CELL_EVENTS events of a targeted class on
    average: the loss flattens noise."""


def _check_bins(n_bins, k: int) -> int:
    """``n_bins`` as an int >= 2 whose grid over k columns has at most MAX_CELLS cells."""
    if isinstance(n_bins, bool) or not float(n_bins).is_integer() or not n_bins >= 2:
        raise ValueError(f"decorrelation_bins={n_bins!r} is not valid; expected a whole number "
                         ">= 2 of bins per decorrelation variable")
    n_bins = int(n_bins)
    if n_bins ** k > MAX_CELLS:
        raise ValueError(f"decorrelation_bins={n_bins} over {k} variables makes "
                         f"{n_bins ** k:,} cells; at most {MAX_CELLS:,}")
    return n_bins


def flatness_bins(m: NDArray, y: NDArray, w: NDArray, n_bins: int, target: str
                  ) -> tuple[NDArray, NDArray]:
    """Each event's class index among the targets and its bin (cell), -1 for events of
    classes not targeted: (class_index int64 (n,), group int64 (n,)), the groups numbered
    across classes. Edges: weighted quantiles of each column over the class's |w|.
    ValueError for labels other than 0/1 or a targeted class without positive weight."""
    if target not in DECORRELATION_TARGETS:
        raise ValueError(f"decorrelation_target={target!r} is not valid; expected one of "
                         f"{DECORRELATION_TARGETS}")
    y, w = np.asarray(y), np.asarray(w, np.float64)
    if y.ndim != 1 or w.shape != y.shape or not np.all(np.isfinite(w)):
        raise ValueError(f"flatness bins: y and w must be 1-d with one finite value per event, "
                         f"got shapes {y.shape} and {w.shape}")
    m = check_decorrelate(m, y.shape[0])
    if not np.all(np.isin(y, (0, 1))):
        raise ValueError(f"flatness bins: y must hold 0 (background) and 1 (signal), got "
                         f"{np.unique(y)[:5].tolist()}")
    labels = {"background": (0,), "signal": (1,), "both": (0, 1)}[target]
    n, k = m.shape
    n_bins = _check_bins(n_bins, k)
    cells = n_bins ** k
    class_index = np.full(n, -1, dtype=np.int64)
    group = np.full(n, -1, dtype=np.int64)
    q = np.arange(1, n_bins) / n_bins
    for c, label in enumerate(labels):
        mine = y == label
        total = float(w[mine].sum())
        if not total > 0:
            raise ValueError(f"decorrelation_target={target!r}: the {('background', 'signal')[label]}"
                             f" events ({int(mine.sum())}) have weights summing to {total:g}; "
                             "their score CDF (efficiency) needs a positive total")
        events = int(mine.sum())
        effective = total ** 2 / float(np.sum(np.square(w[mine])))  # Kish's: weights count
        if effective < MIN_CELL_EVENTS * cells:
            most = int((effective / MIN_CELL_EVENTS) ** (1 / k))
            size = (f"{events:,}" if effective > events - 0.5 else
                    f"{events:,} ({effective:,.0f} effective)")
            warnings.warn(
                f"decorrelation_bins={n_bins} over {k} variable(s) makes {cells:,} cells for "
                f"{size} {('background', 'signal')[label]} events, fewer than "
                f"{MIN_CELL_EVENTS} a cell on average: each cell's score distribution is "
                "noise, which the flatness term chases (2,000 events at 700 bins lost 0.2 of "
                "AUC); use " + (f"at most {most} bins" if most >= 2 else "more events"),
                FlatnessBinsWarning, stacklevel=user_stacklevel())
        cell = np.zeros(events, dtype=np.int64)
        for j in range(k):
            values = m[mine, j]
            edges = np.unique(np.atleast_1d(weighted_quantile(values, np.abs(w[mine]), q)))
            cell = cell * n_bins + np.searchsorted(edges, values, side="left")
        class_index[mine] = c
        group[mine] = c * cells + cell
    return class_index, group


@njit
def _shuffle_ties(order, score, uniform):
    """Put each run of equal scores in ``order`` (sorted by score) in a random order, drawn
    from ``uniform`` (order.size numbers in [0, 1))."""
    n = order.size
    j = 0
    while j < n:
        stop = j + 1
        while stop < n and score[order[stop]] == score[order[j]]:
            stop += 1
        for t in range(stop - 1, j, -1):  # Fisher-Yates on order[j:stop]
            u = j + min(int(uniform[t] * (t - j + 1)), t - j)
            order[t], order[u] = order[u], order[t]
        j = stop


@njit
def _flatness_terms(order, w, w_tree, class_index, group, class_total, group_total,
                    strength, tail_floor, wg, wh):
    """Add the flatness term's gradient and surrogate hessian (module docstring) of the
    targeted events, taken in ``order`` (increasing score, ties broken), to wg and wh;
    each CDF half-way through w_i; tail_floor <= 0: psi = 1."""
    below_class = np.zeros(class_total.size)
    below_group = np.zeros(group_total.size)
    for t in range(order.size):
        i = order[t]
        c = class_index[i]
        g = group[i]
        if not group_total[g] > 0:  # no CDF: in neither the cell's nor the class's
            continue
        if class_total[c] > 0:
            position = (below_class[c] + 0.5 * w[i]) / class_total[c]
            diff = (below_group[g] + 0.5 * w[i]) / group_total[g] - position
            tail = 1.0  # psi = 1 / tail^2; the hessian gets sqrt(psi) = 1 / tail
            if tail_floor > 0:
                tail = max(1.0 - position, tail_floor)
            wg[i] += -2.0 * strength * diff * w_tree[i] / (tail * tail)
            wh[i] += 2.0 * strength * w_tree[i] / tail
        below_class[c] += w[i]
        below_group[g] += w[i]


def _beyond_rounding(index: NDArray, w: NDArray, minlength: int = 0) -> NDArray:
    """The sums of ``w`` by ``index``, 0 where a sum is within the rounding of its terms (a
    cell netting 0 with unit weights is a residue of 3e-17 with weights of 0.1, whose flatness
    term then divided by it: gradients of 1e17)."""
    total = np.bincount(index, weights=w, minlength=minlength)
    slack = (np.bincount(index, minlength=minlength) * np.finfo(np.float64).eps
             * np.bincount(index, weights=np.abs(w), minlength=minlength))
    return np.where(total > slack, total, np.minimum(total, 0.0))


class FlatnessLoss(Loss):
    """A two-class loss plus ``strength`` times the bin-flatness term (module docstring).

    ``m`` (n, k) float64 decorrelation variables of the training events, ``y`` their 0/1
    labels and ``w`` their weights (which fix the bins); ``target`` the classes made flat;
    ``seed`` seeds the tie-breaking draws; ``tail_floor`` None drops the tail weight psi
    (hep_ml's unweighted distance).
    """

    def __init__(self, base: Loss, strength: float, m: NDArray, y: NDArray, w: NDArray,
                 n_bins: int = 10, target: str = "background", seed: int | None = 0,
                 tail_floor: float | None = TAIL_FLOOR):
        if not base.is_classification:
            raise ValueError(f"the flatness loss needs a two-class loss, not {base.name!r}")
        if not (np.isfinite(strength) and strength >= 0):
            raise ValueError(f"decorrelation_strength={strength!r} is not valid; expected a "
                             "finite number >= 0")
        self.base = base
        self.strength = float(strength)
        self.name = base.name
        self.is_classification = True
        self.target = target
        self.w = np.ascontiguousarray(w, np.float64)
        self.class_index, self.group = flatness_bins(m, y, self.w, n_bins, target)
        self.targeted = np.flatnonzero(self.class_index >= 0)
        tw = self.w[self.targeted]
        self.group_total = _beyond_rounding(self.group[self.targeted], tw)
        # a cell without a positive net weight has no CDF: its events leave their class's too
        counted = self.group_total[self.group[self.targeted]] > 0
        n_classes = int(self.class_index.max()) + 1 if self.targeted.size else 0
        self.class_total = _beyond_rounding(self.class_index[self.targeted][counted],
                                            tw[counted], n_classes)
        self.rng = np.random.default_rng(seed)
        self.tail_floor = tail_floor

    def init_score(self, y, w):
        return self.base.init_score(y, w)

    def gradients(self, y, score):
        g, h = self.base.gradients(y, score)
        if self.strength == 0:  # the base loss itself, bit for bit
            return g, h
        # per unit weight: the flatness term's gradient and surrogate hessian divided by w_i
        fg, fh = self.flatness_terms(score, np.ones_like(self.w))
        return g + fg, h + fh

    def pointwise(self, y, score):
        return self.base.pointwise(y, score)

    def loss(self, y, w, score):
        return self.base.loss(y, w, score)

    def begin_round(self, y, w, score):
        self.base.begin_round(y, w, score)

    def flatness_terms(self, score: NDArray, w_tree: NDArray) -> tuple[NDArray, NDArray]:
        """The flatness term's d/d s_i times w_tree_i / w_i, -2 strength psi_i w_tree_i
        (F_b - F_c)(s_i), and its surrogate hessian 2 strength sqrt(psi_i) w_tree_i: float64 (n,)
        each, 0 for events not targeted. One sort of the targeted events' scores."""
        wg = np.zeros(score.size)
        wh = np.zeros(score.size)
        self._add_terms(np.ascontiguousarray(score, np.float64), w_tree, wg, wh)
        return wg, wh

    def _add_terms(self, score, w_tree, wg, wh) -> None:
        order = self.targeted[np.argsort(score[self.targeted])]
        _shuffle_ties(order, score, self.rng.random(order.size))
        floor = 0.0 if self.tail_floor is None else float(self.tail_floor)
        _flatness_terms(order, self.w, np.ascontiguousarray(w_tree, np.float64), self.class_index,
                        self.group, self.class_total, self.group_total, self.strength, floor,
                        wg, wh)

    def channels(self, y, score, w_tree, w):
        wg, wh, loss = self.base.channels(y, score, w_tree, w)
        if self.strength == 0:
            return wg, wh, loss
        wg64, wh64 = wg.astype(np.float64), wh.astype(np.float64)
        self._add_terms(np.ascontiguousarray(score, np.float64), w_tree, wg64, wh64)
        with np.errstate(over="ignore"):
            wg, wh = wg64.astype(CHANNEL_DTYPE), wh64.astype(CHANNEL_DTYPE)
        if not (np.all(np.isfinite(wg)) and np.all(np.isfinite(wh))):
            # else the trees get infinite sums and the model NaN scores, silently
            largest, limit = differing_texts(max(np.max(np.abs(wg64)), np.max(np.abs(wh64))),
                                             FLOAT32_MAX, 3)
            raise ValueError(f"decorrelation_strength={self.strength:g} times the event weights "
                             f"makes flatness terms of up to {largest}, beyond float32's "
                             f"range ({limit}) where the trees sum them: use a smaller "
                             "strength (strong decorrelation comes from 0.3-1 on the toy of "
                             "the README) or give the weights in smaller units")
        return wg, wh, loss
