"""The grower (depth-wise and leaf-wise) cut in two: a driver that sees only summed
histograms, and parts that hold the events (a Dask cluster's workers, each with a
contiguous run of them).

The steps are the one grower's own (``grower.py``): a part packs its channels with a
:class:`~hepbdt.engine.histogram.Quantiser` of the whole sample (its maxima, its event count
and the part's offset, so each event gets the integers it gets in memory), builds the root's
histogram, and at every level partitions its events with the chosen splits
(``_apply_splits``) and builds its children's histograms (``_child_histograms``: the smaller
child from its events, the sibling by subtraction). It sends the left children's histograms;
the driver adds the parts' histograms (integers: the order of the additions does not matter),
derives each right child as parent minus left child, and chooses the splits with
``_choose_splits`` (the same feature draws from the same generator). The sums are integers,
so the tree is the in-memory tree bit for bit. Leaf sums are floats: each part continues the
running sums of the part before it (``initial=``), in event order, as the in-memory pass
does; a part of at least ``ORDERED_SUMS_FROM`` events reads its events in order for them
(``event_leaves``, which its score updates use too), as memory does from that many, else
it walks the partition (the same sums either way).

Leaf-wise (best-first) growth, ``max_leaves``, is ``_grow_leafwise``'s loop cut the same
way: the driver (:class:`SummedLeafTree`) keeps the heap of waiting leaves, the pool of their
summed histograms and ``_LeafSplitter``'s searches and column draws; each split it makes goes
to the parts in a :class:`LeafPlan`, together with the splits made since whose children get
no histograms (the depth or leaf limit), and each part (``PartTree.split_leaves``) partitions
those leaves (``_partition_leaf``), builds its own smaller child's histogram and the larger
as parent minus it from a pool of its own (``_leaf_histograms``), and sends the left child's
(both where the driver gave the parent's up). Which child a part builds does not change an
integer sum, so one round trip a split gives memory's tree; the parts also send each split's
event counts, from which the driver takes memory's smaller child for its pool.

Float (exact) histograms, those of the AdaBoost family, are floating-point sums whose bits
depend on the order of the additions, so they are not added up part by part: they run
through the parts in event order (``ExactPartTree``), each continuing the histograms the
part before it sent (``_continue_histograms``), which is memory's order (each node's events
in increasing index order, one feature a thread, from zero). The driver derives the larger
child as parent minus the smaller, as memory does, choosing the smaller from the counts the
histograms' last channel holds (one an event), and drops the splits that leave no event on
one side as ``_apply_real_splits`` does; the trees are memory's bit for bit.

:class:`PairwiseSum` gives numpy's own sum (``np.sum``: pairwise, blocks of 128, or of a
cast float32 vector buffers of 8,192 summed in turn) of a vector held in contiguous parts:
each part sends the sums of the blocks of numpy's recursion that lie within it and the
values of the few that straddle two parts; the driver adds them as numpy would.

:class:`ChunkedSum` does the same for the losses' chunked sums (``loss_chunk`` in
``boosting/losses.py``: each chunk of LOSS_CHUNK events added one after another from 0.0,
then numpy's sum of the chunks' sums): each part sends the sums of the chunks within it
and the values of those across parts, which the driver adds in order.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from ._types import N_BINS, N_CHANNELS, launch_lock, njit
from .grower import (
    LEVEL_HISTOGRAM_BYTES,
    ORDERED_SUMS_FROM,
    SERIAL_EVENTS,
    GrownTree,
    QuantisedRows,
    _add_children,
    _apply_splits,
    _child_histograms,
    _choose_splits,
    _HistogramPool,
    _leaf_histograms,
    _LeafSplitter,
    _NodeArrays,
    _partition_leaf,
    _SmallWork,
    _Splits,
    _TreeEvents,
    event_leaves,
    slice_sums,
    sums_by_leaf,
)
from .histogram import Quantiser, new_histograms
from .split import SplitParams

__all__ = ["ChunkedSum", "ExactPartTree", "LeafPlan", "LeafResult", "LevelPlan", "PairwiseSum",
           "PartTree", "SummedLeafTree", "SummedTree", "add_histograms", "add_leaf_results",
           "chunk_pieces", "exact_level_capacity", "max_nodes", "pairwise_pieces",
           "sequential_sum"]

PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE: its pairwise sum adds blocks of this many in turn
UNROLL = 8  # the accumulators of numpy's pairwise block (its halves are multiples of this)
# A sum that casts adds the pairwise sums of buffers of np.getbufsize() values (8,192).


def max_nodes(max_depth: int) -> int:
    """Nodes of a full tree of this depth: the node arrays the driver and the parts hold."""
    return (1 << (max_depth + 1)) - 1


@dataclass
class LevelPlan:
    """The splits the driver chose for one level, sent to every part."""

    parents: np.ndarray  # int64 node ids split
    position: np.ndarray  # int64: their index in the level (and in its histograms)
    gain: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left_sums: np.ndarray  # (k, 3), or (k, K + 1) with class channels
    last: bool  # the children are leaves: no histograms wanted
    small_left: np.ndarray | None = None  # exact histograms: each split's left child is the smaller

    @property
    def splits(self) -> _Splits:
        return _Splits(self.position, self.gain, self.feature, self.threshold,
                       self.missing_left, self.left_sums)


def add_histograms(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """The sum of two parts' raw (integer) histograms; None stands for no histograms."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class _Summed:
    """What ``_choose_splits`` (and leaf-wise, ``_LeafSplitter`` and ``_HistogramPool``) ask
    of the events, for histograms summed elsewhere."""

    def __init__(self, quantiser: Quantiser | None, used: np.ndarray):
        self.quantiser = quantiser  # None: exact histograms
        self.used = used
        self.n_features = used.size
        self.quantised = quantiser is not None
        self.wide = quantiser is not None and quantiser.wide
        self.n_channels = N_CHANNELS

    def decoded(self, raw: np.ndarray) -> np.ndarray:
        return raw if self.quantiser is None else self.quantiser.decode(raw)


def exact_level_capacity(n_features: int, n_channels: int) -> int:
    """The nodes of a level whose exact histograms the in-memory grower holds (its
    ``level_capacity``); beyond, it builds them from the events, which the driver does not."""
    return max(2, LEVEL_HISTOGRAM_BYTES // (n_features * N_BINS * n_channels * 8))


class SummedTree:
    """The driver's side of one tree: node arrays, the level's summed raw histograms, and
    the split choice (with ``rng``'s feature draws, as the in-memory grower makes them).

    ``start(root_raw)`` and then ``advance(left_raw)`` after each level give the next
    :class:`LevelPlan`, or None when the tree is done; ``grown_tree()`` the tree (without a
    partition: the parts hold the events).

    ``quantiser`` None: exact histograms of ``n_channels`` channels whose last counts the
    events (W = 1 an event); ``advance`` then takes the smaller children's histograms
    (``LevelPlan.small_left``), not the left ones.
    """

    def __init__(self, quantiser: Quantiser | None, used: np.ndarray, n_value_bins: np.ndarray,
                 params: SplitParams, max_depth: int, colsample_bylevel: float = 1.0,
                 colsample_bynode: float = 1.0, rng: np.random.Generator | None = None,
                 n_channels: int = N_CHANNELS):
        self.events = _Summed(quantiser, used.astype(np.bool_))
        self.n_value_bins, self.params, self.max_depth = n_value_bins, params, int(max_depth)
        self.colsample_bylevel, self.colsample_bynode = colsample_bylevel, colsample_bynode
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.nodes = _NodeArrays(max_nodes(self.max_depth), n_channels=n_channels)
        self.raw: np.ndarray | None = None
        self.level = np.zeros(1, np.int64)
        self.depth = 0
        self.plan: LevelPlan | None = None

    def start(self, root_raw: np.ndarray) -> LevelPlan | None:
        """The root's summed histogram in; the root's splits out."""
        self.raw = root_raw
        hists = self.events.decoded(root_raw)
        self.nodes.sums[0] = hists[0, int(np.argmax(self.events.used))].sum(axis=0)
        return self._next()

    def advance(self, left_raw: np.ndarray | None) -> LevelPlan | None:
        """The summed histograms of the last plan's left children in (None after the last
        level); the next level's splits out."""
        plan, self.plan = self.plan, None
        if plan is None or plan.last:
            return None
        k = plan.parents.size
        raw = np.empty((2 * k,) + self.raw.shape[1:], self.raw.dtype)
        small = (np.zeros(k, np.bool_) if plan.small_left is None
                 else ~plan.small_left).astype(np.int64) + 2 * np.arange(k)
        raw[small] = left_raw  # the left children, or the smaller ones (exact)
        raw[small ^ 1] = self.raw[plan.position] - left_raw
        self.raw = raw
        self.level = self.children
        self.depth += 1
        return self._next()

    def _next(self) -> LevelPlan | None:
        if self.depth >= self.max_depth:
            return None
        splits = _choose_splits(self.events, self.raw, self.level, self.nodes, self.n_value_bins,
                                self.params, self.colsample_bylevel, self.colsample_bynode,
                                self.rng)
        if splits is None:
            return None
        small_left = None
        if self.events.quantiser is None:  # exact: the counts say which splits are real
            left = splits.left_sums[:, -1]
            right = self.nodes.sums[self.level[splits.position], -1] - left
            real = (left > 0) & (right > 0)  # ``_apply_real_splits``: events on both sides
            if not real.any():
                return None
            splits = _Splits(*(field[real] for field in splits))
            small_left = left[real] <= right[real]  # ``_child_histograms``'s smaller child
        parents = self.level[splits.position]
        none = np.zeros(parents.size, np.int64)  # the parts hold where the events are
        self.children = _add_children(self.nodes, parents, splits, none, none, none)
        self.plan = LevelPlan(parents, splits.position.astype(np.int64), splits.gain,
                              splits.feature, splits.threshold, splits.missing_left,
                              splits.left_sums, self.depth + 1 == self.max_depth, small_left)
        return self.plan

    def grown_tree(self) -> GrownTree:
        """The tree (node arrays; an empty partition)."""
        return self.nodes.grown_tree(np.empty(0, np.int32))


@dataclass
class LeafPlan:
    """Leaf splits the driver made since the last round trip, in order, sent to every
    part: all but the last make leaves whose children get no histograms (the depth or
    leaf limit); the last one's children get them unless ``last`` (the tree is then done)."""

    parents: np.ndarray  # int64 leaves split, in the driver's order
    children: np.ndarray  # int64 (k, 2): the (left, right) node ids each split adds
    gain: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left_sums: np.ndarray  # (k, 3)
    drop: np.ndarray  # int64 nodes whose histograms the parts free first (the driver did)
    last: bool
    depth: int  # the depth of the last split's children

    def split(self, j: int) -> _Splits:
        """Split ``j`` as the grower's one-node ``_Splits``."""
        return _Splits(np.zeros(1, np.int64), self.gain[j:j + 1], self.feature[j:j + 1],
                       self.threshold[j:j + 1], self.missing_left[j:j + 1],
                       self.left_sums[j:j + 1])


@dataclass
class LeafResult:
    """A part's answer to a :class:`LeafPlan` (or the parts' answers summed): each split's
    events on the left and on the right, and unless the plan was the last the raw
    histograms of its last split's children: (1, ...) the left child's, or (2, ...) both
    where the driver gave the parent's histogram up."""

    counts: np.ndarray  # (k, 2) int64
    raw: np.ndarray | None

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what ``Cluster`` counts as received)."""
        return int(self.counts.nbytes) + (0 if self.raw is None else int(self.raw.nbytes))


def add_leaf_results(a: LeafResult, b: LeafResult) -> LeafResult:
    """The sum of two parts' answers to one :class:`LeafPlan` (integers: any order)."""
    return LeafResult(a.counts + b.counts, add_histograms(a.raw, b.raw))


class SummedLeafTree:
    """The driver's side of one leaf-wise (best-first) tree: ``_grow_leafwise``'s loop on
    summed raw histograms, with its heap, its pool (``_HistogramPool``, the same capacity
    and evictions) and its searches and column draws (``_LeafSplitter``, the same calls on
    ``rng`` in the same order).

    ``start(root_raw)`` and then ``advance(result)`` after each round trip give the next
    :class:`LeafPlan`, or None when the tree is done; ``grown_tree()`` the tree. Every
    split is made when it is popped from the heap, as memory makes it; a split whose
    children get no histograms waits in the next plan, so it costs no round trip.
    Quantised splits leave events on both sides (an empty side has B = 0, below the
    ``quantum_floor``), as ``SummedTree`` takes them; the parts' counts are checked.
    """

    def __init__(self, quantiser: Quantiser, used: np.ndarray, n_value_bins: np.ndarray,
                 params: SplitParams, max_depth: int | None, max_leaves: int,
                 colsample_bylevel: float = 1.0, colsample_bynode: float = 1.0,
                 rng: np.random.Generator | None = None):
        self.events = _Summed(quantiser, used.astype(np.bool_))
        self.max_leaves = int(max_leaves)
        self.depth_limit = np.inf if max_depth is None else int(max_depth)
        self.nodes = _NodeArrays(2 * self.max_leaves - 1)
        # ``_TreeEvents.leaf_capacity`` reads only what ``_Summed`` has
        self.pool = _HistogramPool(self.events, min(self.max_leaves,
                                                    _TreeEvents.leaf_capacity(self.events)))
        self.splitter = _LeafSplitter(self.events, self.nodes, self.pool, n_value_bins, params,
                                      colsample_bylevel, colsample_bynode,
                                      rng if rng is not None else np.random.default_rng(0),
                                      _SmallWork())
        self.depth = {0: 0}
        self.waiting: dict[int, _Splits] = {}
        self.queue: list[tuple[float, int]] = []  # (-gain, node id)
        self.n_leaves = 1
        self.held = {0}  # the nodes whose histograms the parts hold
        self.pending: list[tuple[int, _Splits, np.ndarray]] = []  # made, not yet sent
        self.plan: LeafPlan | None = None

    def start(self, root_raw: np.ndarray) -> LeafPlan | None:
        """The root's summed histogram in; the first plan out."""
        self.pool.raw[self.pool.take(0, {})] = root_raw[0]
        hists = self.events.decoded(root_raw)
        self.nodes.sums[0] = hists[0, int(np.argmax(self.events.used))].sum(axis=0)
        if self.depth_limit > 0:
            self._consider([0], 0)
        return self._next()

    def advance(self, result: LeafResult) -> LeafPlan | None:
        """The parts' summed answer to the last plan in; the next plan out."""
        plan, self.plan = self.plan, None
        if plan is None or plan.last:
            return None
        if not (result.counts > 0).all():
            raise RuntimeError("a quantised leaf split left a side without events; the "
                               "in-memory grower would have dropped it")
        parent = int(plan.parents[-1])
        left, right = (int(k) for k in plan.children[-1])
        self._child_histograms(parent, left, right, result.counts[-1], result.raw)
        self._consider([left, right], self.depth[left])
        return self._next()

    def _consider(self, ids: list[int], depth: int) -> None:
        """``_grow_leafwise``'s ``consider``: search the new leaves, queue those that split."""
        for k, split in zip(ids, self.splitter(ids, depth), strict=True):
            if split is None:
                self.pool.release(k)
            else:
                self.waiting[k] = split
                heapq.heappush(self.queue, (-float(split.gain[0]), k))

    def _child_histograms(self, parent: int, left: int, right: int, counts: np.ndarray,
                          raw: np.ndarray) -> None:
        """``_leaf_histograms``'s pool steps on the summed histograms: the larger child (by
        events) takes the parent's slot, the right child is parent minus left; both taken
        as sent where the parent's histogram was given up."""
        pool = self.pool
        small, large = (left, right) if counts[0] <= counts[1] else (right, left)
        if parent in pool.slot:
            if raw.shape[0] != 1:
                raise RuntimeError("the parts sent both children's histograms of a held parent")
            parent_slot = pool.slot.pop(parent)
            pool.slot[large] = parent_slot
            right_raw = pool.raw[parent_slot] - raw[0]
            pool.take(small, self.waiting)
            pool.raw[pool.slot[left]] = raw[0]
            pool.raw[pool.slot[right]] = right_raw
        else:
            pool.raw[pool.take(left, self.waiting)] = raw[0]
            pool.raw[pool.take(right, self.waiting)] = raw[1]

    def _next(self) -> LeafPlan | None:
        """Make splits best first until one whose children get histograms (or the end)."""
        while self.queue and self.n_leaves < self.max_leaves:
            _, parent = heapq.heappop(self.queue)
            split = self.waiting.pop(parent)
            depth = self.depth[parent] + 1
            build = self.n_leaves + 1 < self.max_leaves and depth < self.depth_limit
            none = np.zeros(1, np.int64)  # the parts hold where the events are
            children = _add_children(self.nodes, np.array([parent], np.int64), split, none,
                                     none, none)
            self.n_leaves += 1
            self.pending.append((parent, split, children))
            if not build:
                self.pool.release(parent)
                continue
            self.depth[int(children[0])] = self.depth[int(children[1])] = depth
            return self._send(False, depth)
        return self._send(True, 0) if self.pending else None

    def _send(self, last: bool, depth: int) -> LeafPlan:
        """The splits made since the last plan, and the histograms the parts may free."""
        made, self.pending = self.pending, []
        drop = self.held - set(self.pool.slot)
        self.held -= drop
        if not last:  # the parts' pools follow memory's: the parent's slot to a child
            self.held.discard(made[-1][0])
            self.held.update(int(k) for k in made[-1][2])
        splits = [m[1] for m in made]
        self.plan = LeafPlan(
            np.array([m[0] for m in made], np.int64), np.stack([m[2] for m in made]),
            *(np.concatenate([getattr(sp, name) for sp in splits])
              for name in ("gain", "feature", "threshold", "missing_left", "left_sums")),
            np.array(sorted(drop), np.int64), last, depth)
        return self.plan

    def grown_tree(self) -> GrownTree:
        """The tree (node arrays; an empty partition)."""
        return self.nodes.grown_tree(np.empty(0, np.int32))


class PartTree:
    """A part's side: its events' codes (a :class:`QuantisedRows`), their offset in the
    whole sample, and the tree being grown on them: depth-wise (``max_leaves`` None), or
    leaf-wise, with a pool of its waiting leaves' histograms as the driver's (two more)."""

    def __init__(self, ordered: QuantisedRows, offset: int, max_depth: int | None,
                 max_leaves: int | None = None):
        self.ordered = ordered
        self.offset = int(offset)
        self.max_depth = None if max_depth is None else int(max_depth)
        self.max_leaves = None if max_leaves is None else int(max_leaves)
        self.n_events = ordered.codes.shape[0]
        self.events: _TreeEvents | None = None
        self.nodes: _NodeArrays | None = None
        self.raw: np.ndarray | None = None
        self.pool: _HistogramPool | None = None  # leaf-wise: the waiting leaves' histograms
        self.small: _SmallWork | None = None
        # each event's leaf, from the leaf sums of the grown tree to the next tree's start
        self.leaf_of: np.ndarray | None = None

    def start(self, a: np.ndarray, b: np.ndarray, used: np.ndarray, n_rows: int, seed: int,
              max_abs: tuple[float, float]) -> np.ndarray:
        """Pack this part's channels as the whole sample's (``n_rows`` events, maxima
        ``max_abs``) and return the root's raw histogram (every event of the part)."""
        quantiser = Quantiser(a, b, n_rows, seed=seed, max_abs=max_abs, offset=self.offset)
        self.leaf_of = None  # the last tree's, in the scratch that this tree's partitions use
        rows = self.ordered.partition  # only its size is read
        self.events = _TreeEvents.quantised_rows(self.ordered, rows, a, b, used.astype(np.bool_),
                                                 seed, quantiser)
        self.nodes = _NodeArrays(max_nodes(self.max_depth) if self.max_leaves is None
                                 else 2 * self.max_leaves - 1)
        self.nodes.start[0], self.nodes.stop[0] = 0, self.n_events
        root = self.events.histograms(1, np.array([0], np.int64),
                                      np.array([self.n_events], np.int64),
                                      np.array([0], np.int64))
        self.raw = root
        if self.max_leaves is not None:
            self._start_pool(root)
        return root

    def _start_pool(self, root: np.ndarray) -> None:
        """An empty pool (kept from the last tree) holding the root's histogram."""
        capacity = min(self.max_leaves, self.events.leaf_capacity()) + 2
        if self.pool is None or self.pool.raw.shape != (capacity,) + root.shape[1:]:
            self.pool = _HistogramPool(self.events, capacity)
        self.pool.free, self.pool.slot = list(range(capacity - 1, -1, -1)), {}
        self.pool.raw[self.pool.take(0, {})] = root[0]
        self.raw = None
        self.small = _SmallWork()

    def split_leaves(self, plan: LeafPlan) -> LeafResult:
        """Free the histograms the driver dropped, split the plan's leaves in order (the
        partition of ``_PackedSplits``), and unless it was the last plan build its last
        split's children's histograms (``_leaf_histograms``: this part's smaller child
        from its events, the larger as parent minus it, both from the events where the
        parent's was dropped). Returns each split's events left and right, and the left
        child's histogram (both where the parent's was dropped)."""
        events, nodes, pool = self.events, self.nodes, self.pool
        for node in plan.drop.tolist():
            pool.release(node)
        counts = np.empty((plan.parents.size, 2), np.int64)
        for j, parent in enumerate(plan.parents.tolist()):
            s, e = int(nodes.start[parent]), int(nodes.stop[parent])
            serial = e - s <= SERIAL_EVENTS
            with self.small.serial(serial), launch_lock():
                mid = int(_partition_leaf(*events.split_codes, events.partition,
                                          events.scratch_idx, s, e,
                                          plan.feature[j:j + 1].astype(np.int32),
                                          plan.threshold[j:j + 1].astype(np.uint8),
                                          plan.missing_left[j:j + 1].astype(np.bool_),
                                          1 if serial else self.small.n_threads))
            children = _add_children(nodes, plan.parents[j:j + 1], plan.split(j),
                                     np.array([s]), np.array([mid]), np.array([e]))
            if not np.array_equal(children, plan.children[j]):
                raise RuntimeError(f"node ids {children} on a part, {plan.children[j]} planned")
            counts[j] = mid - s, e - mid
        if plan.last:
            return LeafResult(counts, None)
        held = parent in pool.slot
        left, right = (int(k) for k in children)
        _leaf_histograms(events, pool, {}, self.small, parent, left, right, s, mid, e)
        ids = [left] if held else [left, right]
        return LeafResult(counts, pool.raw[[pool.slot[k] for k in ids]])

    def apply(self, plan: LevelPlan) -> np.ndarray | None:
        """Partition this part's events with the level's splits; unless it was the last
        level, its left children's raw histograms ((k, m, bins...) int64)."""
        children, s, mid, e = _apply_splits(self.events, self.nodes, plan.parents, plan.splits,
                                            move_payload=False)
        if plan.last:
            self.raw = None
            return None
        self.raw = _child_histograms(self.events, self.nodes, self.raw, plan.position, children,
                                     s, mid, e)
        return np.ascontiguousarray(self.raw[0::2])

    def leaves(self) -> np.ndarray:
        """The tree's leaves (node ids)."""
        n = self.nodes.size
        return np.flatnonzero(self.nodes.feature[:n] < 0)

    def leaf_sums(self, initial: np.ndarray | None, *per_event: np.ndarray) -> np.ndarray:
        """Sums of ``per_event`` over each leaf's events of this part, continuing
        ``initial`` (the parts before this one): (len(per_event), n_leaves)."""
        leaves = self.leaves()
        if self.n_events >= ORDERED_SUMS_FROM:  # the scratch is free until the next tree
            self.leaf_of = event_leaves(self.grown_tree(), self.n_events, self.ordered.scratch_idx)
            return sums_by_leaf(self.leaf_of, leaves.size, *per_event, initial=initial)
        return slice_sums(self.events.partition, self.nodes.start[leaves], self.nodes.stop[leaves],
                          *per_event, initial=initial)

    def grown_tree(self) -> GrownTree:
        """This part's view of the tree (its partition and node slices)."""
        return self.nodes.grown_tree(self.events.partition)


@njit(parallel=True)
def _continue_histograms(codes, partition, payload, node_start, node_stop, feature_used, hists):
    # hists[j] += the channels of node j's events (partition[start_j:stop_j], in order),
    # one feature a thread: ``_build_exact``'s loop, continuing instead of from zero, and
    # reading the payload in event order through the partition.
    for f in numba.prange(codes.shape[0]):
        if feature_used[f]:
            codes_f = codes[f]
            for j in range(node_start.size):
                h = hists[j, f]
                for k in range(np.uint64(node_start[j]), np.uint64(node_stop[j])):
                    i = np.uint64(partition[k])
                    c = np.uint64(codes_f[i])
                    for ch in range(payload.shape[1]):
                        h[c, ch] += payload[i, ch]


class ExactPartTree:
    """A part's side of a tree of exact (float) histograms: its events' feature-major codes,
    their channels (float32, event order), and the tree being grown on them. Histograms
    continue the running ones of the parts before (``root``, ``children``): the parts called
    in event order give memory's sums bit for bit."""

    def __init__(self, codes: np.ndarray, max_depth: int):
        self.codes = codes  # (m, n) uint8
        self.max_depth = int(max_depth)
        self.n_events = codes.shape[1]
        self.events: _TreeEvents | None = None
        self.nodes: _NodeArrays | None = None
        self.small: np.ndarray = np.zeros(0, np.int64)  # the nodes whose histograms go next

    def start(self, channels: np.ndarray, used: np.ndarray | None = None,
              rows: np.ndarray | None = None) -> None:
        """The events at the root, with ``channels`` (C, n) float32 (the last one W): every
        one, or the increasing ``rows`` (a tree's drawn events, as memory's partition holds
        them); ``used``: the features the tree may use (or given to the root's
        ``histograms``)."""
        payload = np.ascontiguousarray(channels.T)
        partition = (np.arange(self.n_events, dtype=np.int32) if rows is None
                     else np.asarray(rows, dtype=np.int32))
        used = np.ones(self.codes.shape[0], np.bool_) if used is None else used
        self.events = _TreeEvents(self.codes, partition, payload,
                                  np.empty(self.n_events, np.int32), payload[:0],
                                  used.astype(np.bool_), self.codes.shape[0], None)
        self.nodes = _NodeArrays(max_nodes(self.max_depth), n_channels=payload.shape[1])
        self.nodes.start[0], self.nodes.stop[0] = 0, partition.size
        self.small = np.zeros(1, np.int64)
        self.children = np.zeros(0, np.int64)

    def histograms(self, initial: np.ndarray | None, used: np.ndarray | None = None,
                   small_left: np.ndarray | None = None) -> np.ndarray:
        """The histograms of the nodes waiting (the root; then the smaller children of the
        last level), continuing ``initial`` (zeros when None); ``used``: the tree's features
        (at the root); ``small_left``: which child of each split of the last level is the
        smaller (memory's choice, by events; None: the plan's)."""
        if used is not None:
            self.events.used = used.astype(np.bool_)
        if small_left is not None:
            q = np.arange(small_left.size)
            self.small = self.children[np.where(small_left, 2 * q, 2 * q + 1)]
        ids = self.small
        if initial is None:
            initial = new_histograms(ids.size, self.codes.shape[0],
                                     n_channels=self.events.payload.shape[1])
            initial.fill(0.0)
        hists = np.array(initial, dtype=np.float64, order="C")
        with launch_lock():
            _continue_histograms(self.codes, self.events.partition, self.events.payload,
                                 self.nodes.start[ids], self.nodes.stop[ids], self.events.used,
                                 hists)
        return hists

    def apply(self, plan: LevelPlan) -> tuple[np.ndarray, np.ndarray]:
        """Partition this part's events with the level's splits; the smaller children wait
        for ``histograms`` unless it was the last level. Returns each split's events of
        this part on the left and on the right (int64)."""
        children, s, mid, e = _apply_splits(self.events, self.nodes, plan.parents, plan.splits,
                                            move_payload=False)
        q = np.arange(plan.parents.size)
        self.children = children
        self.small = (np.zeros(0, np.int64) if plan.last
                      else children[np.where(plan.small_left, 2 * q, 2 * q + 1)])
        return (mid - s).astype(np.int64), (e - mid).astype(np.int64)

    def leaf_sums(self, initial: np.ndarray | None, *per_event: np.ndarray) -> np.ndarray:
        """Sums of ``per_event`` over each leaf's events of this part, continuing ``initial``."""
        n = self.nodes.size
        leaves = np.flatnonzero(self.nodes.feature[:n] < 0)
        return slice_sums(self.events.partition, self.nodes.start[leaves],
                          self.nodes.stop[leaves], *per_event, initial=initial)

    def grown_tree(self) -> GrownTree:
        """This part's view of the tree (its partition and node slices)."""
        return self.nodes.grown_tree(self.events.partition)


class PairwiseSum:
    """numpy's sum of a float64 vector (``cast``: of a float32 one, summed in float64) that
    parts hold in contiguous runs of ``lengths`` values, the bits ``np.sum`` gives the whole.

    numpy adds a contiguous vector pairwise: below ``UNROLL`` values in turn, up to
    ``PAIRWISE_BLOCK`` with eight accumulators, else the two halves (the first a multiple of
    eight) each so, then their sums; the total is 0.0 plus that. A float32 vector summed
    with ``dtype=np.float64`` is cast in buffers of ``np.getbufsize()`` values, whose pairwise
    sums are added in turn. ``requests(i)`` are what part i sends (``pairwise_pieces``):
    the sum of each block of the recursion within it, the values of those across parts;
    ``total`` adds them as numpy does.
    """

    def __init__(self, lengths: Sequence[int], cast: bool = False):
        self.lengths = [int(n) for n in lengths]
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)
        self.n = int(self.offsets[-1])
        self.asks: list[list[tuple[int, int, bool]]] = [[] for _ in self.lengths]
        step = np.getbufsize() if cast else max(self.n, 1)
        self.terms = [self._node(lo, min(step, self.n - lo)) for lo in range(0, self.n, step)]

    def _ask(self, part: int, start: int, stop: int, whole: bool) -> tuple[int, int]:
        self.asks[part].append((start, stop, whole))
        return part, len(self.asks[part]) - 1

    def _node(self, lo: int, n: int):
        part = int(np.searchsorted(self.offsets, lo, side="right")) - 1
        first = lo - int(self.offsets[part])
        if first + n <= self.lengths[part]:  # within one part: its sum
            return ("sum", self._ask(part, first, first + n, True))
        if n <= PAIRWISE_BLOCK:  # a block across parts: its values, added here
            pieces, at = [], lo
            while at < lo + n:
                part = int(np.searchsorted(self.offsets, at, side="right")) - 1
                stop = min(lo + n, int(self.offsets[part + 1]))
                pieces.append(self._ask(part, at - int(self.offsets[part]),
                                        stop - int(self.offsets[part]), False))
                at = stop
            return ("values", pieces)
        half = n // 2
        half -= half % UNROLL
        return ("add", self._node(lo, half), self._node(lo + half, n - half))

    def requests(self, part: int) -> list[tuple[int, int, bool]]:
        """What part ``part`` sends: (start, stop, whole) of its values; whole: their sum."""
        return self.asks[part]

    def total(self, answers: Sequence[Sequence]) -> float:
        """numpy's sum, from each part's answers to its requests (in part order)."""
        def value(node) -> float:
            if node[0] == "sum":
                part, j = node[1]
                return float(answers[part][j])
            if node[0] == "values":
                values = np.concatenate([answers[part][j] for part, j in node[1]])
                return float(np.add.reduce(values, initial=-0.0))
            return value(node[1]) + value(node[2])

        total = 0.0
        for term in self.terms:
            total += value(term)
        return total


def pairwise_pieces(values: np.ndarray, requests: Sequence[tuple[int, int, bool]]) -> list:
    """A part's answers to :meth:`PairwiseSum.requests`: numpy's pairwise sum of each whole
    run of ``values`` (float64; a float32 vector cast as numpy casts it), else the run itself."""
    out: list = []
    for start, stop, whole in requests:
        run = np.asarray(values[start:stop], dtype=np.float64)
        # initial -0.0 adds nothing, not even a sign: the recursion's own sum of the run
        out.append(float(np.add.reduce(run, initial=-0.0)) if whole else run)
    return out


def sequential_sum(values: np.ndarray) -> float:
    """The values (float64) added one after another from 0.0, as a kernel's loop adds them."""
    total = 0.0
    for value in np.asarray(values, dtype=np.float64).tolist():
        total += value  # Python floats: IEEE double additions, in order
    return total


class ChunkedSum:
    """The partial sums of a float64 vector held in contiguous parts of ``lengths`` values,
    cut into chunks of ``chunk`` values from its first (each chunk's values added one after
    another from 0.0), the bits a kernel over the whole vector gives.

    Part i sends ``chunk_pieces(values_i, requests(i))``: the values before its first
    chunk boundary (the end of a chunk that began in a part before, or lies across it),
    the sums of the chunks wholly within it, and the values after its last boundary;
    ``partial`` adds the pieces of each chunk across parts in order.
    """

    def __init__(self, lengths: Sequence[int], chunk: int):
        self.lengths = [int(n) for n in lengths]
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)
        self.chunk = int(chunk)
        self.n_chunks = -(-int(self.offsets[-1]) // self.chunk)

    def requests(self, part: int) -> tuple[int, int]:
        """What part ``part`` needs to cut its values: (its first value's index, chunk)."""
        return int(self.offsets[part]), self.chunk

    def partial(self, answers: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
        """Each chunk's sum (n_chunks,) float64, from the parts' ``chunk_pieces`` in order."""
        out = np.empty(self.n_chunks)
        open_values: list[np.ndarray] = []  # the pieces of the chunk across parts so far
        at = 0  # the next chunk to fill
        for first, (head, sums, tail) in zip(self.offsets[:-1], answers, strict=True):
            if head.size:
                open_values.append(head)
                if (int(first) + head.size) % self.chunk == 0:  # the chunk ends in this part
                    out[at], open_values, at = sequential_sum(np.concatenate(open_values)), [], at + 1
            out[at:at + sums.size] = sums
            at += sums.size
            if tail.size:
                open_values.append(tail)
        if open_values:
            out[at] = sequential_sum(np.concatenate(open_values))
            at += 1
        assert at == self.n_chunks, (at, self.n_chunks)
        return out


def chunk_pieces(values: np.ndarray, request: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """A part's answer to :meth:`ChunkedSum.requests`: (the values before its first chunk
    boundary, each whole chunk's sum, the values after its last boundary)."""
    first, chunk = request
    values = np.asarray(values, dtype=np.float64)
    head = min(values.size, (-first) % chunk)
    whole = (values.size - head) // chunk * chunk
    sums = _chunk_sums(values[head:head + whole], chunk)
    return values[:head].copy(), sums, values[head + whole:].copy()


@njit
def _chunk_sums(values, chunk):
    # each chunk's values added one after another from 0.0 (the losses' partial sums)
    out = np.empty(values.size // chunk)
    for c in range(out.size):
        total = 0.0
        for i in range(c * chunk, (c + 1) * chunk):
            total += values[i]
        out[c] = total
    return out
