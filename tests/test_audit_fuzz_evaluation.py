"""Evaluation functions on extreme but finite inputs, against numpy references (audit FL,
2026-12-05): residuals of 1e-170 or 1e200, class weights whose sums overflow, Python ints
beyond float64."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt.evaluation import regression_metrics, resolution_vs_target


@pytest.mark.parametrize("scale", [1e-170, 1e200, 1e-310])
def test_regression_metrics_of_tiny_and_huge_residuals(scale):
    rng = np.random.default_rng(3)
    t = rng.normal(size=40)
    r = rng.normal(size=40)
    w = rng.exponential(size=40)
    got = regression_metrics(t * scale, t * scale + r * scale, w)
    rr = (t * scale + r * scale) - t * scale  # the residuals hepbdt sees, at unit scale:
    unit = rr / scale
    ref_rmse = np.sqrt(np.sum(w * unit**2) / w.sum()) * scale
    ref_mae = np.sum(w * np.abs(unit)) / w.sum() * scale
    ref_bias = np.sum(w * unit) / w.sum() * scale
    np.testing.assert_allclose(got.rmse, ref_rmse, rtol=1e-9)
    np.testing.assert_allclose(got.mae, ref_mae, rtol=1e-9)
    np.testing.assert_allclose(got.bias, ref_bias, rtol=1e-9)
    assert 0 < got.resolution_trms < np.inf and 0 < got.resolution_iqr < np.inf
    binned = resolution_vs_target(t * scale, t * scale + r * scale, w, bins=1)
    np.testing.assert_allclose(binned.rmse[0], ref_rmse, rtol=1e-9)


def test_regression_residual_beyond_float64_is_refused():
    with pytest.raises(ValueError, match="y_pred - y_true overflows"):
        regression_metrics([-1e308, 0.0], [1e308, 0.0])


def test_class_mix_weights_of_weights_whose_sums_overflow():
    from hepbdt.evaluation.multiclass import class_mix_weights
    y = np.array([0] * 30 + [1] * 20)
    ref_y = np.array([0] * 10 + [1] * 40)
    w = np.full(50, 1e307)
    ref_w = np.full(50, 1e307)
    got = class_mix_weights(y, w, ref_y, ref_w)
    # by hand, on unit weights: class 0 makes 30/50 of the sample and 10/50 of the reference
    ref = np.where(y == 0, (10 / 50) / (30 / 50), (40 / 50) / (20 / 50)) * 1e307
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("argument", ["sample_weight", "score"])
def test_ints_beyond_float64_are_refused_naming_the_argument(argument):
    from hepbdt.evaluation import roc_auc
    inputs = {"y": [0, 1, 0, 1], "score": [0.1, 0.9, 0.3, 0.8], "sample_weight": [1, 1, 1, 1]}
    inputs[argument] = [10**400] * 4  # numpy's float conversion raises OverflowError
    with pytest.raises(ValueError, match=argument):
        roc_auc(**inputs)


@pytest.mark.parametrize("s, b", [(1e-10, 1e200), (-0.54, 4.1e198), (1e-200, 1.0), (3.0, 1e290)])
def test_ams_of_a_tiny_signal_over_a_huge_background(s, b):
    """The radicand b x^2 (1 - x / 3 + ...) underflowed below s / b of 1e-160:
    ams(1e-10, 1e200, 0) was 0 and ams(-0.54, 4.1e198, 0) -0.0 (audit FL). Against the
    leading order s / sqrt(b), exact there to far below double precision (x / 6 < 1e-150)."""
    from hepbdt.evaluation import ams

    assert float(ams(s, b, 0.0)) == pytest.approx(s / np.sqrt(b), rel=1e-12, abs=0.0)
