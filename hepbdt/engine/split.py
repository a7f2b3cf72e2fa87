"""Split criteria as gain functions over (A, B) sums, and the best-split scan of a node.

Each criterion scores a node from its channel sums; a split's gain is
``score(left) + score(right) - score(parent)``, larger is better:

- variance (A = sum w*r, B = sum w): A^2 / B, i.e. weighted variance reduction;
- newton (A = sum g, B = sum h): T_alpha(A)^2 / (B + lambda), XGBoost's loss change (without
  its factor 1/2, as XGBoost compares gamma to it);
- classification impurities (A = signal weight, B = background weight, n = A + B,
  p = A / n): -n * I(p) for Gini p(1-p), cross-entropy, misclassification 1 - max(p, 1-p);
  S/sqrt(S+B): n * (p / sqrt(n))... scored as A / sqrt(A + B);
- multi-class Gini (channels: the weight S_k of each of K classes, then W; n = sum S_k):
  sum_k S_k^2 / n - n = -n (1 - sum_k p_k^2), scanned by ``_scan_classes``.

Negative weights make cumulative sums non-monotone, so the scan never stops early; a side
whose weight W, or B (variance) or B + lambda (newton), is not positive is not a valid split.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._types import (
    CLASS_GINI,
    CROSS_ENTROPY,
    GINI,
    MISCLASSIFICATION,
    MISSING_BIN,
    N_BINS,
    NEWTON,
    SDIVSQRTSPLUSB,
    VARIANCE,
    launch_lock,
    njit,
)

__all__ = ["SplitParams", "find_best_splits", "best_split_naive", "node_score"]


@njit
def soft_threshold(a, alpha):
    """L1 soft-thresholding of a gradient sum."""
    if a > alpha:
        return a - alpha
    if a < -alpha:
        return a + alpha
    return 0.0


@njit
def node_score(criterion, a, b, reg_lambda, reg_alpha):
    """Score of a node with channel sums (a, b) under ``criterion``; gains are differences."""
    if criterion == VARIANCE:
        return a * a / b if b > 0.0 else 0.0
    if criterion == NEWTON:
        t = soft_threshold(a, reg_alpha)
        d = b + reg_lambda
        return t * t / d if d > 0.0 else 0.0
    n = a + b
    if not n > 0.0:
        # Classification: a side whose net weight S + B is not positive (negative event
        # weights) is not a valid child, whatever the third channel says (the AdaBoost family
        # puts event counts there, as TMVA's MinNodeSize counts unweighted events).
        return -np.inf
    if criterion == SDIVSQRTSPLUSB:
        # TMVA's SdivSqrtSplusB: index I = S/sqrt(S+B), gain = I(parent) minus the
        # weight-fraction-weighted I of the children, i.e. the score -n * I = -S * sqrt(n).
        return -a * math.sqrt(n)
    if criterion == MISCLASSIFICATION:
        # TMVA's MisClassificationError takes the purity as it is: a side of negative
        # signal (or background) weight scores below 0, where Gini and entropy give 0.
        q = a / n
        return -n * (1.0 - max(q, 1.0 - q))
    p = min(max(a / n, 0.0), 1.0)
    if criterion == GINI:
        return -n * p * (1.0 - p)
    if criterion == CROSS_ENTROPY:
        e = 0.0
        if p > 0.0:
            e -= p * math.log(p)
        if p < 1.0:
            e -= (1.0 - p) * math.log(1.0 - p)
        return -n * e
    return 0.0


@njit
def _valid_side(criterion, b, w, reg_lambda, min_child_hessian, min_child_weight):
    if not (w > 0.0) or w < min_child_weight:
        return False
    if criterion == NEWTON:
        return b >= min_child_hessian and b + reg_lambda > 0.0
    if criterion == VARIANCE:
        return b > 0.0
    return True


class SplitParams:
    """Scalars that constrain and score splits (one value per tree)."""

    def __init__(self, criterion: int, reg_lambda: float = 0.0, reg_alpha: float = 0.0,
                 min_child_hessian: float = 0.0, min_child_weight: float = 0.0,
                 min_split_gain: float = 0.0):
        self.criterion = criterion
        self.reg_lambda = float(reg_lambda)
        self.reg_alpha = float(reg_alpha)
        self.min_child_hessian = float(min_child_hessian)
        self.min_child_weight = float(min_child_weight)
        self.min_split_gain = float(min_split_gain)

    def as_tuple(self) -> tuple:
        """Arguments in the kernels' order."""
        return (self.criterion, self.reg_lambda, self.reg_alpha, self.min_child_hessian,
                self.min_child_weight, self.min_split_gain)


@njit
def _sides(cum, i, sum_a, sum_b, sum_w):
    """(A, B, W) of the left side of cut i (cumulative sums) and of its right side."""
    la = cum[0, i]
    lb = cum[1, i]
    lw = cum[2, i]
    return la, lb, lw, sum_a - la, sum_b - lb, sum_w - lw


@njit
def _newton_side(a, b, w, reg_lambda, reg_alpha, min_child_hessian, min_child_weight):
    """Branch-free (score, valid) of one side: node_score and _valid_side for NEWTON."""
    t = math.copysign(max(abs(a) - reg_alpha, 0.0), a)
    d = b + reg_lambda
    return t * t / d, (w > 0.0) & (w >= min_child_weight) & (b >= min_child_hessian) & (d > 0.0)


@njit
def _variance_side(a, b, w, min_child_weight):
    """Branch-free (score, valid) of one side: node_score and _valid_side for VARIANCE."""
    return a * a / b, (w > 0.0) & (w >= min_child_weight) & (b > 0.0)


# A cut's gain sl + sr - parent rounds to a few eps x |parent| where it is 0 exactly (every
# event of a node with the same sign of residual, where A = +-B): a gain must exceed this
# much of |parent| too, or the model would depend on the scale of the weights.
GAIN_ROUNDING = 16 * float(np.finfo(np.float64).eps)


@njit(inline="always")
def gain_floor(parent, min_split_gain):
    """The gain a cut must exceed: min_split_gain, and the rounding of a zero gain."""
    return max(min_split_gain, GAIN_ROUNDING * abs(parent))


@njit
def _gains(criterion, cum, n, sum_a, sum_b, sum_w, parent, reg_lambda, reg_alpha,
           min_child_hessian, min_child_weight):
    """cum[3, :n] = gain of each cut from the left sums cum[0:3, :n] (-inf where invalid).

    Newton and variance get their own branch-free loops, which LLVM vectorises; they
    compute exactly what node_score and _valid_side do for a valid split."""
    if criterion == NEWTON:
        for i in range(n):
            la, lb, lw, ra, rb, rw = _sides(cum, i, sum_a, sum_b, sum_w)
            sl, ok_l = _newton_side(la, lb, lw, reg_lambda, reg_alpha, min_child_hessian, min_child_weight)
            sr, ok_r = _newton_side(ra, rb, rw, reg_lambda, reg_alpha, min_child_hessian, min_child_weight)
            gain = sl + sr - parent
            cum[3, i] = gain if ok_l & ok_r else -np.inf
    elif criterion == VARIANCE:
        for i in range(n):
            la, lb, lw, ra, rb, rw = _sides(cum, i, sum_a, sum_b, sum_w)
            sl, ok_l = _variance_side(la, lb, lw, min_child_weight)
            sr, ok_r = _variance_side(ra, rb, rw, min_child_weight)
            gain = sl + sr - parent
            cum[3, i] = gain if ok_l & ok_r else -np.inf
    else:
        for i in range(n):
            la, lb, lw, ra, rb, rw = _sides(cum, i, sum_a, sum_b, sum_w)
            if (_valid_side(criterion, lb, lw, reg_lambda, min_child_hessian, min_child_weight)
                    and _valid_side(criterion, rb, rw, reg_lambda, min_child_hessian, min_child_weight)):
                cum[3, i] = (node_score(criterion, la, lb, reg_lambda, reg_alpha)
                             + node_score(criterion, ra, rb, reg_lambda, reg_alpha) - parent)
            else:
                cum[3, i] = -np.inf


@njit(inline="always")
def _missing_sums(h):
    """(A, B, W) of the missing bin of one feature's histogram, and whether any is non-zero:
    the scans try sending missing values left only then."""
    ma = h[MISSING_BIN, 0]
    mb = h[MISSING_BIN, 1]
    mw = h[MISSING_BIN, 2]
    return ma, mb, mw, ma != 0.0 or mb != 0.0 or mw != 0.0


@njit
def _scan_feature(h, n_value_bins, sum_a, sum_b, sum_w, criterion, reg_lambda, reg_alpha,
                  min_child_hessian, min_child_weight, min_split_gain, cum, at, out_left):
    """Best (gain, bin, missing_left) of one feature's histogram h (N_BINS, 3), gain -inf
    when none; the left child's sums (A, B, W) of that split are left in ``out_left``.
    cum: (4, N_BINS) float64 scratch (cumulative left sums, then gains); at: (N_BINS,)
    int64 scratch (the bin of each scored cut)."""
    return _scan_channels(h[:, 0], h[:, 1], h[:, 2], n_value_bins, sum_a, sum_b, sum_w,
                          criterion, reg_lambda, reg_alpha, min_child_hessian,
                          min_child_weight, min_split_gain, cum, at, out_left)


@njit
def _scan_channels(ha, hb, hw, n_value_bins, sum_a, sum_b, sum_w, criterion, reg_lambda,
                   reg_alpha, min_child_hessian, min_child_weight, min_split_gain, cum, at,
                   out_left):
    """``_scan_feature`` of a histogram given as its channels' (N_BINS,) arrays; ``hw``
    None where W is B (packed histograms), which spares the scan a third sum.

    Only the cuts after bin 0 and after the bins that hold a non-zero sum are scored: a
    cut after an empty bin has the left sums, so the gain, of the cut before it, and the
    scan keeps the first of equal gains. (A sum is never -0.0: histograms start at +0.0,
    so adding an empty bin's +0.0 changes no bit.) Small nodes leave most bins empty."""
    parent = node_score(criterion, sum_a, sum_b, reg_lambda, reg_alpha)
    floor = gain_floor(parent, min_split_gain)
    ma, mb = ha[MISSING_BIN], hb[MISSING_BIN]
    if hw is None:
        mw = mb
    else:
        mw = hw[MISSING_BIN]
    has_missing = ma != 0.0 or mb != 0.0 or mw != 0.0
    best_gain = -np.inf
    best_bin = -1
    best_missing_left = False
    for direction in range(2):
        missing_left = direction == 1
        if missing_left and not has_missing:
            break
        la, lb, lw = (ma, mb, mw) if missing_left else (0.0, 0.0, 0.0)
        # Past the last value bin with missing on the right: values left, missing right.
        last = n_value_bins if (has_missing and not missing_left) else n_value_bins - 1
        n_cuts = _cumulate(ha, hb, hw, last, la, lb, lw, cum, at)
        _gains(criterion, cum, n_cuts, sum_a, sum_b, sum_w, parent, reg_lambda, reg_alpha,
               min_child_hessian, min_child_weight)
        best_gain, best_bin, best_missing_left = _best_cut(
            cum, at, n_cuts, missing_left, floor, best_gain, best_bin,
            best_missing_left, out_left)
    return best_gain, best_bin, best_missing_left


@njit
def _cumulate(ha, hb, hw, last, la, lb, lw, cum, at):
    """The left sums of the cuts after bins [0, last) from (la, lb, lw) into cum[0:3],
    branch-free: each cut written, kept (``at``: its bin) if its bin held a sum; the
    number of cuts kept. ``hw`` None: W is B, the same additions as B's."""
    n_cuts = np.int64(0)  # not the literal 0: that would compile _gains twice
    if hw is None:
        for bin_idx in range(last):
            a, b = ha[bin_idx], hb[bin_idx]
            la += a
            lb += b
            cum[0, n_cuts] = la
            cum[1, n_cuts] = lb
            cum[2, n_cuts] = lb
            at[n_cuts] = bin_idx
            n_cuts += (bin_idx == 0) | (a != 0.0) | (b != 0.0)
    else:
        for bin_idx in range(last):
            a, b, w = ha[bin_idx], hb[bin_idx], hw[bin_idx]
            la += a
            lb += b
            lw += w
            cum[0, n_cuts] = la
            cum[1, n_cuts] = lb
            cum[2, n_cuts] = lw
            at[n_cuts] = bin_idx
            n_cuts += (bin_idx == 0) | (a != 0.0) | (b != 0.0) | (w != 0.0)
    return n_cuts


@njit(inline="always")
def _best_cut(cum, at, n_cuts, missing_left, min_split_gain, best_gain, best_bin,
              best_missing_left, out_left):
    """The best of (best_gain, best_bin, best_missing_left) and the ``n_cuts`` cuts scored
    in ``cum`` (the first of equal gains; a gain must exceed min_split_gain); the left
    sums of a new best into ``out_left``."""
    for j in range(n_cuts):
        gain = cum[3, j]
        if gain > best_gain and gain > min_split_gain:
            best_gain = gain
            best_bin = at[j]
            best_missing_left = missing_left
            out_left[0] = cum[0, j]
            out_left[1] = cum[1, j]
            out_left[2] = cum[2, j]
    return best_gain, best_bin, best_missing_left


@njit
def _class_score(s):
    """-n times the Gini index of class sums s[:-1] (W last): -inf when n is not positive."""
    n = 0.0
    q = 0.0
    for k in range(s.size - 1):
        n += s[k]
        q += s[k] * s[k]
    return q / n - n if n > 0.0 else -np.inf


@njit
def _scan_classes(h, n_value_bins, sums, min_child_weight, min_split_gain, left, right,
                  out_left):
    """``_scan_feature`` for CLASS_GINI: h (N_BINS, C) class sums and W per bin, sums (C,)
    the node's; left/right (C,) scratch."""
    n_ch = h.shape[1]
    parent = _class_score(sums)
    has_missing = False
    for ch in range(n_ch):
        has_missing = has_missing or h[MISSING_BIN, ch] != 0.0
    best_gain = -np.inf
    best_bin = -1
    best_missing_left = False
    for direction in range(2):
        missing_left = direction == 1
        if missing_left and not has_missing:
            break
        for ch in range(n_ch):
            left[ch] = h[MISSING_BIN, ch] if missing_left else 0.0
        last = n_value_bins if (has_missing and not missing_left) else n_value_bins - 1
        for bin_idx in range(last):
            for ch in range(n_ch):
                left[ch] += h[bin_idx, ch]
                right[ch] = sums[ch] - left[ch]
            lw = left[n_ch - 1]
            rw = right[n_ch - 1]
            if not (lw > 0.0 and rw > 0.0 and lw >= min_child_weight and rw >= min_child_weight):
                continue
            gain = _class_score(left) + _class_score(right) - parent
            if gain > best_gain and gain > min_split_gain:
                best_gain = gain
                best_bin = bin_idx
                best_missing_left = missing_left
                for ch in range(left.size):  # a loop: array-to-slice compiles a shape error
                    out_left[ch] = left[ch]
    return best_gain, best_bin, best_missing_left


@njit
def _feature_results(n_nodes, m, n_channels):
    """Each (node, feature) scan's result of the split searches: gain (-inf: none), bin,
    missing_left and the left child's sums; ``_best_of_features`` then picks each node's."""
    return (np.full((n_nodes, m), -np.inf), np.zeros((n_nodes, m), dtype=np.int32),
            np.zeros((n_nodes, m), dtype=np.bool_), np.zeros((n_nodes, m, n_channels)))


@njit(parallel=True)
def _find_best_splits(hists, slots, node_sums, feature_allowed, n_value_bins,
                      criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight,
                      min_split_gain, out_gain, out_feature, out_bin, out_missing_left, out_left):
    m = n_value_bins.size
    gains, bins, missing, left = _feature_results(slots.size, m, 3)
    for job in numba.prange(slots.size * m):
        j = job // m
        f = job % m
        if not feature_allowed[j, f]:
            continue
        cum = np.empty((4, N_BINS))
        at = np.empty(N_BINS, np.int64)
        g, b, ml = _scan_feature(hists[slots[j], f], n_value_bins[f], node_sums[j, 0],
                                 node_sums[j, 1], node_sums[j, 2], criterion, reg_lambda,
                                 reg_alpha, min_child_hessian, min_child_weight, min_split_gain,
                                 cum, at, left[j, f])
        gains[j, f] = g
        bins[j, f] = b
        missing[j, f] = ml
    _best_of_features(gains, bins, missing, left, out_gain, out_feature, out_bin,
                      out_missing_left, out_left)


@njit(parallel=True)
def _find_best_class_splits(hists, slots, node_sums, feature_allowed, n_value_bins,
                            min_child_weight, min_split_gain, out_gain, out_feature, out_bin,
                            out_missing_left, out_left):
    # _find_best_splits for CLASS_GINI: C = K + 1 channels. A kernel of its own, because a
    # channel count known only at run time in the three-channel kernel made every fit's
    # split search slower (200k x 28, depth 6: 7-10 % of the whole fit).
    m = n_value_bins.size
    n_ch = node_sums.shape[1]
    gains, bins, missing, left = _feature_results(slots.size, m, n_ch)
    for job in numba.prange(slots.size * m):
        j = job // m
        f = job % m
        if not feature_allowed[j, f]:
            continue
        scratch = np.empty((2, n_ch))
        g, b, ml = _scan_classes(hists[slots[j], f], n_value_bins[f], node_sums[j],
                                 min_child_weight, min_split_gain, scratch[0], scratch[1],
                                 left[j, f])
        gains[j, f] = g
        bins[j, f] = b
        missing[j, f] = ml
    _best_of_features(gains, bins, missing, left, out_gain, out_feature, out_bin,
                      out_missing_left, out_left)


@njit
def _best_of_features(gains, bins, missing, left, out_gain, out_feature, out_bin,
                      out_missing_left, out_left):
    """Each node's best feature (the first on a tie: deterministic) and its split."""
    n_nodes, m = gains.shape
    for j in range(n_nodes):
        out_gain[j] = -np.inf
        out_feature[j] = -1
        for f in range(m):
            if gains[j, f] > out_gain[j]:
                out_gain[j] = gains[j, f]
                out_feature[j] = f
                out_bin[j] = bins[j, f]
                out_missing_left[j] = missing[j, f]
                for ch in range(left.shape[2]):
                    out_left[j, ch] = left[j, f, ch]


def find_best_splits(hists: np.ndarray, slots: np.ndarray, node_sums: np.ndarray,
                     feature_allowed: np.ndarray, n_value_bins: np.ndarray,
                     params: SplitParams) -> tuple[np.ndarray, ...]:
    """Best split of each node: (gain, feature, bin, missing_left, left_sums), feature -1
    when none; left_sums (k, 3) are the left child's (A, B, W) sums of that split.

    hists: (n_slots, m, 256, 3) float64; slots: (k,) node j's histogram slot; node_sums:
    (k, 3) float64 sums (A, B, W); feature_allowed: (k, m) bool; n_value_bins: (m,) int32.
    With CLASS_GINI the channels are C = K + 1 (class sums, then W) instead of 3.
    """
    k = slots.size
    out_gain = np.empty(k)
    out_feature = np.empty(k, dtype=np.int32)
    out_bin = np.zeros(k, dtype=np.int32)
    out_missing_left = np.zeros(k, dtype=np.bool_)
    out_left = np.zeros((k, node_sums.shape[1]))
    outputs = (out_gain, out_feature, out_bin, out_missing_left, out_left)
    if params.criterion == CLASS_GINI:
        with launch_lock():
            _find_best_class_splits(hists, slots, node_sums, feature_allowed, n_value_bins,
                                    params.min_child_weight, params.min_split_gain, *outputs)
    else:
        with launch_lock():
            _find_best_splits(hists, slots, node_sums, feature_allowed, n_value_bins,
                              *params.as_tuple(), *outputs)
    return out_gain, out_feature, out_bin, out_missing_left, out_left


def best_split_naive(codes: np.ndarray, rows: np.ndarray, a: np.ndarray, b: np.ndarray,
                     w: np.ndarray, n_value_bins: np.ndarray, params: SplitParams):
    """Brute-force twin: try every (feature, bin, missing side) by masking events directly."""
    crit, lam, alpha = params.criterion, params.reg_lambda, params.reg_alpha
    a, b, w = (np.asarray(v, np.float64)[rows] for v in (a, b, w))
    sa, sb, sw = a.sum(), b.sum(), w.sum()
    parent = node_score(crit, sa, sb, lam, alpha)
    floor = max(params.min_split_gain, GAIN_ROUNDING * abs(parent))
    best = (-np.inf, -1, 0, False)
    for f in range(codes.shape[0]):
        c = codes[f, rows]
        is_missing = c == MISSING_BIN
        for missing_left in (False, True):
            if missing_left and not is_missing.any():
                continue
            for t in range(n_value_bins[f] + 1):
                left = (c <= t) & ~is_missing | (is_missing & missing_left)
                la, lb, lw = a[left].sum(), b[left].sum(), w[left].sum()
                ra, rb, rw = sa - la, sb - lb, sw - lw
                ok = all(_valid_side(crit, x, y, lam, params.min_child_hessian,
                                     params.min_child_weight) for x, y in ((lb, lw), (rb, rw)))
                if not ok:
                    continue
                gain = node_score(crit, la, lb, lam, alpha) + node_score(crit, ra, rb, lam, alpha) - parent
                if gain > floor and gain > best[0]:
                    best = (gain, f, t, missing_left)
    return best
