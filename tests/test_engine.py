"""Engine kernels against their naive twins: binning, histograms, splits, partition, predict."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt._util import threads
from hepbdt.engine import BinMapper, SplitParams, grow_tree, grower, histogram
from hepbdt.engine._types import CRITERIA, MAX_EVENTS, MISSING_BIN, NEWTON, VARIANCE
from hepbdt.engine.grower import QuantisedRows
from hepbdt.engine.histogram import (
    MIN_PACKED_BITS,
    PACKED_TASK,
    WIDE_BITS,
    Quantiser,
    build_histograms,
    choose_packing,
    histograms_naive,
    new_histograms,
)
from hepbdt.engine.split import best_split_naive, find_best_splits


def _problem(seed=0, n=400, m=4, n_values=15, missing=0.1, negative=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n, m)).astype(np.float32)
    X[rng.random((n, m)) < missing] = np.nan
    w = rng.uniform(0.2, 2.0, n).astype(np.float32)
    w[rng.random(n) < 0.1] = 0.0
    if negative:
        w[rng.random(n) < 0.2] *= -0.5
    a = rng.normal(size=n).astype(np.float32)
    return X, w, a, rng


_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0],
                    np.float32)


@pytest.mark.parametrize("kind", ["normal", "integers", "rounded", "special", "magnitudes"])
def test_edges_sort_is_numpys_unique_and_bincount(kind):
    """The radix sort behind the quantile edges gives np.unique's values (NaN left out, -0
    and +0 one value) and np.bincount's weight sums over its inverse, bit for bit."""
    from hepbdt.engine.binning import _unique_with_weights

    rng = np.random.default_rng(len(kind))
    for n in (0, 1, 2, 7, 300, 5000):
        values = {"normal": lambda n: rng.normal(size=n),
                  "integers": lambda n: rng.integers(-5, 5, n),
                  "rounded": lambda n: np.round(rng.normal(size=n), 1),
                  "special": lambda n: rng.choice(_SPECIAL, n),
                  "magnitudes": lambda n: rng.normal(size=n) * 10.0 ** rng.integers(-40, 38, n),
                  }[kind](n).astype(np.float32)
        weights = rng.uniform(0, 1, n) * 10.0 ** rng.integers(-3, 3, n)
        finite = ~np.isnan(values)
        unique, inverse = np.unique(values[finite], return_inverse=True)
        expected = np.bincount(inverse, weights=weights[finite], minlength=unique.size)
        got, got_weight, n_finite = _unique_with_weights(values, weights)
        assert n_finite == np.count_nonzero(finite)
        assert np.array_equal(got, unique)
        assert got_weight.tobytes() == expected.tobytes()


def test_bins_one_per_value_and_thresholds_agree_with_codes():
    X, w, _, _ = _problem()
    mapper = BinMapper().fit(X, w)
    codes = mapper.transform(X)
    for f in range(X.shape[1]):
        finite = ~np.isnan(X[:, f])
        assert mapper.n_bins_[f] == np.unique(X[finite, f]).size
        assert np.all(codes[f, ~finite] == MISSING_BIN)
        for b in range(mapper.n_bins_[f] - 1):
            thr = mapper.thresholds(np.array([f]), np.array([b]))[0]
            assert np.array_equal(codes[f, finite] <= b, X[finite, f] < thr)


def test_weighted_quantiles_follow_the_weights():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 20000).astype(np.float32)
    w = np.where(x < 0.5, 9.0, 1.0)  # 90 % of the weight below 0.5
    mapper = BinMapper(max_bins=10).fit(x[:, None], w)
    edges = mapper.edges_[0]
    assert edges.size == 9
    assert np.sum(edges < 0.45) == 8  # nine equal-weight bins below 0.5, one above
    assert edges[-1] == pytest.approx(0.5, abs=0.01)
    codes = mapper.transform(x[:, None])[0]
    bin_weight = np.bincount(codes, weights=w, minlength=10)
    np.testing.assert_allclose(bin_weight / w.sum(), 0.1, atol=0.01)


@pytest.mark.parametrize("n_values,max_bins", [(10, 2), (10, 5), (100, 4), (1000, 8), (64, 8)])
def test_unit_weight_edges_are_scikit_learns_quantile_midpoints(n_values, max_bins):
    # Unit weights and quantiles that fall between two values: scikit-learn's
    # HistGradientBoosting binning (np.percentile's midpoints) gives the same edges. A
    # running weight that reaches a quantile exactly (5 of 10 events) must cut there.
    from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper

    x = np.random.default_rng(n_values).permutation(n_values).astype(np.float32)[:, None]
    ref = _BinMapper(n_bins=max_bins + 1, subsample=None).fit(x.astype(np.float64))
    edges = BinMapper(max_bins=max_bins).fit(x, np.ones(n_values)).edges_[0]
    np.testing.assert_array_equal(edges, ref.bin_thresholds_[0].astype(np.float32))


@pytest.mark.parametrize("max_bins", [2, 3, 5])
def test_a_heavy_largest_value_keeps_its_own_bin(max_bins):
    # Values 0..9, weight 1 each but 9's 100: every quantile of the weight (from 109 / 5
    # up, past the 9 below 9) is reached at 9, so by hand the one edge is 8.5, between the
    # two largest values, whatever the number of bins.
    x = np.arange(10, dtype=np.float32)[:, None]
    w = np.where(x[:, 0] == 9, 100.0, 1.0)
    np.testing.assert_array_equal(BinMapper(max_bins=max_bins).fit(x, w).edges_[0], [8.5])


def test_histograms_equal_naive_twin_and_are_permutation_invariant():
    X, w, a, rng = _problem(negative=True)
    codes = BinMapper().fit(X, w).transform(X)
    b = np.abs(a) * w
    rows = np.sort(rng.choice(X.shape[0], 250, replace=False)).astype(np.int32)
    payload = np.stack([a[rows], b[rows], w[rows]], axis=1).astype(np.float32)
    h = new_histograms(1, X.shape[1])
    build_histograms(codes, rows, payload, np.array([0]), np.array([rows.size]), np.array([0]),
                     np.ones(X.shape[1], bool), h)
    np.testing.assert_allclose(h[0], histograms_naive(codes, rows, [a, b, w]), atol=1e-9)
    perm = rng.permutation(rows.size)
    h2 = new_histograms(1, X.shape[1])
    build_histograms(codes, rows[perm], payload[perm], np.array([0]), np.array([rows.size]),
                     np.array([0]), np.ones(X.shape[1], bool), h2)
    np.testing.assert_allclose(h2, h, atol=1e-9)


# ascending: the loop for rows read in order (the bin width a constant); reversed and
# every third event: the loop for sparse rows (the width given at run time)
@pytest.mark.parametrize("order", ["reversed", "ascending", "every third"])
@pytest.mark.parametrize("wide", [False, True])
def test_packed_histograms_are_exact_sums_of_quantised_values(wide, order, monkeypatch):
    if wide:  # the layout of samples above 2**25 - 1 events, on these few
        monkeypatch.setattr(histogram, "choose_packing", lambda n: (True, WIDE_BITS))
    X, w, a, rng = _problem(negative=True)
    codes = BinMapper().fit(X, w).transform(X)
    b = (np.abs(a) * w).astype(np.float32)
    b[:5] *= -1  # negative hessians (negative weights) must decode too
    rows = np.arange(X.shape[0], dtype=np.int32)
    q = Quantiser(a, b, rows.size)
    assert q.wide == wide
    partition = {"reversed": rows[::-1], "ascending": rows,  # any order: integer sums
                 "every third": np.concatenate([rows[::3], rows[1::3], rows[2::3]])}[order].copy()
    packed = np.empty(rows.size, np.int64)  # in event order, read through the partition
    q.pack_into(a, b, packed)
    h = new_histograms(1, X.shape[1], packed=True, wide=wide)
    lo, hi = 10, rows.size - 7  # one node: a slice of the partition
    build_histograms(np.ascontiguousarray(codes.T), partition, packed, np.array([lo]),
                     np.array([hi]), np.array([0]), np.ones(X.shape[1], bool), h)
    # A fit's kept task buffers hold the last call's sums: each task must clear its own.
    kept = histogram.TaskBuffers()
    kept.get(2, X.shape[1])[:] = 123_456_789
    again = new_histograms(1, X.shape[1], packed=True, wide=wide)
    build_histograms(np.ascontiguousarray(codes.T), partition, packed, np.array([lo]),
                     np.array([hi]), np.array([0]), np.ones(X.shape[1], bool), again,
                     threads=2, task_buffers=kept)
    assert np.array_equal(again, h)
    node = partition[lo:hi]
    qa, qb = q.quantise(a, b)
    # Stochastic rounding: each integer is the scaled value rounded down or up.
    for qv, v, scale in ((qa, a, q.scale_a), (qb, b, q.scale_b)):
        assert np.all((qv == np.floor(v * scale)) | (qv == np.floor(v * scale) + 1))
    ref = histograms_naive(codes, node, [qa, qb], dtype=np.float64)
    dec = q.decode(h)[0]
    np.testing.assert_allclose(dec[..., 0] * q.scale_a, ref[..., 0], atol=1e-6)
    np.testing.assert_allclose(dec[..., 1] * q.scale_b, ref[..., 1], atol=1e-6)
    np.testing.assert_allclose(dec[..., 0], histograms_naive(codes, node, [a])[..., 0],
                               atol=node.size / q.scale_a)


def test_stochastic_rounding_keeps_small_values_unbiased():
    n = 200_000
    a = np.full(n, 0.3, np.float32)
    a[0] = 1000.0  # an outlier sets a coarse step: 0.3 is 1.23 steps
    b = np.ones(n, np.float32)
    q = Quantiser(a, b, n, seed=7)
    qa, qb = q.quantise(a, b)
    exact = 0.3 * q.scale_a
    assert abs(qa[1:].mean() - np.float32(0.3) * q.scale_a) < 0.005  # plain rounding: 1.0
    assert 0.0 < exact - np.floor(exact) < 1.0 and np.all(qb == q.scale_b)  # 1.0 * scale: exact
    again = Quantiser(a, b, n, seed=7).quantise(a, b)[0]
    other = Quantiser(a, b, n, seed=8).quantise(a, b)[0]
    assert np.array_equal(qa, again) and not np.array_equal(qa, other)


def _old_bits(n_rows):
    """The packing before issue 18: 32-bit lanes always, at least 6 bits."""
    return max(6, min(24, 30 - int(np.ceil(np.log2(n_rows + 1)))))


CLAIMED_EVENTS = sorted({1, 2, 63, 64, 1000, 50_000, 1_000_000, 2**24 - 1, 2**24, 2**25 - 1,
                         2**25, 2**25 + 1, 40_000_000, 100_000_000, 2**30, MAX_EVENTS}
                        | {2**k - 1 for k in range(1, 32)} | {2**k for k in range(31)})


@pytest.mark.parametrize("n_rows", CLAIMED_EVENTS)
def test_no_quantised_sum_can_overflow_its_lane(n_rows):
    # The bound, for every claimed event count: each rounded value has |q| <= 2**bits (the
    # kernel's output checked on the largest magnitudes, both signs, many draws), so every
    # sum of n_rows of them (a bin, a node, the root, a task's part, a sibling) is below
    # 2**31 in a 32-bit lane; wide, a task's (at most PACKED_TASK events) is, and the
    # int64 sums are at most 2**53 (exact in int64 and float64).
    wide, bits = choose_packing(n_rows)
    if wide:
        assert bits == WIDE_BITS and PACKED_TASK * 2**bits < 2**31 and n_rows * 2**bits <= 2**53
    else:
        assert n_rows * 2**bits < 2**31 and bits >= MIN_PACKED_BITS
    if n_rows < 2**25:  # unchanged up to 33.5M events: the same bits, the same models
        assert not wide and bits == _old_bits(n_rows)
    rng = np.random.default_rng(n_rows % 1000)
    big = np.float32(rng.uniform(1e-3, 1e3))
    a = np.array([big, -big] * 5000 + list(rng.uniform(-big, big, 1000)), np.float32)
    b = np.array([-big, big] * 5000 + list(rng.uniform(0, big, 1000)), np.float32)
    q = Quantiser(a, b, n_rows, seed=n_rows)
    assert (q.wide, q.bits, q.max_quantum) == (wide, bits, 2**bits)
    qa, qb = q.quantise(a, b)
    assert max(np.abs(qa).max(), np.abs(qb).max()) <= q.max_quantum
    assert np.abs(qa).max() >= 2**bits - 1  # the largest |A| maps to the top of the range


def test_the_old_packing_overflowed_where_the_new_one_is_wide():
    # 40M events in one bin (a NaN-heavy or low-cardinality feature) overflowed 6-bit lanes.
    assert 40_000_000 * (2 ** _old_bits(40_000_000) - 1) >= 2**31
    assert choose_packing(40_000_000) == choose_packing(MAX_EVENTS) == (True, WIDE_BITS)
    assert choose_packing(2**25 - 1) == (False, 6)


def test_more_events_than_int32_indices_are_refused_before_any_work():
    with pytest.raises(ValueError, match="2,147,483,647"):
        choose_packing(MAX_EVENTS + 1)
    with pytest.raises(ValueError, match="2,147,483,647"):
        Quantiser(np.ones(3, np.float32), np.ones(3, np.float32), 2**31)
    fake = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (2**31, 4), (0, 0))
    with pytest.raises(ValueError, match="2,147,483,647"):
        QuantisedRows(fake)  # before its buffers are allocated
    from hepbdt import BDTClassifier

    X = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**31, 2), (0, 0))
    with pytest.raises(ValueError, match="2,147,483,647"):
        BDTClassifier()._fit(X, np.zeros(1), None, None, None, {})


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_channels_are_refused_not_packed(bad):
    a = np.ones(70_000, np.float32)  # past one chunk of the max scan
    b = np.ones(70_000, np.float32)
    b[66_000] = bad  # floor(NaN) as an int64 would sum silently
    with pytest.raises(ValueError, match="NaN or infinite"):
        Quantiser(a, b, a.size)
    with pytest.raises(ValueError, match="NaN or infinite"):
        Quantiser(b, a, a.size)


def _one_bin_sums(n_rows, a, b, packing=None, monkeypatch=None):
    """Decoded (A, B) sums of ``n_rows`` copies of one event (every copy in one bin), as a
    node, a two-thirds child and its sibling by subtraction, from the kernels: the partition
    repeats event 0 (np.zeros: untouched pages, no memory)."""
    if packing is not None:
        monkeypatch.setattr(histogram, "choose_packing", lambda n: packing)
    q = Quantiser(a, b, n_rows)
    packed = np.empty(1, np.int64)
    q.pack_into(a, b, packed)
    codes = np.full((1, 1), 7, np.uint8)  # event-major (1 event, 1 feature)
    partition = np.zeros(n_rows, np.int32)
    h = new_histograms(3, 1, packed=True, wide=q.wide)
    used = np.ones(1, bool)
    build_histograms(codes, partition, packed, np.array([0]), np.array([n_rows]), np.array([0]),
                     used, h)
    child = 2 * n_rows // 3
    build_histograms(codes, partition, packed, np.array([0]), np.array([child]), np.array([1]),
                     used, h, h, np.array([0]), np.array([2]))
    return q, q.decode(h)[:, 0, 7, :2], (n_rows, child, n_rows - child)


@pytest.mark.parametrize("n_rows", [40_000_000, 2**25 + 1])
def test_one_bin_of_max_magnitude_events_sums_exactly(n_rows, monkeypatch):
    # Every event in one bin, at the largest magnitude (A positive, B negative: both lanes,
    # both signs), enough of them to overflow 32-bit lanes at the old 6 bits.
    a = np.array([123.25], np.float32)
    b = np.array([-0.75], np.float32)
    q, sums, counts = _one_bin_sums(n_rows, a, b)
    qa, qb = q.quantise(a, b)
    ref = histograms_naive(np.zeros((1, 1), np.uint8), np.zeros(1, np.int64), [qa, qb])[0, 0]
    assert abs(ref[0]) == 2**q.bits - 1  # the largest magnitude
    for node, count in enumerate(counts):  # exact in integers: the naive sum times the copies
        assert sums[node, 0] == count * ref[0] / q.scale_a  # the same float64 operations
        assert sums[node, 1] == count * ref[1] / q.scale_b
        np.testing.assert_allclose(sums[node], [count * 123.25, count * -0.75], rtol=2.0**-q.bits)
    if n_rows * (2 ** _old_bits(n_rows) - 1) >= 2**31:  # the old packing got it wrong
        old, old_sums, _ = _one_bin_sums(n_rows, a, b, (False, _old_bits(n_rows)), monkeypatch)
        assert not np.allclose(old_sums[0], [n_rows * 123.25, n_rows * -0.75], rtol=0.1)


def test_wide_and_packed_lanes_grow_the_same_trees(monkeypatch):
    # The same bits give the same integers, so the same sums and trees, in either layout.
    X, w, a, rng = _problem(n=20_000, m=5, n_values=40, negative=True)
    codes = np.ascontiguousarray(BinMapper().fit(X, w).transform(X).T)
    b = (np.abs(a) * w + 0.1).astype(np.float32)
    rows = np.arange(X.shape[0], dtype=np.int32)
    trees = {}
    calls = []
    reduce_tasks = histogram._reduce_tasks
    monkeypatch.setattr(histogram, "_reduce_tasks",
                        lambda *args: calls.append(reduce_tasks(*args)) if args[-1] else
                        reduce_tasks(*args))
    for wide in (False, True):
        monkeypatch.setattr(histogram, "choose_packing", lambda n, wide=wide: (wide, 10))
        for max_leaves in (None, 12):
            ordered = QuantisedRows(codes)
            trees[wide, max_leaves] = grow_tree(
                codes, rows, a, b, b, np.full(5, 41, np.int32), SplitParams(NEWTON, reg_lambda=1.0),
                5 if max_leaves is None else None, quantised=True, ordered=ordered,
                max_leaves=max_leaves)
            assert bool(calls) == wide  # the int64 lanes were used, and only when wide
    for max_leaves in (None, 12):
        packed, wide = trees[False, max_leaves], trees[True, max_leaves]
        assert packed.n_nodes > 7
        for field in ("feature", "bin_threshold", "missing_left", "gain", "sum_a", "sum_b"):
            assert np.array_equal(getattr(packed, field), getattr(wide, field)), field


@pytest.mark.parametrize("criterion", ["variance", "newton", "gini", "cross_entropy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_compiled_call_grows_the_levelwise_tree(monkeypatch, criterion, seed):
    # _serial_tree must grow, field by field, the tree of the per-level kernels.
    X, w, a, rng = _problem(seed=seed, n=3000, m=5, n_values=30, negative=seed == 2)
    codes = BinMapper().fit(X, w).transform(X)
    crit = CRITERIA[criterion]
    if crit in (VARIANCE, NEWTON):
        ch_a = (a * w).astype(np.float32)
        ch_b = (w if crit == VARIANCE else np.abs(w) * rng.uniform(0.1, 0.3, w.size)).astype(np.float32)
    else:
        signal = rng.random(w.size) < 0.4
        ch_a, ch_b = np.where(signal, w, 0).astype(np.float32), np.where(signal, 0, w).astype(np.float32)
    # a subsample (its channels follow the partition), or every event (read by event)
    rows = None if seed == 1 else np.sort(rng.choice(X.shape[0], 2500, replace=False)).astype(np.int32)
    used = np.ones(5, bool)
    used[seed % 5] = seed != 1  # a feature the tree may not use
    params = SplitParams(crit, reg_lambda=0.5 if crit == NEWTON else 0.0,
                         min_child_weight=[0.0, 20.0, 5.0][seed])
    calls = []
    for name in ("grow_exact_serial", "grow_exact_serial_1"):  # on shared threads, on one
        compiled = getattr(grower, name)
        monkeypatch.setattr(grower, name, lambda *args, compiled=compiled:
                            calls.append(1) or compiled(*args))
    default_work = grower.SERIAL_TREE_WORK
    workspace = grower.SerialWorkspace()  # shared, so the later trees find the deeper one's sums
    for depth in (7, 1, 3):
        trees = []
        for work in (default_work, 0):
            monkeypatch.setattr(grower, "SERIAL_TREE_WORK", work)
            with threads(1):  # the one-call grower is for one thread
                trees.append(grow_tree(codes, rows, ch_a, ch_b, w, np.full(5, 31, np.int32),
                                       params, depth, features=used, workspace=workspace))
        assert len(calls) == (7, 1, 3).index(depth) + 1  # the compiled call grew the first
        serial, levels = trees
        assert serial.n_nodes == levels.n_nodes and serial.n_nodes > min(2 ** depth, 9) - 1
        for field in ("feature", "bin_threshold", "missing_left", "left", "right", "gain", "sum_a",
                      "sum_b", "sum_w", "start", "stop", "partition"):
            assert np.array_equal(getattr(serial, field), getattr(levels, field)), (depth, field)
            assert getattr(serial, field).dtype == getattr(levels, field).dtype, field


def test_partitions_from_columns_and_from_rows_grow_the_same_trees(monkeypatch):
    # The feature-major copy only changes where a partition reads the split feature's code.
    X, w, a, rng = _problem(n=20_000, m=5, n_values=40, negative=True)
    X[rng.random(X.shape) < 0.05] = np.nan  # missing codes take the missing_left side
    codes = np.ascontiguousarray(BinMapper().fit(X, w).transform(X).T)
    b = (np.abs(a) * w + 0.1).astype(np.float32)
    rows = np.arange(X.shape[0], dtype=np.int32)
    trees = {}
    for copy_bytes in (grower.COLUMN_COPY_BYTES, 0):
        monkeypatch.setattr(grower, "COLUMN_COPY_BYTES", copy_bytes)
        for max_leaves in (None, 12):
            ordered = QuantisedRows(codes)
            assert (ordered.columns is None) == (copy_bytes == 0)
            tree = grow_tree(codes, rows, a, b, b, np.full(5, 41, np.int32),
                             SplitParams(NEWTON, reg_lambda=1.0), 5 if max_leaves is None else None,
                             quantised=True, ordered=ordered, max_leaves=max_leaves)
            trees[copy_bytes, max_leaves] = tree
    for max_leaves in (None, 12):
        columns, by_rows = trees[grower.COLUMN_COPY_BYTES, max_leaves], trees[0, max_leaves]
        assert columns.n_nodes > 7
        for field in ("feature", "bin_threshold", "missing_left", "gain", "sum_a", "start",
                      "stop", "partition"):
            assert np.array_equal(getattr(columns, field), getattr(by_rows, field)), field
        for k in np.flatnonzero(~columns.is_leaf):  # every event on the side its code says
            f, t = columns.feature[k], columns.bin_threshold[k]
            for child, goes_left in ((columns.left[k], True), (columns.right[k], False)):
                c = codes[columns.partition[columns.start[child]:columns.stop[child]], f]
                left = np.where(c == 255, columns.missing_left[k], c <= t)
                assert np.all(left == goes_left)


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_split_equals_brute_force(criterion, seed):
    X, w, a, rng = _problem(seed=seed, negative=seed == 2)
    crit = CRITERIA[criterion]
    if crit == VARIANCE:
        ch_a, ch_b = a * w, w
    elif crit == NEWTON:
        ch_a, ch_b = a * w, np.abs(w) * rng.uniform(0.1, 0.3, w.size)
    else:  # classification: signal and background weight
        is_signal = rng.random(w.size) < 0.4
        ch_a, ch_b = np.where(is_signal, w, 0), np.where(is_signal, 0, w)
    ch_a, ch_b = ch_a.astype(np.float32), ch_b.astype(np.float32)
    mapper = BinMapper().fit(X, w)
    codes = mapper.transform(X)
    rows = np.arange(X.shape[0], dtype=np.int32)
    params = SplitParams(crit, reg_lambda=1.0, reg_alpha=0.1, min_child_hessian=0.5,
                         min_child_weight=5.0)
    h = new_histograms(1, X.shape[1])
    build_histograms(codes, rows, np.stack([ch_a, ch_b, w], 1), np.array([0]), np.array([rows.size]),
                     np.array([0]), np.ones(X.shape[1], bool), h)
    sums = h[0, 0].sum(axis=0)[None]
    gain, feature, bin_t, missing_left, left_sums = find_best_splits(
        h, np.array([0]), sums, np.ones((1, X.shape[1]), bool), mapper.n_bins_, params)
    ref = best_split_naive(codes, rows, ch_a, ch_b, w, mapper.n_bins_, params)
    assert feature[0] == ref[1] and bin_t[0] == ref[2] and missing_left[0] == ref[3]
    assert gain[0] == pytest.approx(ref[0], rel=1e-6)
    c = codes[feature[0]]
    goes_left = np.where(c == MISSING_BIN, missing_left[0], c <= bin_t[0])
    for ch, v in enumerate((ch_a, ch_b, w)):
        assert left_sums[0, ch] == pytest.approx(np.sum(v[goes_left], dtype=np.float64), rel=1e-9, abs=1e-9)


def test_planted_split_is_found_and_missing_direction_learned():
    rng = np.random.default_rng(3)
    n = 2000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    target = np.where(X[:, 1] > 0.3, 1.0, -1.0)
    X[rng.random(n) < 0.2, 1] = np.nan
    target[np.isnan(X[:, 1])] = 1.0  # missing behaves like the right side
    w = np.ones(n, np.float32)
    mapper = BinMapper().fit(X, w)
    codes = mapper.transform(X)
    tree = grow_tree(codes, np.arange(n, dtype=np.int32), (target * w).astype(np.float32), w, w,
                     mapper.n_bins_, SplitParams(VARIANCE), max_depth=1)
    assert tree.feature[0] == 1
    assert not tree.missing_left[0]
    thr = mapper.thresholds(tree.feature[:1], tree.bin_threshold[:1])[0]
    assert thr == pytest.approx(0.3, abs=0.02)


def test_children_sum_to_parent_and_partition_is_consistent():
    X, w, a, rng = _problem(seed=5, n=3000, n_values=40)
    mapper = BinMapper().fit(X, w)
    codes = mapper.transform(X)
    rows = np.sort(rng.choice(X.shape[0], 2000, replace=False)).astype(np.int32)
    tree = grow_tree(codes, rows, (a * w).astype(np.float32), w, w, mapper.n_bins_,
                     SplitParams(VARIANCE), max_depth=4)
    assert sorted(tree.partition) == sorted(rows)
    for k in np.flatnonzero(tree.feature >= 0):
        l, r = tree.left[k], tree.right[k]
        assert tree.sum_w[k] == pytest.approx(tree.sum_w[l] + tree.sum_w[r], abs=1e-6)
        assert tree.sum_a[k] == pytest.approx(tree.sum_a[l] + tree.sum_a[r], abs=1e-6)
        assert (tree.start[l], tree.stop[r], tree.stop[l]) == (tree.start[k], tree.stop[k], tree.start[r])
        events = tree.partition[tree.start[l]:tree.stop[l]]
        c = codes[tree.feature[k], events]
        goes_left = np.where(c == MISSING_BIN, tree.missing_left[k], c <= tree.bin_threshold[k])
        assert goes_left.all()
        # every node's W equals the weights of its events
        assert tree.sum_w[l] == pytest.approx(float(np.sum(w[events], dtype=np.float64)), abs=1e-5)


def test_partition_of_large_nodes_is_stable():
    """Parallel chunked partition keeps event order within each child (> one chunk of events)."""
    rng = np.random.default_rng(7)
    n = 50_000
    X = rng.normal(size=(n, 2)).astype(np.float32)
    w = np.ones(n, np.float32)
    a = (X[:, 0] > 0).astype(np.float32)
    mapper = BinMapper().fit(X, w)
    tree = grow_tree(mapper.transform(X), np.arange(n, dtype=np.int32), a, w, w, mapper.n_bins_,
                     SplitParams(VARIANCE), max_depth=2)
    for k in np.flatnonzero(tree.feature < 0):
        part = tree.partition[tree.start[k]:tree.stop[k]]
        assert np.all(np.diff(part) > 0)


def test_dense_and_node_walks_agree_with_naive_twin_on_nan():
    import hepbdt
    from hepbdt.engine.predict import DenseForest, predict_naive, predict_raw

    rng = np.random.default_rng(11)
    X = rng.normal(size=(700, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    X[rng.random(X.shape) < 0.15] = np.nan
    for depth in (1, 2, 3, 5, 6, 14):  # <= 5: leaf masks; 6: dense walk; 14: node by node
        model = hepbdt.BDTClassifier(boosting="gradient", n_trees=6, max_depth=depth).fit(X, y)
        f = model.forest_
        naive = predict_naive(X, f)
        np.testing.assert_allclose(predict_raw(X, f), naive, atol=1e-12)
        dense = DenseForest(f, f.max_depth)
        np.testing.assert_allclose(predict_raw(X, f, dense=dense), naive, atol=1e-12)
        np.testing.assert_allclose(model.decision_function(X), naive + f.base_score, atol=1e-12)
        # Blocks without any NaN take the plain walk, the others the NaN-aware one.
        mixed = X.copy()
        mixed[:320] = np.nan_to_num(mixed[:320], nan=0.25)
        mixed[5, 0], mixed[6, 1], mixed[400, 2] = np.inf, -np.inf, np.inf
        np.testing.assert_allclose(predict_raw(mixed, f, dense=dense), predict_naive(mixed, f), atol=1e-12)


def test_first_infinite_matches_numpy_across_chunks():
    from hepbdt.engine.binning import INF_CHUNK, first_infinite

    X = np.zeros((3 * INF_CHUNK // 7 + 5, 7), np.float32)
    assert first_infinite(X) == -1
    flat = X.reshape(-1)
    for positions in ([INF_CHUNK + 3], [2 * INF_CHUNK + 1, INF_CHUNK - 1], [flat.size - 1, 5]):
        flat[:] = 0
        flat[positions] = [np.inf if k % 2 else -np.inf for k in range(len(positions))]
        flat[0] = np.nan  # NaN is not infinite
        assert first_infinite(X) == int(np.flatnonzero(np.isinf(flat))[0])


def test_event_leaves_and_add_by_leaf_follow_the_partition():
    # Each event's leaf against the tree's own partition slices; events outside the tree's
    # sample in no leaf; the score update against the direct per-leaf loop.
    X, w, a, rng = _problem(n=6000, m=4, n_values=30)
    codes = np.ascontiguousarray(BinMapper().fit(X, w).transform(X).T)
    rows = np.sort(rng.choice(6000, 4000, replace=False)).astype(np.int32)
    tree = grow_tree(codes, rows, a, w, w, np.full(4, 31, np.int32), SplitParams(VARIANCE), 4)
    leaves = np.flatnonzero(tree.is_leaf)
    leaf_of = grower.event_leaves(tree, 6000)
    assert leaf_of.dtype == np.uint8
    expected = np.full(6000, 255, np.uint8)
    for j, k in enumerate(leaves):
        expected[tree.partition[tree.start[k]:tree.stop[k]]] = j
    assert np.array_equal(leaf_of, expected)
    assert np.count_nonzero(leaf_of == 255) == 2000
    value = rng.normal(size=leaves.size)
    score = rng.normal(size=6000)
    direct = score.copy()
    for j, k in enumerate(leaves):
        direct[tree.partition[tree.start[k]:tree.stop[k]]] += value[j]
    grower.add_by_leaf(leaf_of, value, score)
    assert np.array_equal(score, direct)
    storage = np.empty(6000, np.int32)  # a buffer the leaves may live in
    assert np.array_equal(grower.event_leaves(tree, 6000, storage), expected)



@pytest.mark.parametrize("n_threads", [1, 2])
def test_event_leaves_split_by_event_ranges(n_threads):
    # Several tasks of MARK_RANGE event indices each (their edges inside leaves), a leaf
    # count that takes uint16, events in no leaf: each event's leaf and the score update
    # against the scatter through every slice.
    rng = np.random.default_rng(7)
    n = 3 * grower.MARK_RANGE + 12345
    rows = np.sort(rng.choice(n, n - 5000, replace=False)).astype(np.int32)
    n_leaves = 300
    leaf = np.sort(rng.integers(0, n_leaves, rows.size))  # the sorted rows dealt to leaves
    order = np.argsort(leaf, kind="stable")  # each leaf's events stay increasing
    partition = rows[order]
    stop = np.searchsorted(leaf[order], np.arange(n_leaves), side="right")
    start = np.concatenate([[0], stop[:-1]])
    fields = dict(feature=np.full(n_leaves, -1, np.int32), bin_threshold=np.zeros(n_leaves, np.uint8),
                  missing_left=np.zeros(n_leaves, bool), left=np.full(n_leaves, -1, np.int32),
                  right=np.full(n_leaves, -1, np.int32), gain=np.zeros(n_leaves),
                  sum_a=np.zeros(n_leaves), sum_b=np.zeros(n_leaves), sum_w=np.zeros(n_leaves))
    tree = grower.GrownTree(**fields, start=start.astype(np.int64), stop=stop.astype(np.int64),
                            partition=partition)
    expected = np.full(n, np.iinfo(np.uint16).max, np.uint16)
    for j in range(n_leaves):
        expected[partition[start[j]:stop[j]]] = j
    value = rng.normal(size=n_leaves)
    score = rng.normal(size=n)
    direct = score.copy()
    for j in range(n_leaves):
        direct[partition[start[j]:stop[j]]] += value[j]
    with threads(n_threads):
        leaf_of = grower.event_leaves(tree, n)
        grower.add_through_partition(tree, value, score)
    assert leaf_of.dtype == np.uint16
    assert np.array_equal(leaf_of, expected)
    assert np.array_equal(score, direct)

def test_quantised_splits_refuse_sides_lighter_than_a_quantum():
    # Weights over six decades and no minimum child weight: events lighter than a quantum
    # of B round to B = 0 while A rounds to +-1, and a side of them was the parent's float
    # sum minus the left's, ~1e-8 of rounding that passed W > 0: its A^2 / B gain was 1e8
    # where the exact histograms' best gain is 2e6. The exact (float64) fit is the reference.
    rng = np.random.default_rng(1)
    n = 60_000
    X = rng.normal(size=(n, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    w = 10 ** rng.uniform(-3, 3, n)
    from hepbdt import BDTClassifier

    gains = [BDTClassifier(n_trees=5, max_depth=5, quantised_histograms=q, random_state=0)
             .fit(X, y, w).forest_.gain.max() for q in (True, False)]
    assert gains[0] == pytest.approx(gains[1], rel=0.01)


@pytest.mark.parametrize("by_event", [False, True], ids=["feature-major", "event-major"])
@pytest.mark.parametrize("with_payload", [False, True], ids=["indices", "payload"])
def test_partition_nodes_is_a_stable_partition(by_event, with_payload):
    # Several nodes of a permuted partition, chunks of PARTITION_CHUNK across them, missing
    # codes either way, a node whose events all go one way: against a stable argsort by side.
    rng = np.random.default_rng(11)
    n, m = 3 * grower.PARTITION_CHUNK + 777, 5
    codes = rng.integers(0, 40, (n, m)).astype(np.uint8)
    codes[rng.random((n, m)) < 0.1] = MISSING_BIN
    partition = rng.permutation(n).astype(np.int32)
    bounds = np.array([0, 5, grower.PARTITION_CHUNK + 100, 2 * grower.PARTITION_CHUNK + 3, n])
    s, e = bounds[:-1], bounds[1:]
    feature = np.array([0, 3, 1, 4])
    threshold = np.array([20, 39, 0, 12], np.uint8)  # node 1 sends every valued code left
    missing_left = np.array([True, False, True, False])
    payload = (rng.normal(size=(n, 3)).astype(np.float32) if with_payload
               else grower.NO_PAYLOAD)
    expected_partition = partition.copy()
    expected_payload = payload.copy()
    expected_mid = []
    for j in range(s.size):
        events = partition[s[j]:e[j]]
        code = codes[events, feature[j]]
        left = np.where(code == MISSING_BIN, missing_left[j], code <= threshold[j])
        order = np.argsort(~left, kind="stable")
        expected_partition[s[j]:e[j]] = events[order]
        if with_payload:
            expected_payload[s[j]:e[j]] = payload[s[j]:e[j]][order]
        expected_mid.append(s[j] + int(left.sum()))
    stored = codes if by_event else np.ascontiguousarray(codes.T)
    scratch_payload = np.empty_like(payload) if with_payload else grower.NO_PAYLOAD
    mid = grower._partition_nodes(stored, by_event, partition, payload, s, e, feature, threshold,
                                  missing_left, np.empty(n, np.int32), scratch_payload)
    assert list(mid) == expected_mid
    assert np.array_equal(partition, expected_partition)
    assert np.array_equal(payload, expected_payload)


@pytest.mark.parametrize("wide", [False, True])
def test_packed_search_decodes_as_the_quantiser_does(wide):
    # Each feature decoded where it is scanned: the splits (gains, bins, sides, left sums)
    # of Quantiser.decode then find_best_splits, bit for bit, narrow and wide lanes, with
    # missing values, refused features and a node that cannot split.
    from hepbdt.engine._packed_search import find_best_packed_splits

    rng = np.random.default_rng(12)
    n, m, k = 6000, 5, 4
    a = rng.normal(size=n).astype(np.float32)
    b = rng.gamma(1.0, 1.0, n).astype(np.float32)
    quantiser = Quantiser(a, b, 2**26 if wide else n)
    assert quantiser.wide == wide
    packed = np.empty(n, np.int64)
    quantiser.pack_into(a, b, packed)
    codes = rng.integers(0, 120, (n, m)).astype(np.uint8)
    codes[rng.random(codes.shape) < 0.05] = MISSING_BIN
    node = rng.integers(0, k, n)
    node[node == 3] = 2  # node 3 holds no event: no split
    if wide:
        lanes = quantiser.quantise(a, b)
        raw = np.zeros((k, m, 256, 2), np.int64)
        for f in range(m):
            np.add.at(raw[:, f, :, 0], (node, codes[:, f]), lanes[0].astype(np.int64))
            np.add.at(raw[:, f, :, 1], (node, codes[:, f]), lanes[1].astype(np.int64))
    else:
        raw = np.zeros((k, m, 256), np.int64)
        for f in range(m):
            np.add.at(raw[:, f], (node, codes[:, f]), packed)
    decoded = quantiser.decode(raw)
    sums = decoded[:, 0].sum(axis=1)
    allowed = rng.random((k, m)) < 0.8
    params = SplitParams(NEWTON, 1.0, 0.0, 0.5, 0.0, 0.0)
    n_value_bins = np.full(m, 120, np.int32)
    slots = np.array([2, 0, 3, 1])
    expected = find_best_splits(decoded, slots, sums[slots], allowed, n_value_bins, params)
    got = find_best_packed_splits(raw, slots, quantiser.scale_a, quantiser.scale_b, sums[slots],
                                  allowed, n_value_bins, params.as_tuple())
    assert expected[1][2] == -1 and (expected[1] >= 0).sum() == 3
    for e, g in zip(expected, got, strict=True):
        assert np.array_equal(e, g)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("settings", [
    {"boosting": "newton", "max_depth": 6},
    {"boosting": "gradient", "max_depth": 3, "subsample": 0.6},
    {"boosting": "newton", "max_depth": 7, "min_child_weight": 40.0},
], ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_compiled_packed_levels_grow_the_per_level_trees(monkeypatch, wide, settings):
    # Depth-wise packed trees in one compiled call after the root against the levels grown
    # kernel by kernel from Python: missing values, three classes, refused splits, the
    # layout of samples above 2**25 - 1 events (wide lanes) on these few.
    if wide:
        monkeypatch.setattr(histogram, "choose_packing", lambda n: (True, WIDE_BITS))
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(8)
    X = rng.normal(size=(30_000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.03] = np.nan
    y = np.digitize(np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
                    + rng.normal(size=X.shape[0]), [0.3, 1.5])
    w = rng.gamma(2.0, 1.0, X.shape[0])

    def fit():
        return BDTClassifier(n_trees=3, quantised_histograms=True, random_state=2,
                             **settings).fit(X, y, w).forest_.to_dict()

    compiled = fit()
    monkeypatch.setattr(grower, "_levels_compiled", lambda *args: False)
    assert fit() == compiled


def _exact_score(criterion, a, b, lam, alpha):
    """A node's score from exact rational sums (a float for the entropy and S/sqrt(S+B)),
    written from the criteria's definitions (XGBoost's T_alpha(G)^2 / (H + lambda), S^2 / W,
    -n times the Gini index, misclassification, entropy), not from split.node_score."""
    from fractions import Fraction

    if criterion == VARIANCE:
        return a * a / b
    if criterion == NEWTON:
        t = max(abs(a) - alpha, Fraction(0)) * (1 if a >= 0 else -1)
        return t * t / (b + lam)
    n = a + b
    if criterion == CRITERIA["misclassification"]:
        # TMVA's MisClassificationError::GetSeparationIndex: min(p, 1 - p) of the purity
        # p = s / (s + b) as it is, below 0 outside [0, 1] (tmva/src/MisClassificationError.cxx)
        return -n * min(a / n, 1 - a / n)
    # Gini and entropy take 0 where the purity leaves (0, 1), as TMVA's GiniIndex (s <= 0
    # or b <= 0) and CrossEntropy (p <= 0 or p >= 1) do: the purity clipped
    p = min(max(a / n, Fraction(0)), Fraction(1))
    if criterion == CRITERIA["gini"]:
        return -n * p * (1 - p)
    if criterion == CRITERIA["cross_entropy"]:  # -n times the entropy in nats (scipy)
        from scipy.special import entr

        return -float(n) * float(entr(float(p)) + entr(float(1 - p)))
    return -float(a) * float(n) ** 0.5  # S/sqrt(S+B): the score -n I = -S sqrt(n)


def _exact_best_split(codes, ch, n_value_bins, criterion, lam, alpha, mch, mcw, msg):
    """(gain, feature, bin, missing_left) by trying every cut with Fractions: the first of
    equal gains in the kernels' order (feature, then missing right before left, then bin)."""
    from fractions import Fraction

    a, b, w = ([Fraction(float(v)) for v in c] for c in ch)
    lam, alpha, mch, mcw, msg = (Fraction(v) for v in (lam, alpha, mch, mcw, msg))

    def valid(sb, sw):
        if not sw > 0 or sw < mcw:
            return False
        if criterion == NEWTON:
            return sb >= mch and sb + lam > 0
        return sb > 0 if criterion == VARIANCE else True

    parent = _exact_score(criterion, sum(a), sum(b), lam, alpha)
    best = (None, -1, 0, False)
    for f in range(codes.shape[0]):
        c = codes[f]
        for missing_left in (False, True):
            if missing_left and not np.any(c == MISSING_BIN):
                continue
            for t in range(n_value_bins[f] + 1):
                left = np.where(c == MISSING_BIN, missing_left, c <= t)
                sides = [[sum(v[i] for i in range(len(v)) if left[i] == s) for v in (a, b, w)]
                         for s in (True, False)]
                if not all(valid(sb, sw) for _, sb, sw in sides):
                    continue
                if criterion not in (VARIANCE, NEWTON) and not all(sa + sb > 0 for sa, sb, _ in sides):
                    continue
                gain = sum(_exact_score(criterion, sa, sb, lam, alpha) for sa, sb, _ in sides) - parent
                if gain > msg and (best[0] is None or gain > best[0]):
                    best = (gain, f, t, missing_left)
    return best


@pytest.mark.parametrize("criterion", sorted(CRITERIA))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_best_split_equals_an_exact_rational_search(criterion, seed):
    # Channels in quarters (sums exact in float64), a minimum child weight that sides
    # reach exactly (>= passes), a minimum hessian likewise, duplicated features (the first
    # wins a tie) and a minimum gain: every decision against Fractions and the criteria's
    # definitions, not against split.node_score or split._valid_side.
    rng = np.random.default_rng(seed)
    n, crit = 24, CRITERIA[criterion]
    codes = rng.integers(0, 5, size=(3, n)).astype(np.uint8)
    codes[rng.random((3, n)) < 0.15] = MISSING_BIN
    codes = np.concatenate([codes, codes[:1]])  # feature 3 ties feature 0 everywhere
    w = rng.integers(-1, 5, n).astype(np.float32) / 2
    if crit == VARIANCE:
        a, b = rng.integers(-6, 7, n) * w / 2, w
    elif crit == NEWTON:
        a, b = rng.integers(-8, 9, n).astype(np.float32) / 4, np.abs(w)
    else:
        sig = rng.random(n) < 0.5
        a, b = np.where(sig, w, 0), np.where(sig, 0, w)
    ch = [np.asarray(v, np.float32) for v in (a, b, w)]
    n_value_bins = np.full(4, 5, np.int32)
    lam, alpha, mch, mcw, msg = 1.0, 0.5, 1.5, 1.5, 0.25
    params = SplitParams(crit, reg_lambda=lam, reg_alpha=alpha, min_child_hessian=mch,
                         min_child_weight=mcw, min_split_gain=msg)
    rows = np.arange(n, dtype=np.int32)
    h = new_histograms(1, 4)
    build_histograms(codes, rows, np.stack(ch, 1), np.array([0]), np.array([n]), np.array([0]),
                     np.ones(4, bool), h)
    sums = np.array([[float(np.sum(v, dtype=np.float64)) for v in ch]])
    gain, feature, bin_t, missing_left, _ = find_best_splits(
        h, np.array([0]), sums, np.ones((1, 4), bool), n_value_bins, params)
    ref = _exact_best_split(codes, ch, n_value_bins, crit, lam, alpha, mch, mcw, msg)
    assert (feature[0], bin_t[0], bool(missing_left[0])) == ref[1:]
    if ref[0] is not None:
        assert gain[0] == pytest.approx(float(ref[0]), rel=1e-12)
    else:
        assert feature[0] == -1 and gain[0] == -np.inf


@pytest.mark.parametrize("n_values", [1, 2, 3, 4])
@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_sums_by_leaf_equal_bincount_for_every_grouping(n_values, n_groups):
    # The kernel's groups (one a thread) are chosen from the thread count, so a run on one
    # thread only ever tries one: each grouping, called directly, against np.bincount of
    # dyadic values (exact sums), with events in no leaf (the type's largest value) and
    # running sums to continue from. A group sums up to three values in a pass: four in
    # one group take two passes (3 + 1), in three groups 2, 1 and 1.
    rng = np.random.default_rng(n_values * 10 + n_groups)
    n, n_leaves = 300, 6
    leaf_of = rng.integers(0, n_leaves, n).astype(np.uint8)
    leaf_of[rng.random(n) < 0.1] = np.iinfo(np.uint8).max
    # float32, as the fits' channels are (another dtype compiles the kernel again)
    values = tuple((rng.integers(-64, 64, n) / 8.0).astype(np.float32) for _ in range(n_values))
    initial = rng.integers(-8, 8, (n_values, n_leaves)) / 4.0
    out = np.empty((n_values, n_leaves))
    grower._sums_by_leaf(leaf_of, values, n_leaves, n_groups, initial, out)
    inside = leaf_of < n_leaves
    for v in range(n_values):
        ref = np.bincount(leaf_of[inside], weights=values[v][inside], minlength=n_leaves)
        assert np.array_equal(out[v], ref + initial[v])


@pytest.mark.parametrize("n_leaves,n_sweeps", [(1, 1), (6, 1), (7, 3), (30, 4)])
def test_sweep_rows_route_each_leaf_to_its_sweep_and_the_rest_aside(n_leaves, n_sweeps):
    # The table the lean leaf sums index by min(leaf, n_leaves), built from its definition:
    # a column for each leaf and one for the events in no leaf, which every sweep sets aside.
    expected = np.full((n_sweeps, n_leaves + 1), n_leaves)
    for j in range(n_leaves):
        expected[j % n_sweeps, j] = j
    assert np.array_equal(grower.sweep_rows(n_leaves, n_sweeps), expected)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_class_gini_split_equals_an_exact_rational_search(seed):
    # SAMME's multi-class Gini (score sum_k S_k^2 / n - n per side, n = sum_k S_k), with a
    # minimum child weight W that sides reach exactly, a minimum gain, missing values and a
    # duplicated feature: against Fractions, not against split._class_score.
    from fractions import Fraction

    from hepbdt.engine._types import CLASS_GINI

    rng = np.random.default_rng(seed)
    n, k = 30, 3
    codes = rng.integers(0, 5, size=(2, n)).astype(np.uint8)
    codes[rng.random((2, n)) < 0.15] = MISSING_BIN
    codes = np.concatenate([codes, codes[:1]])
    w = (rng.integers(-1, 5, n) / 2).astype(np.float32)
    label = rng.integers(0, k, n)
    payload = np.zeros((n, k + 1), np.float32)
    payload[np.arange(n), label] = w
    payload[:, k] = w
    msg, mcw = 0.25, 2.0
    h = new_histograms(1, 3, n_channels=k + 1)
    build_histograms(codes, np.arange(n, dtype=np.int32), payload, np.array([0]), np.array([n]),
                     np.array([0]), np.ones(3, bool), h)
    sums = payload.astype(np.float64).sum(axis=0)[None]
    got = find_best_splits(h, np.array([0]), sums, np.ones((1, 3), bool), np.full(3, 5, np.int32),
                           SplitParams(CLASS_GINI, min_child_weight=mcw, min_split_gain=msg))
    exact = [[Fraction(float(v)) for v in payload[:, ch]] for ch in range(k + 1)]

    def score(mask):
        s = [sum(v for v, m in zip(col, mask, strict=True) if m) for col in exact]
        total = sum(s[:k])
        return s[k], (sum(x * x for x in s[:k]) / total - total if total > 0 else None)

    parent = score(np.ones(n, bool))[1]
    best = (None, -1, 0, False)
    for f in range(3):
        c = codes[f]
        for missing_left in (False, True):
            if missing_left and not np.any(c == MISSING_BIN):
                continue
            for t in range(6):
                left = np.where(c == MISSING_BIN, missing_left, c <= t)
                (lw, ls), (rw, rs) = score(left), score(~left)
                if not (lw > 0 and rw > 0 and lw >= mcw and rw >= mcw) or None in (ls, rs):
                    continue
                gain = ls + rs - parent
                if gain > msg and (best[0] is None or gain > best[0]):
                    best = (gain, f, t, missing_left)
    assert (got[1][0], got[2][0], bool(got[3][0])) == best[1:]
    if best[0] is not None:
        assert got[0][0] == pytest.approx(float(best[0]), rel=1e-12)


def _one_feature_split(bins, criterion=VARIANCE, **params):
    """find_best_splits of one feature whose bins hold the (A, B, W) sums ``bins`` (bin k for
    k < len - 1, the last in the missing bin): (gain, bin, missing_left), bin -1 when there
    is no split."""
    h = np.zeros((1, 1, 256, 3))
    for k, sums in enumerate(bins):
        h[0, 0, MISSING_BIN if k == len(bins) - 1 else k] = sums
    gain, feature, bin_t, missing_left, _ = find_best_splits(
        h, np.array([0]), h[0, 0].sum(axis=0)[None], np.ones((1, 1), bool),
        np.array([len(bins) - 1], np.int32), SplitParams(criterion, **params))
    return gain[0], bin_t[0] if feature[0] == 0 else -1, bool(missing_left[0])


def test_equal_gains_keep_the_first_cut_and_a_gain_must_exceed_the_minimum():
    # By hand (S^2 / W of each side): bins (A, W) = (1, 1), (-1, 1), (1, 1), (-1, 1) give
    # the cuts after bins 0 and 2 the same gain, 1 + 1/3 (exact in float64 either way
    # round); the first is kept. Missing (0, 1) with (1, 1), (-1, 1): 1 + 1/2 whichever
    # side the missing values go, and missing-right is tried first. A gain equal to
    # min_split_gain (2 = 1 + 1 for (1, 1), (-1, 1), no missing) is refused, as LightGBM's
    # min_gain_to_split refuses it (``current_gain <= min_gain_shift``).
    def variance(*pairs):
        return [(a, w, w) for a, w in pairs]

    assert _one_feature_split(variance((1, 1), (-1, 1), (1, 1), (-1, 1), (0, 0))) == (4 / 3, 0, False)
    assert _one_feature_split(variance((1, 1), (-1, 1), (0, 1))) == (1.5, 0, False)
    two = variance((1, 1), (-1, 1), (0, 0))
    assert _one_feature_split(two, min_split_gain=1.75)[:2] == (2.0, 0)
    assert _one_feature_split(two, min_split_gain=2.0)[1] == -1


def test_sides_at_the_minimum_weight_and_hessian_are_valid():
    # A side whose W (or newton's H) equals the minimum is valid, as XGBoost's and
    # LightGBM's min_child_weight / min_sum_hessian_in_leaf (invalid only below): by hand,
    # variance (1, 1.5, 1.5), (-1, 1.5, 1.5) gains 2 / 1.5; newton (G, H, W) = (1, 1, 1.5),
    # (-1, 1, 1.5) gains 1 + 1 at reg_lambda 0.
    pair = [(1, 1.5, 1.5), (-1, 1.5, 1.5), (0, 0, 0)]
    assert _one_feature_split(pair, min_child_weight=1.5) == (4 / 3, 0, False)
    assert _one_feature_split(pair, min_child_weight=1.5000001)[1] == -1
    pair = [(1, 1, 1.5), (-1, 1, 1.5), (0, 0, 0)]
    assert _one_feature_split(pair, NEWTON, min_child_weight=1.5, min_child_hessian=1) == (2.0, 0, False)
    assert _one_feature_split(pair, NEWTON, min_child_hessian=1.0000001)[1] == -1
    assert _one_feature_split(pair, NEWTON, min_child_weight=1.5000001)[1] == -1


def test_a_full_feature_scans_no_cut_past_its_last_value_bin():
    # 255 value bins, so the missing bin (255) follows the last value bin. By hand (S^2 / W,
    # negative missing weight): bins 0, 1 hold (1, 1), (-1, 1), missing (2, -0.5); parent
    # 2^2 / 1.5. Missing left, cut after bin 0: 3^2 / 0.5 + 1 - 8/3 = 16 + 1/3, the best.
    # A cut past bin 254 would add the missing bin twice: (4, 1) | (-2, 0.5), gain 21 + 1/3.
    bins = [(1, 1, 1), (-1, 1, 1)] + [(0, 0, 0)] * 253 + [(2, -0.5, -0.5)]
    gain, bin_t, missing_left = _one_feature_split(bins)
    assert (bin_t, missing_left) == (0, True) and gain == pytest.approx(16 + 1 / 3, rel=1e-12)


def test_edge_columns_are_numpys_columns_of_the_chosen_rows():
    from hepbdt.engine.binning import _float32_columns

    rng = np.random.default_rng(6)
    X = rng.normal(size=(5000, 5))
    rows = np.sort(rng.choice(5000, 1700, replace=False))
    for given in (X.astype(np.float32), X, np.asfortranarray(X.astype(np.float32))):
        for chosen in (None, rows):
            picked = given if chosen is None else given[chosen]
            got = _float32_columns(given, chosen)
            assert len(got) == 5
            for f, column in enumerate(got):
                assert column.dtype == np.float32 and column.flags.c_contiguous
                assert np.array_equal(column, picked[:, f].astype(np.float32))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("max_depth", [2, 5])
def test_compiled_packed_levels_grow_the_brute_force_depthwise_tree(monkeypatch, seed, max_depth):
    # The one-call packed levels (grower._packed_levels) against a grower in plain numpy
    # that tries every cut on the events themselves (tests/test_leafwise.py), on channels
    # the quantiser packs without rounding (exact sums, real ties), with missing values.
    from .test_leafwise import (
        SETTINGS,
        _exactly_quantisable,
        _params,
        assert_brute_force_tree,
        naive_depthwise,
    )

    codes, g, h, nvb = _exactly_quantisable(600, seed)
    p = SETTINGS[0]
    calls = []
    compiled = grower._grow_packed_levels
    monkeypatch.setattr(grower, "_grow_packed_levels", lambda *a: calls.append(1) or compiled(*a))
    tree = grow_tree(np.ascontiguousarray(codes.T), None, g, h, h, nvb, _params(p), max_depth,
                     quantised=True)
    reference = naive_depthwise(codes, g, h, h, nvb, p, max_depth)
    assert calls and tree.n_nodes > 2 ** max_depth
    assert_brute_force_tree(tree, reference, g, h, h)
