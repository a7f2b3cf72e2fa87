"""A whole depth-wise tree in one compiled call, for small samples (and a leaf-wise one:
``grow_exact_leaves_serial``, at the end).

The grower's depth-wise levels call half a dozen kernels each, with numpy between them:
on a few thousand events that Python costs more than the arithmetic (0.5 ms a tree of
depth 3 on 5,000 events x 2). This kernel grows the same tree as ``grower._grow_depthwise``
with exact (float64) histograms, every feature the tree may use allowed at every node,
and every level's histograms held: the same sums in the same order (each node's events
in partition order, the smaller child from its events, its sibling as parent minus it),
the same split scans (``split._scan_feature``, the first feature winning ties), the same
stable partition and node numbering. ``grower.grow_tree`` takes it where those conditions
hold and the sample is small; tests/test_engine.py and tests/test_serial_tree.py check
the trees are equal field by field.

The histograms, the scratch of the partition and the node arrays live in a
``SerialWorkspace`` that the trees of one fit share: fresh pages for each tree's
histograms (30 features x 256 bins x 3 sums is 184 kB a node, above glibc's threshold for
mapping new memory) cost more than the arithmetic of a tree on a few hundred events. The
histograms are a pool of buffers: a split's smaller child takes a free one, its sibling
the parent's, in place. A node of at most ``SPARSE_EVENTS`` events also keeps a bit map
of the bins its sums may occupy, and its scans, the subtraction from its parent and the
zeroing afterwards visit those bins only, not all 256 of every feature: on a few hundred
events that was most of a tree's time (breast cancer, 284 x 30, depth 5). A buffer is
zeroed bin by bin when its sparse node is done, whole when it is next taken after a dense
one (its ``dirty`` flag). The sums and gains are the same to the bit (an empty bin holds
+0.0, and adding or subtracting +0.0 changes no sum).

A small fit runs on one thread (``_util.threads``). Where the fit's other threads spin
(they wake in about a microsecond), each level's work is shared out over them inside the
call: the children's histograms feature by feature (each feature's sums in the same event
order), each thread then scanning the features it has just summed (the root's scans by
(node, feature)), the best feature of a node then chosen in feature order, and the
partitions by node (each in its own slice). The tree is the same on any number of threads.
Figures: ``grower.SERIAL_SHARED_WORK``.

Every array the kernel takes is ``borrowed`` (its views count no references), and the
scans' scratch comes with the buffers, a row a thread: Numba counts a reference, with an
atomic add, for each array a compiled function takes and each view it makes, and a tree
makes thousands (one-thread hastie fit, 6,000 x 10: 22 % of the time in the counts, then
2 %; the fit 0.173 -> 0.154 s; design notes, "Borrowed arrays").
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ._types import MISSING_BIN, N_BINS, N_CHANNELS, borrowed, njit, serial_twin
from .split import _best_cut, _gains, _missing_sums, _scan_feature, gain_floor, node_score

__all__ = ["SerialWorkspace", "grow_exact_leaves_serial", "grow_exact_serial",
           "grow_exact_serial_1", "waiting_leaves"]


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


SPARSE_EVENTS = 48  # nodes of at most this many events keep a map of their occupied bins
_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)


def _de_bruijn_table() -> np.ndarray:
    """Bit index of each power of two, by the top six bits of its product with _DE_BRUIJN."""
    table = np.full(64, -1, np.int64)
    for i in range(64):
        table[((1 << i) * int(_DE_BRUIJN) % (1 << 64)) >> 58] = i
    return table


_BIT_INDEX = _de_bruijn_table()


@njit
def _lowest_bit(x):
    """Index of the lowest set bit of a non-zero uint64."""
    return _BIT_INDEX[((x & (~x + np.uint64(1))) * _DE_BRUIJN) >> np.uint64(58)]


@njit
def _rows_histogram(codes, hists, partition, payload, by_event, copy_w, start, stop):
    """Add the node's events, in partition order, to the histograms ``hists`` (N_BINS, 3)
    of the features whose codes are ``codes`` (tuples of one, two or four): each event's
    channels are read once for all of them, and the features' sums are independent chains
    of adds (four features a pass: 4,000 events x 4 in 15 us, where one feature a pass took
    21). The payload row of partition slot k is k, or with ``by_event`` the event
    partition[k]. With ``copy_w`` channel W is left for the caller to copy from B."""
    # unsigned indices: no negative-index wraparound in the inner loop
    for k in range(np.uint64(start), np.uint64(stop)):
        i = np.uint64(partition[k])
        r = i if by_event else k
        a, b, w = payload[r, 0], payload[r, 1], payload[r, 2]
        for g in range(len(codes)):
            c = np.uint64(codes[g][i])
            h = hists[g]
            h[c, 0] += a
            h[c, 1] += b
            if not copy_w:
                h[c, 2] += w


@njit
def _features_histogram(codes, feats, partition, payload, by_event, copy_w, start, stop, hist,
                        bits, sparse):
    """Add the node's events, in partition order, to ``hist[f]`` (N_BINS, 3), zeros, of each
    feature f of ``feats``: with ``sparse`` one feature after another, the occupied bins
    marked in ``bits[f]`` (4,); else four features a pass (``_rows_histogram``). With
    ``copy_w`` (channels B and W equal event by event, as gradient boosting's are, and more
    events than bins to copy) W's sums are B's, copied. Each feature's sums are added in
    the same order either way."""
    n = feats.size
    if sparse:
        for g in range(n):
            f = feats[g]
            _add_marking(codes[f], partition, payload, by_event, start, stop, hist[f], bits[f])
        return
    g = 0
    while g + 4 <= n:
        f0, f1, f2, f3 = feats[g], feats[g + 1], feats[g + 2], feats[g + 3]
        _rows_histogram((codes[f0], codes[f1], codes[f2], codes[f3]),
                        (hist[f0], hist[f1], hist[f2], hist[f3]), partition, payload, by_event,
                        copy_w, start, stop)
        g += 4
    if g + 2 <= n:
        f0, f1 = feats[g], feats[g + 1]
        _rows_histogram((codes[f0], codes[f1]), (hist[f0], hist[f1]), partition, payload,
                        by_event, copy_w, start, stop)
        g += 2
    if g < n:
        f0 = feats[g]
        _rows_histogram((codes[f0],), (hist[f0],), partition, payload, by_event, copy_w, start,
                        stop)
    if copy_w:
        for g in range(n):
            h = hist[feats[g]]
            for c in range(N_BINS):
                h[c, 2] = h[c, 1]


@njit
def _share(feats, t, n_shares):
    """Share t of ``feats`` dealt out in ``n_shares`` runs of (nearly) equal length."""
    n = feats.size
    return feats[t * n // n_shares:(t + 1) * n // n_shares]


@njit(parallel=True)
def _root_histogram_shared(codes, feats, partition, payload, by_event, copy_w, n_rows, out, bits,
                           sparse, n_threads):
    """``_features_histogram`` of the root, the features dealt out over the threads."""
    n_shares = min(n_threads, feats.size)
    for t in prange(n_shares):
        _features_histogram(codes, _share(feats, t, n_shares), partition, payload, by_event,
                            copy_w, 0, n_rows, out, bits, sparse)


@njit
def _add_marking(codes_f, partition, payload, by_event, start, stop, h, bits):
    """One feature's sums of a sparse node (every channel added), its bins marked in bits (4,)."""
    bits[:] = 0
    for k in range(np.uint64(start), np.uint64(stop)):
        i = np.uint64(partition[k])
        c = np.uint64(codes_f[i])
        r = i if by_event else k
        for ch in range(N_CHANNELS):
            h[c, ch] += payload[r, ch]
        bits[c >> np.uint64(6)] |= np.uint64(1) << (c & np.uint64(63))


@njit
def _occupied(h, bits_f):
    """bits_f (4,) = the bins of one feature's ``h`` that hold a non-zero sum."""
    bits_f[:] = 0
    for c in range(N_BINS):
        if h[c, 0] != 0.0 or h[c, 1] != 0.0 or h[c, 2] != 0.0:
            bits_f[c >> 6] |= np.uint64(1) << np.uint64(c & 63)


@njit
def _clear(hist, used, bits):
    """Zero the bins of a sparse node's histogram that ``bits`` marks."""
    for f in range(hist.shape[0]):
        if not used[f]:
            continue
        for word in range(4):
            x = bits[f, word]
            while x:
                c = word * 64 + _lowest_bit(x)
                x &= x - np.uint64(1)
                for ch in range(N_CHANNELS):
                    hist[f, c, ch] = 0.0


@njit
def _subtract(parent, small, bits_f, sparse):
    """One feature's parent -= small: over the bins marked in ``bits_f`` when ``sparse``
    (elsewhere small holds +0.0, and x - 0.0 is x), else over every bin."""
    if sparse:
        for word in range(4):
            x = bits_f[word]
            while x:
                c = word * 64 + _lowest_bit(x)
                x &= x - np.uint64(1)
                for ch in range(N_CHANNELS):
                    parent[c, ch] -= small[c, ch]
    else:
        for c in range(N_BINS):
            for ch in range(N_CHANNELS):
                parent[c, ch] -= small[c, ch]


@njit
def _scan_sparse(h, bits, n_value_bins, sum_a, sum_b, sum_w, criterion, reg_lambda, reg_alpha,
                 min_child_hessian, min_child_weight, min_split_gain, cum, at, out_left):
    """``split._scan_feature`` over the bins marked in ``bits`` (4,), a superset of the
    bins holding a non-zero sum: the same cuts (bin 0 and the non-zero bins), the same
    cumulative sums (an empty bin adds +0.0, which changes no bit), so the same result."""
    parent = node_score(criterion, sum_a, sum_b, reg_lambda, reg_alpha)
    floor = gain_floor(parent, min_split_gain)
    ma, mb, mw, has_missing = _missing_sums(h)
    best_gain = -np.inf
    best_bin = -1
    best_missing_left = False
    for direction in range(2):
        missing_left = direction == 1
        if missing_left and not has_missing:
            break
        la, lb, lw = (ma, mb, mw) if missing_left else (0.0, 0.0, 0.0)
        last = n_value_bins if (has_missing and not missing_left) else n_value_bins - 1
        n_cuts = np.int64(0)
        if last > 0:  # bin 0 is always a cut
            la += h[0, 0]
            lb += h[0, 1]
            lw += h[0, 2]
            cum[0, 0] = la
            cum[1, 0] = lb
            cum[2, 0] = lw
            at[0] = 0
            n_cuts = np.int64(1)
        for word in range(4):
            x = bits[word] & ~np.uint64(1) if word == 0 else bits[word]
            while x:
                bin_idx = word * 64 + _lowest_bit(x)
                x &= x - np.uint64(1)
                if bin_idx >= last:
                    break
                a, b, w = h[bin_idx, 0], h[bin_idx, 1], h[bin_idx, 2]
                if a != 0.0 or b != 0.0 or w != 0.0:
                    la += a
                    lb += b
                    lw += w
                    cum[0, n_cuts] = la
                    cum[1, n_cuts] = lb
                    cum[2, n_cuts] = lw
                    at[n_cuts] = bin_idx
                    n_cuts += 1
        _gains(criterion, cum, n_cuts, sum_a, sum_b, sum_w, parent, reg_lambda, reg_alpha,
               min_child_hessian, min_child_weight)
        best_gain, best_bin, best_missing_left = _best_cut(
            cum, at, n_cuts, missing_left, floor, best_gain, best_bin,
            best_missing_left, out_left)
    return best_gain, best_bin, best_missing_left


@njit
def _scan(h, bits_f, sparse, sums, n_value_bins, params, cum, at, left):
    """(gain, bin, missing_left) of one feature of one node; its left sums in ``left``.
    A node whose weight W is below two children's ``min_child_weight`` has no valid cut
    and is not scanned (the scan's own answer: -inf, -1, False)."""
    criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight, min_split_gain = params
    left[:] = 0.0
    if sums[2] < UNSPLITTABLE_SHARE * min_child_weight:
        return -np.inf, np.int64(-1), False
    if sparse:
        return _scan_sparse(h, bits_f, n_value_bins, sums[0], sums[1], sums[2], criterion,
                            reg_lambda, reg_alpha, min_child_hessian, min_child_weight,
                            min_split_gain, cum, at, left)
    return _scan_feature(h, n_value_bins, sums[0], sums[1], sums[2], criterion, reg_lambda,
                         reg_alpha, min_child_hessian, min_child_weight, min_split_gain, cum, at,
                         left)


# A cut is valid only where both sides' W are at least min_child_weight: for a W left and
# its node's W sum S, the right side fl(S - left) >= min_child_weight needs S >= (2 - 2^-52)
# min_child_weight, so below this share of min_child_weight no cut of the node is valid.
UNSPLITTABLE_SHARE = 1.999999


@njit
def _scratch(scan, t):
    """Thread share t's scratch of the scans (``scan``: the tree's (sums, bins) scratch,
    a row a share): (cumulative sums (4, N_BINS), bins (N_BINS,), left sums)."""
    scan_sums, scan_bins = scan
    return scan_sums[t, :4], scan_bins[t], scan_sums[t, 4, :N_CHANNELS]


@njit
def _scan_task(t, n_tasks, pool, bits, buf, level, start, stop, sums, used, n_value_bins, params,
               sparse_events, scan, gains, bins, missing, lefts):
    """The (node, feature) scans t, t + n_tasks, ... of a level: node j's feature f into
    gains[j, f] (-inf for a feature not used), bins, missing, lefts[j, f]."""
    m = used.size
    cum, at, left = _scratch(scan, t)
    for job in range(t, level.size * m, n_tasks):
        j, f = job // m, job % m
        gains[j, f] = -np.inf
        if not used[f]:
            continue
        node = level[j]
        b = buf[node]
        g, cut, ml = _scan(pool[b, f], bits[b, f], stop[node] - start[node] <= sparse_events,
                           sums[node], n_value_bins[f], params, cum, at, left)
        gains[j, f], bins[j, f], missing[j, f] = g, cut, ml
        for ch in range(N_CHANNELS):
            lefts[j, f, ch] = left[ch]


@njit(parallel=True)
def _level_scans_shared(n_threads, pool, bits, buf, level, start, stop, sums, used, n_value_bins,
                        params, sparse_events, scan, gains, bins, missing, lefts):
    """``_scan_task`` of every task, the tasks over ``n_threads`` threads."""
    n_tasks = min(level.size * used.size, n_threads)
    for t in prange(n_tasks):
        _scan_task(t, n_tasks, pool, bits, buf, level, start, stop, sums, used, n_value_bins,
                   params, sparse_events, scan, gains, bins, missing, lefts)


@njit
def _partition(codes, partition, payload, start, stop, f, threshold, missing_left, move,
               scratch_idx, scratch_payload):
    """Stable partition of [start, stop) by the split: left events first, the payload's
    rows along when ``move``. Returns the mid. Branch-free (the side is a coin flip to the
    branch predictor): each event is written to both runs' scratch (``scratch_idx[0]`` the
    left run's, ``[1]`` the right's, from ``start``) and only its side's count moves on."""
    to_left, to_right = scratch_idx[0], scratch_idx[1]
    n_left = np.uint64(0)
    n_right = np.uint64(0)
    base = np.uint64(start)
    codes_f = codes[f]
    for k in range(np.uint64(start), np.uint64(stop)):
        i = partition[k]
        c = codes_f[np.uint64(i)]
        goes_left = np.uint64((c <= threshold) & (c != MISSING_BIN)) | np.uint64(
            (c == MISSING_BIN) & missing_left)
        to_left[base + n_left] = i
        to_right[base + n_right] = i
        if move:
            for ch in range(N_CHANNELS):
                x = payload[k, ch]
                scratch_payload[0, base + n_left, ch] = x
                scratch_payload[1, base + n_right, ch] = x
        n_left += goes_left
        n_right += np.uint64(1) - goes_left
    mid = base + n_left
    for q in range(n_left):
        partition[base + q] = to_left[base + q]
    for q in range(n_right):
        partition[mid + q] = to_right[base + q]
    if move:
        for q in range(n_left):
            for ch in range(N_CHANNELS):
                payload[base + q, ch] = scratch_payload[0, base + q, ch]
        for q in range(n_right):
            for ch in range(N_CHANNELS):
                payload[mid + q, ch] = scratch_payload[1, base + q, ch]
    return np.int64(mid)


@njit
def _split_node(j, codes, partition, payload, level, start, stop, split_feature, split_bin,
                split_missing, move, scratch_idx, scratch_payload, mids):
    """mids[j] = the mid of node level[j]'s partition by its split (none: nothing)."""
    if split_feature[j] >= 0:
        node = level[j]
        mids[j] = _partition(codes, partition, payload, start[node], stop[node], split_feature[j],
                             split_bin[j], split_missing[j], move, scratch_idx, scratch_payload)


@njit(parallel=True)
def _level_partitions_shared(codes, partition, payload, level, start, stop, split_feature,
                             split_bin, split_missing, move, scratch_idx, scratch_payload, mids):
    """``_split_node`` of every node of the level, the nodes dealt out over the threads."""
    for j in prange(level.size):
        _split_node(j, codes, partition, payload, level, start, stop, split_feature, split_bin,
                    split_missing, move, scratch_idx, scratch_payload, mids)


@njit
def _level_partitions(codes, partition, payload, level, start, stop, split_feature, split_bin,
                      split_missing, move, scratch_idx, scratch_payload, n_threads):
    """The stable partitions of a level's splitting nodes (each in its own slice of the
    partition and the scratch) over ``n_threads`` threads; returns each node's mid."""
    mids = np.zeros(level.size, np.int64)
    if n_threads > 1 and level.size > 1:
        _level_partitions_shared(codes, partition, payload, level, start, stop, split_feature,
                                 split_bin, split_missing, move, scratch_idx, scratch_payload,
                                 mids)
        return mids
    for j in range(level.size):
        _split_node(j, codes, partition, payload, level, start, stop, split_feature, split_bin,
                    split_missing, move, scratch_idx, scratch_payload, mids)
    return mids


@njit
def _root(codes, feats, partition, payload, hist, bits, sparse, sums, n_threads):
    """The root's histogram of the features ``feats`` into ``hist`` and its sums into
    ``sums`` (numpy's sum over the bins of its first feature, bin by bin); returns
    (by_event, b_is_w) for ``_features_histogram``: every event in the tree in event
    order (payload row i is event i's, read through the partition, so the partitions need
    not move it), and channels B and W equal event by event."""
    n_rows = partition.size
    by_event = n_rows == codes.shape[1]
    b_is_w = np.bool_(True)  # not the literal True: that would compile the histograms twice
    for k in range(n_rows):
        by_event = by_event and partition[k] == k
        b_is_w = b_is_w and payload[k, 1] == payload[k, 2]
    copy_w = b_is_w and n_rows > N_BINS
    if n_threads > 1:
        _root_histogram_shared(codes, feats, partition, payload, by_event, copy_w, n_rows, hist,
                               bits, sparse, n_threads)
    else:
        _features_histogram(codes, feats, partition, payload, by_event, copy_w, 0, n_rows, hist,
                            bits, sparse)
    first = feats[0] if feats.size else 0
    sums[:] = 0.0
    for c in range(N_BINS):
        for ch in range(N_CHANNELS):
            sums[ch] += hist[first, c, ch]
    return by_event, b_is_w


@njit
def _best_split(row, node, hist, hist_bits, sparse, feats, sums, n_value_bins, params, cum, at,
                left, gain, feature, cut, missing, lefts):
    """Node ``node``'s best split from its histograms ``hist`` (m, N_BINS, 3) over the
    features ``feats`` (over the bins ``hist_bits`` marks when ``sparse``), of equal gains
    the first feature's, into row ``row`` of ``gain``, ``feature`` (-1: none), ``cut``,
    ``missing`` and ``lefts`` (the left child's sums); whether there is one."""
    best = -np.inf
    feature[row] = -1
    for g in range(feats.size):
        f = feats[g]
        x, c, ml = _scan(hist[f], hist_bits[f], sparse, sums[node], n_value_bins[f], params, cum,
                         at, left)
        if x > best:
            best, feature[row], cut[row], missing[row] = x, f, c, ml
            # Element by element: an array assigned to a slice compiles Numba's shape-mismatch
            # error, whose message formatting took 1.9 s of the first fit's compile time.
            for ch in range(N_CHANNELS):
                lefts[row, ch] = left[ch]
    gain[row] = best
    return feature[row] >= 0


@njit
def _split_arrays(k):
    """A level's choices for ``k`` nodes: gain, feature (-1: none), bin, missing_left, left
    child's sums."""
    return (np.empty(k), np.full(k, -1, np.int64), np.zeros(k, np.int64), np.zeros(k, np.bool_),
            np.empty((k, N_CHANNELS)))


@njit
def _level_splits(pool, bits, buf, level, start, stop, sums, used, feats, n_value_bins, params,
                  sparse_events, scan, n_threads):
    """Each node's best split of a level: (gain, feature (-1: none), bin, missing_left, left
    child's sums, how many nodes split); of equal gains the first feature's. On more than
    one thread the scans are shared out by (node, feature), the choices then made from
    their tables."""
    if n_threads > 1:
        gains, bins, missing, lefts = _scan_tables(level.size, used.size)
        _level_scans_shared(n_threads, pool, bits, buf, level, start, stop, sums, used,
                            n_value_bins, params, sparse_events, scan, gains, bins, missing,
                            lefts)
        return _picked_splits(gains, bins, missing, lefts)
    # no (node, feature) tables: on one thread their allocations cost ~5 % of a small tree
    split_gain, split_feature, split_bin, split_missing, split_left = _split_arrays(level.size)
    cum, at, left = _scratch(scan, 0)
    for j in range(level.size):
        node = level[j]
        b = buf[node]
        _best_split(j, node, pool[b], bits[b], stop[node] - start[node] <= sparse_events, feats,
                    sums, n_value_bins, params, cum, at, left, split_gain, split_feature,
                    split_bin, split_missing, split_left)
    return (split_gain, split_feature, split_bin, split_missing, split_left,
            np.count_nonzero(split_feature >= 0))


@njit
def _scan_tables(k, m):
    """The (node, feature) tables of a level's shared scans: gains (-inf: not scanned), cut
    bins, missing sides and left sums."""
    return (np.full((k, m), -np.inf), np.zeros((k, m), np.int64), np.zeros((k, m), np.bool_),
            np.empty((k, m, N_CHANNELS)))


@njit
def _picked_splits(gains, bins, missing, lefts):
    """``_level_splits``'s result from a level's scans' tables (``_level_scans_shared``,
    ``_level_histograms_shared``): each node's best split, of equal gains the first
    feature's."""
    k, m = gains.shape
    split_gain, split_feature, split_bin, split_missing, split_left = _split_arrays(k)
    for j in range(k):
        best = -np.inf
        for f in range(m):
            if gains[j, f] > best:
                best = gains[j, f]
                split_feature[j] = f
        f = split_feature[j]
        split_gain[j] = best
        if f >= 0:
            split_bin[j], split_missing[j] = bins[j, f], missing[j, f]
            for ch in range(N_CHANNELS):
                split_left[j, ch] = lefts[j, f, ch]
    return (split_gain, split_feature, split_bin, split_missing, split_left,
            np.count_nonzero(split_feature >= 0))


@njit
def _release(pool, bits, dirty, free, n_free, buf, node, start, stop, used, sparse_events):
    """Put the node's buffer back, its bins zeroed if it is sparse, else marked dirty (the
    next node to take it zeroes it whole, as a fresh buffer); returns the free count."""
    b = buf[node]
    if b < 0:
        return n_free
    if stop[node] - start[node] <= sparse_events:
        _clear(pool[b], used, bits[b])
    else:
        dirty[b] = True
    buf[node] = -1
    free[n_free] = b
    return n_free + 1


@njit
def _take(pool, dirty, free, n_free):
    """A free buffer, zeroed if dirty: (its index, the free count)."""
    n_free -= 1
    b = free[n_free]
    if dirty[b]:
        pool[b][:] = 0.0
        dirty[b] = False
    return b, n_free


@njit
def _children_jobs(pool, dirty, free, n_free, buf, parents, children, start, stop,
                   sparse_events):
    """Each split's smaller child takes a free buffer (zeroed if dirty), its sibling the
    parent's: the jobs of ``_level_histograms`` (one row a split: small child's buffer,
    parent's buffer, the small child's start and stop, whether the small child, the large
    one and the parent are sparse). Returns (jobs, the free count)."""
    q = parents.size
    jobs = np.empty((q, 7), np.int64)
    for p in range(q):
        parent, lc, rc = parents[p], children[2 * p], children[2 * p + 1]
        small, large = (lc, rc) if stop[lc] - start[lc] <= stop[rc] - start[rc] else (rc, lc)
        n_free -= 1
        s = free[n_free]
        jobs[p, 0], jobs[p, 1] = s, buf[parent]
        jobs[p, 2], jobs[p, 3] = start[small], stop[small]
        jobs[p, 4] = stop[small] - start[small] <= sparse_events
        jobs[p, 5] = stop[large] - start[large] <= sparse_events
        jobs[p, 6] = stop[parent] - start[parent] <= sparse_events
        if dirty[s]:
            pool[s][:] = 0.0
            dirty[s] = False
        buf[small], buf[large], buf[parent] = s, buf[parent], -1
    return jobs, n_free


@njit
def _children_features(codes, feats, partition, payload, by_event, b_is_w, pool, bits, jobs):
    """The features ``feats`` of the children's histograms of a level's splits
    (``_children_jobs``): the smaller child's from its events in its (zeroed) buffer, its
    sibling's as the parent's minus it in the parent's, and the sibling's occupied bins (a
    superset) where it is sparse. (A feature the tree does not use is left as it is: zeros.)"""
    for p in range(jobs.shape[0]):
        s, parent_buf, lo, hi = jobs[p, 0], jobs[p, 1], jobs[p, 2], jobs[p, 3]
        small_sparse = jobs[p, 4] != 0
        _features_histogram(codes, feats, partition, payload, by_event,
                            b_is_w and hi - lo > N_BINS, lo, hi, pool[s], bits[s], small_sparse)
        for g in range(feats.size):
            f = feats[g]
            _subtract(pool[parent_buf, f], pool[s, f], bits[s, f], small_sparse)
            if jobs[p, 5]:  # the large child is sparse: its occupied bins
                if jobs[p, 6]:
                    for word in range(4):
                        bits[parent_buf, f, word] |= bits[s, f, word]
                else:
                    _occupied(pool[parent_buf, f], bits[parent_buf, f])


@njit
def _children_features_scans(t, codes, feats, partition, payload, by_event, b_is_w, pool, bits,
                             jobs, level, buf, start, stop, sums, n_value_bins, params,
                             sparse_events, scan, gains, bins, missing, lefts):
    """``_children_features`` of the features ``feats``, then the scans of those features of
    every node of ``level`` (the children) into the tables (``_scan_task``'s), in share
    t's scratch."""
    _children_features(codes, feats, partition, payload, by_event, b_is_w, pool, bits, jobs)
    cum, at, left = _scratch(scan, t)
    for j in range(level.size):
        node = level[j]
        b = buf[node]
        sparse = stop[node] - start[node] <= sparse_events
        for g in range(feats.size):
            f = feats[g]
            gains[j, f], bins[j, f], missing[j, f] = _scan(
                pool[b, f], bits[b, f], sparse, sums[node], n_value_bins[f], params, cum, at, left)
            for ch in range(N_CHANNELS):
                lefts[j, f, ch] = left[ch]


@njit(parallel=True)
def _level_histograms_shared(codes, feats, partition, payload, by_event, b_is_w, pool, bits, jobs,
                             level, buf, start, stop, sums, n_value_bins, params, sparse_events,
                             scan, n_threads, gains, bins, missing, lefts):
    """``_children_features_scans``, the features dealt out over the threads: each thread
    scans the histograms it has just made, and a level costs one launch, not two."""
    n_shares = min(n_threads, feats.size)
    for t in prange(n_shares):
        _children_features_scans(t, codes, _share(feats, t, n_shares), partition, payload,
                                 by_event, b_is_w, pool, bits, jobs, level, buf, start, stop,
                                 sums, n_value_bins, params, sparse_events, scan, gains, bins,
                                 missing, lefts)


@njit
def _as_leaf(c, feature, bin_threshold, missing_left, left, right, gain):
    """Node c's fields as a leaf's."""
    feature[c] = -1
    bin_threshold[c] = 0
    missing_left[c] = False
    gain[c] = 0.0
    left[c] = -1
    right[c] = -1


@njit
def grow_exact_serial(codes, partition, payload, used, n_value_bins, params, max_depth, pool,
                      bits, dirty, free, buf, scratch_idx, scratch_payload, scan_sums, scan_bins,
                      feature, bin_threshold, missing_left, left, right, gain, start, stop, sums,
                      sparse_events, n_threads):
    """Grow into the node arrays (capacity: the tree's largest node count); returns the
    node count. ``pool`` holds the level's histograms (the module docstring), zeros where
    ``dirty`` is off, before and after; ``bits`` the occupied bins of the buffers of nodes
    of at most ``sparse_events`` events; ``free`` and ``buf`` (a node's buffer) the
    bookkeeping; ``scratch_idx`` and ``scratch_payload`` the partition's moves, ``scan_sums``
    (threads, 5, N_BINS) and ``scan_bins`` (threads, N_BINS) the scans'. ``partition`` is
    reordered in place, and so is ``payload`` unless it holds every event in order.
    ``n_threads`` > 1: each level's scans and histograms are shared out over that many
    threads (at most a row of the scans' scratch each; the caller sets Numba's count), with
    the same sums and choices."""
    codes, partition, payload, used, n_value_bins = (
        borrowed(codes), borrowed(partition), borrowed(payload), borrowed(used),
        borrowed(n_value_bins))
    pool, bits, dirty, free, buf = (borrowed(pool), borrowed(bits), borrowed(dirty),
                                    borrowed(free), borrowed(buf))
    scratch_idx, scratch_payload = borrowed(scratch_idx), borrowed(scratch_payload)
    scan = (borrowed(scan_sums), borrowed(scan_bins))
    n_threads = min(n_threads, scan_bins.shape[0])  # a row of the scans' scratch a thread
    feature, bin_threshold, missing_left, left, right, gain = (
        borrowed(feature), borrowed(bin_threshold), borrowed(missing_left), borrowed(left),
        borrowed(right), borrowed(gain))
    start, stop, sums = borrowed(start), borrowed(stop), borrowed(sums)
    n_rows = partition.size
    n_free = pool.shape[0]
    for i in range(n_free):  # taken from the end: buffer 0 first (a loop: an array
        free[i] = n_free - 1 - i  # assigned to a slice compiles numpy's shape error)
    buf[0], n_free = _take(pool, dirty, free, n_free)
    feats = np.nonzero(used)[0]
    by_event, b_is_w = _root(codes, feats, partition, payload, pool[buf[0]], bits[buf[0]],
                             n_rows <= sparse_events, sums[0], n_threads)
    # Every field of the root (the buffers hold the last tree's nodes): a root left a leaf
    # kept the last tree's root gain (628.4 on a tree of no split), threshold and direction.
    _as_leaf(0, feature, bin_threshold, missing_left, left, right, gain)
    start[0] = 0
    stop[0] = n_rows
    n_nodes = 1
    level = np.zeros(1, np.int64)
    scanned = False  # the level's scans came with its histograms, in these tables:
    gains, bins, missing, lefts = _scan_tables(0, used.size)
    for depth in range(max_depth):
        k = level.size
        if scanned:
            split_gain, split_feature, split_bin, split_missing, split_left, n_split = (
                _picked_splits(gains, bins, missing, lefts))
        else:
            split_gain, split_feature, split_bin, split_missing, split_left, n_split = (
                _level_splits(pool, bits, buf, level, start, stop, sums, used, feats,
                              n_value_bins, params, sparse_events, scan, n_threads))
        if n_split == 0:
            break
        last = depth + 1 == max_depth
        children = np.empty(2 * n_split, np.int64)
        parents = np.empty(n_split, np.int64)
        mids = _level_partitions(codes, partition, payload, level, start, stop, split_feature,
                                 split_bin, split_missing, not (last or by_event), scratch_idx,
                                 scratch_payload, n_threads)
        q = 0
        for j in range(k):
            node = level[j]
            if split_feature[j] < 0:
                n_free = _release(pool, bits, dirty, free, n_free, buf, node, start, stop, used,
                                  sparse_events)
                continue
            s, e, mid = start[node], stop[node], mids[j]
            if mid == s or mid == e:  # a side without events stays a leaf (grower._apply_real_splits)
                n_free = _release(pool, bits, dirty, free, n_free, buf, node, start, stop, used,
                                  sparse_events)
                continue
            lc, rc = n_nodes, n_nodes + 1
            n_nodes += 2
            feature[node] = split_feature[j]
            bin_threshold[node] = split_bin[j]
            missing_left[node] = split_missing[j]
            gain[node] = split_gain[j]
            left[node], right[node] = lc, rc
            for c in (lc, rc):
                _as_leaf(c, feature, bin_threshold, missing_left, left, right, gain)
                buf[c] = -1
            start[lc], stop[lc], start[rc], stop[rc] = s, mid, mid, e
            for ch in range(N_CHANNELS):  # element by element: see _level_splits
                sums[lc, ch] = split_left[j, ch]
                sums[rc, ch] = sums[node, ch] - split_left[j, ch]
            children[2 * q], children[2 * q + 1] = lc, rc
            parents[q] = node
            q += 1
        if last or q == 0:
            break
        # every node left a leaf has given its buffer back: one for each smaller child
        jobs, n_free = _children_jobs(pool, dirty, free, n_free, buf, parents[:q], children,
                                      start, stop, sparse_events)
        level = children[:2 * q]
        if n_threads > 1:
            gains, bins, missing, lefts = _scan_tables(level.size, used.size)
            _level_histograms_shared(codes, feats, partition, payload, by_event, b_is_w, pool,
                                     bits, jobs, level, buf, start, stop, sums, n_value_bins,
                                     params, sparse_events, scan, n_threads, gains, bins,
                                     missing, lefts)
            scanned = True
        else:
            _children_features(codes, feats, partition, payload, by_event, b_is_w, pool, bits,
                               jobs)
    for j in range(level.size):  # the last level's buffers, zeroed for the next tree
        n_free = _release(pool, bits, dirty, free, n_free, buf, level[j], start, stop, used,
                          sparse_events)
    return n_nodes


@njit
def _not_on_one_thread(*args):
    """Stands in for the shared kernels in ``grow_exact_serial_1`` (never called there)."""
    raise AssertionError("grow_exact_serial_1 runs on one thread (n_threads = 1)")


def _one_thread_tree():
    """``grow_exact_serial`` whose level helpers call no shared kernel (n_threads must be
    1): the tree of every fit whose idle threads sleep (hepbdt's default), which so compiles
    neither the parallel kernels nor their tables (with them the tree's compile took 28.7 s
    of a first small fit's 48.5 s with an empty cache; without, 17.8 of 36.5:
    ``benchmarks/bench_coldstart.py --kernels``)."""
    stubs = {name: _not_on_one_thread for name in (
        "_root_histogram_shared", "_level_scans_shared", "_level_partitions_shared",
        "_level_histograms_shared")}
    return serial_twin(grow_exact_serial, _root=_root_1,
                       _level_splits=serial_twin(_level_splits, **stubs),
                       _level_partitions=serial_twin(_level_partitions, **stubs),
                       _level_histograms_shared=_not_on_one_thread)


_root_1 = serial_twin(_root, _root_histogram_shared=_not_on_one_thread)
grow_exact_serial_1 = _one_thread_tree()


@njit
def waiting_leaves(capacity):
    """A leaf-wise tree's state by node: a waiting leaf's best split (gain, feature, bin,
    missing side, left sums), whether it waits, its depth and its histogram's slot (-1:
    none)."""
    return (np.zeros(capacity), np.full(capacity, -1, np.int32), np.zeros(capacity, np.int32),
            np.zeros(capacity, np.bool_), np.zeros((capacity, N_CHANNELS)),
            np.zeros(capacity, np.bool_), np.zeros(capacity, np.int64),
            np.full(capacity, -1, np.int64))


@njit
def _best_waiting(waiting, w_gain, n_nodes):
    """The waiting leaf of the largest gain (of equal ones, the lowest id); -1 if none."""
    best = -1
    for k in range(n_nodes):
        if waiting[k] and (best < 0 or w_gain[k] > w_gain[best]):
            best = k
    return best


@njit
def _leaf_split(k, hist, hist_bits, sparse, feats, sums, n_value_bins, params, scan, waiting,
                w_gain, w_feature, w_bin, w_missing, w_left):
    """Leaf k's best split (``_best_split``): it waits with it, and True; False if none."""
    cum, at, left = _scratch(scan, 0)
    waiting[k] = _best_split(k, k, hist, hist_bits, sparse, feats, sums, n_value_bins, params,
                             cum, at, left, w_gain, w_feature, w_bin, w_missing, w_left)
    return waiting[k]


@njit
def _give_back(k, slot, free, n_free, pool, bits, dirty, used, start, stop, sparse_events):
    """Put leaf k's histogram buffer back (``_release``'s zeroing); the free count."""
    b = slot[k]
    slot[k] = -1
    if stop[k] - start[k] <= sparse_events:
        _clear(pool[b], used, bits[b])
    else:
        dirty[b] = True
    free[n_free] = b
    return n_free + 1


@njit
def _exact_leaves(codes, partition, payload, used, n_value_bins, params, max_leaves,
                  depth_limit, pool, bits, dirty, scratch_idx, scratch_payload, scan_sums,
                  scan_bins, feature, bin_threshold, missing_left, left, right, gain, start, stop,
                  sums, sparse_events):
    """``grower._grow_leafwise`` on exact histograms in one call, on one thread: the same
    best-first order (the largest gain first, of equal ones the lowest node id), the same
    partitions, histograms (the smaller child's from its events, the larger's as the parent's
    minus it), searches and node numbering into the node arrays (capacity 2 max_leaves - 1),
    with a buffer of ``pool`` for every leaf, kept as ``grow_exact_serial`` keeps its own
    (``bits``, ``dirty``; zeros before and after). Returns the node count. (Its per-split Python
    took 2.4 ms a tree of 31 leaves on hastie's 6,000 x 10.) Compiled as
    ``grow_exact_leaves_serial``, whose root calls no shared kernel."""
    codes, partition, payload, used, n_value_bins = (
        borrowed(codes), borrowed(partition), borrowed(payload), borrowed(used),
        borrowed(n_value_bins))
    pool, bits, dirty = borrowed(pool), borrowed(bits), borrowed(dirty)
    scratch_idx, scratch_payload = borrowed(scratch_idx), borrowed(scratch_payload)
    scan = (borrowed(scan_sums), borrowed(scan_bins))
    feature, bin_threshold, missing_left, left, right, gain = (
        borrowed(feature), borrowed(bin_threshold), borrowed(missing_left), borrowed(left),
        borrowed(right), borrowed(gain))
    start, stop, sums = borrowed(start), borrowed(stop), borrowed(sums)
    w_gain, w_feature, w_bin, w_missing, w_left, waiting, depth, slot = waiting_leaves(
        feature.size)
    n_free = pool.shape[0]
    free = np.empty(n_free, np.int64)
    for i in range(n_free):  # taken from the end: buffer 0 first
        free[i] = n_free - 1 - i
    jobs = np.empty((1, 7), np.int64)  # ``_children_jobs``'s row of a split
    feats = np.nonzero(used)[0]
    n_rows = partition.size
    slot[0], n_free = _take(pool, dirty, free, n_free)
    sparse = n_rows <= sparse_events
    by_event, b_is_w = _root(codes, feats, partition, payload, pool[slot[0]], bits[slot[0]],
                             sparse, sums[0], 1)
    _as_leaf(0, feature, bin_threshold, missing_left, left, right, gain)
    start[0], stop[0] = 0, n_rows
    n_nodes, n_leaves = 1, 1
    if not (depth_limit > 0 and _leaf_split(0, pool[slot[0]], bits[slot[0]], sparse, feats, sums,
                                            n_value_bins, params, scan, waiting, w_gain,
                                            w_feature, w_bin, w_missing, w_left)):
        n_free = _give_back(0, slot, free, n_free, pool, bits, dirty, used, start, stop,
                            sparse_events)
    while n_leaves < max_leaves:
        parent = _best_waiting(waiting, w_gain, n_nodes)
        if parent < 0:
            break
        waiting[parent] = False
        d = depth[parent] + 1
        build = n_leaves + 1 < max_leaves and d < depth_limit
        s, e = start[parent], stop[parent]
        mid = _partition(codes, partition, payload, s, e, w_feature[parent], w_bin[parent],
                         w_missing[parent], build and not by_event, scratch_idx, scratch_payload)
        if mid == s or mid == e:  # a side without events: not a split
            n_free = _give_back(parent, slot, free, n_free, pool, bits, dirty, used, start, stop,
                                sparse_events)
            continue
        lc, rc = n_nodes, n_nodes + 1
        n_nodes += 2
        n_leaves += 1
        feature[parent], bin_threshold[parent] = w_feature[parent], w_bin[parent]
        missing_left[parent], gain[parent] = w_missing[parent], w_gain[parent]
        left[parent], right[parent] = lc, rc
        for c in (lc, rc):
            _as_leaf(c, feature, bin_threshold, missing_left, left, right, gain)
        start[lc], stop[lc], start[rc], stop[rc] = s, mid, mid, e
        for ch in range(N_CHANNELS):  # element by element: see _level_splits
            sums[lc, ch] = w_left[parent, ch]
            sums[rc, ch] = sums[parent, ch] - w_left[parent, ch]
        if not build:
            n_free = _give_back(parent, slot, free, n_free, pool, bits, dirty, used, start, stop,
                                sparse_events)
            continue
        depth[lc] = depth[rc] = d
        small, large = (lc, rc) if mid - s <= e - mid else (rc, lc)
        slot[small], n_free = _take(pool, dirty, free, n_free)
        slot[large] = slot[parent]
        slot[parent] = -1
        jobs[0, 0], jobs[0, 1] = slot[small], slot[large]
        jobs[0, 2], jobs[0, 3] = start[small], stop[small]
        jobs[0, 4] = stop[small] - start[small] <= sparse_events
        jobs[0, 5] = stop[large] - start[large] <= sparse_events
        jobs[0, 6] = e - s <= sparse_events
        _children_features(codes, feats, partition, payload, by_event, b_is_w, pool, bits, jobs)
        for k in (lc, rc):
            b = slot[k]
            if not _leaf_split(k, pool[b], bits[b], stop[k] - start[k] <= sparse_events, feats,
                               sums, n_value_bins, params, scan, waiting, w_gain, w_feature,
                               w_bin, w_missing, w_left):
                n_free = _give_back(k, slot, free, n_free, pool, bits, dirty, used, start, stop,
                                    sparse_events)
    for k in range(n_nodes):  # the leaves still waiting: their buffers zeroed for the next tree
        if slot[k] >= 0:
            n_free = _give_back(k, slot, free, n_free, pool, bits, dirty, used, start, stop,
                                sparse_events)
    return n_nodes


grow_exact_leaves_serial = serial_twin(_exact_leaves, _root=_root_1)
