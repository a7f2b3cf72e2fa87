"""Audit GI: slips in the negative-weight policies and the decorrelation that no other test
noticed, each caught against a reference computed here (sums by hand, numpy)."""

from __future__ import annotations

import numpy as np

import hepbdt.boosting.negative_weights as nw


def _two_regions(n: int = 6000, seed: int = 4):
    """x < 0.5: 30 % of the events at weight -1 (local net weight 0.4 an event); x >= 0.5:
    weight 1 only. Returns float32 X (n, 2), float64 w (n,) and the mask of the first region."""
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    low = x < 0.5
    w = np.ones(n)
    w[low & (rng.random(n) < 0.3)] = -1.0
    return np.column_stack([x, rng.random(n)]).astype(np.float32), w, low


def test_classify_variant_gives_each_region_its_net_weight():
    """method='classify' ranks by P(negative | x), which falls as the local net weight rises:
    its score must be turned round, else the isotonic map of w on it pools every event into
    one constant (each region 2,120 of 4,240 where the regions net 1,246 and 2,994)."""
    X, w, low = _two_regions()
    new = nw.regress_weights(X, w, method="classify", random_state=1)
    np.testing.assert_allclose(new.sum(), w.sum(), rtol=1e-12)
    for region in (low, ~low):
        np.testing.assert_allclose(new[region].sum(), w[region].sum(), rtol=0.03)


def test_a_calibration_with_no_positive_weight_gives_the_class_mean(monkeypatch):
    """Where no event's calibrated local net weight is positive, every event gets the class's
    net weight over its events (the best constant model), which keeps the class's sum."""
    X, w, _ = _two_regions(600)
    monkeypatch.setattr(nw, "_calibrated", lambda score, unit, fold, rng: np.zeros(score.size))
    new = nw.regress_weights(X, w)
    np.testing.assert_array_equal(new, np.full(w.size, w.sum() / w.size))
    assert w.sum() / w.size < np.abs(w).sum() / w.size  # the net weight, not |w|'s
