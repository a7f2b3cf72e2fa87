"""Per-node histograms of the booster channels, exact (float64) or quantised (packed int64).

Exact: float64 ``(n_features, N_BINS, 3)`` sums of the per-event channels A, B and W.
Quantised (gradient and newton boosting on large samples): A and B rounded
(stochastically) to integers and packed into one int64 per event (A in the high 32 bits,
B in the low 32 bits), so one integer add accumulates both; the sums are exact in
integers, so subtraction loses nothing. The quantisation step is chosen so that no sum
over the tree's events can overflow 31 bits.

Each node is a ``[start, stop)`` slice of one partition array of event indices. The exact
kind keeps its float channels in partition order, so the inner loop reads them
contiguously, and threads own features; the packed kind reads the codes and the packed
channels of each event through the partition (prefetched), and threads own events.
Either way the sums never depend on the number of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._prefetch import prefetch
from ._types import N_BINS, N_CHANNELS, SUM_DTYPE, njit

__all__ = ["build_histograms", "histograms_naive", "new_histograms", "Quantiser"]


def new_histograms(n_nodes: int, n_features: int, packed: bool = False) -> np.ndarray:
    """Uninitialised histogram storage for ``n_nodes`` nodes (int64 when packed)."""
    if packed:
        return np.empty((n_nodes, n_features, N_BINS), dtype=np.int64)
    return np.empty((n_nodes, n_features, N_BINS, N_CHANNELS), dtype=SUM_DTYPE)


@njit(parallel=True)
def _build_exact(codes, partition, payload, node_start, node_stop, slots, feature_used, hists,
                 parent_hists, parent_slots, sibling_slots):
    # Unsigned indices: no negative-index wraparound in the inner loop.
    for f in numba.prange(codes.shape[0]):
        codes_f = codes[f]
        for j in range(node_start.size):
            h = hists[slots[j], f]
            h[:] = 0.0
            if feature_used[f]:
                for k in range(np.uint64(node_start[j]), np.uint64(node_stop[j])):
                    c = np.uint64(codes_f[np.uint64(partition[k])])
                    h[c, 0] += payload[k, 0]
                    h[c, 1] += payload[k, 1]
                    h[c, 2] += payload[k, 2]
            if sibling_slots[j] >= 0:
                parent = parent_hists[parent_slots[j], f]
                sibling = hists[sibling_slots[j], f]
                for c in range(h.shape[0]):
                    for ch in range(h.shape[1]):
                        sibling[c, ch] = parent[c, ch] - h[c, ch]


@njit(parallel=True)
def _build_packed(codes_by_event, partition, packed, task_start, task_stop, task_node, slots,
                  hists, parent_hists, parent_slots, sibling_slots):
    # Integer sums do not depend on the order of addition, so threads may own events:
    # each task (a fixed-size run of one node's events) fills its own buffer.
    # Unsigned indices: no negative-index wraparound in the inner loop.
    m = hists.shape[1]
    n_bins = np.uint64(hists.shape[2])
    codes_flat = codes_by_event.ravel()
    row_length = np.uint64(codes_by_event.shape[1])
    buffers = np.zeros((task_start.size, m * hists.shape[2]), dtype=np.int64)
    for t in numba.prange(task_start.size):
        h = buffers[t]
        start = np.uint64(task_start[t])
        stop = np.uint64(task_stop[t])
        for k in range(start, stop):
            ahead = k + np.uint64(PREFETCH_AHEAD)
            if ahead < stop:
                i_ahead = np.uint64(partition[ahead])
                prefetch(codes_flat, i_ahead * row_length)
                prefetch(codes_flat, i_ahead * row_length + row_length - np.uint64(1))
                prefetch(packed, i_ahead)
            i = np.uint64(partition[k])
            row = i * row_length
            p = packed[i]
            for f in range(np.uint64(m)):
                h[f * n_bins + np.uint64(codes_flat[row + f])] += p
    for job in numba.prange(slots.size * m):
        j = job // m
        f = job % m
        out = hists[slots[j], f]
        out[:] = 0
        for t in range(task_start.size):
            if task_node[t] == j:
                out += buffers[t, f * hists.shape[2]:(f + 1) * hists.shape[2]]
        if sibling_slots[j] >= 0:
            parent = parent_hists[parent_slots[j], f]
            sibling = hists[sibling_slots[j], f]
            for c in range(out.size):
                sibling[c] = parent[c] - out[c]


PACKED_TASK = 1 << 15  # events per task of the packed histogram kernel, at most
MIN_PACKED_TASK = 1 << 12  # and at least
MIN_TASKS = 16  # tasks per call, where the events allow
PREFETCH_AHEAD = 32  # events between a row's prefetch and its use


def build_histograms(codes: np.ndarray, partition: np.ndarray, payload: np.ndarray,
                     node_start: np.ndarray, node_stop: np.ndarray, slots: np.ndarray,
                     feature_used: np.ndarray, hists: np.ndarray,
                     parent_hists: np.ndarray | None = None, parent_slots: np.ndarray | None = None,
                     sibling_slots: np.ndarray | None = None, threads: int | None = None) -> None:
    """Fill ``hists[slots[j]]`` with node j's histogram (events ``partition[start_j:stop_j]``),
    and, where given, its sibling's as parent minus node:
    ``hists[sibling_slots[j]] = parent_hists[parent_slots[j]] - hists[slots[j]]``.

    Exact: codes (m, n) uint8 feature-major, payload (n_rows, 3) float32 channels (A, B, W)
    in partition order. Packed: codes (n, m) uint8 event-major, payload (n,) int64 packed
    channels in event order (read through the partition). partition: (n_rows,) int32;
    node_start/stop/slots: (k,) int64; feature_used: (m,) bool (other features are zeroed
    in exact histograms, computed anyway when packed); hists and parent_hists from
    ``new_histograms``; parent_slots/sibling_slots: (k,) int64, -1 where there is no sibling.
    threads: packed only; cut the events into a multiple of this many tasks of at most
    PACKED_TASK events (one call per node, as leaf-wise growth makes: each task clears and
    adds up a buffer the size of a histogram, which the default of at least MIN_TASKS tasks
    of MIN_PACKED_TASK events makes a quarter of the work on small nodes). The sums are the
    same either way.
    """
    slots = np.asarray(slots, np.int64)
    if parent_hists is None:
        parent_hists = hists
        parent_slots = sibling_slots = np.full(slots.size, -1, np.int64)
    if payload.dtype != np.int64:
        _build_exact(codes, partition, payload, node_start, node_stop, slots, feature_used, hists,
                     parent_hists, parent_slots, sibling_slots)
        return
    sizes = node_stop - node_start
    # Integer sums do not depend on how the events are cut into tasks: enough tasks to
    # keep every thread busy on small samples, each at most PACKED_TASK events.
    if threads is None:
        task = int(np.clip(sizes.sum() // MIN_TASKS, MIN_PACKED_TASK, PACKED_TASK))
    else:
        total = int(sizes.sum())
        n_tasks = threads * max(1, -(-total // (threads * PACKED_TASK)))
        task = max(1, -(-total // n_tasks))
    n_tasks = np.maximum(1, -(-sizes // task))
    node = np.repeat(np.arange(sizes.size), n_tasks)
    first = np.concatenate([[0], np.cumsum(n_tasks)[:-1]])
    task_start = node_start[node] + (np.arange(node.size) - first[node]) * task
    task_stop = np.minimum(task_start + task, node_stop[node])
    _build_packed(codes, partition, payload, task_start, task_stop, node, slots, hists,
                  parent_hists, parent_slots, sibling_slots)


class Quantiser:
    """Rounds channels A and B to integers and packs them; decodes histogram sums.

    The rounding is stochastic (up with probability equal to the fraction), so every sum
    is unbiased: with a step set by the largest |A| (a regression outlier, say), plain
    rounding would bias the sums of the many small values. The random numbers are a hash
    of ``seed`` and the event index, so they never depend on the thread count.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, n_rows: int, seed: int = 0):
        self.seed = np.uint64(seed)
        # |sum| <= n_rows * 2**bits must stay below 2**31.
        bits = max(6, min(24, 30 - math.ceil(math.log2(n_rows + 1))))
        top = float(2**bits - 1)
        max_a, max_b = _max_abs(a, b) if a.size else (0.0, 0.0)
        self.scale_a = top / max_a if max_a > 0 else 1.0
        self.scale_b = top / max_b if max_b > 0 else 1.0

    def pack_into(self, a: np.ndarray, b: np.ndarray, packed: np.ndarray) -> None:
        """packed[i] = qa_i * 2**32 + qb_i for every event i, where qa_i is A_i * scale_a
        rounded stochastically (qb_i alike)."""
        _pack_into(a, b, self.scale_a, self.scale_b, self.seed, packed)

    def quantise(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The integers (as float64) that ``pack_into`` packs for A and B."""
        packed = np.empty(a.size, np.int64)
        self.pack_into(a, b, packed)
        low = ((packed + 2**31) & 0xFFFFFFFF) - 2**31
        return ((packed - low) >> 32).astype(np.float64), low.astype(np.float64)

    def decode(self, packed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Float64 (..., 3) sums (A, B, B) of packed int64 sums; B stands in for the weight.

        ``out``: contiguous float64 storage of that shape to reuse (a new array when None)."""
        if out is None:
            out = np.empty(packed.shape + (N_CHANNELS,), dtype=SUM_DTYPE)
        _decode(packed.reshape(-1), self.scale_a, self.scale_b,
                out.reshape(-1, N_CHANNELS))
        return out


@njit(parallel=True)
def _decode(packed, scale_a, scale_b, out):
    for k in numba.prange(packed.size):
        v = packed[k]
        low = ((v + 2147483648) & 0xFFFFFFFF) - 2147483648  # the signed low 32 bits
        out[k, 0] = ((v - low) >> 32) / scale_a
        out[k, 1] = low / scale_b
        out[k, 2] = out[k, 1]


@njit(parallel=True)
def _max_abs(a, b):
    chunk = 1 << 16
    n_chunks = (a.size + chunk - 1) // chunk
    top = np.zeros((n_chunks, 2))
    for c in numba.prange(n_chunks):
        ma = 0.0
        mb = 0.0
        for i in range(c * chunk, min(a.size, (c + 1) * chunk)):
            ma = max(ma, abs(np.float64(a[i])))
            mb = max(mb, abs(np.float64(b[i])))
        top[c, 0] = ma
        top[c, 1] = mb
    return top[:, 0].max(), top[:, 1].max()


@njit
def _uniform(seed, i):
    """A uniform number in [0, 1) from (seed, i): the splitmix64 finaliser."""
    z = seed + (i + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(parallel=True)
def _pack_into(a, b, scale_a, scale_b, seed, packed):
    seed_b = seed ^ np.uint64(0x5851F42D4C957F2D)
    for i in numba.prange(packed.size):
        k = np.uint64(i)
        qa = np.int64(math.floor(a[i] * scale_a + _uniform(seed, k)))
        qb = np.int64(math.floor(b[i] * scale_b + _uniform(seed_b, k)))
        packed[i] = qa * 4294967296 + qb


def histograms_naive(codes: np.ndarray, rows: np.ndarray, channels: list[np.ndarray],
                     dtype=SUM_DTYPE) -> np.ndarray:
    """Reference twin with ``np.add.at``: one node's histogram of each channel over ``rows``."""
    m = codes.shape[0]
    h = np.zeros((m, N_BINS, len(channels)), dtype=dtype)
    for f in range(m):
        c = codes[f, rows]
        for ch, v in enumerate(channels):
            np.add.at(h[f, :, ch], c, v[rows].astype(dtype))
    return h
