"""Audit EK (2026-12-05): a second look at the second half of the day's changes, each
against a brute-force reference in exact fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hepbdt.evaluation.decorrelation import decorrelation_measures
from hepbdt.evaluation.metrics import background_rejection_at

# 20 signal events: 5 at 3, 10 at 2, 5 at 0, so the cuts keep 25 %, exactly 75 % or all of
# the signal; 10 background events: 1 at 2, 9 at 0
Y = np.r_[np.ones(20, int), np.zeros(10, int)]
SCORE = np.r_[[3.0] * 5, [2.0] * 10, [0.0] * 5, [2.0] * 1, [0.0] * 9]


def _brute_force(target: Fraction) -> float:
    """1 - eff_B of the best cut keeping target to target + 5 points of the signal, in exact
    fractions (README: the best cut keeping e to e + 0.05), NaN where none does."""
    signal, background = SCORE[Y == 1], SCORE[Y == 0]
    kept = []
    for cut in np.unique(SCORE):
        eff_s = Fraction(int(np.sum(signal >= cut)), signal.size)
        if target <= eff_s <= target + Fraction(5, 100):
            kept.append(Fraction(int(np.sum(background >= cut)), background.size))
    return float(1 - min(kept)) if kept else float("nan")


def test_a_cut_keeping_exactly_five_points_more_is_within_the_tolerance():
    """0.75 - 0.7 is 0.050000000000000044 in float64, so the cut keeping exactly 75 % was
    'more than five points' above 70 % and the rejection row was n/a (it is 0.9)."""
    targets = [Fraction(7, 10), Fraction(3, 4), Fraction(1, 2)]
    brute = [_brute_force(t) for t in targets]
    assert brute[0] == 0.9  # the reference itself: the cut score >= 2 counts at 70 %
    np.testing.assert_array_equal(background_rejection_at(Y, SCORE, None, [0.7, 0.75, 0.5]),
                                  brute)


def test_decorrelation_row_at_five_points_more_is_measured():
    """The mass-decorrelation rows share the rule: the row at 70 % signal efficiency, whose
    cut keeps exactly 75 %, was NaN; its background efficiency is 1/10 by counting."""
    mass = np.linspace(100.0, 150.0, SCORE.size)
    measures = decorrelation_measures(SCORE, Y, mass, efficiencies=[0.7], bins=5)
    assert measures.achieved_signal_efficiency.tolist() == [0.75]
    assert measures.background_efficiency.tolist() == [0.1]
