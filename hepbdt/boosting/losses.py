"""Losses: per-event gradient and hessian of the raw score, initial score, weighted loss.

Classification targets are 0/1 (1 = signal); ``Deviance`` uses TMVA/Friedman's convention
L = ln(1 + exp(-2 y F)) with y = +-1, so P(signal) = 1 / (1 + exp(-2F)); ``Logistic`` is
XGBoost's binary:logistic, P = 1 / (1 + exp(-F)). Medians and quantiles are
:func:`hepbdt._util.weighted_quantile`'s, of the signed weights. A regression's best
constant score (mean or median) needs a positive net weight: with a net weight that is not
positive the weighted loss has no minimum, and the initial score is refused.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

from .._util import weighted_quantile
from ..engine._types import CHANNEL_DTYPE, launch_lock, njit
from ..engine._vmath import exp_float32, exp_nonpositive, log_positive
from ..engine.grower import leaf_sweeps, sweep_rows
from ..engine.sums import exact_sum_of_parts, exact_sum_parts

__all__ = ["LOSSES", "Loss", "Deviance", "Logistic", "Squared", "Absolute", "Huber",
           "PseudoHuber", "Softmax", "Cancellation", "fit_rescaling", "get_loss", "softmax_rows"]


def class_weight_sums(y: NDArray, w: NDArray, n_classes: int) -> NDArray:
    """Each class's sum of weights (y: class indices 0..K-1); ValueError unless all are positive."""
    sums = np.bincount(np.asarray(y).astype(np.int64), weights=w, minlength=n_classes)
    if not np.all(sums > 0):
        empty = [int(k) for k in np.flatnonzero(~(sums > 0))]
        raise ValueError(f"every class needs a positive sum of weights; classes {empty} "
                         f"have {[float(sums[k]) for k in empty]}")
    return sums


def log_each(x: NDArray) -> NDArray:
    """The natural logarithm of each element by the C library (``math.log``): numpy's
    vectorised logarithm rounds some arguments one bit otherwise from one numpy version
    to another (142 of 200,000 between numpy 2.4 and the C library), which moved models'
    starting scores and leaves between environments. Zero, negative and NaN elements get
    numpy's answers (-inf, NaN), where ``math.log`` raises."""
    flat = np.asarray(x, np.float64).ravel()
    out = np.log(flat)
    for i, v in enumerate(flat):
        if v > 0.0:
            out[i] = math.log(v)
    return out.reshape(np.shape(x))


def _class_sums(sums: dict[str, float]) -> tuple[float, float]:
    s, b = sums["signal"], sums["background"]
    if not (s > 0 and b > 0):
        raise ValueError(f"both classes need a positive sum of weights; signal {s}, background {b}")
    return s, b


def _regression_net_weight(total: float) -> None:
    """ValueError unless the regression's net weight ``total`` is positive (and finite)."""
    if not (total > 0 and math.isfinite(total)):
        raise ValueError(f"the net weight of the regression's events is {total:.6g}, not "
                         "positive: the weighted loss has no best constant score (negative "
                         "weights outweigh the positive ones); drop or rebalance the "
                         "negative-weight events")


def _median_init(y: NDArray, w: NDArray) -> float:
    """The weighted median of the targets: the best constant of the absolute error."""
    _regression_net_weight(float(np.sum(w, dtype=np.float64)))
    return weighted_quantile(y, w, 0.5)


class Loss:
    """Base class: ``gradients`` returns (g, h) of L with respect to the raw score."""

    name = "loss"
    is_classification = False

    def init_score(self, y: NDArray, w: NDArray) -> float:
        """Best constant score."""
        parts = self.init_sum_parts(y, w)
        if parts is None:
            raise NotImplementedError
        return self.init_score_of_sums({k: exact_sum_of_parts(v) for k, v in parts.items()})

    def init_sum_parts(self, y: NDArray, w: NDArray) -> dict[str, NDArray] | None:
        """The sums the best constant score is made of, as exact mergeable parts
        (:func:`hepbdt.engine.sums.exact_sum_parts`): parts of the events add up to the whole's,
        so a cluster's workers find the score memory finds. None: not made of sums."""
        return None

    def init_score_of_sums(self, sums: dict[str, float]) -> float:
        """The best constant score from the (correctly rounded) sums of ``init_sum_parts``."""
        raise NotImplementedError

    def gradients(self, y: NDArray, score: NDArray) -> tuple[NDArray, NDArray]:
        """Per-event (g, h), float64, without event weights."""
        raise NotImplementedError

    def pointwise(self, y: NDArray, score: NDArray) -> NDArray:
        """Per-event loss."""
        raise NotImplementedError

    def loss(self, y: NDArray, w: NDArray, score: NDArray) -> float:
        """Weighted mean loss."""
        total = self.weight_total(w)
        return float(np.sum(self.loss_terms(y, w, score)) / total) if total != 0 else 0.0

    # How ``loss`` adds its terms: None, numpy's sum of them; a count, partial sums of
    # that many events each (added one after another from 0.0), then numpy's sum of those.
    loss_chunk: int | None = None

    def loss_terms(self, y: NDArray, w: NDArray, score: NDArray) -> NDArray:
        """The weighted loss of each event (n,) float64, the terms ``loss`` adds up (in the
        order ``loss_chunk`` says): a fit's parts rebuild the sum from their own events'."""
        return w * self.pointwise(y, score)

    def begin_round(self, y: NDArray, w: NDArray, score: NDArray) -> None:
        """Per-round state (Huber's delta); nothing by default."""

    def weight_total(self, w: NDArray) -> float:
        """The weights' sum in double, kept for the last two arrays given (a fit's training
        and validation weights, given round after round and never changed during it): a
        pass of the events less a round."""
        kept = getattr(self, "_weight_totals", ())
        for array, total in kept:
            if array is w:
                return total
        total = float(np.sum(w, dtype=np.float64))  # float32 weights summed in double
        self._weight_totals = ((w, total), *kept[:1])
        return total

    # Losses that can sum their channels over a tree's leaves without storing them
    # (``channel_leaf_sums``), so a large fit need not keep the channels while a tree grows.
    channel_leaf_sums = None
    # Losses whose ``channels`` take ``out=(wg, wh)``: storage a fit reuses round after round.
    channels_into = False
    # Losses whose ``channels`` fill ``maxima=`` with (max |wg|, max |wh|).
    channel_maxima = False

    def channels(self, y: NDArray, score: NDArray, w_tree: NDArray,
                 w: NDArray) -> tuple[NDArray, NDArray, float]:
        """(w_tree * g, w_tree * h) as float32 and the weighted mean loss (weights w) at score."""
        g, h = self.gradients(y, score)
        return ((w_tree * g).astype(CHANNEL_DTYPE), (w_tree * h).astype(CHANNEL_DTYPE),
                self.loss(y, w, score))


LOSS_CHUNK = 4096  # events per partial loss sum (fixed: the total never depends on threads)


@njit(inline="always")
def _logistic_gh(z, e, y_i, scale):
    """(s (p - y), max(s^2 p (1 - p), 1e-16)) of one event from z = s F and e = exp(-|z|)."""
    p = 1.0 / (1.0 + e) if z >= 0 else e / (1.0 + e)
    return scale * (p - y_i), max(scale * scale * p * (1.0 - p), 1e-16)


@njit(inline="always")
def _logistic_event(score_i, y_i, scale):
    """(s (p - y), max(s^2 p (1 - p), 1e-16)) of one event, z = s F: one single-precision
    exponential serves p (channels are float32)."""
    z = scale * score_i
    return _logistic_gh(z, np.float64(exp_float32(np.float32(-abs(z)))), y_i, scale)


@njit
def _logistic_chunk(y, score, w_tree, w, scale, wg, wh, buffer):
    """``_logistic_channels`` of one chunk of events (views): the sum of w L over it.

    The exponential is glibc's single-precision one (which the models' channels have always
    used) in plain arithmetic (``exp_float32``), the logarithm ``log_positive``; each of the
    first two loops vectorises (one loop of both did not: 1M events, one thread, the
    exponentials 2.9 -> 1.1 ms against the C library's). The loops index views from 0 up,
    which LLVM proves never negative (else a signed index keeps a wraparound select that
    stops vectorising)."""
    for i in range(y.size):
        buffer[i] = exp_float32(np.float32(-abs(scale * score[i])))
    for i in range(y.size):
        z = scale * score[i]
        e = buffer[i]
        g, h = _logistic_gh(z, e, y[i], scale)
        wg[i] = w_tree[i] * g
        wh[i] = w_tree[i] * h
        # ln(1 + exp(m)) = max(m, 0) + ln(1 + exp(-|m|)); e <= 1, so log(1 + e) is
        # as good as log1p in absolute terms, and much cheaper.
        m = -z if y[i] > 0.5 else z
        buffer[i] = w[i] * ((m if m > 0 else 0.0) + log_positive(1.0 + e))
    total = 0.0
    for i in range(y.size):
        total += buffer[i]
    return total


@njit
def _magnitude_bits(x):
    """The largest bit pattern of |x| over a float32 array: for magnitudes the patterns
    order as the values do, and a NaN's lie above infinity's, so it stands out as numpy's
    max does. An integer maximum, which vectorises."""
    bits = x.view(np.uint32)
    top = np.uint32(0)
    for i in range(bits.size):
        top = max(top, bits[i] & np.uint32(0x7FFFFFFF))
    return top


@njit(parallel=True)
def _logistic_channels(y, score, w_tree, w, scale, wg, wh, partial_loss, partial_bits):
    """wg = w_tree g, wh = w_tree h of L = ln(1 + exp(-y s F)); partial sums of w L; each
    chunk's largest |wg| and |wh| as bit patterns (``_magnitude_bits``)."""
    for c in numba.prange(partial_loss.size):
        lo = c * LOSS_CHUNK
        hi = min(y.size, lo + LOSS_CHUNK)
        partial_loss[c] = _logistic_chunk(y[lo:hi], score[lo:hi], w_tree[lo:hi], w[lo:hi], scale,
                                          wg[lo:hi], wh[lo:hi], np.empty(hi - lo))
        partial_bits[c, 0] = _magnitude_bits(wg[lo:hi])
        partial_bits[c, 1] = _magnitude_bits(wh[lo:hi])


@njit(parallel=True)
def _logistic_leaf_sums(leaf_of, y, score, w_tree, scale, n_leaves, n_sweeps, out):
    """``sums_by_leaf(leaf_of, n_leaves, wg, wh, w_tree)`` of the channels that
    ``_logistic_channels`` would store, computed again event by event (the same float32
    values, added in the same order): the sums without the two channel arrays."""
    rows = sweep_rows(n_leaves, n_sweeps)
    acc = np.zeros((n_sweeps, n_leaves + 9, 3))  # padded: no two sweeps' rows share a cache line
    for t in numba.prange(n_sweeps):
        for i in range(leaf_of.size):
            r = rows[t, min(np.int64(leaf_of[i]), n_leaves)]
            g, h = _logistic_event(score[i], y[i], scale)
            acc[t, r, 0] += np.float32(w_tree[i] * g)
            acc[t, r, 1] += np.float32(w_tree[i] * h)
            acc[t, r, 2] += w_tree[i]
    for j in range(n_leaves):
        for v in range(3):
            out[v, j] = acc[j % n_sweeps, j, v]


@njit(inline="always")
def _logistic_loss_term(score_i, y_i, w_i, scale):
    """w L of one event, L = ln(1 + exp(-y s F)), in double precision."""
    m = -scale * score_i if y_i > 0.5 else scale * score_i
    return w_i * ((m if m > 0 else 0.0) + math.log1p(math.exp(-abs(m))))


@njit(parallel=True)
def _logistic_loss(y, score, w, scale, partial_loss):
    """Partial sums of w L, L = ln(1 + exp(-y s F)), in double precision."""
    for c in numba.prange(partial_loss.size):
        total = 0.0
        for i in range(c * LOSS_CHUNK, min(y.size, (c + 1) * LOSS_CHUNK)):
            total += _logistic_loss_term(score[i], y[i], w[i], scale)
        partial_loss[c] = total


@njit(parallel=True)
def _logistic_loss_terms(y, score, w, scale, out):
    """Each event's w L of ``_logistic_loss``, the terms its partial sums add."""
    for i in numba.prange(y.size):
        out[i] = _logistic_loss_term(score[i], y[i], w[i], scale)


class _LogisticFamily(Loss):
    """Shared fused kernels: L = ln(1 + exp(-y s F)), y = +-1, with s = ``scale``."""

    scale = 1.0
    channels_into = True
    channel_maxima = True
    loss_chunk = LOSS_CHUNK

    def init_sum_parts(self, y, w):
        # Exact sums (order-independent): a cluster's workers add their parts to the same numbers.
        return {"signal": exact_sum_parts(w, y == 1), "background": exact_sum_parts(w, y == 0)}

    def loss(self, y, w, score):
        partial = np.empty(-(-y.size // LOSS_CHUNK))
        with launch_lock():
            _logistic_loss(y, score, w, self.scale, partial)
        total = self.weight_total(w)
        return float(np.sum(partial) / total) if total != 0 else 0.0

    def loss_terms(self, y, w, score):
        out = np.empty(y.size)
        with launch_lock():
            _logistic_loss_terms(y, score, w, self.scale, out)
        return out

    def channels(self, y, score, w_tree, w, out=None, maxima=None):
        """``Loss.channels`` in one fused kernel; ``maxima`` (2,): set to (max |wg|, max |wh|),
        numpy's maxima (NaN where one is NaN), which the quantiser then need not find."""
        n = y.size
        wg, wh = out if out is not None else (np.empty(n, CHANNEL_DTYPE), np.empty(n, CHANNEL_DTYPE))
        partial = np.empty(-(-n // LOSS_CHUNK))
        bits = np.zeros((partial.size, 2), np.uint32)
        with launch_lock():
            _logistic_channels(y, score, np.asarray(w_tree, CHANNEL_DTYPE), w, self.scale, wg, wh,
                               partial, bits)
        if maxima is not None:
            maxima[:] = bits.max(axis=0).view(np.float32) if n else 0.0
        total = self.weight_total(w)
        return wg, wh, float(np.sum(partial) / total) if total != 0 else 0.0

    def channel_leaf_sums(self, leaf_of, n_leaves, y, score, w_tree):
        """``sums_by_leaf`` of (wg, wh, w_tree) that ``channels`` stores, from the events alone."""
        out = np.empty((3, n_leaves))
        with launch_lock():
            _logistic_leaf_sums(leaf_of, y, score, np.asarray(w_tree, CHANNEL_DTYPE), self.scale,
                                n_leaves, leaf_sweeps(n_leaves), out)
        return out


class Deviance(_LogisticFamily):
    """Binomial deviance ln(1 + exp(-2 y F)), y = +-1 (Friedman, TMVA's BDTG)."""

    name = "deviance"
    is_classification = True
    scale = 2.0

    def init_score_of_sums(self, sums):
        s, b = _class_sums(sums)
        return 0.5 * math.log(s / b)  # the C library's logarithm: see log_each

    def gradients(self, y, score):
        ys = 2.0 * y - 1.0
        r = 2.0 * ys / (1.0 + np.exp(np.clip(2.0 * ys * score, -700, 700)))
        a = np.abs(r)
        return -r, a * (2.0 - a)

    def pointwise(self, y, score):
        return np.logaddexp(0.0, -2.0 * (2.0 * y - 1.0) * score)

    @staticmethod
    def probability(score: NDArray) -> NDArray:
        """P(signal) from the raw score."""
        return 1.0 / (1.0 + np.exp(-2.0 * score))


class Logistic(_LogisticFamily):
    """Logistic loss ln(1 + exp(-y F)), y = +-1 (XGBoost's binary:logistic)."""

    name = "logistic"
    is_classification = True

    def init_score_of_sums(self, sums):
        s, b = _class_sums(sums)
        return math.log(s / b)

    def gradients(self, y, score):
        p = 1.0 / (1.0 + np.exp(-score))
        return p - y, np.maximum(p * (1.0 - p), 1e-16)

    def pointwise(self, y, score):
        return np.logaddexp(0.0, -(2.0 * y - 1.0) * score)

    @staticmethod
    def probability(score: NDArray) -> NDArray:
        """P(signal) from the raw score."""
        return 1.0 / (1.0 + np.exp(-score))


@njit
def _squared_terms(y, score, w, terms):
    """terms = w ((y - F)^2 / 2) in double, as numpy's ``w * (0.5 * (y - F) ** 2)``."""
    for i in range(y.size):
        r = y[i] - score[i]
        terms[i] = w[i] * (0.5 * (r * r))


@njit
def _squared_channels(y, score, w_tree, w, wg, wh, terms):
    """``Loss.channels`` of the squared error in one pass, each value as numpy's operations
    make it: wg = w_tree (F - y) and wh = w_tree (times h = 1) rounded to float32, and
    terms = w ((y - F)^2 / 2) in double, the terms ``Loss.loss`` sums."""
    for i in range(y.size):
        wg[i] = w_tree[i] * (score[i] - y[i])
        wh[i] = w_tree[i] * 1.0
        r = y[i] - score[i]
        terms[i] = w[i] * (0.5 * (r * r))


class Squared(Loss):
    """Squared error (y - F)^2 / 2 (the learning curve shows half the weighted MSE)."""

    name = "squared"
    channels_into = True

    def init_sum_parts(self, y, w):
        # Exact sums (order-independent): a cluster's workers add their parts to the same numbers.
        return {"weight": exact_sum_parts(w), "weighted_target": exact_sum_parts(w * y)}

    def init_score_of_sums(self, sums):
        # (It used to take the unweighted mean when the net weight was not positive: a
        # model trained with negative_weights="keep" on such events scored that mean.)
        _regression_net_weight(sums["weight"])
        return sums["weighted_target"] / sums["weight"]

    def gradients(self, y, score):
        return score - y, np.ones_like(score)

    def pointwise(self, y, score):
        return 0.5 * (y - score) ** 2

    def loss_terms(self, y, w, score):
        """``Loss.loss_terms`` in one compiled pass (the same numbers)."""
        terms = np.empty(np.shape(y))
        _squared_terms(y, score, w, terms)
        return terms

    def channels(self, y, score, w_tree, w, out=None):
        """``Loss.channels`` in one compiled pass (the same numbers; 27 -> 8 us a tree at
        4,500 events); ``out``: (wg, wh) float32 storage to fill."""
        n = y.size
        wg, wh = out if out is not None else (np.empty(n, CHANNEL_DTYPE), np.empty(n, CHANNEL_DTYPE))
        terms = np.empty(n)
        _squared_channels(y, score, w_tree, w, wg, wh, terms)
        total = self.weight_total(w)
        return wg, wh, float(np.sum(terms) / total) if total != 0 else 0.0


@njit(inline="always")
def _net_parts(score_i):
    """(F >= 0, e = exp(-|F|), 1 + 2 e^F divided by e^F where F >= 0, 1 / (1 + 2 e^F)):
    1 + 2 e^F = e^F (2 + e) for F >= 0, so that nothing overflows; plain arithmetic, the
    same bits on every machine."""
    up = score_i >= 0
    e = exp_nonpositive(-abs(score_i))
    both = 2.0 + e if up else 1.0 + 2.0 * e
    return up, e, both, (e if up else 1.0) / both


@njit(inline="always")
def _cancellation_event(score_i, y_i, max_step):
    """(g, h, L) of one event under ``Cancellation``, h at least |g| / max_step, from one
    exponential (``_net_parts``), two reciprocals and one logarithm (1 + e^F = e^F (1 + e)
    for F >= 0, likewise)."""
    up, e, both, net = _net_parts(score_i)
    one = 1.0 + e  # (1 + e^F), divided by e^F where F >= 0
    cancelled = (1.0 if up else e) / one  # e^F / (1 + e^F)
    h = cancelled * net * net
    if y_i > 0.5:  # L = ln(1 + 2 e^F) - F
        return -net, max(h, net / max_step), log_positive(both) - (0.0 if up else score_i)
    g = cancelled * net  # L = ln((1 + 2 e^F) / (1 + e^F))
    return g, max(h, g / max_step), log_positive(both / one)


@njit
def _cancellation_events(y, score, w_tree, w, max_step, wg, wh, terms):
    """wg = w_tree g, wh = w_tree h and terms = w L of every event under ``Cancellation``."""
    for i in range(y.size):
        g, h, loss = _cancellation_event(score[i], y[i], max_step)
        wg[i] = w_tree[i] * g
        wh[i] = w_tree[i] * h
        terms[i] = w[i] * loss


@njit
def _net_shares(score, out):
    """out = 1 / (1 + 2 e^F) of every F in ``score`` (``_net_parts``)."""
    for i in range(score.size):
        out[i] = _net_parts(score[i])[3]


@njit
def _rescaled_sums(score, y, w, a, b):
    """(sum w L, the gradient's two sums, the Fisher information's three) of the
    cancellation loss at a F + b, over (a, b): one ordered pass."""
    loss = ga = gb = haa = hab = hbb = 0.0
    for i in range(score.size):
        g, h, term = _cancellation_event(a * score[i] + b, y[i], np.inf)
        loss += w[i] * term
        ga += w[i] * g * score[i]
        gb += w[i] * g
        haa += w[i] * h * score[i] * score[i]
        hab += w[i] * h * score[i]
        hbb += w[i] * h
    return loss, ga, gb, haa, hab, hbb


@njit
def fit_rescaling(score, y, w, max_iterations=100):
    """(a, b) that maximise the cancellation likelihood of the signs y (1: negative) with
    weights w at a F + b: Fisher scoring from (1, 0), each step halved until the loss
    falls; b alone where F is constant. Plain arithmetic in a fixed order, so the same
    inputs give the same bits everywhere."""
    a, b = 1.0, 0.0
    loss, ga, gb, haa, hab, hbb = _rescaled_sums(score, y, w, a, b)
    for _ in range(max_iterations):
        det = haa * hbb - hab * hab
        if det > 1e-12 * haa * hbb and hbb > 0:
            da, db = -(hbb * ga - hab * gb) / det, -(haa * gb - hab * ga) / det
        elif hbb > 0:
            da, db = 0.0, -gb / hbb
        else:
            break
        step, moved = 1.0, False
        while step > 1e-10:
            trial = _rescaled_sums(score, y, w, a + step * da, b + step * db)
            if trial[0] < loss:
                a, b = a + step * da, b + step * db
                loss, ga, gb, haa, hab, hbb = trial
                moved = True
                break
            step *= 0.5
        if not moved or (abs(step * da) < 1e-12 and abs(step * db) < 1e-12):
            break
    return a, b


class Cancellation(Loss):
    """The likelihood of an event's sign where negative weights cancel part of the positive
    ones: y = 1 for a negative weight, 0 for a positive one, event weights |w|, and
    P(negative | x) = e^F / (1 + 2 e^F), where F is the log-ratio of the cancelled to the
    net density (positive density = net + cancelled, negative density = cancelled), so
    the local net weight is E[w | x] = E[|w| | x] / (1 + 2 e^F). P stays below 1/2 for
    every F, as it does wherever the net weight is positive, and F is additive wherever
    the two densities factorise; a logistic link's logit ln(P / (1 - P)) is neither.
    Hessians are the Fisher information (the observed one is negative for positive
    events past e^F = 1/sqrt 2), at least |g| / ``max_step``: where P(negative)
    saturates the information falls as e^-2F and the gradient as e^-F, and a leaf's
    Newton step grew without bound (a loss 34 times the last after one tree, 150 events
    of the class); so no leaf moves F by more than ``max_step`` before the learning rate.
    """

    name = "cancellation"
    is_classification = True
    channels_into = True
    max_step = 20.0

    def init_sum_parts(self, y, w):
        return {"negative": exact_sum_parts(w, y == 1), "positive": exact_sum_parts(w, y == 0)}

    def init_score_of_sums(self, sums):
        negative, positive = sums["negative"], sums["positive"]
        if not (negative > 0 and positive > negative):
            raise ValueError(f"the cancellation loss needs 0 < negative weight < positive "
                             f"weight; negative {negative}, positive {positive}")
        # math.log, the C library's: numpy's logarithm rounds otherwise from version to
        # version (numpy 1.26 and 2.4 put some of these starting scores one bit apart)
        return math.log(negative / (positive - negative))

    def _events(self, y, score, w_tree, w, wg, wh):
        terms = np.empty(np.shape(score))
        with launch_lock():
            _cancellation_events(np.asarray(y, np.int8), np.asarray(score, np.float64), w_tree,
                                 np.asarray(w, np.float64), self.max_step, wg, wh, terms)
        return wg, wh, terms

    def _unit(self, y, score, w=None, dtype=CHANNEL_DTYPE):
        """``_events`` at w_tree = 1 (and w = 1 where None), channels of ``dtype``: the
        losses alone take the channels' float32, the kernel the training compiles."""
        ones = np.ones(np.shape(score), dtype)
        return self._events(y, score, ones, ones if w is None else w, np.empty_like(ones),
                            np.empty_like(ones))

    def gradients(self, y, score):
        g, h, _ = self._unit(y, score, dtype=np.float64)
        return g, h

    def pointwise(self, y, score):
        return self._unit(y, score)[2]

    def loss_terms(self, y, w, score):
        """``Loss.loss_terms`` in one compiled pass."""
        return self._unit(y, score, w)[2]

    def channels(self, y, score, w_tree, w, out=None):
        """``Loss.channels`` in one compiled pass; ``out``: (wg, wh) float32 storage to fill."""
        n = np.size(y)
        wg, wh = out if out is not None else (np.empty(n, CHANNEL_DTYPE), np.empty(n, CHANNEL_DTYPE))
        _, _, terms = self._events(y, score, np.asarray(w_tree, CHANNEL_DTYPE), w, wg, wh)
        total = self.weight_total(w)
        return wg, wh, float(np.sum(terms) / total) if total != 0 else 0.0

    @staticmethod
    def net_share(score: NDArray) -> NDArray:
        """E[w | x] / E[|w| | x] = 1 / (1 + 2 e^F), the share of the local weight that is net."""
        score = np.ascontiguousarray(score, dtype=np.float64)
        out = np.empty(score.shape)
        _net_shares(score.reshape(-1), out.reshape(-1))
        return out


class Absolute(Loss):
    """Absolute error |y - F|; leaves take the weighted median of the residuals."""

    name = "absolute"

    def init_score(self, y, w):
        return _median_init(y, w)

    def gradients(self, y, score):
        return np.sign(score - y), np.ones_like(score)

    def pointwise(self, y, score):
        return np.abs(y - score)


class Huber(Loss):
    """Huber loss with delta = the alpha-quantile of |residual|, refreshed each round."""

    name = "huber"

    def __init__(self, alpha: float = 0.9):
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"huber_alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.delta = 1.0

    def init_score(self, y, w):
        return _median_init(y, w)

    def begin_round(self, y, w, score):
        # No absolute floor: one of 1e-12 exceeded every residual of targets of 1e-14
        # (cross sections) and turned the loss into squared error. A quantile of 0 (most
        # residuals exactly 0) takes the smallest positive residual instead: a delta of 0
        # would clip every pseudo-residual to 0.
        residual = np.abs(y - score)
        delta = float(weighted_quantile(residual, w, self.alpha))
        if not delta > 0:
            positive = residual[residual > 0]
            delta = float(positive.min()) if positive.size else 1.0
        self.delta = delta

    def gradients(self, y, score):
        r = y - score
        return -np.clip(r, -self.delta, self.delta), np.ones_like(score)

    def pointwise(self, y, score):
        r = np.abs(y - score)
        d = self.delta
        return np.where(r <= d, 0.5 * r * r, d * (r - 0.5 * d))


class PseudoHuber(Loss):
    """Pseudo-Huber delta^2 (sqrt(1 + (r/delta)^2) - 1), smooth, for second-order boosting."""

    name = "huber"

    def __init__(self, delta: float = 1.0):
        if not delta > 0:
            raise ValueError(f"huber_delta must be positive, got {delta}")
        self.delta = delta

    def init_score(self, y, w):
        return _median_init(y, w)

    def gradients(self, y, score):
        r = score - y
        s = 1.0 + (r / self.delta) ** 2
        return r / np.sqrt(s), 1.0 / (s * np.sqrt(s))

    def pointwise(self, y, score):
        r = (y - score) / self.delta
        # sqrt(1 + r^2) - 1 written without the subtraction, which cancels to 0 below
        # |r| ~ 1e-8 where the loss is r^2 / 2
        return self.delta**2 * (r * r / (np.sqrt(1.0 + r * r) + 1.0))


class Softmax:
    """Multi-class log-loss -ln p_y, p = softmax(F) over K classes, for K trees a round.

    Scores are (K, n), labels y the class index 0..K-1. ``gradient`` boosting is Friedman's
    multi-class TreeBoost (scikit-learn's GradientBoostingClassifier): its leaf (K-1)/K
    sum r / sum |r|(1-|r|) (r = y_k - p_k) follows from g = (K-1)/K (p_k - y_k) and h =
    p_k (1 - p_k). TMVA's multi-class BDTG takes 1/K for (K-1)/K (MethodBDT::GradBoost), a
    step 1/(K-1) times as large: the same for K = 2 only. ``newton`` boosting
    takes g = p_k - y_k and h = K/(K-1) p_k (1 - p_k), the same step as Friedman's and
    LightGBM's multiclass; XGBoost's multi:softprob takes h = 2 p_k (1 - p_k), a step
    (K-1)/(2K) as large, which needed more rounds for the same test loss (on ROOT's
    multi-class tutorial, 200 rounds of depth 3: 0.519 against 0.488 with this one).
    """

    name = "softmax"
    is_classification = True
    weight_total = Loss.weight_total
    loss_chunk = LOSS_CHUNK

    def __init__(self, n_classes: int, boosting: str):
        if n_classes < 2:
            raise ValueError(f"softmax needs at least 2 classes, got {n_classes}")
        self.n_classes = n_classes
        self.gradient_factor = (n_classes - 1) / n_classes if boosting == "gradient" else 1.0
        self.hessian_factor = 1.0 if boosting == "gradient" else n_classes / (n_classes - 1)

    def init_scores(self, y: NDArray, w: NDArray) -> NDArray:
        """Log class priors (weighted), centred: the best constant scores (K,)."""
        sums = class_weight_sums(y, w, self.n_classes)
        log_prior = log_each(sums / sums.sum())
        return log_prior - log_prior.mean()

    def loss(self, y: NDArray, w: NDArray, scores: NDArray) -> float:
        """Weighted mean -ln p_y."""
        total = self.weight_total(w)
        partial = np.empty(-(-y.size // LOSS_CHUNK))
        with launch_lock():
            _softmax_loss(y, np.ascontiguousarray(scores, np.float64), w, partial)
        return float(np.sum(partial) / total) if total != 0 else 0.0

    def loss_terms(self, y: NDArray, w: NDArray, scores: NDArray) -> NDArray:
        """Each event's w (-ln p_y), the terms ``loss`` adds in chunks of LOSS_CHUNK."""
        out = np.empty(y.size)
        with launch_lock():
            _softmax_loss_terms_all(y, np.ascontiguousarray(scores, np.float64), w, out)
        return out

    def channels(self, y: NDArray, scores: NDArray, w_tree: NDArray,
                 w: NDArray) -> tuple[NDArray, NDArray, float]:
        """(K, n) float32 w_tree * g and w_tree * h, and the weighted mean loss at ``scores``."""
        n = y.size
        wg = np.empty(scores.shape, CHANNEL_DTYPE)
        wh = np.empty(scores.shape, CHANNEL_DTYPE)
        partial = np.empty(-(-n // LOSS_CHUNK))
        with launch_lock():
            _softmax_channels(y, scores, np.asarray(w_tree, CHANNEL_DTYPE), w, self.gradient_factor,
                              self.hessian_factor, wg, wh, partial)
        total = self.weight_total(w)
        return wg, wh, float(np.sum(partial) / total) if total != 0 else 0.0


@njit
def _softmax_terms(scores, start, n, p, top, norm):
    """For the ``n`` events from ``start`` (unsigned): ``top`` the largest score, ``p[k]``
    exp(score_k - top), ``norm`` their sum over the classes, added in class order. Class by
    class over the events, so that every loop vectorises (``exp_nonpositive``, not the C
    library's ``exp``: within one unit in the last place, so a float32 channel differs from
    the C library's in about one value in 10^8). Indices are unsigned (Numba wraps signed
    ones, which stops vectorisation)."""
    n_classes = scores.shape[0]
    for i in range(n):
        top[i] = scores[0, start + np.uint64(i)]
    for k in range(1, n_classes):
        for i in range(n):
            top[i] = max(top[i], scores[k, start + np.uint64(i)])
    for k in range(n_classes):
        for i in range(n):
            p[k, i] = exp_nonpositive(scores[k, start + np.uint64(i)] - top[i])
    for i in range(n):
        norm[i] = p[0, i]
    for k in range(1, n_classes):
        for i in range(n):
            norm[i] += p[k, i]


@njit
def _softmax_loss_terms(y, scores, w, start, n, top, norm, picked):
    """``norm[i]`` := w (-ln p_y) of the ``n`` events from ``start``, from ``_softmax_terms``
    (``picked`` (n,): scratch). The true class's scores are picked out first: in the
    logarithms' loop their scattered reads kept it from vectorising (9 ns an event, 2
    after)."""
    for i in range(n):
        j = start + np.uint64(i)
        picked[i] = scores[np.uint64(y[j]), j]
    for i in range(n):
        j = start + np.uint64(i)
        norm[i] = w[j] * (top[i] + log_positive(norm[i]) - picked[i])


@njit
def _softmax_loss_sum(y, scores, w, start, n, top, norm, picked):
    """The sum of w (-ln p_y) over the ``n`` events from ``start``, from ``_softmax_terms``
    (``norm`` is overwritten; ``picked`` (n,): scratch)."""
    _softmax_loss_terms(y, scores, w, start, n, top, norm, picked)
    total = 0.0
    for i in range(n):
        total += norm[i]
    return total


@njit
def _softmax_chunk(y, scores, w_tree, w, g_factor, h_factor, wg, wh, lo, n):
    """``_softmax_channels`` of the ``n`` events from ``lo``: the sum of w (-ln p_y) over them."""
    n_classes = scores.shape[0]
    start = np.uint64(lo)
    p, top, norm = np.empty((n_classes, n)), np.empty(n), np.empty(n)
    _softmax_terms(scores, start, n, p, top, norm)
    for k in range(n_classes):
        for i in range(n):
            j = start + np.uint64(i)
            pk = p[k, i] / norm[i]
            wg[k, j] = w_tree[j] * (g_factor * (pk - (1.0 if k == np.int64(y[j]) else 0.0)))
            wh[k, j] = w_tree[j] * max(h_factor * pk * (1.0 - pk), 1e-16)
    return _softmax_loss_sum(y, scores, w, start, n, top, norm, p[0])


@njit(parallel=True)
def _softmax_channels(y, scores, w_tree, w, g_factor, h_factor, wg, wh, partial_loss):
    """wg = w_tree g_factor (p_k - y_k), wh = w_tree max(h_factor p_k (1 - p_k), 1e-16) of
    the softmax p = softmax(scores[:, i]); partial sums of w (-ln p_y) by chunks of events."""
    for c in numba.prange(partial_loss.size):
        lo = c * LOSS_CHUNK
        partial_loss[c] = _softmax_chunk(y, scores, w_tree, w, g_factor, h_factor, wg, wh, lo,
                                         min(y.size, lo + LOSS_CHUNK) - lo)


def softmax_rows(scores: NDArray) -> NDArray:
    """Row-wise softmax of (n, K) scores, computed stably."""
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@njit(parallel=True)
def _softmax_loss(y, scores, w, partial_loss):
    """Partial sums of w (-ln softmax(F)_y) by chunks of events, (K, n) scores."""
    for c in numba.prange(partial_loss.size):
        lo = c * LOSS_CHUNK
        n = min(y.size, lo + LOSS_CHUNK) - lo
        p, top, norm = np.empty((scores.shape[0], n)), np.empty(n), np.empty(n)
        _softmax_terms(scores, np.uint64(lo), n, p, top, norm)
        partial_loss[c] = _softmax_loss_sum(y, scores, w, np.uint64(lo), n, top, norm, p[0])


@njit(parallel=True)
def _softmax_loss_terms_all(y, scores, w, out):
    """Each event's w (-ln softmax(F)_y) of ``_softmax_loss``, the terms its partial sums add."""
    for c in numba.prange(-(-y.size // LOSS_CHUNK)):
        lo = c * LOSS_CHUNK
        n = min(y.size, lo + LOSS_CHUNK) - lo
        p, top, norm = np.empty((scores.shape[0], n)), np.empty(n), np.empty(n)
        _softmax_terms(scores, np.uint64(lo), n, p, top, norm)
        _softmax_loss_terms(y, scores, w, np.uint64(lo), n, top, norm, p[0])
        out[lo:lo + n] = norm


LOSSES = {
    ("gradient", "deviance"): Deviance,
    ("newton", "logistic"): Logistic,
    ("gradient", "squared"): Squared,
    ("newton", "squared"): Squared,
    ("gradient", "absolute"): Absolute,
    ("newton", "absolute"): Absolute,
    ("gradient", "huber"): Huber,
    ("newton", "huber"): PseudoHuber,
}


def get_loss(boosting: str, loss: str, huber_alpha: float = 0.9, huber_delta: float = 1.0,
             classification: bool | None = None) -> Loss:
    """The loss object for a booster (of classification or regression where given);
    ValueError naming the losses that booster takes otherwise."""
    cls = LOSSES.get((boosting, loss))
    if cls is None or classification not in (None, cls.is_classification):
        valid = [name for (b, name), c in LOSSES.items()
                 if b == boosting and classification in (None, c.is_classification)]
        task = {True: "classification ", False: "regression ", None: ""}[classification]
        raise ValueError(f"loss {loss!r} is not a {task}loss of boosting={boosting!r}; it takes "
                         + ", ".join(repr(name) for name in valid))
    if cls is Huber:
        return Huber(huber_alpha)
    if cls is PseudoHuber:
        return PseudoHuber(huber_delta)
    return cls()
