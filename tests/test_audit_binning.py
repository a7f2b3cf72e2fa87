"""Audit of the binning (engine/binning.py) and of BinnedMatrix (binned.py): each test
pins a defect found by the audit, against a brute-force reference where there is one
(the number of edges <= x for a code, the weighted-quantile rule of ``fit_bin_edges``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt.binned import BinnedMatrix
from hepbdt.engine.binning import (
    BinMapper,
    EdgeSketch,
    apply_bins,
    check_edges,
    fit_bin_edges,
)

F32_MAX = np.finfo(np.float32).max


def _codes_brute(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The documented code: the number of edges <= x, 255 for NaN."""
    out = np.array([np.count_nonzero(edges <= v) for v in x], dtype=np.int64)
    out[np.isnan(x)] = 255
    return out


def test_plus_inf_gets_the_bin_above_the_last_edge():
    """+inf was coded 254 (the +inf padding of the packed edges counted as edges), not
    len(edges); its representative then fell in another bin than its code."""
    edges = [np.array([0.5, 1.5], np.float32)]
    x = np.array([-np.inf, 0.0, 1.0, 2.0, np.inf, np.nan], np.float32)
    expected = _codes_brute(x, edges[0])
    assert apply_bins(x[:, None], edges)[0].tolist() == expected.tolist()
    with pytest.raises(ValueError, match="infinite"):  # as the float path refuses inf
        BinnedMatrix.from_features(x[:, None], edges)
    matrix = BinnedMatrix(expected.astype(np.uint8)[:, None], edges)
    values = matrix.feature_values(0)
    finite = ~np.isnan(values)
    assert apply_bins(values[finite, None], edges)[0].tolist() == expected[finite].tolist()
    mapper = BinMapper.from_edges(edges)
    out = np.empty((x.size, 1), np.uint8)
    mapper.transform_into(x[:, None], out)
    assert out[:, 0].tolist() == expected.tolist()


def test_float64_features_give_strictly_increasing_edges():
    """float64 values that round to one float32 gave equal edges ([1, 1, 1.5, 2.5]),
    which check_edges (and BinnedMatrix) refuse, and bins the float32 data never fill."""
    x = np.array([1.0, 1.0 + 1e-9, 1.0 + 2e-9, 2.0, 3.0])[:, None]
    edges = fit_bin_edges(x)
    check_edges(edges)
    assert edges[0].tolist() == [1.5, 2.5]
    assert fit_bin_edges(x.astype(np.float32))[0].tolist() == edges[0].tolist()
    many = (1 + np.random.default_rng(0).random(1000) * 1e-6)[:, None]
    e = fit_bin_edges(many)[0]
    assert np.all(e[1:] > e[:-1])
    assert np.array_equal(e, fit_bin_edges(many.astype(np.float32))[0])


def test_infinite_values_give_finite_edges():
    """An edge next to +-inf was +inf (the midpoint), which check_edges refuses and which
    reads as "past the last edge" in a threshold."""
    x = np.array([-np.inf, 1, 2, np.inf, np.nan], np.float32)[:, None]
    edges = fit_bin_edges(x)
    check_edges(edges)
    assert apply_bins(x, edges)[0].tolist() == [0, 1, 2, 3, 255]
    both = fit_bin_edges(np.array([-np.inf, np.inf], np.float32)[:, None])[0]
    assert both.tolist() == [0.0]


def test_bin_counts_are_checked_for_the_sketch_too():
    """EdgeSketch.edges(1000) gave the first 254 of 999 quantile edges (the top 3/4 of the
    data in one bin), and n_cuts > max_bins gave more bins than asked, silently."""
    X = np.random.default_rng(1).normal(size=(3000, 1)).astype(np.float32)
    sketch = EdgeSketch(1)
    sketch.update(X, np.ones(len(X)), np.arange(len(X)))
    for max_bins, n_cuts in [(1000, 0), (5, 7), (10.5, 0), (1, 0)]:
        with pytest.raises(ValueError, match="max_bins|n_cuts"):
            sketch.edges(max_bins, n_cuts)
        with pytest.raises(ValueError, match="max_bins|n_cuts"):
            fit_bin_edges(X, max_bins=max_bins, n_cuts=n_cuts)
    assert len(sketch.edges(10, 3)[0]) <= 9


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights_are_refused(bad):
    """A NaN or inf weight made every cumulative weight NaN or inf: edges at arbitrary
    places (fit_bin_edges), or the event silently dropped as if of weight zero (sketch)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 1)).astype(np.float32)
    w = np.ones(400)
    w[7] = bad
    with pytest.raises(ValueError, match="finite"):
        fit_bin_edges(X, w, max_bins=10)
    with pytest.raises(ValueError, match="finite"):
        EdgeSketch(1, 100).update(X, w, np.arange(400))
    with pytest.raises(ValueError, match="weights"):
        fit_bin_edges(X, np.ones(399), max_bins=10)


def test_codes_beyond_the_edges_are_refused():
    """A code above len(edges) (codes made with other edges) was accepted: training read it
    as a bin above every edge and feature_values gave a value of another bin."""
    edges = [np.array([1.0], np.float32), np.arange(3, dtype=np.float32)]
    BinnedMatrix(np.array([[0, 3], [1, 255], [255, 0]], np.uint8), edges)
    with pytest.raises(ValueError, match="feature 0"):
        BinnedMatrix(np.array([[0, 3], [7, 0]], np.uint8), edges)
    codes = np.zeros((5001, 1), np.uint8)
    codes[-1, 0] = 4
    with pytest.raises(ValueError, match="up to 4"):
        BinnedMatrix(codes, [edges[1]])


def test_event_index_out_of_range_raises():
    """matrix[n] and matrix[-n - 1] gave an empty matrix instead of an IndexError."""
    matrix = BinnedMatrix(np.arange(5, dtype=np.uint8)[:, None], [np.arange(4, dtype=np.float32)])
    assert matrix[-1].codes.tolist() == [[4]]
    assert matrix[4].codes.tolist() == [[4]]
    for index in (5, 7, -6):
        with pytest.raises(IndexError):
            matrix[index]


def test_extreme_edges_no_overflow_and_finite_representatives():
    """Edges near -FLT_MAX warned of overflow and gave -inf representatives (which a
    float model input refuses); np.diff of large edges overflowed in the checks."""
    codes = np.array([[0], [1], [2]], np.uint8)
    for e in ([-3.0e38], [-3.4e38, 3.4e38], [-3.0e38, -1.0e38]):
        edges = [np.array(e, np.float32)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            matrix = BinnedMatrix(codes[: len(e) + 1], edges)
            check_edges(edges)
        values = matrix.feature_values(0)
        assert np.all(np.isfinite(values))
        assert apply_bins(values[:, None], edges)[0].tolist() == matrix.codes[:, 0].tolist()
