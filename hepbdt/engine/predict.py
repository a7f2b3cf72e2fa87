"""Flat-array forest evaluation: every tree's nodes in shared arrays, one parallel kernel.

Node k tests ``x[feature[k]] < threshold[k]`` (or, on bin codes, ``code <= bin_threshold[k]``)
and goes to ``left[k]``, else ``right[k]``; NaN (the missing bin) follows ``missing_left[k]``.
Leaves have ``feature == -1``. ``left``/``right`` are indices into the same flat arrays and
tree t starts at node ``tree_offsets[t]``. Events are processed in blocks, tree by tree, so
a tree's nodes stay in cache while a block walks it.
"""

from __future__ import annotations

import numba
import numpy as np

from ._types import MISSING_BIN, njit

__all__ = ["predict_raw", "predict_binned", "predict_per_tree", "predict_naive"]

BLOCK = 64


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
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in numba.prange(n_blocks):
        i0 = blk * BLOCK
        i1 = min(n, i0 + BLOCK)
        for t in range(tree_offsets.size - 1):
            root = tree_offsets[t]
            tw = tree_weights[t]
            for i in range(i0, i1):
                node = root
                while feature[node] >= 0:
                    c = codes[feature[node], i]
                    if c == MISSING_BIN:
                        go_left = missing_left[node]
                    else:
                        go_left = c <= bin_threshold[node]
                    node = left[node] if go_left else right[node]
                out[i] += tw * value[node]


def predict_raw(X: np.ndarray, forest, t_begin: int = 0, t_end: int | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """Sum over trees [t_begin, t_end) of tree_weight * leaf value, added to ``out``.

    X: (n, m) float32 C-contiguous; forest: any object with the flat node arrays
    (feature, threshold, left, right, missing_left, value, tree_offsets, tree_weights).
    Returns (n,) float64.
    """
    t_end = forest.n_trees if t_end is None else t_end
    if out is None:
        out = np.zeros(X.shape[0], dtype=np.float64)
    _predict_raw(X, forest.feature, forest.threshold, forest.left, forest.right,
                 forest.missing_left, forest.value, forest.tree_offsets, forest.tree_weights,
                 t_begin, t_end, out)
    return out


def predict_per_tree(X: np.ndarray, forest) -> np.ndarray:
    """Leaf value of every tree for every event: (n, n_trees) float64 (no tree weights)."""
    out = np.empty((X.shape[0], forest.n_trees), dtype=np.float64)
    _predict_per_tree(X, forest.feature, forest.threshold, forest.left, forest.right,
                      forest.missing_left, forest.value, forest.tree_offsets, out)
    return out


def predict_binned(codes: np.ndarray, feature: np.ndarray, bin_threshold: np.ndarray,
                   left: np.ndarray, right: np.ndarray, missing_left: np.ndarray,
                   value: np.ndarray, tree_offsets: np.ndarray, tree_weights: np.ndarray,
                   out: np.ndarray) -> np.ndarray:
    """Fast path on training codes (m, n) uint8: adds each tree's weighted leaf value to out."""
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
