"""Audit of mass decorrelation: undefined measures are NaN (never a perfect-looking number),
rows whose cut cannot reach their signal efficiency are not measured, bad bins, masses and
labels are refused, and the flatness gradient matches finite differences with negative
weights."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt.boosting.decorrelation import FlatnessLoss, flatness_bins
from hepbdt.boosting.losses import Deviance
from hepbdt.boosting.uboost import UniformityWeights
from hepbdt.evaluation import decorrelation_measures, jensen_shannon_divergence
from hepbdt.evaluation.decorrelation import EFFICIENCY_TOLERANCE


def _separated(n=200, seed=0):
    """Signal scores 1-2, background -2-0: a cut at any signal efficiency keeps no background."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n // 2), np.zeros(n // 2)].astype(int)
    score = np.r_[np.linspace(1, 2, n // 2), np.linspace(-2, 0, n // 2)]
    return score, y, rng.uniform(0, 1, n)


def test_a_cut_keeping_no_background_has_no_jsd():
    # It gave JSD 0, 1/JSD inf: perfect decorrelation for a selection with no background.
    score, y, mass = _separated()
    m = decorrelation_measures(score, y, mass, efficiencies=(0.5,))
    assert m.background_efficiency[0] == 0 and m.background_rejection[0] == np.inf
    assert np.isnan(m.background_jsd[0]) and np.isnan(m.inverse_jsd[0])
    assert np.isnan(m.background_shapes[0]).all()
    assert np.isnan(m.rows()[0]["inverse_jsd"])
    with pytest.raises(ValueError, match="q has no bin of positive weight"):
        jensen_shannon_divergence([1.0, 2.0, 3.0], [0.0, -1.0, 0.0])
    with pytest.raises(ValueError, match="same number of bins"):
        jensen_shannon_divergence([1.0, 2.0, 3.0], [1.0])


def test_negative_passing_background_has_no_rejection():
    # Net background weight -0.02 passed the cut; the rejection said inf.
    score, y, mass = _separated()
    w = np.ones(y.size)
    score[100:102], w[100:102] = 5.0, -1.0  # two negative-weight background events pass
    m = decorrelation_measures(score, y, mass, w, efficiencies=(0.5,))
    assert m.background_efficiency[0] == pytest.approx(-2 / 96)
    assert np.isnan(m.background_rejection[0]) and np.isnan(m.background_jsd[0])


def test_rows_whose_cut_keeps_far_more_signal_are_not_measured():
    # Three score values: the cuts at "10 %" and "30 %" kept 78 % of the signal and
    # reported that cut's rejection as the rejection at 10 % and 30 %.
    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    u = rng.uniform(size=n)
    score = np.where(y == 1, np.where(u < 0.22, 2.0, np.where(u < 0.52, 1.0, 0.0)),
                     np.where(u < 0.05, 2.0, np.where(u < 0.3, 1.0, 0.0)))
    w = rng.uniform(0.5, 1.5, n)
    mass = rng.uniform(50, 150, n)
    m = decorrelation_measures(score, y, mass, w, efficiencies=(0.1, 0.2, 0.5), bins=10)
    sig = y == 1
    achieved = [w[sig & (score >= t)].sum() / w[sig].sum() for t in m.threshold]
    np.testing.assert_allclose(m.achieved_signal_efficiency, achieved, rtol=1e-12)
    assert achieved[0] - 0.1 > EFFICIENCY_TOLERANCE >= achieved[1] - 0.2
    for field in (m.background_efficiency, m.background_jsd, m.signal_jsd, m.inverse_jsd,
                  m.background_rejection, m.inverse_signal_jsd):
        assert np.isnan(field[0]) and np.isfinite(field[1]), field
    assert np.isnan(m.background_shapes[0]).all() and m.background_shapes[1].sum() == pytest.approx(1)
    row = m.rows()[1]  # measured at its cut, which keeps achieved[1]
    assert row["achieved_signal_efficiency"] == pytest.approx(achieved[1])
    passed = ~sig & (score >= m.threshold[1])
    assert row["background_efficiency"] == pytest.approx(w[passed].sum() / w[~sig].sum())


@pytest.mark.parametrize("change,match", [
    ({"bins": 2.7}, "whole number of mjj bins"),
    ({"bins": -3}, "whole number of mjj bins"),
    ({"bins": [0.0, 0.5, 0.4, 1.0]}, "strictly increasing"),
    ({"bins": [0.5]}, "at least two"),
    ({"mass": "two columns"}, r"one value per event, shape \(200,\), got shape \(200, 2\)"),
    ({"efficiencies": ()}, r"1 to 1,000 signal efficiencies in \(0, 1\]"),
])
def test_bad_bins_masses_and_efficiencies_are_refused(change, match):
    score, y, mass = _separated()
    kwargs = {"bins": 10, "efficiencies": (0.5,), "variable": "mjj", **change}
    if kwargs.pop("mass", None):
        mass = np.c_[mass, mass]
    with pytest.raises(ValueError, match=match):
        decorrelation_measures(score, y, mass, **kwargs)


def test_flatness_gradient_matches_finite_differences_with_negative_weights():
    rng = np.random.default_rng(1)
    n = 30
    y = (rng.random(n) < 0.5).astype(np.float64)
    m, w = rng.random((n, 2)), rng.uniform(0.3, 2.0, n)
    w[rng.random(n) < 0.2] *= -0.5
    score = rng.normal(size=n)
    loss = FlatnessLoss(Deviance(), 1.3, m, y, w, n_bins=2, target="both", tail_floor=None)

    def integral(s):  # sum_c sum_b W_b * integral (F_b - F_c)^2 ds, interval by interval
        total = 0.0
        for c in (0, 1):
            mine = loss.class_index == c
            grid = np.unique(s[mine])
            for g in np.unique(loss.group[mine]):
                inside = mine & (loss.group == g)
                for lo, hi in zip(grid[:-1], grid[1:], strict=True):
                    f_bin = w[inside & (s <= lo)].sum() / w[inside].sum()
                    f_class = w[mine & (s <= lo)].sum() / w[mine].sum()
                    total += w[inside].sum() * (f_bin - f_class) ** 2 * (hi - lo)
        return total

    analytic, _ = loss.flatness_terms(score, w)
    eps = 1e-7
    numeric = [1.3 * (integral(score + eps * (np.arange(n) == i))
                      - integral(score - eps * (np.arange(n) == i))) / (2 * eps) for i in range(n)]
    np.testing.assert_allclose(analytic, numeric, atol=1e-6)


def test_flatness_and_uboost_refuse_bad_bins_labels_and_weights():
    rng = np.random.default_rng(0)
    n = 200
    y = (rng.random(n) < 0.5).astype(int)
    m, w = rng.random((n, 3)), np.ones(n)
    with pytest.raises(ValueError, match=r"decorrelation_bins=2.5 is not valid; expected a whole"):
        FlatnessLoss(Deviance(), 1.0, m, y, w, n_bins=2.5)  # it made float cell numbers
    with pytest.raises(ValueError, match=r"y must hold 0 \(background\) and 1 \(signal\)"):
        FlatnessLoss(Deviance(), 1.0, m, 2 * y - 1, w)  # it targeted no event at all
    negative = np.where(y == 0, -1.0, 1.0)
    with pytest.raises(ValueError, match="background events .* summing to -"):
        FlatnessLoss(Deviance(), 1.0, m, y, negative)  # its flatness term was silently 0
    with pytest.raises(ValueError, match="background events .* summing to -"):
        UniformityWeights(m, y, negative, 0.5, 1.0, 3, "background")
    with pytest.raises(ValueError, match="NaN or infinite"):
        flatness_bins(np.where(np.arange(n)[:, None] == 3, np.nan, m), y, w, 3, "both")
    # uBoost had no cell limit: 400 bins over 3 variables took 2 GB
    with pytest.raises(ValueError, match=r"makes 1,000,000 cells; at most 100,000"):
        UniformityWeights(m, y, w, 0.5, 1.0, 100, "background")


def test_decorrelation_variables_beyond_float32_are_refused():
    # the negative-weight policies measure the features and these variables in float32: a
    # mass of 1e39 became inf there (pair had paired every negative event with one event)
    import hepbdt

    rng = np.random.default_rng(0)
    n = 4000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    w = np.ones(n)
    w[(y == 0) & (rng.random(n) < 0.2)] = -0.5
    m = rng.uniform(0, 1, n)
    m[10] = 1e39
    with pytest.raises(ValueError, match=r"decorrelate: 1 value\(s\) beyond .*event 10, column 0"):
        hepbdt.BDTClassifier(n_trees=2, negative_weights="pair", decorrelation="flatness").fit(
            X, y, w, decorrelate=m)
