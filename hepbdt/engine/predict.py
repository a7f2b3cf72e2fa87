"""Flat-array forest evaluation: every tree's nodes in shared arrays, one parallel kernel.

Node k tests ``x[feature[k]] < threshold[k]`` (or, on bin codes, ``code <= bin_threshold[k]``)
and goes to ``left[k]``, else ``right[k]``; NaN (the missing bin) follows ``missing_left[k]``.
Leaves have ``feature == -1``. ``left``/``right`` are indices into the same flat arrays and
tree t starts at node ``tree_offsets[t]``. Events are processed in blocks, tree by tree, so
a tree's nodes stay in cache while a block walks it.

Dense forests are not walked from the root: every node of a tree's top levels (all of a
tree of depth <= MASK_DEPTH, the top MASK_TOP levels of a deeper one) is tested for a whole
block at once (contiguous loads of one feature's values of the block, no gathers), each
test clearing the leaves it rules out from a per-event bit mask, and the one leaf left is
the mask's lowest set bit (QuickScorer's idea, with the events rather than the nodes in
the vector lanes). Below those levels a tree is walked level by level, where testing every
node would take more work than the walk's steps. Forests of depth <= SELECT_DEPTH (TMVA's
default depth 3) skip the masks for blocks without NaN: each tree is one nested select per
event, the leaf values held in registers (2x faster than masks and a leaf gather). Every
path adds the same products in the same order, so the scores are identical whichever is
taken.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from ._types import MISSING_BIN, launch_lock, njit, read_only

__all__ = ["DenseForest", "dense_block", "dense_fits", "node_depths", "predict_raw", "predict_binned",
           "predict_per_tree", "predict_naive"]

BLOCK = 64
GROUP = 16  # blocks per parallel task of the dense walk (buffers allocated once a task)
MAX_DENSE_DEPTH = 12  # deeper forests are walked node by node
DENSE_SLOTS_PER_NODE = 8  # and so are forests whose complete trees would hold more leaf slots
LOW31 = np.uint32(0x7FFFFFFF)
MASK_DEPTH = 5  # dense forests up to this depth are scored by leaf masks alone (32 leaves)
MASK_TOP = 4  # deeper ones: their top levels by leaf masks, then walked (fastest measured)
SELECT_DEPTH = 3  # forests up to this depth: each tree one nested select (blocks without NaN)


@njit
def node_depths(feature, left, right, tree_offsets):
    """Depth of every node of a flat forest (roots 0), int64."""
    depth = np.zeros(feature.size, np.int64)
    for t in range(tree_offsets.size - 1):
        for k in range(tree_offsets[t], tree_offsets[t + 1]):  # children follow parents
            if feature[k] >= 0:
                depth[left[k]] = depth[k] + 1
                depth[right[k]] = depth[k] + 1
    return depth


def dense_fits(n_trees: int, n_nodes: int, depth: int) -> bool:
    """Whether the dense layout of a forest is small: depth <= MAX_DENSE_DEPTH and at most
    DENSE_SLOTS_PER_NODE leaf slots (n_trees * 2^depth) per node of the forest, so that its
    memory is bounded by the node count (decided before anything is allocated)."""
    if depth < 0 or depth > MAX_DENSE_DEPTH or n_trees < 1:
        return False
    return n_trees * (1 << depth) <= DENSE_SLOTS_PER_NODE * n_nodes


@njit
def _densify(feature, threshold, left, right, missing_left, value, tree_offsets, depth,
             d_feature, d_threshold, d_missing_left, d_leaf):
    n_inner = (1 << depth) - 1
    node_at = np.empty(2 * n_inner + 1, np.int64)  # sparse node behind each dense slot
    for t in range(tree_offsets.size - 1):
        node_at[0] = tree_offsets[t]
        for p in range(n_inner):
            s = node_at[p]
            if feature[s] >= 0:
                d_feature[t, p] = feature[s]
                d_threshold[t, p] = threshold[s]
                d_missing_left[t, p] = missing_left[s]
                node_at[2 * p + 1] = left[s]
                node_at[2 * p + 2] = right[s]
            else:  # a leaf above the last level: x < NaN is false, so every event goes right
                d_feature[t, p] = 0
                d_threshold[t, p] = np.nan
                d_missing_left[t, p] = False
                node_at[2 * p + 1] = s
                node_at[2 * p + 2] = s
        for q in range(n_inner + 1):
            d_leaf[t, q] = value[node_at[n_inner + q]]


class DenseForest:
    """Every tree as a complete binary tree of the forest's depth: a fixed number of
    branch-free steps per tree, independent across the events of a block.

    ``Forest.dense()`` builds one only for forests that :func:`dense_fits`; built directly,
    the depth must be at most MAX_DENSE_DEPTH (ValueError before allocating)."""

    def __init__(self, forest, depth: int):
        self.depth = int(depth)
        n_trees = forest.tree_offsets.size - 1
        if not 0 <= self.depth <= MAX_DENSE_DEPTH:
            raise ValueError(f"depth {self.depth}: the dense layout takes 2^depth slots a tree "
                             f"and is built for depth <= {MAX_DENSE_DEPTH} only")
        n_inner = (1 << self.depth) - 1
        self.feature = np.zeros((n_trees, max(n_inner, 1)), np.uint32)
        self.threshold = np.zeros((n_trees, max(n_inner, 1)), forest.threshold.dtype)
        self.missing_left = np.zeros((n_trees, max(n_inner, 1)), np.bool_)
        self.leaf = np.zeros((n_trees, n_inner + 1), np.float64)
        _densify(forest.feature, forest.threshold, forest.left, forest.right, forest.missing_left,
                 forest.value, forest.tree_offsets, self.depth, self.feature, self.threshold,
                 self.missing_left, self.leaf)
        self.feature_ml = self.feature | (self.missing_left.astype(np.uint32) << np.uint32(31))
        self.top = self.depth if self.depth <= MASK_DEPTH else MASK_TOP
        self.keep_left, self.keep_right = _leaf_masks(self.top)


def dense_block(n_features: int) -> int:
    """Events per block of the dense kernel: as many as keep the block's features (float32,
    one row per feature) within about 32 KiB, the L1 cache, between 64 and 256 (larger
    blocks spread each tree's fixed work over more events; 256 measured 1.4x faster than
    64 for 1000 trees of depth 3 on 28 features)."""
    return int(min(256, max(64, (8192 // max(n_features, 1)) // 64 * 64)))


def _leaf_masks(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """For a complete tree of ``depth`` <= MASK_DEPTH, per inner node p: the leaf mask
    (bit q = leaf slot q) that an event going left keeps (every leaf but those of p's right
    subtree), and the one for going right."""
    n_inner = (1 << depth) - 1
    dtype = np.uint8 if depth <= 3 else np.uint32  # uint8: four times the lanes a vector op
    keep_left = np.full(max(n_inner, 1), np.iinfo(dtype).max, dtype)
    keep_right = keep_left.copy()
    for p in range(n_inner):
        level = int(np.log2(p + 1))
        span = 1 << (depth - level - 1)  # leaves under each child of p
        first = (p + 1 - (1 << level)) * 2 * span  # p's leftmost leaf slot
        left_leaves = ((1 << span) - 1) << first
        keep_right[p] &= ~dtype(left_leaves)
        keep_left[p] &= ~dtype(left_leaves << span)
    return keep_left, keep_right


@njit(inline="always")  # inlined into the kernel: measured 1.4x faster than a call
def _select_tree(x_flat, feat, thr, leaf, tw, depth, acc, n):
    # A whole tree of depth <= SELECT_DEPTH as one nested select per event (no masks, no
    # leaf gather); for blocks without NaN, where every test is a plain x < threshold.
    # x_flat: the block, one feature a row of n events.
    if depth == 0:
        for i in range(n):
            acc[i] += tw * leaf[0]
    elif depth == 1:
        o0, t0, l0, l1 = feat[0] * n, thr[0], leaf[0], leaf[1]
        for i in range(n):
            acc[i] += tw * (l0 if x_flat[o0 + i] < t0 else l1)
    elif depth == 2:
        o0, o1, o2 = feat[0] * n, feat[1] * n, feat[2] * n
        t0, t1, t2 = thr[0], thr[1], thr[2]
        l0, l1, l2, l3 = leaf[0], leaf[1], leaf[2], leaf[3]
        for i in range(n):
            s01 = l0 if x_flat[o1 + i] < t1 else l1
            s23 = l2 if x_flat[o2 + i] < t2 else l3
            acc[i] += tw * (s01 if x_flat[o0 + i] < t0 else s23)
    else:
        o0, o1, o2, o3 = feat[0] * n, feat[1] * n, feat[2] * n, feat[3] * n
        o4, o5, o6 = feat[4] * n, feat[5] * n, feat[6] * n
        t0, t1, t2, t3, t4, t5, t6 = thr[0], thr[1], thr[2], thr[3], thr[4], thr[5], thr[6]
        l0, l1, l2, l3 = leaf[0], leaf[1], leaf[2], leaf[3]
        l4, l5, l6, l7 = leaf[4], leaf[5], leaf[6], leaf[7]
        for i in range(n):
            s01 = l0 if x_flat[o3 + i] < t3 else l1
            s23 = l2 if x_flat[o4 + i] < t4 else l3
            s45 = l4 if x_flat[o5 + i] < t5 else l5
            s67 = l6 if x_flat[o6 + i] < t6 else l7
            s03 = s01 if x_flat[o1 + i] < t1 else s23
            s47 = s45 if x_flat[o2 + i] < t2 else s67
            acc[i] += tw * (s03 if x_flat[o0 + i] < t0 else s47)


@njit(parallel=True)
def _predict_dense(X, d_feature, d_threshold, d_missing_left, d_feature_ml, d_leaf, depth,
                   top, keep_left, keep_right, tree_weights, t_begin, t_end, block, out):
    # The top `top` levels by leaf masks, the levels below walked; unsigned indices
    # throughout (no negative-index wraparound, so the loops vectorise). d_feature_ml holds
    # the feature in its low 31 bits and missing_left in the top bit.
    n, m = X.shape
    n_inner = np.uint32((1 << depth) - 1)
    n_top = (1 << top) - 1
    two = np.uint32(2)
    width = np.uint32(block)
    n_blocks = (n + block - 1) // block
    n_groups = (n_blocks + GROUP - 1) // GROUP
    for grp in numba.prange(n_groups):
        xb = np.empty((m, block), X.dtype)  # the block, one feature a row
        x_flat = xb.ravel()
        lane = np.arange(block).astype(np.uint32)
        mask = np.empty(block, keep_left.dtype)
        pos = np.empty(block, np.uint32)
        acc = np.zeros(block)
        for blk in range(grp * GROUP, min(n_blocks, grp * GROUP + GROUP)):
            i0 = blk * block
            size = min(n, i0 + block) - i0
            has_nan = False
            for i in range(block):  # a full block always (the last event repeated)
                row = i0 + min(i, size - 1)
                for f in range(m):
                    v = X[row, f]
                    xb[f, i] = v
                    has_nan |= v != v
            acc[:] = 0.0
            for t in range(t_begin, t_end):
                if depth <= SELECT_DEPTH and not has_nan:
                    _select_tree(x_flat, d_feature[t], d_threshold[t], d_leaf[t], tree_weights[t],
                                 depth, acc, width)
                    continue
                mask[:] = keep_left[0] | keep_right[0]  # every leaf
                for p in range(n_top):
                    xf = xb[d_feature[t, p]]
                    thr = d_threshold[t, p]
                    go_left, go_right = keep_left[p], keep_right[p]
                    if has_nan and d_missing_left[t, p]:  # NaN fails x < thr; here it goes left
                        for i in range(block):
                            mask[i] &= go_left if (xf[i] < thr) | (xf[i] != xf[i]) else go_right
                    else:
                        for i in range(block):
                            mask[i] &= go_left if xf[i] < thr else go_right
                for i in range(block):
                    pos[i] = np.uint32(n_top + trailing_zeros(mask[i]))
                feat_t = d_feature[t]
                thr_t = d_threshold[t]
                if has_nan:
                    fml_t = d_feature_ml[t]
                    for _ in range(depth - top):
                        for i in range(block):
                            p = pos[i]
                            fml = fml_t[p]
                            x = x_flat[(fml & LOW31) * width + lane[i]]
                            go_left = np.uint32(x < thr_t[p]) | ((fml >> 31) & np.uint32(x != x))
                            pos[i] = two * p + two - go_left
                else:
                    for _ in range(depth - top):
                        for i in range(block):
                            p = pos[i]
                            pos[i] = two * p + two - np.uint32(x_flat[feat_t[p] * width + lane[i]] < thr_t[p])
                tw = tree_weights[t]
                leaf_t = d_leaf[t]
                for i in range(block):
                    acc[i] += tw * leaf_t[pos[i] - n_inner]
            for i in range(size):
                out[i0 + i] += acc[i]


@njit
def _leaf_raw(x, node, feature, threshold, left, right, missing_left):
    while feature[node] >= 0:
        v = x[feature[node]]
        if np.isnan(v):
            node = left[node] if missing_left[node] else right[node]
        elif v < threshold[node]:
            node = left[node]
        else:
            node = right[node]
    return node


@njit(parallel=True)
def _predict_raw(X, feature, threshold, left, right, missing_left, value, tree_offsets,
                 tree_weights, t_begin, t_end, out):
    n = X.shape[0]
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in numba.prange(n_blocks):
        i0 = blk * BLOCK
        i1 = min(n, i0 + BLOCK)
        for t in range(t_begin, t_end):
            root = tree_offsets[t]
            tw = tree_weights[t]
            for i in range(i0, i1):
                leaf = _leaf_raw(X[i], root, feature, threshold, left, right, missing_left)
                out[i] += tw * value[leaf]


@njit(parallel=True)
def _predict_per_tree(X, feature, threshold, left, right, missing_left, value, tree_offsets, out):
    n = X.shape[0]
    n_trees = tree_offsets.size - 1
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in numba.prange(n_blocks):
        i0 = blk * BLOCK
        i1 = min(n, i0 + BLOCK)
        for t in range(n_trees):
            root = tree_offsets[t]
            for i in range(i0, i1):
                out[i, t] = value[_leaf_raw(X[i], root, feature, threshold, left, right,
                                            missing_left)]


@njit(parallel=True)
def _predict_binned(codes, feature, bin_threshold, left, right, missing_left, value,
                    tree_offsets, tree_weights, out):
    n = codes.shape[1]
    codes_flat = codes.ravel()
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in numba.prange(n_blocks):
        i0 = np.uint64(blk * BLOCK)
        i1 = np.uint64(min(n, blk * BLOCK + BLOCK))
        for t in range(tree_offsets.size - 1):
            root = np.uint64(tree_offsets[t])
            tw = tree_weights[t]
            for i in range(i0, i1):
                node = root
                while feature[node] >= 0:
                    c = codes_flat[np.uint64(feature[node]) * np.uint64(n) + i]
                    if c == MISSING_BIN:
                        go_left = missing_left[node]
                    else:
                        go_left = c <= bin_threshold[node]
                    node = np.uint64(left[node] if go_left else right[node])
                out[i] += tw * value[node]


def predict_raw(X: np.ndarray, forest, t_begin: int = 0, t_end: int | None = None,
                out: np.ndarray | None = None, dense: DenseForest | None = None) -> np.ndarray:
    """Sum over trees [t_begin, t_end) of tree_weight * leaf value, added to ``out``.

    X: (n, m) float32 C-contiguous; forest: any object with the flat node arrays
    (feature, threshold, left, right, missing_left, value, tree_offsets, tree_weights);
    dense: the same forest as a DenseForest (faster; used when its depth allows).
    Returns (n,) float64.
    """
    t_end = forest.n_trees if t_end is None else t_end
    if out is None:
        out = np.zeros(X.shape[0], dtype=np.float64)
    if dense is not None and dense.depth <= MAX_DENSE_DEPTH:
        tables = (dense.feature, dense.threshold, dense.missing_left, dense.feature_ml, dense.leaf)
        with launch_lock():  # every caller, not only the estimators' (Forest, tmva_response)
            _predict_dense(read_only(X), *map(read_only, tables), dense.depth, dense.top,
                           read_only(dense.keep_left), read_only(dense.keep_right),
                           read_only(forest.tree_weights), t_begin, t_end,
                           dense_block(X.shape[1]), out)
        return out
    with launch_lock():
        _predict_raw(read_only(X), *_read_only_nodes(forest), read_only(forest.tree_offsets),
                     read_only(forest.tree_weights), t_begin, t_end, out)
    return out


def _read_only_nodes(forest) -> tuple[np.ndarray, ...]:
    """The forest's (feature, threshold, left, right, missing_left, value) as read-only
    views (see ``read_only``)."""
    return tuple(read_only(a) for a in (forest.feature, forest.threshold, forest.left,
                                        forest.right, forest.missing_left, forest.value))


def predict_per_tree(X: np.ndarray, forest, t_end: int | None = None) -> np.ndarray:
    """Leaf value of each of the first ``t_end`` trees (all by default) for every event:
    (n, t_end) float64 (no tree weights)."""
    n_trees = forest.n_trees if t_end is None else max(0, min(t_end, forest.n_trees))
    out = np.empty((X.shape[0], n_trees), dtype=np.float64)
    with launch_lock():
        _predict_per_tree(read_only(X), *_read_only_nodes(forest),
                          read_only(forest.tree_offsets[: n_trees + 1]), out)
    return out


def predict_binned(codes: np.ndarray, feature: np.ndarray, bin_threshold: np.ndarray,
                   left: np.ndarray, right: np.ndarray, missing_left: np.ndarray,
                   value: np.ndarray, tree_offsets: np.ndarray, tree_weights: np.ndarray,
                   out: np.ndarray) -> np.ndarray:
    """Fast path on training codes (m, n) uint8: adds each tree's weighted leaf value to out."""
    with launch_lock():
        _predict_binned(codes, feature, bin_threshold, left, right, missing_left, value,
                        tree_offsets, tree_weights, out)
    return out


def predict_naive(X: np.ndarray, forest) -> np.ndarray:
    """Reference twin: recursive walk of each tree in plain Python."""
    def walk(x, node):
        f = forest.feature[node]
        if f < 0:
            return forest.value[node]
        v = x[f]
        go_left = bool(forest.missing_left[node]) if np.isnan(v) else v < forest.threshold[node]
        return walk(x, forest.left[node] if go_left else forest.right[node])

    out = np.zeros(X.shape[0])
    for i, x in enumerate(X):
        for t in range(forest.n_trees):
            out[i] += forest.tree_weights[t] * walk(x, forest.tree_offsets[t])
    return out
