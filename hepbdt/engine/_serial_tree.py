"""A whole depth-wise tree in one compiled call, on one thread, for small samples.

The grower's depth-wise levels call half a dozen kernels each, with numpy between them:
on a few thousand events that Python costs more than the arithmetic (0.5 ms a tree of
depth 3 on 5,000 events x 2). This kernel grows the same tree as ``grower._grow_depthwise``
with exact (float64) histograms, every feature the tree may use allowed at every node,
and every level's histograms held: the same sums in the same order (each node's events
in partition order, the smaller child from its events, its sibling as parent minus it),
the same split scans (``split._scan_feature``, the first feature winning ties), the same
stable partition and node numbering. ``grower.grow_tree`` takes it where those conditions
hold and the sample is small; tests/test_engine.py checks the trees are equal field by
field.

The histograms, the scratch of the partition and the node arrays live in a
``SerialWorkspace`` that the trees of one fit share: fresh pages for each tree's
histograms (30 features x 256 bins x 3 sums is 184 kB a node, above glibc's threshold for
mapping new memory) cost more than the arithmetic of a tree on a few hundred events.
"""

from __future__ import annotations

import math

import numpy as np

from ._types import MISSING_BIN, N_BINS, N_CHANNELS, njit
from .split import _scan_feature

__all__ = ["SerialWorkspace", "grow_exact_serial"]


class SerialWorkspace:
    """Arrays by name that the serial trees of one fit reuse, each grown as a tree needs."""

    def __init__(self) -> None:
        self._flat: dict[str, np.ndarray] = {}
        self._last: tuple[tuple, tuple] | None = None

    def array(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A C-contiguous array of ``shape`` (contents undefined) held under ``name``."""
        size = math.prod(shape)
        flat = self._flat.get(name)
        if flat is None or flat.size < size or flat.dtype != dtype:
            flat = self._flat[name] = np.empty(size, dtype)
        return flat[:size].reshape(shape)

    def arrays(self, key: tuple, make) -> tuple:
        """``make(self)``'s arrays (from ``array``), made again only when ``key`` (their
        shapes and types) differs from the last call's."""
        if self._last is None or self._last[0] != key:
            self._last = (key, make(self))
        return self._last[1]


@njit
def _node_histogram(codes, partition, payload, by_event, b_is_w, start, stop, used, out):
    """out (m, N_BINS, 3) = the sums of the node's events, in partition order; the payload
    row of partition slot k is k, or with ``by_event`` the event partition[k]. With
    ``b_is_w`` (channels B and W equal event by event, as gradient boosting's are) W's sums
    are B's, copied, where the node has more events than bins to copy."""
    out[:] = 0.0
    copy_w = b_is_w and stop - start > N_BINS
    for f in range(codes.shape[0]):
        if not used[f]:
            continue
        codes_f = codes[f]
        h = out[f]
        # unsigned indices: no negative-index wraparound in the inner loop
        for k in range(np.uint64(start), np.uint64(stop)):
            i = np.uint64(partition[k])
            c = np.uint64(codes_f[i])
            r = i if by_event else k
            a, b = payload[r, 0], payload[r, 1]
            h[c, 0] += a
            h[c, 1] += b
            if not copy_w:
                h[c, 2] += payload[r, 2]
        if copy_w:
            for c in range(N_BINS):
                h[c, 2] = h[c, 1]


@njit
def _best_split(hist, sums, used, n_value_bins, params, cum, at, left, best_left):
    """(gain, feature, bin, missing_left) of one node; feature -1 when none is valid."""
    criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight, min_split_gain = params
    best_gain = -np.inf
    best_feature = -1
    best_bin = 0
    best_missing = False
    for f in range(hist.shape[0]):
        if not used[f]:
            continue
        left[:] = 0.0
        g, b, ml = _scan_feature(hist[f], n_value_bins[f], sums[0], sums[1], sums[2], criterion,
                                 reg_lambda, reg_alpha, min_child_hessian, min_child_weight,
                                 min_split_gain, cum, at, left)
        if g > best_gain:
            best_gain, best_feature, best_bin, best_missing = g, f, b, ml
            for ch in range(N_CHANNELS):  # element by element: see _level_splits
                best_left[ch] = left[ch]
    return best_gain, best_feature, best_bin, best_missing


@njit
def _partition(codes, partition, payload, start, stop, f, threshold, missing_left, move,
               scratch_idx, scratch_payload):
    """Stable partition of [start, stop) by the split: left events first, the payload's
    rows along when ``move``. Returns the mid."""
    n_left = 0
    n_right = 0
    codes_f = codes[f]
    for k in range(np.uint64(start), np.uint64(stop)):
        i = partition[k]
        c = codes_f[np.uint64(i)]
        goes_left = missing_left if c == MISSING_BIN else c <= threshold
        dst = start + n_left if goes_left else stop - 1 - n_right
        n_left += goes_left
        n_right += not goes_left
        scratch_idx[dst] = i
        if move:
            for ch in range(N_CHANNELS):
                scratch_payload[dst, ch] = payload[k, ch]
    mid = start + n_left
    for q in range(n_left):
        partition[start + q] = scratch_idx[start + q]
        if move:
            for ch in range(N_CHANNELS):
                payload[start + q, ch] = scratch_payload[start + q, ch]
    for q in range(n_right):  # the right run was written backwards
        partition[mid + q] = scratch_idx[stop - 1 - q]
        if move:
            for ch in range(N_CHANNELS):
                payload[mid + q, ch] = scratch_payload[stop - 1 - q, ch]
    return mid


@njit
def _level_splits(hists, level, sums, used, n_value_bins, params, cum, at, left_sums, best_left):
    """Each node's best split of a level: (gain, feature (-1: none), bin, missing_left, left
    child's sums, how many nodes split)."""
    k = level.size
    split_gain = np.empty(k)
    split_feature = np.full(k, -1, np.int64)
    split_bin = np.zeros(k, np.int64)
    split_missing = np.zeros(k, np.bool_)
    split_left = np.empty((k, N_CHANNELS))
    n_split = 0
    for j in range(k):
        g, f, b, ml = _best_split(hists[j], sums[level[j]], used, n_value_bins, params, cum, at,
                                  left_sums, best_left)
        if f >= 0:
            split_gain[j], split_feature[j], split_bin[j], split_missing[j] = g, f, b, ml
            # Element by element: an array assigned to a slice compiles Numba's shape-mismatch
            # error, whose message formatting took 1.9 s of the first fit's compile time.
            for ch in range(N_CHANNELS):
                split_left[j, ch] = best_left[ch]
            n_split += 1
    return split_gain, split_feature, split_bin, split_missing, split_left, n_split


@njit
def _child_histograms(codes, partition, payload, by_event, b_is_w, used, hists, positions,
                      children, start, stop, child_hists):
    """The children's histograms into child_hists[:2 n_split] (two a split node, left then
    right): the smaller from its events, its sibling as the parent's minus it."""
    n_split = positions.size
    m = codes.shape[0]
    for q in range(n_split):
        lc, rc = children[2 * q], children[2 * q + 1]
        small = 2 * q if stop[lc] - start[lc] <= stop[rc] - start[rc] else 2 * q + 1
        node = children[small]
        _node_histogram(codes, partition, payload, by_event, b_is_w, start[node], stop[node],
                        used, child_hists[small])
        sibling = child_hists[small ^ 1]
        parent = hists[positions[q]]
        for f in range(m):
            for c in range(N_BINS):
                for ch in range(N_CHANNELS):
                    sibling[f, c, ch] = parent[f, c, ch] - child_hists[small, f, c, ch]


@njit
def _root(codes, partition, payload, used, hist, sums):
    """The root's histogram into ``hist`` and its sums into ``sums`` (numpy's sum over the
    bins of its first feature, bin by bin); returns (by_event, b_is_w) for
    ``_node_histogram``: every event in the tree in event order (payload row i is event
    i's, read through the partition, so the partitions need not move it), and channels B
    and W equal event by event."""
    n_rows = partition.size
    by_event = n_rows == codes.shape[1]
    b_is_w = np.bool_(True)  # not the literal True: that would compile _node_histogram twice
    for k in range(n_rows):
        by_event = by_event and partition[k] == k
        b_is_w = b_is_w and payload[k, 1] == payload[k, 2]
    _node_histogram(codes, partition, payload, by_event, b_is_w, np.int64(0), n_rows, used, hist)
    first = np.argmax(used)
    sums[:] = 0.0
    for c in range(N_BINS):
        for ch in range(N_CHANNELS):
            sums[ch] += hist[first, c, ch]
    return by_event, b_is_w


@njit
def grow_exact_serial(codes, partition, payload, used, n_value_bins, params, max_depth,
                      hists_a, hists_b, scratch_idx, scratch_payload, feature,
                      bin_threshold, missing_left, left, right, gain, start, stop, sums):
    """Grow into the node arrays (capacity: the tree's largest node count); returns the
    node count. ``hists_a`` and ``hists_b`` (each room for the largest level's nodes) take
    the levels' histograms in turn, the root's in ``hists_a[0]``, and ``scratch_idx`` and
    ``scratch_payload`` (at least the partition's and payload's sizes) the partition's
    moves. ``partition`` is reordered in place, and so is ``payload`` unless it holds every
    event in event order."""
    n_rows = partition.size
    by_event, b_is_w = _root(codes, partition, payload, used, hists_a[0], sums[0])
    cum = np.empty((4, N_BINS))
    at = np.empty(N_BINS, np.int64)
    left_sums = np.empty(N_CHANNELS)
    best_left = np.empty(N_CHANNELS)
    # Every field of the root (the buffers hold the last tree's nodes): a root left a leaf
    # kept the last tree's root gain (628.4 on a tree of no split), threshold and direction.
    feature[0] = -1
    bin_threshold[0] = 0
    missing_left[0] = False
    gain[0] = 0.0
    left[0] = -1
    right[0] = -1
    start[0] = 0
    stop[0] = n_rows
    n_nodes = 1
    level = np.zeros(1, np.int64)
    hists = hists_a[:1]
    for depth in range(max_depth):
        k = level.size
        split_gain, split_feature, split_bin, split_missing, split_left, n_split = _level_splits(
            hists, level, sums, used, n_value_bins, params, cum, at, left_sums, best_left)
        if n_split == 0:
            break
        last = depth + 1 == max_depth
        children = np.empty(2 * n_split, np.int64)
        positions = np.empty(n_split, np.int64)
        q = 0
        for j in range(k):
            if split_feature[j] < 0:
                continue
            node = level[j]
            s, e = start[node], stop[node]
            mid = _partition(codes, partition, payload, s, e, split_feature[j], split_bin[j],
                             split_missing[j], not (last or by_event), scratch_idx,
                             scratch_payload)
            if mid == s or mid == e:  # a side without events stays a leaf (grower._apply_real_splits)
                continue
            lc, rc = n_nodes, n_nodes + 1
            n_nodes += 2
            feature[node] = split_feature[j]
            bin_threshold[node] = split_bin[j]
            missing_left[node] = split_missing[j]
            gain[node] = split_gain[j]
            left[node], right[node] = lc, rc
            for c in (lc, rc):
                feature[c] = -1
                left[c] = -1
                right[c] = -1
                bin_threshold[c] = 0
                missing_left[c] = False
                gain[c] = 0.0
            start[lc], stop[lc], start[rc], stop[rc] = s, mid, mid, e
            for ch in range(N_CHANNELS):  # element by element: see _level_splits
                sums[lc, ch] = split_left[j, ch]
                sums[rc, ch] = sums[node, ch] - split_left[j, ch]
            children[2 * q], children[2 * q + 1] = lc, rc
            positions[q] = j
            q += 1
        if last or q == 0:
            break
        children = children[:2 * q]
        into = hists_b if depth % 2 == 0 else hists_a
        _child_histograms(codes, partition, payload, by_event, b_is_w, used, hists, positions[:q],
                          children, start, stop, into)
        hists = into[:2 * q]
        level = children
    return n_nodes
