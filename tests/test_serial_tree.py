"""The one-call serial grower's sparse nodes: bins visited through a bit map of the
occupied ones must give the dense scan's splits and the per-level kernels' trees, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt._util import threads
from hepbdt.engine import BinMapper, SplitParams, grow_tree, grower
from hepbdt.engine import _serial_tree as serial
from hepbdt.engine._types import CRITERIA, GINI, MISSING_BIN, N_BINS, NEWTON, VARIANCE
from hepbdt.engine.split import _scan_feature


def _bits_of(bins):
    bits = np.zeros(4, np.uint64)
    for c in bins:
        bits[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    return bits


def test_lowest_bit_is_the_index_of_the_lowest_set_bit():
    rng = np.random.default_rng(0)
    for x in [*(1 << i for i in range(64)), *rng.integers(1, 2**63, 200).tolist(), 2**64 - 1]:
        expected = (x & -x).bit_length() - 1
        assert serial._lowest_bit(np.uint64(x)) == expected


@pytest.mark.parametrize("criterion", [VARIANCE, NEWTON, GINI])
def test_sparse_scan_equals_the_dense_scan(criterion):
    rng = np.random.default_rng(criterion)
    for trial in range(300):
        h = np.zeros((N_BINS, 3))
        n_value_bins = np.int32(rng.integers(1, 256))  # int32, as the fits pass it
        occupied = rng.choice(n_value_bins, size=min(n_value_bins, int(rng.integers(1, 40))),
                              replace=False)
        h[occupied, 0] = rng.normal(size=occupied.size)
        h[occupied, 1] = rng.uniform(0.0, 2.0, occupied.size) * (rng.random(occupied.size) < 0.9)
        h[occupied, 2] = h[occupied, 1] if criterion != GINI else rng.uniform(0, 2, occupied.size)
        if criterion == GINI:
            h[occupied, 0] = np.abs(h[occupied, 0])
        if trial % 3 == 0:
            h[MISSING_BIN] = [0.3, 0.5, 0.5]
        if trial % 5 == 0:  # a bin whose sums cancelled to zero, still marked
            h[occupied[0]] = 0.0
        marked = set(occupied.tolist()) | set(rng.integers(0, N_BINS, 5).tolist()) | {MISSING_BIN}
        sums = h.sum(axis=0)
        params = (criterion, 0.5, 0.1 if criterion == NEWTON else 0.0, 0.0, 0.05, 0.0)
        out = []
        for scan, extra in ((_scan_feature, ()), (serial._scan_sparse, (_bits_of(marked),))):
            left = np.zeros(3)
            result = scan(h, *extra, n_value_bins, sums[0], sums[1], sums[2], *params,
                          np.empty((4, N_BINS)), np.empty(N_BINS, np.int64), left)
            out.append((*result, *left))
        dense, sparse = out
        assert dense[1] == sparse[1] and dense[2] == sparse[2], trial
        assert np.array_equal(np.array(dense[:1] + dense[3:]), np.array(sparse[:1] + sparse[3:])), trial


def _signed_problem(criterion, n, m, seed, zero_fraction):
    """Codes of n x m continuous values with 5 % missing, weights with zeros and 10 %
    negative, and channels (A, B) for ``criterion``: (mapper, codes, w, A, B, params, rng)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.05] = np.nan
    w = rng.uniform(0.2, 2.0, n).astype(np.float32)
    w[rng.random(n) < zero_fraction] = 0.0
    w[rng.random(n) < 0.1] *= -0.5
    mapper = BinMapper(max_bins=255).fit(X, w)
    crit = CRITERIA[criterion]
    if crit == GINI:
        signal = rng.random(n) < 0.4
        ch_a, ch_b = np.where(signal, w, 0).astype(np.float32), np.where(signal, 0, w).astype(np.float32)
    else:
        ch_a = (rng.normal(size=n) * w).astype(np.float32)
        ch_b = w if crit == VARIANCE else (np.abs(w) * rng.uniform(0.1, 0.3, n)).astype(np.float32)
    params = SplitParams(crit, reg_lambda=0.5 if crit == NEWTON else 0.0)
    return mapper, mapper.transform(X), w, ch_a, ch_b, params, rng


@pytest.mark.parametrize("criterion", ["variance", "newton", "gini"])
def test_sparse_nodes_grow_the_levelwise_tree(monkeypatch, criterion):
    # 255 distinct values and nodes of a few events: the sparse scans, subtractions and
    # zeroing, against the per-level kernels and against every node scanned densely.
    n = 700
    mapper, codes, w, ch_a, ch_b, params, rng = _signed_problem(criterion, n, 6, 7, 0.1)
    workspace = grower.SerialWorkspace()
    sparse_default = 96  # enough of this problem's nodes sparse (SPARSE_EVENTS is 48)
    for rows in (None, np.sort(rng.choice(n, 500, replace=False)).astype(np.int32)):
        for depth in (9, 4):
            trees = []
            for work, sparse_events in ((grower.SERIAL_TREE_WORK, sparse_default),
                                        (grower.SERIAL_TREE_WORK, 0), (0, 0)):
                monkeypatch.setattr(grower, "SERIAL_TREE_WORK", work)
                monkeypatch.setattr(serial, "SPARSE_EVENTS", sparse_events)
                with threads(1):
                    trees.append(grow_tree(codes, rows, ch_a, ch_b, w, mapper.n_bins_, params,
                                           depth, workspace=workspace))
                if work:
                    pool, _, dirty = workspace.arrays(workspace._last[0], None)[:3]
                    assert not pool[~dirty].any()  # a buffer not marked dirty holds zeros
                    assert dirty.all() == (sparse_events == 0)  # sparse nodes' were zeroed
            sparse_tree, dense_tree, levels = trees
            internal = levels.feature >= 0
            sizes = (levels.stop - levels.start)[internal]
            assert (sizes <= sparse_default).sum() > 3 and (sizes > sparse_default).any()
            for other in (dense_tree, levels):
                for field in ("feature", "bin_threshold", "missing_left", "left", "right", "gain",
                              "sum_a", "sum_b", "sum_w", "start", "stop", "partition"):
                    assert np.array_equal(getattr(sparse_tree, field), getattr(other, field)), field



@pytest.mark.parametrize("criterion", ["variance", "newton", "gini"])
def test_shared_levels_grow_the_one_thread_tree(monkeypatch, criterion):
    # Each level's histograms shared out by feature and its scans by (node, feature) over
    # two threads: the same tree, field by field, as on one thread and as the per-level
    # kernels grow, with sparse and dense nodes, a subsample, an unused feature, missing
    # values, zero and negative weights, and B equal to W (variance) or not.
    import numba

    from hepbdt.engine import _types

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads (NUMBA_NUM_THREADS >= 2)")
    n, m = 3000, 7
    mapper, codes, w, ch_a, ch_b, params, rng = _signed_problem(criterion, n, m, 11, 0.05)
    used = np.ones(m, bool)
    used[2] = False
    monkeypatch.setattr(grower, "SERIAL_SHARED_WORK", 0)
    calls = []

    def record_calls():  # the shared tree's thread count, or 1 for the one-thread tree's
        for name in ("grow_exact_serial", "grow_exact_serial_1"):
            compiled = getattr(grower, name)
            monkeypatch.setattr(grower, name, lambda *args, compiled=compiled:
                                calls.append(args[-1]) or compiled(*args))

    record_calls()
    workspace = grower.SerialWorkspace()
    for rows in (None, np.sort(rng.choice(n, 2200, replace=False)).astype(np.int32)):
        for depth in (8, 3):
            trees = []
            for shared in (2, 1, 2):
                with threads(1):
                    old = _types.set_serial_tree_threads(shared)
                    try:
                        trees.append(grow_tree(codes, rows, ch_a, ch_b, w, mapper.n_bins_, params,
                                               depth, features=used, workspace=workspace))
                    finally:
                        _types.set_serial_tree_threads(old)
            assert calls[-3:] == [2, 1, 2]  # the compiled call, on two threads, one, two
            monkeypatch.setattr(grower, "SERIAL_TREE_WORK", 0)
            with threads(1):
                trees.append(grow_tree(codes, rows, ch_a, ch_b, w, mapper.n_bins_, params, depth,
                                       features=used))
            monkeypatch.undo()
            monkeypatch.setattr(grower, "SERIAL_SHARED_WORK", 0)
            record_calls()
            first = trees[0]
            assert first.n_nodes > 2 ** min(depth, 5)
            assert not np.any(first.feature == 2)
            sizes = (first.stop - first.start)[first.feature >= 0]
            if depth == 8:
                assert (sizes <= serial.SPARSE_EVENTS).any() and (sizes > serial.SPARSE_EVENTS).any()
            for other in trees[1:]:
                for field in ("feature", "bin_threshold", "missing_left", "left", "right", "gain",
                              "sum_a", "sum_b", "sum_w", "start", "stop", "partition"):
                    assert np.array_equal(getattr(first, field), getattr(other, field)), field


@pytest.mark.parametrize("setting", [0, 1])
@pytest.mark.parametrize("subsample", [False, True])
def test_one_call_tree_is_the_brute_force_depthwise_tree(setting, subsample):
    # Against a grower in plain numpy that tries every cut on the events themselves
    # (tests/test_leafwise.py): dyadic channels (exact sums, real ties), missing values,
    # nodes above and below SPARSE_EVENTS, every event or a sorted subsample.
    from .test_leafwise import SETTINGS, _params, _tiny, assert_brute_force_tree, naive_depthwise

    codes, g, h, w, nvb = _tiny(setting + 5, n=500)
    rows = (np.sort(np.random.default_rng(3).choice(500, 350, replace=False)).astype(np.int32)
            if subsample else None)
    p = SETTINGS[setting]
    with threads(1):
        assert grower.serial_tree_fits(500, codes.shape[0], 5)
        tree = grow_tree(codes, rows, g, h, w, nvb, _params(p), 5)
    reference = naive_depthwise(codes, g, h, w, nvb, p, 5, rows)
    assert tree.n_nodes > 24
    sizes = (tree.stop - tree.start)[tree.feature >= 0]
    assert (sizes <= serial.SPARSE_EVENTS).any() and (sizes > serial.SPARSE_EVENTS).any()
    assert_brute_force_tree(tree, reference, g, h, w)


@pytest.mark.parametrize("setting", [0, 1])
def test_shared_levels_grow_the_brute_force_depthwise_tree(monkeypatch, setting):
    # The levels shared over two threads (histograms by feature, scans by (node, feature),
    # partitions by node) against the plain numpy grower of tests/test_leafwise.py, not
    # against the one-thread tree: dyadic channels (exact sums), a last feature that copies
    # the first (a real tie wherever the first splits, which the first must win), missing
    # values, a subsample, nodes above and below SPARSE_EVENTS, two trees in one workspace.
    import numba

    from hepbdt.engine import _types

    from .test_leafwise import SETTINGS, _params, _tiny, assert_brute_force_tree, naive_depthwise

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads (NUMBA_NUM_THREADS >= 2)")
    monkeypatch.setattr(grower, "SERIAL_SHARED_WORK", 0)
    p = SETTINGS[setting]
    workspace = grower.SerialWorkspace()
    for seed, subsample in ((setting + 5, False), (setting + 7, True)):
        codes, g, h, w, nvb = _tiny(seed, n=500)
        codes, nvb = np.vstack([codes, codes[:1]]), np.append(nvb, nvb[0])
        rows = (np.sort(np.random.default_rng(seed).choice(500, 350, replace=False))
                .astype(np.int32) if subsample else None)
        with threads(1):
            old = _types.set_serial_tree_threads(2)
            try:
                assert grower.serial_tree_sharing(500, codes.shape[0]) == 2
                tree = grow_tree(codes, rows, g, h, w, nvb, _params(p), 5, workspace=workspace)
            finally:
                _types.set_serial_tree_threads(old)
        reference = naive_depthwise(codes, g, h, w, nvb, p, 5, rows)
        assert tree.n_nodes > 16
        assert_brute_force_tree(tree, reference, g, h, w)
        assert (reference[0] == 0).any()  # the tie: feature 0 chosen over its copy



def test_buffer_pool_takes_and_gives_back_as_a_stack():
    # The pool's bookkeeping against its definition, called directly (a tree only runs
    # short of buffers in rare layouts): a take pops the top of ``free`` and zeroes a dirty
    # buffer; a release pushes the node's buffer (none: nothing), zeroes the bins a sparse
    # node marked (numpy's zeroing of those bins) or marks a dense one dirty.
    rng = np.random.default_rng(3)
    pool = rng.normal(size=(4, 3, N_BINS, 3))
    bits = np.zeros((4, 3, 4), np.uint64)
    dirty = np.array([False, True, False, False])
    free = np.array([2, 1, -7, -7])
    b, n_free = serial._take(pool, dirty, free, 2)
    assert (b, n_free) == (1, 1) and not pool[1].any() and not dirty[1]
    buf = np.array([-1, 3, 0])
    start, stop = np.array([0, 0, 200]), np.array([500, 200, 260])
    used = np.array([True, False, True])
    marked = [(0, 5), (0, 200), (2, 63), (2, 64), (1, 7)]  # (feature, bin)
    for f, c in marked:
        bits[0, f, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    expected = pool[0].copy()
    for f, c in marked:
        if used[f]:
            expected[f, c] = 0.0
    assert serial._release(pool, bits, dirty, free, 1, buf, 0, start, stop, used, 96) == 1
    assert list(free) == [2, 1, -7, -7]  # a node without a buffer gives nothing back
    assert serial._release(pool, bits, dirty, free, 1, buf, 2, start, stop, used, 96) == 2
    assert list(free[:2]) == [2, 0] and buf[2] == -1 and not dirty[0]
    assert np.array_equal(pool[0], expected)
    assert serial._release(pool, bits, dirty, free, 2, buf, 1, start, stop, used, 96) == 3
    assert list(free[:3]) == [2, 0, 3] and buf[1] == -1 and dirty[3]
    assert serial._take(pool, dirty, free, 3) == (3, 2) and not pool[3].any() and not dirty[3]


def test_a_borrowed_array_is_the_same_memory_without_a_count():
    import numba

    from hepbdt.engine._types import borrowed

    @numba.njit
    def scale_rows(a, factor):
        view = borrowed(a)
        for i in range(view.shape[0]):
            row = view[i]  # a view of a borrowed array: no reference to count
            for j in range(row.size):
                row[j] *= factor
        return view.shape[0] * 10 + view.shape[1], view.strides[0]

    a = np.arange(12.0).reshape(3, 4)[:, ::-1].copy()[::2]  # a strided view, two rows
    before = a.copy()
    shape_code, stride = scale_rows(a, 2.0)
    assert np.array_equal(a, before * 2.0)
    assert shape_code == 24 and stride == a.strides[0]
    with pytest.raises(Exception, match="borrowed"):
        numba.njit(lambda x: borrowed(x))(3.0)


def test_a_node_too_light_for_two_children_is_not_scanned_and_grows_the_brute_force_tree():
    # A node whose W is below 2 min_child_weight has no valid cut (the scan skips it): the
    # one-call tree still equals the plain numpy grower, which tries every cut, where most
    # nodes are that light; and a node of W exactly 2 min_child_weight still splits.
    from .test_leafwise import SETTINGS, _params, _tiny, assert_brute_force_tree, naive_depthwise

    codes, g, h, w, nvb = _tiny(7, n=500)
    p = dict(SETTINGS[1], min_child_weight=float(np.sum(w)) / 9)
    with threads(1):
        tree = grow_tree(codes, None, g, h, w, nvb, _params(p), 6)
    reference = naive_depthwise(codes, g, h, w, nvb, p, 6, None)
    light = (tree.sum_w < 2 * p["min_child_weight"]) & (tree.feature < 0)
    assert light.sum() >= 4 and (tree.feature >= 0).sum() >= 3
    assert_brute_force_tree(tree, reference, g, h, w)
    hist = np.zeros((N_BINS, 3))
    hist[[3, 9], 0], hist[[3, 9], 1], hist[[3, 9], 2] = [1.0, -1.0], [2.0, 2.0], [1.5, 1.5]
    params = (NEWTON, 0.0, 0.0, 0.0, 1.5, 0.0)  # each side exactly min_child_weight
    gain, cut, _ = serial._scan(hist, np.zeros(4, np.uint64), False, hist.sum(axis=0), 20, params,
                                np.empty((4, N_BINS)), np.empty(N_BINS, np.int64), np.zeros(3))
    assert 3 <= cut < 9 and gain > 0
    params = (NEWTON, 0.0, 0.0, 0.0, 1.5 * (1 + 1e-15), 0.0)  # neither side is enough
    gain, cut, _ = serial._scan(hist, np.zeros(4, np.uint64), False, hist.sum(axis=0), 20, params,
                                np.empty((4, N_BINS)), np.empty(N_BINS, np.int64), np.zeros(3))
    assert cut == -1 and gain == -np.inf
