"""Per-node histograms of the booster channels, exact (float64) or quantised (int64).

Exact: float64 ``(n_features, N_BINS, 3)`` sums of the per-event channels A, B and W.
Quantised (gradient and newton boosting on large samples): A and B rounded
(stochastically) to integers of at most ``2**bits`` in magnitude, in one of two layouts
chosen from the event count n (``choose_packing``):

- packed: both in one int64 per event (A in the high 32 bits, B in the low 32 bits), so
  one integer add accumulates both; every sum must stay within a 32-bit lane, so
  ``n * 2**bits < 2**31`` (``bits = min(24, 30 - ceil(log2(n + 1)))`` up to 2**24 - 1
  events, 6 bits up to 2**25 - 1; ``MIN_PACKED_BITS`` is the least accepted);
- wide: for samples where 32-bit lanes would leave fewer than ``MIN_PACKED_BITS`` bits.
  The events are packed as above and summed the same way (one add) into each task's
  buffer, a task being at most ``PACKED_TASK`` = 2**15 events, so with ``WIDE_BITS`` =
  15 bits a task's partial sums stay below 2**15 * 2**15 = 2**30 in their 32-bit lanes;
  the tasks' buffers are then unpacked into two int64 lanes per bin (A, B) and added
  there. The node sums are at most n * 2**15 < 2**46: exact in int64, and again after
  their conversion to float64.

No sum of n quantised values can leave these bounds: not a bin's, a node's or the root's,
not a task's partial sum, not a sibling's derived by subtraction (the sum of its own
events). The sums are exact in integers, so subtraction loses nothing. More than
``MAX_EVENTS`` (2**31 - 1, the int32 event index) events are refused.

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

from ._prefetch import prefetch, prefetch_far
from ._types import N_BINS, N_CHANNELS, SUM_DTYPE, check_n_events, launch_lock, njit, serial_twin

__all__ = ["build_histograms", "choose_packing", "histograms_naive", "new_histograms", "Quantiser",
           "TaskBuffers"]

MAX_BITS = 24  # resolution of the quantised channels, at most
# The least resolution accepted in 32-bit lanes; below it the wide kind. 200k x 28 HIGGS-like,
# newton, depth 6, 200 trees, test AUC (benchmarks/bench_quantisation.py): see design-notes.
MIN_PACKED_BITS = 6
PACKED_TASK = 1 << 15  # events per task of the packed histogram kernels, at most
WIDE_BITS = 15  # resolution of the wide kind: PACKED_TASK * 2**15 < 2**31 in a task's lanes


def choose_packing(n_rows: int) -> tuple[bool, int]:
    """(wide, bits) of the quantised histograms of a tree of ``n_rows`` events.

    With c = ceil(log2(n_rows + 1)) (so n_rows < 2**c): packed 32-bit lanes with
    ``min(24, 30 - c)`` bits up to c = 24 (a factor-2 margin: 24 bits up to 63 events, 10
    at 1M, 6 at 2**24 - 1), then ``31 - c`` while that is at least ``MIN_PACKED_BITS`` (6
    bits up to 2**25 - 1 events); beyond, wide: ``WIDE_BITS`` = 15 bits, 32-bit lanes
    within a task of at most ``PACKED_TASK`` = 2**15 events, int64 lanes across tasks.
    Every quantised value has |q| <= 2**bits, so every sum of up to n_rows of them is
    below 2**31 packed, and wide below 2**30 per task and 2**46 in all.
    """
    check_n_events(n_rows)
    c = int(n_rows).bit_length()  # n_rows < 2**c, and c = ceil(log2(n_rows + 1))
    bits = min(MAX_BITS, 30 - c) if c <= 24 else 31 - c
    if bits >= MIN_PACKED_BITS:
        return False, bits
    return True, WIDE_BITS


def new_histograms(n_nodes: int, n_features: int, packed: bool = False,
                   wide: bool = False, n_channels: int = N_CHANNELS) -> np.ndarray:
    """Uninitialised histogram storage for ``n_nodes`` nodes: float64 (A, B, W) per bin
    (``n_channels`` float64 with class channels), one int64 per bin when packed, two (A, B)
    when ``wide``."""
    if packed:
        shape = (n_nodes, n_features, N_BINS, 2) if wide else (n_nodes, n_features, N_BINS)
        return np.empty(shape, dtype=np.int64)
    return np.empty((n_nodes, n_features, N_BINS, n_channels), dtype=SUM_DTYPE)


@njit(parallel=True)
def _build_exact(codes, partition, payload, node_start, node_stop, slots, feature_used, hists,
                 parent_hists, parent_slots, sibling_slots):
    # Unsigned indices: no negative-index wraparound in the inner loop.
    for f in numba.prange(codes.shape[0]):
        codes_f = codes[f]
        for j in range(node_start.size):
            h = hists[slots[j], f]
            h[:] = 0.0
            if feature_used[f] and payload.shape[1] == 3:
                for k in range(np.uint64(node_start[j]), np.uint64(node_stop[j])):
                    c = np.uint64(codes_f[np.uint64(partition[k])])
                    h[c, 0] += payload[k, 0]
                    h[c, 1] += payload[k, 1]
                    h[c, 2] += payload[k, 2]
            elif feature_used[f]:  # the class channels of CLASS_GINI
                for k in range(np.uint64(node_start[j]), np.uint64(node_stop[j])):
                    c = np.uint64(codes_f[np.uint64(partition[k])])
                    for ch in range(payload.shape[1]):
                        h[c, ch] += payload[k, ch]
            if sibling_slots[j] >= 0:
                parent = parent_hists[parent_slots[j], f]
                sibling = hists[sibling_slots[j], f]
                for c in range(h.shape[0]):
                    for ch in range(h.shape[1]):
                        sibling[c, ch] = parent[c, ch] - h[c, ch]


@njit(inline="always")
def _add_events(codes_flat, row_length, partition, packed, start, stop, m, h, width):
    last = row_length - np.uint64(1)
    for k in range(start, stop):
        far = k + np.uint64(PREFETCH_FAR)
        if far < stop:
            i_far = np.uint64(partition[far])
            prefetch_far(codes_flat, i_far * row_length)
            prefetch_far(codes_flat, i_far * row_length + last)
            prefetch_far(packed, i_far)
        near = k + np.uint64(PREFETCH_NEAR)
        if near < stop:
            i_near = np.uint64(partition[near])
            prefetch(codes_flat, i_near * row_length)
            prefetch(codes_flat, i_near * row_length + last)
            prefetch(packed, i_near)
        i = np.uint64(partition[k])
        row = i * row_length
        p = packed[i]
        for f in range(m):
            h[f * width + np.uint64(codes_flat[row + f])] += p


@njit
def _add_dense(codes_flat, row_length, partition, packed, start, stop, m, h):
    """Adds the packed channels of events ``partition[start:stop]`` into one task's sums
    ``h`` (N_BINS a feature), compiled with the bin width as a constant."""
    _add_events(codes_flat, row_length, partition, packed, start, stop, m, h, np.uint64(N_BINS))


@njit
def _add_sparse(codes_flat, row_length, partition, packed, start, stop, m, h, width):
    """``_add_dense`` with the bin width ``width`` given at run time."""
    _add_events(codes_flat, row_length, partition, packed, start, stop, m, h, width)


@njit(parallel=True)
def _task_sums(codes_by_event, partition, packed, task_start, task_stop, m, buffers):
    # Integer sums do not depend on the order of addition, so threads may own events:
    # each task (a fixed-size run of one node's events) fills its own (m * N_BINS) buffer
    # of packed sums. Unsigned indices: no negative-index wraparound in the inner loop.
    # The loop is not the prange body itself: loaded from Numba's cache, that body ran
    # 20 % slower than freshly compiled. Tasks whose events fill at least half of their
    # span of rows (read almost in order: the root, large nodes) take the loop compiled
    # with a constant bin width, which addresses the bins directly (one node of 1M x 28
    # on one thread: 0.49 against 0.64 ns an add); sparse ones, memory-bound, measured
    # about 10 % slower with it inside whole trees, so they take the width at run time.
    # ``buffers`` (at least tasks x m * N_BINS) are zeroed here, each by its task: in
    # parallel, in the cache that its sums then use.
    codes_flat = codes_by_event.ravel()
    row_length = np.uint64(codes_by_event.shape[1])
    for t in numba.prange(task_start.size):
        buffers[t, :] = 0
        start = np.uint64(task_start[t])
        stop = np.uint64(task_stop[t])
        n = stop - start
        if n > 0 and np.uint64(partition[stop - np.uint64(1)] - partition[start]) < np.uint64(2) * n:
            _add_dense(codes_flat, row_length, partition, packed, start, stop, np.uint64(m),
                       buffers[t])
        else:
            _add_sparse(codes_flat, row_length, partition, packed, start, stop, np.uint64(m),
                        buffers[t], np.uint64(N_BINS))


@njit(parallel=True)
def _reduce_tasks(buffers, task_node, slots, hists, parent_hists, parent_slots, sibling_slots,
                  wide):
    # Each node's tasks added into its histogram, one thread a (node, feature); the sibling
    # as parent minus node. Packed: one int64 per bin. Wide: each task's packed sums (within
    # 32-bit lanes: see WIDE_BITS) unpacked into two int64 lanes per bin; hists and
    # parent_hists are then (nodes, m, 2 * N_BINS) views, bin c's (A, B) at 2c, 2c + 1.
    m = hists.shape[1]
    n_bins = hists.shape[2] // 2 if wide else hists.shape[2]
    for job in numba.prange(slots.size * m):
        j = job // m
        f = job % m
        out = hists[slots[j], f]
        out[:] = 0
        for t in range(task_node.size):
            if task_node[t] != j:
                continue
            part = buffers[t, f * n_bins:(f + 1) * n_bins]
            if wide:
                for c in range(n_bins):
                    v = part[c]
                    low = ((v + 2147483648) & 0xFFFFFFFF) - 2147483648  # the signed low 32 bits
                    out[2 * c] += (v - low) >> 32
                    out[2 * c + 1] += low
            else:
                out += part
        if sibling_slots[j] >= 0:
            parent = parent_hists[parent_slots[j], f]
            sibling = hists[sibling_slots[j], f]
            for c in range(out.size):
                sibling[c] = parent[c] - out[c]


_task_sums_1 = serial_twin(_task_sums)
_reduce_tasks_1 = serial_twin(_reduce_tasks)


class TaskBuffers:
    """The packed histogram tasks' buffers, kept for the calls of a fit (fresh pages each
    call cost their page faults: one node of 1M x 28 events in 31 tasks, 4.25 -> 4.03 ms on
    two threads; a sparse one, 0.85 -> 0.71 ms). At most ``KEPT_BYTES`` are kept; a call
    that needs more gets fresh ones."""

    KEPT_BYTES = 8 << 20

    def __init__(self) -> None:
        self.kept = np.empty((0, 0), np.int64)

    def get(self, n_tasks: int, m: int) -> np.ndarray:
        """(n_tasks, m * N_BINS) int64 storage, contents undefined."""
        width = m * N_BINS
        if n_tasks * width * 8 > self.KEPT_BYTES:
            return np.empty((n_tasks, width), np.int64)
        if self.kept.shape[0] < n_tasks or self.kept.shape[1] != width:
            self.kept = np.empty((max(n_tasks, self.KEPT_BYTES // (width * 8)), width), np.int64)
        return self.kept[:n_tasks]


def _lanes_flat(hists: np.ndarray) -> np.ndarray:
    """A (nodes, m, 2 * N_BINS) view of wide histograms (never a copy: NumPy 2.5 deprecates
    setting ``shape``, which guaranteed it, and reshape's ``copy=False`` needs NumPy 2.1)."""
    flat = hists.reshape(hists.shape[:2] + (2 * hists.shape[2],))
    if not np.may_share_memory(flat, hists):
        raise RuntimeError("wide histograms whose lanes are not contiguous: a copy would "
                           "lose the sums written into it")
    return flat


MIN_PACKED_TASK = 1 << 12  # and at least
MIN_TASKS = 16  # tasks per call, where the events allow
# Events between a row's prefetches and its use: into the outer caches (T2) far ahead, then
# into every level (T0) near. With one T0 prefetch (at any distance from 8 to 128) a
# sparse node cost about twice the root's time an add; the levels below the root of 1M x
# 28 trees (two threads, design notes): 0.47-0.57 -> 0.34-0.38 ns an add.
PREFETCH_FAR = 64
PREFETCH_NEAR = 8


def build_histograms(codes: np.ndarray, partition: np.ndarray, payload: np.ndarray,
                     node_start: np.ndarray, node_stop: np.ndarray, slots: np.ndarray,
                     feature_used: np.ndarray, hists: np.ndarray,
                     parent_hists: np.ndarray | None = None, parent_slots: np.ndarray | None = None,
                     sibling_slots: np.ndarray | None = None, threads: int | None = None,
                     task_buffers: TaskBuffers | None = None) -> None:
    """Fill ``hists[slots[j]]`` with node j's histogram (events ``partition[start_j:stop_j]``),
    and, where given, its sibling's as parent minus node:
    ``hists[sibling_slots[j]] = parent_hists[parent_slots[j]] - hists[slots[j]]``.

    Exact: codes (m, n) uint8 feature-major, payload (n_rows, 3) float32 channels (A, B, W)
    in partition order (or (n_rows, K + 1): K class weights, then W). Packed: codes (n, m)
    uint8 event-major, payload (n,) int64 packed channels in event order (read through the
    partition); wide: the same payload and histograms from ``new_histograms(..., wide=True)``.
    partition: (n_rows,) int32; node_start/stop/slots: (k,) int64; feature_used: (m,) bool
    (other features are zeroed in exact histograms, computed anyway when packed); hists and
    parent_hists from
    ``new_histograms``; parent_slots/sibling_slots: (k,) int64, -1 where there is no sibling.
    threads: packed only; cut the events into a multiple of this many tasks of at most
    PACKED_TASK events (one call per node, as leaf-wise growth makes: each task clears and
    adds up a buffer the size of a histogram, which the default of at least MIN_TASKS tasks
    of MIN_PACKED_TASK events makes a quarter of the work on small nodes). The sums are the
    same either way. task_buffers: packed only; the tasks' buffers kept from call to call
    (a fit's), instead of fresh pages each call.
    """
    slots = np.asarray(slots, np.int64)
    if parent_hists is None:
        parent_hists = hists
        parent_slots = sibling_slots = np.full(slots.size, -1, np.int64)
    if payload.dtype != np.int64:
        with launch_lock():
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
    assert hists.shape[2] == N_BINS
    m = hists.shape[1]
    buffers = (task_buffers.get(node.size, m) if task_buffers is not None
               else np.empty((node.size, m * N_BINS), np.int64))
    with launch_lock():
        _task_sums(codes, partition, payload, task_start, task_stop, m, buffers)
    if hists.ndim == 4:
        # A task's partial sums must fit its 32-bit lanes: see WIDE_BITS.
        assert task <= PACKED_TASK
        with launch_lock():
            _reduce_tasks(buffers, node, slots, _lanes_flat(hists), _lanes_flat(parent_hists),
                          parent_slots, sibling_slots, True)
        return
    with launch_lock():
        _reduce_tasks(buffers, node, slots, hists, parent_hists, parent_slots, sibling_slots, False)


class Quantiser:
    """Rounds channels A and B to integers and packs them; decodes histogram sums.

    The rounding is stochastic (up with probability equal to the fraction), so every sum
    is unbiased: with a step set by the largest |A| (a regression outlier, say), plain
    rounding would bias the sums of the many small values. The random numbers are a hash
    of ``seed`` and the event index, so they never depend on the thread count.

    ``max_abs`` (max |A|, max |B|) and ``offset`` (the index of the first event) let the
    workers of a cluster, each holding a part of the events, quantise theirs exactly as
    the whole sample would be (``n_rows`` and ``max_abs`` then of every event).

    The layout and resolution come from ``n_rows`` (``choose_packing``): ``wide`` False,
    32-bit lanes; True, 32-bit lanes per task, int64 lanes per bin (the payload is one
    int64 per event either way). ``bits``: the largest |A| (and |B|) maps to
    ``2**bits - 1``, and every rounded value has magnitude at most ``max_quantum =
    2**bits``, so no sum of ``n_rows`` of them overflows: below 2**31 packed; wide, below
    2**31 per task and 2**46 in all. A and B must be finite (else ValueError).
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, n_rows: int, seed: int = 0,
                 max_abs: tuple[float, float] | None = None, offset: int = 0):
        self.seed = np.uint64(seed)
        self.n_rows = int(n_rows)
        self.offset = np.uint64(offset)
        self.wide, self.bits = choose_packing(self.n_rows)
        self.max_quantum = 2**self.bits
        top = float(2**self.bits - 1)
        max_a, max_b = max_abs if max_abs is not None else self.max_abs(a, b)
        if not (math.isfinite(max_a) and math.isfinite(max_b)):
            # floor(NaN) as an int64 is garbage that would sum silently into the histograms
            raise ValueError("the quantised histograms need finite channels, but A or B (the "
                             "gradients and hessians) has NaN or infinite values")
        self.scale_a = top / max_a if max_a > 0 else 1.0
        self.scale_b = top / max_b if max_b > 0 else 1.0

    @staticmethod
    def max_abs(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
        """(max |A|, max |B|), NaN when a value is NaN: the maxima of several parts of the
        events combine (``np.max``, which propagates NaN) to those of all of them."""
        if not a.size:
            return (0.0, 0.0)
        with launch_lock():
            maxima = _max_abs(a, b)
        return tuple(float(m) for m in maxima.max(axis=0))  # numpy's max propagates NaN (Numba's skips it)

    def pack_into(self, a: np.ndarray, b: np.ndarray, packed: np.ndarray) -> None:
        """packed[i] = qa_i * 2**32 + qb_i for every event i, where qa_i is A_i * scale_a
        rounded stochastically (qb_i alike; the random numbers are keyed by ``offset + i``,
        so a part of the events starting at ``offset`` packs as the whole does)."""
        with launch_lock():
            _pack_into(a, b, self.scale_a, self.scale_b, self.seed, self.offset, packed)

    def quantise(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The integers (as float64) that ``pack_into`` packs for A and B."""
        packed = np.empty(a.size, np.int64)
        self.pack_into(a, b, packed)
        low = ((packed + 2**31) & 0xFFFFFFFF) - 2**31
        return ((packed - low) >> 32).astype(np.float64), low.astype(np.float64)

    def decode(self, packed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Float64 (..., 3) sums (A, B, B) of packed int64 sums (wide: (..., 2) int64 lanes);
        B stands in for the weight. Exact: every integer sum is below 2**53.

        ``out``: contiguous float64 storage of that shape to reuse (a new array when None)."""
        shape = packed.shape[:-1] if self.wide else packed.shape
        if out is None:
            out = np.empty(shape + (N_CHANNELS,), dtype=SUM_DTYPE)
        with launch_lock():
            if self.wide:
                _decode_wide(packed.reshape(-1, 2), self.scale_a, self.scale_b,
                             out.reshape(-1, N_CHANNELS))
            else:
                _decode(packed.reshape(-1), self.scale_a, self.scale_b,
                        out.reshape(-1, N_CHANNELS))
        return out


@njit(inline="always")
def _lanes(v):
    """The (A, B) integer sums packed in one int64 (B: the signed low 32 bits)."""
    low = ((v + 2147483648) & 0xFFFFFFFF) - 2147483648
    return (v - low) >> 32, low


@njit(parallel=True)
def _decode(packed, scale_a, scale_b, out):
    for k in numba.prange(packed.size):
        a, b = _lanes(packed[k])
        out[k, 0] = a / scale_a
        out[k, 1] = b / scale_b
        out[k, 2] = out[k, 1]


@njit(parallel=True)
def _decode_wide(sums, scale_a, scale_b, out):
    for k in numba.prange(sums.shape[0]):
        out[k, 0] = sums[k, 0] / scale_a
        out[k, 1] = sums[k, 1] / scale_b
        out[k, 2] = out[k, 1]


@njit
def decode_channels(packed, scale_a, scale_b, out_a, out_b):
    """``Quantiser.decode`` of one feature's bins, serially: ``packed`` (N_BINS, 1) int64
    sums, or (N_BINS, 2) wide lanes, into the (N_BINS,) arrays ``out_a`` and ``out_b``
    (one flat loop a layout, so that the divisions vectorise)."""
    flat = packed.reshape(-1)
    if packed.shape[1] == 2:
        for c in range(packed.shape[0]):
            out_a[c] = flat[2 * c] / scale_a
            out_b[c] = flat[2 * c + 1] / scale_b
    else:
        for c in range(packed.shape[0]):
            a, b = _lanes(flat[c])
            out_a[c] = a / scale_a
            out_b[c] = b / scale_b


@njit(parallel=True)
def _max_abs(a, b):
    chunk = 1 << 16
    n_chunks = (a.size + chunk - 1) // chunk
    top = np.zeros((n_chunks, 2))
    for c in numba.prange(n_chunks):
        ma = 0.0
        mb = 0.0
        n_nan = 0  # max() skips NaN; an infinity is the max
        for i in range(c * chunk, min(a.size, (c + 1) * chunk)):
            va = abs(np.float64(a[i]))
            vb = abs(np.float64(b[i]))
            ma = max(ma, va)
            mb = max(mb, vb)
            n_nan += np.int64(va != va) + np.int64(vb != vb)
        top[c, 0] = ma if n_nan == 0 else np.nan
        top[c, 1] = mb if n_nan == 0 else np.nan
    return top  # per chunk: NaN where a value is NaN, inf where one is infinite


@njit
def _uniform(seed, i):
    """A uniform number in [0, 1) from (seed, i): the splitmix64 finaliser."""
    z = seed + (i + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(parallel=True)
def _pack_into(a, b, scale_a, scale_b, seed, offset, packed):
    seed_b = seed ^ np.uint64(0x5851F42D4C957F2D)
    for i in numba.prange(packed.size):
        k = np.uint64(i) + offset
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
