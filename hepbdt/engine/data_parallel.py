"""The depth-wise quantised grower cut in two: a driver that sees only summed histograms, and
parts that hold the events (a Dask cluster's workers, each with a contiguous run of them).

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

Depth-wise only (leaf-wise growth splits one leaf at a time: a round trip a leaf) and
quantised only (float histograms summed in another order differ in the last bits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grower import (
    ORDERED_SUMS_FROM,
    GrownTree,
    QuantisedRows,
    _add_children,
    _apply_splits,
    _child_histograms,
    _choose_splits,
    _NodeArrays,
    _Splits,
    _TreeEvents,
    event_leaves,
    slice_sums,
    sums_by_leaf,
)
from .histogram import Quantiser
from .split import SplitParams

__all__ = ["LevelPlan", "PartTree", "SummedTree", "add_histograms", "max_nodes"]


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
    left_sums: np.ndarray  # (k, 3)
    last: bool  # the children are leaves: no histograms wanted

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
    """What ``_choose_splits`` asks of the events, for histograms summed elsewhere."""

    def __init__(self, quantiser: Quantiser, used: np.ndarray):
        self.quantiser = quantiser
        self.used = used
        self.n_features = used.size

    def decoded(self, raw: np.ndarray) -> np.ndarray:
        return self.quantiser.decode(raw)


class SummedTree:
    """The driver's side of one tree: node arrays, the level's summed raw histograms, and
    the split choice (with ``rng``'s feature draws, as the in-memory grower makes them).

    ``start(root_raw)`` and then ``advance(left_raw)`` after each level give the next
    :class:`LevelPlan`, or None when the tree is done; ``grown_tree()`` the tree (without a
    partition: the parts hold the events).
    """

    def __init__(self, quantiser: Quantiser, used: np.ndarray, n_value_bins: np.ndarray,
                 params: SplitParams, max_depth: int, colsample_bylevel: float = 1.0,
                 colsample_bynode: float = 1.0, rng: np.random.Generator | None = None):
        self.events = _Summed(quantiser, used.astype(np.bool_))
        self.n_value_bins, self.params, self.max_depth = n_value_bins, params, int(max_depth)
        self.colsample_bylevel, self.colsample_bynode = colsample_bylevel, colsample_bynode
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.nodes = _NodeArrays(max_nodes(self.max_depth))
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
        raw[0::2] = left_raw
        np.subtract(self.raw[plan.position], left_raw, out=raw[1::2])
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
        parents = self.level[splits.position]
        none = np.zeros(parents.size, np.int64)  # the parts hold where the events are
        self.children = _add_children(self.nodes, parents, splits, none, none, none)
        self.plan = LevelPlan(parents, splits.position.astype(np.int64), splits.gain,
                              splits.feature, splits.threshold, splits.missing_left,
                              splits.left_sums, self.depth + 1 == self.max_depth)
        return self.plan

    def grown_tree(self) -> GrownTree:
        """The tree (node arrays; an empty partition)."""
        return self.nodes.grown_tree(np.empty(0, np.int32))


class PartTree:
    """A part's side: its events' codes (a :class:`QuantisedRows`), their offset in the
    whole sample, and the tree being grown on them."""

    def __init__(self, ordered: QuantisedRows, offset: int, max_depth: int):
        self.ordered = ordered
        self.offset = int(offset)
        self.max_depth = int(max_depth)
        self.n_events = ordered.codes.shape[0]
        self.events: _TreeEvents | None = None
        self.nodes: _NodeArrays | None = None
        self.raw: np.ndarray | None = None
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
        self.nodes = _NodeArrays(max_nodes(self.max_depth))
        self.nodes.start[0], self.nodes.stop[0] = 0, self.n_events
        self.raw = self.events.histograms(1, np.array([0], np.int64),
                                          np.array([self.n_events], np.int64),
                                          np.array([0], np.int64))
        return self.raw

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
