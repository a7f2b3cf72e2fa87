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
    monkeypatch.setattr(nw, "_shares", lambda score, negative, weight, fold, rng: np.zeros(score.size))
    for method in ("cancel", "regress"):
        new = nw.regress_weights(X, w, method=method)
        np.testing.assert_array_equal(new, np.full(w.size, w.sum() / w.size))
    assert w.sum() / w.size < np.abs(w).sum() / w.size  # the net weight, not |w|'s


def test_flatness_terms_scale_with_the_tree_weights_not_the_cdf_weights():
    """The gradient and surrogate hessian are the per-event terms times the tree's weight
    (a subsample's counts), while the CDFs keep the full weights: per unit weight the
    hessian is 2 strength sqrt(psi), psi from the class CDF half-way through w_i (by hand)."""
    from hepbdt.boosting.decorrelation import FlatnessLoss
    from hepbdt.boosting.losses import Deviance

    rng = np.random.default_rng(11)
    n, strength, floor = 60, 1.7, 0.1
    y = (rng.random(n) < 0.5).astype(np.float64)
    m, w = rng.random((n, 1)), rng.uniform(0.3, 2.0, n)
    score = rng.normal(size=n)  # distinct: no ties to shuffle
    loss = FlatnessLoss(Deviance(), strength, m, y, w, n_bins=2, target="background",
                        tail_floor=floor)
    psi = np.zeros(n)
    for i in np.flatnonzero(y == 0):
        below = w[(y == 0) & (score < score[i])].sum() + 0.5 * w[i]
        psi[i] = 1.0 / max(1.0 - below / w[y == 0].sum(), floor) ** 2
    g, h = loss.gradients(y, score)
    g0, h0 = Deviance().gradients(y, score)
    np.testing.assert_allclose(h - h0, 2 * strength * np.sqrt(psi), rtol=1e-12, atol=1e-15)
    full_g, full_h = loss.flatness_terms(score, w)
    np.testing.assert_allclose(g - g0, full_g / w, rtol=1e-12, atol=1e-15)
    counts = rng.poisson(1.0, n).astype(np.float64)  # a Poisson subsample's tree weights
    sub_g, sub_h = loss.flatness_terms(score, counts * w)
    np.testing.assert_allclose(sub_g, counts * full_g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sub_h, counts * full_h, rtol=1e-12, atol=1e-15)
