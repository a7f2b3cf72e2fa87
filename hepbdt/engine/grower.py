"""The one grower behind every booster: grows a tree from binned data, depth-wise or leaf-wise.

The booster fills the per-event channels (A, B and the event weight W) and picks a
criterion; the grower never knows which booster called it. One partition array of event
indices holds the tree's events, each node a ``[start, stop)`` slice; the channel payload
moves with it. Depth-wise (the default): per level, best split of every node, a stable
parallel partition of the split nodes, then the histogram of each smaller child and its
sibling by subtraction. Leaf-wise (``max_leaves``, as LightGBM's ``num_leaves``, XGBoost's
``grow_policy="lossguide"`` and scikit-learn's ``max_leaf_nodes``): best first, one leaf at
a time, with the same kernels (see ``_grow_leafwise``).
With ``quantised=True`` (gradient and newton boosting on large samples) A and B are
packed into one int64 per event (summed in int64 lanes beyond 2**25 - 1 events: see
histogram.py), W is replaced by B in the split
constraints, and the codes are event-major; codes and packed channels stay in event
order, are read through the partition with a prefetch, and only the event indices move.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from . import _serial_tree
from ._packed_search import _find_best_packed, _find_best_packed_1, find_best_packed_splits
from ._prefetch import prefetch
from ._serial_tree import (
    SerialWorkspace,
    _best_waiting,
    grow_exact_leaves_serial,
    grow_exact_serial,
    grow_exact_serial_1,
    waiting_leaves,
)
from ._types import (
    CHANNEL_DTYPE,
    INDEX_DTYPE,
    MAX_EVENTS,
    MISSING_BIN,
    N_BINS,
    N_CHANNELS,
    check_n_events,
    launch_lock,
    njit,
    serial_tree_threads,
    serial_twin,
    threads_sleep,
)
from .histogram import (
    MIN_PACKED_TASK,
    MIN_TASKS,
    PACKED_TASK,
    Quantiser,
    TaskBuffers,
    _reduce_tasks,
    _reduce_tasks_1,
    _task_sums,
    _task_sums_1,
    build_histograms,
    new_histograms,
)
from .split import SplitParams, find_best_splits

__all__ = ["GrownTree", "SERIAL_NODE_ARRAYS", "SerialWorkspace", "add_by_leaf",
           "add_through_partition", "depth_limit_of", "event_leaves", "feature_major",
           "grow_tree", "leaf_sweeps", "numba_threads", "sample_features",
           "serial_leaves_buffers", "serial_leaves_fit", "serial_tree_buffers",
           "serial_tree_fits", "serial_tree_sharing", "slice_sums", "sums_by_leaf",
           "sweep_rows"]

PARTITION_CHUNK = 1 << 14  # events per parallel partition task (fixed: results never depend on threads)
PREFETCH_AHEAD = 64  # events between a row's prefetch and its use
MAX_LEAF_SWEEPS = 4  # threads of ``losses._logistic_leaf_sums`` (the lean fit's leaf sums)
# Events from which leaf sums and score updates read the events in order (``event_leaves``)
# rather than walking the partition, which smaller samples keep (in cache there).
ORDERED_SUMS_FROM = 1 << 16
MARK_RANGE = 1 << 16  # event indices a task of ``_mark_leaves`` writes, at least
TRANSPOSE_BLOCK = 256  # events a task of ``feature_major`` copies (their rows stay in cache)
# Histograms held for one level of a tree, at most (bytes): a level of more nodes (deep trees
# on large samples) builds its histograms from the events in batches of this size instead of
# deriving siblings by subtraction, so memory never grows with the nodes of a level.
LEVEL_HISTOGRAM_BYTES = 256 << 20
# The quantised grower reads histograms from event-major codes (one row an event) but
# partitions a node by one feature: a feature-major copy of the codes makes that read one
# byte of a contiguous column instead of a cache line an event (1M x 28, one thread: 3.1 ->
# 2.0 ns an event at the root, 7.2 -> 2.0 at a quarter of the events). It doubles the codes'
# memory, so it is kept only up to this many bytes of codes (38M events x 28 features).
COLUMN_COPY_BYTES = 1 << 30
NO_PAYLOAD = np.empty((0, 3), CHANNEL_DTYPE)  # partitions that move event indices only
# Leaf-wise growth calls the kernels once per split: work below these sizes runs on one
# thread, because waking the other threads (and waiting for them at the barrier, which on a
# machine busy with other processes can take a scheduler time slice) costs more than it saves.
# The kernels' results never depend on the thread count. (1M x 28, 64 leaves, on a busy
# 2-core machine: decoding and searching two children's histograms took 4.7 ms a split on
# two threads, 0.4 ms on one.) Threads that spin (GOMP_SPINCOUNT, OMP_WAIT_POLICY=ACTIVE)
# wake at once: two children's 56 scans then pay on two threads (1M x 28, 64 leaves, 20
# trees: 0.90 -> 0.85 s).
SERIAL_SCANS = 128  # (node, feature) histogram scans of a split search
SERIAL_SCANS_SPINNING = 16
SERIAL_EVENTS = 4096  # events of a node's histogram (a partition of one chunk is serial anyway)
# Depth-wise trees of at most this many events x features, grown on one thread, are grown
# in one compiled call (``_serial_tree``): the same tree without the per-level Python. On
# more threads the per-level kernels are used (with spinning threads they were faster:
# 10,000 x 28, depth 6, 2.9 against 3.6 ms a tree).
SERIAL_TREE_WORK = 2_000_000
# A one-call tree of at least this many events x features shares each level's histograms
# (by feature), scans (by node and feature) and partitions (by node) over the fit's
# threads where they spin (``serial_tree_threads``); the trees are the same on any number
# of threads. Default fits on 2 spinning threads against one (``bench_small_fits.py``):
# hastie 6,000 x 10 0.19 -> 0.152 s, breast cancer 0.038 -> 0.029, friedman1 0.100 ->
# 0.083, the TMVA multi-class tutorial 0.127 -> 0.118; tmva-reg (4,500 x 2) the same.
SERIAL_SHARED_WORK = 8_000
# ... and of at least this many features: with fewer, sharing by feature leaves a thread
# one feature's histogram, and the launches cost more than they share (tmva-reg, 4,500 x
# 2, whose rounds now run in one call, ``boosting/_exact_rounds``: 0.29 s shared against
# 0.23 s on one thread).
SERIAL_SHARED_FEATURES = 3
# Leaf-wise packed trees of at most this many leaves grow in one compiled call
# (``_packed_leaves``), which finds the next leaf to split by a scan of the waiting ones
# (quadratic in the leaves: a heap pays beyond this).
COMPILED_LEAVES = 4096


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
    sum_a: np.ndarray  # float64 (from the histograms: quantised when the tree was)
    sum_b: np.ndarray  # float64
    sum_w: np.ndarray  # float64
    start: np.ndarray  # int64
    stop: np.ndarray  # int64
    partition: np.ndarray  # int32 event indices
    class_sums: np.ndarray | None = None  # (n_nodes, K) float64 with class channels (CLASS_GINI)

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.feature.size

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of the leaves."""
        return self.feature < 0


@njit(parallel=True)
def _partition_chunks(codes, by_event, partition, payload, chunk_start, chunk_stop,
                      chunk_node, feature, bin_threshold, missing_left, scratch_idx,
                      scratch_payload, n_left):
    """Pass 1: each chunk writes its left events forwards and its right ones backwards.

    The split feature's code is ``codes[partition[k], f]`` when ``by_event`` (event-major
    codes, the event's row prefetched ahead), else ``codes[f, partition[k]]``.
    """
    # Unsigned positions: no negative-index wraparound in the inner loop.
    codes_flat = codes.ravel()
    row_length = np.uint64(codes.shape[1])
    n_ch = np.uint64(payload.shape[1]) if payload.shape[0] else np.uint64(0)
    one = np.uint64(1)
    for c in numba.prange(chunk_start.size):
        s = np.uint64(chunk_start[c])
        e = np.uint64(chunk_stop[c])
        j = chunk_node[c]
        f = np.uint64(feature[j])
        thr = bin_threshold[j]
        ml = missing_left[j]
        left_pos = s
        right_pos = e - one
        for k in range(s, e):
            i = np.uint64(partition[k])
            if by_event:
                ahead = k + np.uint64(PREFETCH_AHEAD)
                if ahead < e:
                    prefetch(codes_flat, np.uint64(partition[ahead]) * row_length + f)
                code = codes_flat[i * row_length + f]
            else:
                code = codes[f, i]
            # Branch-free (the side is a coin flip to the branch predictor): the event is
            # written at both ends and only its side's end moves on, so the other copy is
            # overwritten by the next event that goes there (or, the last event, is its own).
            go_left = np.uint64(ml if code == MISSING_BIN else code <= thr)
            scratch_idx[left_pos] = partition[k]
            scratch_idx[right_pos] = partition[k]
            for ch in range(n_ch):
                scratch_payload[left_pos, ch] = payload[k, ch]
                scratch_payload[right_pos, ch] = payload[k, ch]
            left_pos += go_left
            right_pos -= one - go_left
        n_left[c] = np.int64(left_pos - s)


@njit(parallel=True)
def _gather_chunks(partition, payload, chunk_start, chunk_stop, n_left, left_dst, right_dst,
                   scratch_idx, scratch_payload):
    """Pass 2: copy each chunk's left run, and its reversed right run, to their places."""
    n_ch = np.uint64(payload.shape[1]) if payload.shape[0] else np.uint64(0)
    one = np.uint64(1)
    for c in numba.prange(chunk_start.size):
        s = np.uint64(chunk_start[c])
        e = np.uint64(chunk_stop[c])
        nl = np.uint64(n_left[c])
        ld = np.uint64(left_dst[c])
        rd = np.uint64(right_dst[c])
        for q in range(nl):
            partition[ld + q] = scratch_idx[s + q]
            for ch in range(n_ch):
                payload[ld + q, ch] = scratch_payload[s + q, ch]
        for q in range(e - s - nl):
            partition[rd + q] = scratch_idx[e - one - q]
            for ch in range(n_ch):
                payload[rd + q, ch] = scratch_payload[e - one - q, ch]


_partition_chunks_1 = serial_twin(_partition_chunks)
_gather_chunks_1 = serial_twin(_gather_chunks)


@njit
def _chunk_layout(s, e):
    """Chunks of at most PARTITION_CHUNK events covering each node [s_j, e_j) (at least one
    a node): (chunk_start, chunk_stop, chunk_node)."""
    total = 0
    for j in range(s.size):
        total += max(1, -(-(e[j] - s[j]) // PARTITION_CHUNK))
    chunk_start = np.empty(total, np.int64)
    chunk_stop = np.empty(total, np.int64)
    chunk_node = np.empty(total, np.int64)
    c = 0
    for j in range(s.size):
        start = s[j]
        while True:
            chunk_start[c] = start
            chunk_stop[c] = min(start + PARTITION_CHUNK, e[j])
            chunk_node[c] = j
            c += 1
            start += PARTITION_CHUNK
            if start >= e[j]:
                break
    return chunk_start, chunk_stop, chunk_node


@njit
def _chunk_destinations(s, chunk_start, chunk_stop, chunk_node, n_left):
    """Where each chunk's left and right runs go (each node's left events first, chunks in
    order), and each node's first right position: (left_dst, right_dst, mid)."""
    mid = s.copy()
    for c in range(chunk_node.size):
        mid[chunk_node[c]] += n_left[c]
    left_dst = np.empty(chunk_node.size, np.int64)
    right_dst = np.empty(chunk_node.size, np.int64)
    left_at = s.copy()
    right_at = mid.copy()
    for c in range(chunk_node.size):
        j = chunk_node[c]
        left_dst[c] = left_at[j]
        right_dst[c] = right_at[j]
        left_at[j] += n_left[c]
        right_at[j] += chunk_stop[c] - chunk_start[c] - n_left[c]
    return left_dst, right_dst, mid


def _partition_nodes(codes, by_event, partition, payload, s, e, feature, bin_threshold,
                     missing_left, scratch_idx, scratch_payload) -> np.ndarray:
    """Stable in-place partition of nodes [s_j, e_j): left events first. Returns the mids.

    The payload's rows (channels in partition order) move with the event indices; pass
    ``NO_PAYLOAD`` to move the indices only."""
    s = s.astype(np.int64)
    chunk_start, chunk_stop, chunk_node = _chunk_layout(s, e.astype(np.int64))
    n_left = np.empty(chunk_node.size, np.int64)
    with launch_lock():
        _partition_chunks(codes, by_event, partition, payload, chunk_start, chunk_stop,
                          chunk_node, feature, bin_threshold, missing_left, scratch_idx,
                          scratch_payload, n_left)
        left_dst, right_dst, mid = _chunk_destinations(s, chunk_start, chunk_stop, chunk_node, n_left)
        _gather_chunks(partition, payload, chunk_start, chunk_stop, n_left, left_dst, right_dst,
                       scratch_idx, scratch_payload)
    return mid


@njit(parallel=True)
def _slice_sums(partition, start, stop, values, initial, out):
    n_values = len(values)
    for j in numba.prange(start.size):
        total = initial[:, j].copy()
        stop_j = np.uint64(stop[j])
        for k in range(np.uint64(start[j]), stop_j):
            ahead = k + np.uint64(PREFETCH_AHEAD)
            if ahead < stop_j:
                for v in range(n_values):
                    prefetch(values[v], np.uint64(partition[ahead]))
            i = np.uint64(partition[k])
            for v in range(n_values):
                total[v] += values[v][i]
        out[:, j] = total


def slice_sums(partition: np.ndarray, start: np.ndarray, stop: np.ndarray,
               *values: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
    """Exact float64 sums of each per-event array over ``partition[start[j]:stop[j]]``,
    in one pass: (len(values), len(start)).

    ``initial`` (len(values), len(start)): the running sums to continue from (zeros when
    None), so parts of the events summed one after the other, each from the last one's
    sums, give the sums of all of them in the same order, bit for bit."""
    arrays = tuple(np.ascontiguousarray(v) for v in values)
    if len({a.dtype for a in arrays}) > 1:
        arrays = tuple(a.astype(np.float64) for a in arrays)
    out = np.empty((len(arrays), start.size), dtype=np.float64)
    if initial is None:
        initial = np.zeros_like(out)
    with launch_lock():
        _slice_sums(partition, start, stop, arrays, np.ascontiguousarray(initial, np.float64), out)
    return out


def event_leaves(tree: GrownTree, n_events: int, storage: np.ndarray | None = None) -> np.ndarray:
    """Each event's leaf, numbered 0.. in node order (uint8 up to 255 leaves, else uint16 up
    to 65,535, else int32); events in no leaf (left out of the tree's sample) get the
    largest value of the type. ``storage``: a contiguous buffer of at least that many bytes
    to hold them (e.g. the grower's scratch, free once the tree has grown). Each leaf's
    events must be in increasing order in the partition, as the stable partitions of
    every grower leave them (the tree's sample is sorted, each node's slice stays so)."""
    leaves = np.flatnonzero(tree.is_leaf)
    dtype = np.uint8 if leaves.size < 255 else np.uint16 if leaves.size < 65535 else np.int32
    size = n_events * np.dtype(dtype).itemsize
    if storage is not None and storage.nbytes >= size:
        out = storage.reshape(-1).view(np.uint8)[:size].view(dtype)
    else:
        out = np.empty(n_events, dtype)
    if tree.partition.size < n_events:  # the leaves hold the partition's events, no others
        out[:] = np.iinfo(dtype).max
    with launch_lock():
        _mark_leaves(tree.partition, tree.start[leaves], tree.stop[leaves], out,
                     _range_tasks(n_events))
    return out


def add_through_partition(tree: GrownTree, value: np.ndarray, score: np.ndarray) -> None:
    """score[i] += value[j] for the events i of each leaf j (``value``: one a leaf, in node
    order), through the partition's slices, whose events must be in increasing order (see
    ``event_leaves``); ``score`` holds every event index of the partition."""
    leaves = np.flatnonzero(tree.is_leaf)
    with launch_lock():
        _add_leaf_values(tree.partition, tree.start[leaves], tree.stop[leaves],
                         np.ascontiguousarray(value, np.float64), score, _range_tasks(score.size))


def _range_tasks(n_events: int) -> int:
    """Tasks of the kernels that write per-event arrays by ranges of event indices."""
    return max(1, min(4 * numba.get_num_threads(), -(-n_events // MARK_RANGE)))


@njit(inline="always")
def _task_range(t, n_tasks, n):
    """[lo, hi): the event indices of task t of n_tasks over n events (whole cache lines)."""
    span = ((n + n_tasks - 1) // n_tasks + 63) // 64 * 64
    return min(n, t * span), min(n, (t + 1) * span)


@njit(parallel=True)
def _mark_leaves(partition, start, stop, out, n_tasks):
    # Each task writes the events of one range of event indices, found in every leaf's
    # slice by binary search (the stable partitions keep a node's events in increasing
    # order), so no two threads write the same cache line; a thread a leaf did, into lines
    # the other thread's leaves shared (1M x 28, depth 6, two threads: 2.6 against 0.3 ms).
    for t in numba.prange(n_tasks):
        lo, hi = _task_range(t, n_tasks, out.size)
        for j in range(start.size):
            events = partition[start[j]:stop[j]]
            for k in range(np.uint64(np.searchsorted(events, lo)),
                           np.uint64(np.searchsorted(events, hi))):
                out[np.uint64(events[k])] = j


@njit(parallel=True)
def _add_leaf_values(partition, start, stop, value, score, n_tasks):
    # By ranges of event indices, as _mark_leaves: each event gets one add, so the result
    # does not depend on the tasks.
    for t in numba.prange(n_tasks):
        lo, hi = _task_range(t, n_tasks, score.size)
        for j in range(start.size):
            events = partition[start[j]:stop[j]]
            v = value[j]
            for k in range(np.uint64(np.searchsorted(events, lo)),
                           np.uint64(np.searchsorted(events, hi))):
                score[np.uint64(events[k])] += v


def sums_by_leaf(leaf_of: np.ndarray, n_leaves: int, *values: np.ndarray,
                 initial: np.ndarray | None = None) -> np.ndarray:
    """Exact float64 sums of each per-event array over each leaf's events (``event_leaves``),
    each leaf's events added in event order: for a tree whose leaves hold their events in
    increasing order (the stable partition's), ``slice_sums`` over the leaves bit for bit,
    from sequential reads: (len(values), n_leaves). ``initial`` (len(values), n_leaves):
    running sums to continue from, as ``slice_sums`` takes them (zeros when None)."""
    arrays = tuple(np.ascontiguousarray(v) for v in values)
    if len({a.dtype for a in arrays}) > 1:
        arrays = tuple(a.astype(np.float64) for a in arrays)
    out = np.empty((len(arrays), n_leaves))
    start = (np.zeros_like(out) if initial is None
             else np.ascontiguousarray(initial, np.float64))
    with launch_lock():
        _sums_by_leaf(leaf_of, arrays, n_leaves, min(len(arrays), numba.get_num_threads()), start,
                      out)
    return out


def leaf_sweeps(n_leaves: int) -> int:
    """Threads that each read every event and sum the leaves j with j % sweeps == their
    number (each leaf in event order), for leaf sums whose values are computed event by
    event; more than a few only multiply the reads."""
    return max(1, min(numba.get_num_threads(), n_leaves, MAX_LEAF_SWEEPS))


@njit
def sweep_rows(n_leaves: int, n_sweeps: int) -> np.ndarray:
    """(n_sweeps, n_leaves + 1): the row of sweep t's sums that leaf j adds to: j for the
    leaves j % n_sweeps == t, else row n_leaves, which takes what the sweep does not sum
    (branch-free, and no division an event); column n_leaves is for events in no leaf."""
    rows = np.full((n_sweeps, n_leaves + 1), n_leaves, np.int64)
    for j in range(n_leaves):
        rows[j % n_sweeps, j] = j
    return rows


@njit(parallel=True)
def _sums_by_leaf(leaf_of, values, n_leaves, n_groups, initial, out):
    n_values = len(values)
    # a row per value, padded so that two threads' rows never share a cache line; column
    # n_leaves takes the events in no leaf. Each thread sums the values v % n_groups == its
    # group, up to three in one pass, so their chains of adds (a leaf's events one after
    # another) overlap; each pass's arrays are named, not taken from the tuple by an index
    # that varies in the loop (that indexing made the pass 2.7x slower: 1M, 3 values).
    acc = np.zeros((n_values, n_leaves + 16))
    acc[:, :n_leaves] = initial
    last = np.uint64(n_leaves)
    for group in numba.prange(n_groups):
        mine = (n_values - group + n_groups - 1) // n_groups  # the values v % n_groups == group
        for first in range(0, mine, 3):
            v0 = group + first * n_groups
            v1, v2 = v0 + n_groups, v0 + 2 * n_groups
            if mine - first >= 3:
                _leaf_sums_3(leaf_of, last, values[v0], values[v1], values[v2], acc[v0],
                             acc[v1], acc[v2])
            elif mine - first == 2:
                _leaf_sums_2(leaf_of, last, values[v0], values[v1], acc[v0], acc[v1])
            else:
                _leaf_sums_1(leaf_of, last, values[v0], acc[v0])
    for v in range(n_values):  # loops: an array assigned to a slice compiles numpy's
        for j in range(n_leaves):  # shape error message
            out[v, j] = acc[v, j]


@njit
def _leaf_sums_1(leaf_of, last, x, acc):
    for i in range(leaf_of.size):
        j = min(np.uint64(leaf_of[np.uint64(i)]), last)
        acc[j] += x[np.uint64(i)]


@njit
def _leaf_sums_2(leaf_of, last, x, y, acc_x, acc_y):
    for i in range(leaf_of.size):
        j = min(np.uint64(leaf_of[np.uint64(i)]), last)
        acc_x[j] += x[np.uint64(i)]
        acc_y[j] += y[np.uint64(i)]


@njit
def _leaf_sums_3(leaf_of, last, x, y, z, acc_x, acc_y, acc_z):
    for i in range(leaf_of.size):
        j = min(np.uint64(leaf_of[np.uint64(i)]), last)
        acc_x[j] += x[np.uint64(i)]
        acc_y[j] += y[np.uint64(i)]
        acc_z[j] += z[np.uint64(i)]


def add_by_leaf(leaf_of: np.ndarray, value: np.ndarray, score: np.ndarray) -> None:
    """score[i] += value[leaf_of[i]] for every event in a leaf (``event_leaves``)."""
    with launch_lock():
        _add_by_leaf(leaf_of, np.ascontiguousarray(value, np.float64), score)


ADD_CHUNK = 16384  # events per task of ``add_by_leaf``


@njit
def _add_chunk(leaf_of, value, score, start, n):
    first = np.uint64(start)
    n_leaves = np.uint64(value.size)
    for i in range(n):
        j = np.uint64(leaf_of[first + np.uint64(i)])
        if j < n_leaves:
            score[first + np.uint64(i)] += value[j]


@njit(parallel=True)
def _add_by_leaf(leaf_of, value, score):
    for c in numba.prange((score.size + ADD_CHUNK - 1) // ADD_CHUNK):
        start = c * ADD_CHUNK
        _add_chunk(leaf_of, value, score, start, min(score.size, start + ADD_CHUNK) - start)


def feature_major(codes_by_event: np.ndarray) -> np.ndarray:
    """The (m, n) feature-major copy of (n, m) event-major uint8 codes (numpy's copy of
    the transposed view moves one byte at a time: 0.84 s at 10M x 28, this 0.065 s)."""
    out = np.empty(codes_by_event.shape[::-1], dtype=codes_by_event.dtype)
    with launch_lock():
        _feature_major(np.ascontiguousarray(codes_by_event), out)
    return out


@njit(parallel=True)
def _feature_major(codes, out):
    n, m = codes.shape
    for block in numba.prange((n + TRANSPOSE_BLOCK - 1) // TRANSPOSE_BLOCK):
        for i in range(block * TRANSPOSE_BLOCK, min(n, (block + 1) * TRANSPOSE_BLOCK)):
            for j in range(m):
                out[j, i] = codes[i, j]


@njit(parallel=True)
def _iota(out):
    for i in numba.prange(out.size):
        out[i] = i


class QuantisedRows:
    """Every training event's codes, event-major (n, m) uint8, and the buffers of the
    quantised grower (partition, packed channels, scratch), allocated once per fit.

    Each tree starts from event order; the stable partition keeps every node's events in
    increasing order. The packed channels stay in event order and partitions move only
    the event index (4 bytes an event); kernels read an event's row of codes and its
    packed channels through the partition, prefetched a few events ahead.
    """

    def __init__(self, codes_by_event: np.ndarray):
        n = codes_by_event.shape[0]
        check_n_events(n)
        self.codes = codes_by_event
        self.n_features = codes_by_event.shape[1]
        # The feature-major copy that partitions read (None: they read ``codes``).
        self.columns = (feature_major(codes_by_event)
                        if codes_by_event.size <= COLUMN_COPY_BYTES else None)
        self.partition = np.empty(n, dtype=INDEX_DTYPE)
        self.packed = np.empty(n, dtype=np.int64)
        self.scratch_idx = np.empty(n, INDEX_DTYPE)
        self.task_buffers = TaskBuffers()

    @property
    def lean(self) -> bool:
        """Whether a tree's float32 channels live in the partition and scratch buffers
        (``channel_buffers``) until they are packed, instead of arrays of their own: a fit
        too large for the feature-major copy saves their 8 bytes an event too, and sums
        them again from the events after the tree has grown."""
        return self.columns is None

    def channel_buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """Two float32 arrays of one value an event, in storage that ``start_tree`` and the
        partitions overwrite (the channels are packed before the partition is set)."""
        return self.scratch_idx.view(np.float32), self.partition.view(np.float32)

    @classmethod
    def from_features(cls, X: np.ndarray, mapper, rows: np.ndarray | None = None) -> QuantisedRows:
        """Bin X (n, m) float32 (the events ``rows`` of it, when given) with ``mapper``
        straight into event-major codes."""
        codes = np.empty((X.shape[0] if rows is None else len(rows), X.shape[1]), dtype=np.uint8)
        mapper.transform_into(X, codes, rows)
        return cls(codes)

    def start_tree(self, quantiser: Quantiser, a: np.ndarray, b: np.ndarray) -> None:
        """Every event in order, with channels A and B packed (first: they may be
        ``channel_buffers``)."""
        quantiser.pack_into(a, b, self.packed)
        with launch_lock():
            _iota(self.partition)


class _NodeArrays:
    """A tree's node arrays under construction (leaves until split), grown by doubling up to
    ``max_nodes`` (a tree of n events has at most 2n - 1 nodes whose events are not empty)."""

    FIELDS = (("feature", np.int32, -1), ("bin_threshold", np.uint8, 0),
              ("missing_left", np.bool_, False), ("left", np.int32, -1), ("right", np.int32, -1),
              ("gain", np.float64, 0.0), ("start", np.int64, 0), ("stop", np.int64, 0))

    def __init__(self, capacity: int, max_nodes: int | None = None, n_channels: int = N_CHANNELS):
        self.max_nodes = max(1, capacity if max_nodes is None else max_nodes)
        capacity = max(1, min(capacity, self.max_nodes))
        self.size = 1
        for name, dtype, fill in self.FIELDS:
            setattr(self, name, np.full(capacity, fill, dtype))
        self.sums = np.zeros((capacity, n_channels))

    def add(self, count: int) -> np.ndarray:
        """Ids of ``count`` new leaves."""
        need = self.size + count
        if need > MAX_EVENTS:  # int32 node ids; needs more than 2**30 leaves
            raise ValueError(f"a tree of more than {MAX_EVENTS:,} nodes: int32 node ids")
        if need > self.feature.size:
            capacity = max(need, min(2 * self.feature.size, self.max_nodes))
            for name, dtype, fill in self.FIELDS:
                grown = np.full(capacity, fill, dtype)
                grown[: self.size] = getattr(self, name)[: self.size]
                setattr(self, name, grown)
            sums = np.zeros((capacity, self.sums.shape[1]))
            sums[: self.size] = self.sums[: self.size]
            self.sums = sums
        ids = np.arange(self.size, need)
        self.size = need
        return ids

    def grown_tree(self, partition: np.ndarray) -> GrownTree:
        """The finished tree: copies of the node arrays, with the tree's partition."""
        n = self.size
        return GrownTree(
            feature=self.feature[:n].copy(),
            bin_threshold=self.bin_threshold[:n].copy(),
            missing_left=self.missing_left[:n].copy(),
            left=self.left[:n].copy(),
            right=self.right[:n].copy(),
            gain=self.gain[:n].copy(),
            sum_a=self.sums[:n, 0].copy(),
            sum_b=self.sums[:n, 1].copy(),
            sum_w=self.sums[:n, -1].copy(),
            start=self.start[:n].copy(),
            stop=self.stop[:n].copy(),
            partition=partition,
            class_sums=self.sums[:n, :-1].copy() if self.sums.shape[1] != N_CHANNELS else None,
        )


def sample_features(allowed: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A random subset (at least one) of the allowed features, as a boolean mask."""
    if fraction >= 1.0:
        return allowed.copy()
    idx = np.flatnonzero(allowed)
    k = max(1, int(round(fraction * idx.size)))
    mask = np.zeros_like(allowed)
    mask[rng.choice(idx, k, replace=False)] = True
    return mask


@dataclass
class _TreeEvents:
    """A tree's events in partition order, the channel payload moving with them, and scratch."""

    codes: np.ndarray
    partition: np.ndarray
    payload: np.ndarray
    scratch_idx: np.ndarray
    scratch_payload: np.ndarray
    used: np.ndarray  # (m,) bool: the features this tree may use
    n_features: int
    quantiser: Quantiser | None  # None: exact float channels
    columns: np.ndarray | None = None  # feature-major codes for partitions, when ``codes`` is not
    task_buffers: TaskBuffers | None = None  # the packed histograms' task buffers, kept

    @property
    def split_codes(self) -> tuple[np.ndarray, bool]:
        """The codes that partitions read, and whether they are event-major."""
        if self.columns is not None:
            return self.columns, False
        return self.codes, self.quantised

    @property
    def n_channels(self) -> int:
        """Float channels per histogram bin: 3 (A, B, W), or K + 1 with class channels."""
        return N_CHANNELS if self.quantised else self.payload.shape[1]

    @property
    def quantised(self) -> bool:
        """Whether A and B are packed into int64 histograms."""
        return self.quantiser is not None

    @property
    def wide(self) -> bool:
        """Whether the quantised histograms hold two int64 lanes (A, B) per bin."""
        return self.quantiser is not None and self.quantiser.wide

    @classmethod
    def quantised_rows(cls, ordered: QuantisedRows, rows: np.ndarray | None, a: np.ndarray,
                       b: np.ndarray, used: np.ndarray, rounding_seed: int,
                       quantiser: Quantiser | None = None,
                       max_abs: tuple[float, float] | None = None) -> _TreeEvents:
        """Every event, from ``ordered``'s buffers, with A and B packed (indices move alone);
        ``quantiser``: one made for a larger sample these events are part of; ``max_abs``:
        (max |A|, max |B|) as the quantiser would find them."""
        if rows is not None and rows.size != ordered.partition.size:
            raise ValueError("the quantised grower takes every event (zero channels leave one out)")
        if quantiser is None:
            quantiser = Quantiser(a, b, ordered.partition.size, seed=rounding_seed, max_abs=max_abs)
        ordered.start_tree(quantiser, a, b)
        return cls(ordered.codes, ordered.partition, ordered.packed, ordered.scratch_idx,
                   NO_PAYLOAD, used, ordered.n_features, quantiser, ordered.columns,
                   ordered.task_buffers)

    @classmethod
    def exact_rows(cls, codes: np.ndarray, rows: np.ndarray | None, a: np.ndarray,
                   b: np.ndarray | None, w: np.ndarray, used: np.ndarray) -> _TreeEvents:
        """A copy of ``rows`` (None: every event) with their channels (A, B, W) as a float
        payload, and scratch; ``a`` (K, n) and ``b`` None: the K class channels, then W
        (CLASS_GINI)."""
        if rows is None:
            partition = np.arange(codes.shape[1], dtype=INDEX_DTYPE)
        else:
            partition = np.ascontiguousarray(rows, dtype=INDEX_DTYPE).copy()
        n_rows = partition.size
        all_rows = n_rows == codes.shape[1]
        channels = (*a, w) if b is None else (a, b, w)
        payload = np.empty((n_rows, len(channels)), dtype=CHANNEL_DTYPE)
        for ch, v in enumerate(channels):
            payload[:, ch] = v if all_rows else v[partition]
        return cls(codes, partition, payload, np.empty(n_rows, INDEX_DTYPE), np.empty_like(payload),
                   used, codes.shape[0], None)

    def histograms(self, count: int, starts: np.ndarray, stops: np.ndarray, slots: np.ndarray,
                   parent: np.ndarray | None = None, parent_slots: np.ndarray | None = None,
                   sibling_slots: np.ndarray | None = None) -> np.ndarray:
        """Raw histograms of nodes' events into ``slots`` (siblings as parent minus node)."""
        raw = new_histograms(count, self.n_features, packed=self.quantised, wide=self.wide,
                             n_channels=self.n_channels)
        self.fill(raw, starts, stops, slots, parent, parent_slots, sibling_slots)
        return raw

    def fill(self, raw: np.ndarray, starts: np.ndarray, stops: np.ndarray, slots: np.ndarray,
             parent: np.ndarray | None = None, parent_slots: np.ndarray | None = None,
             sibling_slots: np.ndarray | None = None, threads: int | None = None) -> None:
        """``histograms`` into existing storage ``raw`` (a sibling slot may be its parent's:
        the parent's histogram then becomes the sibling's in place); ``threads``: see
        ``build_histograms``."""
        build_histograms(self.codes, self.partition, self.payload, starts, stops, slots, self.used,
                         raw, parent, parent_slots, sibling_slots, threads, self.task_buffers)

    def decoded(self, raw: np.ndarray) -> np.ndarray:
        """Float64 (A, B, W) sums of raw histograms."""
        return self.quantiser.decode(raw) if self.quantised else raw

    def leaf_capacity(self) -> int:
        """How many leaves' raw histograms leaf-wise growth may hold (LEVEL_HISTOGRAM_BYTES):
        float64 (A, B, W) per bin, or one int64 (two wide) when quantised (decoded two at a
        time)."""
        per_bin = (16 if self.wide else 8) if self.quantised else self.n_channels * 8
        return leaf_capacity(self.n_features, per_bin)

    def level_capacity(self) -> int:
        """How many nodes' histograms one level may hold (LEVEL_HISTOGRAM_BYTES): float64
        (A, B, W) per bin, plus the packed sums (two int64 lanes wide) and their task
        buffers when quantised."""
        per_bin = self.n_channels * 8 + ((24 if self.wide else 16) if self.quantised else 0)
        return max(2, LEVEL_HISTOGRAM_BYTES // (self.n_features * N_BINS * per_bin))


class _Splits(NamedTuple):
    """The chosen splits of one level: the level positions split and their best split."""

    position: np.ndarray  # index into the level (and into its histograms)
    gain: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left_sums: np.ndarray  # (k, 3) the left child's (A, B, W) (K + 1 with class channels)


def _root_histograms(events: _TreeEvents, nodes: _NodeArrays) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (raw, decoded) of the root holding every event, and the root's sums."""
    n_rows = events.partition.size
    nodes.start[0], nodes.stop[0] = 0, n_rows
    raw = events.histograms(1, np.array([0], np.int64), np.array([n_rows], np.int64),
                            np.array([0], np.int64))
    hists = events.decoded(raw)
    nodes.sums[0] = hists[0, int(np.argmax(events.used))].sum(axis=0)
    return raw, hists


def quantum_floor(params: SplitParams, quantiser: Quantiser | None) -> SplitParams:
    """``params`` for quantised histograms: a child's weight (B, which W is then) at least
    half a quantum of B. A side whose integer B is 0 (its events each lighter than a
    quantum, while A rounded to +-1) is the parent's float sum minus the left's, rounding
    noise of about 1e-8 that passed ``W > 0`` and gave A^2 / B gains of 1e11 where the
    exact histograms gave 2 (weights spanning six decades, min_node_size 0). A side of
    integer B >= 1 is >= one quantum, so no split with a real weight is refused."""
    floor = 0.0 if quantiser is None else 0.5 / quantiser.scale_b
    if not params.min_child_weight < floor:
        return params
    return SplitParams(params.criterion, params.reg_lambda, params.reg_alpha,
                       params.min_child_hessian, floor, params.min_split_gain)


def _choose_splits(events: _TreeEvents, raw: np.ndarray | None, level: np.ndarray,
                   nodes: _NodeArrays, n_value_bins: np.ndarray, params: SplitParams,
                   colsample_bylevel: float, colsample_bynode: float,
                   rng: np.random.Generator) -> _Splits | None:
    """Best split of every node of a level among its sampled features; None when none splits.

    ``raw``: the level's raw histograms, or None to build them from the events in batches."""
    k = level.size
    params = quantum_floor(params, events.quantiser)
    level_features = sample_features(events.used, colsample_bylevel, rng)
    if colsample_bynode >= 1.0:
        allowed = np.tile(level_features, (k, 1))
    else:
        allowed = np.stack([sample_features(level_features, colsample_bynode, rng) for _ in range(k)])
    if raw is not None and events.quantiser is not None:  # decoded feature by feature
        found = find_best_packed_splits(raw, np.arange(k), events.quantiser.scale_a,
                                        events.quantiser.scale_b, nodes.sums[level], allowed,
                                        n_value_bins, params.as_tuple())
    elif raw is not None:
        found = find_best_splits(raw, np.arange(k), nodes.sums[level], allowed, n_value_bins,
                                 params)
    else:
        batch = events.level_capacity()
        parts = []
        for i in range(0, k, batch):
            ids = level[i:i + batch]
            slots = np.arange(ids.size)
            hists = events.decoded(events.histograms(ids.size, nodes.start[ids], nodes.stop[ids],
                                                     slots))
            parts.append(find_best_splits(hists, slots, nodes.sums[ids], allowed[i:i + batch],
                                          n_value_bins, params))
            del hists
        found = tuple(np.concatenate(p) for p in zip(*parts, strict=True))
    g, f, t, ml, left_of = found
    to_split = np.flatnonzero(f >= 0)
    if to_split.size == 0:
        return None
    return _Splits(to_split, g[to_split], f[to_split], t[to_split], ml[to_split], left_of[to_split])


def _apply_splits(events: _TreeEvents, nodes: _NodeArrays, parents: np.ndarray, splits: _Splits,
                  move_payload: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Partition the split nodes' events and add their children: (children, start, mid, stop)."""
    s, e, mid = _partition_split_nodes(events, nodes, parents, splits, move_payload)
    return _add_children(nodes, parents, splits, s, mid, e), s, mid, e


def _partition_split_nodes(events: _TreeEvents, nodes: _NodeArrays, parents: np.ndarray,
                           splits: _Splits, move_payload: bool) -> tuple[np.ndarray, ...]:
    """Partition the split nodes' events: (start, stop, mid) of each."""
    s, e = nodes.start[parents], nodes.stop[parents]
    moved = events.payload if move_payload else NO_PAYLOAD
    mid = _partition_nodes(*events.split_codes, events.partition, moved, s, e,
                           splits.feature, splits.threshold.astype(np.uint8), splits.missing_left,
                           events.scratch_idx, events.scratch_payload)
    return s, e, mid


def _apply_real_splits(events: _TreeEvents, nodes: _NodeArrays, level: np.ndarray,
                       splits: _Splits, move_payload: bool) -> tuple | None:
    """``_apply_splits`` of the level's splits that leave events on both sides: (splits
    kept, children, start, mid, stop), or None when none does.

    A side that holds no event has true sums of exactly 0, so the split's true gain is 0
    and it is not valid (W > 0). Its sums are derived by subtraction (the sibling's
    histogram as parent minus child, the right side as node minus left), and in float64
    they can be rounding noise instead of 0 when the channels span many decades (event
    weights of 1e-6 to 1e3): a noise W of 1e-14 passed ``W > 0`` and split nodes of one
    event into an empty leaf (value 0) at gains of 1e-13. The stable partition leaves
    such a node's events in place, so the node stays a leaf. (Quantised sums are exact
    integers: there an empty side has B = 0 and is refused by the scan.)"""
    parents = level[splits.position]
    s, e, mid = _partition_split_nodes(events, nodes, parents, splits, move_payload)
    real = (mid > s) & (mid < e)
    if not real.any():
        return None
    if not real.all():
        splits = _Splits(*(field[real] for field in splits))
        parents, s, mid, e = parents[real], s[real], mid[real], e[real]
    return splits, _add_children(nodes, parents, splits, s, mid, e), s, mid, e


def _add_children(nodes: _NodeArrays, parents: np.ndarray, splits: _Splits, s: np.ndarray,
                  mid: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Record the splits of ``parents`` and add their children (events [s, mid) and
    [mid, e) of the partition): the children's ids."""
    # Children in split order, each left child before its right sibling.
    children = nodes.add(2 * parents.size)
    lc, rc = children[0::2], children[1::2]
    nodes.feature[parents] = splits.feature
    nodes.bin_threshold[parents] = splits.threshold
    nodes.missing_left[parents] = splits.missing_left
    nodes.gain[parents] = splits.gain
    nodes.left[parents], nodes.right[parents] = lc, rc
    nodes.start[lc], nodes.stop[lc] = s, mid
    nodes.start[rc], nodes.stop[rc] = mid, e
    nodes.sums[lc] = splits.left_sums
    nodes.sums[rc] = nodes.sums[parents] - splits.left_sums
    return children


def _child_histograms(events: _TreeEvents, nodes: _NodeArrays, parent_raw: np.ndarray,
                      parent_slots: np.ndarray, children: np.ndarray, s: np.ndarray, mid: np.ndarray,
                      e: np.ndarray) -> np.ndarray:
    """Raw histograms of the children: the smaller from its events, its sibling by subtraction."""
    q = np.arange(parent_slots.size)
    small = np.where(mid - s <= e - mid, 2 * q, 2 * q + 1)
    small_nodes = children[small]
    return events.histograms(2 * q.size, nodes.start[small_nodes], nodes.stop[small_nodes], small,
                             parent_raw, parent_slots.astype(np.int64), small ^ 1)


# -- leaf-wise (best-first) growth ------------------------------------------------------------
def _serial_scans() -> int:
    """The split searches' scans from which leaf-wise growth wakes the other threads."""
    return SERIAL_SCANS if threads_sleep() else SERIAL_SCANS_SPINNING


class _SmallWork:
    """Runs blocks of small work on one thread: leaf-wise growth calls the kernels once per
    split, and waking the other threads costs more than they save on small nodes."""

    def __init__(self) -> None:
        self.n_threads = numba.get_num_threads()

    @contextlib.contextmanager
    def serial(self, small: bool):
        """The block on one thread when ``small``."""
        if not small or self.n_threads == 1:
            yield
            return
        numba.set_num_threads(1)
        try:
            yield
        finally:
            numba.set_num_threads(self.n_threads)


class _HistogramPool:
    """Raw histograms of the leaves waiting to be split, at most ``capacity`` at a time.

    A leaf keeps its histogram until it is split (its larger child inherits the slot: the
    sibling is derived in place as parent minus smaller child) or found unsplittable. When
    the pool is full, the waiting leaf that would be split last gives its slot up; its
    children are then both built from their events (exact float sums may then differ from
    subtraction in the last bits, as in depth-wise levels built in batches)."""

    def __init__(self, events: _TreeEvents, capacity: int):
        self.raw = new_histograms(capacity, events.n_features, packed=events.quantised,
                                  wide=events.wide, n_channels=events.n_channels)
        self.free = list(range(capacity - 1, -1, -1))
        self.slot: dict[int, int] = {}  # node id -> slot

    def take(self, node: int, waiting: dict[int, _Splits]) -> int:
        """A free slot for ``node``, evicting the waiting leaf that would be split last."""
        if not self.free:
            held = [k for k in self.slot if k in waiting]
            last = min(held, key=lambda k: (waiting[k].gain[0], -k))
            self.free.append(self.slot.pop(last))
        slot = self.free.pop()
        self.slot[node] = slot
        return slot

    def release(self, node: int) -> None:
        """Free ``node``'s slot, if it has one."""
        slot = self.slot.pop(node, None)
        if slot is not None:
            self.free.append(slot)


class _LeafSplitter:
    """Best splits of new leaves from their pooled histograms, with the column draws of
    leaf-wise growth: one feature set per depth (``colsample_bylevel``, drawn when a node of
    that depth is first evaluated, as XGBoost's lossguide does), then one per node."""

    def __init__(self, events: _TreeEvents, nodes: _NodeArrays, pool: _HistogramPool,
                 n_value_bins: np.ndarray, params: SplitParams, colsample_bylevel: float,
                 colsample_bynode: float, rng: np.random.Generator, small: _SmallWork):
        self.events, self.nodes, self.pool = events, nodes, pool
        self.n_value_bins, self.params, self.rng = n_value_bins, params, rng
        self.colsample_bylevel, self.colsample_bynode = colsample_bylevel, colsample_bynode
        self.small = small
        self.by_depth: dict[int, np.ndarray] = {}  # (2, m): the depth's feature set, twice

    def __call__(self, ids: list[int], depth: int) -> list[_Splits | None]:
        """The best split of each node in ``ids`` (one or two of ``depth``, each holding a
        slot); None where none is valid."""
        if depth not in self.by_depth:
            level_features = sample_features(self.events.used, self.colsample_bylevel, self.rng)
            self.by_depth[depth] = np.tile(level_features, (2, 1))
        if self.colsample_bynode >= 1.0:
            allowed = self.by_depth[depth][:len(ids)]
        else:
            allowed = np.stack([sample_features(self.by_depth[depth][0], self.colsample_bynode,
                                                self.rng) for _ in ids])
        slots = np.array([self.pool.slot[k] for k in ids], np.int64)
        with self.small.serial(len(ids) * self.events.n_features <= _serial_scans()):
            params = quantum_floor(self.params, self.events.quantiser)
            if self.events.quantised:  # each feature decoded where it is scanned
                g, f, t, ml, left_of = find_best_packed_splits(
                    self.pool.raw, slots, self.events.quantiser.scale_a,
                    self.events.quantiser.scale_b, self.nodes.sums[ids], allowed,
                    self.n_value_bins, params.as_tuple())
            else:
                g, f, t, ml, left_of = find_best_splits(self.pool.raw, slots, self.nodes.sums[ids],
                                                        allowed, self.n_value_bins, params)
        return [None if f[i] < 0 else
                _Splits(np.zeros(1, np.int64), g[i:i + 1], f[i:i + 1], t[i:i + 1], ml[i:i + 1],
                        left_of[i:i + 1]) for i in range(len(ids))]


def _split_leaf(events: _TreeEvents, nodes: _NodeArrays, parent: int, split: _Splits,
                move_payload: bool, threads: int) -> tuple[int, int, int, int, int] | None:
    """Partition one leaf's events (the depth-wise kernels, on one node, in a multiple of
    ``threads`` chunks of at most PARTITION_CHUNK events) and add its two children: (left,
    right, start, mid, stop). Stable, so the chunks do not change the result. None, and
    no children, when a side holds no event (the partition then moved nothing)."""
    s, e = int(nodes.start[parent]), int(nodes.stop[parent])
    n_chunks = threads * max(1, -(-(e - s) // (threads * PARTITION_CHUNK)))
    chunk_start = np.arange(s, e, max(1, -(-(e - s) // n_chunks)), dtype=np.int64)
    chunk_stop = np.minimum(chunk_start + max(1, -(-(e - s) // n_chunks)), e)
    n_left = np.empty(chunk_start.size, np.int64)
    payload = events.payload if move_payload else NO_PAYLOAD
    with launch_lock():
        _partition_chunks(*events.split_codes, events.partition, payload, chunk_start,
                          chunk_stop, np.zeros(chunk_start.size, np.int64), split.feature,
                          split.threshold.astype(np.uint8), split.missing_left, events.scratch_idx,
                          events.scratch_payload, n_left)
        n_right = (chunk_stop - chunk_start) - n_left
        mid = s + int(n_left.sum())
        _gather_chunks(events.partition, payload, chunk_start, chunk_stop, n_left,
                       s + np.cumsum(n_left) - n_left, mid + np.cumsum(n_right) - n_right,
                       events.scratch_idx, events.scratch_payload)
    if mid in (s, e):  # a side without events: not a split (see _apply_real_splits)
        return None
    return (*_add_leaf_children(nodes, parent, split, s, mid, e), s, mid, e)


def _add_leaf_children(nodes: _NodeArrays, parent: int, split: _Splits, s: int, mid: int,
                       e: int) -> tuple[int, int]:
    """Record ``split`` (of one leaf) on ``parent`` and add its children, events [s, mid)
    and [mid, e) of the partition: (left, right)."""
    left, right = (int(k) for k in nodes.add(2))
    nodes.feature[parent], nodes.bin_threshold[parent] = split.feature[0], split.threshold[0]
    nodes.missing_left[parent], nodes.gain[parent] = split.missing_left[0], split.gain[0]
    nodes.left[parent], nodes.right[parent] = left, right
    nodes.start[left], nodes.stop[left], nodes.start[right], nodes.stop[right] = s, mid, mid, e
    nodes.sums[left] = split.left_sums[0]
    nodes.sums[right] = nodes.sums[parent] - split.left_sums[0]
    return left, right


def _leaf_histograms(events: _TreeEvents, pool: _HistogramPool, waiting: dict[int, _Splits],
                     small_work: _SmallWork, parent: int, left: int, right: int, s: int, mid: int,
                     e: int) -> None:
    """Children's histograms into the pool: the smaller from its events and the larger, in
    the parent's slot, as parent minus smaller; both from their events when the parent's
    histogram was given up."""
    small, large = (left, right) if mid - s <= e - mid else (right, left)
    start, stop = (s, mid) if small == left else (mid, e)
    one = np.zeros(1, np.int64)
    if parent in pool.slot:
        parent_slot = pool.slot.pop(parent)
        pool.slot[large] = parent_slot
        small_slot = pool.take(small, waiting)
        serial = stop - start <= SERIAL_EVENTS
        with small_work.serial(serial):
            events.fill(pool.raw, one + start, one + stop, one + small_slot, pool.raw,
                        one + parent_slot, one + parent_slot,
                        threads=1 if serial else small_work.n_threads)
    else:
        slots = np.array([pool.take(left, waiting), pool.take(right, waiting)], np.int64)
        serial = e - s <= SERIAL_EVENTS
        with small_work.serial(serial):
            events.fill(pool.raw, np.array([s, mid], np.int64), np.array([mid, e], np.int64), slots,
                        threads=1 if serial else small_work.n_threads)


@njit
def _partition_leaf(split_codes, by_event, partition, scratch_idx, s, e, split_feature,
                    split_threshold, split_missing_left, threads):
    """``_split_leaf``'s partition of [s, e) on packed channels (indices only), in one call:
    the mid."""
    n_chunks = threads * max(1, -(-(e - s) // (threads * PARTITION_CHUNK)))
    size = max(1, -(-(e - s) // n_chunks))
    n_chunks = -(-(e - s) // size)
    chunk_start = np.arange(n_chunks) * size + s
    chunk_stop = np.minimum(chunk_start + size, e)
    n_left = np.empty(n_chunks, np.int64)
    no_payload = np.empty((0, N_CHANNELS), CHANNEL_DTYPE)  # the packed channels stay in place
    chunk_node = np.zeros(n_chunks, np.int64)
    if threads == 1:  # no other thread woken
        _partition_chunks_1(split_codes, by_event, partition, no_payload, chunk_start,
                            chunk_stop, chunk_node, split_feature, split_threshold,
                            split_missing_left, scratch_idx, no_payload, n_left)
    else:
        _partition_chunks(split_codes, by_event, partition, no_payload, chunk_start, chunk_stop,
                          chunk_node, split_feature, split_threshold, split_missing_left,
                          scratch_idx, no_payload, n_left)
    n_right = (chunk_stop - chunk_start) - n_left
    mid = s + n_left.sum()
    left_dst, right_dst = s + np.cumsum(n_left) - n_left, mid + np.cumsum(n_right) - n_right
    if threads == 1:
        _gather_chunks_1(partition, no_payload, chunk_start, chunk_stop, n_left, left_dst,
                         right_dst, scratch_idx, no_payload)
    else:
        _gather_chunks(partition, no_payload, chunk_start, chunk_stop, n_left, left_dst,
                       right_dst, scratch_idx, no_payload)
    return mid


@njit
def _leaf_packed_histogram(codes, partition, packed, start, stop, threads, buffers, raw, wide,
                           slot, parent_slot):
    """``build_histograms`` of one node's events [start, stop) into ``raw[slot]`` in
    ``threads`` tasks a multiple, and its sibling, the parent's minus it, in
    ``raw[parent_slot]``, in one call."""
    n_tasks = threads * max(1, -(-(stop - start) // (threads * PACKED_TASK)))
    task = max(1, -(-(stop - start) // n_tasks))
    n_tasks = -(-(stop - start) // task)
    task_start = np.arange(n_tasks) * task + start
    task_stop = np.minimum(task_start + task, stop)
    m = codes.shape[1]
    flat = raw.reshape(raw.shape[0], m, -1)  # wide: two int64 lanes a bin, side by side
    parent = np.full(1, parent_slot, np.int64)
    if threads == 1:  # no other thread woken
        _task_sums_1(codes, partition, packed, task_start, task_stop, m, buffers)
        _reduce_tasks_1(buffers, np.zeros(n_tasks, np.int64), np.full(1, slot, np.int64), flat,
                        flat, parent, parent, wide)
    else:
        _task_sums(codes, partition, packed, task_start, task_stop, m, buffers)
        _reduce_tasks(buffers, np.zeros(n_tasks, np.int64), np.full(1, slot, np.int64), flat,
                      flat, parent, parent, wide)


class _PackedSplits:
    """Leaf-wise splits on packed histograms in three compiled calls each (the partition,
    the smaller child's histogram, both children's searches), where every feature may be
    used at every node (no column draws) and the pool has a free slot: the same
    partitions, histograms, searches and pool slots as ``_split_leaf``,
    ``_leaf_histograms`` and ``_LeafSplitter``, without most of the Python between their
    kernels; small work calls the kernels' serial twins. The trees of at most
    COMPILED_LEAVES leaves grow in ``_packed_leaves`` instead (the same steps, one call)."""

    def __init__(self, events: _TreeEvents, nodes: _NodeArrays, pool: _HistogramPool,
                 n_value_bins: np.ndarray, params: SplitParams, small: _SmallWork):
        self.events, self.nodes, self.pool = events, nodes, pool
        self.n_value_bins, self.small = n_value_bins, small
        self.params = quantum_floor(params, events.quantiser).as_tuple()
        self.allowed = np.tile(events.used, (2, 1))
        self.child_sums = np.empty((2, N_CHANNELS))
        self.out = (np.empty(2), np.empty(2, np.int32), np.zeros(2, np.int32),
                    np.zeros(2, np.bool_), np.zeros((2, N_CHANNELS)))

    @staticmethod
    def applies(events: _TreeEvents, colsample_bylevel: float, colsample_bynode: float) -> bool:
        """Whether the trees of these events and draws take the compiled splits."""
        return events.quantised and colsample_bylevel >= 1.0 and colsample_bynode >= 1.0

    def __call__(self, parent: int, split: _Splits, build: bool, waiting: dict[int, _Splits]):
        """Split ``parent``: None when a side holds no event; else (left, right) and, with
        ``build`` (the parent holds a slot and the pool a free one), each child's best
        split (None where none is valid), its histogram pooled."""
        events, nodes, pool = self.events, self.nodes, self.pool
        s, e = int(nodes.start[parent]), int(nodes.stop[parent])
        sums = nodes.sums[parent]
        self.child_sums[0] = split.left_sums[0]
        self.child_sums[1] = sums - split.left_sums[0]
        spare = pool.take(-1, waiting) if build else 0
        parent_slot = pool.slot[parent] if build else 0
        with launch_lock():
            mid = int(_partition_leaf(*events.split_codes, events.partition, events.scratch_idx,
                                      s, e, split.feature.astype(np.int32),
                                      split.threshold.astype(np.uint8),
                                      split.missing_left.astype(np.bool_),
                                      1 if e - s <= SERIAL_EVENTS else self.small.n_threads))
        if mid in (s, e):  # a side without events: not a split (see _apply_real_splits)
            if build:
                pool.slot.pop(-1)
                pool.free.append(spare)
            return None
        small_left = mid - s <= e - mid
        if build:
            start, stop = (s, mid) if small_left else (mid, e)
            threads = 1 if stop - start <= SERIAL_EVENTS else self.small.n_threads
            buffers = events.task_buffers.get(
                threads * max(1, -(-(stop - start) // (threads * PACKED_TASK))), events.n_features)
            with launch_lock():
                _leaf_packed_histogram(events.codes, events.partition, events.payload, start, stop,
                                       threads, buffers, pool.raw, events.wide, spare, parent_slot)
            slots = np.array([spare, parent_slot] if small_left else [parent_slot, spare],
                             np.int64)
            with launch_lock():
                _scan_children(pool.raw, slots, events.quantiser.scale_a, events.quantiser.scale_b,
                               self.child_sums, self.allowed, self.n_value_bins, self.params,
                               2 * events.n_features <= _serial_scans(), *self.out)
            pool.slot.pop(-1)
        left, right = _add_leaf_children(nodes, parent, split, s, mid, e)
        if not build:
            return left, right, None
        small, large = (left, right) if small_left else (right, left)
        pool.slot.pop(parent)
        pool.slot[large] = parent_slot
        pool.slot[small] = spare
        g, f, t, ml, left_of = self.out
        found = [None if f[i] < 0 else
                 _Splits(np.zeros(1, np.int64), g[i:i + 1].copy(), f[i:i + 1].copy(),
                         t[i:i + 1].copy(), ml[i:i + 1].copy(), left_of[i:i + 1].copy())
                 for i in range(2)]
        return left, right, found


@njit
def _scan_children(raw, slots, scale_a, scale_b, child_sums, allowed, n_value_bins, params,
                   serial, out_gain, out_feature, out_bin, out_missing_left, out_left):
    """``_find_best_packed`` of ``slots`` (on one thread when ``serial``)."""
    criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight, min_split_gain = params
    if serial:
        _find_best_packed_1(raw, slots, scale_a, scale_b, child_sums, allowed, n_value_bins,
                            criterion, reg_lambda, reg_alpha, min_child_hessian,
                            min_child_weight, min_split_gain, out_gain, out_feature, out_bin,
                            out_missing_left, out_left)
    else:
        _find_best_packed(raw, slots, scale_a, scale_b, child_sums, allowed, n_value_bins,
                          criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight,
                          min_split_gain, out_gain, out_feature, out_bin, out_missing_left,
                          out_left)


@njit
def _wait(k, i, g, f, t, ml, left_of, waiting, w_gain, w_feature, w_bin, w_missing, w_left):
    """Leaf ``k`` waits with search result ``i`` as its best split."""
    waiting[k] = True
    w_gain[k], w_feature[k], w_bin[k], w_missing[k] = g[i], f[i], t[i], ml[i]
    for ch in range(w_left.shape[1]):  # a loop: an array assigned to a slice compiles
        w_left[k, ch] = left_of[i, ch]  # numpy's shape error message


@njit
def _release(k, slot, free, n_free):
    """Give node ``k``'s histogram slot back; the new count of free slots."""
    free[n_free] = slot[k]
    slot[k] = -1
    return n_free + 1


@njit
def _packed_leaves(split_codes, by_event, codes, partition, packed, scratch_idx, raw, wide,
                   max_leaves, depth_limit, allowed, n_value_bins, params, scale_a, scale_b,
                   buffers, threads, serial_events, serial_scans, feature, bin_threshold,
                   missing_left, left, right, gain, start, stop, sums):
    """``_grow_leafwise`` with ``_PackedSplits`` in one call, the root's histogram in
    ``raw[0]`` and a slot of ``raw`` for every leaf (so none is given up): the same best
    splits (largest gain first, ties the lowest node id), partitions, child histograms,
    searches and node numbering, into the node arrays (capacity 2 max_leaves - 1). Work
    below ``serial_events`` events or ``serial_scans`` scans runs on one thread (the
    kernels' serial twins), as ``_SmallWork`` runs it. Returns the node count."""
    w_gain, w_feature, w_bin, w_missing, w_left, waiting, depth, slot = waiting_leaves(
        feature.size)
    free = np.empty(raw.shape[0], np.int64)  # room for every slot: all can be free
    n_free = raw.shape[0] - 1
    for i in range(n_free):  # slot 0 holds the root's histogram (loops, not arrays
        free[i] = n_free - i  # assigned to slices: see _wait)
    slot[0] = 0
    g = np.empty(2)
    f = np.empty(2, np.int32)
    t = np.zeros(2, np.int32)
    ml = np.zeros(2, np.bool_)
    left_of = np.zeros((2, N_CHANNELS))
    child_sums = np.empty((2, N_CHANNELS))
    pair = np.empty(2, np.int64)
    n_nodes, n_leaves = 1, 1
    if depth_limit > 0:
        pair[0] = 0
        _scan_children(raw, pair[:1], scale_a, scale_b, sums[:1], allowed[:1], n_value_bins,
                       params, allowed.shape[1] <= serial_scans, g, f, t, ml, left_of)
        if f[0] >= 0:
            _wait(0, 0, g, f, t, ml, left_of, waiting, w_gain, w_feature, w_bin, w_missing,
                  w_left)
    while n_leaves < max_leaves:
        parent = _best_waiting(waiting, w_gain, n_nodes)
        if parent < 0:
            break
        waiting[parent] = False
        d = depth[parent] + 1
        build = n_leaves + 1 < max_leaves and d < depth_limit
        s, e = start[parent], stop[parent]
        mid = _partition_leaf(split_codes, by_event, partition, scratch_idx, s, e,
                              w_feature[parent:parent + 1], w_bin[parent:parent + 1].astype(np.uint8),
                              w_missing[parent:parent + 1],
                              1 if e - s <= serial_events else threads)
        if mid == s or mid == e:  # a side without events: not a split
            n_free = _release(parent, slot, free, n_free)
            continue
        lc, rc = n_nodes, n_nodes + 1
        n_nodes += 2
        n_leaves += 1
        feature[parent], bin_threshold[parent] = w_feature[parent], w_bin[parent]
        missing_left[parent], gain[parent] = w_missing[parent], w_gain[parent]
        left[parent], right[parent] = lc, rc
        start[lc], stop[lc], start[rc], stop[rc] = s, mid, mid, e
        for ch in range(sums.shape[1]):  # loops, not arrays assigned to rows (see _wait)
            sums[lc, ch] = w_left[parent, ch]
            sums[rc, ch] = sums[parent, ch] - w_left[parent, ch]
        if not build:
            n_free = _release(parent, slot, free, n_free)
            continue
        depth[lc] = depth[rc] = d
        spare = free[n_free - 1]
        n_free -= 1
        parent_slot = slot[parent]
        slot[parent] = -1
        small_left = mid - s <= e - mid
        small, large = (lc, rc) if small_left else (rc, lc)
        lo, hi = (s, mid) if small_left else (mid, e)
        _leaf_packed_histogram(codes, partition, packed, lo, hi,
                               1 if hi - lo <= serial_events else threads, buffers, raw, wide,
                               spare, parent_slot)
        slot[small], slot[large] = spare, parent_slot
        pair[0], pair[1] = slot[lc], slot[rc]
        for ch in range(child_sums.shape[1]):
            child_sums[0, ch], child_sums[1, ch] = sums[lc, ch], sums[rc, ch]
        _scan_children(raw, pair, scale_a, scale_b, child_sums, allowed, n_value_bins, params,
                       2 * allowed.shape[1] <= serial_scans, g, f, t, ml, left_of)
        for i in range(2):
            k = lc + i
            if f[i] < 0:
                n_free = _release(k, slot, free, n_free)
            else:
                _wait(k, i, g, f, t, ml, left_of, waiting, w_gain, w_feature, w_bin, w_missing,
                      w_left)
    return n_nodes


def _leaves_compiled(events: _TreeEvents, nodes: _NodeArrays, max_leaves: int,
                     colsample_bylevel: float, colsample_bynode: float) -> bool:
    """Whether ``_packed_leaves`` grows this leaf-wise tree: packed channels, no column
    draws, room for every node and a histogram slot for every leaf."""
    return (_PackedSplits.applies(events, colsample_bylevel, colsample_bynode)
            and max_leaves <= COMPILED_LEAVES and nodes.feature.size >= 2 * max_leaves - 1
            and events.leaf_capacity() >= max_leaves)


def _exact_leaves_compiled(events: _TreeEvents, nodes: _NodeArrays, max_leaves: int,
                           colsample_bylevel: float, colsample_bynode: float) -> bool:
    """Whether ``grow_exact_leaves_serial`` grows this leaf-wise tree: exact (A, B, W)
    histograms, no column draws, one thread and a small sample (as ``_serial_fits``), room
    for every node and a histogram for every leaf."""
    return (not events.quantised and events.n_channels == N_CHANNELS
            and colsample_bylevel >= 1.0 and colsample_bynode >= 1.0
            and nodes.feature.size >= 2 * max_leaves - 1
            and serial_leaves_fit(events.partition.size, events.n_features, max_leaves))


def _grow_exact_leaves(events: _TreeEvents, nodes: _NodeArrays, n_value_bins: np.ndarray,
                       params: SplitParams, max_depth: int | None, max_leaves: int,
                       workspace: SerialWorkspace | None) -> None:
    """``grow_exact_leaves_serial`` into ``nodes``, in ``workspace``'s buffers (a new one:
    None), made again only for other shapes."""
    pool, bits, dirty, _, _, scratch_idx, scratch_payload, scan_sums, scan_bins = (
        serial_leaves_buffers(events.partition.size, events.n_features, max_leaves,
                              events.partition.dtype, events.payload.dtype,
                              workspace)[:SERIAL_NODE_ARRAYS])
    nodes.size = int(grow_exact_leaves_serial(
        events.codes, events.partition, events.payload, events.used, n_value_bins,
        params.as_tuple(), max_leaves, depth_limit_of(max_depth), pool, bits, dirty,
        scratch_idx, scratch_payload, scan_sums, scan_bins, nodes.feature, nodes.bin_threshold,
        nodes.missing_left, nodes.left, nodes.right, nodes.gain, nodes.start, nodes.stop,
        nodes.sums, _serial_tree.SPARSE_EVENTS))


def depth_limit_of(max_depth: int | None) -> int:
    """A leaf-wise tree's depth limit as the compiled trees take it (None: no limit)."""
    return np.iinfo(np.int64).max if max_depth is None else int(max_depth)


def serial_leaves_buffers(n_rows: int, m: int, max_leaves: int, index_dtype: np.dtype,
                          payload_dtype: np.dtype, workspace: SerialWorkspace | None) -> tuple:
    """``serial_tree_buffers``' layout for ``grow_exact_leaves_serial``'s trees: a histogram
    buffer for every leaf, one row of the scans' scratch, room for 2 max_leaves - 1 nodes
    (free and buf empty: the leaf-wise tree keeps its own), from ``workspace`` (a new one:
    None), made again only for other shapes."""
    capacity = 2 * max_leaves - 1
    key = ("leaves", n_rows, m, max_leaves, np.dtype(index_dtype), np.dtype(payload_dtype))

    def make(space: SerialWorkspace) -> tuple:
        dirty = space.array("leaf_dirty", (max_leaves,), np.bool_)
        dirty.fill(True)  # the kernel zeroes a dirty buffer before it uses it
        return (space.array("leaf_hists", (max_leaves, m, N_BINS, N_CHANNELS), np.float64),
                space.array("leaf_bits", (max_leaves, m, 4), np.uint64), dirty,
                np.empty(0, np.int64), np.empty(0, np.int64),
                space.array("scratch_idx", (2, n_rows), index_dtype),
                space.array("scratch_payload", (2, n_rows, N_CHANNELS), payload_dtype),
                space.array("scan_sums", (1, 5, N_BINS), np.float64),
                space.array("scan_bins", (1, N_BINS), np.int64),
                *(space.array(name, (capacity,), dtype) for name, dtype, _ in _NodeArrays.FIELDS),
                space.array("sums", (capacity, N_CHANNELS), np.float64))

    return (workspace if workspace is not None else SerialWorkspace()).arrays(key, make)


def serial_leaves_fit(n_rows: int, m: int, max_leaves: int) -> bool:
    """Whether leaf-wise trees of exact (A, B, W) histograms of ``n_rows`` events x ``m``
    features grow in one compiled call (``grow_exact_leaves_serial``): one thread, a small
    sample and a histogram buffer for every leaf."""
    return (numba.get_num_threads() == 1 and n_rows * m <= SERIAL_TREE_WORK
            and max_leaves <= COMPILED_LEAVES
            and max_leaves <= leaf_capacity(m, N_CHANNELS * 8))


def leaf_capacity(m: int, per_bin: int) -> int:
    """How many leaves' histograms of ``m`` features, ``per_bin`` bytes a bin, leaf-wise
    growth may hold (LEVEL_HISTOGRAM_BYTES; at least three)."""
    return max(3, LEVEL_HISTOGRAM_BYTES // (m * N_BINS * per_bin))


def _grow_packed_leaves(events: _TreeEvents, nodes: _NodeArrays, n_value_bins: np.ndarray,
                        params: SplitParams, max_depth: int | None, max_leaves: int) -> None:
    """``_packed_leaves`` into ``nodes``, from the root's histogram."""
    raw_root, _ = _root_histograms(events, nodes)
    raw = new_histograms(max_leaves, events.n_features, packed=True, wide=events.wide,
                         n_channels=events.n_channels)
    raw[0] = raw_root[0]
    del raw_root
    threads = numba.get_num_threads()
    half = events.partition.size // 2 + 1  # a child built from its events is the smaller one
    buffers = events.task_buffers.get(threads * max(1, -(-half // (threads * PACKED_TASK))),
                                      events.n_features)
    depth_limit = np.iinfo(np.int64).max if max_depth is None else int(max_depth)
    with launch_lock():
        nodes.size = int(_packed_leaves(
            *events.split_codes, events.codes, events.partition, events.payload, events.scratch_idx,
            raw, events.wide, max_leaves, depth_limit, np.tile(events.used, (2, 1)), n_value_bins,
            quantum_floor(params, events.quantiser).as_tuple(), events.quantiser.scale_a,
            events.quantiser.scale_b, buffers, threads, SERIAL_EVENTS, _serial_scans(),
            nodes.feature, nodes.bin_threshold, nodes.missing_left, nodes.left, nodes.right,
            nodes.gain, nodes.start, nodes.stop, nodes.sums))


def _grow_leafwise(events: _TreeEvents, nodes: _NodeArrays, n_value_bins: np.ndarray,
                   params: SplitParams, max_depth: int | None, max_leaves: int,
                   colsample_bylevel: float, colsample_bynode: float,
                   rng: np.random.Generator, workspace: SerialWorkspace | None = None) -> None:
    """Best-first growth into ``nodes``: split the waiting leaf of the largest gain (ties:
    the lower node id, so threads never matter) until ``max_leaves`` leaves or none can split.

    Each leaf's best split is found when the leaf is made, from its histogram; a split
    partitions the leaf's events (the depth-wise kernels on one node), builds the smaller
    child's histogram and the larger's by subtraction, and finds both children's best
    splits. Histograms are held only for leaves waiting to be split, at most
    min(max_leaves, LEVEL_HISTOGRAM_BYTES / (features x bins x bytes per bin)) of them (and
    at least three), so memory is O(max_leaves x features x bins) and at most 256 MiB (24
    bytes a bin exact, 8 packed): 64 leaves x 28 features take 11 MiB exact, 3.5 MiB packed.
    Past that bound the leaf that would be split last gives its histogram up.

    Nodes are split one at a time: splitting the k best waiting leaves together (one
    level-style call) would not be best-first, because a child can gain more than its
    parent's waiting rivals, and then it must be split before them (as LightGBM and XGBoost
    do, exact best-first order is kept).
    """
    if _leaves_compiled(events, nodes, max_leaves, colsample_bylevel, colsample_bynode):
        _grow_packed_leaves(events, nodes, n_value_bins, params, max_depth, max_leaves)
        return
    if _exact_leaves_compiled(events, nodes, max_leaves, colsample_bylevel, colsample_bynode):
        _grow_exact_leaves(events, nodes, n_value_bins, params, max_depth, max_leaves, workspace)
        return
    pool = _HistogramPool(events, min(max_leaves, events.leaf_capacity()))
    raw, _ = _root_histograms(events, nodes)
    pool.raw[pool.take(0, {})] = raw[0]
    del raw
    small_work = _SmallWork()
    splitter = _LeafSplitter(events, nodes, pool, n_value_bins, params, colsample_bylevel,
                             colsample_bynode, rng, small_work)
    depth_limit = np.inf if max_depth is None else max_depth
    depth = {0: 0}
    waiting: dict[int, _Splits] = {}  # leaves with a valid split, by node id
    queue: list[tuple[float, int]] = []  # (-gain, node id): the best gain, then the lowest id

    def consider(ids: list[int], d: int) -> None:
        for k, split in zip(ids, splitter(ids, d), strict=True):
            if split is None:
                pool.release(k)
            else:
                waiting[k] = split
                heapq.heappush(queue, (-float(split.gain[0]), k))

    if depth_limit > 0:
        consider([0], 0)
    packed = (_PackedSplits(events, nodes, pool, n_value_bins, params, small_work)
              if _PackedSplits.applies(events, colsample_bylevel, colsample_bynode) else None)
    n_leaves = 1
    while queue and n_leaves < max_leaves:
        _, parent = heapq.heappop(queue)
        split = waiting.pop(parent)
        d = depth[parent] + 1
        grow_children = n_leaves + 1 < max_leaves and d < depth_limit
        if packed is not None and (not grow_children or (parent in pool.slot and pool.free)):
            made = packed(parent, split, grow_children, waiting)
            n_leaves += made is not None
            if made is None or not grow_children:
                pool.release(parent)
                continue
            depth[made[0]] = depth[made[1]] = d
            for k, found in zip(made[:2], made[2], strict=True):
                if found is None:
                    pool.release(k)
                else:
                    waiting[k] = found
                    heapq.heappush(queue, (-float(found.gain[0]), k))
            continue
        # The float payload must follow the partition only while children still get histograms.
        serial = nodes.stop[parent] - nodes.start[parent] <= SERIAL_EVENTS
        with small_work.serial(serial):
            made = _split_leaf(events, nodes, parent, split, grow_children and not events.quantised,
                               1 if serial else small_work.n_threads)
        if made is not None:
            n_leaves += 1
        if made is None or not grow_children:
            pool.release(parent)
            continue
        left, right, s, mid, e = made
        depth[left] = depth[right] = d
        _leaf_histograms(events, pool, waiting, small_work, parent, left, right, s, mid, e)
        consider([left, right], d)


def grow_tree(
    codes: np.ndarray,
    rows: np.ndarray | None,
    a: np.ndarray,
    b: np.ndarray,
    w: np.ndarray,
    n_value_bins: np.ndarray,
    params: SplitParams,
    max_depth: int | None,
    features: np.ndarray | None = None,
    colsample_bylevel: float = 1.0,
    colsample_bynode: float = 1.0,
    rng: np.random.Generator | None = None,
    quantised: bool = False,
    ordered: QuantisedRows | None = None,
    rounding_seed: int = 0,
    max_leaves: int | None = None,
    workspace: SerialWorkspace | None = None,
    max_abs: tuple[float, float] | None = None,
) -> GrownTree:
    """Grow one tree, depth-wise (``max_leaves`` None) or leaf-wise (best first).

    Parameters
    ----------
    codes : (m, n) uint8 bin codes, feature-major; event-major (n, m) when ``quantised``
        (ignored when ``ordered`` is given: it holds them).
    rows : (n_rows,) int32 events of this tree (a subsample), or None: every event.
    a, b, w : (n,) float32 channels A, B and event weight W of every event; for
        CLASS_GINI, ``a`` (K, n) the weight of each event in each class's channel (zero
        outside its class) and ``b`` None (the tree's ``class_sums`` then hold the sums).
    n_value_bins : (m,) int32 value bins per feature.
    params : split criterion and constraints.
    max_depth : maximum depth (the root has depth 0); None (leaf-wise only): no limit.
    features : (m,) bool features this tree may use (column subsampling per tree).
    colsample_bylevel, colsample_bynode : further fractions per level and per node (leaf-wise:
        per depth of the node being split, as XGBoost's lossguide).
    rng : generator for the per-level and per-node feature draws.
    quantised : pack A and B into int64 histograms (W is then replaced by B).
    rounding_seed : seed of the stochastic rounding of the quantised channels (the
        boosting loop passes the tree's index, so a model without subsampling never
        depends on a random state).
    ordered : the quantised grower's codes and buffers (``rows`` must then be every
        event); built from ``codes`` when None. Reused across trees, it is modified in
        place, and so is ``partition`` of the tree it returns.
    max_leaves : None: depth-wise growth. An integer >= 2: leaf-wise growth, splitting the
        leaf of the largest gain (ties: the lowest node id) until the tree has this many
        leaves or no leaf can split (constraints, ``max_depth``); see ``_grow_leafwise``.
    workspace : buffers that the small trees grown in one compiled call reuse (the trees
        of one fit share one; None: fresh ones).
    max_abs : quantised: (max |A|, max |B|) of every event as numpy's max (None: found here).
    """
    if max_leaves is not None and max_leaves < 2:
        raise ValueError(f"max_leaves={max_leaves} is not valid; a split makes 2 leaves")
    if max_depth is None and max_leaves is None:
        raise ValueError("max_depth=None (no depth limit) needs max_leaves")
    check_n_events(ordered.codes.shape[0] if ordered is not None else codes.shape[not quantised])
    if quantised and ordered is None:
        ordered = QuantisedRows(np.ascontiguousarray(codes))
    m = ordered.n_features if quantised else codes.shape[0]
    used = np.ones(m, dtype=np.bool_) if features is None else features.astype(np.bool_)
    rng = rng if rng is not None else np.random.default_rng(0)
    if quantised:
        events = _TreeEvents.quantised_rows(ordered, rows, a, b, used, rounding_seed, max_abs=max_abs)
    else:
        events = _TreeEvents.exact_rows(codes, rows, a, b, w, used)
    n_rows = events.partition.size
    # Every node holds an event (a split leaves events on both sides): at most 2n - 1 nodes.
    if max_leaves is not None:
        nodes = _NodeArrays(min(2 * max_leaves - 1, max(1, 2 * n_rows - 1)), max(1, 2 * n_rows - 1),
                            events.n_channels)
        _grow_leafwise(events, nodes, n_value_bins, params, max_depth, max_leaves,
                       colsample_bylevel, colsample_bynode, rng, workspace)
    elif _serial_fits(events, max_depth, colsample_bylevel, colsample_bynode):
        return _grow_serial(events, n_value_bins, params, max_depth, workspace)
    else:
        nodes = _NodeArrays(1 + 2 * min(n_rows, 1 << min(max_depth, 10)), max(1, 2 * n_rows - 1),
                            events.n_channels)
        _grow_depthwise(events, nodes, n_value_bins, params, max_depth, colsample_bylevel,
                        colsample_bynode, rng)
    return nodes.grown_tree(events.partition)


def _serial_fits(events: _TreeEvents, max_depth: int, colsample_bylevel: float,
                 colsample_bynode: float) -> bool:
    """Whether ``_serial_tree`` grows this tree: exact histograms, no feature draws below
    the tree, every level's histograms held, one thread and a small sample."""
    return (not events.quantised and events.n_channels == N_CHANNELS
            and colsample_bylevel >= 1.0 and colsample_bynode >= 1.0
            and serial_tree_fits(events.partition.size, events.n_features, max_depth,
                                 events.level_capacity()))


def serial_tree_fits(n_rows: int, m: int, max_depth: int, level_capacity: int | None = None) -> bool:
    """Whether a tree of exact (A, B, W) histograms of ``n_rows`` events x ``m`` features,
    depth ``max_depth``, grows in one compiled call (``grow_exact_serial``): one thread, a
    small sample, every level's histograms held (``level_capacity``: how many nodes' a
    level holds, that of exact histograms when None)."""
    if level_capacity is None:
        level_capacity = max(2, LEVEL_HISTOGRAM_BYTES // (m * N_BINS * N_CHANNELS * 8))
    return (numba.get_num_threads() == 1 and n_rows * m <= SERIAL_TREE_WORK
            and min(n_rows, 1 << min(max_depth, 30)) <= level_capacity)


def serial_tree_buffers(n_rows: int, m: int, max_depth: int, index_dtype: np.dtype,
                        payload_dtype: np.dtype, workspace: SerialWorkspace | None,
                        threads: int = 1) -> tuple:
    """The buffers ``grow_exact_serial`` takes after ``max_depth`` (histogram pool, bits,
    dirty, free, buf, the partition's and the scans' scratch (a row for each of ``threads``),
    the node arrays of ``_NodeArrays.FIELDS`` from ``SERIAL_NODE_ARRAYS`` on, then the node
    sums), from ``workspace`` (a new one: None), made again only for other shapes."""
    capacity = min((1 << min(max_depth + 1, 31)) - 1, max(1, 2 * n_rows - 1))
    key = (n_rows, m, max_depth, np.dtype(index_dtype), np.dtype(payload_dtype), threads)

    def make(space: SerialWorkspace) -> tuple:
        level_nodes = max(1, min(n_rows, 1 << min(max_depth - 1, 30)))  # the deepest level held
        dirty = space.array("dirty", (level_nodes,), np.bool_)
        dirty.fill(True)  # the kernel zeroes a dirty buffer before it uses it
        return (space.array("hists", (level_nodes, m, N_BINS, N_CHANNELS), np.float64),
                space.array("bits", (level_nodes, m, 4), np.uint64), dirty,
                space.array("free", (level_nodes,), np.int64),
                space.array("buf", (capacity,), np.int64),
                space.array("scratch_idx", (2, n_rows), index_dtype),
                space.array("scratch_payload", (2, n_rows, N_CHANNELS), payload_dtype),
                space.array("scan_sums", (threads, 5, N_BINS), np.float64),
                space.array("scan_bins", (threads, N_BINS), np.int64),
                *(space.array(name, (capacity,), dtype) for name, dtype, _ in _NodeArrays.FIELDS),
                space.array("sums", (capacity, N_CHANNELS), np.float64))

    return (workspace if workspace is not None else SerialWorkspace()).arrays(key, make)


SERIAL_NODE_ARRAYS = 9  # where the node arrays start in ``serial_tree_buffers``


def serial_tree_sharing(n_rows: int, m: int) -> int:
    """The threads a one-call tree of ``n_rows`` x ``m`` shares its levels over (1: none)."""
    shares = n_rows * m >= SERIAL_SHARED_WORK and m >= SERIAL_SHARED_FEATURES
    return serial_tree_threads() if shares else 1


@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[None]:
    """Numba's thread count set to ``n`` inside (nothing done for 1: the fit's one thread)."""
    if n <= 1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _grow_serial(events: _TreeEvents, n_value_bins: np.ndarray, params: SplitParams,
                 max_depth: int, workspace: SerialWorkspace | None) -> GrownTree:
    """The depth-wise tree in one compiled call (``_serial_tree``), in ``workspace``'s
    buffers (a new one: None)."""
    n_rows, m = events.partition.size, events.n_features
    shared = serial_tree_sharing(n_rows, m)
    buffers = serial_tree_buffers(n_rows, m, max_depth, events.partition.dtype,
                                  events.payload.dtype, workspace, shared)
    with launch_lock(), numba_threads(shared):
        grow = grow_exact_serial if shared > 1 else grow_exact_serial_1
        n_nodes = grow(events.codes, events.partition, events.payload, events.used, n_value_bins,
                       params.as_tuple(), max_depth, *buffers, _serial_tree.SPARSE_EVENTS, shared)
    node_arrays, sums = buffers[SERIAL_NODE_ARRAYS:-1], buffers[-1][:n_nodes]
    arrays = {name: a[:n_nodes].copy()
              for (name, _, _), a in zip(_NodeArrays.FIELDS, node_arrays, strict=True)}
    return GrownTree(**arrays, sum_a=sums[:, 0].copy(), sum_b=sums[:, 1].copy(),
                     sum_w=sums[:, 2].copy(), partition=events.partition)


@njit
def _packed_histograms(codes, partition, packed, node_start, node_stop, slots, raw, parent_raw,
                       parent_slots, sibling_slots, buffers):
    """``build_histograms`` on packed channels (``threads`` None: its task sizes), in one
    call: node j's events into ``raw[slots[j]]``, its sibling as the parent's minus it."""
    sizes = node_stop - node_start
    task = min(max(sizes.sum() // MIN_TASKS, MIN_PACKED_TASK), PACKED_TASK)
    n_tasks = np.maximum(1, -(-sizes // task))
    node = np.repeat(np.arange(sizes.size), n_tasks)
    first = np.cumsum(n_tasks) - n_tasks
    task_start = node_start[node] + (np.arange(node.size) - first[node]) * task
    task_stop = np.minimum(task_start + task, node_stop[node])
    m = codes.shape[1]
    _task_sums(codes, partition, packed, task_start, task_stop, m, buffers)
    wide = raw.ndim == 4
    _reduce_tasks(buffers, node, slots, raw.reshape(raw.shape[0], m, -1),
                  parent_raw.reshape(parent_raw.shape[0], m, -1), parent_slots, sibling_slots,
                  wide)


@njit
def _packed_levels(split_codes, by_event, codes, partition, packed, scratch_idx, raw,
                   max_depth, allowed, n_value_bins, params, scale_a, scale_b, buffers, feature,
                   bin_threshold, missing_left, left, right, gain, start, stop, sums):
    """``_grow_depthwise`` after the root, on packed channels with every feature allowed at
    every node and every level's histograms held, in one call: the same searches
    (``_find_best_packed``), stable partitions, real-split check, node numbering and child
    histograms, into the node arrays (capacity for the full tree; the root filled).
    Returns the node count."""
    criterion, reg_lambda, reg_alpha, min_child_hessian, min_child_weight, min_split_gain = params
    no_payload = np.empty((0, N_CHANNELS), CHANNEL_DTYPE)
    level = np.zeros(1, np.int64)
    n_nodes = 1
    for depth in range(max_depth):
        k = level.size
        g = np.empty(k)
        f = np.empty(k, np.int32)
        t = np.zeros(k, np.int32)
        ml = np.zeros(k, np.bool_)
        left_of = np.zeros((k, N_CHANNELS))
        _find_best_packed(raw, np.arange(k), scale_a, scale_b, sums[level], allowed[:k],
                          n_value_bins, criterion, reg_lambda, reg_alpha, min_child_hessian,
                          min_child_weight, min_split_gain, g, f, t, ml, left_of)
        position = np.flatnonzero(f >= 0)
        if position.size == 0:
            break
        parents = level[position]
        s, e = start[parents], stop[parents]
        chunk_start, chunk_stop, chunk_node = _chunk_layout(s, e)
        n_left = np.empty(chunk_node.size, np.int64)
        _partition_chunks(split_codes, by_event, partition, no_payload, chunk_start, chunk_stop,
                          chunk_node, f[position], t[position].astype(np.uint8), ml[position],
                          scratch_idx, no_payload, n_left)
        left_dst, right_dst, mid = _chunk_destinations(s, chunk_start, chunk_stop, chunk_node,
                                                       n_left)
        _gather_chunks(partition, no_payload, chunk_start, chunk_stop, n_left, left_dst,
                       right_dst, scratch_idx, no_payload)
        real = np.flatnonzero((mid > s) & (mid < e))  # _apply_real_splits
        if real.size == 0:
            break
        position, parents, s, mid, e = position[real], parents[real], s[real], mid[real], e[real]
        q = position.size
        for i in range(q):  # _add_children: children in split order, left before right
            p, lc, rc = parents[i], n_nodes + 2 * i, n_nodes + 2 * i + 1
            feature[p], bin_threshold[p] = f[position[i]], t[position[i]]
            missing_left[p], gain[p] = ml[position[i]], g[position[i]]
            left[p], right[p] = lc, rc
            start[lc], stop[lc], start[rc], stop[rc] = s[i], mid[i], mid[i], e[i]
            for ch in range(N_CHANNELS):
                sums[lc, ch] = left_of[position[i], ch]
                sums[rc, ch] = sums[p, ch] - left_of[position[i], ch]
        children = np.arange(n_nodes, n_nodes + 2 * q)
        n_nodes += 2 * q
        if depth + 1 == max_depth:
            break
        small = np.where(mid - s <= e - mid, 2 * np.arange(q), 2 * np.arange(q) + 1)
        small_nodes = children[small]
        child_raw = np.empty((2 * q,) + raw.shape[1:], np.int64)
        _packed_histograms(codes, partition, packed, start[small_nodes], stop[small_nodes],
                           small, child_raw, raw, position, small ^ 1, buffers)
        raw = child_raw
        level = children
    return n_nodes


def _levels_compiled(events: _TreeEvents, nodes: _NodeArrays, max_depth: int,
                     colsample_bylevel: float, colsample_bynode: float) -> bool:
    """Whether ``_packed_levels`` grows this depth-wise tree: packed channels, no column
    draws, room for every node of the full tree and every level's histograms held."""
    full = (1 << (max_depth + 1)) - 1 if max_depth <= 30 else None
    return (events.quantised and colsample_bylevel >= 1.0 and colsample_bynode >= 1.0
            and full is not None and nodes.feature.size >= min(full, nodes.max_nodes)
            and (1 << max(max_depth - 1, 0)) <= events.level_capacity())


def _grow_packed_levels(events: _TreeEvents, nodes: _NodeArrays, raw: np.ndarray,
                        n_value_bins: np.ndarray, params: SplitParams, max_depth: int) -> None:
    """``_packed_levels`` into ``nodes`` from the root's histogram ``raw``."""
    n = events.partition.size
    widest = min(1 << max(max_depth - 1, 0), n)  # nodes of the deepest level with histograms
    buffers = events.task_buffers.get(max(MIN_TASKS + 1, n // PACKED_TASK + 1) + widest,
                                      events.n_features)
    floor = quantum_floor(params, events.quantiser)
    allowed = np.tile(events.used, (widest, 1))
    with launch_lock():
        nodes.size = int(_packed_levels(
            *events.split_codes, events.codes, events.partition, events.payload, events.scratch_idx,
            raw, max_depth, allowed, n_value_bins, floor.as_tuple(), events.quantiser.scale_a,
            events.quantiser.scale_b, buffers, nodes.feature, nodes.bin_threshold,
            nodes.missing_left, nodes.left, nodes.right, nodes.gain, nodes.start, nodes.stop,
            nodes.sums))


def _grow_depthwise(events: _TreeEvents, nodes: _NodeArrays, n_value_bins: np.ndarray,
                    params: SplitParams, max_depth: int, colsample_bylevel: float,
                    colsample_bynode: float, rng: np.random.Generator) -> None:
    """Level-by-level growth into ``nodes``: every node of a level that can split does."""
    raw, _ = _root_histograms(events, nodes)
    if _levels_compiled(events, nodes, max_depth, colsample_bylevel, colsample_bynode):
        _grow_packed_levels(events, nodes, raw, n_value_bins, params, max_depth)
        return
    level = np.zeros(1, np.int64)  # node ids at this depth; raw[i] (when held) belongs to level[i]
    for depth in range(max_depth):
        if raw is None and level.size <= events.level_capacity():  # few enough again: hold them
            raw = events.histograms(level.size, nodes.start[level], nodes.stop[level],
                                    np.arange(level.size))
        splits = _choose_splits(events, raw, level, nodes, n_value_bins, params, colsample_bylevel,
                                colsample_bynode, rng)
        if splits is None:
            break
        last = depth + 1 == max_depth
        # The float payload follows the partition while histograms read it; packed stays in event order.
        applied = _apply_real_splits(events, nodes, level, splits,
                                     move_payload=not (events.quantised or last))
        if applied is None or last:
            break
        splits, children, s, mid, e = applied
        if raw is not None and children.size <= events.level_capacity():
            raw = _child_histograms(events, nodes, raw, splits.position, children, s, mid, e)
        else:  # too many nodes to hold: the next level builds them in batches
            raw = None
        level = children
