"""Negative event weights: annihilation of negative-weight events against their neighbours.

``pair_negative_weights`` is the ``negative_weights="pair"`` policy of the estimators
(TMVA's NegWeightTreatment=PairNegWeightsGlobal): before training, every negative-weight
event is paired with its nearest positive-weight events *of the same class* in
standardised feature space, and their weights are added up until the negative weight is
used up. Each class keeps its net weight (sum of weights) exactly, the local net density
is preserved up to the neighbour distance, and no negative weight is left; events whose
weight reaches zero are dropped.

How: the features are standardised per class (mean 0, standard deviation 1; TMVA uses the
full inverse covariance matrix, a Mahalanobis distance). Negative events are visited in a
fixed order; the squared distances of a chunk of them to all positive events of the class
are computed at once with one matrix product (||a||^2 + ||b||^2 - 2 a.b), and the
``n_neighbours`` nearest candidates are kept per negative event. A Numba loop then
annihilates each negative event against its candidates in order of distance, skipping
candidates already used up by an earlier negative event; when all candidates of an event
are used up, its remaining negative weight is matched again against the (now fewer)
positive events, with a larger candidate list. Cost: O(n_neg * n_pos * m) flops in BLAS,
memory O(chunk * n_pos); about 5 s for 100,000 events (10 % negative) on two cores. Past
``MAX_PAIRS`` distances per pass (large samples), the candidates are drawn from a seeded
random subset of the positive events, so the cost grows linearly with the number of
negative events (neighbours are then somewhat farther). NaN features count as the class
mean.

The module holds no estimator code; ``hepbdt.estimators`` calls it.
"""

from __future__ import annotations

import numpy as np

from ..engine._types import njit

__all__ = ["pair_negative_weights", "pair_weights"]

CHUNK_ELEMENTS = 8_000_000  # distance matrix entries per chunk (64 MB of float64)
MAX_PAIRS = 2_000_000_000  # distances computed per pass, at most (about 10 s on two cores)


@njit
def _annihilate(neg_idx, candidates, w):
    """Add each negative weight onto its candidates in order; return the events left negative."""
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
            if total > 0.0:
                w[j] = total
                w[i] = 0.0
            else:
                w[i] = total
                w[j] = 0.0
        left[q] = w[i] < 0.0
    return left


def _nearest(Z_neg: np.ndarray, Z_pos: np.ndarray, k: int) -> np.ndarray:
    """(len(Z_neg), k) indices into Z_pos of the k nearest, closest first."""
    k = min(k, Z_pos.shape[0])
    pos_sq = np.einsum("ij,ij->i", Z_pos, Z_pos)
    chunk = max(1, CHUNK_ELEMENTS // max(1, Z_pos.shape[0]))
    out = np.empty((Z_neg.shape[0], k), dtype=np.int64)
    for start in range(0, Z_neg.shape[0], chunk):
        a = Z_neg[start:start + chunk]
        d = pos_sq[None, :] - 2.0 * (a @ Z_pos.T)  # + ||a||^2, the same for a whole row
        if k < Z_pos.shape[0]:
            part = np.argpartition(d, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(Z_pos.shape[0]), d.shape).copy()
        order = np.argsort(np.take_along_axis(d, part, axis=1), axis=1, kind="stable")
        out[start:start + chunk] = np.take_along_axis(part, order, axis=1)
    return out


def pair_weights(X: np.ndarray, w: np.ndarray, n_neighbours: int = 16) -> np.ndarray:
    """Annihilate the negative weights of one class; returns the new float64 weights.

    X : (n, m) features; w : (n,) weights with a positive sum. The sum of weights is kept.
    """
    w = np.asarray(w, dtype=np.float64).copy()
    if not np.any(w < 0):
        return w
    if not w.sum() > 0:
        raise ValueError(f"negative_weights='pair': the class's net weight {w.sum():.6g} is "
                         "not positive, so its negative weights cannot be annihilated")
    X = np.asarray(X, dtype=np.float64)
    mean = np.nanmean(X, axis=0)
    std = np.nanstd(X, axis=0)
    Z = np.where(np.isnan(X), 0.0, (X - mean) / np.where(std > 0, std, 1.0))
    neg = np.flatnonzero(w < 0)
    k = n_neighbours
    rng = np.random.default_rng(0)
    while neg.size:
        pos = np.flatnonzero(w > 0)
        if neg.size * pos.size > MAX_PAIRS:
            # Large samples: neighbours among a seeded random subset of the positive events,
            # so the cost stays linear in the number of negative events.
            keep = max(4 * k, MAX_PAIRS // neg.size)
            pos = np.sort(rng.choice(pos, min(keep, pos.size), replace=False))
        cand = pos[_nearest(Z[neg], Z[pos], k)]
        left = _annihilate(neg, cand, w)
        neg = neg[left]
        k *= 4
    return w


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
    w_new = np.asarray(w, dtype=np.float64).copy()
    y = np.asarray(y)
    groups = y if by_class else np.zeros(y.size, dtype=np.int8)
    for label in np.unique(groups):
        rows = np.flatnonzero(groups == label)
        if np.any(w_new[rows] < 0):
            w_new[rows] = pair_weights(X[rows], w_new[rows], n_neighbours)
    keep = w_new > 0
    return X[keep], y[keep], w_new[keep]
