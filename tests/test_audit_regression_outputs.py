"""Audit of regression trainings end to end (2026-12-05): the numbers a regression prints,
checked against references computed here without hepbdt (scipy, numpy, repeated events)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hepbdt.evaluation import regression_metrics, resolution_vs_target


@pytest.mark.parametrize("n", [20, 40, 100, 500])
def test_truncated_rms_keeps_the_central_ninety_percent_of_unit_weights(n):
    """'RMS of the central 90%' of 20 residuals kept 19 (the lowest always): 11 % high on
    average; scipy's trimboth drops 5 % of the events at each end."""
    rng = np.random.default_rng(n)
    for _ in range(5):
        r = rng.normal(size=n)
        reference = float(np.std(stats.trimboth(r, 0.05)))
        m = regression_metrics(np.zeros(n), r)
        assert m.resolution_trms == pytest.approx(reference, rel=1e-12)
        shifted = regression_metrics(np.full(n, 3.0), r + 3.0)  # residuals, not values
        assert shifted.resolution_trms == pytest.approx(reference, rel=1e-9)


def test_truncated_rms_of_weights_is_that_of_the_repeated_events():
    """Integer weights are repeated events, also where the central share cuts through an
    event's weight (the atoms of the repeated sample at each end are dropped one by one)."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(5, 40))
        r = rng.normal(size=n)
        k = rng.integers(1, 6, n)
        k[0] += (-k.sum()) % 20  # 20 | total: 5 % of the repeated sample is whole events
        expanded = np.sort(np.repeat(r, k))
        cut = expanded.size // 20
        reference = float(np.std(expanded[cut: expanded.size - cut]))
        m = regression_metrics(np.zeros(n), r, k.astype(float))
        assert m.resolution_trms == pytest.approx(reference, rel=1e-9)


def test_resolution_versus_target_bins_use_the_central_ninety_percent():
    rng = np.random.default_rng(2)
    t = rng.uniform(0, 10, 200)
    p = t + rng.normal(size=t.size)
    binned = resolution_vs_target(t, p, bins=10)
    for k in range(10):
        last = k == 9
        sel = (t >= binned.edges[k]) & ((t <= binned.edges[k + 1]) if last
                                        else (t < binned.edges[k + 1]))
        reference = float(np.std(stats.trimboth(p[sel] - t[sel], 0.05)))
        assert binned.resolution_trms[k] == pytest.approx(reference, rel=1e-12)


def test_resolution_vs_target_of_weights_all_zero_says_so():
    """Every weight 0 was refused as 'y_true is empty' beside 50 targets."""
    t = np.linspace(0.0, 1.0, 50)
    with pytest.raises(ValueError, match="every sample_weight is 0"):
        resolution_vs_target(t, t + 0.1, np.zeros(50), bins=5)
