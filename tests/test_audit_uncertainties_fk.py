"""Audit FK (2026-12-05): the uncertainties hepbdt prints, against independent references."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt.evaluation import significance_scan


def _events(rng: np.random.Generator, ns: int = 400, nb: int = 600):
    """Gaussian scores; signal weights lognormal with a tenth negative."""
    y = np.r_[np.ones(ns), np.zeros(nb)]
    score = np.r_[rng.normal(1.0, 1.0, ns), rng.normal(-1.0, 1.0, nb)]
    ws = rng.lognormal(0.0, 1.0, ns) * np.where(rng.random(ns) < 0.1, -1.0, 1.0)
    return y, score, np.r_[ws, rng.lognormal(0.0, 0.5, nb)]


def test_given_yield_error_is_the_efficiencys_brute_force():
    y, score, w = _events(np.random.default_rng(1))
    scan = significance_scan(y, score, w, signal_yield=100.0, background_yield=1000.0,
                             other_half=False)
    for cls, yield_, errors in ((1, 100.0, scan.signal_error), (0, 1000.0, scan.background_error)):
        wc, sc = w[y == cls], score[y == cls]
        for k in (0, scan.thresholds.size // 3, scan.thresholds.size // 2, -1):
            passing = sc >= scan.thresholds[k]
            eff = wc[passing].sum() / wc.sum()
            # S = Y eff: Y's delta-method error of the ratio of passing to all weights
            var = ((1 - eff) ** 2 * np.sum(wc[passing] ** 2)
                   + eff**2 * np.sum(wc[~passing] ** 2)) / wc.sum() ** 2
            assert errors[k] == pytest.approx(yield_ * np.sqrt(var), rel=1e-9, abs=1e-9)
    # every event passes the loosest cut: S is the given yield exactly, with no uncertainty
    assert scan.signal[-1] == pytest.approx(100.0, rel=1e-12)
    assert scan.signal_error[-1] < 1e-9 and scan.background_error[-1] < 1e-9


def test_given_yield_error_covers_the_spread_over_pseudo_samples():
    rng = np.random.default_rng(2)
    cuts = (0.0, 1.0)
    values: dict[float, list[float]] = {c: [] for c in cuts}
    errors: dict[float, list[float]] = {c: [] for c in cuts}
    for _ in range(200):
        y, score, w = _events(rng)
        scan = significance_scan(y, score, w, signal_yield=100.0, background_yield=1000.0,
                                 other_half=False)
        for c in cuts:
            k = np.flatnonzero(scan.thresholds >= c)[-1]
            values[c].append(scan.signal[k])
            errors[c].append(scan.signal_error[k])
    for c in cuts:  # efficiencies 0.84 and 0.5: the old error was 2.7 and 1.46 x the spread
        ratio = np.mean(errors[c]) / np.std(values[c], ddof=1)
        assert 0.85 < ratio < 1.15, (c, ratio)


def test_jsd_floor_of_random_selections_has_the_finite_population_factor():
    from hepbdt.evaluation import decorrelation_measures

    rng = np.random.default_rng(4)
    n, bins = 8000, 20
    ratios = []
    for _ in range(40):  # the background's score ignores the mass: every cut is unbiased
        score, w = rng.random(n), rng.lognormal(0.0, 1.0, n)
        m = decorrelation_measures(np.r_[score, rng.random(500)], np.r_[np.zeros(n), np.ones(500)],
                                   rng.uniform(0.0, 1.0, n + 500), np.r_[w, np.ones(500)],
                                   efficiencies=[0.7], bins=bins)
        kept = w[score >= m.threshold[0]]
        f = kept.sum() / w.sum()  # the background efficiency
        n_eff = kept.sum() ** 2 / np.sum(kept**2)
        # the module docstring's floor; without 1 - f it is 3.3x the measured JSD
        ratios.append(m.background_jsd[0] / ((bins - 1) * (1 - f) / (8 * n_eff * np.log(2))))
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.12)


def test_summed_weight_error_is_sumw2_and_poisson_as_readme_says():
    rng = np.random.default_rng(5)
    values, errors = [], []
    for _ in range(200):  # unit weights: a fixed number of MC events, eff 0.84 at score >= 0
        y, score, _ = _events(rng)
        w = np.ones(y.size)
        scan = significance_scan(y, score, w, yield_scale=2.5, other_half=False)
        k = np.flatnonzero(scan.thresholds >= 0.0)[-1]
        passing = (y == 1) & (score >= scan.thresholds[k])
        assert scan.signal_error[k] == pytest.approx(2.5 * np.sqrt(passing.sum()), rel=1e-12)
        values.append(scan.signal[k])
        errors.append(scan.signal_error[k])
    eff = np.mean(values) / (2.5 * 400)
    ratio = np.mean(errors) / np.std(values, ddof=1)
    assert ratio == pytest.approx(1 / np.sqrt(1 - eff), rel=0.15)  # README: 2.6x at 0.84
