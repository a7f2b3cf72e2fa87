"""The grower cut between a client and parts (engine/data_parallel.py), without Dask: parts
of the events grow the tree the whole sample grows, node for node and bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hepbdt.boosting._loop import leaf_sums, node_sums, update_scores
from hepbdt.engine import data_parallel, grower
from hepbdt.engine._types import NEWTON
from hepbdt.engine.binning import BinMapper
from hepbdt.engine.data_parallel import (
    PartTree,
    SummedLeafTree,
    SummedTree,
    add_histograms,
    add_leaf_results,
)
from hepbdt.engine.grower import QuantisedRows, add_by_leaf, grow_tree
from hepbdt.engine.histogram import Quantiser
from hepbdt.engine.split import SplitParams
from hepbdt.engine.sums import exact_sum, exact_sum_of_parts, exact_sum_parts


def _grow_in_parts(X, a, b, mapper, cuts, params, max_depth, seed, rng):
    n = X.shape[0]
    bounds = [0, *cuts, n]
    parts = [PartTree(QuantisedRows.from_features(X[s:e], mapper), s, max_depth)
             for s, e in zip(bounds[:-1], bounds[1:], strict=True)]
    maxima = [Quantiser.max_abs(a[s:e], b[s:e]) for s, e in zip(bounds[:-1], bounds[1:], strict=True)]
    max_abs = tuple(np.max(maxima, axis=0).tolist())
    used = np.ones(X.shape[1], np.bool_)
    quantiser = Quantiser(np.empty(0), np.empty(0), n, seed=seed, max_abs=max_abs)
    tree = SummedTree(quantiser, used, mapper.n_bins_, params, max_depth, colsample_bynode=0.75,
                      rng=rng)
    raw = None
    for part, s, e in zip(parts, bounds[:-1], bounds[1:], strict=True):
        raw = add_histograms(raw, part.start(a[s:e], b[s:e], used, n, seed, max_abs))
    plan = tree.start(raw)
    while plan is not None:
        left = None
        for part in reversed(parts):  # any order: integer sums
            left = add_histograms(left, part.apply(plan))
        plan = tree.advance(left)
    grown = tree.grown_tree()
    running = None
    for part, s, e in zip(parts, bounds[:-1], bounds[1:], strict=True):  # in event order
        running = part.leaf_sums(running, a[s:e], b[s:e], b[s:e])
    return grown, node_sums(grown, running), parts, bounds


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("cuts", [[1], [700, 701, 1500], [1999]])
def test_parts_grow_the_whole_samples_tree(cuts, in_order, monkeypatch):
    # in order: each part sums its leaves and adds its scores by each event's leaf (parts of
    # ORDERED_SUMS_FROM events or more), else through its partition
    rng = np.random.default_rng(0)
    n, m = 2_000, 4
    X = rng.standard_normal((n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.05] = np.nan
    a = (rng.standard_normal(n) + np.nan_to_num(X[:, 0]).clip(-1, 1)).astype(np.float32)
    b = rng.uniform(0.1, 1.0, n).astype(np.float32)
    mapper = BinMapper(32).fit(X)
    params = SplitParams(NEWTON, reg_lambda=1.0)
    whole = grow_tree(None, np.arange(n, dtype=np.int32), a, b, b, mapper.n_bins_, params, 5,
                      quantised=True, ordered=QuantisedRows.from_features(X, mapper),
                      rounding_seed=3, colsample_bynode=0.75, rng=np.random.default_rng(7))
    expected = leaf_sums(whole, a, b, b)  # the fits' three channels: A, B and W
    monkeypatch.setattr(data_parallel, "ORDERED_SUMS_FROM", 0 if in_order else n + 1)
    grown, sums, parts, bounds = _grow_in_parts(X, a, b, mapper, cuts, params, 5, 3,
                                                np.random.default_rng(7))
    for name in ("feature", "bin_threshold", "missing_left", "left", "right", "gain", "sum_a",
                 "sum_b", "sum_w"):
        assert np.array_equal(getattr(whole, name), getattr(grown, name)), name
    assert np.array_equal(expected, sums)
    assert all((part.leaf_of is not None) == in_order for part in parts)
    if not in_order:
        return
    values = rng.standard_normal(whole.n_nodes)
    score = np.zeros(n)
    update_scores(None, whole, values, score, through_partition=True)
    for part, s, e in zip(parts, bounds[:-1], bounds[1:], strict=True):  # as Dask parts add a tree
        part_score = np.zeros(e - s)
        add_by_leaf(part.leaf_of, values[whole.is_leaf], part_score)
        assert np.array_equal(part_score, score[s:e])


def _grow_leaves_in_parts(X, a, b, mapper, cuts, params, max_depth, max_leaves, seed, rng,
                          **draws):
    """The leaf-wise tree of parts cut at ``cuts`` (``SummedLeafTree`` and ``PartTree``), its
    node sums, and each plan's answers (summed)."""
    n = X.shape[0]
    bounds = [0, *cuts, n]
    parts = [PartTree(QuantisedRows.from_features(X[s:e], mapper), s, max_depth, max_leaves)
             for s, e in zip(bounds[:-1], bounds[1:], strict=True)]
    max_abs = Quantiser.max_abs(a, b)
    used = np.ones(X.shape[1], np.bool_)
    quantiser = Quantiser(np.empty(0), np.empty(0), n, seed=seed, max_abs=max_abs)
    tree = SummedLeafTree(quantiser, used, mapper.n_bins_, params, max_depth, max_leaves,
                          rng=rng, **draws)
    raw = None
    for part, s, e in zip(parts, bounds[:-1], bounds[1:], strict=True):
        raw = add_histograms(raw, part.start(a[s:e], b[s:e], used, n, seed, max_abs))
    plan, answers = tree.start(raw), []
    while plan is not None:
        answer = None
        for part in reversed(parts):  # any order: integer sums
            result = part.split_leaves(plan)
            answer = result if answer is None else add_leaf_results(answer, result)
        answers.append(answer)
        plan = None if plan.last else tree.advance(answer)
    grown = tree.grown_tree()
    running = None
    for part, s, e in zip(parts, bounds[:-1], bounds[1:], strict=True):  # in event order
        running = part.leaf_sums(running, a[s:e], b[s:e], b[s:e])
    return grown, node_sums(grown, running), answers


@pytest.mark.parametrize(("max_depth", "max_leaves", "draws", "pool"), [
    (None, 24, {}, False),
    (3, 16, {"colsample_bylevel": 0.75, "colsample_bynode": 0.5}, False),
    (None, 24, {"colsample_bynode": 0.75}, True),  # a pool of 3: children from events
])
@pytest.mark.parametrize("cuts", [[0], [700, 701, 1500]])
def test_parts_grow_the_whole_samples_leafwise_tree(cuts, max_depth, max_leaves, draws, pool,
                                                    monkeypatch):
    """Best first: one split a round trip (with the splits made since whose children get
    no histograms), the parts' left children's histograms summed, the tree memory's."""
    if pool:  # the driver gives histograms up as memory's pool does; the parts follow
        monkeypatch.setattr(grower, "LEVEL_HISTOGRAM_BYTES", 1)
    rng = np.random.default_rng(1)
    n, m = 2_000, 4
    X = rng.standard_normal((n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.05] = np.nan
    a = (rng.standard_normal(n) + np.nan_to_num(X[:, 0] * X[:, 1]).clip(-1, 1)).astype(np.float32)
    b = rng.uniform(0.1, 1.0, n).astype(np.float32)
    mapper = BinMapper(32).fit(X)
    params = SplitParams(NEWTON, reg_lambda=1.0)
    whole = grow_tree(None, None, a, b, b, mapper.n_bins_, params, max_depth, quantised=True,
                      ordered=QuantisedRows.from_features(X, mapper), rounding_seed=3,
                      rng=np.random.default_rng(7), max_leaves=max_leaves, **draws)
    expected = leaf_sums(whole, a, b, b)  # the fits' three channels: A, B and W
    grown, sums, answers = _grow_leaves_in_parts(X, a, b, mapper, cuts, params, max_depth,
                                                 max_leaves, 3, np.random.default_rng(7), **draws)
    for name in ("feature", "bin_threshold", "missing_left", "left", "right", "gain", "sum_a",
                 "sum_b", "sum_w"):
        assert np.array_equal(getattr(whole, name), getattr(grown, name)), name
    assert np.array_equal(expected, sums)
    n_leaves = int(np.count_nonzero(whole.is_leaf))
    assert n_leaves == max_leaves or max_depth is not None
    assert sum(answer.counts.shape[0] for answer in answers) == n_leaves - 1
    assert all((answer.counts > 0).all() for answer in answers)
    both = [answer.raw.shape[0] == 2 for answer in answers if answer.raw is not None]
    assert any(both) == pool  # both children sent only where the parent's was given up


def test_exact_sums_merge_in_any_order():
    rng = np.random.default_rng(1)
    v = (rng.standard_normal(50_000) * 10.0 ** rng.integers(-20, 20, 50_000)).astype(np.float32)
    whole = exact_sum(v)
    parts = [exact_sum_parts(p) for p in np.array_split(v, 7)]
    assert exact_sum_of_parts(sum(parts[::-1])) == whole
    assert whole == math.fsum(v.astype(np.float64).tolist())  # correctly rounded


def test_exact_sums_of_a_mask():
    rng = np.random.default_rng(2)
    v = (rng.standard_normal(4_321) * 10.0 ** rng.integers(-8, 8, 4_321)).astype(np.float32)
    mask = rng.random(v.size) < 0.3
    expected = math.fsum(v[mask].astype(np.float64).tolist())
    assert exact_sum_of_parts(exact_sum_parts(v, mask)) == expected
    assert exact_sum_of_parts(exact_sum_parts(v)) == math.fsum(v.astype(np.float64).tolist())


def _cut(values: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return [values[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


@pytest.mark.parametrize("lengths", [[0], [5], [7, 0, 3], [4096], [4095, 1], [4097, 8190],
                                     [1, 4094, 2, 4097, 0, 9000], [12_289]])
def test_chunked_sums_of_parts_are_the_kernels_partial_sums(lengths):
    """Each chunk's values added in turn from 0.0, across the parts' cuts, against a
    sequential loop over the whole vector (the losses' partial sums)."""
    from hepbdt.boosting.losses import LOSS_CHUNK
    from hepbdt.engine.data_parallel import ChunkedSum, chunk_pieces, sequential_sum

    values = np.random.default_rng(sum(lengths)).standard_normal(sum(lengths)) * 1e3
    layout = ChunkedSum(lengths, LOSS_CHUNK)
    answers = [chunk_pieces(part, layout.requests(i))
               for i, part in enumerate(_cut(values, lengths))]
    expected = [sequential_sum(values[lo:lo + LOSS_CHUNK])
                for lo in range(0, values.size, LOSS_CHUNK)]
    assert layout.partial(answers).tolist() == expected


def _loss_cases():
    from hepbdt.boosting.losses import Deviance, Logistic, Softmax, Squared

    rng = np.random.default_rng(5)
    n = 9_000
    w = rng.uniform(-0.5, 2.0, n)
    labels = (rng.random(n) < 0.4).astype(np.int8)
    score = rng.standard_normal(n) * 3.0
    yield Deviance(), labels, w, score
    yield Logistic(), labels, w, score
    yield Squared(), rng.standard_normal(n), w, score
    yield Softmax(3, "newton"), rng.integers(0, 3, n).astype(np.int8), w, rng.standard_normal((3, n))


@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("lengths", [[9_000], [3_001, 5_999], [1, 4_095, 4_904], [0, 8_999, 1]])
def test_loss_rebuilt_from_parts_terms_is_the_loss(case, lengths):
    """A loss's terms (``loss_terms``) cut into parts and added as ``loss_chunk`` says
    (chunks, or numpy's pairwise sum) over numpy's sum of the weights: the loss, bit for bit."""
    from hepbdt.engine.data_parallel import (
        ChunkedSum,
        PairwiseSum,
        chunk_pieces,
        pairwise_pieces,
    )

    loss, y, w, score = list(_loss_cases())[case]
    terms = loss.loss_terms(y, w, score)
    pieces = _cut(terms, lengths)
    if loss.loss_chunk is None:
        layout = PairwiseSum(lengths)
        summed = layout.total([pairwise_pieces(p, layout.requests(i))
                               for i, p in enumerate(pieces)])
    else:
        layout = ChunkedSum(lengths, loss.loss_chunk)
        summed = np.sum(layout.partial([chunk_pieces(p, layout.requests(i))
                                        for i, p in enumerate(pieces)]))
    weights = PairwiseSum(lengths)
    total = weights.total([pairwise_pieces(p, weights.requests(i))
                           for i, p in enumerate(_cut(w, lengths))])
    assert float(summed / total) == loss.loss(y, w, score)
