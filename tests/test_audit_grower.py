"""Audit of the tree grower: defects found against an independent brute-force grower.

- A split whose side holds no event (its sums are float64 rounding noise of the sibling
  subtraction, not 0, when event weights span many decades) was taken: nodes of one event
  were split into an empty leaf. Depth-wise, leaf-wise and the one-call serial tree.
- The one-call serial tree left a root that does not split with the last tree's root
  gain, threshold and missing direction (its buffers are reused from tree to tree).
"""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt._util import threads
from hepbdt.engine import grower
from hepbdt.engine._types import GINI, NEWTON, VARIANCE
from hepbdt.engine.grower import grow_tree
from hepbdt.engine.split import SplitParams


def _wide_weights(seed: int, n: int = 200, m: int = 3):
    """Codes with NaN, and channels of weights over eleven decades (some negative)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, (m, n)).astype(np.uint8)
    codes[:, rng.random(n) < 0.1] = 255
    w = (10.0 ** rng.uniform(-8, 3, n)).astype(np.float32)
    if seed % 2:
        w[rng.random(n) < 0.2] *= -1
    crit = (VARIANCE, NEWTON, GINI)[seed % 3]
    if crit == GINI:
        signal = rng.random(n) < 0.5
        a, b = np.where(signal, w, 0), np.where(signal, 0, w)
    else:
        a = w * rng.choice([-1, 1], n)
        b = w if crit == VARIANCE else np.abs(w) * 0.25
    return codes, a.astype(np.float32), b.astype(np.float32), w, np.full(m, 4, np.int32), crit


@pytest.mark.parametrize("how", ["levels", "serial", "leafwise"])
def test_no_split_leaves_a_side_without_events(how, monkeypatch):
    # Before the fix, 266 of 300 such trees (depth 8) held a node of no event, e.g. a node
    # of one event split at a gain of 9.9e-13 (newton) into an empty leaf of value 0.
    if how == "levels":
        monkeypatch.setattr(grower, "SERIAL_TREE_WORK", 0)
    empty = split_singles = 0
    with threads(1 if how == "serial" else None):
        for seed in range(12):
            codes, a, b, w, n_value_bins, crit = _wide_weights(seed)
            tree = grow_tree(codes, None, a, b, w, n_value_bins, SplitParams(crit), 8,
                             max_leaves=60 if how == "leafwise" else None)
            size = tree.stop - tree.start
            empty += int(np.sum(size == 0))
            split_singles += int(np.sum((size == 1) & ~tree.is_leaf))
            # every event is in exactly one leaf
            leaves = np.flatnonzero(tree.is_leaf)
            assert np.sum(size[leaves]) == w.size
    assert empty == 0 and split_singles == 0


def test_serial_root_leaf_has_clean_fields():
    # The one-call serial tree reuses its workspace: a root that cannot split kept the last
    # tree's root gain (446.4 in a BDTRegressor's second tree: a leaf with a gain in the model).
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 2, (2, 200)).astype(np.uint8)
    w = np.ones(200, np.float32)
    workspace = grower.SerialWorkspace()
    with threads(1):
        first = grow_tree(codes, None, (codes[0] * 3.0).astype(np.float32), w, w,
                          np.full(2, 2, np.int32), SplitParams(VARIANCE), 2, workspace=workspace)
        assert first.gain[0] > 0 and first.n_nodes > 1
        flat = grow_tree(codes, None, np.zeros(200, np.float32), w, w, np.full(2, 2, np.int32),
                         SplitParams(VARIANCE), 2, workspace=workspace)
    assert flat.n_nodes == 1
    assert (flat.feature[0], flat.gain[0], flat.bin_threshold[0], flat.missing_left[0]) == (-1, 0.0, 0, False)
