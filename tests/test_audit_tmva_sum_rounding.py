"""The TMVA export's bound counts the rounding of the Reader's double sums (audit FA, 2026-12-05).

``to_tmva_xml`` returns ``max_response_error``, the most by which the Reader's response may
differ from ``tmva_response``. It counted the float32 rounding of the written leaves only,
as if the Reader and ``tmva_response`` summed them exactly. Both sum in double, in their
own orders: where leaves cancel far above the score (an XGBoost model of ``reg_lambda=0``,
``min_child_weight=0``, ``eta=1`` had leaves of +-1e16 that cancel to a margin of ~0.1), each
running sum loses up to 2^-53 of its size at every addition, and the Reader was 3.2e-4
from ``tmva_response`` where the export claimed 3e-8 (both ~5e-4 from the exact sum).
The reference here is the exact sum of the leaves an event reaches (``math.fsum``), the
response taken in double from it; the real Reader too where it runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hepbdt.estimators import from_forest
from hepbdt.interop import tmva_response, to_tmva_xml
from hepbdt.interop.tmva_export import TMVAExportError
from hepbdt.model import ForestBuilder

from .test_tmva_reader import _reader_scores, reader  # noqa: F401  (the fixture)

N_FEATURES = 3


def _stumps(base: float, leaves: list[tuple[float, float]]) -> object:
    """A forest of stumps, tree t splitting feature t % 3 at 0 into (left, right) leaves."""
    builder = ForestBuilder(N_FEATURES, base_score=base)
    zeros = {k: np.zeros(3) for k in ("bin_threshold", "gain", "cover")}
    for t, (low, high) in enumerate(leaves):
        builder.add(tree_weight=1.0, feature=np.array([t % N_FEATURES, -1, -1]),
                    left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
                    missing_left=np.zeros(3, bool), threshold=np.array([0.0, 0.0, 0.0]),
                    value=np.array([0.0, low, high]), **zeros)
    forest = builder.build()
    forest.validate()
    return forest


def _exact_scores(forest, X: np.ndarray) -> np.ndarray:
    """base + sum of the leaves each event reaches, summed exactly (math.fsum)."""
    out = []
    for x in X:
        terms = [forest.base_score]
        for t in range(forest.n_trees):
            node = forest.tree_offsets[t]
            go_left = x[forest.feature[node]] < forest.threshold[node]
            terms.append(forest.tree_weights[t] * forest.value[node + (1 if go_left else 2)])
        out.append(math.fsum(terms))
    return np.array(out)


def _events() -> np.ndarray:
    grid = np.array([-1.0, 1.0], dtype=np.float32)
    return np.array(np.meshgrid(grid, grid, grid)).reshape(3, -1).T.astype(np.float32)


CANCELLING = [(1e16, 0.25), (-1e16, 0.5), (0.125, -0.375), (1e16, 0.0), (-1e16, 0.0)]
MODERATE = [(1e3, 0.25), (-1e3, 0.5), (0.125, -0.375), (1e3, 0.0), (-1e3, 0.0)]


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_cancelling_leaves_far_above_the_score_are_refused(tmp_path, kind) -> None:
    """Leaves of +-1e16 that cancel: no double sum gives the score, so the file is refused."""
    model = from_forest(kind, _stumps(0.1, CANCELLING), None)
    X = _events()
    exact = _exact_scores(model.forest_, X)
    # the model's own double sum is not the exact score: the bound must cover this
    assert np.max(np.abs(model.forest_.raw_score(X) - exact)) > 0.01
    with pytest.raises(TMVAExportError, match="double sums"):
        to_tmva_xml(model, tmp_path / "m.weights.xml")


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_written_files_hold_their_bound_against_the_exact_sum(tmp_path, kind) -> None:
    """Leaves of +-1e3 that cancel are written; tmva_response is within the bound of the
    exact response (here the sums round by about 1e-13)."""
    model = from_forest(kind, _stumps(0.1, MODERATE), None)
    X = _events()
    info = to_tmva_xml(model, tmp_path / "m.weights.xml")
    exact = _exact_scores(model.forest_, X)
    response = tmva_response(model, X)
    if kind == "classifier":
        expected = 2.0 / (1.0 + np.exp(-2.0 * exact)) - 1.0
        assert np.max(np.abs(response - expected)) <= info["max_response_error"]
    else:  # README: the bound relative to max(1, |initial score|), then float32 steps
        steps = 4 * 2.0**-23 * max(1.0, float(np.max(np.abs(exact))))
        assert np.max(np.abs(response - exact)) <= info["max_response_error"] + steps


def test_the_reader_within_the_bound_of_the_exact_response(tmp_path, reader) -> None:  # noqa: F811
    """The real Reader on the written file: within max_response_error of the exact response."""
    model = from_forest("classifier", _stumps(0.1, MODERATE), None)
    X = _events()
    xml = tmp_path / "m.weights.xml"
    info = to_tmva_xml(model, xml)
    theirs = _reader_scores(reader, xml, X, [f"x{i}" for i in range(N_FEATURES)], tmp_path)
    exact = _exact_scores(model.forest_, X)
    expected = 2.0 / (1.0 + np.exp(-2.0 * exact)) - 1.0
    assert np.max(np.abs(theirs - expected)) <= info["max_response_error"]


def test_a_centred_regression_of_many_trees_is_written(tmp_path) -> None:
    """Leaves of +-2e3 over 2,000 trees that cancel to scores of order 1e4 around 0 (a
    residual in MeV): the worst-case bound, n 2^-53 in place of sqrt(n) 2^-53, refused
    both exports of such ordinary regressions (audit FE). Written, the TMVA response is
    within its bound of the exact sums and onnxruntime gives hepbdt's score in float32."""
    pytest.importorskip("onnxruntime")
    from .test_onnx_export import assert_matches

    leaves = [(2e3 * 0.999**t, -2e3 * 0.999**t) for t in range(2000)]
    model = from_forest("regressor", _stumps(0.0, leaves), None)
    X = _events()
    info = to_tmva_xml(model, tmp_path / "m.weights.xml")
    exact = _exact_scores(model.forest_, X)
    assert np.max(np.abs(exact)) > 1e3
    steps = 4 * 2.0**-23 * max(1.0, float(np.max(np.abs(exact))))
    assert np.max(np.abs(tmva_response(model, X) - exact)) <= info["max_response_error"] + steps
    assert_matches(model, X, tmp_path / "m.onnx")
