"""The one grower behind every booster: grows a depth-wise tree from binned data.

The booster fills three per-event channels (A, B and the event weight W) and picks a
criterion; the grower never knows which booster called it. One partition array of event
indices holds the tree's events, each node a ``[start, stop)`` slice; the channels move with
it ("ordered" arrays). Per level: best split of every node, a stable in-place partition of
the split nodes, then the histogram of each smaller child and its sibling by subtraction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ._types import CHANNEL_DTYPE, INDEX_DTYPE, MISSING_BIN, njit
from .histogram import build_histograms, new_histograms
from .split import SplitParams, find_best_splits

__all__ = ["GrownTree", "grow_tree", "sample_features"]


@dataclass
class GrownTree:
    """One tree as flat node arrays (root first) plus its final partition of events.

    ``start``/``stop`` index ``partition``: the events of node k are
    ``partition[start[k]:stop[k]]``. Leaves have ``feature == -1`` and ``left == right == -1``.
    """

    feature: np.ndarray  # int32
    bin_threshold: np.ndarray  # uint8: code <= bin_threshold goes left
    missing_left: np.ndarray  # bool
    left: np.ndarray  # int32, local node index
    right: np.ndarray  # int32
    gain: np.ndarray  # float64
    sum_a: np.ndarray  # float64
    sum_b: np.ndarray  # float64
    sum_w: np.ndarray  # float64
    start: np.ndarray  # int64
    stop: np.ndarray  # int64
    partition: np.ndarray  # int32 event indices

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.feature.size

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of the leaves."""
        return self.feature < 0


@njit(parallel=True)
def _partition_nodes(codes, partition, ordered_a, ordered_b, ordered_w, node_start, node_stop,
                     feature, bin_threshold, missing_left, scratch_idx, scratch_a, scratch_b,
                     scratch_w, mid):
    for j in numba.prange(node_start.size):
        s = node_start[j]
        e = node_stop[j]
        codes_f = codes[feature[j]]
        thr = bin_threshold[j]
        ml = missing_left[j]
        n_left = s
        n_right = s
        for k in range(s, e):
            i = partition[k]
            c = codes_f[i]
            goes_left = ml if c == MISSING_BIN else c <= thr
            if goes_left:
                partition[n_left] = i
                ordered_a[n_left] = ordered_a[k]
                ordered_b[n_left] = ordered_b[k]
                ordered_w[n_left] = ordered_w[k]
                n_left += 1
            else:
                scratch_idx[n_right] = i
                scratch_a[n_right] = ordered_a[k]
                scratch_b[n_right] = ordered_b[k]
                scratch_w[n_right] = ordered_w[k]
                n_right += 1
        for k in range(s, n_right):
            t = n_left + k - s
            partition[t] = scratch_idx[k]
            ordered_a[t] = scratch_a[k]
            ordered_b[t] = scratch_b[k]
            ordered_w[t] = scratch_w[k]
        mid[j] = n_left


def sample_features(allowed: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A random subset (at least one) of the allowed features, as a boolean mask."""
    if fraction >= 1.0:
        return allowed.copy()
    idx = np.flatnonzero(allowed)
    k = max(1, int(round(fraction * idx.size)))
    mask = np.zeros_like(allowed)
    mask[rng.choice(idx, k, replace=False)] = True
    return mask


def _child_sums(hist_f: np.ndarray, bin_threshold: int, missing_left: bool) -> np.ndarray:
    left = hist_f[: bin_threshold + 1].sum(axis=0)
    if missing_left:
        left = left + hist_f[MISSING_BIN]
    return left


def grow_tree(
    codes: np.ndarray,
    rows: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    w: np.ndarray,
    n_value_bins: np.ndarray,
    params: SplitParams,
    max_depth: int,
    features: np.ndarray | None = None,
    colsample_bylevel: float = 1.0,
    colsample_bynode: float = 1.0,
    rng: np.random.Generator | None = None,
) -> GrownTree:
    """Grow one tree depth-wise.

    Parameters
    ----------
    codes : (m, n) uint8 bin codes.
    rows : (n_rows,) int32 events of this tree (a subsample, or all).
    a, b, w : (n,) float32 channels A, B and event weight W of every event.
    n_value_bins : (m,) int32 value bins per feature.
    params : split criterion and constraints.
    max_depth : maximum depth (the root has depth 0).
    features : (m,) bool features this tree may use (column subsampling per tree).
    colsample_bylevel, colsample_bynode : further fractions per level and per node.
    rng : generator for the per-level and per-node feature draws.
    """
    m = codes.shape[0]
    used = np.ones(m, dtype=np.bool_) if features is None else features.astype(np.bool_)
    rng = rng if rng is not None else np.random.default_rng(0)
    partition = np.ascontiguousarray(rows, dtype=INDEX_DTYPE).copy()
    ordered = [np.ascontiguousarray(ch[partition], dtype=CHANNEL_DTYPE) for ch in (a, b, w)]
    scratch = [np.empty(partition.size, INDEX_DTYPE)] + [
        np.empty(partition.size, CHANNEL_DTYPE) for _ in range(3)
    ]
    first_used = int(np.argmax(used))

    feature, bin_thr, miss_left, left, right, gain = [-1], [0], [False], [-1], [-1], [0.0]
    start, stop = [0], [partition.size]

    hists = new_histograms(1, m)
    build_histograms(codes, partition, *ordered, np.array([0], np.int64),
                     np.array([partition.size], np.int64), np.array([0], np.int64), used, hists)
    sums = [hists[0, first_used].sum(axis=0)]
    level = [0]  # node ids at the current depth; hists[i] is level[i]'s histogram
    for depth in range(max_depth):
        k = len(level)
        level_features = sample_features(used, colsample_bylevel, rng)
        allowed = np.stack([sample_features(level_features, colsample_bynode, rng) for _ in range(k)])
        node_sums = np.array([sums[n] for n in level])
        g, f, t, ml = find_best_splits(hists, np.arange(k), node_sums, allowed, n_value_bins, params)
        to_split = np.flatnonzero(f >= 0)
        if to_split.size == 0:
            break
        nodes = [level[j] for j in to_split]
        s = np.array([start[n] for n in nodes], np.int64)
        e = np.array([stop[n] for n in nodes], np.int64)
        mid = np.empty(to_split.size, np.int64)
        _partition_nodes(codes, partition, *ordered, s, e, f[to_split], t[to_split].astype(np.uint8),
                         ml[to_split], *scratch, mid)
        next_level = []
        for q, j in enumerate(to_split):
            n = level[j]
            feature[n], bin_thr[n], miss_left[n], gain[n] = int(f[j]), int(t[j]), bool(ml[j]), float(g[j])
            left_sums = _child_sums(hists[j, f[j]], int(t[j]), bool(ml[j]))
            for child_start, child_stop, child_sums in ((s[q], mid[q], left_sums),
                                                        (mid[q], e[q], sums[n] - left_sums)):
                feature.append(-1)
                bin_thr.append(0)
                miss_left.append(False)
                left.append(-1)
                right.append(-1)
                gain.append(0.0)
                start.append(int(child_start))
                stop.append(int(child_stop))
                sums.append(child_sums)
                next_level.append(len(feature) - 1)
            left[n], right[n] = len(feature) - 2, len(feature) - 1
        if depth + 1 == max_depth:
            break
        # Smaller child from events, sibling = parent - smaller child.
        n_split = to_split.size
        child_hists = new_histograms(2 * n_split, m)
        small = np.array([2 * q if mid[q] - s[q] <= e[q] - mid[q] else 2 * q + 1 for q in range(n_split)])
        small_nodes = [next_level[c] for c in small]
        build_histograms(codes, partition, *ordered,
                         np.array([start[c] for c in small_nodes], np.int64),
                         np.array([stop[c] for c in small_nodes], np.int64),
                         small, used, child_hists)
        for q, j in enumerate(to_split):
            c = small[q]
            sibling = c ^ 1
            np.subtract(hists[j], child_hists[c], out=child_hists[sibling])
        hists = child_hists
        level = next_level

    as_array = np.asarray
    sums_arr = np.array(sums)
    return GrownTree(
        feature=as_array(feature, np.int32),
        bin_threshold=as_array(bin_thr, np.uint8),
        missing_left=as_array(miss_left, np.bool_),
        left=as_array(left, np.int32),
        right=as_array(right, np.int32),
        gain=as_array(gain, np.float64),
        sum_a=sums_arr[:, 0].copy(),
        sum_b=sums_arr[:, 1].copy(),
        sum_w=sums_arr[:, 2].copy(),
        start=as_array(start, np.int64),
        stop=as_array(stop, np.int64),
        partition=partition,
    )
