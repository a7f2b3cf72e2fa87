"""Negative event weights: the policies that remove them before training.

Two policies live here, each keeping every class's net weight (sum of weights) and leaving
no negative weight: ``pair`` (annihilation against neighbours) and ``regress`` (the local
net weight learnt by a regressor). The module holds no estimator code;
``hepbdt.estimators`` calls it.

**pair.** ``pair_negative_weights`` is the ``negative_weights="pair"`` policy of the estimators
(TMVA's NegWeightTreatment=PairNegWeightsGlobal): before training, every negative-weight
event is paired with its nearest positive-weight events *of the same class* in
standardised feature space, and their weights are added up until the negative weight is
used up. Each class keeps its net weight (sum of weights) exactly, the local net density
is preserved up to the neighbour distance, and no negative weight is left; events whose
weight reaches zero are dropped.

How: the features are standardised per class (mean 0, standard deviation 1; TMVA uses the
full inverse covariance matrix, a Mahalanobis distance). A parallel Numba kernel finds
the ``n_neighbours`` nearest positive events of every negative event by brute force, in
single precision, tile by tile (the distances to a block of candidates vectorise; only
the best k per event are kept, in a heap, never the distance matrix; the lists of at
most ``PAIR_CANDIDATES`` // k negative events are held at once). A Numba loop then
annihilates each negative event against its candidates in order of distance, visiting
the negative events in a fixed order and skipping candidates already used up by an
earlier one (a pair whose sum is within the rounding of the sums that made both weights,
``CANCEL_ROUNDING`` of the larger at least, and eps times the additions times the
magnitudes added where one weight took several others in turn, leaves two exact zeros
rather than a leftover of an ulp or two: weights of 0.1 left 1e-17 that counted as
events where unit weights leave 0); when all candidates of an event are used up, its remaining negative weight
is matched again against the (now fewer) positive events, with a candidate list four
times as long; the passes end when no negative weight is left, or when no positive one
is (then what is left is the rounding of the sums, at most n * eps * sum |w|, and those
events are dropped). A class whose net weight is not positive beyond that rounding is
refused, and so is a feature with an infinite value (it has no finite standardisation).
Cost: O(n_neg * n_pos * m) a pass, and O(n_neg * k log k) for its lists (a sorted
insertion made this O(n_neg * k^2): 15 s for 64 events' lists of 40,000, now 0.1 s),
about 1 ns a distance on two cores: 0.9 s for 100,000 events
x 28 features with 10 % negative weights, 4.6 s for 300,000. Past ``MAX_PAIRS``
distances per pass (large samples), the candidates are drawn from a seeded random subset
of the positive events, so the cost grows linearly with the number of negative events
(neighbours are then somewhat farther): 7.7 s for 1,000,000 events. NaN features count
as the class mean. In many dimensions nearest neighbours are not local: on the 28-feature
NLO-like case of ``benchmarks/bench_negative_weights.py`` with 40 % negative background
events, the pairing cancels enough wrong events to end 0.05-0.07 of test AUC below the
net-sample model (``regress``: 0.002-0.005).

**regress** (ML-based reweighting, ``regress_negative_weights``): for each class with a
negative weight, the local net weight E[w | x] is learnt from the events' signs, and
every event's weight is replaced by it. The positive events are drawn from the net
density plus the density the negative ones cancel, the negative events from the
cancelled one, so P(negative | x) = e^F / (1 + 2 e^F) with F the log-ratio of the
cancelled to the net density, and E[w | x] = E[|w| | x] / (1 + 2 e^F) (``method="cancel"``,
the default; ``losses.Cancellation``). F is fitted by hepbdt's own Newton booster, depth-2
trees with |w| as event weights, cross-fitted over ``REGRESS_FOLDS`` folds: an event's
score is the mean of the models trained on the other folds only, so no event's weight
comes from a model that saw it (an in-sample fit would partly hand each event its own
weight back). Each model stops where a held-out tenth of its fold's training events (its
own draw) stops improving (``CANCELLATION_PATIENCE`` rounds; at most
``CANCELLATION_MAX_TREES``), and a fold averages up to ``CANCELLATION_MODELS`` such models,
as many as fit in ``CANCELLATION_EVENTS`` training events together (one model, at least):
the models differ in the events they stop on, and their mean varies less than one model
does. A model stopped early is shrunk towards its start, so its F is mapped by two
numbers, a F + b, fitted on the signs by the same likelihood (``_share_map``) within each
fold on the other random half; each event then weighs |w| / (1 + 2 e^(a F + b)), whose
expectation is E[w | x], negative events included, and which is never negative. Events
below ``LEAST_SHARE`` of the largest new weight are dropped; each class is rescaled to
keep its net weight.
Why this likelihood: P(negative | x) stays below 1/2 wherever the net weight is positive,
and F is additive where the two densities factorise, so shallow trees learn it; the
least-squares regression of w (``method="regress"``, the default until 2026-12-06, with an
isotonic calibration, ``_calibrated``) and the logistic classifier of the sign
(``method="classify"``) must build the saturation at 1/2 out of interactions. On the 28-D
NLO-like case of ``benchmarks/bench_negative_weights.py`` with 40 % negative events the
root mean square error against the generator's true E[w | x] fell from 0.117 to 0.086
(unit weights), and the boosters trained on the new weights went from 0.008-0.011 of test
AUC below the net-sample model to 0.002-0.004 (``--oracle --draws 10``).
The models learn |w| divided by a power of two near its largest magnitude (exactly, so the
weights are the same, bit for bit, at any scale; weights of 1e40, which a class
normalisation brings into the training's range, overflowed the float32 channels).
Each fold's models train on at most ``REGRESS_MAX_EVENTS`` events (a seeded random subset
of the other folds), so the cost stops growing with the sample: one binning of the class,
``REGRESS_FOLDS`` times up to ``CANCELLATION_MODELS`` early-stopped fits (one a fold from
90,000 training events), one prediction of every event and six two-number fits on at
most ``SHARE_MAP_EVENTS`` events each (``bench_negative_weights.py --cost`` measures it at
1M events x 28 features).
"""

from __future__ import annotations

import numba
import numpy as np

from .._util import running_sum_slack
from ..engine._types import CHANNEL_DTYPE, launch_lock, njit
from ..engine.binning import BinMapper
from ..engine.grower import QuantisedRows
from ..engine.split import SplitParams
from ._loop import run_boosting
from .gradient import GradientBooster
from .losses import Cancellation, Deviance, Squared, fit_rescaling
from .newton import NewtonBooster

__all__ = ["pair_negative_weights", "pair_class_weights", "pair_weights", "regress_negative_weights",
           "regress_class_weights", "regress_weights", "isotonic_map"]

KNN_TILE = 16  # queries per parallel task of the neighbour search
KNN_BLOCK = 2048  # candidates per block (a block's features stay in cache for a tile)
KNN_HEAP = 1 << 16  # heap entries of one tile, at most (fewer queries a tile as k grows)
PAIR_CANDIDATES = 1 << 20  # candidate indices held at once (the negative events in chunks)
MAX_PAIRS = 2_000_000_000  # distances computed per pass, at most (about 2 s on two cores)
REGRESS_FOLDS = 3  # cross-fitting folds of the regress policy
REGRESS_TREES = 100
REGRESS_DEPTH = 3
REGRESS_LEARNING_RATE = 0.1
REGRESS_MIN_NODE_SIZE = 0.002  # a leaf holds at least 0.2 % of the fold's training events
REGRESS_MAX_EVENTS = 100_000  # training events of each fold's model, at most
REGRESS_QUANTISE_FROM = 50_000  # packed histograms from this many training events
CANCELLATION_DEPTH = 2  # the cancellation models' trees (method "cancel")
CANCELLATION_MODELS = 5  # models a fold (their scores averaged), at most
CANCELLATION_EVENTS = 180_000  # training events of a fold's models together (one model at least)
CANCELLATION_MAX_TREES = 500
CANCELLATION_LEARNING_RATE = 0.2
CANCELLATION_MIN_NODE_EVENTS = 20  # a leaf holds at least this many events' share of the weight
CANCELLATION_PATIENCE = 20  # rounds without a better validation loss before the model stops
CANCELLATION_VALID_FRACTION = 0.1  # of each fold's training events, to stop on
LEAST_SHARE = 1e-6  # new weights below this fraction of the largest are 0
SHARE_MAP_EVENTS = 20_000  # events the two numbers of a half fold's share map are fitted on, at most
# An annihilation whose sum is within this fraction of the larger weight (two ulps at most:
# the rounding of the sums that made the weights) leaves two exact zeros. Larger leftovers
# of the rounding go on to the next candidates, and at the end are dropped within _rounding.
CANCEL_ROUNDING = 2 * float(np.finfo(np.float64).eps)
_EPS = float(np.finfo(np.float64).eps)


@njit
def _annihilate(neg_idx, candidates, w, made_of, adds):
    """Add each negative weight onto its candidates in order; return the events left negative.

    ``made_of`` (the summed magnitudes of the weights each event's weight was added up
    from) and ``adds`` (how many additions made it) bound the rounding a weight carries;
    both are updated with ``w``."""
    left = np.zeros(neg_idx.size, dtype=np.bool_)
    for q in range(neg_idx.size):
        i = neg_idx[q]
        for k in range(candidates.shape[1]):
            if w[i] >= 0.0:
                break
            j = candidates[q, k]
            if j < 0 or w[j] <= 0.0:
                continue
            total = w[i] + w[j]
            terms = made_of[i] + made_of[j]
            count = adds[i] + adds[j] + 1
            if abs(total) <= max(CANCEL_ROUNDING * max(-w[i], w[j]), _EPS * count * terms):
                # They cancel to within the rounding of the sums that made them: exact
                # zeros, not a leftover of an ulp (2e-31 from weights of 1e-15), which no
                # float32 training could hold. One weight that took several others in turn
                # carries the rounding of all those sums (weights of 0.1 left 1e-17).
                w[i] = 0.0
                w[j] = 0.0
            elif total > 0.0:
                w[j] = total
                w[i] = 0.0
                made_of[j], adds[j] = terms, count
            else:
                w[i] = total
                w[j] = 0.0
                made_of[i], adds[i] = terms, count
        left[q] = w[i] < 0.0
    return left


@njit(inline="always")
def _sift_down(heap, top, size):
    """Restore the max-heap order of heap[:size] below entry ``top``."""
    while True:
        child = 2 * top + 1
        if child >= size:
            return
        if child + 1 < size and heap[child + 1] > heap[child]:
            child += 1
        if heap[child] <= heap[top]:
            return
        heap[top], heap[child] = heap[child], heap[top]
        top = child


@njit(inline="always")
def _push(heap, size, key):
    """Add ``key`` to the max-heap heap[:size] (there is room for it)."""
    pos = size
    heap[pos] = key
    while pos > 0:
        parent = (pos - 1) // 2
        if heap[pos] <= heap[parent]:
            return
        heap[pos], heap[parent] = heap[parent], heap[pos]
        pos = parent


@njit(parallel=True)
def _knn(Zq, Zt, k, tile, out):
    """out[q] = indices of the k columns of Zt nearest to row q of Zq, closest first (ties:
    the smaller index first); -1 past the candidates at a finite distance.

    Zq: (n_q, m) float32 queries; Zt: (m, n_c) float32 candidates, feature-major so that
    the distances to a block of candidates vectorise. Threads own tiles of ``tile`` queries;
    each tile streams the candidates block by block (a block stays in cache for the tile).
    Each query keeps its k best in a max-heap of keys, a distance's bits (which order as
    the distances, >= 0) then the index: log k a candidate that enters, where a sorted
    insertion cost k, quadratic in k on the later passes of the pairing.
    """
    n_q, m = Zq.shape
    n_c = Zt.shape[1]
    n_tiles = (n_q + tile - 1) // tile
    for t in numba.prange(n_tiles):
        q0 = t * tile
        q1 = min(n_q, q0 + tile)
        best = np.empty((tile, k), dtype=np.uint64)
        count = np.zeros(tile, dtype=np.int64)
        d = np.empty(KNN_BLOCK, dtype=np.float32)
        bits = d.view(np.uint32)
        for b0 in range(0, n_c, KNN_BLOCK):
            size = np.uint64(min(n_c, b0 + KNN_BLOCK) - b0)
            base = np.uint64(b0)
            for q in range(q0, q1):
                r = q - q0
                d[:] = 0.0
                for f in range(m):
                    a = Zq[q, f]
                    row = Zt[f]
                    for j in range(size):
                        diff = a - row[base + j]
                        d[j] += diff * diff
                heap, c = best[r], count[r]
                j = np.uint64(0)
                while c < k and j < size:  # filling the heap
                    if d[j] < np.inf:
                        _push(heap, c, (np.uint64(bits[j]) << np.uint64(32)) | (base + j))
                        c += 1
                    j += np.uint64(1)
                count[r] = c
                if c < k:
                    continue
                # A later candidate's key is larger at the same distance: it enters when
                # strictly closer than the worst kept.
                worst = np.uint32(heap[0] >> np.uint64(32))
                for i in range(j, size):
                    if bits[i] < worst:
                        heap[0] = (np.uint64(bits[i]) << np.uint64(32)) | (base + i)
                        _sift_down(heap, 0, k)
                        worst = np.uint32(heap[0] >> np.uint64(32))
        for q in range(q0, q1):
            r = q - q0
            c = count[r]
            ordered = np.sort(best[r, :c])
            for s in range(k):
                out[q, s] = np.int64(ordered[s] & np.uint64(0xFFFFFFFF)) if s < c else -1


def _nearest(Z_neg: np.ndarray, Z_pos: np.ndarray, k: int) -> np.ndarray:
    """(len(Z_neg), k) indices into Z_pos of the k nearest, closest first."""
    return _nearest_t(np.ascontiguousarray(Z_neg, dtype=np.float32),
                      np.ascontiguousarray(Z_pos.T, dtype=np.float32), k)


def _nearest_t(Zq: np.ndarray, Zt: np.ndarray, k: int) -> np.ndarray:
    """``_nearest`` of float32 queries Zq (n_q, m) among the feature-major candidates Zt
    (m, n_c) (fewer than 2**32); the tiles shrink as k grows, so that their heaps stay
    within KNN_HEAP."""
    k = min(k, Zt.shape[1])
    out = np.empty((Zq.shape[0], k), dtype=np.int64)
    if k == 0:
        return out
    with launch_lock():
        _knn(np.ascontiguousarray(Zq, dtype=np.float32), Zt, k,
             max(1, min(KNN_TILE, KNN_HEAP // max(k, 1))), out)
    return out


PREDICT_BLOCK = 1 << 16  # held-out events scored at once by the cross-fitted models
STANDARDISE_BLOCK = 1 << 14  # rows standardised at once (float64 temporaries of this many)


@njit
def _column_moments(X, rows, mean, std, count):
    """numpy's ``nanmean`` and ``nanstd`` of each column of float64(X[rows]), to the bit
    (the same additions in the same order: row by row, as numpy reduces axis 0), without a
    float64 copy of X; ``count``: the values that are not NaN."""
    m = X.shape[1]
    total = np.zeros(m)
    count[:] = 0
    for i in rows:
        for j in range(m):
            x = np.float64(X[i, j])
            if not np.isnan(x):
                total[j] += x
                count[j] += 1
    for j in range(m):
        mean[j] = total[j] / count[j]
        total[j] = 0.0
    for i in rows:
        for j in range(m):
            x = np.float64(X[i, j])
            d = x - mean[j] if not np.isnan(x) else 0.0
            total[j] += d * d
    for j in range(m):
        std[j] = np.sqrt(total[j] / count[j])


def _standardised(X: np.ndarray, rows: np.ndarray | None = None,
                  counted: np.ndarray | None = None) -> np.ndarray:
    """Features of the events ``rows`` of X (all when None) standardised per column (mean
    0, standard deviation 1; NaN as the mean), computed in float64 block by block and kept
    in float32, as the neighbour search reads them: 4 bytes a value, where float64 copies
    of the whole X took about 33. ``counted`` (a mask over ``rows``): the events whose
    moments count (an event of weight 0 is no event). ValueError for a column with an
    infinite value (or one too large to square), which has no finite standardisation."""
    X = np.ascontiguousarray(X)
    rows = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    mean, std = np.empty(X.shape[1]), np.empty(X.shape[1])
    count = np.empty(X.shape[1], dtype=np.int64)
    _column_moments(X, rows if counted is None else rows[counted], mean, std, count)
    bad = np.flatnonzero((count > 0) & ~np.isfinite(std))
    if bad.size:
        raise ValueError(f"negative_weights='pair': column {int(bad[0])} of the values the pairing "
                         "measures distances in (the features, then a regression's target and "
                         "the decorrelation variables) has infinite values or values too large "
                         "to standardise; every value must be finite (within float32's range, "
                         "+-3.4e38) or NaN for missing")
    scale = np.where(std > 0, std, 1.0)
    Z = np.empty((rows.size, X.shape[1]), dtype=np.float32)
    for start in range(0, rows.size, STANDARDISE_BLOCK):
        block = np.asarray(X[rows[start:start + STANDARDISE_BLOCK]], dtype=np.float64)
        Z[start:start + STANDARDISE_BLOCK] = np.where(np.isnan(block), 0.0, (block - mean) / scale)
    return Z


def _check_finite(w: np.ndarray, policy: str) -> None:
    """ValueError naming the first weight of ``w`` that is NaN or infinite."""
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise ValueError(f"negative_weights={policy!r}: weight {int(bad[0])} of the events given "
                         f"to the policy is {w[bad[0]]}; every weight must be a finite number")


def _rounding(w: np.ndarray) -> float:
    """A bound on the rounding error of summing ``w`` in any order: n * eps * sum |w|."""
    return running_sum_slack(w.size, np.abs(w).sum())


def pair_weights(X: np.ndarray, w: np.ndarray, n_neighbours: int = 16,
                 rows: np.ndarray | None = None, group: str = "class") -> np.ndarray:
    """Annihilate the negative weights of one class; returns the new float64 weights.

    X : (n, m) features; w : (n,) weights with a positive sum. The sum of weights is kept.
    rows : the class's events in X (w has one weight per row), when X holds others too.
    group : what the events are, for the messages: "class" (a classifier's class) or
        "regression" (every event of a regression).
    """
    if isinstance(n_neighbours, bool) or not (isinstance(n_neighbours, int | np.integer)
                                               and n_neighbours >= 1):
        raise ValueError(f"negative_weights='pair': n_neighbours={n_neighbours!r} must be an "
                         "integer >= 1 (the first candidate list of each negative event)")
    w = np.asarray(w, dtype=np.float64).copy()
    _check_finite(w, "pair")
    if not np.any(w < 0):
        return w
    rounding = _check_net_weight(w, "pair", "its negative weights cannot be annihilated", group)
    Z = _standardised(X, rows, None if np.all(w != 0) else w != 0)
    neg = np.flatnonzero(w < 0)
    k = n_neighbours
    rng = np.random.default_rng(0)
    made_of, adds = np.abs(w), np.zeros(w.size, np.int64)  # the rounding each weight carries
    while neg.size:
        pos = np.flatnonzero(w > 0)
        if pos.size == 0:
            # Every positive weight is used up: what is left is the rounding of the sums
            # (the net weight was checked to be positive beyond it), so it is dropped.
            if -w[neg].sum() > rounding:
                raise ValueError(f"negative_weights='pair': {-w[neg].sum():.6g} of negative "
                                 "weight is left with no positive weight to pair it with")
            w[neg] = 0.0
            break
        if neg.size * pos.size > MAX_PAIRS:
            # Large samples: neighbours among a seeded random subset of the positive events,
            # so the cost stays linear in the number of negative events.
            keep = max(4 * k, MAX_PAIRS // neg.size)
            pos = np.sort(rng.choice(pos, min(keep, pos.size), replace=False))
        left = _pair_pass(Z, neg, pos, k, w, made_of, adds)
        if k >= pos.size and np.any(left) and np.any(w > 0):
            # Every remaining negative event saw every positive one: unreachable with
            # finite distances (checked by _standardised); stop rather than loop.
            raise RuntimeError("negative_weights='pair': the pairing made no progress")
        neg = neg[left]
        k *= 4
    return w


def _pair_pass(Z: np.ndarray, neg: np.ndarray, pos: np.ndarray, k: int,
               w: np.ndarray, made_of: np.ndarray, adds: np.ndarray) -> np.ndarray:
    """One pass of the pairing: each event of ``neg`` in turn annihilated against its k
    nearest events of ``pos`` (closest first, those used up skipped), ``w`` updated in
    place (with the rounding bounds ``made_of`` and ``adds`` of ``_annihilate``); returns
    the mask of the events of ``neg`` left negative. The candidates of at
    most PAIR_CANDIDATES // k negative events are held at once (all of them: n_neg * k
    indices, gigabytes on the later passes)."""
    k = min(k, pos.size)
    Zt = np.ascontiguousarray(Z[pos].T)
    chunk = max(1, PAIR_CANDIDATES // k)
    left = np.empty(neg.size, dtype=np.bool_)
    for start in range(0, neg.size, chunk):
        mine = neg[start:start + chunk]
        found = _nearest_t(Z[mine], Zt, k)
        candidates = pos[found]
        candidates[found < 0] = -1  # no candidate (pos[-1] is one)
        left[start:start + chunk] = _annihilate(mine, candidates, w, made_of, adds)
    return left


def pair_negative_weights(X: np.ndarray, y: np.ndarray, w: np.ndarray, n_neighbours: int = 16,
                          by_class: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``negative_weights="pair"`` policy: (X, y, w) with no negative weight left.

    Each class (each distinct y; all events together when ``by_class`` is False, as for
    regression) is treated separately and keeps its sum of weights. Events whose weight
    becomes exactly zero are dropped.

    Parameters
    ----------
    X : (n, m) float32 features; y : (n,) labels or targets; w : (n,) float64 weights.
    n_neighbours : candidate neighbours per negative event in the first pass.
    by_class : pair only within each class of y.

    Returns
    -------
    (X, y, w) of the surviving events, w float64 and > 0.
    """
    return _surviving(X, y, pair_class_weights(X, y, w, n_neighbours, by_class))


def pair_class_weights(X: np.ndarray, y: np.ndarray, w: np.ndarray, n_neighbours: int = 16,
                       by_class: bool = True, rows: np.ndarray | None = None) -> np.ndarray:
    """The weights :func:`pair_negative_weights` gives every event, (n,) float64 >= 0
    (those it drops are 0), so that the caller can select other per-event arrays alike.
    ``rows``: the events' increasing row indices in X (y and w have one entry per row),
    when X holds others too; None: every row."""
    group = "class" if by_class else "regression"
    return _by_class(X, y, w, by_class,
                     lambda X, in_x, wc: pair_weights(X, wc, n_neighbours, in_x, group), rows)


def _by_class(X: np.ndarray, y: np.ndarray, w: np.ndarray, by_class: bool, reweigh,
              rows: np.ndarray | None = None) -> np.ndarray:
    """New weights (n,) float64: ``reweigh(X, rows_c, w_c)`` for each class c of y (all
    events as one class unless ``by_class``) that holds a negative weight; the others as
    given, and events of weight 0 keep it. The class's rows in X are passed (the events are
    X[rows], all when None), not a copy of its features."""
    w_new = np.asarray(w, dtype=np.float64).copy()
    y = np.asarray(y)
    groups = y if by_class else np.zeros(y.size, dtype=np.int8)
    for label in np.unique(groups):
        # an event of weight 0 is none: it stays 0 (regress made targets of 0 of them, and
        # its calibration gave them positive weights: 500 of 1,000 such rows, 13.5 in all)
        mine = np.flatnonzero((groups == label) & (w_new != 0))
        if np.any(w_new[mine] < 0):
            w_new[mine] = reweigh(X, mine if rows is None else rows[mine], w_new[mine])
    return w_new


def _surviving(X: np.ndarray, y: np.ndarray, w_new: np.ndarray):
    """(X, y, w) of the events whose new weight is positive."""
    keep = w_new > 0
    return X[keep], np.asarray(y)[keep], w_new[keep]


def _check_net_weight(w: np.ndarray, policy: str,
                      consequence: str = "no positive weights can stand for it",
                      group: str = "class") -> float:
    """The rounding bound of ``w``'s sum; ValueError when the net weight is not beyond it
    (``group``: "class" or "regression", what the events are, for the message)."""
    rounding = _rounding(w)
    if not w.sum() > rounding:
        whose, remedy = (("the class's net weight", "drop that class's negative events")
                         if group == "class" else
                         ("the net weight of the regression's training events",
                          "a regression needs a positive sum of weights: drop the "
                          "negative-weight events"))
        raise ValueError(f"negative_weights={policy!r}: {whose} {w.sum():.6g} is not positive "
                         f"(beyond the rounding of its sum, {rounding:.3g}), so {consequence}; "
                         f"{remedy} or choose negative_weights='ignore' or 'abs'")
    return rounding


def _fold_models(method: str, loss, train: np.ndarray, rng: np.random.Generator) -> list:
    """[(booster, tree settings, training events, validation events or None)] of one fold:
    ``method`` "cancel" boosts depth-2 Newton trees on the cancellation likelihood, each
    model until a held-out tenth of the fold's training events (its own draw) stops
    improving, as many models as fit in ``CANCELLATION_EVENTS`` training events (at most
    ``CANCELLATION_MODELS``; their scores are averaged); "regress" and "classify" boost one
    model of a fixed count of depth-3 gradient trees on every training event."""
    if method != "cancel":
        return [(GradientBooster(loss, REGRESS_LEARNING_RATE),
                 dict(n_trees=REGRESS_TREES, max_depth=REGRESS_DEPTH,
                      min_node_size=REGRESS_MIN_NODE_SIZE), train, None)]
    models = []
    for _ in range(min(CANCELLATION_MODELS, max(1, CANCELLATION_EVENTS // train.size))):
        held = rng.random(train.size) < CANCELLATION_VALID_FRACTION
        fit, valid = train[~held], train[held]
        models.append((NewtonBooster(loss, CANCELLATION_LEARNING_RATE, 0.0, 0.0),
                       dict(n_trees=CANCELLATION_MAX_TREES, max_depth=CANCELLATION_DEPTH,
                            n_iter_no_change=CANCELLATION_PATIENCE,
                            min_node_size=max(REGRESS_MIN_NODE_SIZE,
                                              CANCELLATION_MIN_NODE_EVENTS / max(fit.size, 1))),
                       fit, valid))
    return models


def _fold_forest(X: np.ndarray, rows: np.ndarray | None, mapper: BinMapper, model: tuple,
                 target: np.ndarray, weight: np.ndarray, rng: np.random.Generator):
    """The forest of one of ``_fold_models``' models, cut at its best round when it stops
    on validation events."""
    booster, trees, train, valid = model
    # Packed integer histograms, as the estimators use from QUANTISE_FROM_EVENTS events.
    quantised = train.size >= REGRESS_QUANTISE_FROM
    in_x = train if rows is None else rows[train]
    codes = (QuantisedRows.from_features(X, mapper, in_x) if quantised
             else mapper.transform(X, in_x))
    if valid is not None:
        valid = (mapper.transform(X, valid if rows is None else rows[valid]), target[valid],
                 weight[valid].astype(np.float64))
    result = run_boosting(
        booster, codes, target[train], weight[train].astype(CHANNEL_DTYPE), mapper.n_bins_,
        mapper, split_params=SplitParams(booster.criterion),
        subsample=1.0, subsample_mode="uniform", colsample_bytree=1.0, colsample_bylevel=1.0,
        colsample_bynode=1.0, rng=rng, quantised=quantised, valid=valid, **trees)
    return result.builder.build(None if valid is None else result.best_iteration + 1)


def _cross_fitted(X: np.ndarray, target: np.ndarray, weight: np.ndarray, method: str,
                  n_folds: int, rng: np.random.Generator,
                  rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each event's score from the models boosted on the other folds, and the folds:
    ((n,) float64 scores, (n,) int fold of each event); the events are X[rows] (all rows
    when None), read block by block, never copied whole. ``method``: see ``_fold_models``
    (the losses: squared error, deviance, cancellation)."""
    n = X.shape[0] if rows is None else len(rows)
    mapper = BinMapper(random_state=int(rng.integers(2**31)))
    mapper.fit(X, rows=rows)
    fold = rng.permutation(n) % n_folds
    score = np.zeros(n)
    loss = {"regress": Squared, "classify": Deviance, "cancel": Cancellation}[method]()
    target = target.astype(np.int8 if loss.is_classification else np.float64)
    for k in range(n_folds):
        held = np.flatnonzero(fold == k)
        train = np.flatnonzero(fold != k)
        if train.size > REGRESS_MAX_EVENTS:
            train = np.sort(rng.choice(train, REGRESS_MAX_EVENTS, replace=False))
        if method == "classify":
            _check_both_signs(target[train], weight[train], k)
        models = _fold_models(method, loss, train, rng)
        for model in models:
            if method == "cancel" and not _cancels(target[model[2]], weight[model[2]]):
                continue  # nothing to learn: a score of 0 (one local net weight)
            forest = _fold_forest(X, rows, mapper, model, target, weight, rng)
            for start in range(0, held.size, PREDICT_BLOCK):
                block = held[start:start + PREDICT_BLOCK]
                score[block] += forest.raw_score(X[block if rows is None else rows[block]]) / len(models)
    return score, fold


def _cancels(negative: np.ndarray, weight: np.ndarray) -> bool:
    """Whether the cancellation likelihood has a best constant on these events: some
    negative weight, and less of it than of positive weight (``weight``: |w|)."""
    minus = float(weight[negative == 1].sum(dtype=np.float64))
    return minus > 0 and float(weight[negative == 0].sum(dtype=np.float64)) > minus


def _check_both_signs(negative: np.ndarray, weight: np.ndarray, fold: int) -> None:
    """ValueError when the training events of a fold of the classifier-based variant
    (``negative``: 1 for a negative weight, ``weight``: |w|) lack either sign of weight."""
    for label, kind in ((1, "negative"), (0, "positive")):
        if not weight[negative == label].sum() > 0:
            raise ValueError(f"negative_weights='regress' (method='classify'): the training events "
                             f"of cross-fitting fold {fold} hold no {kind} weight, so P(negative | x) "
                             "cannot be learnt there; use method='regress' or more events")


@njit
def _pool_adjacent_violators(value: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence closest to ``value`` (n,) in weighted least squares
    (weights (n,) > 0): blocks of adjacent values are pooled into their weighted mean
    while a block's mean exceeds the next one's. Returns (n,) float64."""
    n = value.size
    mean = np.empty(n)
    total = np.empty(n)
    size = np.empty(n, dtype=np.int64)
    top = 0
    for i in range(n):
        mean[top] = value[i]
        total[top] = weight[i]
        size[top] = 1
        while top > 0 and mean[top - 1] > mean[top]:
            pooled = total[top - 1] + total[top]
            mean[top - 1] = (mean[top - 1] * total[top - 1] + mean[top] * total[top]) / pooled
            total[top - 1] = pooled
            size[top - 1] += size[top]
            top -= 1
        top += 1
    out = np.empty(n)
    i = 0
    for b in range(top):
        for _ in range(size[b]):
            out[i] = mean[b]
            i += 1
    return out


def isotonic_map(score: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E[target | score] as a non-decreasing function of score (isotonic least squares):
    (knots, values), the distinct scores in increasing order and the fitted mean at each;
    ``np.interp(s, knots, values)`` evaluates it (linear between knots, constant beyond).

    score, target : (n,) float64, n >= 1. Events with equal scores are pooled first.
    """
    order = np.argsort(score, kind="stable")
    knots, start, count = np.unique(score[order], return_index=True, return_counts=True)
    sums = np.add.reduceat(np.asarray(target, dtype=np.float64)[order], start)
    return knots, _pool_adjacent_violators(sums / count, count.astype(np.float64))


def _calibrated(score: np.ndarray, w: np.ndarray, fold: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
    """Each event's local net weight E[w | score], with a map that never saw the event.

    Within each fold (its scores all come from the one model that did not train on it),
    the events are split at random into two halves, and each half is calibrated with the
    isotonic map of w on the score fitted on the other half: neither the model nor the map
    that gives an event its weight saw that event's weight. (A map fitted on the other
    folds would not do: their scores come from models that trained on this fold.)
    """
    local = np.empty(score.size)
    for k in np.unique(fold):
        rows = rng.permutation(np.flatnonzero(fold == k))
        halves = (rows[0::2], rows[1::2])
        for mine, other in (halves, halves[::-1]):
            knots, values = isotonic_map(score[other], w[other])
            local[mine] = np.interp(score[mine], knots, values)
    return local


def _share_map(score: np.ndarray, negative: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """(a, b) of the cancellation likelihood's best fit of the events' signs by the score
    a F + b (``negative``: 1 for a negative weight, ``weight``: |w|): the model's F
    rescaled, two numbers where a boosted model stopped early is shrunk towards its start
    (``losses.fit_rescaling``)."""
    return fit_rescaling(np.ascontiguousarray(score, dtype=np.float64), negative.astype(np.int8),
                         np.ascontiguousarray(weight / weight.sum(), dtype=np.float64))


def _shares(score: np.ndarray, negative: np.ndarray, weight: np.ndarray, fold: np.ndarray,
            rng: np.random.Generator) -> np.ndarray:
    """Each event's local net weight, |w| times its net share 1 / (1 + 2 e^(a F + b)), with
    (a, b) (``_share_map``) fitted on the other half of its fold, as ``_calibrated``'s map:
    neither the model nor the map behind an event's new weight saw that event. |w| times
    the share has the expectation E[w | x], negative events' included, and is never
    negative."""
    new = np.empty(score.size)
    for k in np.unique(fold):
        rows = rng.permutation(np.flatnonzero(fold == k))
        halves = (rows[0::2], rows[1::2])
        for mine, other in (halves, halves[::-1]):
            if other.size > SHARE_MAP_EVENTS:
                other = rng.choice(other, SHARE_MAP_EVENTS, replace=False)
            a, b = _share_map(score[other], negative[other], weight[other])
            new[mine] = weight[mine] * Cancellation.net_share(a * score[mine] + b)
    return new


def regress_weights(X: np.ndarray, w: np.ndarray, n_folds: int = REGRESS_FOLDS,
                    random_state: int | None = 0, method: str = "cancel",
                    rows: np.ndarray | None = None, group: str = "class") -> np.ndarray:
    """The local net weight of each event of one class, cross-fitted; new float64 weights.

    X : (n, m) float32 features; w : (n,) weights with a positive sum. The result is >= 0
    and keeps the sum. ``method``: "cancel" (the default) fits F of P(negative | x) =
    e^F / (1 + 2 e^F) with |w| as weights, and each event weighs |w| / (1 + 2 e^F), F
    mapped by ``_shares``; the earlier scores are calibrated into E[w | score] by
    ``_calibrated`` and clipped at zero: "regress" fits E[w | x] by least squares,
    "classify" P(negative | x) by the binomial deviance. Every score comes from models
    that did not train on the event; the weights are rescaled to the class's net weight,
    those below ``LEAST_SHARE`` of the largest set to 0. ``rows``: the
    class's events in X (w has one weight per row), when X holds others too. ``group``:
    what the events are, for the messages: "class" or "regression" (every event of one).
    """
    w = np.asarray(w, dtype=np.float64)
    _check_finite(w, "regress")
    if not np.any(w < 0):
        return w.copy()
    _check_net_weight(w, "regress", group=group)
    if not (isinstance(n_folds, int | np.integer) and n_folds >= 2):
        raise ValueError(f"negative_weights='regress': n_folds={n_folds!r} must be an integer >= 2")
    if w.size < 2 * n_folds:
        whose = "the class has" if group == "class" else "the regression has"
        raise ValueError(f"negative_weights='regress': {whose} {w.size} events, fewer "
                         f"than two for each of the {n_folds} cross-fitting folds; choose "
                         "negative_weights='pair'")
    rng = np.random.default_rng(0 if random_state is None else random_state)
    X = np.asarray(X, dtype=np.float32)
    # The models learn w over a power of two near its largest magnitude, exactly (so the
    # same weights, bit for bit, at any scale): weights beyond float32's range (1e40, which
    # a class normalisation brings into range for the training) overflowed its channels.
    unit = np.ldexp(w, -int(np.frexp(np.abs(w).max())[1]))
    if method not in ("cancel", "regress", "classify"):
        raise ValueError(f"method={method!r} is not valid; use 'cancel', 'regress' or 'classify'")
    negative = (w < 0).astype(np.float64)
    target, weight = (unit, np.ones(w.size)) if method == "regress" else (negative, np.abs(unit))
    score, fold = _cross_fitted(X, target, weight, method, n_folds, rng, rows)
    if method == "cancel":
        new = _shares(score, negative, weight, fold, rng)
    else:  # increasing with the local net weight: the regression's score, P(negative)'s negated
        new = _calibrated(score if method == "regress" else -score, unit, fold, rng)
    # A block of the calibration that pools +u and -u events has a mean of 0, or a residue
    # of its sums' rounding (6e-18 with weights of 0.1, where unit weights give 0): within
    # that rounding (|unit| <= 1) it is 0, and the event is dropped either way. So is a
    # weight below LEAST_SHARE of the largest (a share of 1e-20 deep in a cancelled region
    # carries nothing, and scaled with the class it left float32's range).
    new = np.where(new > max(w.size * _EPS, LEAST_SHARE * float(new.max(initial=0.0))), new, 0.0)
    total = float(new.sum())
    if not total > _rounding(unit):
        # No event's predicted local net weight is positive: the best constant model.
        return np.full(w.size, w.sum() / w.size)
    return new * (w.sum() / total)


def regress_negative_weights(X: np.ndarray, y: np.ndarray, w: np.ndarray, by_class: bool = True,
                             random_state: int | None = 0, n_folds: int = REGRESS_FOLDS,
                             method: str = "cancel") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``negative_weights="regress"`` policy: (X, y, w) with no negative weight left.

    Each class (each distinct y; all events together when ``by_class`` is False, as for
    regression) that holds a negative weight gets the cross-fitted local net weights of
    :func:`regress_weights` and keeps its sum of weights; a class without one is left as
    it is. Events whose weight becomes zero are dropped.

    Parameters
    ----------
    X : (n, m) float32 features; y : (n,) labels or targets; w : (n,) float64 weights.
    by_class : regress within each class of y.
    random_state : seed of the folds and the models (None: 0).
    n_folds, method : see :func:`regress_weights`.

    Returns
    -------
    (X, y, w) of the surviving events, w float64 and > 0.
    """
    return _surviving(X, y, regress_class_weights(X, y, w, by_class, random_state, n_folds, method))


def regress_class_weights(X: np.ndarray, y: np.ndarray, w: np.ndarray, by_class: bool = True,
                          random_state: int | None = 0, n_folds: int = REGRESS_FOLDS,
                          method: str = "cancel", rows: np.ndarray | None = None) -> np.ndarray:
    """The weights :func:`regress_negative_weights` gives every event, (n,) float64 >= 0
    (those it drops are 0), so that the caller can select other per-event arrays alike.
    ``rows``: the events' increasing row indices in X (y and w have one entry per row),
    when X holds others too; None: every row."""
    group = "class" if by_class else "regression"
    return _by_class(X, y, w, by_class,
                     lambda X, in_x, wc: regress_weights(X, wc, n_folds, random_state, method,
                                                         in_x, group), rows)
