"""Audit EM (2026-12-05): the step from a physicist's values to the bins. Each test pins a
defect found by the audit against a brute-force reference (the number of edges <= x
computed in float64 from the edges as given; numpy's weighted quantiles)."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.binned import BinnedMatrix
from hepbdt.engine.binning import check_edges

# float64 edges between two float32 values: 1 + 2**-30 lies between 1.0 and 1.0 + 2**-23
EDGES64 = np.array([-2.0 - 2.0**-28, 1.0 + 2.0**-30, 3.0 + 2.0**-25])
X32 = np.array([-2.0, np.nextafter(np.float32(-2.0), np.float32(-3)), 1.0,
                np.nextafter(np.float32(1.0), np.float32(2)), 3.0, 3.5, 0.0, np.nan], np.float32)


def _codes_brute(x: np.ndarray, edges: np.ndarray) -> list[int]:
    """The documented code: the number of the given edges <= x (in float64), 255 for NaN."""
    return [255 if np.isnan(v) else int(np.count_nonzero(edges <= float(v))) for v in x]


def test_float64_edges_bin_each_value_on_its_side_of_the_given_edge():
    """Given float64 edges were rounded to the nearest float32: 1 + 2**-30 became 1.0, so
    x = 1.0 (below the edge) got code 1 where the edge puts it in bin 0."""
    expected = _codes_brute(X32, EDGES64)
    assert BinnedMatrix.from_features(X32[:, None], [EDGES64]).codes[:, 0].tolist() == expected
    edges = check_edges([EDGES64])[0]
    assert edges.dtype == np.float32
    # every float32 x is on the same side of the float32 edge as of the given one
    assert [int(np.count_nonzero(edges <= v)) if not np.isnan(v) else 255 for v in X32] == expected


def test_a_fit_with_float64_edges_splits_where_the_given_edges_say():
    """The model's thresholds are the edges it was given, as float32 values that decide
    every float32 x alike: x = 1.0 goes left of the edge 1 + 2**-30, as x < edge says."""
    rng = np.random.default_rng(0)
    x = np.repeat(np.array([0.5, 1.0, 1.0 + 2.0**-23, 2.0], np.float32), 50)
    y = (x > 1.0).astype(int)
    model = BDTClassifier(n_trees=1, max_depth=1, random_state=0).fit(
        x[:, None], y, rng.uniform(0.5, 1.5, x.size), bin_edges=[EDGES64])
    split = model.forest_.feature >= 0
    assert split.sum() == 1
    threshold = float(model.forest_.threshold[split][0])
    # the threshold decides x = 1.0 and its next float32 as the float64 edge does
    assert (1.0 < threshold) == (1.0 < EDGES64[1])
    assert (float(np.float32(1.0 + 2.0**-23)) < threshold) == (1.0 + 2.0**-23 < EDGES64[1])
    scores = model.decision_function(np.array([[1.0], [1.0 + 2.0**-23]], np.float32))
    assert scores[0] < scores[1]  # 1.0 scored as the background below the edge


def test_binned_matrix_of_codes_keeps_the_given_edges_sides():
    """BinnedMatrix(codes, edges) rounded float64 edges to the nearest float32 too."""
    matrix = BinnedMatrix(np.array([[0], [1]], np.uint8), [EDGES64[1:2]])
    assert float(matrix.edges[0][0]) > EDGES64[1] > 1.0
    assert matrix.edges[0].dtype == np.float32


def test_edges_that_float32_cannot_tell_apart_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="strictly increasing as float32"):
        check_edges([np.array([1.0 + 2.0**-30, 1.0 + 2.0**-29])])


def _quantile_brackets(x: np.ndarray, w: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's weighted inverted-CDF quantiles at k / n_bins (the documented rule: the
    first value whose cumulative weight reaches the target) and the next distinct value:
    each edge must lie above the first and at most at the second."""
    unique = np.unique(x)
    low = np.unique([np.float32(np.quantile(x.astype(np.float64), k / n_bins, weights=w,
                                            method="inverted_cdf")) for k in range(1, n_bins)])
    low = low[low < unique[-1]]
    return low, np.array([unique[unique > v][0] for v in low], np.float32)


@pytest.mark.parametrize("scale", [1e305, 1.7e308 / 30_000])
def test_weights_whose_sum_passes_float64_give_the_quantile_edges(scale):
    """Finite weights whose sum passes float64's range (1e305 x 20,000 events) made every
    cumulative weight inf and every target NaN: fit_bin_edges and the edge sketch gave one
    edge where the weighted quantiles give 254."""
    from hepbdt.engine.binning import EdgeSketch, fit_bin_edges

    rng = np.random.default_rng(4)
    n = 20_000
    x = rng.normal(size=n).astype(np.float32)
    w = rng.uniform(0.5, 1.5, n)
    low, high = _quantile_brackets(x, w, 255)
    for edges in (fit_bin_edges(x[:, None], w * scale)[0],
                  EdgeSketch(1).merge(_sketch(x, w * scale)).edges()[0]):
        assert edges.size == low.size == 254
        assert np.all(edges > low) and np.all(edges <= high)


def _sketch(x: np.ndarray, w: np.ndarray):
    from hepbdt.engine.binning import EdgeSketch

    sketch = EdgeSketch(1)
    sketch.update(x[:, None], w, np.arange(x.size))
    return sketch
